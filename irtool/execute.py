"""Run an IR model on an OpenVINO device with a stated precision and judge its outputs.

The steps of :func:`run` are small functions of their own: check the device, read the
model (optionally with the spec's defaults written in), find whether it is one RNN-family
op fed by Parameters and Consts, make or load the inputs, ask the device whether it
supports every op (``query_model``), compile with an explicit INFERENCE_PRECISION_HINT,
read back the effective precision, infer, and diff against the numpy reference or a
second device.  Any step that cannot go on raises :class:`RunError` with one line naming
the file, input or device and what was expected; nothing here prints or exits.

openvino is imported inside the functions, so that importing irtool does not load it.
"""
from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from irtool.cases import DEFAULT_SIZES, FALLBACK_SIZE, generic_tensor, port_tensor, time_axis
from irtool.compare import OutputDiff, Tolerance, TolerancePolicy, compare_output, loosest_precision
from irtool.errors import IrtoolBug, IrtoolError
from irtool.files import write_atomic
from irtool.shapes import DYNAMIC, Dim, Interval, format_shape
from irtool.specs import OpSpec, PortSpec, registry

if TYPE_CHECKING:  # pragma: no cover
    import openvino as ov

VIRTUAL_DEVICES = ("AUTO", "HETERO", "MULTI", "BATCH")
PHYSICAL_FAMILIES = ("CPU", "GPU", "NPU")
# OPTIMIZATION_CAPABILITIES entries that are precisions, by the names irtool uses.
CAPABILITY_PRECISIONS = {"FP32": "f32", "BF16": "bf16", "FP16": "f16", "INT8": "i8", "INT16": "i16",
                         "U8": "u8", "BIN": "u1", "FP64": "f64"}
PRECISION_HINT = "INFERENCE_PRECISION_HINT"
PASS_THROUGH_OPS = ("Parameter", "Constant", "Result")
_NODE = re.compile(r"^While validating node '.*' with friendly_name '([^']*)':$")
_LIBRARY_PATH = re.compile(r'"/[^"]*/([^/"]+)"')  # a plugin's install path says nothing to the user


class RunError(IrtoolError):
    """The model, its inputs or the device stop the run."""


def openvino_message(error: BaseException) -> str:
    """What an OpenVINO exception says is wrong, on one line, without its source locations."""
    lines = [_LIBRARY_PATH.sub(r'"\1"', line.strip()) for line in str(error).splitlines() if line.strip()]
    useful = [_NODE.sub(r"layer '\1':", line) for line in lines if not line.startswith(("Exception from", "Check '"))]
    if useful:
        return " ".join(useful)
    return lines[-1] if lines else type(error).__name__


@lru_cache(maxsize=1)
def core() -> "ov.Core":
    """One OpenVINO Core per process: creating one loads the plugin registry."""
    import openvino as ov

    return ov.Core()


# ----------------------------------------------------------------------------- devices

@dataclass(frozen=True)
class DeviceInfo:
    name: str
    full_name: str
    precisions: tuple[str, ...]
    capabilities: tuple[str, ...]


@dataclass(frozen=True)
class AbsentDevice:
    name: str
    reason: str


@dataclass(frozen=True)
class DeviceReport:
    available: tuple[DeviceInfo, ...]
    virtual: tuple[str, ...]
    absent: tuple[AbsentDevice, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.available)


def list_devices() -> DeviceReport:
    """What OpenVINO sees: physical devices with names and precisions, the virtual ones, and
    the physical families that are absent here with the reason."""
    ov_core = core()
    available = []
    for name in ov_core.available_devices:
        capabilities = tuple(str(c) for c in _device_property(name, "OPTIMIZATION_CAPABILITIES", ()))
        precisions = tuple(CAPABILITY_PRECISIONS[c] for c in capabilities if c in CAPABILITY_PRECISIONS)
        available.append(DeviceInfo(name, str(_device_property(name, "FULL_DEVICE_NAME", name)),
                                    precisions, capabilities))
    names = [d.name for d in available]
    absent = tuple(AbsentDevice(family, _absence_reason(family)) for family in PHYSICAL_FAMILIES
                   if not any(same_device(family, name) for name in names))
    return DeviceReport(tuple(available), VIRTUAL_DEVICES, absent)


