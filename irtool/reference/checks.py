"""Input and attribute checks of the public reference functions, beside the spec's shape check.

Every problem is one ``InputError`` (an ``IrtoolError`` and a ``ValueError``) that names the
input or attribute, then what was found and what was expected (``sequence_lengths[1] is 4;
expected a value in [0, seq_length=3]``).  Shapes are checked by the op's spec
(irtool.specs.check_shapes, through irtool.reference.registry).  Nothing is broadcast or coerced
silently.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from irtool.core.errors import InputError
from irtool.reference.precision import common_float_dtype
from irtool.reference.rounding import EXACT, Rounding

DIRECTIONS = ("forward", "reverse", "bidirectional")


class _Required:
    """Default of a required port or attribute, so that leaving it out is a ValueError, not a TypeError."""

    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()


def as_array(name: str, value: Any) -> np.ndarray:
    if value is None or value is REQUIRED:
        raise InputError(f"{name} is missing; it is a required input")
    return value if isinstance(value, np.ndarray) else np.asarray(value)


# --- attributes -----------------------------------------------------------------------

def _present(name: str, value: Any, expected: str) -> Any:
    if value is None or value is REQUIRED:
        raise InputError(f"{name} is missing; it is a required attribute ({expected})")
    return value


def positive_int(name: str, value: Any) -> int:
    _present(name, value, "a positive integer")
    try:
        number = int(value)
        exact = number == float(value)
    except (TypeError, ValueError):
        number, exact = 0, False
    if not exact or number <= 0:
        raise InputError(f"{name} is {value!r}; expected a positive integer")
    return number


def hidden_size(value: Any) -> int:
    return positive_int("hidden_size", value)


def choice(name: str, value: Any, allowed: Sequence[str]) -> str:
    """A string attribute, in any case, that must be one of ``allowed``; returned in lower case."""
    text = str(_present(name, value, " | ".join(allowed))).strip().lower()
    if text not in allowed:
        raise InputError(f"{name} is {value!r}; expected one of {', '.join(allowed)}")
    return text


def direction(value: Any) -> tuple[bool, ...]:
    """Per direction, whether it runs in reverse: (False,), (True,) or (False, True)."""
    return {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}[choice("direction", value,
                                                                                            DIRECTIONS)]


def clip(value: Any) -> float | None:
    """None for no clipping (0, absent or infinity), else the positive bound."""
    try:
        bound = 0.0 if value is None else float(value)
    except (TypeError, ValueError):
        bound = math.nan
    if math.isnan(bound) or bound < 0:
        raise InputError(f"clip is {value!r}; expected a positive number, or 0 / infinity for no clipping")
    return None if bound == 0 or math.isinf(bound) else bound


def rounding(value: Any) -> Rounding:
    """The rounding of a run: None is none (the ideal reference)."""
    if value is None:
        return EXACT
    if not isinstance(value, Rounding):
        raise InputError(f"rounding is {type(value).__name__}; expected an irtool.reference.rounding.Rounding or None")
    return value


def flag(name: str, value: Any) -> bool:
    text = str(value).strip().lower()
    if isinstance(value, (bool, np.bool_)) or text in ("0", "1", "true", "false"):
        return text in ("1", "true")
    raise InputError(f"{name} is {value!r}; expected true or false")


def names(name: str, value: Any, count: int) -> tuple[str, ...]:
    items = tuple(part.strip() for part in value.split(",")) if isinstance(value, str) else tuple(value)
    if len(items) != count:
        raise InputError(f"{name} has {len(items)} values {list(items)}; expected {count}")
    return items


def floats(name: str, value: Any) -> tuple[float, ...]:
    if value is None:
        return ()
    items = [part for part in value.split(",") if part.strip()] if isinstance(value, str) else list(value)
    try:
        return tuple(float(item) for item in items)
    except (TypeError, ValueError):
        raise InputError(f"{name} is {value!r}; expected a list of numbers") from None


# --- inputs ---------------------------------------------------------------------------
# Shapes are the spec's to check (irtool.reference.registry wraps each op in irtool.specs.check_shapes;
# ONNX nodes are checked in ONNX layouts by irtool.onnx.shapes); here: presence, dtypes, and
# the values of sequence lengths.

def lengths(array: np.ndarray, seq: int) -> np.ndarray:
    if array.dtype.kind not in "iu":
        raise InputError(f"sequence_lengths has dtype {array.dtype}; expected an integer type")
    values = array.astype(np.int64)
    bad = np.flatnonzero((values < 0) | (values > seq))
    if bad.size:
        k = int(bad[0])
        raise InputError(f"sequence_lengths[{k}] is {int(values[k])}; expected a value in [0, seq_length={seq}]")
    return values


@dataclass(frozen=True)
class Problem:
    """Checked inputs in sequence layout: X [batch, seq, input], states [batch, dirs, H]."""

    x: np.ndarray
    states: tuple[np.ndarray, ...]
    lengths: np.ndarray
    w: np.ndarray
    r: np.ndarray
    b: np.ndarray
    dtype: np.dtype


def sequence_problem(x: Any, states: Sequence[tuple[str, Any]], seq_lengths: Any, w: Any, r: Any, b: Any) -> Problem:
    """The inputs of a *Sequence op (port names as the spec gives them), shapes already checked."""
    x = as_array("X", x)
    state_arrays = tuple(as_array(name, value) for name, value in states)
    w, r, b = as_array("W", w), as_array("R", r), as_array("B", b)
    dtype = common_float_dtype([("X", x), *zip((n for n, _ in states), state_arrays), ("W", w), ("R", r), ("B", b)])
    checked_lengths = lengths(as_array("sequence_lengths", seq_lengths), x.shape[1])
    return Problem(x, state_arrays, checked_lengths, w, r, b, dtype)


def cell_problem(x: Any, states: Sequence[tuple[str, Any]], w: Any, r: Any, b: Any | None, *,
                 hidden: int, bias_gates: int) -> Problem:
    """The inputs of a *Cell op, shapes already checked, lifted to a one-step forward sequence
    (an absent B is zeros)."""
    x = as_array("X", x)
    state_arrays = tuple(as_array(name, value) for name, value in states)
    w, r = as_array("W", w), as_array("R", r)
    b = None if b is None else as_array("B", b)
    dtype = common_float_dtype([("X", x), *zip((n for n, _ in states), state_arrays), ("W", w), ("R", r), ("B", b)])
    if b is None:
        b = np.zeros(bias_gates * hidden, dtype=dtype)
    return Problem(x[:, None], tuple(s[:, None] for s in state_arrays), np.ones(x.shape[0], dtype=np.int64),
                   w[None], r[None], b[None], dtype)


def given_states(value: Any, batch: int, directions: int, seq: int, hidden: int) -> np.ndarray:
    """A run's Y to start each step from: a float array [batch, directions, seq, hidden]."""
    array = as_array("given_states", value)
    if array.shape != (batch, directions, seq, hidden) or array.dtype.kind != "f":
        raise InputError(f"given_states has shape {list(array.shape)} ({array.dtype}); expected Y's, "
                         f"a float array [{batch}, {directions}, {seq}, {hidden}]")
    return array
