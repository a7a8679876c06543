"""Stage 5 of the pipeline: every node of a prepared model judged on what the device computed
(irtool.judge.nodes, irtool.judge.onnx_nodes), the model's own outputs from the probed compile
against the plain one's (a plugin may fuse differently when a node's tensors are observed), the
expected outputs where given, and the model's verdict from all of them.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from irtool.core.precisions import largest_magnitude
from irtool.core.text import joined
from irtool.judge.compare import OutputDiff, TolerancePolicy, diff_outputs
from irtool.judge.expected import ExpectedJudgment, ExpectedOutputs, judge_expected, shape_mismatch
from irtool.judge.nodes import Reference, evaluate_node, judge_node
from irtool.judge.precision import Emulation, Ran, node_emulation
from irtool.judge.verdicts import FAIL, PASS, NodeResult, run_verdict, verdict_basis
from irtool.pipeline.device_run import Compiled, Executed
from irtool.pipeline.prepare import Prepared
from irtool.runtime.captured import input_arrays
from irtool.runtime.nodes import constant_magnitude
from irtool.runtime.nodes import RecurrentNode


@dataclass(frozen=True)
class ProbeCheck:
    """The model's own outputs from the probed compile against those of the unprobed one."""

    outputs: tuple[OutputDiff, ...]

    @property
    def passed(self) -> bool:
        return all(d.passed for d in self.outputs)


@dataclass(frozen=True)
class Judgment:
    verdict: str
    nodes: tuple[NodeResult, ...]
    probe_check: ProbeCheck | None
    outputs: tuple[OutputDiff, ...]  # a single-op model's node diffs, in model output order
    why_unjudged: str | None
    expected: ExpectedJudgment | None = None  # the model's outputs against the expected ones, where given
    node_verdict: str | None = None  # the nodes' verdict alone, where ``verdict`` is also the expected outputs'
    oracle: ExpectedJudgment | None = None  # the model's outputs against its framework runtime's (--compare-with)
    # what the verdict rests on: "outputs" where a comparison of them decided a pass that some node
    # not judged on its own would have kept from it (irtool.judge.verdicts.verdict_basis), else "nodes"
    verdict_from: str = "nodes"


def judge(prepared: Prepared, inputs: Mapping[str, np.ndarray], executed: Executed, policy: TolerancePolicy,
          precision: str, reference: Reference | None = None, expected: ExpectedOutputs | None = None,
          oracle: ExpectedOutputs | None = None, runs: Mapping[str, Ran] | None = None,
          dynamic_quantization: int | None = None, weights_cost: Mapping[int, float] | None = None) -> Judgment:
    """Every node judged on what the device computed, and the model's outputs against ``expected``
    and ``oracle`` (a framework runtime's outputs) where given (irtool.judge.expected); the
    verdict from all of them by the one rule (irtool.judge.verdicts.run_verdict): where the model's
    outputs were judged whole, a node not judged on its own is listed, and a failing one still
    fails.  ``runs`` (Compiled.runs): per node name, what it ran as, which
    says the rounding of the path it ran at bf16 or f16 (irtool.judge.precision).  A node fed straight by an input the device narrowed
    (int64 run as int32) is judged on the values it received.  ``dynamic_quantization``: the CPU's
    DYNAMIC_QUANTIZATION_GROUP_SIZE on the compiled model (DeviceRun), for the cells whose weights are
    stored as integers (irtool.judge.quantized).  ``weights_cost``: per model output, what moving its f16
    or bf16 weights within their rounding moves it by (irtool.pipeline.device_run.weights_rounding_cost)."""
    emulations = node_emulations(prepared, runs or {})
    judgment = _judge_nodes(prepared, {**inputs, **executed.received}, executed, policy, precision, reference,
                            emulations, dynamic_quantization)
    found = {}
    costs = flowing = None
    for key, given in (("expected", expected), ("oracle", oracle)):
        if given is not None:
            if costs is None:
                costs = _rounding_costs(prepared, inputs, executed, emulations, reference or evaluate_node)
            if flowing is None:
                flowing = _flowing_magnitude(prepared, inputs, executed)
            mismatch = shape_mismatch(prepared.labels, executed.outputs, given,
                                      prepared.onnx.declared_shapes() if prepared.onnx is not None else None) \
                if key == "expected" else None
            if mismatch is not None:  # the user's file does not match the model: nothing to compare
                found[key] = ExpectedJudgment(given.source, (), mismatch=mismatch)
                continue
            found[key] = judge_expected(prepared.labels, executed.outputs, given, policy, precision,
                                        time_axes(prepared), prepared.stored, costs, flowing, weights_cost)
    if not found:
        return judgment
    compared = [found[key].outputs for key in found if found[key].mismatch is None]
    if not compared:
        return dataclasses.replace(judgment, **found)
    verdict = run_verdict(judgment.nodes, judgment.probe_check is None or judgment.probe_check.passed, compared)
    return dataclasses.replace(judgment, **found, node_verdict=judgment.verdict, verdict=verdict,
                               verdict_from=verdict_basis(judgment.nodes, compared))


