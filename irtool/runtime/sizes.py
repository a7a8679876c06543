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
(irtool.runtime.sizes_probe).  A Gather by a TopK's indices (a sort) links its gathered dim to
the sorted axis.  A dim a MatMul by a constant weight contracts takes the weight's width (a cell a
converter lowered to plain ops: its input_size).  Where irtool.lowering finds a recurrence a
converter unrolled at the top level, a dim its steps' inputs and states do not carry takes its
number of steps; else a dim the graph takes fixed entries of (a Slice or Gather at constant
indices) takes the sequence length, at least those entries.  A dim that moves no node dim (a
Keras model's batch that reaches only a cell lowered to plain ops, a model with no recurrent
op) gets the batch size (``--batch``, default 2).

The sizes are then checked with OpenVINO's shape inference on the whole model made static: a
model may take only batch 1 (a Loop that concatenates each step with a state of fixed batch 1,
as a streaming TFLite model carries it), which its dynamic shapes do not say and the CPU
finds only when it runs.  Where it refuses the default batch for dims nothing sized, the
nearest sizes from 2 it accepts are taken (a graph traced at one example's batch holds it in
constants), else one such dim alone grown to the smallest of 32..4096 it accepts (an audio
model's samples, which a reflect Pad wants by the hundred); else batch 1 is tried (and the plan
says why); where it refuses every size tried,
the error says which sizes, how each was chosen, and why.

Model inputs that feed a node's sequence_lengths (directly or through a Convert, a TopK or a
Gather) are reported too, so that their values can be made valid (1..seq_length).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Sequence

from irtool.core.errors import RunError, Unsupported, did_you_mean
from irtool.runtime.core import openvino_release
from irtool.runtime.model import GROWN  # then for one such dim alone, the others kept
from irtool.runtime.sizes_probe import Target, dim_bounds, ops_with_bodies, probe, shape_inference
from irtool.specs import default_batch, default_steps
from irtool.specs.expressions import Sym

# Ops that pass a tensor's values through unchanged in what matters for sequence lengths.
# TopK (its values) and Gather (of its data) pick values of their first input: sorted lengths stay lengths.
VALUE_PRESERVING = ("Convert", "Reshape", "Squeeze", "Unsqueeze", "TopK", "Gather")


GIVEN = "--shape"  # how an input given its shape (--shape, a suite's shapes) was sized: not by irtool
NO_NODE_DIMS = "it reaches no recurrent op's dims"
BATCH_OF_STEPS = "the batch of the unrolled recurrence's steps"


@dataclass(frozen=True)
class InputPlan:
    """The concrete shape of every model input, and which inputs are sequence lengths (and of what
    seq_length)."""

    shapes: Mapping[str, tuple[int, ...]]
    lengths: Mapping[str, int]  # input name -> the seq_length its values must not exceed
    chosen: Mapping[str, str]  # input name -> how its dynamic dims were chosen, for the report
    defaulted: tuple[tuple[str, int], ...] = ()  # (input, dim) that took --batch for want of anything to size them


