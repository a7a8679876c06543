"""Run any model on an OpenVINO device with a stated precision, and judge every recurrent node in it.

:func:`run` checks the device and precision, reads the model, finds its recurrent nodes
(irtool.runtime.nodes), makes or loads the inputs (dynamic dims sized from the nodes,
irtool.runtime.sizes), compiles with an explicit INFERENCE_PRECISION_HINT and infers;
then it infers a probed copy that exposes every node's inputs and outputs, checks that
the probed copy gives the model's own outputs as the plain one does, and judges each node:
irtool's reference on the node's captured inputs against its captured outputs.  Or, with
``compare_with``, it diffs the model's outputs against a second device.  A step that
cannot go on raises :class:`RunError` with one line naming the file, input or device and
what was expected; nothing here prints or exits, and openvino is touched only through
irtool.runtime.
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from irtool.cases import DEFAULT_SIZES, FALLBACK_SIZE, generic_tensor, port_tensor, time_axis
from irtool.compare import OutputDiff, Tolerance, TolerancePolicy, compare_output, loosest_precision
from irtool.errors import IrtoolBug, RunError, RunSkipped
from irtool.files import write_atomic
from irtool.runtime.compile import DeviceRun, check_support, compile_on, infer
from irtool.runtime.devices import check_device, list_devices, skip_reason
from irtool.runtime.model import InputInfo, model_inputs, read_model, tensor_name
from irtool.shapes import DYNAMIC, format_shape
from irtool.specs import OpSpec, PortSpec, registry

PASS_THROUGH_OPS = ("Parameter", "Constant", "Result")


# ----------------------------------------------------------------------------- the RNN op

@dataclass(frozen=True)
class Source:
    """What feeds one input port of the RNN op: a model input (by name) or constant data."""

    port: PortSpec
    parameter: str | None = None
    constant: np.ndarray | None = None


@dataclass(frozen=True)
class RnnOp:
    """The one RNN-family op of a model, with its attributes and weights read from the ov.Model."""

    spec: OpSpec
    name: str
    attributes: Mapping[str, Any]
    sources: tuple[Source, ...]
    output_ports: tuple[int, ...]  # for each model output, the op output port it returns

    def label(self, model_output: int) -> str:
        return self.spec.outputs[self.output_ports[model_output]].name

    def time_axis(self, model_output: int) -> int | None:
        return time_axis(self.spec.outputs[self.output_ports[model_output]])


def rnn_spec(node: Any) -> OpSpec | None:
    """The spec of an ov node if it is an RNN-family op irtool knows, else None."""
    spec = registry().for_ir(node.get_type_name(), node.get_type_info().version_id)
    return spec if spec is not None and spec.family else None


def find_rnn_op(model: Any) -> tuple[RnnOp | None, str]:
    """The model's single RNN-family op fed by Parameters and Consts, or None and why not."""
    ops = model.get_ordered_ops()
    rnn = [op for op in ops if rnn_spec(op) is not None]
    others = sorted({op.get_type_name() for op in ops
                     if op.get_type_name() not in PASS_THROUGH_OPS and rnn_spec(op) is None
                     and not _is_constant_convert(op)})
    if len(rnn) != 1 or others:
        what = (f"{len(rnn)} RNN-family ops" if len(rnn) != 1 else "")
        what += ("; " if what and others else "") + (f"other ops ({', '.join(others)})" if others else "")
        return None, f"the model is not a single RNN-family op fed by Parameters and Consts: it has {what}"
    op = rnn[0]
    spec = rnn_spec(op)
    sources = []
    for port, value in zip(spec.inputs, (i.get_source_output() for i in op.inputs())):
        source = _source(port, value.get_node())
        if source is None:
            return None, f"input {port.name} of {op.get_friendly_name()} is fed by a {value.get_node().get_type_name()}"
        sources.append(source)
    output_ports = []
    for output in model.outputs:
        feeder = output.get_node().input_value(0)
        if feeder.get_node() is not op and feeder.get_node().get_friendly_name() != op.get_friendly_name():
            return None, f"model output {output.get_node().get_friendly_name()} does not come from the op"
        output_ports.append(feeder.get_index())
    attributes = {name: _plain(value) for name, value in op.get_attributes().items() if name in spec.attributes}
    return RnnOp(spec, op.get_friendly_name(), attributes, tuple(sources), tuple(output_ports)), ""


