"""The one pipeline that runs any model on an OpenVINO device and judges every recurrent node in it.

``irtool run``, the harness's workers and ``reduce`` all go through these stages (the
workers add only their caches):

1. :func:`prepare`: find the model's recurrent nodes and make the probed copy that exposes
   their inputs and outputs (irtool.runtime.nodes).
2. :func:`case_inputs`: load the inputs from an .npz, or make seeded ones whose dynamic dims
   are sized from the nodes they reach (irtool.runtime.sizes).
3. :func:`compile_prepared`: compile the model, and its probed copy when it needs one, with an
   explicit INFERENCE_PRECISION_HINT; read back what the device really runs at.
4. :func:`execute`: infer both on the same inputs.
5. :func:`judge`: irtool's reference on each node's captured inputs against its captured
   outputs; and the model's own outputs from the probed compile against the plain one's
   (a plugin may fuse differently when a node's tensors are observed).

:func:`run` is ``irtool run``: those stages after checking the device and precision, or,
with ``compare_with``, the model's outputs against a second device.  A step that cannot go
on raises :class:`RunError` with one line naming the file, input or device and what was
expected; nothing here prints or exits, and openvino is touched only through irtool.runtime.
"""
from __future__ import annotations

import dataclasses
import hashlib
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from irtool import known_faults
from irtool.cases import DataKind, generic_tensor, port_tensor, sequence_lengths
from irtool.compare import OutputDiff, TolerancePolicy, compare_output, loosest_precision, output_tolerance
from irtool.errors import IrtoolBug, RunError, RunSkipped, Unsupported, did_you_mean
from irtool.formats import model_format
from irtool.files import FileError, check_holds_no_input, check_not_input, writable_target
from irtool.text import joined
from irtool.judge_expected import ExpectedJudgment, ExpectedOutputs, judge_expected, load_expected
from irtool.npz import describe_dtype, write_npz
from irtool.runtime.compile import DeviceRun, compile_on, infer, support_note
from irtool.runtime.devices import check_device, list_devices, skip_reason
from irtool.runtime.model import InputInfo, model_inputs, read_model, tensor_name
from irtool.runtime.nodes import (ProbedModel, RecurrentNode, iteration_arrays, loop_controls, probe_model,
                                  reached_iterations, why_not_reached)
from irtool.runtime.what_ran import Implementation, what_ran
from irtool.shapes import format_shape
from irtool.verdicts import ERROR, FAIL, PASS, UNJUDGED, NodeResult, iteration_words


# A node's reference outputs from its input arrays (a worker passes a cached one).
Reference = Callable[[RecurrentNode, Sequence[np.ndarray]], tuple[np.ndarray, ...]]


# ----------------------------------------------------------------------------- 1. prepare

@dataclass(frozen=True)
class Prepared:
    """A model ready to run: the ov.Model, its recurrent nodes and probed copy, its inputs and
    output names."""

    model: Any
    name: str  # what messages call it (the file name)
    probed: ProbedModel
    infos: tuple[InputInfo, ...]
    labels: tuple[tuple[str, ...], ...]  # per model output: its names, the spec's port name first
    filled_defaults: tuple[str, ...] = ()
    onnx: Any = None  # an .onnx model's irtool.onnx.graph.OnnxGraph: its nodes are judged in ONNX semantics

    @property
    def nodes(self) -> tuple[RecurrentNode, ...]:
        return self.probed.nodes

    @property
    def node_names(self) -> tuple[str, ...]:
        """The names of the nodes a run judges: an .onnx model's ONNX nodes (its subgraphs' too), else
        the recurrent nodes OpenVINO holds."""
        if self.onnx is not None:
            return tuple(node.name for node in self.onnx.all_nodes)
        return tuple(node.key for node in self.nodes)

    @cached_property
    def single(self) -> RecurrentNode | None:
        """The node of a model that is one recurrent node fed by its inputs and Consts (what
        ``irtool build`` writes), else None; read from the graph once (a worker asks per job)."""
        nodes = self.probed.nodes
        if len(nodes) != 1 or not nodes[0].fed_by_model_inputs:
            return None
        ops = {op.get_type_name() for op in self.probed.model.get_ordered_ops()}
        return nodes[0] if ops <= {"Parameter", "Constant", "Convert", "Result", nodes[0].spec.type} else None


def prepare(model: Any, name: str, filled_defaults: tuple[str, ...] = (), onnx: Any = None,
            generated_names: bool = False) -> Prepared:
    """``onnx``: the OnnxGraph the model was converted from; its recurrent nodes' tensors are
    probed by their ONNX names, and those nodes are what :func:`judge` judges.  ``generated_names``:
    a frontend converted the model in this process, and names OpenVINO made by its counter are
    keyed by the node's place (irtool.runtime.nodes.stable_keys)."""
    # an ONNX model's nodes in subgraphs are judged as ONNX nodes, through their tensors' ONNX names
    # in OpenVINO's bodies: the nodes OpenVINO converted them to there need no probes of their own
    probed = probe_model(model, onnx.computed_tensors() if onnx is not None else (), generated_names,
                         body_nodes=onnx is None)
    single = probed.nodes[0] if len(probed.nodes) == 1 and probed.nodes[0].fed_by_model_inputs else None
    return Prepared(model, name, probed, tuple(model_inputs(model)),
                    tuple(output_labels(model, single if onnx is None else None)), filled_defaults, onnx)


def prepare_equivalent(judged: Any, runs: Any, name: str) -> Prepared:
    """A model that runs in place of a single-op model it computes the same as (a cell decomposed
    into plain ops): the device compiles and runs ``runs``, whose outputs are judged as those of
    ``judged``'s node, on the same inputs.  The two must have the same inputs and outputs."""
    prepared = prepare(judged, name)
    same_inputs = [p.get_friendly_name() for p in judged.get_parameters()] == \
        [p.get_friendly_name() for p in runs.get_parameters()]
    if prepared.single is None or not same_inputs or len(judged.outputs) != len(runs.outputs):
        raise IrtoolBug(f"{name}: the model run in its place does not have its inputs and outputs")
    return dataclasses.replace(prepared, model=runs)


