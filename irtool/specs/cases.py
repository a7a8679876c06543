"""Op cases: one RNN-family op with its attributes, sizes and data, and the seeded tensors it runs on.

An :class:`OpCase` names an op (type and version), its attributes (typed values, as a
library caller passes them; omitted ones take the spec's defaults), the sizes of the dim
symbols that no attribute fixes (``batch_size``, ``seq_length``, ``input_size``), the
element type, a seed, whether the weights are Consts or Parameters, and which symbols
are dynamic.  Everything about ports, shapes and defaults comes from the op's spec.

The tensor makers here serve both the builder (Const weights) and the executor (seeded
inputs for any model), so a model built with seed N and one run with seed N see the
same kind of data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Iterable, Mapping

import numpy as np

from irtool.core.errors import IrtoolError, did_you_mean
from irtool.core.memory import check_memory
from irtool.specs import OpSpec, PortSpec, get_spec
from irtool.specs.expressions import Expr, Sym
from irtool.specs.model import WEIGHT_ROLES

ELEMENT_TYPES: Mapping[str, str] = {"f32": "float32", "f16": "float16"}
LENGTHS_DTYPE = np.int32
LENGTHS_TYPES: Mapping[str, str] = {"i32": "int32", "i64": "int64"}
SOURCES = ("parameter", "const")  # where an input's data comes from: a model input, or a Const in the model
LENGTHS = ("ragged", "full", "zero", "random")  # sequence_lengths content, see port_tensor
VALUES = ("unsaturated", "saturating")  # data, states and weights ranges, see port_tensor
TRANSFORMS = ("none", "sequence_to_ti", "decompose_cell")  # what is done to the built model before it is compiled


class CaseError(IrtoolError, ValueError):
    """An op case that cannot be made: unknown op, bad attribute, bad size."""


def free_symbols(spec: OpSpec) -> list[str]:
    """The dim symbols of the inputs that no attribute fixes (batch_size, seq_length, input_size)."""
    return list(spec.free_symbols)


def case_ports(spec: OpSpec) -> tuple[PortSpec, ...]:
    """The inputs a built model feeds: the required ones and those OpenVINO requires (GRUCell's B)."""
    return tuple(port for port in spec.inputs if not port.optional or port.openvino_requires)


@dataclass(frozen=True)
class OpCase:
    """One op to build and run; see the module docstring."""

    op_type: str
    attributes: Mapping[str, Any] = field(default_factory=dict)
    sizes: Mapping[str, int] = field(default_factory=dict)
    version: int | None = None
    element_type: str = "f32"
    seed: int = 0
    weights_as_parameters: bool = False
    dynamic: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)  # port name -> "parameter" or "const"
    lengths: str = "ragged"
    lengths_type: str = "i32"
    values: str = "unsaturated"
    bounds: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # a dynamic dim's [min, max]
    transform: str = "none"  # see TRANSFORMS and irtool.pipeline.build.build_model

    def __post_init__(self) -> None:
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or not 0 <= self.seed < 2 ** 63:
            raise CaseError(f"seed {self.seed!r}: expected an integer from 0 to 2**63-1")
        for name, value, allowed in (("lengths", self.lengths, LENGTHS), ("lengths_type", self.lengths_type,
                                     tuple(LENGTHS_TYPES)), ("values", self.values, VALUES),
                                    ("transform", self.transform, TRANSFORMS)):
            if value not in allowed:
                raise CaseError(f"{name} {value!r}: expected one of {', '.join(allowed)}")
        bad = {name: source for name, source in self.sources.items() if source not in SOURCES}
        if bad:
            raise CaseError("; ".join(f"source of {name} is {source!r}: expected parameter or const"
                                      for name, source in bad.items()))

    @cached_property
    def spec(self) -> OpSpec:
        try:
            return get_spec(self.op_type, self.version)
        except KeyError as error:
            raise CaseError(str(error.args[0])) from None

    @cached_property
    def filled_attributes(self) -> dict[str, Any]:
        """The attributes, checked by the spec, with its defaults for the omitted ones.  A value the
        spec leaves open (a clip of -1, -inf or NaN: :meth:`irtool.specs.OpSpec.read_open`) is
        built as asked, to see what a device does with it."""
        given = dict(self.attributes)
        read, _ = self.spec.read_open(given)
        try:
            filled = self.spec.check_attributes(read)
        except ValueError as error:
            raise CaseError(str(error)) from None
        return {**filled, **{name: value for name, value in given.items() if read[name] is not value}}

    @property
    def open_notes(self) -> list[str]:
        """A note per attribute value the spec leaves open, saying how the reference reads it."""
        return self.spec.read_open(dict(self.attributes))[1]

    @cached_property
    def symbols(self) -> dict[str, int]:
        """Every dim symbol's value: attribute-bound ones and the case's sizes (or defaults)."""
        free = free_symbols(self.spec)
        unknown = sorted(set(self.sizes) - set(free))
        if unknown:
            raise CaseError(f"{self.spec.key}: unknown size {', '.join(unknown)}; sizes are {', '.join(free)}")
        for key, names in (("dynamic", self.dynamic), ("bounds", self.bounds)):
            unknown_dims = sorted(set(names) - set(free))
            if unknown_dims:
                raise CaseError(f"{self.spec.key}: {key} names {', '.join(unknown_dims)}, not a dim that can be dynamic"
                                f"{did_you_mean(unknown_dims[0], free)}; dynamic dims are chosen from {', '.join(free)}")
        if self.element_type not in ELEMENT_TYPES:
            raise CaseError(f"element type {self.element_type!r}: expected one of {', '.join(ELEMENT_TYPES)}")
        ports = [port.name for port in self.ports]
        unknown_ports = sorted(set(self.sources) - set(ports))
        if unknown_ports:
            raise CaseError(f"{self.spec.key}: sources name {', '.join(unknown_ports)}, not an input it feeds; "
                            f"its inputs are {', '.join(ports)}")
        if self.transform == "sequence_to_ti":
            if self.spec.time_symbol is None:
                raise CaseError(f"{self.spec.key}: transform sequence_to_ti is for sequence ops; a cell has no "
                                f"sequence to convert")
            if self.filled_attributes.get("direction") == "bidirectional":
                raise CaseError(f"{self.spec.key}: transform sequence_to_ti converts a forward or reverse sequence; "
                                f"OpenVINO's pass leaves a bidirectional one as it is (measured with openvino "
                                f"2026.4.1): split it first, or use direction forward or reverse")
        if self.transform == "decompose_cell" and self.spec.time_symbol is not None:
            raise CaseError(f"{self.spec.key}: transform decompose_cell is for cells (GRUCell, LSTMCell, RNNCell); "
                            f"a sequence converts to a TensorIterator over its cell with sequence_to_ti")
        time = self.spec.time_symbol
        lengths_const = any(p.role == "lengths" and not self.is_parameter(p) for p in self.ports)
        if time and time in self.dynamic and lengths_const:
            raise CaseError(f"{self.spec.key}: sequence_lengths cannot be a Const when {time} is dynamic "
                            f"(its values depend on the {time} of each run)")
        values = self.spec.attribute_symbols(self.filled_attributes)
        for name in free:
            size = self.sizes.get(name, self.spec.default_sizes[name])
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise CaseError(f"{self.spec.key}: {name} is {size!r}; expected a positive integer")
            values[name] = size
        for name, bound in self.bounds.items():
            low, high = bound if isinstance(bound, (list, tuple)) and len(bound) == 2 else (None, None)
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high)) or not 1 <= low <= high:
                raise CaseError(f"{self.spec.key}: bounds of {name} are {bound!r}; expected [min, max] with "
                                f"1 <= min <= max")
            if not low <= values[name] <= high:
                raise CaseError(f"{self.spec.key}: {name} is {values[name]}, outside its bounds [{low}, {high}]")
        return values

    @property
    def ports(self) -> tuple[PortSpec, ...]:
        return case_ports(self.spec)

    def shape(self, port: PortSpec) -> tuple[int, ...]:
        """The static shape of an input port for this case's sizes."""
        return tuple(self._dim(expr) for expr in port.dims or ())

    def partial_shape(self, port: PortSpec) -> list[int | tuple[int, int]]:
        """The shape of an input port as the model declares it: -1 for every dynamic symbol, and
        (min, max) for a bounded one."""
        dims: list[int | tuple[int, int]] = []
        for expr, size in zip(port.dims or (), self.shape(port)):
            name = expr.name if isinstance(expr, Sym) else None
            dims.append(tuple(self.bounds[name]) if name in self.bounds else -1 if name in self.dynamic else size)
        return dims

    def is_parameter(self, port: PortSpec) -> bool:
        """Whether the port is fed by a model input: as ``sources`` says, else data, states and
        lengths are inputs and weights are Consts (unless ``weights_as_parameters``)."""
        source = self.sources.get(port.name)
        if source is not None:
            return source == "parameter"
        return not port.is_weight or self.weights_as_parameters

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(ELEMENT_TYPES[self.element_type])

    def port_dtype(self, port: PortSpec) -> np.dtype:
        return np.dtype(LENGTHS_TYPES[self.lengths_type]) if port.role == "lengths" else self.dtype

    @property
    def data(self) -> "DataKind":
        return DataKind(self.lengths, self.values)

    def tensor(self, port: PortSpec, rng: np.random.Generator) -> np.ndarray:
        """Seeded data for one input port of this case."""
        return port_tensor(port.role, self.shape(port), self.port_dtype(port), rng, self.symbols,
                           self.spec.time_symbol, self.data)

    def memory_needed(self) -> int:
        """About the most bytes building and running this case takes at once (an over-estimate):
        each input drawn in float64, kept in its own type, and copied by OpenVINO's Const, the
        compiled model and the reference; each output held by the device, the reference and
        the comparison; and the reference's scratch, a few gates' worth of every output.
        Measured with openvino 2026.4.1 on GRUSequence hidden_size 3000 (weights 108 MB at
        f32): a whole harness job peaks at 0.54 GB, this says 0.65 GB."""
        inputs = sum(math.prod(self.shape(port)) for port in self.ports)
        outputs = sum(math.prod(self._dim(expr) for expr in port.dims or ()) for port in self.spec.outputs)
        itemsize = self.dtype.itemsize
        return inputs * (8 + 4 * itemsize) + outputs * (3 * itemsize + 4 * 8)

    def check_memory(self) -> None:
        """MemoryLimitError (with the figures and how to override) if this case cannot fit here."""
        sizes = ", ".join(f"{name} {value}" for name, value in self.symbols.items())
        check_memory(self.memory_needed(), f"{self.spec.key} with {sizes}")

    def _dim(self, expr: Expr) -> int:
        flags = self.filled_attributes
        value = expr.evaluate(self.symbols, flags)
        if value is None:  # every symbol is bound by construction
            raise AssertionError(f"irtool bug: dim {expr.text(flags)} of {self.spec.key} has no value")
        return value