def _device_property(device: str, key: str, fallback: Any) -> Any:
    try:
        return core().get_property(device, key)
    except RuntimeError:
        return fallback


def _absence_reason(family: str) -> str:
    try:
        core().get_versions(family)
    except RuntimeError as error:
        return openvino_message(error)
    return "its plugin loads but finds no device"


def same_device(asked: str, available: str) -> bool:
    """``GPU`` names ``GPU.0`` too; ``GPU.1`` names only itself."""
    return asked == available or available.startswith(asked + ".")


def physical_devices(device: str) -> list[str]:
    """The physical devices a device string names (``HETERO:GPU,CPU`` -> GPU, CPU; bare AUTO -> [])."""
    head, _, rest = device.partition(":")
    if head not in VIRTUAL_DEVICES:
        return [device] if device else []
    names = []
    for item in filter(None, (part.strip() for part in rest.split(","))):
        if item.startswith("-"):  # AUTO:-GPU excludes a device
            continue
        names.append(item.split("(", 1)[0])  # BATCH:CPU(4)
    return names


def check_device(device: str, report: DeviceReport | None = None) -> None:
    """RunError naming the available devices if ``device`` names one that is not here."""
    report = report or list_devices()
    head = device.partition(":")[0]
    names = physical_devices(device) if head in VIRTUAL_DEVICES else [device]
    missing = [name for name in names if not any(same_device(name, have) for have in report.names)]
    if device and not missing:
        return
    reasons = {d.name: d.reason for d in report.absent}
    details = "; ".join(f"{name}: {reasons[name]}" if name in reasons else f"{name}: not known to OpenVINO"
                        for name in missing or [device or "''"])
    raise RunError(f"device {device!r} is not available here ({details}); available: "
                   f"{', '.join(report.names)}, and the virtual {', '.join(report.virtual)} "
                   f"(e.g. AUTO:{report.names[0] if report.names else 'CPU'})")


def skip_reason(device: str, precision: str, report: DeviceReport | None = None) -> str | None:
    """Why ``device`` cannot run at ``precision`` here, or None: it is absent, or one of the
    physical devices it names does not list the precision among its OPTIMIZATION_CAPABILITIES.

    The one rule for ``run`` and the harness.  A device asked for a precision it lacks does not
    refuse: it runs at another one (this CPU without bf16 runs a bf16 request at f32, a CPU with
    bf16 runs f16 as bf16), so a job at that precision would only repeat another; it is skipped.
    A virtual device needs every physical device it names (bare AUTO, MULTI...: every available
    one) to support the precision.
    """
    report = report or list_devices()
    names = physical_devices(device) or list(report.names)
    missing = [name for name in names if not any(same_device(name, have) for have in report.names)]
    if missing:
        reasons = {absent.name: absent.reason for absent in report.absent}
        return "; ".join(f"{name} is not available here: {reasons.get(name, 'not known to OpenVINO')}"
                         for name in missing)
    for info in report.available:
        if any(same_device(name, info.name) for name in names) and precision not in info.precisions:
            return (f"{info.name} does not support {precision} (its precisions: "
                    f"{', '.join(info.precisions) or 'none reported'})")
    return None


class RunSkipped(IrtoolError):
    """The run cannot happen as asked on this machine (a precision the device lacks): nothing is judged."""


# ----------------------------------------------------------------------------- model

@dataclass
class LoadedModel:
    path: Path
    model: Any  # ov.Model
    filled_defaults: tuple[str, ...] = ()  # "layer 'name' (GRUSequence): activations=sigmoid,tanh"


