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

import functools
from dataclasses import dataclass, fields
from typing import Callable, Mapping

import numpy as np

Round = Callable[[np.ndarray], np.ndarray]  # float32 in, float32 out (a new array, or in place: see Rounding)

# 0-d arrays: a numpy scalar operand costs a ufunc call ~0.5 us more
_KEEP = np.array(0xFFFF0000, np.uint32)
_SIXTEEN, _ONE = np.array(16, np.uint32), np.array(1, np.uint32)
_HALF_BF16 = np.array(0x7FFF, np.uint32)  # half a bfloat16 unit, less one: ties go to the odd one's carry
_ODD_BF16 = np.array(0x10000, np.uint32)  # bfloat16's last bit


def round_bf16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), as float32."""
    rounded = np.array(values, dtype=np.float32, order="C")  # a copy, rounded in place below
    bits = rounded.view(np.uint32)
    carry = np.right_shift(bits, _SIXTEEN)  # one temporary: fresh arrays cost a page fault per 4 KB
    np.bitwise_and(carry, _ONE, out=carry)
    np.add(carry, _HALF_BF16, out=carry)
    return _with_nan(bits, carry, values)


def round_bf16_openvino(values: np.ndarray) -> np.ndarray:
    """float32 values converted to bfloat16 as OpenVINO converts them (see the module), as float32."""
    rounded = np.array(values, dtype=np.float32, order="C")
    bits = rounded.view(np.uint32)
    carry = np.bitwise_and(bits, _ODD_BF16)
    np.right_shift(carry, _ONE, out=carry)
    return _with_nan(bits, carry, values)


def round_f16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest float16 (ties to even; past 65504 infinite), as float32."""
    rounded = np.array(values, dtype=np.float32, order="C")  # a copy
    with np.errstate(over="ignore", invalid="ignore"):  # invalid: a signalling NaN, which stays NaN
        in_place("f16")(rounded)
    return rounded


