"""Reading attribute values from the text IR writes, by the spec's attribute type."""
from __future__ import annotations

import math
from typing import Any, Callable

from irtool.core.errors import IrtoolError
from irtool.core.numbers import NumberSyntaxError, parse_float, parse_int, shown
from irtool.core.shapes import ShapeSyntaxError, parse_shape

_TRUE = {"true", "1"}
_FALSE = {"false", "0"}


class ValueSyntaxError(IrtoolError, ValueError):
    """Attribute text that is not a value of the attribute's type."""


def _int(text: str) -> int:
    try:
        return parse_int(text)  # int64 and uint64 attributes
    except NumberSyntaxError as error:
        raise ValueSyntaxError(str(error)) from None


def _uint64(text: str) -> int:
    """A Const's offset and size: OpenVINO reads them with a stream that takes leading spaces but
    refuses any character after the digits (measured with openvino 2026.4.1: size="144 " and
    size=" 144 " are "not an unsigned 64 bit integer", size=" 144" is read)."""
    if text != text.rstrip():
        raise ValueSyntaxError(f"{shown(text)} ends in a space, which OpenVINO's reader refuses here")
    try:
        return parse_int(text, 0, 2**64 - 1)
    except NumberSyntaxError as error:
        raise ValueSyntaxError(str(error)) from None


def _float(text: str) -> float:
    try:
        return parse_float(text)
    except NumberSyntaxError as error:
        raise ValueSyntaxError(str(error)) from None


def _bool(text: str) -> bool:
    token = text.strip().lower()
    if token in _TRUE:
        return True
    if token in _FALSE:
        return False
    raise ValueSyntaxError(f"{shown(text)} is not a bool (true, false, 1 or 0)")


def _items(text: str) -> list[str]:
    return [] if not text.strip() else [item.strip() for item in text.split(",")]


def _list(item: Callable[[str], Any]) -> Callable[[str], list]:
    def parse(text: str) -> list:
        return [item(token) for token in _items(text)]
    return parse


def _element_type(text: str) -> str:
    """An element type name as OpenVINO's reader takes it: any case (``F32``, ``Boolean``), nothing
    around it (`` f32`` is refused), measured with openvino 2026.4.1; given as OpenVINO names it."""
    from irtool.core.element_types import BY_NAME

    lowered = text.lower()
    return lowered if lowered in BY_NAME else text


def _shape(text: str) -> tuple:
    try:
        return parse_shape(text)
    except ShapeSyntaxError as error:
        raise ValueSyntaxError(f"{shown(text)} is not a shape: {error}") from None


PARSERS: dict[str, Callable[[str], Any]] = {
    "int": _int,
    "uint64": _uint64,
    "float": _float,
    "bool": _bool,
    "string": lambda text: text,
    "element_type": lambda text: _element_type(text),
    "string_list": _items,
    "float_list": _list(_float),
    "int_list": _list(_int),
    "shape": _shape,
}

TYPE_NAMES = {
    "int": "an integer", "uint64": "an unsigned 64-bit integer", "float": "a number", "bool": "a bool", "string": "a string",
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


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_TYPED: dict[str, Callable[[Any], bool]] = {
    "int": _integer,
    "uint64": _integer,
    "float": _number,
    "bool": lambda value: isinstance(value, bool),
    "string": lambda value: isinstance(value, str),
    "element_type": lambda value: isinstance(value, str),
    "string_list": lambda value: isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value),
    "float_list": lambda value: isinstance(value, (list, tuple)) and all(_number(v) for v in value),
    "int_list": lambda value: isinstance(value, (list, tuple)) and all(_integer(v) for v in value),
    "shape": lambda value: isinstance(value, (list, tuple)),
}


def is_typed(type_name: str, value: Any) -> bool:
    """Whether a value given as a Python value (by a library caller, a suite) has the spec type:
    ``5`` is not a string, ``{"a": 1}`` not an integer, ``True`` not a number, NaN no number at all."""
    return _TYPED[type_name](value)