def read_and_prepare(path: str | Path, fill_defaults: bool = False,
                     shapes: Mapping[str, Sequence[int]] | None = None,
                     inputs_file: str | Path | None = None) -> Prepared:
    """A model file read and prepared; ``shapes`` and the arrays of ``inputs_file`` give its input
    shapes to a frontend that converts it only with them (irtool.runtime.model.read_model)."""
    graph = None
    if Path(path).suffix.lower() == ".onnx":
        from irtool.ir.parse import DEFAULT_MAX_BYTES
        from irtool.onnx.graph import load_graph
        from irtool.runtime.model import check_model_path

        check_model_path(Path(path))
        graph = load_graph(path, DEFAULT_MAX_BYTES)
    try:
        loaded = read_model(path, fill_defaults, lambda: conversion_shapes(shapes, inputs_file))
    except RunError as error:
        raise _onnx_failure(graph, error) from None
    found = model_format(path)
    return prepare(loaded.model, loaded.path.name, loaded.filled_defaults, graph,
                   generated_names=found is not None and found.frontend != "ir")


def conversion_shapes(shapes: Mapping[str, Sequence[int]] | None,
                      inputs_file: str | Path | None) -> dict[str, tuple[int, ...]]:
    """Input shapes for a conversion that needs them: the arrays' of ``inputs_file``, ``shapes``
    (--shape) over them."""
    found: dict[str, tuple[int, ...]] = {}
    if inputs_file is not None:
        from irtool.npz import read_npz

        found.update((key, tuple(array.shape)) for key, array in read_npz(Path(inputs_file), "inputs file").items())
    found.update((key, tuple(shape)) for key, shape in (shapes or {}).items())
    return found


def prepare_onnx(model: Any, name: str) -> Prepared:
    """An onnx.ModelProto held in memory (a harness case of the onnx frontend), read by OpenVINO's
    ONNX frontend; ``name`` is what messages call it."""
    from irtool.onnx.graph import graph_of
    from irtool.runtime.model import read_onnx_bytes

    graph = graph_of(model, Path(name))
    try:
        converted = read_onnx_bytes(model.SerializeToString(), name)
    except RunError as error:
        raise _onnx_failure(graph, error) from None
    return prepare(converted, name, (), graph)


def _onnx_failure(graph: Any, error: RunError) -> RunError:
    """An ONNX model OpenVINO could not read or compile: the activations it does not implement,
    named, when the nodes use any (an unsupported feature, not a wrong result); else the error
    with the frontend's known faults for its nodes (layout=1 read as layout 0 makes dims clash)."""
    said = graph.unsupported() if graph is not None else None
    if not said and isinstance(error, Unsupported):  # an op this release's ONNX frontend cannot convert
        return error
    if not said:
        limits = [f"node '{node.name}' ({node.key}): {limit}" for node in graph.all_nodes
                  for limit in node.frontend_limits({})] if graph is not None else []
        return RunError(f"{error.message}; known faults of OpenVINO's ONNX frontend that may explain it: "
                        f"{'; '.join(limits)}") if limits else error
    tail = error.message
    for marker in ("CALLBACK HAS THROWN: ", "with a message: "):  # compile's, then the frontend's
        tail = tail.rpartition(marker)[2]
    return Unsupported(f"{graph.path}: {said} (OpenVINO: {tail})")


# ----------------------------------------------------------------------------- 2. inputs

def case_inputs(prepared: Prepared, inputs_file: str | Path | None = None, seed: int = 0,
                shapes: Mapping[str, Sequence[int]] | None = None, sizes: Mapping[str, int] | None = None,
                data: DataKind = DataKind()) -> tuple[dict[str, np.ndarray], dict[str, str], list[str]]:
    """The inputs of a run: the arrays, how dynamic dims were sized (input -> how), and notes
    on what was converted (an .npz of float64 for an f32 input)."""
    if inputs_file is not None:
        arrays, notes = load_inputs(inputs_file, prepared)
        return arrays, {}, notes
    arrays, chosen = generate_inputs(prepared, seed, shapes or {}, sizes or {}, data)
    return arrays, chosen, []