@dataclass(frozen=True)
class DataKind:
    """What seeded data looks like: sequence lengths ``ragged`` (valid, the first element full,
    the batch ragged), ``full`` (every element the whole sequence), ``zero`` (every element 0)
    or ``random`` (each in [0, seq_length], zeros allowed); values ``unsaturated`` (weights and
    biases in +-1/sqrt(hidden_size), the usual initialisation, which keeps the gates out of
    saturation so that errors show; data and states in [-1, 1)) or ``saturating`` (every float
    input in [0, 10), non-negative as OpenVINO's own single-op tests draw them, which drives
    every gate into saturation)."""

    lengths: str = "ragged"
    values: str = "unsaturated"


def port_tensor(role: str | None, shape: Iterable[int], dtype: np.dtype, rng: np.random.Generator,
                symbols: Mapping[str, int], time_symbol: str | None = None,
                data: DataKind = DataKind()) -> np.ndarray:
    """Seeded data for an RNN-family input, by its role (the spec's port role) and ``data``'s kind."""
    shape = tuple(shape)
    if role == "lengths":
        return sequence_lengths(shape, symbols.get(time_symbol, 1) if time_symbol else 1, rng,
                                data.lengths).astype(dtype)
    if data.values == "saturating":
        return rng.uniform(0.0, 10.0, size=shape).astype(dtype)
    scale = 1.0 / math.sqrt(symbols.get("hidden_size", 1)) if role in WEIGHT_ROLES else 1.0
    return rng.uniform(-scale, scale, size=shape).astype(dtype)


