"""The recurrent nodes of any ov.Model, and a probed copy that exposes their inputs and outputs.

A node of the family (any op type with a spec file whose ``family`` is set) is found
wherever it sits among other ops.  What feeds each of its input ports is either constant
data read from the model (a Constant, or a Constant through a Convert, as f16-compressed
weights arrive), a model input (by name), or a tensor computed on the way, which the probed
copy adds as an extra output.  Its outputs are added likewise.  One inference of the probed
copy on the device under test then gives every node's inputs and outputs as the device
computes them inside the whole model.

Nodes inside the bodies of TensorIterator, Loop and If ops, at any depth, are probed through
the containers' own outputs: each tensor of such a node becomes a Result of its body, which a
TensorIterator or Loop exposes as a concatenated output (one slice per iteration, stacked on
a new leading axis) and an If as an output of both branches (the branch without the node
gives zeros, and a flag output says which branch ran).  Nested containers repeat this on the
way out, so a node inside a Loop inside a TensorIterator arrives with two iteration axes.
Named tensors inside bodies (a converted ONNX model keeps ONNX's tensor names in its If and
Loop bodies too) are exposed the same way, for judging an ONNX node of a subgraph as ONNX
defines it.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from irtool.runtime.model import clone_model, tensor_name
from irtool.specs import OpSpec, PortSpec, registry

BODY_OPS = ("TensorIterator", "Loop")  # containers that iterate their body
CONTAINERS = BODY_OPS + ("If",)
TOP_LEVEL = "top level"


@dataclass(frozen=True)
class Feed:
    """What feeds one input port of a node: constant data, a model input, or a probed tensor."""

    port: PortSpec
    constant: np.ndarray | None = None
    parameter: str | None = None  # the model input's name
    probe: int | None = None  # index among the probed copy's outputs
    dynamic: tuple[int, ...] = ()  # the axes the model leaves dynamic at this port

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.constant, self.parameter, self.probe)) != 1:
            raise ValueError(f"port {self.port.name}: a feed is exactly one of constant, parameter, probe")


@dataclass(frozen=True)
class Condition:
    """What must hold for a body node to run, read from a probed flag output (with one leading axis
    per loop around it): an If around the node took the node's branch (the flag is 1 when the then
    branch ran, 0 when the else branch did), or a Loop around it ran at least one iteration (1:
    its trip count is not 0 and its execution condition holds).  A Loop that ran none leaves its
    concatenated outputs as the previous inference's (measured: OpenVINO 2026.4.1's CPU plugin,
    a compiled model inferred again), so they cannot say it."""

    probe: int
    then: bool
    depth: int  # the flag's leading iteration axes
    label: str  # "then branch of If 'name'", "Loop 'name'"
    loop: bool = False  # a Loop's flag, not a branch's

    def says(self) -> str:
        """Why the node did not run where the flag is not ``then``."""
        return f"{self.label} ran no iteration" if self.loop else f"in the {self.label}, not taken"


@dataclass(frozen=True)
class RecurrentNode:
    """One node of the family in a model: what it is, where it is, and how to see its tensors."""

    index: int  # among the model's recurrent nodes, in topological order
    name: str  # the friendly name
    spec: OpSpec
    attributes: Mapping[str, Any]
    where: str  # "top level" or "body of TensorIterator 'ti'"
    feeds: tuple[Feed, ...] = ()  # one per connected input port; empty for a node in a body
    outputs: tuple[int, ...] = ()  # for each output port, the probed copy's output index
    model_outputs: Mapping[int, int] | None = None  # output port -> model output index, where one is
    tensors: tuple[str, ...] = ()  # its output tensors' names (a converted model's own), or what feeds and reads it
    loops: tuple[str, ...] = ()  # a body node: the TensorIterators/Loops around it, outermost first (one axis each)
    conditions: tuple[Condition, ...] = ()  # a node in If branches: the branch each If must take to reach it
    unprobed: str | None = None  # why a body node's tensors could not be exposed
    container: str | None = None  # a body node: the friendly name of the top-level container it sits in
    stable: str | None = None  # the key of a node whose name OpenVINO made by its counter (see generated_name)
    never: str | None = None  # why a body node never runs (a Loop around it of constant trip count 0)

    @property
    def key(self) -> str:
        """What results are keyed by (CASE::NODE, --atol NODE:PORT, reproducer folders): the node's name,
        or for a name OpenVINO generated its stable place, ``LSTMCell@1``."""
        return self.stable or self.name

    @property
    def in_body(self) -> bool:
        return self.where != TOP_LEVEL

    @property
    def depth(self) -> int:
        """How many leading iteration axes its probed tensors have."""
        return len(self.loops)

    @property
    def label(self) -> str:
        return f"{self.spec.type}-{self.spec.version} '{self.name}'"

    @property
    def fed_by_model_inputs(self) -> bool:
        """Every input is a model input or constant data (a single-op model's node)."""
        return not self.in_body and all(feed.probe is None for feed in self.feeds)


@dataclass(frozen=True)
class Placement:
    """A named tensor inside a body, as the probed copy exposes it: its probed output, with one
    leading axis per loop around it, and the If branches that must be taken for it to exist."""

    probe: int | None  # None when it could not be exposed (``unprobed`` says why) or is ``constant``
    where: str  # "then branch of If 'y'"
    loops: tuple[str, ...] = ()
    conditions: tuple[Condition, ...] = ()
    container: str | None = None  # the friendly name of the top-level container it sits in
    source: str | None = None  # the recurrent node computing it (through layout ops), where one does
    unprobed: str | None = None
    constant: np.ndarray | None = None  # the same data at every iteration (a body input fed by a Constant)
    never: str | None = None  # why it is never computed (a Loop around it of constant trip count 0)

    @property
    def depth(self) -> int:
        return len(self.loops)


@dataclass(frozen=True)
class ProbedModel:
    """The recurrent nodes of a model and the copy of it that exposes their tensors."""

    model: Any  # the ov.Model as read
    probed: Any  # the copy with extra outputs (the model itself when it needs none)
    nodes: tuple[RecurrentNode, ...]
    model_output_count: int
    tensors: Mapping[str, int] = field(default_factory=dict)  # a named tensor -> index among the probed outputs
    sources: Mapping[str, str] = field(default_factory=dict)  # a named tensor -> the recurrent node computing it
    placed: Mapping[str, Placement] = field(default_factory=dict)  # a named tensor found inside a body

    @property
    def needs_probe(self) -> bool:
        return self.probed is not self.model

    @property
    def judgeable(self) -> tuple[RecurrentNode, ...]:
        return tuple(node for node in self.nodes if node.unprobed is None and node.never is None)

    @property
    def run_as(self) -> tuple[str, ...]:
        """The top-level nodes whose implementation says what ran for the judged nodes: each top-level
        node's own, and the containers of those in bodies and of the named tensors there."""
        names = [node.container if node.in_body else node.name for node in self.judgeable]
        names += [placement.container for placement in self.placed.values() if placement.container]
        return tuple(dict.fromkeys(names))


def node_spec(node: Any) -> OpSpec | None:
    """The spec of an ov node if it is of the recurrent family irtool knows, else None."""
    spec = registry().for_ir(node.get_type_name(), node.get_type_info().version_id)
    return spec if spec is not None and spec.family else None


def constant_data(node: Any) -> np.ndarray | None:
    """The data of a Constant, or of a Constant through a Convert (f16-compressed weights)."""
    kind = node.get_type_name()
    if kind == "Constant":
        return np.array(node.get_data())
    if kind == "Convert" and node.input_value(0).get_node().get_type_name() == "Constant":
        data = np.array(node.input_value(0).get_node().get_data())
        return data.astype(node.get_output_element_type(0).to_dtype())
    return None


def plain(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value


def node_attributes(node: Any, spec: OpSpec) -> dict[str, Any]:
    return {name: plain(value) for name, value in node.get_attributes().items() if name in spec.attributes}


def generated_name(name: str, op_type: str) -> bool:
    """Whether a node's name is one OpenVINO made for a node its frontend gave no name:
    ``<type>_<n>`` with n from a counter of every node the process has made (a TensorFlow cell in a
    Loop body is LSTMCell_77 in one process and LSTMCell_11647 after another model's conversion)."""
    return re.fullmatch(rf"{re.escape(op_type)}_[0-9]+", name) is not None


def stable_keys(nodes: Sequence[RecurrentNode]) -> tuple[RecurrentNode, ...]:
    """The nodes, each one whose name OpenVINO generated keyed by its place instead: its type and its
    count among the model's recurrent nodes of that type, in their order (top level in topological
    order, then the bodies'): ``LSTMCell@1``.  Other names are the model's own and stay the keys."""
    counts: dict[str, int] = {}
    keyed = []
    for node in nodes:
        counts[node.spec.type] = counts.get(node.spec.type, 0) + 1
        if generated_name(node.name, node.spec.type):
            node = dataclasses.replace(node, stable=f"{node.spec.type}@{counts[node.spec.type]}")
        keyed.append(node)
    return tuple(keyed)


def probe_model(model: Any, tensor_names: Sequence[str] = (), generated_names: bool = False,
                body_nodes: bool = True) -> ProbedModel:
    """Find the model's recurrent nodes (at the top level and, with ``body_nodes``, in bodies) and
    make the copy that exposes their tensors, and also the tensors that carry one of
    ``tensor_names`` (a converted ONNX model keeps ONNX's tensor names on the outputs that compute
    them), at the top level (``tensors``) or in a body at any depth (``placed``); a name no output
    carries is left out.  ``generated_names``: the model was converted in this process (not read
    from IR, whose names are the file's), so a ``<type>_<n>`` name is OpenVINO's counter and the
    node is keyed by its place (:func:`stable_keys`)."""
    probed = _probe_model(model, tensor_names, body_nodes)
    return dataclasses.replace(probed, nodes=stable_keys(probed.nodes)) if generated_names else probed


def _probe_model(model: Any, tensor_names: Sequence[str], body_nodes: bool) -> ProbedModel:
    found = [op for op in model.get_ordered_ops() if node_spec(op) is not None]
    if not found and not tensor_names and not (body_nodes and _has_body_nodes(model)):
        return ProbedModel(model, model, (), len(model.outputs))
    copy = clone_model(model)
    copied = [op for op in copy.get_ordered_ops() if node_spec(op) is not None]
    if [op.get_friendly_name() for op in copied] != [op.get_friendly_name() for op in found]:
        from irtool.errors import IrtoolBug

        raise IrtoolBug("a clone of the model orders its recurrent nodes differently")
    existing = {(id_of(out.get_node().input_value(0))): k for k, out in enumerate(copy.outputs)}
    wanted: list[Any] = []
    index_of: dict[tuple[str, int], int] = {}

    def probe(output: Any) -> int:
        key = id_of(output)
        if key in existing:
            return existing[key]
        if key not in index_of:
            index_of[key] = len(copy.outputs) + len(wanted)
            wanted.append(output)
        return index_of[key]

    nodes = []
    for k, op in enumerate(copied):
        spec = node_spec(op)
        feeds = []
        for port, value in zip(spec.inputs, (i.get_source_output() for i in op.inputs())):
            source = value.get_node()
            data = constant_data(source)
            if data is not None:
                feeds.append(Feed(port, constant=data))
            elif source.get_type_name() == "Parameter":
                feeds.append(Feed(port, parameter=tensor_name(source.output(0)), dynamic=_dynamic_axes(value)))
            else:
                feeds.append(Feed(port, probe=probe(value), dynamic=_dynamic_axes(value)))
        outputs = tuple(probe(op.output(j)) for j in range(len(spec.outputs)))
        model_outputs = {j: index for j, index in enumerate(outputs) if index < len(copy.outputs)}
        tensors = tuple(sorted(name for output in op.outputs() for name in output.get_names())) or _neighbours(op)
        nodes.append(RecurrentNode(k, op.get_friendly_name(), spec, node_attributes(op, spec), TOP_LEVEL,
                                   tuple(feeds), outputs, model_outputs, tensors))
    named = _named_outputs(copy, tensor_names)
    placed = {}
    for item in expose_bodies(copy, wanted=Wanted(body_nodes, frozenset(tensor_names) - set(named))):
        if isinstance(item, BodyTensor):
            value = item.values[0]
            constant = value if isinstance(value, np.ndarray) else None
            placed[item.name] = Placement(
                None if item.skipped or constant is not None else probe(value), item.where, tuple(item.loops),
                () if item.skipped else tuple(Condition(probe(flag), *rest) for flag, *rest in item.conditions),
                item.container, item.source, item.unprobed, constant, item.never)
            continue
        inputs, outputs = item.values[:len(item.inputs)], item.values[len(item.inputs):]
        feeds = () if item.skipped else tuple(
            Feed(port, constant=value) if isinstance(value, np.ndarray) else
            Feed(port, probe=probe(value), dynamic=dynamic)
            for port, value, dynamic in zip(item.spec.inputs, inputs, item.dynamic))
        probes = () if item.skipped else tuple(probe(value) for value in outputs)
        conditions = () if item.skipped else tuple(Condition(probe(flag), *rest) for flag, *rest in item.conditions)
        nodes.append(RecurrentNode(len(nodes), item.op.get_friendly_name(), item.spec,
                                   node_attributes(item.op, item.spec), item.where, feeds, probes, None,
                                   item.tensors, tuple(item.loops), conditions, item.unprobed, item.container,
                                   never=item.never))
    tensors = {name: probe(output) for name, output in named.items()}
    sources = {name: source for name, output in named.items() if (source := _recurrent_source(output))}
    count = len(copy.outputs)
    if not wanted:
        return ProbedModel(model, model, tuple(nodes), count, tensors, sources, placed)
    copy.add_outputs(wanted)
    return ProbedModel(model, copy, tuple(nodes), count, tensors, sources, placed)


def loop_controls(model: Any) -> dict[str, str]:
    """The model inputs that decide whether a top-level Loop runs, by name: "trip" for one feeding its
    trip count, "condition" for one feeding its execution condition (directly or through ops that
    keep values: Convert, Reshape, Squeeze, Unsqueeze)."""
    found: dict[str, str] = {}
    for op in model.get_ordered_ops():
        if op.get_type_name() != "Loop":
            continue
        for port, role in ((0, "trip"), (1, "condition")):
            node = op.input_value(port).get_node()
            while node.get_type_name() in ("Convert", "Reshape", "Squeeze", "Unsqueeze"):
                node = node.input_value(0).get_node()
            if node.get_type_name() == "Parameter":
                found.setdefault(tensor_name(node.output(0)), role)
    return found


def _dynamic_axes(value: Any) -> tuple[int, ...]:
    shape = value.get_partial_shape()
    return tuple(k for k, dim in enumerate(shape) if dim.is_dynamic) if shape.rank.is_static else ()


# ----------------------------------------------------------------------------- nodes in bodies

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
    """A recurrent node in a body; ``values`` per input port, then per output port."""

    op: Any  # the node, in its body
    spec: OpSpec
    inputs: list[Any]  # the node's input ports' sources in its body (what ``values`` started as)
    dynamic: list[tuple[int, ...]]  # per input port: the axes dynamic in the body
    tensors: tuple[str, ...] = ()  # what feeds and reads it in its body, before any probe was added


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


def _has_body_nodes(op: Any) -> bool:
    """Whether ``op`` (an ov.Model or a node) holds a recurrent node in a body, at any depth."""
    if hasattr(op, "get_ordered_ops"):
        return any(_has_body_nodes(inner) for inner in op.get_ordered_ops())
    return op.get_type_name() in CONTAINERS and any(
        node_spec(inner) is not None or _has_body_nodes(inner) for body in _bodies(op) for inner in body.get_ordered_ops())


def _bodies(op: Any) -> list[Any]:
    if op.get_type_name() == "If":
        return [op.get_then_body(), op.get_else_body()]
    body = _body(op)
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
            branches = [(_body(op), None, f"body of {label}{suffix}")]
        looping = in_loop or kind != "If"
        inner = [(body, then, items) for body, then, here in branches if body is not None
                 for items in [_direct_items(body, here, wanted) + expose_bodies(
                     body, here, looping, wanted, _fixed_parameters(op, body, then, in_loop, fixed))]
                 if items]
        if not inner:
            continue
        varying = _varying_count(op, fixed) if in_loop and kind in BODY_OPS else None
        refused = f"{label} sits in a loop, and {varying}" if varying else None
        controls = _constant_controls(op) if kind == "Loop" else None
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
        for description in op.get_input_descriptions():
            if type(description).__name__ == "SliceInputDescription":
                shape = op.get_input_partial_shape(description.input_index)
                if shape.rank.is_dynamic or shape[description.axis % shape.rank.get_length()].is_dynamic:
                    return "it slices a tensor of dynamic length, so its iteration count may differ at each " \
                           "iteration around it, and OpenVINO cannot stack outputs of different lengths"
        return None
    if not steady(op.input_value(0)) or not steady(op.input_value(1)):
        return "its trip count or condition may differ at each iteration around it, and OpenVINO cannot stack " \
               "outputs of different lengths"
    stop = _body(op).get_results()[op.get_special_body_ports()[1]].input_value(0)
    data = constant_data(stop.get_node())
    if data is None or not np.asarray(data).all():
        return "its body may stop it early (its condition output is computed), so its iteration count may differ " \
               "at each iteration around it, and OpenVINO cannot stack outputs of different lengths"
    return None


def _direct_items(body: Any, where: str, wanted: Wanted) -> list[InBody]:
    """The recurrent nodes of a body itself (not of its own bodies), then its outputs that carry a
    wanted name (a Result shares its source's names: not it)."""
    found: list[InBody] = []
    for op in body.get_ordered_ops():
        spec = node_spec(op) if wanted.nodes else None
        if spec is not None:
            sources = [i.get_source_output() for i in op.inputs()][:len(spec.inputs)]
            values = [constant_data(value.get_node()) for value in sources]
            values = [value if value is not None else source for value, source in zip(values, sources)]
            values += [op.output(j) for j in range(len(spec.outputs))]
            found.append(BodyNode(op=op, spec=spec, where=where, inputs=sources, values=values,
                                  dynamic=[_dynamic_axes(value) for value in sources], tensors=_neighbours(op)))
    for name, output in _named_outputs(body, wanted.names).items():
        found.append(BodyTensor(name=name, where=where, values=[output], source=_recurrent_source(output)))
    return found


def _out_of_loop(op: Any, label: str, body: Any, items: list[BodyNode],
                 controls: tuple[np.ndarray | None, np.ndarray | None] | None) -> None:
    """Each body tensor of ``items`` (and each If flag among them) as a concatenated output of the
    TensorIterator or Loop ``op``: one slice per iteration on a new leading axis; a Loop's
    ``controls`` (:func:`_constant_controls`) say whether it needs a flag saying it ran."""
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
        item.values = [value if isinstance(value, np.ndarray) else expose(value) for value in item.values]
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


def _constant_controls(op: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
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


def _recurrent_source(output: Any, hops: int = 8) -> str | None:
    """The friendly name of the recurrent node an output comes from through the layout ops a
    frontend puts after it (Transpose, Squeeze, Reshape: each op's first input), if within ``hops``."""
    node = output.get_node()
    for _ in range(hops):
        if node_spec(node) is not None:
            return node.get_friendly_name()
        if node.get_input_size() == 0:
            return None
        node = node.input_value(0).get_node()
    return None


def _named_outputs(model: Any, names: Sequence[str]) -> dict[str, Any]:
    """The output of an op of ``model`` (not a Result: it shares its source's names) that carries
    each of ``names``, where one does."""
    wanted, found = set(names), {}
    if not wanted:
        return found
    for op in model.get_ordered_ops():
        if op.get_type_name() == "Result":
            continue
        for output in op.outputs():
            for name in output.get_names() & wanted:
                found.setdefault(name, output)
    return found


def _neighbours(op: Any) -> tuple[str, ...]:
    """Where a node without tensor names sits: what feeds its data input and what reads its outputs."""
    def label(node: Any) -> str:
        names = node.output(0).get_names() if node.get_output_size() else set()
        name = sorted(names)[0] if names else node.get_friendly_name()
        return f"{node.get_type_name()} '{name}'"

    source = op.input_value(0).get_node()
    readers = {label(target.get_node()) for output in op.outputs() for target in output.get_target_inputs()}
    return (f"from {label(source)}",) + tuple(f"to {reader}" for reader in sorted(readers))


def id_of(output: Any) -> tuple[str, int]:
    """A key for one output of one node that survives wrapper objects: its node's name and index."""
    node = output.get_node()
    return (f"{node.get_type_name()}:{node.get_friendly_name()}", output.get_index())


def _body(op: Any) -> Any:
    for getter in ("get_function", "get_body"):
        if hasattr(op, getter):
            try:
                return getattr(op, getter)()
            except (RuntimeError, TypeError):
                continue
    return None


def input_arrays(node: RecurrentNode, inputs: Mapping[str, np.ndarray],
                 captured: Sequence[np.ndarray] = ()) -> list[np.ndarray]:
    """A node's input arrays in port order: constant data, the model's inputs, and the probed
    copy's outputs (none needed for a node fed by the model's inputs alone)."""
    arrays = []
    for feed in node.feeds:
        if feed.constant is not None:
            arrays.append(feed.constant)
        elif feed.parameter is not None:
            arrays.append(inputs[feed.parameter])
        else:
            arrays.append(captured[feed.probe])
    return arrays


def probed_arrays(node: RecurrentNode, inputs: Mapping[str, np.ndarray],
                  captured: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """A node's input arrays (port order) and output arrays, from the model's inputs and the
    probed copy's outputs."""
    return input_arrays(node, inputs, captured), [captured[index] for index in node.outputs]


def reached_iterations(node: RecurrentNode, captured: Sequence[np.ndarray]) -> list[tuple[int, ...]]:
    """The iterations (one index per loop around it) at which a body node ran: every index of its
    probed tensors' leading axes whose If flags say its branches were taken; ``[()]`` for a
    top-level node."""
    if not node.in_body:
        return [()]
    first = next((feed.probe for feed in node.feeds if feed.probe is not None), node.outputs[0] if node.outputs else None)
    return _reached(first, node.depth, node.conditions, captured)


def placement_iterations(placement: Placement, captured: Sequence[np.ndarray]) -> list[tuple[int, ...]]:
    """The iterations (one index per loop around it) at which a named tensor in a body was computed."""
    return _reached(placement.probe, placement.depth, placement.conditions, captured)


def _reached(first: int | None, depth: int, conditions: Sequence[Condition],
             captured: Sequence[np.ndarray]) -> list[tuple[int, ...]]:
    if first is None:
        return []
    leading = captured[first].shape[:depth]
    return [index for index in np.ndindex(*leading)
            if all(bool(np.asarray(captured[c.probe][index[:c.depth]]).reshape(-1)[0]) == c.then for c in conditions)]


def why_not_reached(conditions: Sequence[Condition], loops: Sequence[str], captured: Sequence[np.ndarray],
                    branches: Sequence[str] | None = None) -> str:
    """Which container kept a body node from running: an If branch not taken, a loop with no
    iteration; ``branches`` names the If branches in place of the conditions' own labels, and
    ``loops`` the loops."""
    ifs = [c for c in conditions if not c.loop]
    guards = [c for c in conditions if c.loop]
    names = {id(c): name for c, name in zip(ifs, branches)} if branches is not None and len(branches) == len(ifs) \
        else {}
    if len(loops) == len(guards):
        names.update((id(c), name) for c, name in zip(guards, loops))
    for condition in conditions:
        flags = np.asarray(captured[condition.probe]).reshape(-1)
        if flags.size and not (flags.astype(bool) == condition.then).any():
            return dataclasses.replace(condition, label=names.get(id(condition), condition.label)).says()
    return f"{' or '.join(loops) or 'its container'} ran no iteration where it is"


def iteration_arrays(node: RecurrentNode, inputs: Mapping[str, np.ndarray], captured: Sequence[np.ndarray],
                     index: tuple[int, ...]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """A node's input arrays (port order) and output arrays at one iteration (``()`` at the top level)."""
    arrays, actual = probed_arrays(node, inputs, captured)
    if not index:
        return arrays, actual
    return ([array if feed.probe is None else array[index] for feed, array in zip(node.feeds, arrays)],
            [array[index] for array in actual])
