"""OpCase -> ov.Model through the versioned openvino.opsetN factories, and saving it as IR.

The factory of each op version comes from its spec (OpSpec.factory: the spec's ``factory``
key, or openvino.opsetN.snake_case_type by OpenVINO's own naming); the attribute names the
factories take are the spec's names, and the inputs are passed in the spec's port order, so
nothing about an op is listed here.  openvino is imported inside the functions, so that
importing irtool (and ``irtool validate``) does not load it.
"""
from __future__ import annotations

import importlib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from irtool.core.errors import Unsupported
from irtool.core.files import FileError, replace_files, writable_target
from irtool.runtime.core import openvino_message, openvino_release
from irtool.specs import OpSpec, registry
from irtool.specs.cases import CaseError, OpCase

if TYPE_CHECKING:  # pragma: no cover
    import openvino as ov


class BuildError(CaseError):
    """An op case OpenVINO cannot build (an op version it cannot load, or a factory refusal)."""


def buildable() -> list[OpSpec]:
    """The op versions irtool builds: those whose spec names an openvino factory."""
    return [spec for spec in registry() if spec.factory is not None]


def factory(spec: OpSpec) -> Callable[..., Any]:
    """The openvino factory function of an op version; BuildError if its spec names none,
    Unsupported if this openvino lacks the one it names."""
    if spec.factory is None:
        why = spec.openvino_note or f"irtool builds {', '.join(s.key for s in buildable())}"
        raise BuildError(f"{spec.key} cannot be built: {why}")
    module, _, name = spec.factory.rpartition(".")
    found = getattr(opset_module(module), name, None)
    if found is None:  # an older release than the spec's: it cannot run the case
        raise Unsupported(f"{spec.key} cannot be built: openvino {openvino_release()} has no "
                          f"{spec.factory} (named by {spec.path})")
    return found


def opset_module(module: str) -> Any:
    """The module ``openvino.opsetN`` (or ``openvino.op``) names in openvino 2025 and later, or
    where releases before 2025 keep it (``openvino.runtime.opsetN``); None if this release has
    neither."""
    head, _, rest = module.partition(".")
    for name in (module, f"{head}.runtime.{rest}") if head == "openvino" else (module,):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def build_model(case: OpCase) -> "ov.Model":
    """The ov.Model of one op fed by Parameters (data, and weights if asked) and Consts (weights).

    Inputs and outputs carry the spec's port names (X, initial_hidden_state, ..., Y, Ho).  With
    ``transform = "sequence_to_ti"`` OpenVINO's own pass (ConvertSequenceToTensorIterator, the one
    its CPU tests apply) turns the sequence into a TensorIterator over its cell, and with
    ``"decompose_cell"`` a cell becomes its equations in plain ops, before anything compiles it:
    the device then runs that path, whose outputs are judged as the op's
    (irtool.pipeline.prepare.prepare_equivalent).
    """
    spec = case.spec
    factory(spec)  # an op version without a factory is refused before anything is made
    attributes = case.filled_attributes
    case.symbols  # noqa: B018 - checks sizes and dynamic dims before anything is made
    case.check_memory()
    rng = np.random.default_rng(case.seed)
    sources = []
    for port in case.ports:
        if case.is_parameter(port):
            sources.append(parameter(port.name, case.partial_shape(port), case.port_dtype(port)))
        else:
            sources.append(constant(port.name, case.tensor(port, rng)))
    model = assemble(spec, sources, attributes)
    if case.transform == "sequence_to_ti":
        _sequence_to_tensor_iterator(model, spec)
    elif case.transform == "decompose_cell":
        _decompose_cell(model, spec, attributes)
    return model


