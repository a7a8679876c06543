"""Element types as IR writes them: port precisions (FP32, I64) and element_type names (f32, i64)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ElementType:
    name: str  # OpenVINO's element type name: f32, i64, boolean, ...
    kind: str  # "float", "int", "bool" or "other"
    bits: int  # 0 where the size is not fixed


_TYPES = [
    ElementType("f64", "float", 64), ElementType("f32", "float", 32), ElementType("f16", "float", 16),
    ElementType("bf16", "float", 16), ElementType("f8e4m3", "float", 8), ElementType("f8e5m2", "float", 8),
    ElementType("nf4", "float", 4),
    ElementType("i64", "int", 64), ElementType("i32", "int", 32), ElementType("i16", "int", 16),
    ElementType("i8", "int", 8), ElementType("i4", "int", 4),
    ElementType("u64", "int", 64), ElementType("u32", "int", 32), ElementType("u16", "int", 16),
    ElementType("u8", "int", 8), ElementType("u4", "int", 4), ElementType("u1", "int", 1),
    ElementType("boolean", "bool", 8), ElementType("string", "other", 0), ElementType("dynamic", "other", 0),
    ElementType("undefined", "other", 0),
]
BY_NAME = {t.name: t for t in _TYPES}
# port precision spellings (FP32, I64, BOOL, ...) and their element types
_PRECISION_ALIASES = {"fp64": "f64", "fp32": "f32", "fp16": "f16", "bool": "boolean", "unspecified": "undefined"}


def from_text(text: str | None) -> ElementType | None:
    """The element type of a port precision or element_type attribute; None if unknown."""
    if text is None:
        return None
    key = text.strip().lower()
    return BY_NAME.get(_PRECISION_ALIASES.get(key, key))


# a port precision is an element type's name (f32) or one of the upper-case names IR v10 wrote
# (FP32, I64, BOOL): OpenVINO refuses fp32, F32, Bool and BOOLEAN (measured with 2026.4.1)
_PRECISIONS = {**BY_NAME, "FP64": BY_NAME["f64"], "FP32": BY_NAME["f32"], "FP16": BY_NAME["f16"],
               "BOOL": BY_NAME["boolean"], "UNSPECIFIED": BY_NAME["undefined"],
               **{t.name.upper(): t for t in _TYPES if t.kind != "bool" and t.name not in ("f64", "f32", "f16")}}


def from_precision(text: str | None) -> ElementType | None:
    """The element type of a port precision spelt as OpenVINO reads it; None otherwise."""
    return _PRECISIONS.get(text.strip()) if text is not None else None


def matches(element_type: ElementType, type_class: str) -> bool:
    """Whether a type belongs to a spec type class (float, int, any)."""
    return type_class == "any" or element_type.kind == type_class or element_type.kind == "other"


def byte_size(element_type: ElementType, count: int) -> int | None:
    if not element_type.bits:
        return None
    return (count * element_type.bits + 7) // 8
