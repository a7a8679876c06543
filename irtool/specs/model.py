"""Frozen records for op specs, as loaded from schemas/ops."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, Mapping

from irtool.core.errors import IrtoolBug, IrtoolError, did_you_mean
from irtool.core.jsonable import quoted
from irtool.specs.expressions import BinOp, Cond, Expr, Sym
from irtool.specs.values import TYPE_NAMES, ValueSyntaxError, format_value, is_typed, parse_value


class SpecError(IrtoolBug):
    """A spec file that is not valid: an irtool bug, not a user error."""


class SpecMismatch(IrtoolError, ValueError):
    """Attributes or inputs that do not fit an op's spec (an unknown or missing attribute, a bad value, a shape)."""


SCALAR_TYPES = frozenset({"int", "float", "bool"})
PORT_ROLES = ("data", "state", "lengths", "weights", "bias")
WEIGHT_ROLES = frozenset({"weights", "bias"})


def expression_symbols(expr: Expr) -> list[str]:
    """Every symbol an expression names, on all branches, in order of appearance."""
    if isinstance(expr, Sym):
        return [expr.name]
    if isinstance(expr, BinOp):
        return expression_symbols(expr.left) + expression_symbols(expr.right)
    if isinstance(expr, Cond):
        return expression_symbols(expr.then) + expression_symbols(expr.otherwise)
    return []


@dataclass(frozen=True)
class AttributeProblem:
    """One thing wrong with an attribute value. ``kind`` is type, allowed, range, length or static."""

    kind: str
    message: str
    expected: str
    found: str


# What OpenVINO's reader does with a dynamic dim in a Const's shape (measured with openvino 2026.4.1).
_DYNAMIC_READ = {"?": "OpenVINO cannot parse '?' there and refuses the file",
                 "-1": "OpenVINO reads -1 as 2^64-1 there and refuses the Const (no byte size matches it)"}


def _dynamic_dim(text: str, shape: tuple) -> AttributeProblem | None:
    """The first dim of a shape that must be static and is not: -1, ? or an interval."""
    tokens = text.strip().strip("[]").split(",")
    for index, (token, dim) in enumerate(zip(tokens, shape)):
        if not isinstance(dim, int):
            token = token.strip()
            said = _DYNAMIC_READ.get(token, f"OpenVINO reads {token} as the digits before its dots, without a word, "
                                            f"so the Const is not the shape its ports declare")
            return AttributeProblem("static", f"dim {index} is {token}, a dynamic dim, where the data has one static "
                                              f"shape: {said}", "a static shape (sizes only)", text)
    return None


