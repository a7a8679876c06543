"""Sizes for the dynamic dims of any model's inputs, chosen so that its recurrent nodes are valid.

A converted model often has every input dim dynamic (PyTorch with default settings:
``[?,?,?]``), and a recurrent node several ops below its inputs.  Each dynamic dim of each
model input gets an OpenVINO symbol; shape inference carries the symbols through Transpose,
ShapeOf, Gather, Concat, Broadcast and the recurrent ops themselves (which make the batch
dims of X, the states and sequence_lengths one symbol).  Each recurrent node's input dims
then say which input dims are its ``batch_size``, ``seq_length`` or ``input_size``; those
take the node's own values (``input_size`` and ``hidden_size`` are static in W and R) or
the chosen batch and sequence length.

A dim the symbols do not carry to a node (a Conv, a Pool or a TopK ends them) is sized by
asking OpenVINO: clones of the model reshaped with candidate sizes tell the nodes' dims
(:func:`_probe`).  A Gather by a TopK's indices (a sort) links its gathered dim to the sorted
axis.  A dim that moves no node dim is not guessed: the user names it with ``--shape``.

Model inputs that feed a node's sequence_lengths (directly or through a Convert, a TopK or a
Gather) are reported too, so that their values can be made valid (1..seq_length).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from irtool.core.errors import RunError, Unsupported, did_you_mean
from irtool.runtime.core import openvino_release
from irtool.specs.expressions import Sym

# Ops that pass a tensor's values through unchanged in what matters for sequence lengths.
# TopK (its values) and Gather (of its data) pick values of their first input: sorted lengths stay lengths.
VALUE_PRESERVING = ("Convert", "Reshape", "Squeeze", "Unsqueeze", "TopK", "Gather")


@dataclass(frozen=True)
class InputPlan:
    """The concrete shape of every model input, and which inputs are sequence lengths (and of what
    seq_length)."""

    shapes: Mapping[str, tuple[int, ...]]
    lengths: Mapping[str, int]  # input name -> the seq_length its values must not exceed
    chosen: Mapping[str, str]  # input name -> how its dynamic dims were chosen, for the report


def plan_inputs(model: Any, given: Mapping[str, Sequence[int]], sizes: Mapping[str, int],
                source: str) -> InputPlan:
    """Shapes for the model's inputs: ``given`` (``--shape NAME=[...]``) as they are, dynamic dims of
    the others from the recurrent nodes they reach, with ``sizes`` for batch_size and seq_length."""
    import openvino as ov

    from irtool.runtime.model import clone_model, tensor_name
    from irtool.runtime.nodes import node_spec

    if not hasattr(ov, "Symbol"):  # openvino before 2024.1 labelled dims with numbers instead
        raise Unsupported(f"openvino {openvino_release()} has no symbolic shapes (openvino.Symbol, "
                          f"from openvino 2024.1 on), which irtool sizes a model's inputs with")
    copy = clone_model(model)
    parameters = list(copy.get_parameters())
    names = [tensor_name(p.output(0)) for p in parameters]
    aliases = {alias: name for p, name in zip(parameters, names)
               for alias in set(p.output(0).get_names()) | {p.get_friendly_name(), name}}
    unknown = [key for key in given if key not in aliases]
    if unknown:
        raise RunError(f"--shape {unknown[0]}: {source} has no input of that name"
                       f"{did_you_mean(unknown[0], names)}; its inputs are {', '.join(names)}")
    given = {aliases[key]: tuple(value) for key, value in given.items()}
    symbols: dict[tuple[str, int], Any] = {}
    for parameter, name in zip(parameters, names):
        declared = parameter.get_partial_shape()
        if name in given:
            _check_given(name, declared, given[name])
            parameter.set_partial_shape(ov.PartialShape(list(given[name])))
            continue
        if declared.rank.is_dynamic:
            raise RunError(f"input {name} of {source} has a dynamic rank: give its shape with --shape {name}=[...]")
        dims = []
        for k, dim in enumerate(declared):
            if dim.is_static:
                dims.append(ov.Dimension(dim.get_length()))
                continue
            dim = ov.Dimension(dim.get_min_length(), dim.get_max_length())
            symbol = ov.Symbol()
            dim.set_symbol(symbol)
            symbols[(name, k)] = symbol
            dims.append(dim)
        parameter.set_partial_shape(ov.PartialShape(dims))
    try:
        copy.validate_nodes_and_infer_types()
    except RuntimeError as error:
        from irtool.runtime.core import openvino_message

        raise RunError(f"{source}: the given shapes do not fit the model: {openvino_message(error)}") from None

    # One size per class of equal symbols: a symbol compares equal to those OpenVINO merged with
    # it, not by hash, so the classes are kept in a list; the first size given to a class holds.
    representatives: list[tuple[Any, int]] = []

    def assign(symbol: Any, size: int) -> None:
        if not any(known == symbol for known, _ in representatives):
            representatives.append((symbol, size))

    lengths: dict[str, int] = {}
    targets: list[Target] = []  # the nodes' dynamic dims, for OpenVINO to be asked about
    ops, outer = _ops_with_bodies(copy)
    nodes = [(op, spec) for op in ops if (spec := node_spec(op)) is not None]
    for ordinal, (op, spec) in enumerate(nodes):
        node_sizes = _node_sizes(op, spec, sizes)
        for index, (port, value) in enumerate(zip(spec.inputs, (i.get_source_output() for i in op.inputs()))):
            shape = value.get_partial_shape()
            for k, (expr, dim) in enumerate(zip(port.dims or (), shape if shape.rank.is_static else ())):
                if not (isinstance(expr, Sym) and expr.name in node_sizes):
                    continue
                if dim.has_symbol():
                    assign(dim.get_symbol(), node_sizes[expr.name])
                if dim.is_dynamic:
                    targets.append(Target(ordinal, index, k, node_sizes[expr.name]))
            if port.role == "lengths":
                feeder = _through(value.get_node())
                while feeder.get_type_name() == "Parameter" and feeder.get_instance_id() in outer:  # a body's
                    feeder = _through(outer[feeder.get_instance_id()].get_node())  # the container's input
                if feeder.get_type_name() == "Parameter":
                    lengths[tensor_name(feeder.output(0))] = node_sizes.get(spec.time_symbol or "", 1)

    def size_of(key: tuple[str, int]) -> int | None:
        return next((value for known, value in representatives if known == symbols[key]), None)

    links = _permutation_links(ops)
    _follow_links(links, representatives, assign)
    steps = sizes.get("seq_length", default_steps())
    counted: dict[tuple[str, int], str] = {}  # a dim that decides how many iterations a loop runs -> the loop
    for key, loop in iteration_dims(copy, symbols).items():
        if size_of(key) is None:
            assign(symbols[key], steps)
            counted[key] = loop
    _follow_links(links, representatives, assign)
    unsized = [key for key in symbols if size_of(key) is None]
    if unsized and targets:  # dims the symbols do not carry to a node (Conv, Pool, TopK...): OpenVINO is asked
        known = {key: size for key in symbols if (size := size_of(key)) is not None}
        probed = _probe(model, names, given, known, unsized, targets, source)
        for key, size in probed.items():
            assign(symbols[key], size)
        _follow_links(links, representatives, assign)
    shapes: dict[str, tuple[int, ...]] = {}
    chosen: dict[str, str] = {}
    for parameter, name in zip(parameters, names):
        if name in given:
            shapes[name] = given[name]
            chosen[name] = "--shape"
            continue
        shape = []
        for k, dim in enumerate(parameter.get_partial_shape()):
            if dim.is_static:
                shape.append(dim.get_length())
                continue
            size = size_of((name, k))
            if size is None:
                raise RunError(f"input {name} of {source} has a dynamic dim {k} that reaches no recurrent node, so "
                               f"irtool cannot choose its size: give it with --shape {name}=[...] (or every input "
                               f"with --inputs IN.npz)")
            shape.append(size)
        shapes[name] = tuple(shape)
        if any(dim.is_dynamic for dim in parameter.get_partial_shape()):
            loops = [f"dim {k} = {shape[k]}, the iterations of {loop} (--seq-length)"
                     for (input_name, k), loop in counted.items() if input_name == name]
            nodes = len(loops) < sum(dim.is_dynamic for dim in parameter.get_partial_shape())
            chosen[name] = "; ".join((["from the recurrent nodes"] if nodes else []) + loops)
    return InputPlan(shapes, lengths, chosen)


def default_steps() -> int:
    """The sequence length a dynamic time dim gets when --seq-length does not say (the specs' default)."""
    from irtool.specs import registry

    return next(spec.default_sizes[spec.time_symbol] for spec in registry() if spec.time_symbol)


def iteration_dims(model: Any, symbols: Mapping[tuple[str, int], Any]) -> dict[tuple[str, int], str]:
    """The model inputs' dynamic dims (keys of ``symbols``: input name, dim) that decide how many
    iterations a top-level loop runs, with the loop in words: a TensorIterator's sliced input's
    axis (the dim's symbol reaches it), or a Loop's trip count or execution condition, reached
    from the input's ShapeOf through integer and boolean values (the count a TensorFlow while
    loop compares its step with, in its body's condition or before its first iteration)."""
    found: dict[tuple[str, int], str] = {}
    parameters = {p.get_instance_id(): name for p in model.get_parameters() for (name, _) in [next(
        (key for key in symbols if key[0] in p.output(0).get_names() or key[0] == p.get_friendly_name()), ("", 0))]}
    for op in model.get_ordered_ops():
        kind = op.get_type_name()
        if kind == "TensorIterator":
            for description in op.get_input_descriptions():
                if type(description).__name__ != "SliceInputDescription":
                    continue
                dim = op.input_value(description.input_index).get_partial_shape()[description.axis]
                for key, symbol in symbols.items():
                    if dim.has_symbol() and dim.get_symbol() == symbol:
                        found.setdefault(key, f"TensorIterator '{op.get_friendly_name()}'")
        elif kind == "ShapeOf" and op.input_value(0).get_node().get_instance_id() in parameters:
            name = parameters[op.input_value(0).get_node().get_instance_id()]
            rank = op.input_value(0).get_partial_shape().rank.get_length()
            for loop in _loops_counted_by(op):
                for k in _dims_read(op, rank):
                    if (name, k) in symbols:
                        found.setdefault((name, k), f"Loop '{loop}'")
    return found


def _dims_read(shape_of: Any, rank: int) -> list[int]:
    """The dims a ShapeOf's value is read for: the one index of the Gathers that take it, or every dim."""
    picked = set()
    for target in shape_of.output(0).get_target_inputs():
        node = target.get_node()
        index = _constant(node.input_value(1)) if node.get_type_name() == "Gather" and target.get_index() == 0 else None
        if index is None:
            return list(range(rank))
        picked.add(index % rank if rank else index)
    return sorted(picked)


def _loops_counted_by(source: Any) -> list[str]:
    """The Loops whose trip count or execution condition the values of ``source`` reach, through
    ops whose outputs are integers or booleans (a Loop's body condition included), by name."""
    import openvino as ov

    loops: list[str] = []
    seen: set[int] = set()
    pending = [source]
    while pending:
        node = pending.pop()
        for output in node.outputs():
            for target in output.get_target_inputs():
                user, port = target.get_node(), target.get_index()
                if user.get_instance_id() in seen:
                    continue
                if user.get_type_name() == "Loop":
                    if port in (0, 1) or port in _condition_inputs(user):
                        loops.append(user.get_friendly_name())
                    continue
                seen.add(user.get_instance_id())
                if all(o.get_element_type().is_integral() or o.get_element_type() == ov.Type.boolean
                       for o in user.outputs()):
                    pending.append(user)
    return list(dict.fromkeys(loops))


def _condition_inputs(loop: Any) -> set[int]:
    """A Loop's inputs that reach the execution condition its body computes for the next iteration."""
    body = loop.get_function()
    condition = loop.get_special_body_ports()[1]  # [current iteration input, condition output]
    if condition < 0:
        return set()
    reached: set[int] = set()
    pending = [body.get_results()[condition]]
    while pending:
        node = pending.pop()
        if node.get_instance_id() in reached:
            continue
        reached.add(node.get_instance_id())
        pending.extend(value.get_node() for value in node.input_values())
    parameters = list(body.get_parameters())
    return {d.input_index for d in loop.get_input_descriptions()
            if parameters[d.body_parameter_index].get_instance_id() in reached}


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


def _probe(model: Any, names: list[str], given: Mapping[str, tuple[int, ...]],
           known: Mapping[tuple[str, int], int], unsized: list[tuple[str, int]], targets: list[Target],
           source: str) -> dict[tuple[str, int], int]:
    """Sizes for the dims in ``unsized``, asked of OpenVINO: a clone of ``model`` reshaped with
    candidate sizes tells the recurrent nodes' dims (its shape inference is exact).  From a base
    size OpenVINO accepts, each dim is doubled alone to learn which node dims it moves and how
    fast (a Conv or Pool maps it affinely, up to rounding); the size that the slope says gives
    the targets is then checked with its neighbours, and, where the node dims grow with it, the
    smallest size reaching them found by bisection; the smallest size hitting every target
    exactly is kept (else the nearest).  A dim that moves no node dim is left out (the caller
    asks for --shape)."""

    def dims_at(sizes: Mapping[tuple[str, int], int]) -> dict[Target, int | None] | None:
        return _node_dims(model, names, given, {**known, **sizes}, targets)

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


def _node_dims(model: Any, names: list[str], given: Mapping[str, tuple[int, ...]],
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
    nodes = [op for op in _ops_with_bodies(copy)[0] if node_spec(op) is not None]
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


def _permutation_links(ops: list[Any]) -> list[tuple[Any, Any]]:
    """Dims that must be equal though no symbol says so: a Gather whose indices are TopK's indices
    over a whole axis (sorting, as PyTorch's pack_padded_sequence does) permutes its data's
    gathered dim, which therefore has the size of the sorted axis.  Pairs of symbols."""
    links = []
    for op in ops:
        if op.get_type_name() != "Gather" or op.get_input_size() < 3:
            continue
        indices = op.input_value(1).get_node()
        while indices.get_type_name() == "Convert":
            indices = indices.input_value(0).get_node()
        if indices.get_type_name() != "TopK":
            continue
        axis = _constant(op.input_value(2))
        data = op.input_value(0).get_partial_shape()
        sorted_shape = indices.input_value(0).get_partial_shape()
        sort_axis = indices.get_attributes().get("axis")
        if axis is None or not isinstance(sort_axis, int) or data.rank.is_dynamic or sorted_shape.rank.is_dynamic:
            continue
        axis = axis + len(data) if axis < 0 else axis
        sort_axis = sort_axis + len(sorted_shape) if sort_axis < 0 else sort_axis
        if 0 <= axis < len(data) and 0 <= sort_axis < len(sorted_shape):
            one, other = data[axis], sorted_shape[sort_axis]
            if one.has_symbol() and other.has_symbol():
                links.append((one.get_symbol(), other.get_symbol()))
    return links


def _follow_links(links: list[tuple[Any, Any]], representatives: list[tuple[Any, int]], assign: Any) -> None:
    """Give each linked symbol its partner's size, until nothing changes."""
    changed = True
    while changed:
        changed = False
        for pair in links:
            sizes = [next((value for known, value in representatives if known == symbol), None) for symbol in pair]
            for symbol, size, other in ((pair[0], sizes[0], sizes[1]), (pair[1], sizes[1], sizes[0])):
                if size is None and other is not None:
                    assign(symbol, other)
                    changed = True


def _constant(value: Any) -> int | None:
    node = value.get_node()
    if node.get_type_name() != "Constant":
        return None
    data = node.get_data()
    return int(data.reshape(-1)[0]) if data.size == 1 else None


def _ops_with_bodies(model: Any) -> tuple[list[Any], dict[int, Any]]:
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


def _node_sizes(op: Any, spec: Any, sizes: Mapping[str, int]) -> dict[str, int]:
    """A node's dim sizes: its attributes' (hidden_size, num_directions), its static input dims
    (input_size in W), and ``sizes`` (else the spec's defaults) for the rest (batch_size, seq_length)."""
    from irtool.runtime.nodes import node_attributes

    found = {**spec.default_sizes, **sizes}
    found.update(spec.attribute_symbols(spec.fill_defaults(node_attributes(op, spec))))
    for port, value in zip(spec.inputs, (i.get_source_output() for i in op.inputs())):
        shape = value.get_partial_shape()
        for expr, dim in zip(port.dims or (), shape if shape.rank.is_static else ()):
            if isinstance(expr, Sym) and dim.is_static:
                found[expr.name] = dim.get_length()
    return found


def _through(node: Any) -> Any:
    while node.get_type_name() in VALUE_PRESERVING:
        node = node.input_value(0).get_node()
    return node


def _check_given(name: str, declared: Any, shape: tuple[int, ...]) -> None:
    if any(size < 0 for size in shape):
        raise RunError(f"--shape {name}={list(shape)}: sizes must be >= 0")
    if declared.rank.is_static and len(declared) != len(shape):
        raise RunError(f"--shape {name}={list(shape)}: input {name} has rank {len(declared)} ({declared})")
    if declared.rank.is_static:
        for k, (dim, size) in enumerate(zip(declared, shape)):
            if (dim.is_static and dim.get_length() != size) or (
                    dim.is_dynamic and not dim.get_min_length() <= size <= (
                        dim.get_max_length() if dim.get_max_length() >= 0 else size)):
                raise RunError(f"--shape {name}={list(shape)}: dim {k} must be {dim} (input {name} is {declared})")