def plan_inputs(model: Any, given: Mapping[str, Sequence[int]], sizes: Mapping[str, int],
                source: str) -> InputPlan:
    """Shapes for the model's inputs: ``given`` (``--shape NAME=[...]``) as they are, dynamic dims of
    the others from the recurrent nodes they reach, with ``sizes`` for batch_size and seq_length
    (batch_size also for a dim that reaches no node), that OpenVINO's shape inference accepts:
    batch 1 where it refuses the default batch (``sizes`` without batch_size), else RunError
    naming the sizes tried and what OpenVINO says of each."""
    plan = _plan(model, given, sizes, source)
    if all(how == GIVEN for how in plan.chosen.values()):  # every size the user's
        return plan
    refusal = shape_inference(model)
    refused = refusal(plan.shapes)
    if refused is None:
        return plan
    tried = [(plan, refused)]
    fitted = None if "batch_size" in sizes else _fitted(model, plan, SEARCHED[1:], refusal, refused)
    if fitted is not None:
        return fitted
    batch = default_batch()
    if "batch_size" not in sizes and batch != 1:
        fallback = _plan(model, given, {**sizes, "batch_size": 1}, source)
        if fallback.shapes != plan.shapes:
            again = refusal(fallback.shapes)
            if again is None:
                why = f"batch 1: OpenVINO's shape inference refuses batch {batch} ({refused})"
                return replace(fallback, chosen={name: how if fallback.shapes[name] == plan.shapes[name] else
                                                 f"{how}; {why}" for name, how in fallback.chosen.items()})
            tried.append((fallback, again))
    said = "; ".join(", ".join(f"{name}{list(tried_plan.shapes[name])} ({how})"
                               for name, how in tried_plan.chosen.items() if how != GIVEN) + f": {why}"
                     for tried_plan, why in tried)
    raise RunError(f"{source}: OpenVINO's shape inference refuses the sizes irtool chose for its inputs' dynamic "
                   f"dims ({said}): give them with --shape NAME=[...]"
                   + ("" if "batch_size" in sizes else " or --batch N") + " (or every input with --inputs IN.npz)")


SEARCHED = range(1, 17)  # sizes tried for the dims nothing sized, when OpenVINO refuses the batch for them
MAX_COMBINATIONS = 4096


def _fitted(model: Any, plan: InputPlan, searched: Sequence[int], refusal: Callable[[Mapping[str, Sequence[int]]],
            str | None], refused: str) -> InputPlan | None:
    """The plan with the dims nothing sized (they took the batch) set to sizes OpenVINO's shape
    inference accepts, or None: first the sizes of ``searched`` nearest the batch, every dim at once
    (a graph traced at one example's shape, a torch.export of nn.GRU, its cells lowered to plain ops
    and its steps unrolled, fixes its batch in constants, a Reshape's, an Add's, which no symbol
    carries); then one dim alone, the others kept, at the smallest of :data:`GROWN` it takes (an
    audio model's samples: Silero VAD's reflect Pad and STFT Conv want 256 and more, where none of
    1..16 does).  1 is not searched: a broadcast takes it where the graph wants another size (batch 1
    is tried after, as for a streaming model).  ``refused``: what it says of the plan's own sizes."""
    import itertools

    keys = list(plan.defaulted)
    if not keys:
        return None
    wanted = [plan.shapes[name][k] for name, k in keys]

    def fitted(sizes: Sequence[int], how: str) -> InputPlan | None:
        shapes = {name: list(shape) for name, shape in plan.shapes.items()}
        for (name, k), size in zip(keys, sizes):
            shapes[name][k] = size
        if refusal(shapes) is not None:
            return None
        chosen = dict(plan.chosen)
        for (name, k), size in zip(keys, sizes):
            if plan.shapes[name][k] != size:
                chosen[name] = re.sub(rf"dim {k} = \d+ \(--batch; [^)]*\)", f"dim {k} = {size} ({how})", chosen[name])
        return replace(plan, shapes={name: tuple(shape) for name, shape in shapes.items()}, chosen=chosen)

    if len(searched) ** len(keys) <= MAX_COMBINATIONS:
        for sizes in sorted(itertools.product(searched, repeat=len(keys)),
                            key=lambda sizes: (sum(abs(size - want) for size, want in zip(sizes, wanted)), sizes)):
            if tuple(sizes) != tuple(wanted) and (found := fitted(
                    sizes, "the size nearest --batch OpenVINO's shape inference accepts: the graph fixes it")):
                return found
    bounds = dim_bounds(model)
    for index, key in enumerate(keys):
        low, high = bounds.get(key, (0, -1))
        how = (f"the smallest of {searched[0]}..{searched[-1]}, {GROWN[0]}, {GROWN[1]}, ... {GROWN[-1]} OpenVINO's "
               f"shape inference accepts, the other dims kept: it refuses {wanted[index]} ({refused})")
        for size in GROWN:
            if size > wanted[index] and size >= low and (high < 0 or size <= high) and (
                    found := fitted([*wanted[:index], size, *wanted[index + 1:]], how)):
                return found
    return None


