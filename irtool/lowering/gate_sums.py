"""A recurrent cell's gate pre-activations, as a converter lowers them to plain ops, read as sums:
products of a tensor by constant weights (x·W, h·R), a constant bias, and whatever else is added
(opaque terms, which the cell's pattern then judges), through the ops converters write between
them: Add, Subtract, Negative, Multiply by a constant, MatMul, Split, VariadicSplit, and
StridedSlice, Slice or Gather on the last axis, Reshape, Squeeze, Unsqueeze and Convert that
keep the last axis.

Constants are read as OpenVINO would fold them: a Constant (through a Convert), a body Parameter
its container feeds the same constant data at every iteration, and any op of these evaluated in
this process (Node.evaluate: the Transpose a SavedModel puts on a kernel, a bias folded with a
zero state).  Which columns a slicing op keeps is read by evaluating it on a ramp 0, 1, 2, ...
along the last axis, so every way of writing a slice is read alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import numpy as np

from irtool.lowering.graph import (
    LAYOUT,
    Key,
    constant_data,
    evaluate,
    id_of,
    integer_storage,
    key,
    label,
    last_dim,
    narrowing,
    rounding,
)

SLICES = ("StridedSlice", "Slice", "Gather")
SPLITS = ("Split", "VariadicSplit")
NOT_FOLDED = ("Parameter", "Result", "ReadValue", "Assign", "RandomUniform", "Loop", "TensorIterator", "If")
FOLD_ELEMENTS = 1 << 24  # a constant larger than this is not computed in-process
FOLD_OPS = 64  # nor one that takes more ops than this to compute
SUM_DEPTH = 48  # ops between a gate's activation and the products it sums, at most


@dataclass(frozen=True)
class Term:
    """A tensor times constant weights: ``value`` as the MatMul reads it, ``weight`` [its width, the sum's width],
    ``stored``: the integer type the weights are stored as (irtool.lowering.graph.integer_storage), if one."""

    value: Any
    weight: np.ndarray
    stored: str | None = None
    rows: bool = False  # ``value`` is a step's rows of an input's product hoisted out of the steps (made here)


@dataclass(frozen=True)
class Sum:
    """A gate pre-activation as a sum over the last axis (``width`` columns): products by constant
    weights keyed by their tensor's identity, a constant bias, and opaque terms (a tensor and the
    columns of it that land in this sum's columns)."""

    width: int
    terms: Mapping[Key, Term] = field(default_factory=dict)
    bias: np.ndarray | None = None  # [width]; None: no constant added
    others: tuple[tuple[Any, np.ndarray], ...] = ()
    ops: tuple[str, ...] = ()  # the ops read on the way, as labels
    rounded: tuple[str, ...] = ()  # the narrowing Converts read on the way (an f16 round trip): graph.rounding
    hoisted: tuple[str, ...] = ()  # a product of every step at once and the op taking this step's rows of it

    def columns(self, cols: np.ndarray) -> "Sum":
        return Sum(len(cols), {k: replace(t, weight=t.weight[:, cols]) for k, t in self.terms.items()},
                   None if self.bias is None else self.bias[cols], tuple((v, c[cols]) for v, c in self.others), self.ops,
                   self.rounded, self.hoisted)

    def plus(self, other: "Sum") -> "Sum":
        terms = dict(self.terms)
        for k, term in other.terms.items():
            terms[k] = replace(terms[k], weight=terms[k].weight + term.weight, stored=terms[k].stored or term.stored) \
                if k in terms else term
        bias = self.bias if other.bias is None else other.bias if self.bias is None else self.bias + other.bias
        return Sum(self.width, terms, bias, self.others + other.others, merged(self.ops, other.ops),
                   merged(self.rounded, other.rounded), merged(self.hoisted, other.hoisted))

    def scaled(self, factor: np.ndarray) -> "Sum | None":
        """Each column times ``factor`` ([width] or a scalar); None where opaque terms cannot be scaled."""
        if self.others:
            return None
        return Sum(self.width, {k: replace(t, weight=t.weight * factor) for k, t in self.terms.items()},
                   None if self.bias is None else self.bias * factor, (), self.ops, self.rounded, self.hoisted)

    def bias_or_zeros(self) -> np.ndarray:
        return self.bias if self.bias is not None else np.zeros(self.width, np.float32)


def merged(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    """Both, in order, each once."""
    return tuple(dict.fromkeys(first + second))


class Reader:
    """Reads one graph's constants and sums; ``fixed``: the body Parameters its container feeds the same
    constant data at every iteration (id_of keys)."""

    def __init__(self, fixed: Mapping[Key, np.ndarray] | None = None) -> None:
        self.fixed = dict(fixed or {})
        self._constants: dict[Key, np.ndarray | None] = {}
        self._sums: dict[tuple[Key, int], Sum] = {}
        self._rows_made: dict[tuple[Key, Key], Any] = {}  # the x_t made for a step's rows of a hoisted product

    # ---------------------------------------------------------------- constants

    def constant(self, value: Any) -> np.ndarray | None:
        """The data of a tensor that is the same whatever the inputs, or None."""
        found = self._constants.get(id_of(value), False)
        if found is not False:
            return found
        budget = [FOLD_OPS]
        data = self._fold(value, budget)
        self._constants[id_of(value)] = data
        return data

    def _fold(self, value: Any, budget: list[int]) -> np.ndarray | None:
        known = self._constants.get(id_of(value), False)
        if known is not False:
            return known
        node = value.get_node()
        data = constant_data(node)
        if data is None and id_of(value) in self.fixed:
            data = self.fixed[id_of(value)]
        if data is None and node.get_type_name() not in NOT_FOLDED and node.get_input_size() and budget[0] > 0:
            budget[0] -= 1
            inputs = []
            for source in node.input_values():  # the first input not constant ends it (most lead to a Parameter)
                inputs.append(self._fold(source, budget))
                if inputs[-1] is None:
                    break
            if all(array is not None for array in inputs) and sum(a.size for a in inputs) <= FOLD_ELEMENTS:
                data = evaluate(node, inputs, value.get_index())
        self._constants[id_of(value)] = data
        return data

    # ---------------------------------------------------------------- sums

    def sum(self, value: Any, width: int | None = None) -> Sum:
        """``value`` as a Sum over its last axis (broadcast to ``width`` columns where it is a constant)."""
        own = last_dim(value)
        width = width or own
        if width is None:
            return Sum(0, others=((value, np.arange(0)),))
        memo = (id_of(value), width)
        if memo not in self._sums:
            self._sums[memo] = self._sum(value, width, 0)
        return self._sums[memo]

    def _sum(self, value: Any, width: int, depth: int, batched: bool = False) -> Sum:
        opaque = Sum(width, others=((value, np.arange(width)),))
        data = self.constant(value)
        if data is not None:
            bias = as_bias(data, width)
            return Sum(width, bias=bias) if bias is not None else opaque
        node = value.get_node()
        kind = node.get_type_name()
        if depth > SUM_DEPTH or last_dim(value) != width:
            return opaque
        inner = (lambda source: self._sum(source, width, depth + 1, batched))
        here = (label(node),)
        if kind == "Add":
            first, second = (inner(source) for source in node.input_values())
            return _with_ops(first.plus(second), here)
        if kind == "Subtract":
            first, second = (inner(source) for source in node.input_values())
            negated = second.scaled(np.float32(-1))
            return _with_ops(first.plus(negated), here) if negated is not None else opaque
        if kind == "Negative":
            negated = inner(node.input_value(0)).scaled(np.float32(-1))
            return _with_ops(negated, here) if negated is not None else opaque
        if kind == "Multiply":
            return self._scaled(node, width, depth, opaque, batched)
        if kind == "MatMul":
            return self._product(node, width, opaque, batched)
        if kind in SPLITS or kind in SLICES:
            cols = self._kept_columns(node, value.get_index())
            source = node.input_value(0)
            if cols is None and self._rows_only(node, value.get_index()):  # (of rows: a reversed direction's)
                return _with_ops(self._rows(node, value.get_index(), width, depth), here)
            if cols is None or last_dim(source) is None:
                return opaque
            return _with_ops(self._sum(source, last_dim(source), depth + 1, batched).columns(cols), here)
        if kind in LAYOUT:
            found = inner(node.input_value(0))
            rounds = kind == "Convert" and narrowing(node)
            return replace(found, rounded=merged(found.rounded, (rounding(node),))) if rounds else found
        return opaque

    def _scaled(self, node: Any, width: int, depth: int, opaque: Sum, batched: bool = False) -> Sum:
        for k in (0, 1):
            factor = self.constant(node.input_value(1 - k))
            if factor is None:
                continue
            vector = as_bias(factor, width)
            if vector is None:
                return opaque
            scaled = self._sum(node.input_value(k), width, depth + 1, batched).scaled(vector)
            return _with_ops(scaled, (label(node),)) if scaled is not None else opaque
        return opaque

    def _product(self, node: Any, width: int, opaque: Sum, batched: bool = False) -> Sum:
        """A MatMul of a tensor by constant weights, as Terms (one per input of a Concat it reads); of a
        tensor [batch, width] (or [1, ..., batch, width]), or of any rank where ``batched``: the product of
        every step at once that :meth:`_rows` takes one step's rows of."""
        attributes = node.get_attributes()
        weights = self.constant(node.input_value(1))
        if weights is None or attributes.get("transpose_a") or weights.ndim < 2 or \
                any(size != 1 for size in weights.shape[:-2]):
            return opaque
        weights = weights.reshape(weights.shape[-2:])
        weights = weights.T if attributes.get("transpose_b") else weights
        if weights.shape[1] != width:
            return opaque
        terms: dict[Key, Term] = {}
        stored = integer_storage(node.input_value(1))
        start = 0
        parts = _concatenated(node.input_value(0))
        shape = node.input_value(0).get_partial_shape()
        if shape.rank.is_dynamic or (not batched and (shape.rank.get_length() < 2 or any(
                not dim.is_static or dim.get_length() != 1 for dim in list(shape)[:-2]))):
            return opaque  # a cell's x and h are [batch, width] (PyTorch's h: [1, batch, width]); not a batch of them
        for part in parts:
            size = last_dim(part) if len(parts) > 1 else weights.shape[0]  # one tensor: the weights say its width
            if size is None:
                return opaque
            block = weights[start:start + size]  # a view: steps sharing weights share it
            known = terms.get(key(part))  # a tensor joined twice (Concat(x, h, h)): its blocks add up
            terms[key(part)] = Term(part, block if known is None else known.weight + block, stored)
            start += size
        if start != weights.shape[0]:
            return opaque
        return Sum(width, terms, ops=(label(node),))

    def _rows_only(self, node: Any, index: int) -> bool:
        """Whether output ``index`` of a slicing op keeps the last two axes (batch and columns) whole, in order,
        and selects along the leading ones only (a step's rows of an input projection hoisted out of the
        steps, as torch.export writes it: Slice(X·W + b, t, t + 1) on the time axis; a gather across the
        batch is not that)."""
        source = node.input_value(0)
        size, shape = last_dim(source), source.get_partial_shape()
        others = [self.constant(value) for value in node.input_values()[1:]]
        if size is None or shape.rank.is_dynamic or shape.rank.get_length() < 3 or \
                node.get_type_name() not in SLICES or any(array is None for array in others):
            return False
        reach = max([int(np.abs(array).max()) + 1 for array in others if array.size] + [2])  # past any index used
        dims = [dim.get_length() if dim.is_static else min(reach, 4096) for dim in shape]
        if np.prod(dims) > FOLD_ELEMENTS:
            return False
        plane = np.arange(dims[-2] * size).reshape(dims[-2], size)  # each (batch, column) numbered
        ramp = np.broadcast_to(plane, dims).astype(source.get_element_type().to_dtype())
        result = evaluate(node, [ramp] + others, index)
        return result is not None and result.size > 0 and result.shape[-2:] == plane.shape and \
            bool((result.reshape(-1, *plane.shape) == plane).all())

    def _rows(self, node: Any, index: int, width: int, depth: int) -> Sum:
        """One step's rows of a product of every step at once (:meth:`_rows_only`): its terms' tensors taken
        the same rows of (a slice of the input X, made here, as the step's x_t), its bias as it is."""
        every = self._sum(node.input_value(0), width, depth + 1, batched=True)
        if every.others or not every.terms:
            return Sum(width, others=((node.output(index), np.arange(width)),))
        terms = {}
        for term in every.terms.values():  # one tensor of those rows per op, whichever gate reads them
            made = (id_of(node.output(index)), key(term.value))
            if made not in self._rows_made:
                self._rows_made[made] = same_rows(node, term.value)
            rows = self._rows_made[made]
            terms[key(rows)] = replace(term, value=rows, rows=True)
        products = tuple(op for op in every.ops if op.startswith("MatMul "))
        return Sum(width, terms, every.bias, (), every.ops, every.rounded, merged(every.hoisted or products, (label(node),)))

    def _kept_columns(self, node: Any, index: int) -> np.ndarray | None:
        """The columns of its first input that output ``index`` of a slicing op keeps, when it slices the
        last axis only (its other inputs constant), else None."""
        source = node.input_value(0)
        shape = source.get_partial_shape()
        size = last_dim(source)
        if size is None:
            return None
        rank = shape.rank.get_length()
        kind = node.get_type_name()
        if kind in SPLITS:
            axis = self.constant(node.input_value(1))
            if axis is None or axis.size != 1 or int(axis.reshape(-1)[0]) % rank != rank - 1:
                return None
            widths = [last_dim(output) for output in node.outputs()]
            if None in widths or sum(widths) != size:
                return None
            start = sum(widths[:index])
            return np.arange(start, start + widths[index])
        others = [self.constant(value) for value in node.input_values()[1:]]
        if any(array is None for array in others):
            return None
        # every element numbered (row r, column c: r*size + c), so that a row moved across the other
        # axes (a gather over the batch) is seen, not read as "every column kept"; a dynamic dim as 3, not 1
        # (on a dim of 1, taking row 0 of a time axis reads as keeping everything)
        dims = [dim.get_length() if dim.is_static else 3 for dim in shape]
        count = int(np.prod(dims))
        ramp = np.arange(count, dtype=np.int64).reshape(dims).astype(source.get_element_type().to_dtype())
        if not count or not np.array_equal(ramp.reshape(-1).astype(np.int64), np.arange(count)):
            return None  # the type does not hold the numbers exactly (f16 past 2048)
        result = evaluate(node, [ramp] + others, index)
        if result is None or result.ndim != ramp.ndim or result.shape[:-1] != ramp.shape[:-1] or not result.size:
            return None
        rows = result.reshape(-1, result.shape[-1]).astype(np.int64)
        if not (rows // size == np.arange(len(rows))[:, None]).all() or not (rows % size == rows[0] % size).all():
            return None  # a row moved, or rows keep different columns
        return rows[0] % size


def _with_ops(found: Sum, ops: tuple[str, ...]) -> Sum:
    return replace(found, ops=merged(found.ops, ops))


def _concatenated(value: Any) -> list[Any]:
    """The tensors a Concat on the last axis joins (TensorFlow 1's LSTM multiplies [x, h] at once), or
    the tensor itself."""
    node = value.get_node()
    if node.get_type_name() != "Concat":
        return [value]
    rank = value.get_partial_shape().rank
    axis = node.get_attributes().get("axis")
    if rank.is_dynamic or axis is None or int(axis) % rank.get_length() != rank.get_length() - 1:
        return [value]
    return list(node.input_values())


def as_bias(data: np.ndarray, width: int) -> np.ndarray | None:
    """Constant data added over ``width`` columns as one vector: a scalar, [width], or [..., width] (or
    [..., 1]) whose rows are all equal (a bias a converter broadcast over the batch), else None."""
    data = np.asarray(data)
    if not np.issubdtype(data.dtype, np.floating):
        return None
    if data.ndim == 0:
        return np.full(width, data, data.dtype)
    rows = data.reshape(-1, data.shape[-1])
    if rows.shape[1] not in (1, width) or not (rows == rows[0]).all():
        return None
    return np.broadcast_to(rows[0], (width,)).copy()


def same_rows(node: Any, value: Any) -> Any:
    """``value`` through a slicing op like ``node`` (its other inputs and attributes), made with opset8."""
    import openvino.opset8 as ops

    rest = list(node.input_values())[1:]
    kind = node.get_type_name()
    if kind == "Slice":
        return ops.slice(value, *rest).output(0)
    if kind == "Gather":
        return ops.gather(value, rest[0], rest[1], node.get_attributes().get("batch_dims", 0)).output(0)
    masks = node.get_attributes()
    return ops.strided_slice(value, *rest, masks["begin_mask"], masks["end_mask"], masks.get("new_axis_mask"),
                             masks.get("shrink_axis_mask"), masks.get("ellipsis_mask")).output(0)
