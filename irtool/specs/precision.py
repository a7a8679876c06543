"""The precision model: where each implementation path of a device rounds a recurrent op's values at
a reduced precision (schemas/precision.json, read into frozen records).

A node that ran at bf16 or f16 is judged against the reference rounding where its path rounds
(irtool.judge.precision): the path is the first whose device, kernels and precision match what
ran.  The file is the one place these facts live; each path says where they come from (the
sources read) and whether, and where, a device confirmed them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from irtool.core.device_names import physical_devices
from irtool.core.precisions import PRECISIONS
from irtool.specs.loader import SCHEMA_DIR
from irtool.specs.model import SpecError

PRECISION_FILE = SCHEMA_DIR / "precision.json"
_KEYS = {"id", "device", "kernels", "precision", "round", "accumulate", "says", "source", "measured"}


@dataclass(frozen=True)
class PrecisionPath:
    """One implementation path at one precision: what it rounds where (``round``: point -> rounding)."""

    id: str
    device: str  # a device family: CPU, GPU, NPU
    kernels: tuple[str, ...]  # the runtime layer types it covers; empty: any
    precision: str
    round: Mapping[str, str]
    accumulate: str
    says: str
    source: str
    measured: str | None  # where a device confirmed it; None: read from the sources only

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise SpecError(f"precision path {self.id}: precision {self.precision!r}; expected one of {PRECISIONS}")

    def matches(self, device: str, layer_types: Sequence[str], precision: str) -> bool:
        """Whether a node ran this path: on ``device`` (its first physical device decides), as runtime
        layers of ``layer_types``, at ``precision``."""
        physical = physical_devices(device)
        family = physical[0].split(".", 1)[0] if physical else ""
        return (family == self.device and precision == self.precision
                and (not self.kernels or any(kind in self.kernels for kind in layer_types)))

    def describe(self) -> str:
        """``cpu-native-bf16 (measured: ...)`` or ``gpu-f16 (from the sources, not measured)``."""
        return f"{self.id} ({'measured' if self.measured else 'from the sources, not measured on a device'})"


@lru_cache(maxsize=1)
def precision_paths() -> tuple[PrecisionPath, ...]:
    """The paths of schemas/precision.json, in the file's order."""
    data = json.loads(PRECISION_FILE.read_text(encoding="utf-8"))
    return tuple(_path(item, k) for k, item in enumerate(data.get("paths", [])))


def path_for(device: str, layer_types: Sequence[str], precision: str) -> PrecisionPath | None:
    """The first path a node that ran as ``layer_types`` on ``device`` at ``precision`` took; None where
    none is known (a run at f32 included)."""
    return next((path for path in precision_paths() if path.matches(device, layer_types, precision)), None)


def _path(item: Any, index: int) -> PrecisionPath:
    where = f"{PRECISION_FILE.name}: paths[{index}]"
    if not isinstance(item, dict) or set(item) != _KEYS:
        found = sorted(item) if isinstance(item, dict) else type(item).__name__
        raise SpecError(f"{where}: expected the keys {sorted(_KEYS)}, found {found}")
    if not isinstance(item["round"], dict) or not all(isinstance(v, str) for v in item["round"].values()):
        raise SpecError(f"{where}: round must map points to rounding names")
    return PrecisionPath(str(item["id"]), str(item["device"]), tuple(item["kernels"]), str(item["precision"]),
                         MappingProxyType(dict(item["round"])), str(item["accumulate"]), str(item["says"]),
                         str(item["source"]), item["measured"])