def _flowing_magnitude(prepared: Prepared, inputs: Mapping[str, np.ndarray], executed: Executed) -> float:
    """The largest magnitude flowing through the model, as far as a run sees it: its float inputs,
    its weights (float constants) and the intermediate tensors the probed compile read (the
    recurrent nodes' inputs and outputs), what the floor of its outputs' bound scales with."""
    arrays = list(inputs.values()) + list(executed.captured[len(executed.outputs):])
    return max([constant_magnitude(prepared.model)] + [largest_magnitude(array) for array in arrays])


def node_emulations(prepared: Prepared, runs: Mapping[str, Ran]) -> dict[str, Emulation]:
    """Per judged node's key, the emulation of the path it ran (a node in a body: its container's run,
    with its own attributes); a cell a converter lowered to plain ops runs as a decomposed cell does,
    but where its layers round is not known: the decomposed path's emulation bounds it (bound_only)."""
    found = {}
    anywhere = next(iter(runs.values()), None)  # the device and precision of the run
    for node in prepared.nodes:
        if node.lowered is not None:  # plain ops: FullyConnected layers and element-wise Subgraphs
            lowered = dataclasses.replace(anywhere, kinds=("Subgraph",), split=False) if anywhere else None
            emulated = node_emulation(lowered, node.spec.type, node.attributes, constant_weights=False)
            if emulated is not None:
                found[node.key] = dataclasses.replace(emulated, bound_only=True)
            continue
        constant = all(feed.constant is not None for feed in node.feeds if feed.port.name in ("W", "R", "B"))
        dynamic = any(feed.dynamic for feed in node.feeds if feed.port.name == "X")
        emulated = node_emulation(runs.get(node.container if node.in_body else node.name), node.spec.type,
                                  node.attributes, constant, dynamic, _f16_model(prepared, node))
        if emulated is not None:
            found[node.key] = emulated
    return found


def _f16_model(prepared: Prepared, node: RecurrentNode) -> bool:
    """Whether a node computes in its model's f16: its X is a model input of element type f16 (the
    precision model's ``f16_model``: such inputs reach a CPU kernel at bf16 through a conversion of
    their own, and its f16 outputs hold f16 roundings)."""
    f16 = {name for info in prepared.infos if info.element_type == "f16" for name in {info.name, *info.names}}
    return any(feed.port.name == "X" and feed.parameter in f16 for feed in node.feeds)


def _rounding_costs(prepared: Prepared, inputs: Mapping[str, np.ndarray], executed: Executed,
                    emulations: Mapping[str, Emulation], reference: Reference) -> dict[int, tuple[np.ndarray, str]]:
    """Per model output of a single-op model run at bf16 or f16 on a path the precision model knows,
    the whole bound its expected values (a framework's, in f32) are held to: what the device's
    rounding moved it by on these inputs (the device against the ideal reference, element by element:
    the node's own verdict judges that rounding step by step against the emulation of its path), plus
    the path's bound.  So the model-level verdict says whether the model computes what its framework
    does, and the node's whether the device computes the model: a recurrence that amplifies a
    one-unit difference of rounding into a large one fails neither."""
    single = prepared.single
    emulation = emulations.get(single.key) if single is not None else None
    if emulation is None:
        return {}
    arrays = input_arrays(single, inputs, executed.captured)
    try:
        ideal = reference(single, arrays)
    except ValueError:
        return {}
    atol, rtol, _ = emulation.bound()
    how = (f"each output allowed what the device's {emulation.path.precision} rounding moved it by on these inputs "
           f"(the device against the ideal reference, which the node's verdict judges step by step against "
           f"{emulation.describe().split(':')[0]}) plus {emulation.path.id}'s bound")
    costs = {}
    for port, index in (single.model_outputs or {}).items():
        want = ideal[port].astype(np.float64)
        moved = np.abs(executed.outputs[index].astype(np.float64) - want)
        costs[index] = (np.where(np.isfinite(moved), moved, 0.0) + atol + rtol * np.abs(want), how)
    return costs