def seeded_inputs(model: Any, seed: int = 0, sizes: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
    """The seeded inputs ``irtool run`` would make for an ov.Model (for scripts and benchmarks)."""
    return case_inputs(prepare(model, "model"), seed=seed, sizes=sizes)[0]


def generate_inputs(prepared: Prepared, seed: int, shapes: Mapping[str, Sequence[int]],
                    sizes: Mapping[str, int], data: DataKind = DataKind()) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Seeded inputs for any model: each dynamic dim sized so that the recurrent nodes are valid
    (``sizes`` for batch_size and seq_length, else each node's spec's defaults); an input that a
    node takes directly gets data for its port's role (weights scaled by hidden_size), one that
    feeds sequence lengths valid lengths (ragged, unless ``data`` asks for others), any other
    uniform floats or small ints (a Loop's trip count at least 1, its condition true)."""
    from irtool.memory import check_memory
    from irtool.runtime.sizes import plan_inputs

    try:
        plan = plan_inputs(prepared.model, shapes, sizes, prepared.name)
    except RunError as error:
        if prepared.node_names:
            raise
        raise RunSkipped(f"{prepared.name} has no recurrent node to judge, so irtool does not size its dynamic "
                         f"inputs ({error.message})") from None
    # float64 draws before the cast, then the array itself
    check_memory(sum(int(np.prod(plan.shapes[info.name], dtype=np.float64)) * (8 + info.dtype.itemsize)
                     for info in prepared.infos), f"the inputs of {prepared.name}")
    roles = {}
    for node in prepared.probed.judgeable:
        symbols = node.spec.attribute_symbols(node.spec.fill_defaults(node.spec.typed_attributes(node.attributes)))
        for feed in node.feeds:
            if feed.parameter is not None:
                roles.setdefault(feed.parameter, (feed.port, symbols, node.spec.time_symbol))
    rng = np.random.default_rng(seed)
    arrays = {}
    controls = loop_controls(prepared.model)
    for info in prepared.infos:
        shape = plan.shapes[info.name]
        if controls.get(info.name) == "trip":  # 2: a state carried once, within what most bodies index
            arrays[info.name] = np.full(shape, 2, info.dtype)
        elif controls.get(info.name) == "condition":
            arrays[info.name] = np.ones(shape, info.dtype)
        elif info.name in plan.lengths:
            arrays[info.name] = sequence_lengths(shape, plan.lengths[info.name], rng, data.lengths).astype(info.dtype)
        elif info.name in roles:
            port, symbols, time_symbol = roles[info.name]
            arrays[info.name] = port_tensor(port.role, shape, info.dtype, rng, symbols, time_symbol, data)
        else:
            arrays[info.name] = generic_tensor(shape, info.dtype, rng)
    return arrays, dict(plan.chosen)


def load_inputs(path: str | Path, prepared: Prepared) -> tuple[dict[str, np.ndarray], list[str]]:
    """Inputs from an .npz whose keys are the model's input names, checked against the model.

    Every problem is reported at once.  numpy's default float64 and int64 arrays are converted
    to the model's f32/f16 and i32 where every value fits (and the notes say so); values that
    do not fit, NaN or Inf in integer-valued inputs, and sequence lengths outside
    1..seq_length are refused.
    """
    from irtool.npz import read_npz

    path = Path(path)
    stored = read_npz(path, "inputs file")
    infos = prepared.infos
    arrays, used, problems, notes = {}, set(), [], []
    for info in infos:
        key = next((k for k in stored if k in info.names), None)
        if key is None:
            problems.append(f"no array for input {info.name} (expected {info.describe()})")
            continue
        used.add(key)
        array = stored[key]
        if not info.accepts(array.shape):
            problems.append(f"input {info.name} has shape {list(array.shape)}, expected {format_shape(info.dims)}")
            continue
        converted, problem = _convert(array, info.dtype)
        if problem:
            problems.append(f"input {info.name}: {problem}")
            continue
        if converted.dtype != array.dtype:
            notes.append(f"{info.name}: {describe_dtype(array.dtype)} converted to {info.dtype.name} (every value fits)")
        arrays[info.name] = converted
    extra = sorted(set(stored) - used)
    if extra:
        problems.append(f"{'arrays' if len(extra) > 1 else 'array'} {', '.join(extra)} "
                        f"{'match' if len(extra) > 1 else 'matches'} no model input")
    if not problems:
        problems += _length_problems(prepared, arrays)
    if problems:
        names = ", ".join(f"{info.name} {info.describe()}" for info in infos)
        raise RunError(f"{path}: {'; '.join(problems)} (the model's inputs: {names})")
    return arrays, notes


def _convert(array: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, str | None]:
    """``array`` as ``dtype`` where numpy's defaults should become the model's type and every value
    fits; else the array unchanged and what is wrong."""
    if array.dtype == dtype:
        return array, None
    found, want = array.dtype, np.dtype(dtype)
    expected = f"dtype {describe_dtype(found)}, expected {want.name}"
    if found.kind == want.kind == "f" and found.itemsize >= want.itemsize or (found.kind == "f" and found.name == want.name):
        finite = array[np.isfinite(array)]
        if finite.size and np.abs(finite).max() > np.finfo(want).max:
            return array, f"{expected}: values beyond {want.name}'s range (max abs {np.abs(finite).max():.3g})"
        return array.astype(want), None
    if found.kind in "iu" and want.kind in "iu":
        info = np.iinfo(want)
        if array.size and (array.min() < info.min or array.max() > info.max):
            return array, f"{expected}: values beyond {want.name}'s range [{info.min}, {info.max}]"
        return array.astype(want), None
    if found.kind == "f" and want.kind in "iu":
        if not np.all(np.isfinite(array)):
            return array, f"{expected}: NaN or Inf where whole numbers are expected"
        return array, f"{expected}: floats where whole numbers are expected"
    return array, expected


def _length_problems(prepared: Prepared, arrays: Mapping[str, np.ndarray]) -> list[str]:
    """Sequence lengths a node takes straight from a model input must be within 1..seq_length
    (OpenVINO's own check only says "Incorrect input 'seq_lengths' values!")."""
    problems = []
    for node in prepared.probed.judgeable:
        feeds = {feed.port.role: feed for feed in reversed(node.feeds)}  # the first feed of each role
        lengths, data = feeds.get("lengths"), feeds.get("data")
        if lengths is None or lengths.parameter is None or data is None:
            continue
        x = data.constant if data.constant is not None else arrays.get(data.parameter) if data.parameter else None
        values = arrays.get(lengths.parameter)
        axis = node.spec.time_axis(data.port)
        if x is None or values is None or axis is None or values.size == 0:
            continue
        bad = values[(values < 0) | (values > x.shape[axis])]
        if bad.size:
            problems.append(f"input {lengths.parameter} holds sequence lengths {sorted(set(bad.tolist()))[:5]} outside "
                            f"0..{x.shape[axis]} (the {node.spec.time_symbol} of node '{node.name}')")
    return problems


# ----------------------------------------------------------------------------- 3. compile, 4. execute

@dataclass(frozen=True)
class Compiled:
    """The model compiled on one device at one precision, and its probed copy when it needs one."""

    plain: Any
    probed: Any | None
    run: DeviceRun
    seconds: float
    implementations: Mapping[str, Implementation] = field(default_factory=dict)  # node name -> what ran
    input_names: tuple[str, ...] | None = None  # the model's own name of each input, in order


def compile_prepared(prepared: Prepared, device: str, precision: str, config: Mapping[str, str],
                     probe: bool = True) -> Compiled:
    """Compile the model (and its probed copy, at the same time: OpenVINO's Core compiles from two
    threads, and compiling is mostly serial, so the pair costs about 1.4 plain compiles, measured,
    instead of 2); a device that cannot compile is asked which ops it does not support
    (query_model), so that is said rather than a crash text."""
    from concurrent.futures import ThreadPoolExecutor

    started = time.perf_counter()
    path = Path(prepared.name)
    try:
        probed = None
        if probe and prepared.probed.needs_probe and (prepared.probed.judgeable or prepared.onnx is not None):
            with ThreadPoolExecutor(2, thread_name_prefix="irtool-compile") as pool:
                copy = pool.submit(compile_on, prepared.probed.probed, device, precision, config, path)
                plain, device_run = compile_on(prepared.model, device, precision, config, path)
                probed, _ = copy.result()
        else:
            plain, device_run = compile_on(prepared.model, device, precision, config, path)
    except RunError as error:
        if prepared.onnx is not None and prepared.onnx.unsupported():
            raise _onnx_failure(prepared.onnx, error) from None
        note = support_note(prepared.model, device)
        if note:
            raise RunError(f"{error.message}; {note}") from None
        raise
    seconds = time.perf_counter() - started
    # a body node runs inside its top-level container: what ran for that is what ran for it
    return Compiled(plain, probed, device_run, seconds, what_ran(plain, list(prepared.probed.run_as)),
                    tuple(info.name for info in prepared.infos))


@dataclass(frozen=True)
class Executed:
    outputs: list[np.ndarray]  # the model's outputs, from the plain compile
    captured: list[np.ndarray]  # the probed copy's outputs (the model's own first), or ``outputs``
    seconds: float  # the plain inference


def execute(compiled: Compiled, inputs: Mapping[str, np.ndarray], device: str) -> Executed:
    started = time.perf_counter()
    outputs = infer(compiled.plain, inputs, device, compiled.input_names)
    seconds = time.perf_counter() - started
    try:
        captured = infer(compiled.probed, inputs, device, compiled.input_names) if compiled.probed is not None \
            else outputs
    except RunError as error:  # the model ran: what failed is irtool's copy of it
        raise RunError(f"the probed copy (the model with every recurrent node's tensors as outputs, those in loop "
                       f"bodies kept for every iteration) failed where the model itself ran: {error.message}") from None
    return Executed(outputs, captured, seconds)


# ----------------------------------------------------------------------------- 5. judge

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


def judge(prepared: Prepared, inputs: Mapping[str, np.ndarray], executed: Executed, policy: TolerancePolicy,
          precision: str, reference: Reference | None = None, expected: ExpectedOutputs | None = None) -> Judgment:
    """Every node judged on what the device computed, and the model's outputs against ``expected``
    where given (irtool.judge_expected); the verdict is the worse of the two."""
    judgment = _judge_nodes(prepared, inputs, executed, policy, precision, reference)
    if expected is None:
        return judgment
    outputs = judge_expected(prepared.labels, executed.outputs, expected, policy, precision, time_axes(prepared))
    return dataclasses.replace(judgment, expected=outputs, node_verdict=judgment.verdict,
                               verdict=with_expected(judgment.verdict, judgment.nodes, outputs))


def with_expected(node_verdict: str, nodes: Sequence[NodeResult], expected: ExpectedJudgment) -> str:
    """The model's verdict from its nodes' and its expected outputs': the worse of the two (fail,
    error, unjudged, pass), the expected outputs' alone where the nodes judged nothing and left
    no reached node unjudged (a model with no recurrent node)."""
    if node_verdict == UNJUDGED and not not_judged(nodes):
        return expected.verdict
    return min((node_verdict, expected.verdict), key=(FAIL, ERROR, UNJUDGED, PASS).index)


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
                 precision: str, reference: Reference | None) -> Judgment:
    reference = reference or evaluate_node
    probe_check = None
    if executed.captured is not executed.outputs:
        count = len(executed.outputs)
        probe_check = ProbeCheck(diff_outputs(prepared.labels, executed.captured[:count], executed.outputs, policy,
                                              precision))
    if prepared.onnx is not None:
        from irtool.judge_onnx import judge_onnx_nodes

        nodes = unique_node_names(judge_onnx_nodes(prepared.onnx, prepared.probed, inputs, executed.captured, policy,
                                                   precision))
        return Judgment(model_verdict(nodes, probe_check), nodes, probe_check, (),
                        _why_unjudged(prepared, nodes))
    nodes = unique_node_names(judge_node(node, inputs, executed.captured, policy, precision, reference)
                              for node in prepared.nodes)
    outputs: tuple[OutputDiff, ...] = ()
    single = prepared.single
    if single is not None and nodes[0].outputs:
        by_port = {d.name: d for d in nodes[0].outputs}
        ports = {index: port for port, index in (single.model_outputs or {}).items()}
        outputs = tuple(by_port[single.spec.outputs[ports[k]].name] for k in range(len(executed.outputs)) if k in ports)
    return Judgment(model_verdict(nodes, probe_check), nodes, probe_check, outputs, _why_unjudged(prepared, nodes))


def unique_node_names(nodes: Iterable[NodeResult]) -> tuple[NodeResult, ...]:
    """The nodes, each under a name of its own (irtool.names.unique_names); a renamed one remembers the
    node it runs as."""
    from irtool.names import unique_names

    nodes = list(nodes)
    return tuple(node if name == node.name else dataclasses.replace(node, name=name,
                                                                     converted_to=node.converted_to or node.name)
                 for node, name in zip(nodes, unique_names([node.name for node in nodes])))


def with_implementations(judgment: Judgment, compiled: Compiled) -> Judgment:
    """The judgment with what the device ran for each node (from the unprobed compile)."""
    import dataclasses

    def described(node: NodeResult) -> str | None:
        found = compiled.implementations.get(node.container or node.runs_as)
        if found is None or not node.container:
            return found.describe() if found is not None else None
        # the container's own precision and form say nothing of the node inside it: its layer only
        return f"in {'+'.join(dict.fromkeys(found.layer_types))}" if found.layer_types else None

    nodes = tuple(dataclasses.replace(node, implementation=described(node)) if described(node) else node
                  for node in judgment.nodes)
    return dataclasses.replace(judgment, nodes=nodes)


def model_verdict(nodes: Sequence[NodeResult], probe_check: ProbeCheck | None) -> str:
    """fail if any node fails or probing changed the model's outputs; else error if a node could
    not be judged for an error; unjudged if a node the inputs reached was not judged (a pass
    would overstate) or nothing was judged; pass only when every reached node was judged and passed."""
    verdicts = {node.verdict for node in nodes}
    if FAIL in verdicts or (probe_check is not None and not probe_check.passed):
        return FAIL
    if ERROR in verdicts:
        return ERROR
    if any(node.verdict == UNJUDGED and node.reached for node in nodes):
        return UNJUDGED
    return PASS if PASS in verdicts else UNJUDGED


def not_judged(nodes: Sequence[NodeResult]) -> tuple[NodeResult, ...]:
    """The nodes the inputs reached that were not judged (what keeps a verdict from pass)."""
    return tuple(node for node in nodes if node.verdict == UNJUDGED and node.reached)


def not_reached(nodes: Sequence[NodeResult]) -> tuple[NodeResult, ...]:
    """The nodes these inputs did not reach (an If branch not taken, a Loop that ran no iteration)."""
    return tuple(node for node in nodes if not node.reached)


def _why_unjudged(prepared: Prepared, nodes: Sequence[NodeResult]) -> str | None:
    if any(node.verdict in (PASS, FAIL) for node in nodes):
        return None
    if not nodes:
        if prepared.onnx is not None:
            return "the ONNX graph has no GRU, LSTM or RNN node"
        return "the model has no node of the recurrent family (GRU, LSTM, RNN sequences and cells)"
    return joined((f"{node.name}: {node.reason}" for node in nodes), "; ")


def one_set_of_activations(node: RecurrentNode) -> dict[str, Any]:
    """A node's attributes with a per-direction activations list (OpenVINO's ONNX frontend writes
    one set per direction for a bidirectional node) made the spec's one set.  Equal halves mean
    the same thing; different halves are refused with what OpenVINO does with them (measured: the
    first half for both directions), since the op's spec has no way to say them."""
    attributes = dict(node.attributes)
    spec = node.spec.attributes.get("activations")
    given = attributes.get("activations")
    if spec is None or spec.length is None or not isinstance(given, list) or len(given) != 2 * spec.length:
        return attributes
    first, second = given[:spec.length], given[spec.length:]
    if [a.lower() for a in first] != [a.lower() for a in second]:
        raise ValueError(f"activations {given} has one set per direction and the halves differ; OpenVINO applies "
                         f"the first half to both directions (irtool validate: IR029), so this node cannot be "
                         f"judged as the IR says; judge the ONNX model itself with irtool run MODEL.onnx")
    for key in ("activations_alpha", "activations_beta"):
        values = attributes.get(key)
        if isinstance(values, list) and len(values) == 2 * len(first) and values[:len(first)] == values[len(first):]:
            attributes[key] = values[:len(first)]
    attributes["activations"] = first
    return attributes


def evaluate_node(node: RecurrentNode, arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """The reference's outputs (every output port) on a node's input arrays; ValueError if the
    reference refuses them."""
    from irtool.reference import evaluate

    outputs = evaluate(node.spec.type, list(arrays), one_set_of_activations(node), version=node.spec.version)
    if not isinstance(outputs, tuple) or len(outputs) != len(node.spec.outputs):
        raise IrtoolBug(f"the reference of {node.spec.key} returned {type(outputs).__name__} "
                        f"instead of {len(node.spec.outputs)} arrays")
    return outputs


def judge_node(node: RecurrentNode, inputs: Mapping[str, np.ndarray], captured: Sequence[np.ndarray],
               policy: TolerancePolicy, precision: str, reference: Reference = evaluate_node) -> NodeResult:
    """The reference on a node's captured inputs against its captured outputs.  A tolerance can be
    given per node and port (``--atol NODE:Y:1e-3``) or per port (``--atol Y:1e-3``).  A node in
    a body is judged at every iteration it ran; its result holds the first iteration outside
    tolerance (else the one farthest from the reference) and how many were judged."""
    head = (node.key, node.spec.type, node.spec.version, node.where)
    result = _judge_node(node, head, inputs, captured, policy, precision, reference)
    if node.in_body or node.stable:
        import dataclasses

        # a node keyed by its place runs as its OpenVINO name (what the device's layers are found by)
        result = dataclasses.replace(result, container=node.container, converted_to=node.name if node.stable else None)
    return result


def _judge_node(node: RecurrentNode, head: tuple, inputs: Mapping[str, np.ndarray], captured: Sequence[np.ndarray],
                policy: TolerancePolicy, precision: str, reference: Reference) -> NodeResult:
    if node.never:
        return NodeResult(*head, UNJUDGED, f"not reached on these inputs ({node.never})", tensors=node.tensors,
                          reached=False)
    if node.unprobed:
        return NodeResult(*head, UNJUDGED, f"inside the {node.where}: not judged ({node.unprobed})",
                          tensors=node.tensors)
    indices = reached_iterations(node, captured)
    if not indices:
        why = why_not_reached(node.conditions, node.loops, captured)
        return NodeResult(*head, UNJUDGED, f"not reached on these inputs ({why})",
                          tensors=node.tensors, reached=False)
    chosen: tuple[tuple[int, ...], tuple[OutputDiff, ...]] | None = None
    per_iteration = [iteration_arrays(node, inputs, captured, index) for index in indices]
    batched = _batched_reference(node, [arrays for arrays, _ in per_iteration], reference)
    order = list(enumerate(zip(indices, per_iteration)))
    worst = _worst_of_passing_iterations(node, per_iteration, batched, policy, precision)
    if worst is not None:  # every iteration within tolerance, seen at once: only the worst is diffed in full
        order = [order[worst]]
    for k, (index, (arrays, actual)) in order:
        try:
            expected = batched[k] if batched is not None else reference(node, arrays)
        except ValueError as error:
            return NodeResult(*head, ERROR, f"{_at(node, index)}the reference refuses it: {error}",
                              tensors=node.tensors, iteration=index or None, at=iteration_words(index, node.loops),
                              iterations=len(indices))
        diffs = tuple(compare_output(port.name, got, want,
                                     output_tolerance(policy, (f"{node.key}:{port.name}", port.name), precision,
                                                      got.dtype),
                                     node.spec.time_axis(port))
                      for port, got, want in zip(node.spec.outputs, actual, expected))
        if not all(d.passed for d in diffs):
            chosen = (index, diffs)
            break
        if chosen is None or max(d.max_abs for d in diffs) > max(d.max_abs for d in chosen[1]):
            chosen = (index, diffs)
    index, diffs = chosen
    failed = [d for d in diffs if not d.passed]
    where = dict(iteration=index or None, at=iteration_words(index, node.loops), iterations=len(indices) if node.in_body else None)
    if not failed:
        return NodeResult(*head, PASS, None, diffs, node.tensors, **where)
    reason = _at(node, index) + "outside tolerance: " + joined(
        f"{d.name} (max abs {d.max_abs:.3g}, {d.outside}/{d.total})" if not d.problem else f"{d.name} ({d.problem})"
        for d in failed)
    notes = _known_faults(node, arrays, actual, expected, diffs)
    reason += "".join(f"; {note}" for note in notes)
    return NodeResult(*head, FAIL, reason, diffs, node.tensors, notes=notes, **where)


# Iterations that _worst_of_passing_iterations compares at a time, as float64 elements per output:
# 512 KB of scratch, reused block after block, where all iterations at once take megabytes of
# fresh pages per run (measured in judged runs of the 100-iteration Loop of bench_run_overhead.py,
# median of 8: 2.4 ms, against 5.8 ms all at once and 10.7 ms with a float64 temporary per step).
WORST_BLOCK_ELEMENTS = 1 << 16


def _worst_of_passing_iterations(node: RecurrentNode, per_iteration: Sequence[tuple[Sequence[np.ndarray],
                                                                                 Sequence[np.ndarray]]],
                                  batched: Sequence[Sequence[np.ndarray]] | None, policy: TolerancePolicy,
                                  precision: str) -> int | None:
    """The iteration farthest from the reference when every iteration of a body node is within
    tolerance, found with one comparison per output over blocks of iterations stacked (diffing
    each iteration alone costs a call per iteration and output: most of judging a Loop of 100
    steps, measured); None when some iteration is not (or the iterations cannot be stacked):
    then each is diffed in turn, to find the first that fails."""
    if batched is None or len(per_iteration) < 2:
        return None
    count = len(per_iteration)
    worst = np.zeros(count)
    for k, port in enumerate(node.spec.outputs):
        try:
            got = [actual[k] for _, actual in per_iteration]
            want = [expected[k] for expected in batched]
        except IndexError:
            return None
        shape = got[0].shape
        if len(want) != count or any(array.shape != shape for array in got + want):
            return None
        tolerance = output_tolerance(policy, (f"{node.key}:{port.name}", port.name), precision, got[0].dtype)
        block = max(1, min(count, WORST_BLOCK_ELEMENTS // max(got[0].size, 1)))
        gaps, limits = np.empty((block, *shape)), np.empty((block, *shape))
        for first in range(0, count, block):
            last = min(first + block, count)
            gap, limit = gaps[:last - first], limits[:last - first]
            np.stack(got[first:last], out=gap)  # float64, as compare_output computes
            np.stack(want[first:last], out=limit)
            np.abs(np.subtract(gap, limit, out=gap), out=gap)  # compare_output's test, where every value is finite
            np.multiply(np.abs(limit, out=limit), tolerance.rtol, out=limit)
            np.add(limit, tolerance.atol, out=limit)
            each = gap.reshape(last - first, -1).max(axis=1) if gap.size else worst[first:last]
            if not np.isfinite(each).all() or (gap > limit).any():  # NaN or Inf anywhere: not finite in each
                return None
            np.maximum(worst[first:last], each, out=worst[first:last])
    return int(np.argmax(worst))


def _known_faults(node: RecurrentNode, arrays: Sequence[np.ndarray], actual: Sequence[np.ndarray],
                  expected: Sequence[np.ndarray], diffs: Sequence[OutputDiff]) -> tuple[str, ...]:
    """The hints of the known OpenVINO faults whose signature a failing node has (irtool.known_faults)."""
    names = [port.name for port in node.spec.inputs]
    lengths = arrays[names.index("sequence_lengths")] if "sequence_lengths" in names and \
        names.index("sequence_lengths") < len(arrays) else None
    outputs = [port.name for port in node.spec.outputs]
    tolerance = diffs[0].tolerance
    return known_faults.hints(known_faults.Failure(
        node.spec.type, str(node.attributes.get("direction", "forward")),
        None if lengths is None else np.asarray(lengths), dict(zip(outputs, actual)), dict(zip(outputs, expected)),
        tolerance.atol, tolerance.rtol))


def _batched_reference(node: RecurrentNode, per_iteration: Sequence[Sequence[np.ndarray]],
                       reference: Reference) -> list[tuple[np.ndarray, ...]] | None:
    """The reference's outputs at every iteration from one call, or None where that cannot be
    done (then each iteration is evaluated alone).  A recurrent op computes each batch element
    on its own, so the iterations' inputs stacked along the batch axis give each iteration's
    outputs, with one matrix product per step instead of one per step and iteration; inputs
    without a batch axis (weights) must then be equal at every iteration."""
    count = len(per_iteration)
    in_axes = [_batch_axis(port) for port in node.spec.inputs[:len(per_iteration[0])]] if count > 1 else []
    out_axes = [_batch_axis(port) for port in node.spec.outputs]
    batch_ports = [k for k, axis in enumerate(in_axes) if axis is not None]
    if count < 2 or not batch_ports or None in out_axes:
        return None
    stacked = []
    for k, axis in enumerate(in_axes):
        column = [arrays[k] for arrays in per_iteration]
        if axis is None:
            if not all(array is column[0] or np.array_equal(array, column[0]) for array in column[1:]):
                return None
            stacked.append(column[0])
        elif column[0].ndim > axis:
            stacked.append(np.concatenate(column, axis=axis))
        else:
            return None
    try:
        outputs = reference(node, stacked)
    except ValueError:  # said by the iteration it concerns, one by one
        return None
    if any(out.ndim <= axis or out.shape[axis] % count for out, axis in zip(outputs, out_axes)):
        return None
    parts = [np.split(out, count, axis=axis) for out, axis in zip(outputs, out_axes)]
    return [tuple(part[k] for part in parts) for k in range(count)]


def _batch_axis(port: Any) -> int | None:
    texts = port.dim_texts or ()
    return texts.index("batch_size") if "batch_size" in texts else None


def _at(node: RecurrentNode, index: tuple[int, ...]) -> str:
    """"at iteration 3 of Loop 'l': " for a node in a loop body."""
    return f"at {iteration_words(index, node.loops)}: " if index else ""


def arrays_digest(arrays: Sequence[np.ndarray]) -> str:
    """Equal for equal arrays (dtype, shape and bytes): a worker's key for a node's reference outputs."""
    digest = hashlib.blake2b(digest_size=16)
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.data)
    return digest.hexdigest()


def diff_outputs(labels: Sequence[tuple[str, ...]], actual: Sequence[np.ndarray], expected: Sequence[np.ndarray],
                 policy: TolerancePolicy, precision: str) -> tuple[OutputDiff, ...]:
    """Each model output against its expected values, with the tolerance of ``precision`` (or of
    the output's own element type when that is coarser: an f16 output holds f16 roundings
    whatever the device computes in) and the policy."""
    return tuple(compare_output(names[0], got, want, output_tolerance(policy, names, precision, got.dtype), None)
                 for names, got, want in zip(labels, actual, expected))


def output_labels(model: Any, node: RecurrentNode | None = None) -> list[tuple[str, ...]]:
    """For each model output, its names: first the spec's port name when ``node`` returns it."""
    ports = {index: node.spec.outputs[port].name for port, index in (node.model_outputs or {}).items()} if node else {}
    labels = []
    for k, output in enumerate(model.outputs):
        names = [tensor_name(output)] + sorted(output.get_names())
        if k in ports:
            names.insert(0, ports[k])
        labels.append(tuple(dict.fromkeys(names)))
    firsts = [names[0] for names in labels]
    if len(set(firsts)) != len(firsts):  # two Results of one port: number them
        labels = [(f"{names[0]}#{k}",) + names for k, names in enumerate(labels)]
    return labels


# ----------------------------------------------------------------------------- irtool run

@dataclass(frozen=True)
class RunOptions:
    model: Path
    device: str
    precision: str = "f32"
    inputs: Path | None = None
    seed: int = 0
    save_outputs: Path | None = None
    tolerance: TolerancePolicy = field(default_factory=TolerancePolicy)
    config: Mapping[str, str] = field(default_factory=dict)
    compare_with: tuple[str, str] | None = None  # (device, precision)
    compare_with_onnxruntime: bool = False  # an .onnx model: onnxruntime's outputs as a second opinion
    fill_defaults: bool = False
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # --shape NAME=[...]
    sizes: Mapping[str, int] = field(default_factory=dict)  # batch_size, seq_length for dynamic dims
    reproducers: Path | None = None  # a folder for one reproducer per failing node
    expected: Path | None = None  # an .npz of the model's expected outputs (keyed as --save-outputs writes them)

    def __post_init__(self) -> None:
        for name, size in self.sizes.items():
            if not (isinstance(size, int) and size >= 1):
                raise RunError(f"--{name.replace('_size', '').replace('_', '-')} {size}: expected a whole number >= 1")


@dataclass(frozen=True)
class InputSummary:
    name: str
    shape: tuple[int, ...]
    dtype: str
    value: Any = None  # a scalar input's value (a Loop's trip count, a flag): what decides which nodes run


@dataclass(frozen=True)
class RunResult:
    model: str
    op: str | None  # "GRUSequence-5 (layer 'gru')" for a model of one node fed by its inputs
    run: DeviceRun
    inputs_from: str  # "seed 0" or the .npz path
    inputs: tuple[InputSummary, ...]
    against: str | None  # "reference", a DeviceRun description, or None
    against_run: DeviceRun | None
    no_reference: str | None
    outputs: tuple[OutputDiff, ...]
    output_shapes: tuple[tuple[str, tuple[int, ...]], ...]
    verdict: str = UNJUDGED
    nodes: tuple[NodeResult, ...] = ()
    probe_check: ProbeCheck | None = None
    filled_defaults: tuple[str, ...] = ()
    saved_outputs: str | None = None
    shapes_chosen: Mapping[str, str] = field(default_factory=dict)
    input_notes: tuple[str, ...] = ()
    reproducers: Mapping[str, str] = field(default_factory=dict)  # node name -> reproducer folder
    second_opinion: Any = None  # irtool.judge_onnx.SecondOpinion with --compare-with onnxruntime
    unwritten: tuple[str, ...] = ()  # files asked for that could not be written (a full disk), and why
    expected: ExpectedJudgment | None = None  # with --expected: the model's outputs against the file's

    @property
    def passed(self) -> bool | None:
        """True or False when something was compared; None when nothing was."""
        return {PASS: True, FAIL: False}.get(self.verdict)


def run(options: RunOptions) -> RunResult:
    """``irtool run``: the pipeline's stages on one model, device and precision."""
    report = list_devices()
    asked = [(options.device, options.precision)] + ([options.compare_with] if options.compare_with else [])
    for device, _ in asked:  # a name OpenVINO does not know is a usage error, before any skip
        check_device(device, report)
    for device, precision in asked:
        reason = skip_reason(device, precision, report)
        if reason:
            raise RunSkipped(f"{reason}: nothing was run")
    inputs_read = run_inputs(options)
    if options.expected is not None and options.compare_with:
        raise RunError("--expected judges the model's outputs against a file and --compare-with DEVICE against a "
                       "second device: give one of them")
    expected = load_expected(options.expected) if options.expected is not None else None
    if options.save_outputs is not None:
        check_not_input(options.save_outputs, inputs_read, "--save-outputs file")
        writable_target(options.save_outputs, "outputs file")
    if options.compare_with_onnxruntime:
        _check_onnxruntime(options.model)
    prepared = read_and_prepare(options.model, options.fill_defaults, options.shapes, options.inputs)
    if prepared.onnx is not None and options.reproducers is not None:
        raise RunError(f"{options.model}: --reproducers writes single-op IR of OpenVINO nodes; it does not apply to "
                       f"the ONNX nodes of an .onnx model (irtool build onnx-gru|onnx-lstm|onnx-rnn makes one)")
    if options.reproducers is not None:  # a node's folder is replaced whole: it must hold no input
        for node in prepared.nodes:
            check_holds_no_input(Path(options.reproducers) / node_folder_name(node.key), inputs_read,
                                 f"reproducer folder of node '{node.key}'")
    try:
        inputs, chosen, notes = case_inputs(prepared, options.inputs, options.seed, options.shapes, options.sizes)
    except RunSkipped as error:  # the expected outputs judge the model: its dims are the user's to give
        if expected is None:
            raise
        raise RunError(f"{error.message}; give the inputs the expected outputs were computed on: "
                       f"--inputs IN.npz") from None
    _check_tolerance_names(prepared, options.tolerance)
    # --compare-with judges the model's outputs only: no probed copy to compile or infer
    compiled = compile_prepared(prepared, options.device, options.precision, options.config,
                                probe=options.compare_with is None)
    executed = execute(compiled, inputs, options.device)
    single = prepared.single
    common = dict(model=str(options.model), op=f"{single.spec.key} (layer '{single.name}')" if single else None,
                  run=compiled.run, inputs_from=str(options.inputs) if options.inputs is not None else f"seed {options.seed}",
                  inputs=tuple(InputSummary(name, tuple(a.shape), a.dtype.name, a.item() if a.ndim == 0 else None)
                               for name, a in inputs.items()),
                  output_shapes=tuple((names[0], tuple(a.shape)) for names, a in zip(prepared.labels, executed.outputs)),
                  filled_defaults=prepared.filled_defaults, shapes_chosen=chosen, input_notes=tuple(notes))
    result = _judged_run(options, prepared, compiled, inputs, executed, common, expected)
    # written after the verdict: a file that cannot be written (a full disk) is a note beside it
    unwritten = list(result.unwritten)
    saved = None
    if options.save_outputs is not None:
        try:
            saved = _save_outputs(options.save_outputs, prepared.labels, executed.outputs)
        except FileError as error:
            unwritten.append(error.message)
    return dataclasses.replace(result, saved_outputs=saved, unwritten=tuple(unwritten))


def run_inputs(options: RunOptions) -> list[tuple[str, Path]]:
    """The files ``irtool run`` reads, by what they are to it: nothing it writes may replace them."""
    model = Path(options.model)
    found = [("the model", model)]
    if model.suffix.lower() == ".xml":
        found.append(("the model's weights", model.with_suffix(".bin")))
    if options.inputs is not None:
        found.append(("the --inputs file", Path(options.inputs)))
    if options.expected is not None:
        found.append(("the --expected file", Path(options.expected)))
    return found


def _judged_run(options: RunOptions, prepared: Prepared, compiled: Any, inputs: Mapping[str, np.ndarray],
                executed: Executed, common: dict, expected: ExpectedOutputs | None = None) -> RunResult:
    """The verdict of a run (and its reproducers, each written after the verdict it belongs to)."""
    if options.compare_with:
        other = compile_prepared(prepared, *options.compare_with, options.config, probe=False)
        expected = execute(other, inputs, options.compare_with[0]).outputs
        precision = loosest_precision([compiled.run.precision, other.run.precision])
        diffs = diff_outputs(prepared.labels, executed.outputs, expected, options.tolerance, precision)
        said = "--compare-with judges the model's outputs device against device"
        nodes = unique_node_names(
            (NodeResult(n.name, n.op_type, n.version, n.where, UNJUDGED, said, semantics="ONNX")
             for n in prepared.onnx.all_nodes) if prepared.onnx is not None else
            (NodeResult(n.key, n.spec.type, n.spec.version, n.where, UNJUDGED, said, tensors=n.tensors,
                        converted_to=n.name if n.stable else None) for n in prepared.nodes))
        return RunResult(**common, against=other.run.describe(), against_run=other.run, no_reference=None,
                         outputs=diffs, verdict=PASS if all(d.passed for d in diffs) else FAIL, nodes=nodes)
    judgment = judge(prepared, inputs, executed, options.tolerance, compiled.run.precision, expected=expected)
    judgment = with_implementations(judgment, compiled)
    reproducers = {}
    unwritten = []
    if options.reproducers is not None:
        from irtool.reproducer import ReproducerError

        for node, result in zip(prepared.nodes, judgment.nodes):
            if result.verdict == FAIL:
                folder = Path(options.reproducers) / node_folder_name(result.name)
                try:
                    write_node_reproducer(folder, prepared, node, result, inputs, executed, compiled.run,
                                          options.config)
                    reproducers[result.name] = str(folder)
                except ReproducerError as error:
                    unwritten.append(error.message)
    against = "reference" + (" (ONNX semantics: each ONNX node as its ONNX page defines it)" if prepared.onnx else "")
    second = None
    if options.compare_with_onnxruntime:
        from irtool.judge_onnx import second_opinion

        second = second_opinion(prepared.onnx, prepared.labels, inputs, executed.outputs, options.tolerance,
                                compiled.run.precision)
    return RunResult(**common, against=against if judgment.why_unjudged is None else None, against_run=None,
                     no_reference=judgment.why_unjudged, outputs=judgment.outputs, verdict=judgment.verdict,
                     nodes=judgment.nodes, probe_check=judgment.probe_check, reproducers=reproducers,
                     second_opinion=second, unwritten=tuple(unwritten), expected=judgment.expected)


def _check_onnxruntime(model: Path) -> None:
    """``--compare-with onnxruntime`` needs an .onnx model and onnxruntime installed."""
    from irtool.onnx.onnxruntime_run import available

    if Path(model).suffix.lower() != ".onnx":
        raise RunError(f"{model}: --compare-with onnxruntime runs the .onnx file itself; give the .onnx model "
                       f"(an IR model is compared with a second device: --compare-with DEVICE)")
    if available() is None:
        raise RunError("--compare-with onnxruntime: onnxruntime is not installed (pip install onnxruntime)")


def node_folder_name(name: str) -> str:
    """A folder name for a node: readable, filesystem-safe, unique by a short hash."""
    import re

    slug = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", name).strip("_")[:60] or "node"
    return f"{slug}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"


def write_node_reproducer(folder: Path, prepared: Prepared, node: RecurrentNode, result: NodeResult,
                          inputs: Mapping[str, np.ndarray], executed: Executed, device_run: DeviceRun,
                          config: Mapping[str, str]) -> None:
    """A reproducer folder of one node: a single-op IR of it (Consts where the model had constant
    data, inputs dynamic where the model's were), its captured inputs as inputs.npz, the
    reference's outputs as expected.npz and the device's as actual.npz; ``irtool reduce`` takes it."""
    from irtool.concrete import from_node
    from irtool.reproducer import write_reproducer

    arrays, actual = iteration_arrays(node, inputs, executed.captured, result.iteration or ())
    concrete = from_node(node, arrays)
    expected = evaluate_node(node, arrays)
    ports = [port.name for port in node.spec.outputs]
    write_reproducer(folder, model=concrete.to_model(), inputs=concrete.inputs, expected=dict(zip(ports, expected)),
                     actual=dict(zip(ports, actual)), device=device_run.device,
                     precision=device_run.requested_precision, config=config,
                     tolerances={d.name: (d.tolerance.atol, d.tolerance.rtol) for d in result.outputs},
                     case={"id": f"{Path(prepared.name).stem}::{result.name}", "suite": "run"},
                     result={"verdict": result.verdict, "message": result.reason or "", "node": result.name,
                             "model": prepared.name})


def _check_tolerance_names(prepared: Prepared, policy: TolerancePolicy) -> None:
    names = {name for names in prepared.labels for name in names}
    names |= {f"{prefix}{port.name}" for node in prepared.nodes for port in node.spec.outputs
              for prefix in ("", f"{node.key}:")}
    if prepared.onnx is not None:
        names |= prepared.onnx.tolerance_names()
    unknown = policy.unknown_outputs(names)
    if unknown:
        raise RunError(f"--atol/--rtol name output {unknown[0]}, which {prepared.name} does not have"
                       f"{did_you_mean(unknown[0], names)}; it names "
                       f"{joined(sorted(names), listed=12)}")


def _save_outputs(path: Path | None, labels: Sequence[tuple[str, ...]], arrays: Sequence[np.ndarray]) -> str | None:
    if path is None:
        return None
    return str(write_npz(path, {names[0]: array for names, array in zip(labels, arrays)}, "outputs file"))