def _plan(model: Any, given: Mapping[str, Sequence[int]], sizes: Mapping[str, int], source: str) -> InputPlan:
    """The plan of :func:`plan_inputs` for ``sizes``, before OpenVINO checks it."""
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
    ops, outer = ops_with_bodies(copy)
    nodes = [(op, spec) for op in ops if (spec := node_spec(op)) is not None]
    for ordinal, (op, spec) in enumerate(nodes):
        node_sizes, flags = _node_sizes(op, spec, sizes)
        for index, (port, value) in enumerate(zip(spec.inputs, (i.get_source_output() for i in op.inputs()))):
            shape = value.get_partial_shape()
            for k, (expr, dim) in enumerate(zip(port.dims or (), shape if shape.rank.is_static else ())):
                size = expr.evaluate(node_sizes, flags)  # batch_size; or gates * hidden_size, a dynamic R's
                if size is None:
                    continue
                if dim.has_symbol():
                    assign(dim.get_symbol(), size)
                if dim.is_dynamic:
                    targets.append(Target(ordinal, index, k, size))
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
    weighed: dict[tuple[str, int], str] = {}  # a dim a MatMul's constant weight fixes -> the MatMul
    for symbol, width, matmul in contraction_widths(ops):
        keys = [key for key in symbols if size_of(key) is None and symbols[key] == symbol]
        if keys:
            assign(symbol, width)
            weighed.update((key, matmul) for key in keys)
    _follow_links(links, representatives, assign)
    unsized = [key for key in symbols if size_of(key) is None]
    if unsized and targets:  # dims the symbols do not carry to a node (Conv, Pool, TopK...): OpenVINO is asked
        known = {key: size for key in symbols if (size := size_of(key)) is not None}
        probed = probe(model, names, given, known, unsized, targets, source)
        for key, size in probed.items():
            assign(symbols[key], size)
        _follow_links(links, representatives, assign)
    batch = sizes.get("batch_size", default_batch())
    unrolled = _unrolled(copy, [symbols[key] for key in symbols if size_of(key) is None])
    extents = sliced_extents(ops) if unrolled is None else []
    for key in symbols:  # a dim the graph takes fixed steps of (an unrolled recurrence irtool cannot read)
        needed = [(size, op) for symbol, size, op in extents if symbols[key] == symbol]
        if size_of(key) is None and needed:
            size, op = max(needed, key=lambda found: found[0])
            assign(symbols[key], max(size, steps))
            counted[key] = f"steps the graph takes: at least the {size} entries {op} takes of it (--seq-length)"
            _follow_links(links, representatives, assign)
    defaulted = []  # dims that move no node dim: the batch, or the nearest size their bounds allow
    stepped: set[tuple[str, int]] = set()  # of those, the batch of an unrolled recurrence's steps
    for key in symbols:
        if size_of(key) is None and unrolled is not None and not any(
                symbols[key] == symbol for symbol in unrolled[2]):  # not a cell's batch: its steps
            assign(symbols[key], unrolled[0])
            counted[key] = unrolled[1]
            _follow_links(links, representatives, assign)
        if size_of(key) is None:
            dim = next(p for p, n in zip(parameters, names) if n == key[0]).get_partial_shape()[key[1]]
            size, upper = max(batch, dim.get_min_length()), dim.get_max_length()
            assign(symbols[key], min(size, upper) if upper >= 0 else size)
            defaulted.append(key)
            if unrolled is not None:
                stepped.add(key)
            _follow_links(links, representatives, assign)
    shapes: dict[str, tuple[int, ...]] = {}
    chosen: dict[str, str] = {}
    for parameter, name in zip(parameters, names):
        if name in given:
            shapes[name] = given[name]
            chosen[name] = GIVEN
            continue
        shape = []
        for k, dim in enumerate(parameter.get_partial_shape()):
            if dim.is_static:
                shape.append(dim.get_length())
                continue
            shape.append(size_of((name, k)))
        shapes[name] = tuple(shape)
        if any(dim.is_dynamic for dim in parameter.get_partial_shape()):
            loops = [f"dim {k} = {shape[k]}, the " + (loop if loop.startswith("steps") else
                                                      f"iterations of {loop} (--seq-length)")
                     for (input_name, k), loop in counted.items() if input_name == name]
            widths = [f"dim {k} = {shape[k]}, the input width of the constant weight of {matmul}"
                      for (input_name, k), matmul in weighed.items() if input_name == name]
            alone = [f"dim {k} = {shape[k]} (--batch; " + (f"{BATCH_OF_STEPS})" if (input_name, k) in stepped else
                                                           f"{NO_NODE_DIMS})")
                     for input_name, k in defaulted if input_name == name]
            nodes = len(loops) + len(widths) + len(alone) < sum(
                dim.is_dynamic for dim in parameter.get_partial_shape())
            chosen[name] = "; ".join((["from the recurrent nodes"] if nodes else []) + loops + widths + alone)
    return InputPlan(shapes, lengths, chosen, tuple(defaulted))