def _decompose_cell(model: "ov.Model", spec: OpSpec, attributes: Mapping[str, Any]) -> None:
    """The cell of ``model`` replaced, in place, by its equations in plain opset ops (MatMul, Add,
    Multiply, Split, the activations, Clamp for clip): what OpenVINO's cell decomposition passes
    make of it, built here through the opset API, which has no such pass.  Gate orders and
    bias layouts are the spec's: GRU z, r, h (with linear_before_reset, B holds the hidden gate's
    recurrent bias apart); LSTM f, i, c, o; RNN one gate."""
    ops = opset_module("openvino.opset4")
    cell = next(op for op in model.get_ordered_ops() if op.get_type_name() == spec.type)
    x, h, *rest = (cell.input_value(k) for k in range(cell.get_input_size()))
    c = rest.pop(0) if spec.type == "LSTMCell" else None
    w, r, b = rest[:3]
    names = [a.lower() for a in attributes["activations"]]
    clip = float(attributes.get("clip") or 0.0)
    lbr = bool(attributes.get("linear_before_reset"))
    gates = {"GRUCell": 3, "LSTMCell": 4, "RNNCell": 1}[spec.type]

    def act(name: str, value: Any, clipped: bool = True) -> Any:
        if clipped and 0 < clip < float("inf"):
            value = ops.clamp(value, -clip, clip)
        return {"relu": ops.relu, "sigmoid": ops.sigmoid, "tanh": ops.tanh}[name](value)

    def parts(value: Any, count: int, axis: int) -> list[Any]:
        return list(ops.split(value, ops.constant(np.int64(axis)), count).outputs()) if count > 1 else [value]

    xw = ops.matmul(x, w, False, True)  # [batch, gates * hidden]
    if spec.type == "GRUCell":
        wz, wr, wh = parts(xw, 3, 1)
        rz, rr, rh = parts(r, 3, 0)
        biases = parts(b, 4 if lbr else 3, 0)
        z = act(names[0], ops.add(ops.add(wz, ops.matmul(h, rz, False, True)), biases[0]))
        rg = act(names[0], ops.add(ops.add(wr, ops.matmul(h, rr, False, True)), biases[1]))
        if lbr:
            hidden = ops.multiply(rg, ops.add(ops.matmul(h, rh, False, True), biases[3]))
        else:
            hidden = ops.matmul(ops.multiply(rg, h), rh, False, True)
        candidate = act(names[1], ops.add(ops.add(wh, hidden), biases[2]))
        one = ops.constant(np.ones((), dtype=x.get_element_type().to_dtype()))
        outputs = [ops.add(ops.multiply(ops.subtract(one, z), candidate), ops.multiply(z, h))]
    else:
        pre = ops.add(ops.add(xw, ops.matmul(h, r, False, True)), b)
        if spec.type == "RNNCell":
            outputs = [act(names[0], pre)]
        else:
            f, i, g, o = parts(pre, gates, 1)
            new_c = ops.add(ops.multiply(act(names[0], f), c), ops.multiply(act(names[0], i), act(names[1], g)))
            outputs = [ops.multiply(act(names[0], o), act(names[2], new_c, clipped=False)), new_c]  # clip: gates only
    for port, (old, new) in enumerate(zip(cell.outputs(), outputs)):
        names_of = old.get_tensor().get_names()
        new.output(0).get_tensor().set_names(set(names_of))
        new.set_friendly_name(f"{cell.get_friendly_name()}.{port}")  # what ran is found by these names
        for target in list(old.get_target_inputs()):
            target.replace_source_output(new.output(0))
    model.validate_nodes_and_infer_types()


def _sequence_to_tensor_iterator(model: "ov.Model", spec: OpSpec) -> None:
    """OpenVINO's ConvertSequenceToTensorIterator on ``model``, in place; Unsupported where this
    release's Python API lacks it, BuildError where it left the sequence as it was."""
    try:
        from openvino._offline_transformations import convert_sequence_to_tensor_iterator_transformation
    except ImportError:
        raise Unsupported(f"openvino {openvino_release()} has no convert_sequence_to_tensor_iterator_"
                          f"transformation in its Python API") from None
    convert_sequence_to_tensor_iterator_transformation(model)
    if any(op.get_type_name() == spec.type for op in model.get_ordered_ops()):
        raise BuildError(f"{spec.key}: OpenVINO's ConvertSequenceToTensorIterator left the sequence as it was")


