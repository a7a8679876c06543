"""Sizes for the dims of a model's inputs that the symbols do not carry to a recurrent node
(a Conv, a Pool or a TopK ends them), asked of OpenVINO: clones of the model reshaped with
candidate sizes tell the nodes' dims (irtool.runtime.sizes), and one reshaped copy tells which
sizes its shape inference refuses (:func:`shape_inference`); and the ops of a model with those of
its bodies, which both walk."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from irtool.core.errors import RunError


@dataclass(frozen=True)
class Target:
    """A dynamic dim of a recurrent node's input and the size it should get (its batch_size,
    seq_length...: ``--batch``, ``--seq-length`` or the spec's default)."""

    node: int  # the node's place among the recurrent ops of the model and its bodies, in order
    port: int
    dim: int
    size: int


BASES = (16, 32, 64, 8, 128, 4, 256, 2, 1)  # sizes tried for every unsized dim until OpenVINO accepts one
MAX_REACH = 32  # sizes checked on each side of the one the slope gives (a stride of up to 30 is solved exactly)


def probe(model: Any, names: list[str], given: Mapping[str, tuple[int, ...]],
           known: Mapping[tuple[str, int], int], unsized: list[tuple[str, int]], targets: list[Target],
           source: str) -> dict[tuple[str, int], int]:
    """Sizes for the dims in ``unsized``, asked of OpenVINO: a clone of ``model`` reshaped with
    candidate sizes tells the recurrent nodes' dims (its shape inference is exact).  From a base
    size OpenVINO accepts, each dim is doubled alone to learn which node dims it moves and how
    fast (a Conv or Pool maps it affinely, up to rounding); the size that the slope says gives
    the targets is then checked with its neighbours, and, where the node dims grow with it, the
    smallest size reaching them found by bisection; the smallest size hitting every target
    exactly is kept (else the nearest).  A dim that moves no node dim is left out (the caller
    gives it the batch)."""

    def dims_at(sizes: Mapping[tuple[str, int], int]) -> dict[Target, int | None] | None:
        return node_dims(model, names, given, {**known, **sizes}, targets)

    for base in BASES:
        start = {key: base for key in unsized}
        found = dims_at(start)
        if found is not None:
            break
    else:
        name, k = unsized[0]
        raise RunError(f"input {name} of {source} has a dynamic dim {k} that irtool cannot size (OpenVINO accepts "
                       f"none of the sizes {', '.join(map(str, BASES))} for it): give it with --shape {name}=[...]")
    chosen = dict(start)
    result: dict[tuple[str, int], int] = {}
    for key in unsized:
        doubled = dims_at({**chosen, key: 2 * base})
        if doubled is None:
            continue
        moved = [t for t in targets if found[t] is not None and doubled[t] is not None and found[t] != doubled[t]]
        if not moved:
            continue
        growing = all(doubled[t] > found[t] for t in moved)
        guesses: set[int] = set()
        for target in moved:
            slope = (doubled[target] - found[target]) / base
            guess = round(base + (target.size - found[target]) / slope)
            reach = min(int(abs(1 / slope)) + 2, MAX_REACH)
            guesses.update(range(guess - reach, guess + reach + 1))
        if growing:  # a Conv or Pool: the smallest size giving every moved dim at least its target
            guesses.add(_smallest(lambda size: _reaches(dims_at({**chosen, key: size}), moved), max(guesses)))

        def score(size: int) -> tuple[int, int] | None:
            dims = dims_at({**chosen, key: size})
            if dims is None or any(dims[t] is None or dims[t] < 1 for t in moved):
                return None
            return -sum(dims[t] == t.size for t in moved), sum(abs(dims[t] - t.size) for t in moved)

        best: tuple[tuple[int, int], int] | None = None
        for size in sorted(g for g in guesses if g >= 1):
            found_score = score(size)
            if found_score is not None and (best is None or found_score < best[0]):
                best = (found_score, size)
            if found_score is not None and found_score[0] == -len(moved):  # all exact: the smallest such size
                break
        if best is not None:
            chosen[key] = result[key] = best[1]
    if result and dims_at(chosen) is None:
        name, k = next(iter(result))
        raise RunError(f"input {name} of {source} has a dynamic dim {k} that irtool cannot size (OpenVINO accepts no "
                       f"combination of the sizes it tried): give it with --shape {name}=[...]")
    return result


MAX_SIZE = 1 << 24  # the largest size searched for one dim


def _reaches(dims: Mapping[Target, int | None] | None, moved: list[Target]) -> bool:
    return dims is not None and all(dims[t] is not None and dims[t] >= t.size for t in moved)


def _smallest(enough: Any, start: int) -> int:
    """The smallest size >= 1 for which ``enough`` holds, ``enough`` growing with the size
    (doubling from ``start`` until it holds, then bisecting); ``start`` if it never holds."""
    high = max(start, 1)
    while not enough(high):
        if high >= MAX_SIZE:
            return start
        high *= 2
    low = 0  # enough(low) is taken as false
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    return high