def sequence_lengths(shape: tuple[int, ...], seq_length: int, rng: np.random.Generator,
                     kind: str = "ragged") -> np.ndarray:
    """Sequence lengths of one :class:`DataKind` ``lengths`` kind."""
    if kind == "full":
        return np.full(shape, seq_length, LENGTHS_DTYPE)
    if kind == "zero":
        return np.zeros(shape, LENGTHS_DTYPE)
    if kind == "random":
        return rng.integers(0, seq_length + 1, size=shape).astype(LENGTHS_DTYPE)
    return ragged_lengths(shape, seq_length, rng)


def ragged_lengths(shape: tuple[int, ...], seq_length: int, rng: np.random.Generator) -> np.ndarray:
    """Valid sequence lengths in [1, seq_length]: the first element runs the whole sequence,
    the others are drawn, so a batch of two or more is ragged when seq_length > 1.  A sequence
    of no step (seq_length 0: a model may say so, and OpenVINO reads a negative dim as 0) has
    lengths of 0."""
    if seq_length < 1:
        return np.zeros(shape, LENGTHS_DTYPE)
    lengths = rng.integers(1, seq_length + 1, size=shape).astype(LENGTHS_DTYPE)
    if lengths.size:
        lengths.flat[0] = seq_length
    if lengths.size > 1 and seq_length > 1 and np.all(lengths == seq_length):
        lengths.flat[-1] = rng.integers(1, seq_length)
    return lengths


def generic_tensor(shape: Iterable[int], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Seeded data for an input of a model irtool cannot judge: floats in [-1, 1), small ints."""
    shape = tuple(shape)
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(dtype)
    return rng.integers(0, 4, size=shape).astype(dtype)
