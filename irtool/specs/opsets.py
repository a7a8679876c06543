"""OpenVINO's opsets as data: which op types each opset holds (schemas/openvino_opsets.json,
written by schemas/make_opsets.py from the installed openvino).

OpenVINO's IR reader makes a layer ``type="T" version="opsetN"`` from opset N's table
and refuses the file when N is not one of its opsets (``opset0``, ``opset99``,
``opset05``, ``""``) or when that opset has no T: so does the validator, without
importing openvino.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib.resources.abc import Traversable
from types import MappingProxyType
from typing import Mapping

from irtool.specs.loader import SCHEMA_DIR
from irtool.specs.model import SpecError

OPSETS_FILE = SCHEMA_DIR / "openvino_opsets.json"
_OPSET = re.compile(r"opset([1-9][0-9]{0,8})", re.ASCII)  # exactly as the reader looks it up


@dataclass(frozen=True)
class OpenVINOOpsets:
    """``ops[type][opsetN]``: the op version (``"opset5"``) that opset N holds of that type."""

    openvino: str
    count: int  # opset1 .. opset<count>
    ops: Mapping[str, Mapping[str, str]]
    ir_aliases: Mapping[str, str]

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError("the opset table has no opset")
        for name, versions in self.ops.items():
            for opset in versions:
                number = self.opset_number(opset)
                if number is None:
                    raise ValueError(f"the opset table names {opset!r} for {name}, not opset1..opset{self.count}")

    def opset_number(self, version: str) -> int | None:
        """N for a version OpenVINO has (``opsetN``, 1 <= N <= count, written exactly so); else None."""
        match = _OPSET.fullmatch(version)
        number = int(match.group(1)) if match else None
        return number if number is not None and number <= self.count else None

    def canonical(self, op_type: str) -> str | None:
        """OpenVINO's name of an IR op type, or None if no opset has it.  The reader looks the type
        up ignoring case (the IR writer writes ReLU for Relu, SoftMax for Softmax) after turning
        the IR's Const into Constant."""
        name = self.ir_aliases.get(op_type, op_type)
        return name if name in self.ops else self._folded.get(name.lower())

    @cached_property
    def _folded(self) -> dict[str, str]:
        return {name.lower(): name for name in self.ops}

    def versions(self, op_type: str) -> Mapping[str, str]:
        """opsetN -> op version, for every opset that holds this IR op type (empty if none)."""
        name = self.canonical(op_type)
        return self.ops[name] if name is not None else MappingProxyType({})

    def op_version(self, op_type: str, version: str) -> str | None:
        """The op version that ``version="opsetN"`` means for this type, or None if opset N has none."""
        return self.versions(op_type).get(version)

    def where(self, op_type: str) -> str:
        """Where a type exists, as ranges: ``opset5 to opset16``, ``opset1, opset3 to opset16``."""
        numbers = sorted(int(v[5:]) for v in self.versions(op_type))
        runs: list[list[int]] = []
        for n in numbers:
            if runs and runs[-1][-1] == n - 1:
                runs[-1].append(n)
            else:
                runs.append([n])
        return ", ".join(f"opset{r[0]}" if len(r) == 1 else f"opset{r[0]} to opset{r[-1]}" for r in runs)


def load_opsets(path: Traversable = OPSETS_FILE) -> OpenVINOOpsets:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:  # irtool's own file: never blamed on the user's
        raise SpecError(f"{path}: {error}") from error
    return OpenVINOOpsets(
        openvino=data["openvino"], count=data["opsets"],
        ops=MappingProxyType({name: MappingProxyType(v) for name, v in data["ops"].items()}),
        ir_aliases=MappingProxyType(data.get("ir_aliases", {})))


@lru_cache(maxsize=1)
def openvino_opsets() -> OpenVINOOpsets:
    """The table shipped in schemas/ (loaded once)."""
    return load_opsets()