def _with_nan(bits: np.ndarray, carry: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``bits`` (float32 values' bits, a copy) plus ``carry``, truncated to bfloat16, in place, as float32."""
    np.add(bits, carry, out=bits)
    np.bitwise_and(bits, _KEEP, out=bits)
    result = bits.view(np.float32)
    nan = np.isnan(values)
    if nan.any():  # a NaN's payload may carry into the exponent: keep the value itself
        result[nan] = np.asarray(values, dtype=np.float32)[nan]
    return result


ROUNDINGS: Mapping[str, Round] = {"bf16": round_bf16, "bf16-openvino": round_bf16_openvino, "f16": round_f16}


def in_place(name: str) -> Callable[[np.ndarray], None]:
    """A rounding applied to float32 arrays in place, for the values a run computes at every step
    (their NaNs are the default NaN of arithmetic, whose payload never carries).  A run that rounds
    to f16 calls it inside ``np.errstate(over="ignore")`` (values past f16's range become infinite,
    as on the device).  bf16: a cast to ml_dtypes' bfloat16 and back where it is installed (as it
    is with openvino), else the bits; f16: a cast to numpy's float16 and back for small arrays, the
    float32 arithmetic of :func:`_f16_by_magic` for large ones (numpy's cast to float16 takes
    about 5 ns a value on a CPU without AVX512; the arithmetic 7 calls of under 1 ns a value).
    A run calls :func:`for_shape`'s functions instead: one call less per rounding."""
    if name == "f16" or (name == "bf16" and _bfloat16() is not None):
        return _cached_per_shape(functools.partial(for_shape, name))
    return for_shape(name, ())


Into = Callable[..., None]  # (array) rounds it in place; (array, into) writes it rounded to ``into``


def for_shape(name: str, shape: tuple[int, ...]) -> Into:
    """:func:`in_place`'s rounding for arrays of ``shape`` alone (with the buffers it keeps), which
    also writes a rounded copy: ``function(array, into)`` (one call less than a copy then rounding)."""
    if name == "f16":
        return _f16_by_cast(shape) if int(np.prod(shape)) < _F16_BY_MAGIC_FROM else _f16_by_magic(shape)
    bfloat16 = _bfloat16() if name == "bf16" else None
    if bfloat16 is not None:
        return _cast(shape, bfloat16)
    if name == "bf16":
        def bf16(array: np.ndarray, into: np.ndarray | None = None) -> None:
            if into is not None:
                np.copyto(into, array)
                array = into
            bits = array.view(np.uint32)
            lsb = (bits >> 16) & 1
            lsb += 0x7FFF
            bits += lsb
            bits &= _KEEP
        return bf16
    function = ROUNDINGS[name]

    def other(array: np.ndarray, into: np.ndarray | None = None) -> None:
        np.copyto(array if into is None else into, function(array))
    return other


_F16_BY_MAGIC_FROM = 1024  # values in an array from which the arithmetic beats the cast (measured: 768 to 1,024)


def _cached_per_shape(make: Callable[[tuple[int, ...]], Callable[[np.ndarray], None]]) -> Callable[[np.ndarray], None]:
    """One rounding function per shape of array, made by ``make`` with the buffers it keeps."""
    made: dict[tuple[int, ...], Callable[[np.ndarray], None]] = {}

    def rounded(array: np.ndarray) -> None:
        function = made.get(array.shape)
        if function is None:
            function = made[array.shape] = make(array.shape)
        function(array)
    return rounded


def _cast(shape: tuple[int, ...], kind: type) -> Into:
    buffer = np.empty(shape, kind)

    def cast(array: np.ndarray, into: np.ndarray | None = None) -> None:  # (assignment: half np.copyto's call cost)
        buffer[...] = array
        (array if into is None else into)[...] = buffer
    return cast


_f16_by_cast = functools.partial(_cast, kind=np.float16)

# _f16_by_magic's constants, as 0-d arrays (a numpy scalar operand costs a ufunc call ~0.5 us more)
_EXPONENT = np.array(0x7F800000, np.uint32)
_F16_SMALLEST_NORMAL = np.array(0x38800000, np.uint32)  # 2^-14: below it, f16's spacing stays 2^-24
_F16_PAST_RANGE = np.array(0x47800000, np.uint32)  # 2^16
_TO_MAGIC = np.array((13 << 23) | 0x400000, np.uint32)  # 2^e -> 1.5 * 2^(e + 13)
_UP, _DOWN = np.array(2.0 ** 112, np.float32), np.array(2.0 ** -112, np.float32)
try:  # the clip ufunc itself: np.clip's wrapper costs ~3 us a call
    from numpy._core.umath import clip as _CLIP
except ImportError:  # numpy < 2
    _CLIP = np.clip


def _f16_by_magic(shape: tuple[int, ...]) -> Callable[[np.ndarray], None]:
    """Round to the nearest float16, ties to even, in float32 arithmetic: adding M = 1.5 * 2^(e+13),
    e the exponent of the value (at least -14, f16's smallest normal; at most 16), rounds the value
    to a multiple of 2^(e-10), f16's spacing there, since x + M stays in M's binade; subtracting
    M is exact.  Then values of 2^16 and more (65520 and more before rounding) overflow to
    infinity through x * 2^112 * 2^-112, exact for every smaller value.  Checked against numpy's
    cast over a sample of all 2^32 bit patterns (tests/test_reference_rounding.py).  The exponent
    is bounded by one clip: numpy 2.4's np.maximum / np.minimum with a 0-d operand ran at ~2.5 ns
    a value here, its clip ufunc at ~0.2 (1.8 ms against 0.09 ms for 400,000 values)."""
    magic = np.empty(shape, np.uint32)
    magic_values = magic.view(np.float32)
    band, clip, add, subtract, multiply = np.bitwise_and, _CLIP, np.add, np.subtract, np.multiply

    def by_magic(array: np.ndarray, into: np.ndarray | None = None) -> None:
        band(array.view(np.uint32), _EXPONENT, out=magic)
        clip(magic, _F16_SMALLEST_NORMAL, _F16_PAST_RANGE, out=magic)
        add(magic, _TO_MAGIC, out=magic)
        into = array if into is None else into
        add(array, magic_values, out=into)
        subtract(into, magic_values, out=into)
        multiply(into, _UP, out=into)
        multiply(into, _DOWN, out=into)
    return by_magic


def _bfloat16() -> type | None:
    try:
        import ml_dtypes
    except ImportError:
        return None
    return ml_dtypes.bfloat16


@dataclass(frozen=True)
class Rounding:
    """Where a run rounds its values, and to what (a name of ROUNDINGS; None: kept as computed).

    ``inputs``: X and the initial hidden state, once; ``x_input``: X alone, once, where it is rounded
    otherwise than the initial hidden state (a conversion OpenVINO puts before a dynamic-shape kernel); ``weights``: W and R, once; ``bias``: B, once;
    ``state``: the hidden state after every step (what the next step's product reads, and Y);
    ``cell_state``: LSTM's cell state everywhere: the initial one, after every step, and Co (a
    kernel that keeps it in f32 leaves it None); ``initial_cell_state``: the initial one alone
    (a layer before the kernel rounds it); ``reset_product``: GRU's r (.) H before its
    product with R (linear_before_reset false); ``product_inputs``: what a matrix product reads
    (X and the hidden state), rounded as it enters the product while the state itself is kept
    (a cell decomposed into FullyConnected layers at bf16 and element-wise ops at f32);
    ``products``: each product's result (X W^T, and H R^T with the bias it absorbs, which is
    rounded as its inputs are), rounded as a FullyConnected layer gives it; ``reset_gate_sum``:
    GRU's H R_r^T + b_r rounded again before X W_r^T is added (a TensorIterator's decomposed body); ``gates``: every gate's pre-activation and activation
    at every step (a cell decomposed into ops that each round); ``outputs``: Y and Ho at the
    end; ``cell_output``: Co at the end.
    """

    inputs: str | None = None
    x_input: str | None = None
    weights: str | None = None
    bias: str | None = None
    state: str | None = None
    cell_state: str | None = None
    initial_cell_state: str | None = None
    reset_product: str | None = None
    product_inputs: str | None = None
    products: str | None = None
    reset_gate_sum: str | None = None
    gates: str | None = None
    outputs: str | None = None
    cell_output: str | None = None

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
        """The in-place rounding of ``point``'s values at every step (state, cell_state, reset_product,
        product_inputs, products, reset_gate_sum, gates)."""
        name = getattr(self, point)
        return in_place(name) if name is not None else None

    def per_step_of(self, point: str, shape: tuple[int, ...]) -> Into | None:
        """:meth:`per_step` for arrays of ``shape`` alone (:func:`for_shape`: one Python call less a
        step, and a rounded copy in one call less)."""
        name = getattr(self, point)
        return for_shape(name, shape) if name is not None else None

    def describe(self) -> str:
        """``inputs, weights bf16-openvino, state bf16`` (the points rounded, each with its rounding)."""
        named = [(point.name, getattr(self, point.name)) for point in fields(self)]
        return ", ".join(f"{point} {name}" for point, name in named if name is not None) or "nothing rounded"


EXACT = Rounding()
