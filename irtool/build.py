"""OpCase -> ov.Model through the versioned openvino.opsetN factories, and saving it as IR.

The factory of each op version is named in one table; the attribute names the factories
take are the spec's names, and the inputs are passed in the spec's port order, so nothing
about an op is listed here twice.  openvino is imported inside the functions, so that
importing irtool (and ``irtool validate``) does not load it.
"""
from __future__ import annotations

import importlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from irtool.cases import LENGTHS_DTYPE, LENGTHS_PORT, CaseError, OpCase
from irtool.runtime.core import openvino_message
from irtool.specs import OpSpec

if TYPE_CHECKING:  # pragma: no cover
    import openvino as ov

# (op type, op version) -> (openvino module, factory).  RNNCell is ov::op::v0::RNNCell, which
# opset4 still holds; its factory takes activations, alpha and beta positionally.
FACTORIES: Mapping[tuple[str, int], tuple[str, str]] = {
    ("GRUSequence", 5): ("openvino.opset5", "gru_sequence"),
    ("LSTMSequence", 5): ("openvino.opset5", "lstm_sequence"),
    ("RNNSequence", 5): ("openvino.opset5", "rnn_sequence"),
    ("GRUCell", 3): ("openvino.opset3", "gru_cell"),
    ("LSTMCell", 4): ("openvino.opset4", "lstm_cell"),
    ("RNNCell", 0): ("openvino.opset4", "rnn_cell"),
}


class BuildError(CaseError):
    """An op case OpenVINO cannot build (an op version it cannot load, or a factory refusal)."""


def factory(op_type: str, version: int) -> Callable[..., Any]:
    """The openvino factory function of an op version; BuildError if there is none."""
    entry = FACTORIES.get((op_type, version))
    if entry is None:
        built = ", ".join(f"{t}-{v}" for t, v in FACTORIES)
        raise BuildError(f"{op_type}-{version} cannot be built; irtool builds {built}")
    module, name = entry
    return getattr(importlib.import_module(module), name)


def build_model(case: OpCase) -> "ov.Model":
    """The ov.Model of one op fed by Parameters (data, and weights if asked) and Consts (weights).

    Inputs and outputs carry the spec's port names (X, initial_hidden_state, ..., Y, Ho).
    """
    import openvino.opset1 as ops

    spec = case.spec
    if not spec.openvino_loads:
        raise BuildError(f"{spec.key} cannot be built: {spec.openvino_note}")
    attributes = case.filled_attributes
    case.symbols  # noqa: B018 - checks sizes and dynamic dims before anything is made
    rng = np.random.default_rng(case.seed)
    sources = []
    for port in case.ports:
        if case.is_parameter(port):
            dtype = LENGTHS_DTYPE if port.name == LENGTHS_PORT else case.dtype
            sources.append(parameter(port.name, case.partial_shape(port), dtype))
        else:
            sources.append(ops.constant(case.tensor(port, rng), name=port.name))
    return assemble(spec, sources, attributes)


def parameter(name: str, shape: Sequence[int], dtype: Any) -> Any:
    """A model input named ``name`` (node and tensor), -1 in ``shape`` for a dynamic dim."""
    import openvino as ov
    import openvino.opset1 as ops

    node = ops.parameter(ov.PartialShape(list(shape)), dtype, name=name)
    node.output(0).get_tensor().set_names({name})
    return node


def constant(array: np.ndarray, name: str) -> Any:
    """A Const of ``array`` (its own element type)."""
    import openvino.opset1 as ops

    return ops.constant(array, name=name)


def assemble(spec: OpSpec, sources: Sequence[Any], attributes: Mapping[str, Any]) -> "ov.Model":
    """The op made by its factory from ``sources`` (Parameters and Consts, in port order), with
    one Result per output, all named by the spec's ports; BuildError if openvino refuses it."""
    import openvino as ov
    import openvino.opset1 as ops

    try:
        op = factory(spec.type, spec.version)(*sources, **attributes, name=spec.type)
    except (RuntimeError, TypeError, ValueError) as error:
        raise BuildError(f"openvino refused {spec.key}: {openvino_message(error)}") from None
    for port, output in zip(spec.outputs, op.outputs()):
        output.get_tensor().set_names({port.name})
    results = [ops.result(output, name=port.name) for port, output in zip(spec.outputs, op.outputs())]
    parameters = [node for node in sources if node.get_type_name() == "Parameter"]
    return ov.Model(results, parameters, spec.key)


def save_model(model: "ov.Model", xml_path: str | Path) -> tuple[Path, Path]:
    """Save IR (.xml and .bin, weights kept in their own type) whole or not at all.

    Both files are written in a temporary folder beside the target and each is renamed
    into place, so neither is ever seen half-written; a failure while saving leaves the
    old pair untouched.
    """
    import openvino as ov

    xml_path = Path(xml_path)
    if xml_path.suffix != ".xml":
        raise CaseError(f"{xml_path}: the model file name must end in .xml")
    folder = xml_path.parent
    if not folder.is_dir():
        raise CaseError(f"{xml_path}: folder {folder} does not exist")
    bin_path = xml_path.with_suffix(".bin")
    with tempfile.TemporaryDirectory(prefix=f".{xml_path.stem}.", dir=folder) as scratch:
        tmp_xml = Path(scratch) / xml_path.name
        ov.save_model(model, str(tmp_xml), compress_to_fp16=False)
        os.replace(tmp_xml.with_suffix(".bin"), bin_path)
        os.replace(tmp_xml, xml_path)
    return xml_path, bin_path


def build_and_save(case: OpCase, xml_path: str | Path) -> tuple[Path, Path]:
    return save_model(build_model(case), xml_path)

