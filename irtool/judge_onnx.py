"""Judging the GRU, LSTM and RNN nodes of an ONNX model in ONNX semantics (``irtool run model.onnx``).

OpenVINO's ONNX frontend converts each node to OpenVINO ops (a GRUSequence among
Transposes, Reshapes and Concats); judging those in OpenVINO semantics would judge the
device, not what the frontend did.  Here each ONNX node is judged as its ONNX page defines it:

- its inputs: initializers and Constant nodes from the ONNX file, graph inputs from the
  run's inputs, and tensors computed on the way from the converted model, whose ops keep the
  ONNX tensor names on their outputs (irtool.runtime.nodes exposes them in the probed copy);
- its expected outputs: irtool's reference in ONNX semantics
  (irtool.onnx.evaluate.evaluate_model_node) on those inputs;
- its actual outputs: the converted model's tensors that carry the node's output names.

A tensor whose name did not survive the conversion cannot be read; the node is then not
judged, and the reason names the tensor.  A failing node's reason adds what the frontend is
known to get wrong for it (irtool.onnx.graph) and, for a bidirectional node, which direction
is off.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from irtool.compare import OutputDiff, TolerancePolicy, compare_output
from irtool.execute import ERROR, FAIL, PASS, UNJUDGED, NodeResult, output_tolerance
from irtool.onnx.graph import OnnxGraph, OnnxNode

ROLES = ("Y", "Y_h", "Y_c")
SEMANTICS = "ONNX"
LOST = "carries its name nowhere in the converted model (OpenVINO's frontend did not keep it), so it cannot be read"


def judge_onnx_nodes(graph: OnnxGraph, tensors: Mapping[str, int], inputs: Mapping[str, np.ndarray],
                     captured: Sequence[np.ndarray], policy: TolerancePolicy, precision: str) -> tuple[NodeResult, ...]:
    """Every recurrent node of ``graph`` judged; ``tensors`` maps a tensor name to its index among
    ``captured`` (the probed copy's outputs)."""
    names = {name for node in graph.nodes for name in node.proto.input if name}
    values = {**graph.initializer_values(names), **{n: a for n, a in inputs.items() if n in names}}
    values.update({name: captured[index] for name, index in tensors.items()})
    return tuple(judge_onnx_node(node, graph.opset, values, policy, precision) for node in graph.nodes)


def judge_onnx_node(node: OnnxNode, opset: int, values: Mapping[str, np.ndarray], policy: TolerancePolicy,
                    precision: str) -> NodeResult:
    from irtool.onnx.evaluate import evaluate_model_node

    outputs = [name for name in node.proto.output if name]
    head = dict(name=node.name, type=node.op_type, version=node.version, where=f"ONNX graph node {node.index}",
                tensors=tuple(outputs), semantics=SEMANTICS)
    lost = [name for name in node.proto.input if name and name not in values]
    if lost:
        return NodeResult(**head, verdict=UNJUDGED, reason=f"its input '{lost[0]}' {LOST}")
    dropped = [name for name in outputs if name not in values]
    outputs = [name for name in outputs if name in values]
    if not outputs:
        return NodeResult(**head, verdict=UNJUDGED, reason=f"its outputs {', '.join(dropped)}: {LOST}")
    note = f"{', '.join(dropped)} not judged: {LOST} (no op reads it)" if dropped else None
    try:
        expected = evaluate_model_node(node.proto, opset, values)
    except ValueError as error:
        return NodeResult(**head, verdict=ERROR, reason=f"the reference refuses it: {error}")
    roles = {name: ROLES[k] for k, name in enumerate(node.proto.output) if name}
    diffs = tuple(compare_output(name, values[name], expected[name],
                                 output_tolerance(policy, (f"{node.name}:{name}", name, f"{node.name}:{roles[name]}",
                                                           roles[name]), precision, values[name].dtype),
                                 node.layout if roles[name] == "Y" else None)
                  for name in outputs)
    failed = [d for d in diffs if not d.passed]
    if not failed:
        return NodeResult(**head, verdict=PASS, reason=note, outputs=diffs)
    reason = "outside tolerance: " + ", ".join(
        f"{d.name} (max abs {d.max_abs:.3g}, {d.outside}/{d.total})" if not d.problem else f"{d.name} ({d.problem})"
        for d in failed)
    halves = _directions(node, roles, failed, values, expected, policy, precision)
    limits = node.frontend_limits(values)
    reason += "".join(f"; {text}" for text in [halves] + limits + [note] if text)
    return NodeResult(**head, verdict=FAIL, reason=reason, outputs=diffs)


def _directions(node: OnnxNode, roles: Mapping[str, str], failed: Sequence[OutputDiff], values: Mapping[str, Any],
                expected: Mapping[str, np.ndarray], policy: TolerancePolicy, precision: str) -> str | None:
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
