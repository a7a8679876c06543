"""Records as strict JSON: dataclasses as dicts, tuples as lists, and non-finite floats as
the strings "inf", "-inf" and "nan" (JSON has no such numbers), and back."""
from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Mapping


def plain(value: Any, numbers: bool = False) -> Any:
    """JSON-ready: dataclasses as dicts, tuples as lists, non-finite floats as "inf"/"-inf"/"nan".

    ``numbers=True`` keeps every float a float: the dicts and lists of a record that stays in
    memory (a result's ``outputs``), whose statistics are formatted as numbers; only what is
    written as JSON spells non-finite floats as strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name), numbers) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v, numbers) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, numbers) for v in value]
    if isinstance(value, float) and not math.isfinite(value) and not numbers:
        return str(value)
    return value


def unplain(value: Any) -> Any:
    """The inverse of :func:`plain` for numbers: "inf", "-inf" and "nan" back to floats."""
    if isinstance(value, dict):
        return {k: unplain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unplain(v) for v in value]
    if value in ("inf", "-inf", "nan"):
        return float(value)
    return value


def strict_loads(text: str | bytes) -> Any:
    """json.loads without JavaScript's NaN and Infinity literals, which irtool never writes (it
    writes non-finite floats as strings) and which strict JSON writers refuse to write back;
    json.JSONDecodeError for them, as for any other text that is not JSON."""
    def refuse(literal: str) -> Any:
        raise json.JSONDecodeError(f"{literal} is not JSON (irtool writes non-finite numbers as strings)",
                                   literal, 0)

    return json.loads(text, parse_constant=refuse)


def shown(value: Any, limit: int = 40) -> str:
    """A value as a message quotes it (Python's spelling: what a suite or a library caller
    wrote), cut to ``limit`` characters, so that a huge value never floods a message."""
    return _cut(repr(value), limit)


def shown_json(value: Any, limit: int = 40) -> str:
    """A value from a JSON file as a message quotes it (JSON's spelling: null, "text"), cut."""
    return _cut(json.dumps(value, default=repr), limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."