def time_axes(prepared: Prepared) -> dict[int, int]:
    """Model output index -> its time axis, for the outputs that are a top-level recurrent node's
    output with one (what the expected outputs' per-step errors are measured along)."""
    axes = {}
    for node in prepared.nodes:
        for port, index in (node.model_outputs or {}).items() if not node.in_body else ():
            axis = node.spec.time_axis(node.spec.outputs[port])
            if axis is not None:
                axes.setdefault(index, axis)
    return axes


def _judge_nodes(prepared: Prepared, inputs: Mapping[str, np.ndarray], executed: Executed, policy: TolerancePolicy,
                 precision: str, reference: Reference | None, emulations: Mapping[str, Emulation],
                 dynamic_quantization: int | None = None) -> Judgment:
    reference = reference or evaluate_node
    probe_check = None
    if executed.captured is not executed.outputs:
        count = len(executed.outputs)
        probe_check = ProbeCheck(diff_outputs(prepared.labels, executed.captured[:count], executed.outputs, policy,
                                              precision))
    if prepared.onnx is not None:
        from irtool.judge.onnx_nodes import judge_onnx_nodes

        # and the cells OpenVINO's graph holds lowered to plain ops (an LSTM written out, unrolled into Gemms)
        nodes = unique_node_names(list(judge_onnx_nodes(prepared.onnx, prepared.probed, inputs, executed.captured,
                                                        policy, precision,
                                                        {node.name: emulations[node.key] for node in prepared.nodes
                                                         if node.key in emulations})) +
                                  [judge_node(node, inputs, executed.captured, policy, precision, reference,
                                              dynamic_quantization=dynamic_quantization)
                                   for node in prepared.nodes if node.lowered is not None])
        return Judgment(_nodes_verdict(nodes, probe_check), nodes, probe_check, (),
                        _why_unjudged(prepared, nodes))
    nodes = unique_node_names(judge_node(node, inputs, executed.captured, policy, precision, reference,
                                         emulations.get(node.key), dynamic_quantization) for node in prepared.nodes)
    outputs: tuple[OutputDiff, ...] = ()
    single = prepared.single
    if single is not None and nodes[0].outputs:
        by_port = {d.name: d for d in nodes[0].outputs}
        ports = {index: port for port, index in (single.model_outputs or {}).items()}
        outputs = tuple(by_port[single.spec.outputs[ports[k]].name] for k in range(len(executed.outputs)) if k in ports)
    return Judgment(_nodes_verdict(nodes, probe_check), nodes, probe_check, outputs, _why_unjudged(prepared, nodes))


def unique_node_names(nodes: Iterable[NodeResult]) -> tuple[NodeResult, ...]:
    """The nodes, each under a name of its own (irtool.core.names.unique_names); a renamed one remembers the
    node it runs as."""
    from irtool.core.names import unique_names

    nodes = list(nodes)
    return tuple(node if name == node.name else dataclasses.replace(node, name=name,
                                                                     converted_to=node.converted_to or node.name)
                 for node, name in zip(nodes, unique_names([node.name for node in nodes])))


def with_implementations(judgment: Judgment, compiled: Compiled) -> Judgment:
    """The judgment with what the device ran for each node (from the unprobed compile)."""
    import dataclasses

    def described(node: NodeResult) -> str | None:
        found = compiled.implementations.get(node.container or node.runs_as)
        if node.container and (found is None or not found.layer_types):  # the device folded its container
            found = compiled.implementations.get(node.runs_as)
            return found.describe() if found is not None and found.layer_types else None
        if found is None or not node.container:
            return found.describe() if found is not None else None
        # the container's own precision and form say nothing of the node inside it: its layer only
        return f"in {'+'.join(dict.fromkeys(found.layer_types))}" if found.layer_types else None

    nodes = tuple(dataclasses.replace(node, implementation=described(node)) if described(node) else node
                  for node in judgment.nodes)
    return dataclasses.replace(judgment, nodes=nodes)


def _why_unjudged(prepared: Prepared, nodes: Sequence[NodeResult]) -> str | None:
    if any(node.verdict in (PASS, FAIL) for node in nodes):
        return None
    if not nodes:
        if prepared.onnx is not None:
            return "the ONNX graph has no GRU, LSTM or RNN node, nor a cell lowered to plain ops that irtool recognizes"
        return "the model has no node of the recurrent family (GRU, LSTM, RNN sequences and cells), nor a cell " \
               "lowered to plain ops that irtool recognizes"
    return joined((f"{node.name}: {node.reason}" for node in nodes), "; ")


def _nodes_verdict(nodes: Sequence[NodeResult], probe_check: ProbeCheck | None) -> str:
    """The nodes' verdict alone (irtool.judge.verdicts.run_verdict with no comparison)."""
    return run_verdict(nodes, probe_check is None or probe_check.passed)