def read_model(xml_path: str | Path, fill_defaults: bool = False) -> LoadedModel:
    """Read IR .xml + .bin; with ``fill_defaults`` write the spec's defaults for omitted
    attributes into the XML first (OpenVINO leaves an omitted activations list empty)."""
    import openvino as ov

    xml_path = Path(xml_path)
    bin_path = xml_path.with_suffix(".bin")
    if not xml_path.is_file():
        raise RunError(f"{xml_path}: no such model file")
    filled: tuple[str, ...] = ()
    try:
        if fill_defaults:
            from irtool.ir.defaults import DefaultsError, fill_defaults as write_defaults

            try:
                result = write_defaults(xml_path.read_bytes())
            except DefaultsError as error:
                raise RunError(f"{xml_path}: {error.message}") from None
            filled = tuple(f.describe() for f in result.filled)
            weights = np.fromfile(bin_path, dtype=np.uint8) if bin_path.is_file() else np.empty(0, np.uint8)
            model = core().read_model(model=result.xml.decode("utf-8"), weights=ov.Tensor(weights))
        else:
            model = core().read_model(str(xml_path))
    except RuntimeError as error:
        raise RunError(_read_failure(xml_path, bin_path, error)) from None
    return LoadedModel(xml_path, model, filled)


def _read_failure(xml_path: Path, bin_path: Path, error: RuntimeError) -> str:
    message = openvino_message(error)
    weights_problem = "weights" in message.lower() or "bin file" in message
    if weights_problem and not bin_path.is_file():
        return f"{bin_path}: weights file not found; the Const layers of {xml_path.name} read their values from it"
    if weights_problem:
        return (f"{bin_path}: {bin_path.stat().st_size} bytes, too short for the Const layers of {xml_path.name} "
                f"(an offset + size points past its end)")
    notes = [spec.openvino_note for spec in registry() if not spec.openvino_loads and spec.type in message]
    notes += _missing_required_inputs(xml_path)
    return f"{xml_path}: OpenVINO cannot read it: {message}" + "".join(f"; {note}" for note in notes)


def _missing_required_inputs(xml_path: Path) -> list[str]:
    """Layers that omit an input the spec calls optional but OpenVINO requires (GRUCell's B)."""
    from irtool.ir import IRParseError, parse_ir

    try:
        ir = parse_ir(xml_path)
    except (IRParseError, OSError):
        return []
    notes = []
    for layer in ir.layers:
        spec = registry().for_ir(layer.type or "", layer.version)
        for port in spec.inputs[len(layer.inputs):] if spec else ():
            if port.openvino_requires:
                notes.append(f"{layer.label} ({spec.type}) has no input {port.index} ({port.name}), which the spec "
                             f"makes optional but OpenVINO requires")
    return notes


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
        return Source(port, parameter=_tensor_name(node.output(0)))
    if kind == "Constant":
        return Source(port, constant=np.array(node.get_data()))
    if _is_constant_convert(node):
        data = np.array(node.input_value(0).get_node().get_data())
        return Source(port, constant=data.astype(node.get_output_element_type(0).to_dtype()))
    return None


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value


def _tensor_name(output: Any) -> str:
    """The name a model input or output goes by: its tensor name, else its node's name."""
    names = output.get_names()
    return output.get_any_name() if names else output.get_node().get_friendly_name()


# ----------------------------------------------------------------------------- inputs

@dataclass(frozen=True)
class InputInfo:
    name: str
    names: frozenset[str]
    dims: tuple[Dim, ...]
    dtype: np.dtype

    def describe(self) -> str:
        return f"{format_shape(self.dims)} {self.dtype.name}"

    def accepts(self, shape: tuple[int, ...]) -> bool:
        return len(shape) == len(self.dims) and all(
            d == s if isinstance(d, int) else d.contains(s) for d, s in zip(self.dims, shape))


def model_inputs(model: Any) -> list[InputInfo]:
    infos = []
    for port in model.inputs:
        dims: list[Dim] = []
        for dim in port.get_partial_shape():
            if dim.is_static:
                dims.append(dim.get_length())
            else:
                upper = dim.get_max_length()
                dims.append(Interval(max(dim.get_min_length(), 0), upper if upper >= 0 else None))
        names = frozenset(port.get_names()) | {port.get_node().get_friendly_name()}
        infos.append(InputInfo(_tensor_name(port), names, tuple(dims), np.dtype(port.get_element_type().to_dtype())))
    return infos


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

@dataclass(frozen=True)
class DeviceRun:
    device: str
    requested_precision: str
    effective_precision: Mapping[str, str]  # execution device -> precision read back
    execution_devices: tuple[str, ...]
    config: Mapping[str, str]

    @property
    def precision(self) -> str:
        """The precision the tolerance is chosen by: the loosest one any device runs at."""
        values = list(self.effective_precision.values())
        return loosest_precision(values) if values else self.requested_precision

    def describe(self) -> str:
        effective = sorted(set(self.effective_precision.values()))
        return f"{self.device} ({'/'.join(effective) or 'precision unknown'})"