def _unrolled(model: Any, unsized: list[Any]) -> tuple[int, str, list[Any]] | None:
    """For dims nothing else sized (their symbols ``unsized``): the steps of the longest recurrence a
    converter unrolled at ``model``'s top level (irtool.lowering's chains: a torch.export of nn.GRU
    or a loop of LSTMCell traced at one example's length, which fixes it), that recurrence in
    words, and the symbols its steps' inputs and states carry (their batch, which the steps leave
    alone: a dim they do not carry is the one the steps were sliced from); None where there is none."""
    if not unsized:
        return None
    from irtool.lowering.chains import Chain, find_chains

    chains = [chain for chain in find_chains(model) if isinstance(chain, Chain)]
    if not chains:
        return None
    longest = max(chains, key=lambda chain: len(chain.steps))
    first = longest.steps[0]
    carried = [dim.get_symbol() for chain in chains for cell in chain.steps
               for value in (cell.x, cell.h, cell.c) if value is not None and value.get_partial_shape().rank.is_static
               for dim in value.get_partial_shape() if dim.has_symbol()]
    return len(longest.steps), (f"steps of the {first.kind} recurrence a converter unrolled "
                                f"({first.parts[0]} first): the graph fixes them"), carried


MAX_SLICED = 1 << 20  # a Slice's stop beyond this is "to the end", not a fixed step


def sliced_extents(ops: list[Any]) -> list[tuple[Any, int, str]]:
    """The dims the graph takes fixed indices of: for a Slice whose starts are constant, or a Gather
    whose indices are (each above 0; a Slice's stop bounded too), the symbol of its data's dim
    along each such axis, how many entries the dim needs (the largest index taken, plus one), and
    the op in words.  A converter that unrolls
    a recurrence over a traced example's steps slices each step at its index."""
    found = []
    for op in ops:
        kind = op.get_type_name()
        if kind not in ("Slice", "Gather") or op.get_input_size() < (4 if kind == "Slice" else 3):
            continue
        data = op.input_value(0).get_partial_shape()
        if data.rank.is_dynamic:
            continue
        starts = _constants(op.input_value(1))
        axes = _constants(op.input_value(4)) if kind == "Slice" and op.get_input_size() > 4 else (
            _constants(op.input_value(2)) if kind == "Gather" else list(range(len(starts or ()))))
        if not starts or axes is None or (kind == "Gather" and len(axes) != 1):
            continue
        stops = _constants(op.input_value(2)) if kind == "Slice" else [index + 1 for index in starts]
        if stops is None or len(stops) != len(starts):
            continue
        # a Slice to the end (stop past any size) takes no fixed entry; index 0 alone says nothing of the size
        pairs = [(axes[0], max(starts))] if kind == "Gather" else [
            (axis, start) for axis, start, stop in zip(axes, starts, stops) if start < stop <= MAX_SLICED]
        for axis, start in pairs:
            axis = axis + len(data) if axis < 0 else axis
            if 0 <= axis < len(data) and start >= 1 and data[axis].is_dynamic and data[axis].has_symbol():
                found.append((data[axis].get_symbol(), start + 1, f"{kind} '{op.get_friendly_name()}'"))
    return found


