"""Element types as IR writes them: port precisions (FP32, I64) and element_type names (f32, i64)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where packing needs it: validate reads element types without it
    import numpy as np


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


# Integer types of less than a byte, as OpenVINO packs them (measured with openvino 2026.4.1): i4 and
# u4 two to a byte, the first element in the low nibble; u1 eight to a byte, the first in the high bit.
PACKED = {"i4": (4, True), "u4": (4, False), "u1": (1, False)}  # name -> (bits, signed)
# Element types no numpy array holds one value an element of (OpenVINO's to_dtype gives their bytes):
# irtool neither makes nor reads inputs of them.
NOT_ARRAYS = frozenset({"nf4", "f4e2m1", "f8e4m3", "f8e5m2", "f8e8m0", "string", "dynamic", "undefined"})


def packed_range(name: str) -> tuple[int, int]:
    """The values a packed integer type holds (i4: -8..7)."""
    bits, signed = PACKED[name]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def pack(values: "np.ndarray", name: str) -> "np.ndarray":
    """``values`` (one integer an element) as the bytes of the packed type ``name``; ValueError
    naming the first value out of its range."""
    import numpy as np

    bits, _ = PACKED[name]
    low, high = packed_range(name)
    flat = np.asarray(values).reshape(-1).astype(np.int64)
    outside = flat[(flat < low) | (flat > high)]
    if outside.size:
        raise ValueError(f"{name} holds {low}..{high}, not {int(outside[0])}")
    per_byte = 8 // bits
    padded = np.zeros(-(-flat.size // per_byte) * per_byte, np.uint8)
    padded[:flat.size] = (flat & ((1 << bits) - 1)).astype(np.uint8)
    if bits == 1:
        return np.packbits(padded, bitorder="big")
    return (padded[0::2] | (padded[1::2] << 4)).astype(np.uint8)


def unpack(data: "np.ndarray", name: str, shape: "tuple[int, ...]") -> "np.ndarray":
    """The bytes of a packed type as its values, one an element (int8 or uint8), in ``shape``."""
    import numpy as np

    bits, signed = PACKED[name]
    raw = np.asarray(data).reshape(-1).view(np.uint8)
    count = int(np.prod(shape, dtype=np.int64))
    if bits == 1:
        values = np.unpackbits(raw, bitorder="big")[:count]
    else:
        values = np.stack([raw & 0x0F, raw >> 4], axis=-1).reshape(-1)[:count]
    if signed:
        values = np.where(values >= 8, values.astype(np.int16) - 16, values).astype(np.int8)
    return values.reshape(shape)