@dataclass(frozen=True)
class AttributeSpec:
    name: str
    type: str
    required: bool = False
    default: Any = None
    allowed: tuple[str, ...] | None = None
    case_insensitive: bool = False
    minimum: float | None = None
    maximum: float | None = None
    length: int | None = None
    openvino_applies_default: bool = True
    static: bool = False  # a shape whose every dim must be a size (a Const's)
    open_reads_as: Any = None  # a value the spec leaves undefined, read by the reference as this (None: refused)
    open_why: str = ""
    description: str = ""

    def __post_init__(self) -> None:
        if self.type not in TYPE_NAMES:
            raise SpecError(f"attribute {self.name}: unknown type {self.type!r}")
        if self.required and self.default is not None:
            raise SpecError(f"attribute {self.name}: required and with a default")

    def is_open(self, value: Any) -> bool:
        """Whether ``value`` is one the spec leaves undefined but a suite may ask for (``open``):
        a number out of range, or NaN."""
        if self.open_reads_as is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return math.isnan(value) or self._range_problem(value) is not None

    def parse(self, text: str) -> tuple[Any, list[AttributeProblem]]:
        """Read IR text; returns the value (None if unreadable) and what is wrong with it."""
        value, problems = self.read(text)
        return (list(value) if isinstance(value, list) else value), list(problems)

    def read(self, text: str) -> tuple[Any, tuple[AttributeProblem, ...]]:
        """:meth:`parse` without the copies, memoized: a net repeats the same attribute texts on
        thousands of layers.  The value is shared by every reader of this text, so a list
        value must not be changed."""
        memo = self._read
        found = memo.get(text)
        if found is None:
            value, problems = self._parse(text)
            found = (value, tuple(problems))
            if len(memo) < 4096:  # values unique to a layer (a Const's offset) would only fill it
                memo[text] = found
        return found

    @cached_property
    def _read(self) -> dict[str, tuple[Any, tuple[AttributeProblem, ...]]]:
        return {}

    def _parse(self, text: str) -> tuple[Any, list[AttributeProblem]]:
        try:
            value = parse_value(self.type, text)
        except ValueSyntaxError as error:
            return None, [AttributeProblem("type", f"{error}; expected {TYPE_NAMES[self.type]}",
                                           TYPE_NAMES[self.type], text)]
        if self.case_insensitive:
            value = [v.lower() for v in value] if isinstance(value, list) else value.lower()
        if self.static and (problem := _dynamic_dim(text, value)) is not None:
            return None, [problem]
        return value, self.check(value)

    def check(self, value: Any) -> list[AttributeProblem]:
        """Type, allowed values, range and list length of an already typed value."""
        if not is_typed(self.type, value):
            found = quoted(value, 60)
            return [AttributeProblem("type", f"{found} is not {TYPE_NAMES[self.type]}", TYPE_NAMES[self.type], found)]
        problems = []
        items = value if isinstance(value, list) else [value]
        if self.allowed is not None:
            for item in items:
                if item not in self.allowed:
                    expected = "one of " + ", ".join(self.allowed)
                    problems.append(AttributeProblem("allowed", f"{item!r} is not {expected}"
                                                     f"{did_you_mean(item, self.allowed)}", expected, str(item)))
        if self.length is not None and isinstance(value, list) and len(value) != self.length:
            problems.append(AttributeProblem(
                "length", f"has {len(value)} items, expected {self.length}", f"{self.length} items", str(len(value))))
        for item in items:
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                problem = self._range_problem(item)
                if problem:
                    problems.append(problem)
        return problems

    def _range_problem(self, value: float) -> AttributeProblem | None:
        low = self.minimum if self.minimum is not None else -math.inf
        high = self.maximum if self.maximum is not None else math.inf
        if low <= value <= high:
            return None
        bounds = (f">= {format_value(low)}" if high == math.inf else
                  f"<= {format_value(high)}" if low == -math.inf else
                  f"in [{format_value(low)}, {format_value(high)}]")
        return AttributeProblem("range", f"{format_value(value)} is out of range, expected {bounds}",
                                bounds, format_value(value))


@dataclass(frozen=True)
class SymbolSpec:
    """A dim symbol whose value comes from an attribute (through ``map`` if given)."""

    name: str
    attribute: str
    map: Mapping[str, int] | None = None
    backward: tuple[str, ...] = ()  # the attribute values whose direction walks time backwards

    def value(self, attributes: Mapping[str, Any]) -> int | None:
        raw = attributes.get(self.attribute)
        if self.map is not None:
            return self.map.get(raw) if isinstance(raw, str) else None
        return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0 else None

    def directions(self, value: Any) -> tuple[bool, ...] | None:
        """Per direction that the attribute value ``value`` gives, whether it walks time backwards:
        a value that maps to 1 is one direction; one that maps to more runs the map's single
        directions in the map's order (bidirectional: forward, then reverse).  None if this symbol
        says nothing about time or the value is not in its map."""
        if not self.backward or self.map is None or not isinstance(value, str) or value not in self.map:
            return None
        if self.map[value] == 1:
            return (value in self.backward,)
        singles = [name for name, count in self.map.items() if count == 1]
        return tuple(name in self.backward for name in singles) if len(singles) == self.map[value] else None


@dataclass(frozen=True)
class SizeSpec:
    """A dim symbol that no attribute fixes (batch_size, seq_length, input_size): a case's size."""

    name: str
    default: int
    time: bool = False  # the time axis: the steps a sequence op walks, what sequence lengths count

    def __post_init__(self) -> None:
        if not isinstance(self.default, int) or isinstance(self.default, bool) or self.default < 1:
            raise SpecError(f"size {self.name}: default {self.default!r} is not a positive integer")


@dataclass(frozen=True)
class PortSpec:
    """One input or output of an op.

    The expected dims are given by exactly one of ``dims`` (expressions),
    ``shape_attribute`` (a shape-typed attribute, for Parameter and Const) or
    ``same_as`` (the dims of the named input); none of them means any shape.
    """

    name: str
    index: int
    type: str
    dims: tuple[Expr, ...] | None = None
    dim_texts: tuple[str, ...] | None = None
    shape_attribute: str | None = None
    same_as: str | None = None
    optional: bool = False
    openvino_requires: bool = False
    role: str | None = None  # data, state, lengths, weights or bias (PORT_ROLES); None for ports that have none
    description: str = ""

    def __post_init__(self) -> None:
        if self.role is not None and self.role not in PORT_ROLES:
            raise SpecError(f"port {self.name}: unknown role {self.role!r}; roles are {', '.join(PORT_ROLES)}")

    @property
    def is_weight(self) -> bool:
        """Weights or biases: what a built model holds as Consts, seeded in +-1/sqrt(hidden_size)."""
        return self.role in WEIGHT_ROLES

    @cached_property
    def type_attribute(self) -> str | None:
        """The attribute that gives this port's element type, if any (``attribute:NAME``)."""
        return self.type.split(":", 1)[1] if self.type.startswith("attribute:") else None

    def shape_text(self) -> str:
        if self.dim_texts is not None:
            return "[" + ", ".join(self.dim_texts) + "]"
        if self.shape_attribute:
            return f"the '{self.shape_attribute}' attribute"
        if self.same_as:
            return f"the shape of input {self.same_as}"
        return "any shape"


