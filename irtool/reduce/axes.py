"""The axes along which reduce shrinks a case, each read from the op's spec.

Every port dim is an expression of symbols (``batch_size``, ``3*hidden_size``,
``linear_before_reset ? 4*hidden_size : 3*hidden_size``).  Cutting a symbol ``s`` down to
the indices ``start:stop`` cuts every dim whose expression names ``s``: a dim ``k*s`` holds
``k`` stacked blocks of ``s`` (the gates of W, R and B), and the same indices are kept in
each block, so the gates stay consistent.  A symbol bound by an attribute (hidden_size)
sets that attribute to the new size; one bound through a map (num_directions, from
direction) is cut to one index, and the attribute takes the value that maps to 1 in the
spec's order at that index (forward is direction 0 of a bidirectional op, reverse 1).

The spec also says which size is the time axis (``"time": true``), which input holds
sequence lengths on it (role ``lengths``: a cut in time clamps them), and which direction
walks time backwards (the symbol's ``backward`` values: cuts in time keep its first steps).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from irtool.core.errors import IrtoolBug
from irtool.pipeline.concrete import ConcreteCase
from irtool.specs.cases import free_symbols
from irtool.specs.expressions import Expr
from irtool.specs.values import format_value


@dataclass(frozen=True)
class Proposal:
    """A smaller candidate: which axis it cuts, how (``8->4``), and the case itself."""

    axis: str
    change: str
    case: ConcreteCase


Axis = Callable[[ConcreteCase], Iterator[Proposal]]


def axes_of(case: ConcreteCase) -> list[Axis]:
    """The axes in the order reduce tries them: the biggest cuts first."""
    spec = case.spec
    mapped = [name for name, symbol in spec.symbols.items() if symbol.map]
    sizes = free_symbols(spec) + [name for name, symbol in spec.symbols.items() if not symbol.map]
    return ([_mapped_axis(name) for name in mapped] + [_size_axis(name) for name in sizes]
            + [attributes_to_defaults, uniform_lengths, simpler_values])


# ----------------------------------------------------------------------------- cutting a symbol

def cut_symbol(case: ConcreteCase, symbol: str, start: int, stop: int) -> ConcreteCase:
    """The case with symbol ``symbol`` cut to the indices ``start:stop`` on every port dim that names it."""
    size = case.symbols[symbol]
    if not 0 <= start < stop <= size:
        raise IrtoolBug(f"reduce: cannot cut {symbol} {size} to {start}:{stop}")
    others = {name: value for name, value in case.symbols.items() if name != symbol}
    arrays = {}
    for port in case.ports:
        array = case.arrays[port.name]
        for axis, expr in enumerate(port.dims or ()):
            if symbol in expr.free_symbols(others, case.attributes):
                array = np.take(array, _block_indices(expr, symbol, others, case, start, stop), axis=axis)
        arrays[port.name] = array
    attributes = dict(case.attributes)
    bound = case.spec.symbols.get(symbol)
    if bound is not None and not bound.map:
        attributes[bound.attribute] = stop - start
    lengths = _lengths_port(case)
    if symbol == case.spec.time_symbol and lengths in arrays:
        arrays[lengths] = np.clip(arrays[lengths] - start, 0, stop - start).astype(arrays[lengths].dtype)
    return case.replace(arrays=arrays, attributes=attributes)


def _lengths_port(case: ConcreteCase) -> str | None:
    """The name of the case's input that holds sequence lengths (role ``lengths``), if it has one."""
    port = case.spec.port_with_role("lengths")
    return None if port is None else port.name


def _block_indices(expr: Expr, symbol: str, others: dict[str, int], case: ConcreteCase, start: int,
                   stop: int) -> list[int]:
    """The indices to keep on a dim ``k*symbol``: ``start:stop`` within each of its k blocks."""
    flags = case.attributes
    base = expr.evaluate({**others, symbol: 0}, flags)
    blocks = (expr.evaluate({**others, symbol: 1}, flags) or 0) - (base or 0)
    if base != 0 or blocks < 1:
        raise IrtoolBug(f"reduce: dim {expr.text(flags)} of {case.spec.key} is not a multiple of {symbol}")
    size = case.symbols[symbol]
    return [block * size + index for block in range(blocks) for index in range(start, stop)]


def _ranges(size: int, backward: bool) -> list[tuple[int, int]]:
    """Index ranges to keep, biggest cut first: one index, a half, all but one; duplicates dropped.
    ``backward`` puts the ranges at the end first (the steps a reverse op walks first)."""
    half = size // 2
    pairs = [((0, 1), (size - 1, size)), ((0, half), (half, size)), ((0, size - 1), (1, size))]
    ranges: list[tuple[int, int]] = []
    for head, tail in pairs:
        for start, stop in ((tail, head) if backward else (head, tail)):
            if 0 < stop - start < size and (start, stop) not in ranges:
                ranges.append((start, stop))
    return ranges


