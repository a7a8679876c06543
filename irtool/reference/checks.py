"""Input and attribute checks of the public reference functions.

Every problem is one ``InputError`` (an ``IrtoolError`` and a ``ValueError``) that names the input or attribute, then what was found
and what was expected (``W has shape [1, 384, 16]; expected [num_directions=1,
3*hidden_size=6, input_size=16]``).  Nothing is broadcast or coerced silently.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from irtool.errors import InputError
from irtool.reference.precision import common_float_dtype

DIRECTIONS = ("forward", "reverse", "bidirectional")
Dim = tuple[str, int]


class _Required:
    """Default of a required port or attribute, so that leaving it out is a ValueError, not a TypeError."""

    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()


def _listed(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(v)) for v in shape) + "]"


def as_array(name: str, value: Any) -> np.ndarray:
    if value is None or value is REQUIRED:
        raise InputError(f"{name} is missing; it is a required input")
    return value if isinstance(value, np.ndarray) else np.asarray(value)


def expect_shape(name: str, array: np.ndarray, dims: Sequence[Dim]) -> None:
    expected = tuple(value for _, value in dims)
    if array.shape != expected:
        wanted = ", ".join(f"{label}={value}" for label, value in dims)
        raise InputError(f"{name} has shape {_listed(array.shape)}; expected [{wanted}]")


def expect_rank(name: str, array: np.ndarray, labels: Sequence[str]) -> tuple[int, ...]:
    if array.ndim != len(labels):
        raise InputError(f"{name} has shape {_listed(array.shape)}; expected {len(labels)} dims "
                         f"[{', '.join(labels)}]")
    return tuple(int(v) for v in array.shape)


# --- attributes -----------------------------------------------------------------------

def _present(name: str, value: Any, expected: str) -> Any:
    if value is None or value is REQUIRED:
        raise InputError(f"{name} is missing; it is a required attribute ({expected})")
    return value


def hidden_size(value: Any) -> int:
    _present("hidden_size", value, "a positive integer")
    try:
        number = int(value)
        exact = number == float(value)
    except (TypeError, ValueError):
        number, exact = 0, False
    if not exact or number <= 0:
        raise InputError(f"hidden_size is {value!r}; expected a positive integer")
    return number


def direction(value: Any) -> tuple[bool, ...]:
    """Per direction, whether it runs in reverse: (False,), (True,) or (False, True)."""
    name = str(_present("direction", value, " | ".join(DIRECTIONS))).strip().lower()
    if name not in DIRECTIONS:
        raise InputError(f"direction is {value!r}; expected one of {', '.join(DIRECTIONS)}")
    return {"forward": (False,), "reverse": (True,), "bidirectional": (False, True)}[name]


def clip(value: Any) -> float | None:
    """None for no clipping (0, absent or infinity), else the positive bound."""
    try:
        bound = 0.0 if value is None else float(value)
    except (TypeError, ValueError):
        bound = math.nan
    if math.isnan(bound) or bound < 0:
        raise InputError(f"clip is {value!r}; expected a positive number, or 0 / infinity for no clipping")
    return None if bound == 0 or math.isinf(bound) else bound


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

def _rows(gates: int, hidden: int) -> Dim:
    return ("hidden_size" if gates == 1 else f"{gates}*hidden_size", gates * hidden)


def lengths(array: np.ndarray, batch: int, seq: int) -> np.ndarray:
    expect_shape("sequence_lengths", array, [("batch_size", batch)])
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


def sequence_problem(x: Any, states: Sequence[tuple[str, Any]], seq_lengths: Any, w: Any, r: Any, b: Any, *,
                     hidden: int, directions: int, gates: int, bias_gates: int) -> Problem:
    """Check the inputs of a *Sequence op (port names as the spec gives them)."""
    x = as_array("X", x)
    batch, seq, inputs = expect_rank("X", x, ("batch_size", "seq_length", "input_size"))
    state_arrays = tuple(as_array(name, value) for name, value in states)
    w, r, b = as_array("W", w), as_array("R", r), as_array("B", b)
    dtype = common_float_dtype([("X", x), *zip((n for n, _ in states), state_arrays), ("W", w), ("R", r), ("B", b)])
    nd, hs = ("num_directions", directions), ("hidden_size", hidden)
    for (name, _), array in zip(states, state_arrays):
        expect_shape(name, array, [("batch_size", batch), nd, hs])
    expect_shape("W", w, [nd, _rows(gates, hidden), ("input_size", inputs)])
    expect_shape("R", r, [nd, _rows(gates, hidden), hs])
    expect_shape("B", b, [nd, _rows(bias_gates, hidden)])
    checked_lengths = lengths(as_array("sequence_lengths", seq_lengths), batch, seq)
    return Problem(x, state_arrays, checked_lengths, w, r, b, dtype)


def cell_problem(x: Any, states: Sequence[tuple[str, Any]], w: Any, r: Any, b: Any | None, *,
                 hidden: int, gates: int, bias_gates: int) -> Problem:
    """Check the inputs of a *Cell op and lift them to a one-step forward sequence."""
    x = as_array("X", x)
    batch, inputs = expect_rank("X", x, ("batch_size", "input_size"))
    state_arrays = tuple(as_array(name, value) for name, value in states)
    w, r = as_array("W", w), as_array("R", r)
    b = None if b is None else as_array("B", b)
    dtype = common_float_dtype([("X", x), *zip((n for n, _ in states), state_arrays), ("W", w), ("R", r), ("B", b)])
    hs = ("hidden_size", hidden)
    for (name, _), array in zip(states, state_arrays):
        expect_shape(name, array, [("batch_size", batch), hs])
    expect_shape("W", w, [_rows(gates, hidden), ("input_size", inputs)])
    expect_shape("R", r, [_rows(gates, hidden), hs])
    if b is None:
        b = np.zeros(bias_gates * hidden, dtype=dtype)
    expect_shape("B", b, [_rows(bias_gates, hidden)])
    return Problem(x[:, None], tuple(s[:, None] for s in state_arrays), np.ones(batch, dtype=np.int64),
                   w[None], r[None], b[None], dtype)
