"""Unify the declared dims of an op's ports with the dim expressions of its spec.

Symbols are bound from attributes first (hidden_size, num_directions), then from port
dims in port order (inputs, then outputs); every later dim that names a bound symbol
is checked against it, so a conflict is reported at the port that disagrees, naming
where the symbol was bound.  Dynamic dims bind nothing and agree with anything their
interval admits.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from irtool.core.shapes import Dim, Interval, dims_compatible, format_shape
from irtool.specs.expressions import Expr
from irtool.specs.model import OpSpec, PortSpec, SpecMismatch
from irtool.specs.values import format_value

Shape = Sequence[Dim]


@dataclass(frozen=True)
class Origin:
    """Where a symbol got its value."""

    side: str  # "attribute", "input" or "output"
    name: str  # attribute or port name
    index: int | None = None
    dim: int | None = None

    def describe(self) -> str:
        if self.side == "attribute":
            return f"attribute {self.name}"
        return f"{self.side} {self.index} ({self.name}) dim {self.dim}"


@dataclass(frozen=True)
class RankProblem:
    side: str
    index: int
    port_name: str
    found: int
    expected: int
    expected_text: str

    @property
    def message(self) -> str:
        return f"rank is {self.found}, expected {self.expected} {self.expected_text}"


@dataclass(frozen=True)
class DimProblem:
    side: str
    index: int
    port_name: str
    dim: int
    found: Dim
    expected_text: str
    expected_value: int | None
    origins: tuple[Origin, ...] = ()
    flags: tuple[tuple[str, Any], ...] = ()
    note: str = ""
    unsolvable: bool = False

    @property
    def expected(self) -> str:
        if self.expected_value is None:
            return self.expected_text
        if self.expected_text == str(self.expected_value):
            return self.expected_text
        return f"{self.expected_text} = {self.expected_value}"

    @property
    def message(self) -> str:
        if self.unsolvable:
            text = f"dim {self.dim} is {self.found}, which no value of {self.expected_text} gives"
        else:
            text = f"dim {self.dim} is {self.found}, expected {self.expected}"
        notes = [self.note] if self.note else []
        notes += [f"{name}={format_value(value)}" for name, value in self.flags]
        notes += [f"bound by {origin.describe()}" for origin in self.origins if origin.side != "attribute"]
        return text + (f" ({'; '.join(notes)})" if notes else "")


Problem = RankProblem | DimProblem


@dataclass
class ShapeReport:
    symbols: dict[str, int] = field(default_factory=dict)
    origins: dict[str, Origin] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def expected_dims(self, port: PortSpec, attributes: Mapping[str, Any]) -> list[int | None] | None:
        """A port's dims as the spec infers them from the bound symbols (None where unknown)."""
        if port.dims is None:
            return None
        return [expr.evaluate(self.symbols, attributes) for expr in port.dims]


@dataclass
class _Pending:
    side: str
    port: PortSpec
    dim: int
    expr: Expr
    found: Dim


def unify(spec: OpSpec, attributes: Mapping[str, Any], inputs: Sequence[Shape | None],
          outputs: Sequence[Shape | None] | None = None) -> ShapeReport:
    """Check the declared dims of each port (None where a port is absent or unknown).

    ``attributes`` are typed values with defaults filled; they give the symbols that
    attributes define and the flags of conditional dims.
    """
    report = ShapeReport()
    for name, value in spec.attribute_symbols(attributes).items():
        report.symbols[name] = value
        report.origins[name] = Origin("attribute", spec.symbols[name].attribute)
    pending: list[_Pending] = []
    sides = [("input", spec.inputs, inputs), ("output", spec.outputs, outputs or [])]
    for side, ports, shapes in sides:
        for port, shape in zip(ports, shapes):
            if shape is None:
                continue
            if port.dims is not None:
                if len(shape) != len(port.dims):
                    report.problems.append(RankProblem(side, port.index, port.name, len(shape),
                                                       len(port.dims), port.shape_text()))
                    continue
                pending += [_Pending(side, port, i, e, d) for i, (e, d) in enumerate(zip(port.dims, shape))]
            else:
                _check_given(report, side, port, shape, _given_shape(spec, port, attributes, inputs))
    while pending:
        progress = [item for item in pending if _settle(report, item, attributes)]
        if not progress:
            break
        pending = [item for item in pending if item not in progress]
    return report


