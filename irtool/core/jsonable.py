"""Records as strict JSON: dataclasses as dicts, tuples as lists, and non-finite floats as
the strings "inf", "-inf" and "nan" (JSON has no such numbers), and back; and JSON text that
strict readers take whatever a name holds (:func:`json_text`)."""
from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any

from irtool.core.text import undecodable_escaped

_SCALARS = frozenset({str, int, bool, type(None)})


def plain(value: Any, numbers: bool = False) -> Any:
    """JSON-ready: dataclasses as dicts, tuples as lists, non-finite floats as "inf"/"-inf"/"nan".

    ``numbers=True`` keeps every float a float: the dicts and lists of a record that stays in
    memory (a result's ``outputs``), whose statistics are formatted as numbers; only what is
    written as JSON spells non-finite floats as strings."""
    kind = type(value)
    if kind in _SCALARS:  # the common cases first, by exact type: a results file holds millions of values
        return value
    if kind is float:
        return value if numbers or math.isfinite(value) else str(value)
    if kind is dict:
        return {k if type(k) is str else str(k): v if type(v) in _SCALARS or (type(v) is float and math.isfinite(v))
                else plain(v, numbers) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [v if type(v) in _SCALARS or (type(v) is float and math.isfinite(v)) else plain(v, numbers)
                for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, numbers)
    if isinstance(value, Mapping):
        return {str(k): plain(v, numbers) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, numbers) for v in value]
    if isinstance(value, float) and not math.isfinite(value) and not numbers:
        return str(value)
    return value


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)``, without a lone surrogate: a file name's bytes that are not
    UTF-8 (held by Python as U+DC80-U+DCFF) would be written as ``"\\udcff"``, which strict JSON
    readers refuse; each is written as irtool.core.text.undecodable_escaped spells it
    (``a\\xffb.xml``), in keys and values alike.  JSON written with ensure_ascii (the default)
    shows any surrogate as ``\\ud...``: text without one is returned as json.dumps made it."""
    text = json.dumps(value, **options)
    return text if "\\ud" not in text else json.dumps(_without_surrogates(value), **options)


def _without_surrogates(value: Any) -> Any:
    kind = type(value)
    if kind is str:
        return undecodable_escaped(value)
    if isinstance(value, Mapping):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_without_surrogates(v) for v in value]
    return value


_NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def unplain(value: Any) -> Any:
    """The inverse of :func:`plain` for numbers: "inf", "-inf" and "nan" back to floats."""
    if isinstance(value, dict):
        return {k: v if type(v) in _NUMBERS else unplain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _NUMBERS else unplain(v) for v in value]
    if type(value) is str and value in _NON_FINITE:
        return _NON_FINITE[value]
    return value


_NUMBERS = frozenset({int, float, bool, type(None)})


def quoted(value: Any, limit: int = 40) -> str:
    """A value as a message quotes it (Python's spelling: what a file, a suite or a library
    caller wrote), cut after ``limit`` characters, so that a huge value never floods a message
    (a text cut says its length: a file may hold an attribute of megabytes)."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)"
    return _cut(repr(value), limit) if not isinstance(value, str) else repr(value)


def quoted_json(value: Any, limit: int = 40) -> str:
    """A value from a JSON file as a message quotes it (JSON's spelling: null, "text"), cut."""
    return _cut(json.dumps(value, default=repr), limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."