def _is_constant_convert(node: Any) -> bool:
    return node.get_type_name() == "Convert" and node.input_value(0).get_node().get_type_name() == "Constant"


def _source(port: PortSpec, node: Any) -> Source | None:
    kind = node.get_type_name()
    if kind == "Parameter":
        return Source(port, parameter=tensor_name(node.output(0)))
    if kind == "Constant":
        return Source(port, constant=np.array(node.get_data()))
    if _is_constant_convert(node):
        data = np.array(node.input_value(0).get_node().get_data())
        return Source(port, constant=data.astype(node.get_output_element_type(0).to_dtype()))
    return None


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value



# ----------------------------------------------------------------------------- inputs



def make_inputs(infos: Sequence[InputInfo], rnn: RnnOp | None, seed: int,
                sizes: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
    """Seeded inputs; a dynamic dim takes its symbol's size from ``sizes``, else a small default."""
    rng = np.random.default_rng(seed)
    ports = {s.parameter: s.port for s in rnn.sources if s.parameter} if rnn else {}
    symbols = _symbols(rnn, infos, sizes or {}) if rnn else {}
    arrays = {}
    for info in infos:
        port = ports.get(info.name)
        if port is not None:
            shape = tuple(expr.evaluate(symbols, rnn.attributes) for expr in port.dims)
            arrays[info.name] = port_tensor(port.name, shape, info.dtype, rng, symbols)
        else:
            shape = tuple(d if isinstance(d, int) else max(d.lower, 1) for d in info.dims)
            arrays[info.name] = generic_tensor(shape, info.dtype, rng)
    return arrays


def _symbols(rnn: RnnOp, infos: Sequence[InputInfo], sizes: Mapping[str, int]) -> dict[str, int]:
    """Symbol values from the op's attributes and static dims; ``sizes`` or the defaults for the rest."""
    dims = {info.name: info.dims for info in infos}
    shapes = [dims.get(s.parameter, (DYNAMIC,) * len(s.port.dims or ())) if s.parameter else s.constant.shape
              for s in rnn.sources]
    try:
        symbols = rnn.spec.check_shapes(rnn.attributes, shapes)
    except ValueError as error:
        raise RunError(f"layer '{rnn.name}': {error}") from None
    for port in rnn.spec.inputs:
        for expr in port.dims or ():
            for name in expr.free_symbols(symbols, rnn.attributes):
                symbols[name] = sizes.get(name, DEFAULT_SIZES.get(name, FALLBACK_SIZE))
    return symbols


def op_symbols(rnn: RnnOp, inputs: Mapping[str, np.ndarray]) -> dict[str, int]:
    """The op's dim sizes (batch_size, hidden_size, ...) on these inputs and its own weights;
    empty if they do not fit the spec (the run then says why)."""
    shapes = [inputs[s.parameter].shape if s.parameter else s.constant.shape for s in rnn.sources]
    try:
        return rnn.spec.check_shapes(rnn.attributes, shapes)
    except ValueError:
        return {}


def load_inputs(path: str | Path, infos: Sequence[InputInfo]) -> dict[str, np.ndarray]:
    """Inputs from an .npz whose keys are the model's input names, checked against the model."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            stored = {key: archive[key] for key in archive.files}
    except FileNotFoundError:
        raise RunError(f"{path}: no such inputs file") from None
    except (OSError, ValueError) as error:
        raise RunError(f"{path}: not a readable .npz of arrays ({error})") from None
    arrays, used = {}, set()
    for info in infos:
        key = next((k for k in stored if k in info.names), None)
        if key is None:
            raise RunError(f"{path}: no array for input {info.name} (expected {info.describe()}); "
                           f"it holds {', '.join(sorted(stored)) or 'nothing'}")
        array = stored[key]
        if not info.accepts(array.shape):
            raise RunError(f"{path}: input {info.name} has shape {list(array.shape)}, expected {format_shape(info.dims)}")
        if array.dtype != info.dtype:
            raise RunError(f"{path}: input {info.name} has dtype {array.dtype.name}, expected {info.dtype.name}")
        arrays[info.name] = array
        used.add(key)
    extra = sorted(set(stored) - used)
    if extra:
        raise RunError(f"{path}: array {extra[0]} matches no model input; inputs are "
                       f"{', '.join(info.name for info in infos)}")
    return arrays


# ----------------------------------------------------------------------------- compile and infer

# ----------------------------------------------------------------------------- reference

def reference_outputs(rnn: RnnOp, inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """The reference's outputs (all op output ports) on the run's inputs and the model's weights."""
    from irtool.reference import evaluate

    arrays = [inputs[s.parameter] if s.parameter else s.constant for s in rnn.sources]
    try:
        outputs = evaluate(rnn.spec.type, arrays, dict(rnn.attributes), version=rnn.spec.version)
    except ValueError as error:
        raise RunError(f"layer '{rnn.name}' ({rnn.spec.key}): the reference refuses it: {error}") from None
    if not isinstance(outputs, tuple) or len(outputs) != len(rnn.spec.outputs):
        raise IrtoolBug(f"the reference of {rnn.spec.key} returned {type(outputs).__name__} "
                        f"instead of {len(rnn.spec.outputs)} arrays")
    return outputs


# ----------------------------------------------------------------------------- the run

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
    fill_defaults: bool = False
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # --shape NAME=[...]
    sizes: Mapping[str, int] = field(default_factory=dict)  # batch_size, seq_length for dynamic dims

    def __post_init__(self) -> None:
        for name, size in self.sizes.items():
            if not (isinstance(size, int) and size >= 1):
                raise RunError(f"--{name.replace('_size', '').replace('_', '-')} {size}: expected a whole number >= 1")


@dataclass(frozen=True)
class InputSummary:
    name: str
    shape: tuple[int, ...]
    dtype: str


PASS, FAIL, UNJUDGED, ERROR = "pass", "fail", "unjudged", "error"


@dataclass(frozen=True)
class NodeResult:
    """The verdict on one recurrent node: the reference on its captured inputs against its captured outputs."""

    name: str
    type: str
    version: int
    where: str  # "model", or the body of a TensorIterator/Loop it sits in
    verdict: str  # pass | fail | unjudged | error
    reason: str | None = None
    outputs: tuple[OutputDiff, ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in (PASS, FAIL, UNJUDGED, ERROR):
            raise IrtoolBug(f"node verdict {self.verdict!r}")

    @property
    def max_abs(self) -> float | None:
        return max((d.max_abs for d in self.outputs), default=None)

    @property
    def first_step_outside(self) -> int | None:
        steps = [d.first_step_outside for d in self.outputs if d.first_step_outside is not None]
        return min(steps) if steps else None


@dataclass(frozen=True)
class ProbeCheck:
    """The model's own outputs from the probed compile against those of the unprobed one."""

    outputs: tuple[OutputDiff, ...]

    @property
    def passed(self) -> bool:
        return all(d.passed for d in self.outputs)


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

    @property
    def passed(self) -> bool | None:
        """True or False when something was compared; None when nothing was."""
        return {PASS: True, FAIL: False}.get(self.verdict)


def run(options: RunOptions) -> RunResult:
    """Run a model on a device and judge every recurrent node in it; see the module docstring."""
    from irtool.runtime.nodes import probe_model

    report = list_devices()
    for device, precision in [(options.device, options.precision)] + ([options.compare_with] if options.compare_with else []):
        check_device(device, report)
        reason = skip_reason(device, precision, report)
        if reason:
            raise RunSkipped(f"{reason}: nothing was run")
    if options.save_outputs is not None and not Path(options.save_outputs).parent.is_dir():
        raise RunError(f"{options.save_outputs}: folder {Path(options.save_outputs).parent} does not exist")
    loaded = read_model(options.model, options.fill_defaults)
    model = loaded.model
    probed = probe_model(model)
    single = _single_node(probed)
    infos = model_inputs(model)
    chosen: Mapping[str, str] = {}
    if options.inputs is not None:
        inputs = load_inputs(options.inputs, infos)
    else:
        inputs, chosen = generate_inputs(model, infos, probed, options.seed, options.shapes,
                                         {**DEFAULT_SIZES, **options.sizes}, loaded.path.name)
    labels = output_labels(model, single)
    node_ports = {port.name for node in probed.nodes for port in node.spec.outputs}
    unknown = options.tolerance.unknown_outputs({name for names in labels for name in names} | node_ports)
    if unknown:
        raise RunError(f"--atol/--rtol name output {unknown[0]}, which {loaded.path.name} does not have; "
                       f"outputs are {', '.join(names[0] for names in labels)}")
    actual, device_run = _run_on(model, options.device, options.precision, options.config, inputs, loaded.path)
    saved = _save_outputs(options.save_outputs, labels, actual)
    common = dict(model=str(loaded.path), op=f"{single.spec.key} (layer '{single.name}')" if single else None,
                  run=device_run, inputs_from=str(options.inputs) if options.inputs is not None else f"seed {options.seed}",
                  inputs=tuple(InputSummary(name, tuple(a.shape), a.dtype.name) for name, a in inputs.items()),
                  output_shapes=tuple((names[0], tuple(a.shape)) for names, a in zip(labels, actual)),
                  filled_defaults=loaded.filled_defaults, saved_outputs=saved, shapes_chosen=chosen)
    if options.compare_with:
        expected, against_run = _run_on(model, *options.compare_with, options.config, inputs, loaded.path)
        precision = loosest_precision([device_run.precision, against_run.precision])
        diffs = diff_outputs(labels, actual, expected, options.tolerance, precision, None)
        nodes = tuple(NodeResult(n.name, n.spec.type, n.spec.version, n.where, UNJUDGED,
                                 "--compare-with judges the model's outputs device against device") for n in probed.nodes)
        return RunResult(**common, against=against_run.describe(), against_run=against_run, no_reference=None,
                         outputs=diffs, verdict=PASS if all(d.passed for d in diffs) else FAIL, nodes=nodes)
    captured, probe_check = actual, None
    if probed.needs_probe and probed.judgeable:
        captured, _ = _run_on(probed.probed, options.device, options.precision, options.config, inputs, loaded.path)
        probe_check = ProbeCheck(diff_outputs(labels, captured[:len(actual)], actual, options.tolerance,
                                              device_run.precision, None))
    nodes = tuple(judge_node(node, inputs, captured, options.tolerance, device_run.precision) for node in probed.nodes)
    outputs: tuple[OutputDiff, ...] = ()
    if single is not None:
        by_port = {d.name: d for d in nodes[0].outputs}
        outputs = tuple(by_port[single.spec.outputs[port].name] for port in _model_output_ports(single, len(actual))
                        if single.spec.outputs[port].name in by_port)
    return RunResult(**common, against="reference" if any(n.verdict in (PASS, FAIL) for n in nodes) else None,
                     against_run=None, no_reference=_why_unjudged(probed, nodes), outputs=outputs,
                     verdict=model_verdict(nodes, probe_check), nodes=nodes, probe_check=probe_check)


def model_verdict(nodes: Sequence[NodeResult], probe_check: ProbeCheck | None) -> str:
    """fail if any node fails or probing changed the model's outputs; else error if a node could not be
    judged for an error; pass if any node passed; unjudged when nothing was judged."""
    verdicts = {node.verdict for node in nodes}
    if FAIL in verdicts or (probe_check is not None and not probe_check.passed):
        return FAIL
    if ERROR in verdicts:
        return ERROR
    return PASS if PASS in verdicts else UNJUDGED


def _why_unjudged(probed: Any, nodes: Sequence[NodeResult]) -> str | None:
    if any(node.verdict in (PASS, FAIL) for node in nodes):
        return None
    if not probed.nodes:
        return "the model has no node of the recurrent family (GRU, LSTM, RNN sequences and cells)"
    return "; ".join(f"{node.name}: {node.reason}" for node in nodes)


def _single_node(probed: Any) -> Any:
    """The node of a model that is one recurrent node fed by its inputs and Consts, or None."""
    if len(probed.nodes) == 1 and probed.nodes[0].fed_by_model_inputs:
        ops = {op.get_type_name() for op in probed.model.get_ordered_ops()}
        if ops <= {"Parameter", "Constant", "Convert", "Result", probed.nodes[0].spec.type}:
            return probed.nodes[0]
    return None


def _model_output_ports(node: Any, count: int) -> list[int]:
    """For each model output, the output port of ``node`` it returns."""
    ports = {index: port for port, index in (node.model_outputs or {}).items()}
    return [ports[k] for k in range(count) if k in ports]


def judge_node(node: Any, inputs: Mapping[str, np.ndarray], captured: Sequence[np.ndarray],
               policy: TolerancePolicy, precision: str) -> NodeResult:
    """The reference on a node's captured inputs against its captured outputs."""
    from irtool.reference import evaluate
    from irtool.runtime.nodes import probed_arrays

    head = (node.name, node.spec.type, node.spec.version, node.where)
    if node.in_body:
        return NodeResult(*head, UNJUDGED, f"inside the {node.where}: not judged (a body's tensors cannot be "
                                           f"probed from outside it)")
    arrays, actual = probed_arrays(node, inputs, captured)
    try:
        expected = evaluate(node.spec.type, arrays, dict(node.attributes), version=node.spec.version)
    except ValueError as error:
        return NodeResult(*head, ERROR, f"the reference refuses it: {error}")
    if not isinstance(expected, tuple) or len(expected) != len(node.spec.outputs):
        raise IrtoolBug(f"the reference of {node.spec.key} returned {type(expected).__name__} "
                        f"instead of {len(node.spec.outputs)} arrays")
    diffs = tuple(compare_output(port.name, got, want,
                                 output_tolerance(policy, (f"{node.name}:{port.name}", port.name), precision, got.dtype),
                                 time_axis(port))
                  for port, got, want in zip(node.spec.outputs, actual, expected))
    failed = [d for d in diffs if not d.passed]
    reason = ("outside tolerance: " + ", ".join(f"{d.name} (max abs {d.max_abs:.3g}, {d.outside}/{d.total})"
                                                if not d.problem else f"{d.name} ({d.problem})" for d in failed)
              if failed else None)
    return NodeResult(*head, FAIL if failed else PASS, reason, diffs)


def generate_inputs(model: Any, infos: Sequence[InputInfo], probed: Any, seed: int,
                    shapes: Mapping[str, Sequence[int]], sizes: Mapping[str, int],
                    source: str) -> tuple[dict[str, np.ndarray], Mapping[str, str]]:
    """Seeded inputs for any model: each dynamic dim sized so that the recurrent nodes are valid;
    an input that a node takes directly gets data for its role (weights scaled by hidden_size),
    one that feeds sequence_lengths valid ragged lengths, any other uniform floats or small ints."""
    from irtool.cases import ragged_lengths
    from irtool.runtime.sizes import plan_inputs

    plan = plan_inputs(model, shapes, sizes, source)
    roles = {}
    for node in probed.judgeable:
        symbols = node.spec.attribute_symbols(node.spec.fill_defaults(node.spec.typed_attributes(node.attributes)))
        for feed in node.feeds:
            if feed.parameter is not None:
                roles.setdefault(feed.parameter, (feed.port, symbols))
    rng = np.random.default_rng(seed)
    arrays = {}
    for info in infos:
        shape = plan.shapes[info.name]
        if info.name in plan.lengths:
            arrays[info.name] = ragged_lengths(shape, plan.lengths[info.name], rng).astype(info.dtype)
        elif info.name in roles:
            port, symbols = roles[info.name]
            arrays[info.name] = port_tensor(port.name, shape, info.dtype, rng, symbols)
        else:
            arrays[info.name] = generic_tensor(shape, info.dtype, rng)
    return arrays, plan.chosen


def diff_outputs(labels: Sequence[tuple[str, ...]], actual: Sequence[np.ndarray], expected: Sequence[np.ndarray],
                 policy: TolerancePolicy, precision: str, rnn: RnnOp | None) -> tuple[OutputDiff, ...]:
    """Each output against its expected values, with the tolerance of ``precision`` (or of the
    output's own element type when that is coarser: an f16 output holds f16 roundings whatever
    the device computes in) and the policy."""
    return tuple(compare_output(names[0], got, want, output_tolerance(policy, names, precision, got.dtype),
                                rnn.time_axis(k) if rnn else None)
                 for k, (names, got, want) in enumerate(zip(labels, actual, expected)))


def output_tolerance(policy: TolerancePolicy, names: tuple[str, ...], precision: str, dtype: Any) -> Tolerance:
    """The tolerance of one output: the policy's, at ``precision`` or at the output's own element
    type when that is coarser."""
    return policy.for_output(names, loosest_precision([precision, dtype_precision(dtype)]))


def dtype_precision(dtype: np.dtype) -> str:
    """The precision an array's element type holds: f16 and bf16 for theirs, f32 for the rest."""
    return {"float16": "f16", "bfloat16": "bf16"}.get(np.dtype(dtype).name, "f32")


def _run_on(model: Any, device: str, precision: str, config: Mapping[str, str], inputs: Mapping[str, np.ndarray],
            xml_path: Path) -> tuple[list[np.ndarray], DeviceRun]:
    check_support(model, device, xml_path)
    compiled, device_run = compile_on(model, device, precision, config, xml_path)
    return infer(compiled, inputs, device), device_run


def output_labels(model: Any, node: Any = None) -> list[tuple[str, ...]]:
    """For each model output, its names: first the spec's port name when ``node`` (an RnnOp or a
    RecurrentNode of a single-op model) returns it."""
    ports = _port_names(node, len(model.outputs))
    labels = []
    for k, output in enumerate(model.outputs):
        names = [tensor_name(output)] + sorted(output.get_names())
        if ports[k] is not None:
            names.insert(0, ports[k])
        labels.append(tuple(dict.fromkeys(names)))
    firsts = [names[0] for names in labels]
    if len(set(firsts)) != len(firsts):  # two Results of one port: number them
        labels = [(f"{names[0]}#{k}",) + names for k, names in enumerate(labels)]
    return labels


def _port_names(node: Any, count: int) -> list[str | None]:
    if node is None:
        return [None] * count
    if isinstance(node, RnnOp):
        return [node.label(k) for k in range(count)]
    by_output = {index: node.spec.outputs[port].name for port, index in (node.model_outputs or {}).items()}
    return [by_output.get(k) for k in range(count)]


def _save_outputs(path: Path | None, labels: list[tuple[str, ...]], arrays: list[np.ndarray]) -> str | None:
    if path is None:
        return None
    buffer = io.BytesIO()
    np.savez(buffer, **{names[0]: array for names, array in zip(labels, arrays)})
    write_atomic(path, buffer.getvalue())
    return str(path)
