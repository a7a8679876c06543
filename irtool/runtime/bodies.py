"""The recurrent nodes (and named tensors) inside the bodies of TensorIterator, Loop and If ops,
at any depth, exposed through the containers' own outputs.

Each tensor of such a node becomes a Result of its body, which a TensorIterator or Loop exposes
as a concatenated output (one slice per iteration, stacked on a new leading axis) and an If as
an output of both branches (the branch without the node gives zeros, and a flag output says
which branch ran).  Nested containers repeat this on the way out, so a node inside a Loop
inside a TensorIterator arrives with two iteration axes.  Named tensors inside bodies (a
converted ONNX model keeps ONNX's tensor names in its If and Loop bodies too) are exposed the
same way, for judging an ONNX node of a subgraph as ONNX defines it.  A Loop also exposes
whether it ran at all, and containers whose iteration count may differ per outer iteration
are not exposed (named as not judged, with why).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from irtool.lowering.cells import Context, Refusal
from irtool.lowering.graph import constant_data, id_of, key
from irtool.lowering.recognize import find_cells
from irtool.runtime.lowered_nodes import after, cell_name, cell_ports, cell_spec, description, might_hold_cells
from irtool.runtime.nodes import (
    BODY_OPS,
    CONTAINERS,
    Lowered,
    body_of,
    dynamic_axes,
    named_outputs,
    neighbours,
    node_attributes,
    node_spec,
    recurrent_source,
)
from irtool.specs import OpSpec


@dataclass(kw_only=True)
class InBody:
    """Something in a body whose tensors are exposed, as values of the graph the search started
    from: constant data (np.ndarray) or an output of that graph (a container's exposed output)."""

    where: str
    values: list[Any]  # np.ndarray or an Output of the outer graph (at first: of the body)
    loops: list[str] = field(default_factory=list)  # TensorIterators/Loops around it, outermost first
    # (flag, then?, depth, label, loop?): see Condition
    conditions: list[tuple[Any, bool, int, str, bool]] = field(default_factory=list)
    unprobed: str | None = None
    container: str | None = None  # the outermost container seen so far
    never: str | None = None  # a Loop around it never runs: why

    @property
    def skipped(self) -> str | None:
        """Why its tensors are not exposed (through further containers either)."""
        return self.unprobed or self.never


@dataclass(kw_only=True)
class BodyNode(InBody):
    """A recurrent node in a body (an op of the family, or a cell lowered to plain ops); ``values`` per
    input port, then per output port."""

    name: str  # the op's friendly name, or what a lowered cell is called
    spec: OpSpec
    attributes: Mapping[str, Any]
    inputs: list[Any]  # the node's input ports' sources in its body (what ``values`` started as)
    dynamic: list[tuple[int, ...]]  # per input port: the axes dynamic in the body
    tensors: tuple[str, ...] = ()  # what feeds and reads it in its body, before any probe was added
    lowered: Lowered | None = None
    shared: tuple[int, ...] = ()  # the input ports whose value is the one most iterations share (Feed.shared)
    # input port -> (index among ``values`` of the output the loop feeds back into it, the loop's initial
    # value of it): the port reads, at each iteration, the initial value then that output of the iteration before
    fed_back: dict[int, tuple[int, Any]] = field(default_factory=dict)
    stored: dict[int, str] = field(default_factory=dict)  # input port -> the integer type its weights are stored as


@dataclass(kw_only=True)
class BodyTensor(InBody):
    """A named tensor in a body; ``values`` is the one output carrying the name."""

    name: str
    source: str | None = None  # the recurrent node computing it, in its body


@dataclass(frozen=True)
class Wanted:
    """What to expose of the bodies: their recurrent nodes, and the tensors carrying these names."""

    nodes: bool = True
    names: frozenset[str] = frozenset()
    lowered: bool = True  # cells lowered to plain ops (irtool.lowering), and what looks like one


def has_body_nodes(op: Any) -> bool:
    """Whether ``op`` (an ov.Model or a node) holds a recurrent node in a body, at any depth."""
    ops = op.get_ordered_ops() if hasattr(op, "get_ordered_ops") else [op]  # hasattr once: on a node it is slow
    return any(inner.get_type_name() in CONTAINERS and any(
        node_spec(deeper) is not None or (deeper.get_type_name() in CONTAINERS and has_body_nodes(deeper))
        for body in _bodies(inner)
        for deeper in body.get_ordered_ops()) for inner in ops)


def all_ops(model: Any) -> list[Any]:
    """Every op of an ov.Model and of its containers' bodies, at any depth."""
    found, stack = [], [model]
    while stack:
        for op in stack.pop().get_ordered_ops():
            found.append(op)
            if op.get_type_name() in CONTAINERS:
                stack.extend(_bodies(op))
    return found


def _bodies(op: Any) -> list[Any]:
    if op.get_type_name() == "If":
        return [op.get_then_body(), op.get_else_body()]
    body = body_of(op)
    return [body] if body is not None else []


def expose_bodies(graph: Any, where: str = "", in_loop: bool = False, wanted: Wanted = Wanted(),
                  fixed: frozenset[tuple[str, int]] = frozenset()) -> list[InBody]:
    """The recurrent nodes (and the ``wanted`` named tensors) in the bodies of ``graph``'s
    containers, at any depth, with their tensors made outputs of the containers in ``graph``
    (which this changes: give it a clone).  ``in_loop``: ``graph`` is the body of a
    TensorIterator or Loop (at any depth); ``fixed`` then holds its Parameters (id_of keys) that
    are the same at every iteration of every loop around it."""
    found: list[InBody] = []
    for op in graph.get_ordered_ops():
        kind = op.get_type_name()
        if kind not in CONTAINERS:
            continue
        label = f"{kind} '{op.get_friendly_name()}'"
        suffix = f" in the {where}" if where else ""
        if kind == "If":
            branches = [(op.get_then_body(), True, f"then branch of {label}{suffix}"),
                        (op.get_else_body(), False, f"else branch of {label}{suffix}")]
        else:
            branches = [(body_of(op), None, f"body of {label}{suffix}")]
        looping = in_loop or kind != "If"
        inner = [(body, then, items) for body, then, here in branches if body is not None
                 for items in [_direct_items(op, body, then, here, wanted, looping) + expose_bodies(
                     body, here, looping, wanted, _fixed_parameters(op, body, then, in_loop, fixed))]
                 if items]
        if not inner:
            continue
        varying = _varying_count(op, fixed) if in_loop and kind in BODY_OPS else None
        refused = f"{label} sits in a loop, and {varying}" if varying else None
        controls = constant_controls(op) if kind == "Loop" else None
        never = _never_runs(*controls) if controls else None
        for _, _, items in inner if never else ():  # nothing to expose (measured: exposing it crashed the CPU)
            for item in items:
                item.never = item.never or f"{label} never runs: {never}"
        try:
            if refused is None and never is None and kind == "If":
                _out_of_if(op, label, inner, in_loop)
            elif refused is None and never is None:
                _out_of_loop(op, label, inner[0][0], inner[0][2], controls)
        except (RuntimeError, ValueError, TypeError) as error:  # OpenVINO refused a new output
            refused = f"{label} could not expose its tensors: {str(error).strip()[:200]}"
        for _, _, items in inner if refused else ():
            for item in items:
                item.unprobed = item.unprobed or refused
        for _, _, items in inner:
            for item in items:
                item.container = op.get_friendly_name()
                found.append(item)
    return found


def _fixed_parameters(op: Any, body: Any, then: bool | None, in_loop: bool,
                      fixed: frozenset[tuple[str, int]]) -> frozenset[tuple[str, int]]:
    """The Parameters of a container's body (or branch) that are the same at every iteration of every
    loop around it: those fed, unchanged at each of its own iterations (a loop's invariant inputs,
    any input of an If), by a value of ``op``'s graph that is fixed itself: a constant, a fixed
    Parameter, or any value where that graph is in no loop."""
    return frozenset(parameter for parameter, source in _unchanged_inputs(op, body, then)
                     if not in_loop or id_of(source) in fixed or constant_data(source.get_node()) is not None)


def _varying_count(op: Any, fixed: frozenset[tuple[str, int]]) -> str | None:
    """Why a TensorIterator or Loop inside a loop may run a different number of iterations at each
    iteration around it, or None when it cannot: its tensors are stacked once per iteration around
    it, and OpenVINO cannot stack slices of different lengths (measured with 2026.4.1: wrong
    values, or the process aborts in the CPU plugin)."""
    def steady(value: Any) -> bool:
        return id_of(value) in fixed or constant_data(value.get_node()) is not None

    if op.get_type_name() == "TensorIterator":
        for given in op.get_input_descriptions():
            if type(given).__name__ == "SliceInputDescription":
                shape = op.get_input_partial_shape(given.input_index)
                if shape.rank.is_dynamic or shape[given.axis % shape.rank.get_length()].is_dynamic:
                    return "it slices a tensor of dynamic length, so its iteration count may differ at each " \
                           "iteration around it, and OpenVINO cannot stack outputs of different lengths"
        return None
    if not steady(op.input_value(0)) or not steady(op.input_value(1)):
        return "its trip count or condition may differ at each iteration around it, and OpenVINO cannot stack " \
               "outputs of different lengths"
    stop = body_of(op).get_results()[op.get_special_body_ports()[1]].input_value(0)
    data = constant_data(stop.get_node())
    if data is None or not np.asarray(data).all():
        return "its body may stop it early (its condition output is computed), so its iteration count may differ " \
               "at each iteration around it, and OpenVINO cannot stack outputs of different lengths"
    return None


def _direct_items(container: Any, body: Any, then: bool | None, where: str, wanted: Wanted,
                  looping: bool) -> list[InBody]:
    """The recurrent nodes of a body itself (not of its own bodies), then the cells lowered to plain
    ops in it, then its outputs that carry a wanted name (a Result shares its source's names: not it)."""
    found: list[InBody] = []
    for op in body.get_ordered_ops():
        spec = node_spec(op) if wanted.nodes else None
        if spec is not None:
            sources = [i.get_source_output() for i in op.inputs()][:len(spec.inputs)]
            values = [constant_data(value.get_node()) for value in sources]
            values = [value if value is not None else source for value, source in zip(values, sources)]
            values += [op.output(j) for j in range(len(spec.outputs))]
            found.append(BodyNode(name=op.get_friendly_name(), spec=spec, attributes=node_attributes(op, spec),
                                  where=where, inputs=sources, values=values,
                                  dynamic=[dynamic_axes(value) for value in sources], tensors=neighbours(op)))
    if wanted.lowered and might_hold_cells(body):
        found += _lowered_items(container, body, then, where, looping)
    for name, output in named_outputs(body, wanted.names).items():
        found.append(BodyTensor(name=name, where=where, values=[output], source=recurrent_source(output)))
    return found


def _lowered_items(container: Any, body: Any, then: bool | None, where: str, looping: bool) -> list[InBody]:
    """The lowered cells of a body (and what looks like one but is not recognized: a node with nothing
    to expose, judged as not recognized), each told its state by the loop's back edge."""
    carried = _carried(container, body)
    context = Context(_constant_inputs(container, body, then) | _loop_constants(container, body),
                      {parameter: source for parameter, (source, _) in carried.items()}, looping)
    items: list[InBody] = []
    for cell in find_cells(body, context):
        spec = cell_spec(cell.kind)
        if isinstance(cell, Refusal):
            items.append(BodyNode(name=cell_name(cell.kind, cell.parts, cell.anchor), spec=spec, attributes={},
                                  where=where, inputs=[], values=[], dynamic=[],
                                  lowered=Lowered(description(cell), refused=cell.reason)))
            continue
        inputs, shared, stored = cell_ports(cell)
        fed_back = {}  # h_{t-1} (and c_{t-1}): the loop's initial value, then h_t (c_t) of the iteration before
        for port, output in ((1, 0), (2, 1))[:len(cell.outputs)]:
            source, initial = carried.get(key(inputs[port]), (None, None))
            if source == key(cell.outputs[output]) and _same_static_shape(inputs[port], cell.outputs[output], initial):
                fed_back[port] = (len(inputs) + output, initial)
        items.append(BodyNode(name=cell_name(cell.kind, cell.parts, cell.outputs[0]), spec=spec,
                              attributes=cell.attributes, where=where, inputs=inputs,
                              values=inputs + list(cell.outputs), lowered=Lowered(description(cell)), shared=shared,
                              dynamic=[() if isinstance(value, np.ndarray) else dynamic_axes(value)
                                       for value in inputs], fed_back=fed_back, stored=stored))
    return items


def _same_static_shape(*values: Any) -> bool:
    shapes = [value.get_partial_shape() for value in values]
    return all(shape.is_static for shape in shapes) and len({tuple(shape.to_shape()) for shape in shapes}) == 1


def _carried(op: Any, body: Any) -> dict[tuple[str, int], tuple[tuple[str, int], Any]]:
    """A loop's body Parameters it feeds back, each with the key (irtool.lowering.graph.key) of the
    body tensor fed back into it at the next iteration and the loop's input giving its first value."""
    if op.get_type_name() not in BODY_OPS:
        return {}
    parameters, results = list(body.get_parameters()), list(body.get_results())
    return {id_of(parameters[d.body_parameter_index].output(0)): (key(results[d.body_value_index].input_value(0)),
                                                                   op.input_value(d.input_index))
            for d in op.get_input_descriptions() if type(d).__name__ == "MergedInputDescription"}


def _loop_constants(op: Any, body: Any) -> dict[tuple[str, int], np.ndarray]:
    """A loop's body Parameters it feeds back unchanged from a constant (TensorFlow's while loops pass
    weights as loop variables), with that constant's data."""
    if op.get_type_name() not in BODY_OPS:
        return {}
    parameters, results = list(body.get_parameters()), list(body.get_results())
    found = {}
    for d in op.get_input_descriptions():
        if type(d).__name__ != "MergedInputDescription":
            continue
        parameter = parameters[d.body_parameter_index].output(0)
        data = constant_data(op.input_value(d.input_index).get_node())
        if data is not None and id_of(results[d.body_value_index].input_value(0)) == id_of(parameter):
            found[id_of(parameter)] = data
    return found


def _out_of_loop(op: Any, label: str, body: Any, items: list[BodyNode],
                 controls: tuple[np.ndarray | None, np.ndarray | None] | None) -> None:
    """Each body tensor of ``items`` (and each If flag among them) as a concatenated output of the
    TensorIterator or Loop ``op``: one slice per iteration on a new leading axis; a Loop's
    ``controls`` (:func:`constant_controls`) say whether it needs a flag saying it ran."""
    import openvino.opset8 as ops

    exposed: dict[tuple[str, int], Any] = {}
    constants = _constant_inputs(op, body, None)

    def expose(value: Any) -> Any:
        key = id_of(value)
        if key in constants:  # a weight passed in unchanged: read once, not captured per iteration
            return constants[key]
        if key not in exposed:
            stacked = ops.unsqueeze(_copy(value), ops.constant(np.array([0], np.int64)))
            body.add_results([ops.result(stacked)])
            exposed[key] = op.get_concatenated_slices(stacked.output(0), 0, 1, 1, -1, 0)
        return exposed[key]

    ran = _ran_any(op, *controls) if controls else None
    for item in items:
        if item.skipped:
            continue
        fed_back = item.fed_back if isinstance(item, BodyNode) else {}
        item.values = [value if isinstance(value, np.ndarray) or k in fed_back else expose(value)
                       for k, value in enumerate(item.values)]
        for port, (output, initial) in fed_back.items():  # what the loop fed back: no tensor more to expose
            item.values[port] = after(initial, item.values[output])
        item.conditions = [(expose(flag), then, depth + 1, where, loop)
                           for flag, then, depth, where, loop in item.conditions]
        if ran is not None:
            item.conditions.insert(0, (ran, True, 0, label, True))
        item.loops.insert(0, label)


def _copy(value: Any) -> Any:
    """A body tensor as an op of its own computes it, for exposing: measured with OpenVINO 2026.4.1's
    CPU plugin, a Gather's output in a Loop body read by an op that may work in place (Unsqueeze,
    Reshape, Convert, even Multiply by 1) and a Result changed, from run to run, what the body's
    recurrent node computed from it; read through Maximum(x, x) it did not."""
    import openvino.opset8 as ops

    if value.get_element_type().is_real() or value.get_element_type().is_integral_number():
        return ops.maximum(value, value).output(0)
    return value


def constant_controls(op: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
    """A Loop's trip count and execution condition where they are the same whatever the inputs
    (:func:`_constant_value`), each None where they are not."""
    return _constant_value(op.input_value(0)), _constant_value(op.input_value(1))


def _first(data: np.ndarray | None) -> Any:
    """A scalar control's value, or None where it is not known."""
    return None if data is None or not np.asarray(data).size else np.asarray(data).reshape(-1)[0]


def _never_runs(trip: np.ndarray | None, condition: np.ndarray | None) -> str | None:
    """Why a Loop of these constant controls can run no iteration whatever the inputs (a trip count of
    0 or a false execution condition), or None.  Measured with OpenVINO 2026.4.1: compiling a copy
    that exposes such a Loop's body kills the process in the CPU plugin (SIGFPE), while the model
    itself compiles and runs."""
    if _first(trip) is not None and int(_first(trip)) == 0:
        return "its trip count is 0"
    if _first(condition) is not None and not bool(_first(condition)):
        return "its execution condition is false"
    return None


def _constant_value(value: Any) -> np.ndarray | None:
    """The data of a value that is the same whatever the inputs: a Constant's (through a Convert), or,
    for a value computed from Constants alone (no Parameter upstream), what OpenVINO computes for it;
    None for any other."""
    data = constant_data(value.get_node())
    if data is not None:
        return data
    seen, pending = set(), [value.get_node()]
    while pending:
        node = pending.pop()
        if node.get_type_name() == "Parameter" or node.get_type_name() in CONTAINERS:
            return None
        key = (node.get_type_name(), node.get_friendly_name())
        if key not in seen and len(seen) < 64:  # a trip count is a few ops; a long chain is not worth it
            seen.add(key)
            pending += [source.get_node() for source in node.input_values()]
        elif key not in seen:
            return None
    import openvino as ov
    import openvino.opset8 as ops

    from irtool.runtime.core import core

    try:  # a throwaway model of the value alone: a Result that no graph of the model holds
        compiled = core().compile_model(ov.Model([ops.result(value)], [], "constant"), "CPU")
        return np.array(compiled({})[0])
    except RuntimeError:
        return None


def _ran_any(op: Any, trip_data: np.ndarray | None, condition_data: np.ndarray | None) -> Any:
    """A flag of the Loop ``op``'s graph: 1 when the Loop runs at least one iteration (its trip count
    is not 0, -1 being unbounded, and its execution condition holds); None when its constant
    controls say it always does."""
    import openvino.opset8 as ops

    if _first(trip_data) is not None and int(_first(trip_data)) != 0 and _first(condition_data) is not None \
            and bool(_first(condition_data)):
        return None
    trip, condition = op.input_value(0), op.input_value(1)
    zero = ops.constant(np.zeros((), trip.get_element_type().to_dtype()))
    return ops.logical_and(ops.not_equal(trip, zero), ops.convert(condition, "boolean")).output(0)


def _unchanged_inputs(op: Any, body: Any, then: bool | None) -> list[tuple[tuple[str, int], Any]]:
    """The body (or branch: ``then``) Parameters that a container feeds unchanged at every iteration (a
    TensorIterator's or Loop's invariant inputs, an If's inputs): each one's id_of key and the value
    of the container's graph feeding it."""
    descriptions = op.get_input_descriptions(0 if then else 1) if then is not None else op.get_input_descriptions()
    parameters = list(body.get_parameters())
    return [(id_of(parameters[description.body_parameter_index].output(0)), op.input_value(description.input_index))
            for description in descriptions
            if type(description).__name__ in ("InvariantInputDescription", "InputDescription")]


def _constant_inputs(op: Any, body: Any, then: bool | None) -> dict[tuple[str, int], np.ndarray]:
    """The body Parameters that get constant data unchanged at every iteration, with that data."""
    return {parameter: data for parameter, source in _unchanged_inputs(op, body, then)
            if (data := constant_data(source.get_node())) is not None}


def _out_of_if(op: Any, label: str, inner: list[tuple[Any, bool, list[BodyNode]]], in_loop: bool) -> None:
    """Each branch tensor of the nodes in ``inner`` as an output of the If ``op`` (the other branch
    gives zeros, 1 along a dynamic dim), and a flag output: 1 when the then branch ran, 0 when
    the else branch did.  Inside a loop a tensor of dynamic shape is refused (ValueError): were
    the branches to alternate, the loop could not concatenate zeros and the tensor."""
    import openvino.opset8 as ops

    then_body, else_body = op.get_then_body(), op.get_else_body()

    def output(then_value: Any, else_value: Any) -> Any:
        then_result, else_result = ops.result(_copy(then_value)), ops.result(_copy(else_value))
        then_body.add_results([then_result])
        else_body.add_results([else_result])
        return op.set_output(then_result, else_result)

    flag = output(ops.constant(np.array([1], np.int32)), ops.constant(np.array([0], np.int32)))
    for body, then, items in inner:
        exposed: dict[tuple[str, int], Any] = {}
        constants = _constant_inputs(op, body, then)

        def expose(value: Any) -> Any:
            key = id_of(value)
            if key in constants:
                return constants[key]
            if key not in exposed:
                shape = value.get_partial_shape()
                if in_loop and shape.is_dynamic:
                    raise ValueError(f"its tensor of dynamic shape {shape} is in a branch inside a loop, whose "
                                     f"iterations irtool stacks with zeros from the other branch, and zeros of "
                                     f"the same shape cannot be made there")
                dims = [max(dim.get_length(), 1) if dim.is_static else 1 for dim in shape] if shape.rank.is_static \
                    else [1]
                zeros = ops.constant(np.zeros(dims, value.get_element_type().to_dtype()))
                exposed[key] = output(value, zeros) if then else output(zeros, value)
            return exposed[key]

        for item in items:
            if item.skipped:
                continue
            item.values = [value if isinstance(value, np.ndarray) else expose(value) for value in item.values]
            item.conditions = [(flag, then, 0, f"{'then' if then else 'else'} branch of {label}", False)] + \
                [(expose(inner_flag), *rest) for inner_flag, *rest in item.conditions]
