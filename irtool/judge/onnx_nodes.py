"""Judging the GRU, LSTM and RNN nodes of an ONNX model in ONNX semantics (``irtool run model.onnx``).

OpenVINO's ONNX frontend converts each node to OpenVINO ops (a GRUSequence among
Transposes, Reshapes and Concats); judging those in OpenVINO semantics would judge the
device, not what the frontend did.  Here each ONNX node is judged as its ONNX page defines it:

- its inputs: initializers and Constant nodes from the ONNX file, graph inputs from the
  run's inputs, and tensors computed on the way from the converted model, whose ops keep the
  ONNX tensor names on their outputs (irtool.runtime.probe exposes them in the probed copy);
- its expected outputs: irtool's reference in ONNX semantics
  (irtool.onnx.evaluate.evaluate_model_node) on those inputs;
- its actual outputs: the converted model's tensors that carry the node's output names.

A node inside an If branch or a Loop or Scan body (at any depth) is judged the same way at
every iteration it ran: OpenVINO's bodies keep the ONNX tensor names too, and the probed copy
exposes them through the containers' outputs (one leading axis per loop around them); a tensor
of an enclosing graph (an outer-scope value, an initializer) is the same at each iteration.  A
node in a branch not taken, or in a loop that ran no iteration, is "not reached".

A tensor whose name did not survive the conversion cannot be read; the node is then not
judged, and the reason names the tensor.  A failing node's reason adds what the frontend is
known to get wrong for it (irtool.onnx.graph) and, for a bidirectional node, which direction
is off.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from irtool.judge import known_faults
from irtool.judge.compare import OutputDiff, Tolerance, TolerancePolicy, compare_output, output_tolerance
from irtool.judge.precision import Emulation
from irtool.judge.verdicts import ERROR, FAIL, PASS, UNJUDGED, NodeResult, iteration_words
from irtool.onnx.graph import OnnxGraph, OnnxNode
from irtool.onnx.shapes import INPUT_ORDER, OUTPUT_ORDER, input_dims, output_dims
from irtool.runtime.captured import placement_iterations, why_not_reached
from irtool.runtime.nodes import Placement

ROLES = OUTPUT_ORDER
SEMANTICS = "ONNX"
LOST = "carries its name nowhere in the converted model (OpenVINO's frontend did not keep it), so it cannot be read"


def judge_onnx_nodes(graph: OnnxGraph, probed: Any, inputs: Mapping[str, np.ndarray],
                     captured: Sequence[np.ndarray], policy: TolerancePolicy, precision: str,
                     emulations: Mapping[str, Emulation] | None = None) -> tuple[NodeResult, ...]:
    """Every recurrent node of ``graph`` (main graph, then subgraphs) judged; ``probed``
    (irtool.runtime.nodes.ProbedModel) says where each ONNX tensor is among ``captured`` (the
    probed copy's outputs) and which OpenVINO node computes it.  ``emulations``: per OpenVINO node
    name, the emulation of the precision path it ran (irtool.pipeline.judging.node_emulations): a
    main-graph node the frontend converted to one that ran at bf16 or f16 is judged against it, as
    that OpenVINO node is (a node in a body keeps the ideal reference with the precision's default
    tolerance)."""
    values = _known_values(graph, probed, inputs, captured)
    results = []
    for node in graph.all_nodes:
        placed = _placed(node, probed, values)
        converted = next((source for n in node.proto.output
                          if (source := placed[n].source if n in placed else probed.sources.get(n))), None)
        if node.in_body and placed:
            result = _judge_in_body(node, graph.opset, values, placed, captured, policy, precision)
        else:  # a main-graph node, or one OpenVINO keeps in no body (an If of a constant condition is inlined)
            emulated = (emulations or {}).get(converted) if converted else None
            result = judge_onnx_node(node, graph.opset, values, policy, precision, emulated)
        results.append(dataclasses.replace(result, converted_to=converted) if converted else result)
    return tuple(results)


def _known_values(graph: OnnxGraph, probed: Any, inputs: Mapping[str, np.ndarray],
                  captured: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """The tensors the nodes read that are the same at every iteration: initializers and Constants,
    graph inputs, and the main graph's tensors the probed copy exposed."""
    names = {name for node in graph.all_nodes for name in node.proto.input if name}
    values = {**graph.initializer_values(names), **{n: a for n, a in inputs.items() if n in names}}
    values.update({name: captured[index] for name, index in probed.tensors.items()})
    return values


def _placed(node: OnnxNode, probed: Any, values: Mapping[str, np.ndarray]) -> dict[str, Placement]:
    """Where each of a node's tensors that changes per iteration sits in the probed copy."""
    return {name: probed.placed[name] for name in [*node.proto.input, *node.proto.output]
            if name in probed.placed and name not in values}


def node_values(graph: OnnxGraph, node: OnnxNode, probed: Any, inputs: Mapping[str, np.ndarray],
                captured: Sequence[np.ndarray], iteration: tuple[int, ...] | None) -> dict[str, np.ndarray]:
    """The values of a node's input and output tensors (by ONNX name) as it was judged: at
    ``iteration`` (the loops around it, outermost first) for a node in a body, each at its ONNX rank."""
    values = _known_values(graph, probed, inputs, captured)
    placed = _placed(node, probed, values)
    if node.in_body and placed and iteration:
        values.update(_at_iteration(placed, captured, iteration, _ranks(node)))
    return {name: values[name] for name in [*node.proto.input, *node.proto.output] if name and name in values}


def _judge_in_body(node: OnnxNode, opset: int, values: Mapping[str, np.ndarray], placed: Mapping[str, Placement],
                   captured: Sequence[np.ndarray], policy: TolerancePolicy, precision: str) -> NodeResult:
    """A node in a subgraph, judged at every iteration it ran (each iteration as a main-graph node is,
    its body tensors at that iteration); the result is that of the first iteration not within
    tolerance, else of the one farthest from the reference, with how many were judged."""
    anchor = next(placed[name] for name in [*node.proto.output, *node.proto.input] if name in placed)
    head = dict(name=node.name, type=node.op_type, version=node.version, where=node.where,
                tensors=tuple(name for name in node.proto.output if name), semantics=SEMANTICS,
                container=anchor.container)
    never = next((p.never for p in placed.values() if p.never), None)
    if never:
        return NodeResult(**head, verdict=UNJUDGED, reason=f"not reached on these inputs ({never})", reached=False)
    unprobed = next((p.unprobed for p in placed.values() if p.unprobed), None)
    if unprobed:
        return NodeResult(**head, verdict=UNJUDGED, reason=f"not judged ({unprobed})")
    loops = node.loops if len(node.loops) == anchor.depth else anchor.loops
    indices = placement_iterations(anchor, captured)
    if not indices:
        why = why_not_reached(anchor.conditions, loops, captured, node.branches)
        return NodeResult(**head, verdict=UNJUDGED, reason=f"not reached on these inputs ({why})", reached=False)
    deeper = [name for name, p in placed.items() if p.depth > anchor.depth]
    if deeper:  # not seen in one iteration with the node: OpenVINO moved it into a loop the node is not in
        return NodeResult(**head, verdict=UNJUDGED, reason=f"its tensor '{deeper[0]}' is in a loop the node is not in")
    ranks = _ranks(node)
    chosen: tuple[tuple[int, ...], NodeResult] | None = None
    for index in indices:
        at = {**values, **_at_iteration(placed, captured, index, ranks)}
        result = judge_onnx_node(node, opset, at, policy, precision)
        if result.verdict != PASS:
            chosen = (index, result)
            break
        if chosen is None or (result.max_abs or 0.0) > (chosen[1].max_abs or 0.0):
            chosen = (index, result)
    index, result = chosen
    said = iteration_words(index, loops)
    reason = f"at {said}: {result.reason}" if said and result.reason and result.verdict in (FAIL, ERROR) \
        else result.reason
    return dataclasses.replace(result, reason=reason, container=anchor.container, iteration=index or None, at=said,
                               iterations=len(indices) if loops else None)


def _at_iteration(placed: Mapping[str, Placement], captured: Sequence[np.ndarray], index: tuple[int, ...],
                  ranks: Mapping[str, int]) -> dict[str, np.ndarray]:
    """A body node's tensors at one iteration (``index``: per loop around it), each at its ONNX rank."""
    return {name: _in_rank(p.constant if p.constant is not None else captured[p.probe][index[:p.depth]],
                           ranks.get(name)) for name, p in placed.items()}


def _ranks(node: OnnxNode) -> dict[str, int]:
    """The rank the ONNX page gives each of the node's input and output tensors, by tensor name."""
    dims = {**input_dims(node.op_type, node.layout), **output_dims(node.op_type, node.layout)}
    ports = list(zip(node.proto.input, INPUT_ORDER)) + list(zip(node.proto.output, ROLES))
    return {name: len(dims[port]) for name, port in ports if name and port in dims}


def _in_rank(array: np.ndarray, rank: int | None) -> np.ndarray:
    """A body tensor at its ONNX rank: a TensorIterator's sliced input keeps the sliced unit axis,
    where ONNX's Scan removes it (measured: x_t [1, 1, 2, 3] in the body for ONNX's [1, 2, 3], and
    [2, 1, 2, 3] for [2, 2, 3] with scan_input_axes [1]), and the frontend squeezes it after.  The
    leading unit axes go first; else the unit axes, where exactly as many as are extra."""
    extra = array.ndim - rank if rank is not None else 0
    if extra <= 0:
        return array
    if all(d == 1 for d in array.shape[:extra]):
        return array.reshape(array.shape[extra:])
    units = [axis for axis, d in enumerate(array.shape) if d == 1]
    return array.squeeze(axis=tuple(units)) if len(units) == extra else array


def judge_onnx_node(node: OnnxNode, opset: int, values: Mapping[str, np.ndarray], policy: TolerancePolicy,
                    precision: str, emulation: Emulation | None = None) -> NodeResult:
    """One node against the reference in ONNX semantics: the ideal one, or, where ``emulation`` is given
    (the precision path the OpenVINO node it became ran), the emulation of that path, each step from
    the device's own previous hidden state (its Y), held to the path's bound; the ideal reference is
    then compared too, for the report."""
    from irtool.onnx.evaluate import evaluate_model_node

    outputs = [name for name in node.proto.output if name]
    head = dict(name=node.name, type=node.op_type, version=node.version, where=node.where,
                tensors=tuple(outputs), semantics=SEMANTICS)
    lost = [name for name in node.proto.input if name and name not in values]
    if lost:
        return NodeResult(**head, verdict=UNJUDGED, reason=f"its input '{lost[0]}' {LOST}")
    dropped = [name for name in outputs if name not in values]
    outputs = [name for name in outputs if name in values]
    if not outputs:
        return NodeResult(**head, verdict=UNJUDGED, reason=f"its outputs {', '.join(dropped)}: {LOST}")
    note = f"{', '.join(dropped)} not judged: {LOST} (no op reads it)" if dropped else None
    roles = {name: ROLES[k] for k, name in enumerate(node.proto.output) if name}
    emulated = emulation is not None and not emulation.bound_only
    try:
        ideal = evaluate_model_node(node.proto, opset, values)
        expected = _emulated(node, opset, values, roles, emulation) if emulated else ideal
    except ValueError as error:
        return NodeResult(**head, verdict=ERROR, reason=f"the reference refuses it: {error}")
    derived = Tolerance(*emulation.bound()) if emulated else None

    def diffs_against(reference: Mapping[str, np.ndarray], bound: Tolerance | None) -> tuple[OutputDiff, ...]:
        return tuple(compare_output(name, values[name], reference[name],
                                    output_tolerance(policy, (f"{node.name}:{name}", name,
                                                              f"{node.name}:{roles[name]}", roles[name]),
                                                     precision, values[name].dtype, bound),
                                    node.layout if roles[name] == "Y" else None)
                     for name in outputs)
    diffs = diffs_against(expected, derived)
    if emulated:
        head.update(against=emulation.describe(), ideal=diffs_against(ideal, None))
    failed = [d for d in diffs if not d.passed]
    if not failed:
        return NodeResult(**head, verdict=PASS, reason=note, outputs=diffs)
    reason = "outside tolerance: " + ", ".join(
        f"{d.name} (max abs {d.max_abs:.3g}, {d.outside}/{d.total})" if not d.problem else f"{d.name} ({d.problem})"
        for d in failed)
    notes = tuple(text for text in [_directions(node, roles, failed, values, expected)]
                  + list(_hints(node, roles, values, expected, diffs)) if text)
    reason += "".join(f"; {text}" for text in notes + (note,) if text)
    return NodeResult(**head, verdict=FAIL, reason=reason, outputs=diffs, notes=notes)


def _emulated(node: OnnxNode, opset: int, values: Mapping[str, np.ndarray], roles: Mapping[str, str],
              emulation: Emulation) -> dict[str, np.ndarray]:
    """The emulation of the node's path in ONNX semantics, each step from the device's previous hidden
    state where its Y was read; of a path's two roundings, the one closer to what the device gave."""
    from irtool.onnx.evaluate import evaluate_model_node

    given = next((values[name] for name, role in roles.items() if role == "Y" and name in values), None)
    found = [evaluate_model_node(node.proto, opset, values, rounding=rounding, given_y=given)
             for rounding in (emulation.rounding, emulation.alternative) if rounding is not None]
    return min(found, key=lambda outputs: max(
        float(np.max(np.abs(values[name].astype(np.float64) - array), initial=0.0))
        for name, array in outputs.items() if name in values))


def _hints(node: OnnxNode, roles: Mapping[str, str], values: Mapping[str, Any], expected: Mapping[str, np.ndarray],
           diffs: Sequence[OutputDiff]) -> tuple[str, ...]:
    """The known OpenVINO faults (irtool.judge.known_faults) that this failing node's outputs, or what
    the node is, match."""
    inputs = list(node.proto.input)
    lengths = values.get(inputs[4]) if len(inputs) > 4 and inputs[4] else None
    tolerance = next((d.tolerance for d in diffs if roles.get(d.name) == "Y"), diffs[0].tolerance)
    by_role = {roles[name]: values[name] for name in roles if name in values}
    expected_by_role = {roles[name]: expected[name] for name in roles if name in expected}
    return known_faults.hints(known_faults.from_onnx(
        node.op_type, node.attributes, node.layout, None if lengths is None else np.asarray(lengths), by_role,
        expected_by_role, tolerance.atol, tolerance.rtol, node.frontend_properties(values)))


def _directions(node: OnnxNode, roles: Mapping[str, str], failed: Sequence[OutputDiff], values: Mapping[str, Any],
                expected: Mapping[str, np.ndarray]) -> str | None:
    """For a bidirectional node: which half is off ("the backward half (direction 1) is off: max
    abs 0.91; the forward half is within tolerance")."""
    if not node.bidirectional:
        return None
    off: dict[int, float] = {}
    for diff in failed:
        if diff.problem:
            continue
        axis = (1 if roles[diff.name] == "Y" else 0) + node.layout
        got, want = values[diff.name], expected[diff.name]
        for direction in (0, 1):
            half = compare_output(diff.name, np.take(got, direction, axis), np.take(want, direction, axis),
                                  diff.tolerance)
            if not half.passed:
                off[direction] = max(off.get(direction, 0.0), half.max_abs or 0.0)
    if not off:
        return None
    halves = {0: "the forward half (direction 0)", 1: "the backward half (direction 1)"}
    said = " and ".join(f"{halves[d]} is off (max abs {off[d]:.3g})" for d in sorted(off))
    return said + ("" if len(off) == 2 else f"; {halves[1 - next(iter(off))].split(' (')[0]} is within tolerance")


# ----------------------------------------------------------------------------- a second opinion

@dataclass(frozen=True)
class NodeOpinion:
    """onnxruntime's outputs of one node against irtool's reference on onnxruntime's own inputs of it."""

    name: str
    agrees: bool
    outputs: tuple[OutputDiff, ...]
    departures: tuple[str, ...] = ()  # the known departures of onnxruntime from the page for this node

    def describe(self) -> str:
        worst = max((d.max_abs for d in self.outputs if d.max_abs is not None), default=0.0)
        if self.agrees:
            return f"onnxruntime agrees with the ONNX spec (max abs {worst:.3g})"
        why = "; ".join(self.departures) or "no departure irtool knows of explains it"
        return f"onnxruntime departs from the ONNX spec (max abs {worst:.3g}): {why}"


@dataclass(frozen=True)
class SecondOpinion:
    """``--compare-with onnxruntime``: onnxruntime's outputs of each node against the spec (the model's
    outputs, OpenVINO's against onnxruntime's, are judged as expected ones: irtool.pipeline.oracle)."""

    tool: str  # "onnxruntime 1.32.0 (CPU)"
    refused: str | None = None  # onnxruntime would not run the model: why
    nodes: tuple[NodeOpinion, ...] = ()
    in_subgraphs: tuple[str, ...] = ()  # nodes of subgraphs, which onnxruntime cannot expose: no opinion


def second_opinion(graph: OnnxGraph, inputs: Mapping[str, np.ndarray],
                   policy: TolerancePolicy) -> tuple[SecondOpinion, dict[str, np.ndarray]]:
    """onnxruntime (CPU) on the same inputs: its opinion of each main-graph node (see
    :class:`SecondOpinion`), and the model's outputs it computed, by name."""
    from irtool.onnx.evaluate import evaluate_model_node
    from irtool.onnx.onnxruntime_run import OnnxruntimeRefused, available, departures, refusal_reason, run_onnxruntime

    feeds = {name: inputs[name] for name in graph.graph_inputs if name in inputs}
    tensors = graph.computed_tensors(bodies=False)
    version = available()
    tool = f"onnxruntime {version} (CPU)" if version else "onnxruntime"
    try:
        theirs = run_onnxruntime(graph.self_contained(), feeds, tensors)
    except OnnxruntimeRefused as error:
        return SecondOpinion(tool, refused=f"{error} ({refusal_reason(graph.nodes)})"), {}
    values = {**graph.initializer_values({n for node in graph.nodes for n in node.proto.input}), **feeds, **theirs}
    opinions = []
    for node in graph.nodes:
        try:
            expected = evaluate_model_node(node.proto, graph.opset, values)
        except ValueError:
            continue  # the node's own verdict already says the reference refuses it
        node_diffs = tuple(compare_output(name, theirs[name], want,
                                          output_tolerance(policy, (name,), "f32", want.dtype))
                           for name, want in expected.items() if name in theirs)
        agrees = all(d.passed for d in node_diffs)
        opinions.append(NodeOpinion(node.name, agrees, node_diffs, () if agrees else tuple(departures(node))))
    outputs = {output.name: theirs[output.name] for output in graph.model.graph.output if output.name in theirs}
    return SecondOpinion(tool, None, tuple(opinions), tuple(node.name for node in graph.body_nodes)), outputs