@dataclass(frozen=True)
class OpSpec:
    type: str
    version: int
    opset: str
    attributes: Mapping[str, AttributeSpec]
    inputs: tuple[PortSpec, ...]
    outputs: tuple[PortSpec, ...]
    symbols: Mapping[str, SymbolSpec] = field(default_factory=lambda: MappingProxyType({}))
    types: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    sizes: Mapping[str, SizeSpec] = field(default_factory=lambda: MappingProxyType({}))
    family: str | None = None
    form: str | None = None
    description: str = ""
    source: str = ""
    openvino_loads: bool = True
    openvino_note: str = ""
    factory: str | None = None  # the openvino Python factory that builds it ("openvino.opset5.gru_sequence")
    path: str = ""

    def __post_init__(self) -> None:
        for port in self.inputs + self.outputs:
            var = port.type
            if port.type_attribute is None and var not in self.types:
                raise SpecError(f"{self.key}: port {port.name} has type {var!r}, not in types")
            if port.type_attribute is not None and port.type_attribute not in self.attributes:
                raise SpecError(f"{self.key}: port {port.name} takes its type from unknown attribute")
            if port.same_as is not None and port.same_as not in {p.name for p in self.inputs}:
                raise SpecError(f"{self.key}: port {port.name} is the same as unknown input {port.same_as}")
        for symbol in self.symbols.values():
            if symbol.attribute not in self.attributes:
                raise SpecError(f"{self.key}: symbol {symbol.name} reads unknown attribute {symbol.attribute}")
        if self.sizes:
            free = self.free_symbols
            if set(free) != set(self.sizes):
                raise SpecError(f"{self.key}: sizes {', '.join(self.sizes)} do not match the dim symbols no "
                                f"attribute fixes ({', '.join(free)})")
            if sum(size.time for size in self.sizes.values()) > 1:
                raise SpecError(f"{self.key}: more than one size is the time axis")
        if sum(port.role == "lengths" for port in self.inputs) > 1:
            raise SpecError(f"{self.key}: more than one input has the role lengths")

    @cached_property
    def free_symbols(self) -> tuple[str, ...]:
        """The dim symbols of the inputs that no attribute fixes (batch_size, seq_length, input_size),
        in order of appearance."""
        names: list[str] = []
        for port in self.inputs:
            for expr in port.dims or ():
                for name in expression_symbols(expr):
                    if name not in self.symbols and name not in names:
                        names.append(name)
        return tuple(names)

    @cached_property
    def default_sizes(self) -> dict[str, int]:
        """The size of each free dim symbol that a case does not give."""
        return {name: size.default for name, size in self.sizes.items()}

    @cached_property
    def time_symbol(self) -> str | None:
        """The dim symbol of the time axis (seq_length of a sequence op), if the op has one."""
        return next((name for name, size in self.sizes.items() if size.time), None)

    def time_axis(self, port: PortSpec) -> int | None:
        """The index of the time dim of a port (X and Y of a sequence op), if it has one."""
        if self.time_symbol is None:
            return None
        return next((index for index, text in enumerate(port.dim_texts or ()) if text == self.time_symbol), None)

    def port_with_role(self, role: str) -> PortSpec | None:
        """The input that holds ``role`` (the one lengths input; the first of others), if any."""
        return next((port for port in self.inputs if port.role == role), None)

    def directions(self, attributes: Mapping[str, Any]) -> tuple[bool, ...] | None:
        """Per direction the (typed, filled) attributes give, whether it walks time backwards;
        None for an op without directions (a cell)."""
        for symbol in self.symbols.values():
            found = symbol.directions(attributes.get(symbol.attribute))
            if found is not None:
                return found
        return None

    @cached_property
    def key(self) -> str:
        return f"{self.type}-{self.version}"

    @property
    def opset_number(self) -> int:
        return int(self.opset[len("opset"):])

    @property
    def required_inputs(self) -> int:
        return sum(1 for port in self.inputs if not port.optional)

    @cached_property
    def attribute_names(self) -> str:
        """The attributes' names, comma-separated (as messages list them)."""
        return ", ".join(self.attributes)

    def fill_defaults(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """The attributes with every omitted optional one set to the spec's default."""
        filled = dict(self._defaults)
        filled.update(attributes)
        return filled

    @cached_property
    def _defaults(self) -> dict[str, Any]:
        return {name: spec.default for name, spec in self.attributes.items()
                if not spec.required and spec.default is not None}

    @cached_property
    def must_write(self) -> tuple[tuple[str, AttributeSpec], ...]:
        """The attributes a file must write: the required ones, and those whose default OpenVINO
        does not apply."""
        return tuple((name, attribute) for name, attribute in self.attributes.items()
                     if attribute.required or not attribute.openvino_applies_default)

    @cached_property
    def type_attributes(self) -> tuple[str, ...]:
        """The attributes that give ports their element type (Parameter's and Const's element_type)."""
        return tuple(p.type_attribute for p in self.inputs + self.outputs if p.type_attribute is not None)

    @cached_property
    def shape_attributes(self) -> tuple[str, ...]:
        """The attributes that the dims of the ports depend on (what :func:`unify` reads of them):
        those that define symbols, the flags of conditional dims, and shape-typed ones."""
        def flags(expr: Expr) -> set[str]:
            if isinstance(expr, Cond):
                return {expr.flag} | flags(expr.then) | flags(expr.otherwise)
            if isinstance(expr, BinOp):
                return flags(expr.left) | flags(expr.right)
            return set()

        names = {symbol.attribute for symbol in self.symbols.values()}
        for port in self.inputs + self.outputs:
            if port.shape_attribute is not None:
                names.add(port.shape_attribute)
            for expr in port.dims or ():
                names |= flags(expr)
        return tuple(sorted(names))

    def attribute_symbols(self, attributes: Mapping[str, Any]) -> dict[str, int]:
        """Values of the symbols that attributes define (hidden_size, num_directions)."""
        values = {name: symbol.value(attributes) for name, symbol in self.symbols.items()}
        return {name: value for name, value in values.items() if value is not None}

    def check_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Check typed attribute values (as a library caller passes them); fill defaults.

        Raises ValueError naming the first attribute that is missing, unknown or wrong.
        """
        for name in attributes:
            if name not in self.attributes:
                raise SpecMismatch(f"{self.key}: unknown attribute {name!r}{did_you_mean(name, self.attributes)}; "
                                   f"known: {', '.join(self.attributes)}")
        for name, spec in self.attributes.items():
            if spec.required and attributes.get(name) is None:
                raise SpecMismatch(f"{self.key}: attribute {name!r} is required")
        filled = self.fill_defaults(attributes)
        for name, value in filled.items():
            spec = self.attributes[name]
            if spec.case_insensitive and isinstance(value, str):
                value = filled[name] = value.lower()
            elif spec.case_insensitive and isinstance(value, (list, tuple)):
                value = filled[name] = [v.lower() if isinstance(v, str) else v for v in value]
            problems = spec.check(list(value) if isinstance(value, tuple) else value)
            if problems:
                raise SpecMismatch(f"{self.key}: attribute {name!r}: {problems[0].message}")
        return filled

    def read_open(self, attributes: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """``attributes`` with each value the spec leaves undefined (:meth:`AttributeSpec.is_open`)
        read as the spec file says the reference reads it, and a note per such value."""
        read, notes = dict(attributes), []
        for name, value in attributes.items():
            spec = self.attributes.get(name)
            if spec is not None and spec.is_open(value):
                read[name] = spec.open_reads_as
                notes.append(f"{name} {format_value(value)} is left open by the spec ({spec.open_why}); judged as "
                             f"{name} {format_value(spec.open_reads_as)}")
        return read, notes

    def typed_attributes(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """Attributes with IR text (``"false"``, ``"128"``) for a bool or number read by the spec's
        parser, as the validator reads it, rather than by Python truthiness; ValueError if unreadable."""
        typed = dict(attributes)
        for name, value in attributes.items():
            spec = self.attributes.get(name)
            if spec is None or not isinstance(value, str) or spec.type not in SCALAR_TYPES:
                continue
            parsed, problems = spec.parse(value)
            if parsed is None:
                raise SpecMismatch(f"{self.key}: attribute {name!r}: {problems[0].message}")
            typed[name] = parsed
        return typed
