"""Reading attribute values from the text IR writes, by the spec's attribute type."""
from __future__ import annotations

import math
import re
from typing import Any, Callable

from irtool.errors import IrtoolError
from irtool.shapes import ShapeSyntaxError, parse_shape

_INT = re.compile(r"^[+-]?\d+$", re.ASCII)
_TRUE = {"true", "1"}
_FALSE = {"false", "0"}


class ValueSyntaxError(IrtoolError, ValueError):
    """Attribute text that is not a value of the attribute's type."""


def _int(text: str) -> int:
    token = text.strip()
    if not _INT.match(token):
        raise ValueSyntaxError(f"{text!r} is not an integer")
    # int64 and uint64 attributes; and Python's int() alone refuses more than 4300 digits
    value = int(token) if len(token) <= 21 or len(token.lstrip("+-").lstrip("0")) <= 20 else None
    if value is None or not -2**63 <= value < 2**64:
        shown = token if len(token) <= 24 else f"{token[:20]}...({len(token)} digits)"
        raise ValueSyntaxError(f"{shown} does not fit in 64 bits")
    return value


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueSyntaxError(f"{text!r} is not a number") from None
    if math.isnan(value):
        raise ValueSyntaxError(f"{text!r} is not a number")
    return value


def _bool(text: str) -> bool:
    token = text.strip().lower()
    if token in _TRUE:
        return True
    if token in _FALSE:
        return False
    raise ValueSyntaxError(f"{text!r} is not a bool (true, false, 1 or 0)")


def _items(text: str) -> list[str]:
    return [] if not text.strip() else [item.strip() for item in text.split(",")]


def _list(item: Callable[[str], Any]) -> Callable[[str], list]:
    def parse(text: str) -> list:
        return [item(token) for token in _items(text)]
    return parse


def _shape(text: str) -> tuple:
    try:
        return parse_shape(text)
    except ShapeSyntaxError as error:
        raise ValueSyntaxError(f"{text!r} is not a shape: {error}") from None


PARSERS: dict[str, Callable[[str], Any]] = {
    "int": _int,
    "float": _float,
    "bool": _bool,
    "string": lambda text: text,
    "element_type": lambda text: text.strip(),
    "string_list": _items,
    "float_list": _list(_float),
    "int_list": _list(_int),
    "shape": _shape,
}

TYPE_NAMES = {
    "int": "an integer", "float": "a number", "bool": "a bool", "string": "a string",
    "element_type": "an element type", "string_list": "a comma-separated list of names",
    "float_list": "a comma-separated list of numbers", "int_list": "a comma-separated list of integers",
    "shape": "a shape",
}


def parse_value(type_name: str, text: str) -> Any:
    """Parse attribute text as the named spec type; raises ValueSyntaxError."""
    return PARSERS[type_name](text)


def format_value(value: Any) -> str:
    """Render a value the way IR writes it (lists comma-separated, bools lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(format_value(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else repr(value)
    return str(value)