def _size_axis(symbol: str) -> Axis:
    def axis(case: ConcreteCase) -> Iterator[Proposal]:
        size = case.symbols.get(symbol)
        if size is None:
            return
        backward = symbol == case.spec.time_symbol and case.spec.directions(case.attributes) == (True,)
        for start, stop in _ranges(size, backward):
            where = "" if start == 0 else f" (from {start})"
            yield Proposal(symbol, f"{size}->{stop - start}{where}", cut_symbol(case, symbol, start, stop))

    return axis


def _mapped_axis(symbol: str) -> Axis:
    """num_directions 2 -> 1: each single direction, with the attribute value that names it."""
    def axis(case: ConcreteCase) -> Iterator[Proposal]:
        bound = case.spec.symbols[symbol]
        size = case.symbols.get(symbol, 1)
        singles = [value for value, count in (bound.map or {}).items() if count == 1]
        if size < 2 or len(singles) != size:
            return
        old = case.attributes[bound.attribute]
        for index, value in enumerate(singles):
            cut = cut_symbol(case, symbol, index, index + 1)
            yield Proposal(bound.attribute, f"{old}->{value}",
                           cut.replace(attributes={**cut.attributes, bound.attribute: value}))

    return axis


# ----------------------------------------------------------------------------- attributes and values

def attributes_to_defaults(case: ConcreteCase) -> Iterator[Proposal]:
    """Each attribute with a spec default, set back to it.  A dim that the attribute changes
    (B of GRU with linear_before_reset: 4 blocks -> 3) keeps its leading blocks; an attribute
    whose default would need a bigger dim is left alone."""
    spec = case.spec
    for name, attribute in spec.attributes.items():
        if attribute.default is None or _same(case.attributes.get(name), attribute.default):
            continue
        attributes = {**case.attributes, name: attribute.default}
        try:
            spec.check_attributes(attributes)
        except ValueError:
            continue
        arrays = _relayout(case, attributes)
        if arrays is not None:
            change = f"{format_value(case.attributes.get(name))}->{format_value(attribute.default)} (default)"
            yield Proposal(name, change, case.replace(attributes=attributes, arrays=arrays))


def _same(value: Any, default: Any) -> bool:
    def plain(v: Any) -> Any:
        return list(v) if isinstance(v, (list, tuple)) else v
    return plain(value) == plain(default)


def _relayout(case: ConcreteCase, attributes: dict[str, Any]) -> dict[str, np.ndarray] | None:
    arrays = {}
    for port in case.ports:
        array = case.arrays[port.name]
        for axis, expr in enumerate(port.dims or ()):
            old, new = expr.evaluate(case.symbols, case.attributes), expr.evaluate(case.symbols, attributes)
            if new is None or old is None or new > old:
                return None
            if new < old:
                array = np.take(array, range(new), axis=axis)
        arrays[port.name] = array
    return arrays


def uniform_lengths(case: ConcreteCase) -> Iterator[Proposal]:
    """Ragged sequence_lengths to every element running the whole sequence."""
    name = _lengths_port(case)
    lengths = case.arrays.get(name) if name else None
    steps = case.symbols.get(case.spec.time_symbol or "")
    if name is None or lengths is None or steps is None or np.all(lengths == steps):
        return
    uniform = np.full_like(lengths, steps)
    yield Proposal(name, f"{_values_text(lengths)}->all {steps}",
                   case.replace(arrays={**case.arrays, name: uniform}))


SIMPLER: tuple[tuple[str, Callable[[np.ndarray], np.ndarray]], ...] = (
    ("zeros", np.zeros_like), ("ones", np.ones_like), ("integers", np.round))


def simpler_values(case: ConcreteCase) -> Iterator[Proposal]:
    """Each floating input (data, states, weights) as zeros, ones, or rounded to integers: only
    forms simpler than what it holds (in that order), so that no two proposals undo each other."""
    for port in case.ports:
        array = case.arrays[port.name]
        if port.role == "lengths" or array.dtype.kind != "f":
            continue
        for label, make in SIMPLER[:_simplicity(array)]:
            yield Proposal(port.name, f"to {label}", case.replace(arrays={**case.arrays, port.name: make(array)}))


def _simplicity(array: np.ndarray) -> int:
    """The index in SIMPLER of the first form the array has (len(SIMPLER) for none)."""
    return next((rank for rank, (_, make) in enumerate(SIMPLER) if np.array_equal(make(array), array)),
                len(SIMPLER))


def _values_text(array: np.ndarray) -> str:
    values = [int(v) for v in array.flat[:6]]
    return "[" + ",".join(map(str, values)) + (",...]" if array.size > 6 else "]")