def _given_shape(spec: OpSpec, port: PortSpec, attributes: Mapping[str, Any],
                 inputs: Sequence[Shape | None]) -> tuple[tuple[Dim, ...] | None, str]:
    if port.shape_attribute is not None:
        value = attributes.get(port.shape_attribute)
        return (tuple(value) if value is not None else None), f"{port.shape_attribute} attribute"
    if port.same_as is not None:
        index = next(p.index for p in spec.inputs if p.name == port.same_as)
        shape = inputs[index] if index < len(inputs) else None
        return (tuple(shape) if shape is not None else None), f"input {index} ({port.same_as})"
    return None, ""


def _check_given(report: ShapeReport, side: str, port: PortSpec, shape: Shape,
                 given: tuple[tuple[Dim, ...] | None, str]) -> None:
    expected, where = given
    if expected is None:
        return
    if len(shape) != len(expected):
        report.problems.append(RankProblem(side, port.index, port.name, len(shape), len(expected),
                                           f"{format_shape(expected)} (the {where})"))
        return
    for i, (found, want) in enumerate(zip(shape, expected)):
        if not dims_compatible(found, want):
            report.problems.append(DimProblem(side, port.index, port.name, i, found, str(want),
                                              want if isinstance(want, int) else None, note=f"the {where}"))


def _settle(report: ShapeReport, item: _Pending, flags: Mapping[str, Any]) -> bool:
    """Check or bind one dim; False while it must wait for a symbol."""
    value = item.expr.evaluate(report.symbols, flags)
    if value is not None:
        if not dims_compatible(item.found, value):
            report.problems.append(_dim_problem(report, item, flags, value))
        return True
    if isinstance(item.found, Interval):
        return False
    solved = item.expr.solve(item.found, report.symbols, flags)
    if solved is None:
        return False
    name, bound = solved
    if bound is None:
        report.problems.append(_dim_problem(report, item, flags, None))
    else:
        report.symbols[name] = bound
        report.origins[name] = Origin(item.side, item.port.name, item.port.index, item.dim)
    return True


def _dim_problem(report: ShapeReport, item: _Pending, flags: Mapping[str, Any], value: int | None) -> DimProblem:
    used = item.expr.free_symbols({}, flags)
    origins = tuple(report.origins[name] for name in sorted(used) if name in report.origins)
    flag_values = tuple((name, flags.get(name)) for name in item.expr.flags_used(flags))
    return DimProblem(item.side, item.port.index, item.port.name, item.dim, item.found,
                      item.expr.text(flags), value, origins, flag_values, unsolvable=value is None)


def check_shapes(spec: OpSpec, attributes: Mapping[str, Any], input_shapes: list) -> dict[str, int]:
    """Unify input shapes with ``spec``; returns the symbol values.

    Raises ValueError naming the first input (in port order) whose rank or dim disagrees, with
    its shape, the shape expected there (each dim's expression and value, where known) and
    why (``W has shape [1, 15, 3]; expected [num_directions=1, 3*hidden_size=15,
    input_size=4] (input 3; dim 2 is 3, expected input_size = 4 (bound by input 0 (X) dim 2))``).
    """
    if not spec.required_inputs <= len(input_shapes) <= len(spec.inputs):
        raise SpecMismatch(f"{spec.key}: takes {_input_count_text(spec)} inputs "
                           f"({', '.join(p.name for p in spec.inputs)}), got {len(input_shapes)}")
    typed = spec.fill_defaults(spec.typed_attributes(attributes))
    report = unify(spec, typed, [tuple(s) if s is not None else None for s in input_shapes])
    if report.problems:
        first = min(report.problems, key=lambda problem: (problem.side != "input", problem.index))
        port = spec.inputs[first.index]
        # a dim's value where it is known: for a wrong rank, only from the attributes (the other
        # ports' dims say nothing about which of this port's dims is missing)
        symbols = (report.symbols if isinstance(first, DimProblem) else spec.attribute_symbols(typed))
        values = [expr.evaluate(symbols, typed) for expr in port.dims or ()]
        texts = [expr.text(typed) for expr in port.dims or ()]
        dims = ", ".join(text if value is None or text == str(value) else f"{text}={value}"
                         for text, value in zip(texts, values))
        known = all(value is not None for value in values)
        expected = f"[{dims}]" if known else f"{len(texts)} dims [{dims}]"
        why = f" (input {first.index}; {first.message})" if isinstance(first, DimProblem) else ""
        found = "[" + ", ".join(map(str, input_shapes[first.index])) + "]"
        raise SpecMismatch(f"{spec.key}: {port.name} has shape {found}; expected {expected}{why}")
    return dict(report.symbols)


def _input_count_text(spec: OpSpec) -> str:
    low, high = spec.required_inputs, len(spec.inputs)
    return str(high) if low == high else f"{low} to {high}"
