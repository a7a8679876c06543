"""Dimensions and partial shapes as IR writes them.

A dimension is either a static size (a non-negative ``int``) or an :class:`Interval`
(``-1`` / ``?`` is the unbounded interval, ``2..8`` a bounded one).  Both the IR parser
and the op specs use these types, so they live here, below both.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from irtool.core.errors import IrtoolError
from irtool.core.numbers import INT_TEXT, NumberSyntaxError, parse_int, shown


@dataclass(frozen=True)
class Interval:
    """A dynamic dimension: ``lower..upper`` (``upper`` None means unbounded)."""

    lower: int = 0
    upper: int | None = None

    def contains(self, value: int) -> bool:
        return value >= self.lower and (self.upper is None or value <= self.upper)

    def __str__(self) -> str:
        if self.lower == 0 and self.upper is None:
            return "?"
        return f"{self.lower}..{'' if self.upper is None else self.upper}"


Dim = Union[int, Interval]
DYNAMIC = Interval()

_INTERVAL = re.compile(r"^(\d*)\.\.(\d*)$", re.ASCII)
INT64_MAX = 2**63 - 1  # OpenVINO keeps a dim in an int64


class ShapeSyntaxError(IrtoolError, ValueError):
    """A dim or shape string that is not a valid partial shape."""


_PARSED: dict[str, Dim] = {}  # text -> dim: a net repeats a few dim texts tens of thousands of times


def parse_dim(text: str) -> Dim:
    """Parse one dim: ``4``, ``-1`` or ``?`` (dynamic), ``2..8``, ``..8``, ``2..``."""
    dim = _PARSED.get(text)
    if dim is None:
        dim = _parse_dim(text)
        if len(_PARSED) < 65536:
            _PARSED[text] = dim
    return dim


def _parse_dim(text: str) -> Dim:
    token = text.strip()
    if token in ("?", "-1"):
        return DYNAMIC
    if INT_TEXT.fullmatch(token):
        value = _int64(token)
        if value < 0:
            raise ShapeSyntaxError(f"dim {token} is negative (only -1 means dynamic)")
        return value
    match = _INTERVAL.match(token)
    if match:
        lower = _int64(match.group(1)) if match.group(1) else 0
        upper = _int64(match.group(2)) if match.group(2) else None
        if upper is not None and upper < lower:
            raise ShapeSyntaxError(f"interval {token} has its upper bound below its lower bound")
        return Interval(lower, upper)
    raise ShapeSyntaxError(f"dim {shown(token)} is not a size, -1, ? or an interval a..b")


def _int64(token: str) -> int:
    """An ASCII integer that fits OpenVINO's int64 dims."""
    try:
        return parse_int(token, -INT64_MAX - 1, INT64_MAX)
    except NumberSyntaxError:
        raise ShapeSyntaxError(f"dim {shown(token)} does not fit in 64 bits") from None


def parse_shape(text: str) -> tuple[Dim, ...]:
    """Parse a partial shape as IR writes it: ``2,4,16``, ``?,4,16``, ``[1, 2]``; empty is a scalar."""
    body = text.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1].strip()
    if not body:
        return ()
    return tuple(parse_dim(token) for token in body.split(","))


def is_static(dim: Dim) -> bool:
    return isinstance(dim, int)


def dims_compatible(a: Dim, b: Dim) -> bool:
    """Whether two declared dims can describe the same tensor."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, int):
        return b.contains(a)  # type: ignore[union-attr]
    if isinstance(b, int):
        return a.contains(b)
    upper_a = a.upper if a.upper is not None else float("inf")
    upper_b = b.upper if b.upper is not None else float("inf")
    return max(a.lower, b.lower) <= min(upper_a, upper_b)


def format_shape(dims: tuple[Dim, ...] | list[Dim]) -> str:
    return "[" + ",".join(str(d) for d in dims) + "]"
