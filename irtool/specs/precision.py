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

from irtool.core.device_names import device_family
from irtool.core.precisions import PRECISIONS
from irtool.specs.loader import SCHEMA_DIR
from irtool.specs.model import SpecError

PRECISION_FILE = SCHEMA_DIR / "precision.json"
_KEYS = {"id", "device", "kernels", "precision", "when", "round", "or", "bound", "accumulate", "says", "source", "measured"}
_BOUND_KEYS = {"atol_units", "rtol_units", "basis"}
_CONDITIONS = {"split", "cell_kernel", "dynamic", "f16_model", "linear_before_reset"}


@dataclass(frozen=True)
class PrecisionPath:
    """One implementation path at one precision: what it rounds where (``round``: point -> rounding)."""

    id: str
    device: str  # a device family: CPU, GPU, NPU
    kernels: tuple[str, ...]  # the runtime layer types it covers; empty: any
    precision: str
    when: Mapping[str, bool]  # conditions on what ran: split, cell_kernel, dynamic, f16_model, linear_before_reset
    round: Mapping[str, str]
    alternative: Mapping[str, str]  # points rounded otherwise in a second emulation ("or"); empty: none
    bound: Mapping[str, Any]  # atol_units, rtol_units (of the type's unit roundoff) and their basis
    accumulate: str
    says: str
    source: str
    measured: str | None  # where a device confirmed it; None: read from the sources only

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise SpecError(f"precision path {self.id}: precision {self.precision!r}; expected one of {PRECISIONS}")

    def matches(self, device: str, layer_types: Sequence[str], precision: str, split: bool = False,
                cell_kernel: bool = True, dynamic: bool = False, f16_model: bool = False,
                linear_before_reset: bool = False) -> bool:
        """Whether a node ran this path: on ``device`` (its first physical device decides), as runtime
        layers of ``layer_types``, at ``precision``; ``split``: as one kernel per direction;
        ``cell_kernel``: whether the device's cell kernel takes the node (:func:`cell_kernel_takes`);
        ``dynamic``: whether its X has dynamic dims in the model; ``f16_model``: whether the node computes
        in the model's f16 (its inputs f16 model inputs, its outputs f16); ``linear_before_reset``: a GRU's."""
        facts = {"split": split, "cell_kernel": cell_kernel, "dynamic": dynamic, "f16_model": f16_model,
                 "linear_before_reset": linear_before_reset}
        return (device_family(device) == self.device and precision == self.precision
                and (not self.kernels or any(kind in self.kernels for kind in layer_types))
                and all(facts[key] == value for key, value in self.when.items()))

    def describe(self) -> str:
        """``cpu-native-bf16 (measured: ...)`` or ``gpu-f16 (from the sources, not measured)``."""
        return f"{self.id} ({'measured' if self.measured else 'from the sources, not measured on a device'})"


@lru_cache(maxsize=1)
def precision_paths() -> tuple[PrecisionPath, ...]:
    """The paths of schemas/precision.json, in the file's order."""
    data = json.loads(PRECISION_FILE.read_text(encoding="utf-8"))
    return tuple(_path(item, k) for k, item in enumerate(data.get("paths", [])))


def path_for(device: str, layer_types: Sequence[str], precision: str, split: bool = False,
             cell_kernel: bool = True, dynamic: bool = False, f16_model: bool = False,
             linear_before_reset: bool = False) -> PrecisionPath | None:
    """The first path a node that ran as ``layer_types`` on ``device`` at ``precision`` took (split per
    direction or not; its attributes taken by the cell kernel or not); None where none is known (a
    run at f32 included)."""
    return next((path for path in precision_paths()
                 if path.matches(device, layer_types, precision, split, cell_kernel, dynamic, f16_model,
                                              linear_before_reset)), None)


@lru_cache(maxsize=1)
def _cell_kernel() -> Mapping[str, Any]:
    return json.loads(PRECISION_FILE.read_text(encoding="utf-8"))["cell_kernel"]


def cell_kernel_takes(op_type: str, attributes: Mapping[str, Any], constant_weights: bool = True) -> bool:
    """Whether the CPU's cell kernel runs a node of ``op_type`` (GRUSequence, LSTMCell, ...) with these
    attributes (schemas/precision.json, cell_kernel): W, R and B Constants (``constant_weights``),
    without clip, with the kernel's activations and no alpha or beta; where it does not, the cell is
    decomposed into plain ops."""
    table = _cell_kernel()
    family = next((name for name in table["activations"] if op_type.startswith(name)), None)
    if family is None or not constant_weights:
        return False
    activations = [str(a).lower() for a in attributes.get("activations") or table["activations"][family][0]]
    return (float(attributes.get("clip") or 0) == table["clip"] and activations in table["activations"][family]
            and not attributes.get("activations_alpha") and not attributes.get("activations_beta"))


def _path(item: Any, index: int) -> PrecisionPath:
    where = f"{PRECISION_FILE.name}: paths[{index}]"
    if not isinstance(item, dict) or set(item) != _KEYS:
        found = sorted(item) if isinstance(item, dict) else type(item).__name__
        raise SpecError(f"{where}: expected the keys {sorted(_KEYS)}, found {found}")
    for key in ("round", "or"):
        if not isinstance(item[key], dict) or not all(isinstance(v, str) for v in item[key].values()):
            raise SpecError(f"{where}: {key} must map points to rounding names")
    bound = item["bound"]
    if not isinstance(bound, dict) or set(bound) != _BOUND_KEYS or not all(
            isinstance(bound[key], (int, float)) and bound[key] > 0 for key in ("atol_units", "rtol_units")):
        raise SpecError(f"{where}: bound must give atol_units and rtol_units (positive numbers) and their basis")
    when = item["when"]
    if not isinstance(when, dict) or not set(when) <= _CONDITIONS or not all(isinstance(v, bool) for v in when.values()):
        raise SpecError(f"{where}: when must map some of {sorted(_CONDITIONS)} to true or false")
    return PrecisionPath(str(item["id"]), str(item["device"]), tuple(item["kernels"]), str(item["precision"]),
                         MappingProxyType(dict(when)), MappingProxyType(dict(item["round"])),
                         MappingProxyType(dict(item["or"])), MappingProxyType(dict(bound)), str(item["accumulate"]), str(item["says"]),
                         str(item["source"]), item["measured"])
