"""The one number grammar of IR values: ASCII decimal digits, finite, in range.

Python's ``int()`` and ``float()`` are not the IR grammar: they take any Unicode digit
(``"١"``), ``"1_0"``, ``"inf"`` and ``"nan"``, and ``float("1e400")`` is infinity.
OpenVINO's reader refuses ``clip="١"``, ``clip="1e400"`` and a 400-digit clip
(measured with openvino 2026.4.1).  Dims (irtool.core.shapes), attribute values
(irtool.specs.values) and the net's version read numbers here, and nowhere else.
"""
from __future__ import annotations

import math
import re

from irtool.core.errors import IrtoolError
from irtool.core.jsonable import quoted

INT_TEXT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


class NumberSyntaxError(IrtoolError, ValueError):
    """Text that is not a number of the IR grammar; the message quotes it, cut short."""


def shown(text: str) -> str:
    """A number's text as a message quotes it: whole when short, else its start and its length."""
    return quoted(text, 20)


def parse_int(text: str, low: int = -2**63, high: int = 2**64 - 1, what: str = "an integer") -> int:
    """An ASCII decimal integer (sign allowed, spaces around it ignored) within [low, high]."""
    token = text.strip()
    if not INT_TEXT.fullmatch(token):
        raise NumberSyntaxError(f"{shown(text)} is not {what}")
    digits = token.lstrip("+-").lstrip("0")
    # int() of more than 4300 digits raises; no 64-bit value has more than 20
    value = int(token) if len(digits) <= 20 else None
    if value is None or not -2**63 <= value <= 2**64 - 1:
        raise NumberSyntaxError(f"{shown(token)} does not fit in 64 bits")
    if not low <= value <= high:
        raise NumberSyntaxError(f"{shown(token)} is out of range, expected {low}..{high}")
    return value


def parse_float(text: str) -> float:
    """An ASCII decimal number (``1``, ``-0.5``, ``.5``, ``2e-3``) that is finite as a 64-bit float."""
    token = text.strip()
    if not _FLOAT_TEXT.fullmatch(token):
        raise NumberSyntaxError(f"{shown(text)} is not a number")
    value = float(token)
    if not math.isfinite(value):
        raise NumberSyntaxError(f"{shown(token)} is out of the range of a 64-bit float")
    return value


def is_id(text: str) -> bool:
    """Whether ``text`` is an id as OpenVINO's IR reader takes a layer's, a port's or an edge's:
    ASCII decimal digits only (no sign, space or fraction), within 64 bits unsigned."""
    return text.isascii() and text.isdigit() and len(text.lstrip("0")) <= 20 and int(text) < 2**64