def check_support(model: Any, device: str, xml_path: Path) -> None:
    """RunError listing the ops the device says it does not support (query_model).

    A query that fails outright (the model cannot be transformed for the device) is left
    to the compile step, which fails the same way and whose error is explained there.
    """
    query_device = device if physical_devices(device) or device not in VIRTUAL_DEVICES else \
        f"{device}:{','.join(core().available_devices)}"
    try:
        supported = core().query_model(model, query_device)
    except RuntimeError:
        return
    unsupported = [f"{op.get_friendly_name()} ({op.get_type_name()})" for op in model.get_ordered_ops()
                   if op.get_friendly_name() not in supported]
    if unsupported:
        raise RunError(f"{device} does not support {len(unsupported)} op(s) of {xml_path.name}: "
                       f"{', '.join(unsupported)}")


def compile_on(model: Any, device: str, precision: str, config: Mapping[str, str], xml_path: Path) -> tuple[Any, DeviceRun]:
    """Compile with an explicit precision hint (the CPU would pick bf16 itself) and read back
    what the device really runs at.

    Measured with openvino 2026.4.1: CPU, AUTO, HETERO, MULTI and BATCH all accept the hint as
    a top-level property and pass it on; CPU and BATCH report it back directly, AUTO, HETERO and
    MULTI only per device under DEVICE_PROPERTIES (and BATCH refuses DEVICE_PROPERTIES).
    """
    full_config = {PRECISION_HINT: precision, **config}
    try:
        compiled = core().compile_model(model, device, full_config)
    except RuntimeError as error:
        raise RunError(explain_failure(model, device, xml_path, error)) from None
    execution = tuple(str(d) for d in _compiled_property(compiled, "EXECUTION_DEVICES", ()))
    return compiled, DeviceRun(device, precision, _effective_precision(compiled, execution), execution,
                               dict(full_config))


def _compiled_property(compiled: Any, key: str, fallback: Any) -> Any:
    try:
        return compiled.get_property(key)
    except RuntimeError:
        return fallback


def _effective_precision(compiled: Any, execution: tuple[str, ...]) -> dict[str, str]:
    direct = _compiled_property(compiled, PRECISION_HINT, None)
    if direct is not None:
        return {name: _type_name(direct) for name in execution or ("?",)}
    per_device = _compiled_property(compiled, "DEVICE_PROPERTIES", {}) or {}
    return {name: _type_name(props[PRECISION_HINT]) for name, props in per_device.items()
            if isinstance(props, Mapping) and PRECISION_HINT in props}


def _type_name(value: Any) -> str:
    return value.get_type_name() if hasattr(value, "get_type_name") else str(value)


def explain_failure(model: Any, device: str, xml_path: Path, error: RuntimeError) -> str:
    """One line for a device that cannot compile a model, with the cause where irtool knows it."""
    for op in model.get_ordered_ops():
        spec = rnn_spec(op)
        if spec is None:
            continue
        attributes = op.get_attributes()
        for name, attribute in spec.attributes.items():
            if attribute.openvino_applies_default or attribute.default in (None, [], ""):
                continue
            if attributes.get(name) in ([], "", None):
                from irtool.specs.values import format_value

                default = format_value(attribute.default)
                return (f"{device} cannot compile {xml_path.name}: layer '{op.get_friendly_name()}' ({op.get_type_name()}) "
                        f"omits {name}, which OpenVINO reads as empty instead of the spec default {default} "
                        f"(vector::_M_range_check); rerun with --fill-defaults or write {name}=\"{default}\" in the layer")
    return f"{device} cannot compile {xml_path.name}: {openvino_message(error)}"


def infer(compiled: Any, inputs: Mapping[str, np.ndarray], device: str) -> list[np.ndarray]:
    """One inference; the outputs in model output order, copied out of the request."""
    request = compiled.create_infer_request()
    feed = {}
    for index, port in enumerate(compiled.inputs):
        name = _tensor_name(port)
        if name not in inputs:
            raise IrtoolBug(f"no input array for {name}")
        feed[index] = inputs[name]
    try:
        request.infer(feed)
    except RuntimeError as error:
        raise RunError(f"inference on {device} failed: {openvino_message(error)}") from None
    return [np.array(request.get_output_tensor(i).data, copy=True) for i in range(len(compiled.outputs))]


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