def constant(name: str, array: np.ndarray) -> Any:
    """A Const node holding a copy of ``array``.  ``ov.op.Constant`` copies the data once;
    ``opset1.constant`` takes about ten times the array's size on the way (measured with
    openvino 2026.4.1: 4.2 GB for a 432 MB array)."""
    node = opset_module("openvino.op").Constant(np.ascontiguousarray(array))
    node.set_friendly_name(name)
    return node


def probe_model() -> "ov.Model":
    """The smallest model a device compiles: one Parameter through a Relu.  A device that refuses
    it refuses the compile options, not a case."""
    import openvino as ov

    ops = opset_module("openvino.opset1")
    source = parameter("x", [1, 2], np.float32)
    return ov.Model([ops.result(ops.relu(source))], [source], "probe")


def parameter(name: str, shape: Sequence[int | tuple[int, int]], dtype: Any) -> Any:
    """A model input named ``name`` (node and tensor), -1 in ``shape`` for a dynamic dim and
    (min, max) for a bounded one."""
    import openvino as ov

    ops = opset_module("openvino.opset1")
    dims = [ov.Dimension(*dim) if isinstance(dim, tuple) else dim for dim in shape]  # (min, max): bounded
    node = ops.parameter(ov.PartialShape(dims), dtype, name=name)
    node.output(0).get_tensor().set_names({name})
    return node


def assemble(spec: OpSpec, sources: Sequence[Any], attributes: Mapping[str, Any]) -> "ov.Model":
    """The op made by its factory from ``sources`` (Parameters and Consts, in port order), with
    one Result per output, all named by the spec's ports; BuildError if openvino refuses it."""
    import openvino as ov

    ops = opset_module("openvino.opset1")
    try:
        op = factory(spec)(*sources, **attributes, name=spec.type)
    except (RuntimeError, TypeError, ValueError) as error:
        raise BuildError(f"openvino refused {spec.key}: {openvino_message(error)}") from None
    for port, output in zip(spec.outputs, op.outputs()):
        output.get_tensor().set_names({port.name})
    results = [ops.result(output, name=port.name) for port, output in zip(spec.outputs, op.outputs())]
    parameters = [node for node in sources if node.get_type_name() == "Parameter"]
    return ov.Model(results, parameters, spec.key)


def save_model(model: "ov.Model", xml_path: str | Path) -> tuple[Path, Path]:
    """Save IR (.xml and .bin, weights kept in their own type) whole or not at all.

    Both files are written in a temporary folder beside the target, then renamed into place
    together (:func:`irtool.core.files.replace_files`): neither is ever seen half-written, and a
    failure while saving or renaming leaves the old pair untouched.  Only regular files (or
    nothing) are replaced.
    """
    import openvino as ov

    xml_path = Path(xml_path)
    bin_path = check_model_path(xml_path)
    try:
        folder = tempfile.TemporaryDirectory(prefix=f".{xml_path.stem}.", dir=xml_path.parent)
    except OSError as error:
        raise FileError(f"{xml_path}: cannot write in {xml_path.parent} ({error.strerror})") from None
    with folder as scratch:
        tmp_xml = Path(scratch) / xml_path.name
        try:
            ov.save_model(model, str(tmp_xml), compress_to_fp16=False)
        except RuntimeError as error:
            raise BuildError(f"{xml_path}: openvino could not save the model: {openvino_message(error)}") from None
        replace_files([(tmp_xml.with_suffix(".bin"), bin_path), (tmp_xml, xml_path)], "model file")
    return xml_path, bin_path


def check_model_path(xml_path: Path) -> Path:
    """The .bin beside a model path that can be written; CaseError (FileError) before any work if not."""
    if xml_path.suffix != ".xml":
        raise CaseError(f"{xml_path}: the model file name must end in .xml")
    bin_path = xml_path.with_suffix(".bin")
    for path in (xml_path, bin_path):
        writable_target(path, "model file")
    return bin_path


def build_and_save(case: OpCase, xml_path: str | Path) -> tuple[Path, Path]:
    check_model_path(Path(xml_path))  # before the model is made: a bad target costs nothing
    return save_model(build_model(case), xml_path)