def node_dims(model: Any, names: list[str], given: Mapping[str, tuple[int, ...]],
               sizes: Mapping[tuple[str, int], int], targets: list[Target]) -> dict[Target, int | None] | None:
    """The dims ``targets`` name in a clone of ``model`` whose inputs take ``given`` and ``sizes``
    (the rest of their dims dynamic), or None if OpenVINO rejects those shapes."""
    import openvino as ov

    from irtool.runtime.model import clone_model
    from irtool.runtime.nodes import node_spec

    copy = clone_model(model)
    for parameter, name in zip(copy.get_parameters(), names):
        if name in given:
            parameter.set_partial_shape(ov.PartialShape(list(given[name])))
            continue
        shape = parameter.get_partial_shape()
        if shape.rank.is_dynamic or any(not _within(dim, sizes[(name, k)]) for k, dim in enumerate(shape)
                                        if (name, k) in sizes):
            return None
        parameter.set_partial_shape(ov.PartialShape([
            ov.Dimension(sizes[(name, k)]) if (name, k) in sizes else dim for k, dim in enumerate(shape)]))
    try:
        copy.validate_nodes_and_infer_types()
    except RuntimeError:
        return None
    nodes = [op for op in ops_with_bodies(copy)[0] if node_spec(op) is not None]
    found: dict[Target, int | None] = {}
    for target in targets:
        op = nodes[target.node] if target.node < len(nodes) else None
        shape = op.input_value(target.port).get_partial_shape() if op is not None else None
        dim = shape[target.dim] if shape is not None and shape.rank.is_static and target.dim < len(shape) else None
        found[target] = dim.get_length() if dim is not None and dim.is_static else None
    return found


def _within(dim: Any, size: int) -> bool:
    """Whether a (dynamic, maybe bounded) dim takes ``size``."""
    upper = dim.get_max_length()
    return dim.get_min_length() <= size and (upper < 0 or size <= upper)


def ops_with_bodies(model: Any) -> tuple[list[Any], dict[int, Any]]:
    """Every op of ``model`` and of the bodies of its TensorIterators, Loops and Ifs at any depth
    (OpenVINO's shape inference carries the inputs' symbols into bodies), and for each body
    Parameter (by its node's instance id) the container input it gets."""
    ops: list[Any] = []
    outer: dict[int, Any] = {}
    pending = [model]
    while pending:
        graph = pending.pop()
        for op in graph.get_ordered_ops():
            ops.append(op)
            kind = op.get_type_name()
            if kind not in ("TensorIterator", "Loop", "If"):
                continue
            bodies = [(op.get_then_body(), op.get_input_descriptions(0)), (op.get_else_body(), op.get_input_descriptions(1))] \
                if kind == "If" else [(op.get_function(), op.get_input_descriptions())]
            for body, descriptions in bodies:
                parameters = list(body.get_parameters())
                for description in descriptions:
                    parameter = parameters[description.body_parameter_index]
                    outer[parameter.get_instance_id()] = op.input_value(description.input_index)
                pending.append(body)
    return ops, outer


def dim_bounds(model: Any) -> dict[tuple[str, int], tuple[int, int]]:
    """The bounds OpenVINO declares for each dynamic dim of the model's inputs (by input name and
    axis): its least and greatest length, -1 for none."""
    from irtool.runtime.model import tensor_name

    return {(tensor_name(parameter.output(0)), k): (dim.get_min_length(), dim.get_max_length())
            for parameter in model.get_parameters() if parameter.get_partial_shape().rank.is_static
            for k, dim in enumerate(parameter.get_partial_shape()) if dim.is_dynamic}


def shape_inference(model: Any) -> Callable[[Mapping[str, Sequence[int]]], str | None]:
    """A function telling what OpenVINO's shape inference says against ``model`` with its inputs (by
    name) of the shapes it is given, in short (the op, its name, the reason), or None if it accepts
    them.  One copy of the model is reshaped for every question (copying it each time cost 26 of a
    run's 30 s on a model whose sizes took 3,375 questions)."""
    import openvino as ov

    from irtool.runtime.core import openvino_message
    from irtool.runtime.model import clone_model, tensor_name

    copy = clone_model(model)
    parameters = [(parameter, tensor_name(parameter.output(0))) for parameter in copy.get_parameters()]

    def refused(shapes: Mapping[str, Sequence[int]]) -> str | None:
        for parameter, name in parameters:
            parameter.set_partial_shape(ov.PartialShape(list(shapes[name])))
        try:
            copy.validate_nodes_and_infer_types()
        except RuntimeError as error:
            text = str(error)
            node = re.search(r"While validating node '\S+::(\w+) .*?with friendly_name '([^']*)'", text, re.S)
            shapes_in = re.search(r"Shape inference input shapes (\S+)", text)
            reason = [line.strip() for line in text.splitlines() if line.strip()][-1].split(";")[0].rstrip(".")
            if node is None:
                return openvino_message(error)
            return f"{node[1]} '{node[2]}'" + (f" of input shapes {shapes_in[1]}" if shapes_in else "") + f": {reason}"
        return None

    return refused