@dataclass(frozen=True)
class InputSummary:
    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class RunResult:
    model: str
    op: str | None  # "GRUSequence-5 (layer 'gru')" when a reference applies
    run: DeviceRun
    inputs_from: str  # "seed 0" or the .npz path
    inputs: tuple[InputSummary, ...]
    against: str | None  # "reference", a DeviceRun description, or None
    against_run: DeviceRun | None
    no_reference: str | None
    outputs: tuple[OutputDiff, ...]
    output_shapes: tuple[tuple[str, tuple[int, ...]], ...]
    filled_defaults: tuple[str, ...] = ()
    saved_outputs: str | None = None

    @property
    def passed(self) -> bool | None:
        """True or False when outputs were compared; None when nothing was."""
        if self.against is None:
            return None
        return all(diff.passed for diff in self.outputs)


def run(options: RunOptions) -> RunResult:
    """Run a model on a device and judge it; see the module docstring for the steps."""
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
    rnn, why_not = find_rnn_op(model)
    infos = model_inputs(model)
    if options.inputs is not None:
        inputs = load_inputs(options.inputs, infos)
    else:
        inputs = make_inputs(infos, rnn, options.seed)
    labels = output_labels(model, rnn)
    unknown = options.tolerance.unknown_outputs({name for names in labels for name in names})
    if unknown:
        raise RunError(f"--atol/--rtol name output {unknown[0]}, which {loaded.path.name} does not have; "
                       f"outputs are {', '.join(names[0] for names in labels)}")
    actual, device_run = _run_on(model, options.device, options.precision, options.config, inputs, loaded.path)
    saved = _save_outputs(options.save_outputs, labels, actual)
    expected, against, against_run = None, None, None
    if options.compare_with:
        expected, against_run = _run_on(model, *options.compare_with, options.config, inputs, loaded.path)
        against = against_run.describe()
    elif rnn is not None:
        reference = reference_outputs(rnn, inputs)
        expected = [reference[port] for port in rnn.output_ports]
        against = "reference"
    diffs: tuple[OutputDiff, ...] = ()
    if expected is not None:
        precision = loosest_precision([device_run.precision] + ([against_run.precision] if against_run else []))
        diffs = diff_outputs(labels, actual, expected, options.tolerance, precision, rnn)
    return RunResult(
        model=str(loaded.path), op=f"{rnn.spec.key} (layer '{rnn.name}')" if rnn else None, run=device_run,
        inputs_from=str(options.inputs) if options.inputs is not None else f"seed {options.seed}",
        inputs=tuple(InputSummary(name, tuple(a.shape), a.dtype.name) for name, a in inputs.items()),
        against=against, against_run=against_run, no_reference=None if expected is not None else why_not,
        outputs=diffs, output_shapes=tuple((names[0], tuple(a.shape)) for names, a in zip(labels, actual)),
        filled_defaults=loaded.filled_defaults, saved_outputs=saved)


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


def output_labels(model: Any, rnn: RnnOp | None) -> list[tuple[str, ...]]:
    """For each model output, its names: the spec's port name first when the op is known."""
    labels = []
    for k, output in enumerate(model.outputs):
        names = [_tensor_name(output)] + sorted(output.get_names())
        if rnn is not None:
            names.insert(0, rnn.label(k))
        labels.append(tuple(dict.fromkeys(names)))
    firsts = [names[0] for names in labels]
    if len(set(firsts)) != len(firsts):  # two Results of one port: number them
        labels = [(f"{names[0]}#{k}",) + names for k, names in enumerate(labels)]
    return labels


def _save_outputs(path: Path | None, labels: list[tuple[str, ...]], arrays: list[np.ndarray]) -> str | None:
    if path is None:
        return None
    buffer = io.BytesIO()
    np.savez(buffer, **{names[0]: array for names, array in zip(labels, arrays)})
    write_atomic(path, buffer.getvalue())
    return str(path)
