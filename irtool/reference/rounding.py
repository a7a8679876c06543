"""Rounding as a device does it: the roundings a precision model names, and where a run applies them.

The reference computes in float32 (or float64); a device running at bf16 or f16 rounds some of
its values to that type on the way (irtool.specs.precision reads which, per implementation
path, from schemas/precision.json).  :class:`Rounding` says at which points of a run values are
rounded and by which function; the recurrence driver and the cells apply it, so a reference run
with the device's rounding compares like with like.

The functions take float32 values and give float32 values the named type holds exactly:

- ``bf16``: to the nearest bfloat16, ties to even (a hardware conversion: AVX512_BF16's
  vcvtneps2bf16, ml_dtypes' cast).
- ``bf16-openvino``: OpenVINO's own float32 -> bfloat16 conversion (``ov::bfloat16`` and the CPU
  plugin's ``bfloat16_t``, both named "round_to_nearest_even"): it adds half a unit in the last
  place only where the kept last bit is odd, so where that bit is even it truncates
  (0x3F80C000 -> 0x3F80, where nearest is 0x3F81).  OpenVINO converts constants (weights) so.
- ``f16``: to the nearest float16, ties to even; values past 65504 become infinite.

NaN stays NaN and infinities stay infinite in each.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Callable, Mapping

import numpy as np

Round = Callable[[np.ndarray], np.ndarray]  # float32 in, float32 out (a new array, or in place: see Rounding)

_KEEP = np.uint32(0xFFFF0000)


def round_bf16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), as float32."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = bits + (np.uint32(0x7FFF) + ((bits >> 16) & 1))
    return _with_nan(rounded & _KEEP, values)


def round_bf16_openvino(values: np.ndarray) -> np.ndarray:
    """float32 values converted to bfloat16 as OpenVINO converts them (see the module), as float32."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = bits + ((bits & np.uint32(0x10000)) >> 1)
    return _with_nan(rounded & _KEEP, values)


def round_f16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest float16 (ties to even; past 65504 infinite), as float32."""
    with np.errstate(over="ignore"):
        return np.asarray(values, dtype=np.float32).astype(np.float16).astype(np.float32)


def _with_nan(bits: np.ndarray, values: np.ndarray) -> np.ndarray:
    result = bits.view(np.float32)
    nan = np.isnan(values)
    if nan.any():  # a NaN's payload may carry into the exponent: keep the value itself
        result[nan] = np.asarray(values, dtype=np.float32)[nan]
    return result


ROUNDINGS: Mapping[str, Round] = {"bf16": round_bf16, "bf16-openvino": round_bf16_openvino, "f16": round_f16}


def in_place(name: str) -> Callable[[np.ndarray], None]:
    """A rounding applied to float32 arrays in place, for the values a run computes at every step
    (their NaNs are the default NaN of arithmetic, whose payload never carries).  Casts to the type
    and back through a buffer kept per shape, where numpy has the type (float16; bfloat16 where
    ml_dtypes is installed, as it is with openvino); else the bits."""
    kind = {"f16": np.float16, "bf16": _bfloat16()}.get(name)
    if kind is not None:
        buffers: dict[tuple[int, ...], np.ndarray] = {}

        def cast(array: np.ndarray) -> None:
            buffer = buffers.get(array.shape)
            if buffer is None:
                buffer = buffers[array.shape] = np.empty(array.shape, kind)
            with np.errstate(over="ignore"):
                np.copyto(buffer, array, casting="unsafe")
            np.copyto(array, buffer, casting="unsafe")
        return cast
    if name == "bf16":
        def bf16(array: np.ndarray) -> None:
            bits = array.view(np.uint32)
            lsb = (bits >> 16) & 1
            lsb += 0x7FFF
            bits += lsb
            bits &= _KEEP
        return bf16
    function = ROUNDINGS[name]

    def other(array: np.ndarray) -> None:
        np.copyto(array, function(array))
    return other


def _bfloat16() -> type | None:
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes.bfloat16


@dataclass(frozen=True)
class Rounding:
    """Where a run rounds its values, and to what (a name of ROUNDINGS; None: kept as computed).

    ``inputs``: X and the initial states, once; ``weights``: W and R, once; ``bias``: B, once;
    ``state``: the hidden state after every step (what the next step's product reads, and Y);
    ``cell_state``: LSTM's cell state after every step; ``reset_product``: GRU's r (.) H before
    its product with R (linear_before_reset false); ``gates``: every gate's pre-activation and
    activation at every step (a cell decomposed into ops that each round); ``outputs``: Y, Ho
    and Co at the end.
    """

    inputs: str | None = None
    weights: str | None = None
    bias: str | None = None
    state: str | None = None
    cell_state: str | None = None
    reset_product: str | None = None
    gates: str | None = None
    outputs: str | None = None

    def __post_init__(self) -> None:
        for point in fields(self):
            name = getattr(self, point.name)
            if name is not None and name not in ROUNDINGS:
                raise ValueError(f"rounding of {point.name} is {name!r}; expected one of {', '.join(ROUNDINGS)}")

    @property
    def exact(self) -> bool:
        """Whether nothing is rounded (the ideal reference)."""
        return all(getattr(self, point.name) is None for point in fields(self))

    def once(self, point: str) -> Round | None:
        """The function rounding the values of ``point`` that are rounded once (inputs, weights, bias, outputs)."""
        name = getattr(self, point)
        return ROUNDINGS[name] if name is not None else None

    def per_step(self, point: str) -> Callable[[np.ndarray], None] | None:
        """The in-place rounding of ``point``'s values at every step (state, cell_state, reset_product, gates)."""
        name = getattr(self, point)
        return in_place(name) if name is not None else None

    def describe(self) -> str:
        """``inputs, weights bf16-openvino, state bf16`` (the points rounded, each with its rounding)."""
        named = [(point.name, getattr(self, point.name)) for point in fields(self)]
        return ", ".join(f"{point} {name}" for point, name in named if name is not None) or "nothing rounded"


EXACT = Rounding()