def _constants(value: Any) -> list[int] | None:
    node = value.get_node()
    if node.get_type_name() != "Constant" or node.get_output_element_type(0).is_real():
        return None
    return [int(v) for v in node.get_data().reshape(-1)]


def contraction_widths(ops: list[Any]) -> list[tuple[Any, int, str]]:
    """The dims a MatMul by a constant weight fixes: for each MatMul (of ``ops``) one of whose
    inputs is a Constant (through Converts: a compressed or cast weight) of static shape, the
    symbol of the other input's contraction dim, the weight's width along it (a Dense layer's,
    or a cell a converter lowered to plain ops: its input width is its weight's), and the
    MatMul in words."""
    found = []
    for op in ops:
        if op.get_type_name() != "MatMul":
            continue
        attributes = op.get_attributes()
        for data, weight in ((0, 1), (1, 0)):
            source = op.input_value(weight).get_node()
            while source.get_type_name() == "Convert":
                source = source.input_value(0).get_node()
            shape, other = op.input_value(weight).get_partial_shape(), op.input_value(data).get_partial_shape()
            if source.get_type_name() != "Constant" or not shape.is_static or other.rank.is_dynamic:
                continue
            if len(shape) < 1 or len(other) < 1:
                continue
            # The contraction runs along the data's last dim (first, as the right operand) unless transposed;
            # a rank-1 operand contracts along its only dim.
            transposed = {0: bool(attributes.get("transpose_a")), 1: bool(attributes.get("transpose_b"))}
            along_data = (len(other) - 1 if (data == 0) != transposed[data] else len(other) - 2) \
                if len(other) > 1 else 0
            along_weight = (len(shape) - 2 if (weight == 1) != transposed[weight] else len(shape) - 1) \
                if len(shape) > 1 else 0
            dim = other[along_data]
            if dim.is_dynamic and dim.has_symbol():
                found.append((dim.get_symbol(), shape[along_weight].get_length(), f"MatMul '{op.get_friendly_name()}'"))
    return found


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
    return sorted(set(loops))  # by name: OpenVINO lists an output's readers in no fixed order


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


def _node_sizes(op: Any, spec: Any, sizes: Mapping[str, int]) -> tuple[dict[str, int], dict[str, Any]]:
    """A node's dim sizes: its attributes' (hidden_size, num_directions), its static input dims
    (input_size in W), and ``sizes`` (else the spec's defaults) for the rest (batch_size, seq_length);
    and its attributes (what the spec's shapes depend on: linear_before_reset)."""
    from irtool.runtime.nodes import node_attributes

    found = {**spec.default_sizes, **sizes}
    attributes = spec.fill_defaults(node_attributes(op, spec))
    found.update(spec.attribute_symbols(attributes))
    for port, value in zip(spec.inputs, (i.get_source_output() for i in op.inputs())):
        shape = value.get_partial_shape()
        for expr, dim in zip(port.dims or (), shape if shape.rank.is_static else ()):
            if isinstance(expr, Sym) and dim.is_static:
                found[expr.name] = dim.get_length()
    return found, attributes


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
