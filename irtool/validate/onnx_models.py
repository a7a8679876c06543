"""``irtool validate model.onnx``: onnx.checker, then irtool's checks of every GRU, LSTM and RNN node.

Each node of those types, in the main graph and in the subgraphs of If, Loop and Scan nodes
at any depth, is checked against its op's schema in the model's opset (onnx's registry, through irtool.onnx.schema): attribute names, types and
the values the page allows, the activations (names, one set per direction, alpha/beta),
the input count, element types against the type constraints, and every input and
declared output dim against the dims the ONNX page gives (irtool.onnx.shapes), with the
shapes onnx's shape inference finds.  Every finding is a Diagnostic with an ONNXnnn code;
``layer_id`` is the node's index in the graph (in a subgraph, the path to it: ``3/then_branch/0``
is node 0 of the then_branch of main-graph node 3), ``layer_name`` its name, ``port_id`` the
ONNX input or output name.  Nothing here raises for a bad file; only an unreadable path
raises OSError.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import onnx
from onnx import TensorProto, checker, shape_inference

from irtool.core.activity import doing
from irtool.core.diagnostics import CODES, Diagnostic, FileReport, sorted_diagnostics
from irtool.core.memory import memory_limit
from irtool.core.model_files import ModelFileError
from irtool.ir.parse import IRParseError, read_ir_bytes
from irtool.onnx import schema, shapes
from irtool.onnx.external import check_external, external_tensors, tensor_array
from irtool.onnx.subgraphs import graphs, placed_nodes

_PROBLEM_CODES = {"unknown": "ONNX010", "missing": "ONNX011", "type": "ONNX012", "value": "ONNX013"}


def _reporter(report: FileReport) -> Callable[..., None]:
    def add(code: str, message: str, **where: Any) -> None:
        report.diagnostics.append(Diagnostic(code, CODES[code].severity, message, path=report.path, **where))
    return add


def validate_onnx_file(path: str | Path, max_bytes: int) -> FileReport:
    """Check one .onnx file; OSError only if the path cannot be read."""
    path = Path(path)
    report = FileReport(str(path))
    add = _reporter(report)
    try:
        data = read_ir_bytes(path, max_bytes)  # the bounded, non-blocking read IR files get
    except IRParseError as error:  # its only kind here: too large
        add("ONNX002", error.message, expected=f"<= {max_bytes} bytes")
        report.unchecked = error.message
        return report
    try:
        model = onnx.load_model_from_string(data)
    except Exception as error:  # protobuf's DecodeError and friends: the file is not an ONNX model
        add("ONNX001", f"the file is not an ONNX model: {type(error).__name__}: {_first_line(error)}")
        report.unchecked = "not an ONNX model"
        return report
    if not data or not model.graph.node and not model.opset_import:
        add("ONNX001", "the file is not an ONNX model: it holds no graph and no opset import")
        report.unchecked = "not an ONNX model"
        return report
    refused = check_external(model, path)
    for refusal in refused:
        add("ONNX005", refusal.message, found=refusal.tensor)
    if refused:
        checked = "not run, external data refused"
    else:
        try:  # external data: onnx checks it from the model's folder (given the path), never the working one
            with doing(path, "checking it with onnx.checker"):
                checker.check_model(str(path) if external_tensors(model) else model, full_check=True)
            checked = "valid"
        except Exception as error:  # checker.ValidationError, shape inference errors
            add("ONNX003", f"onnx.checker rejects the model: {_first_line(error)}")
            checked = "rejected"
    nodes = _check_nodes(model, add, path)
    add("ONNX000", f"checked with onnx.checker (onnx {onnx.__version__}; {checked}) and irtool's "
                   f"checks of {nodes} GRU/LSTM/RNN node{'s' if nodes != 1 else ''} against their ONNX schema")
    report.diagnostics[:] = sorted_diagnostics(report.diagnostics)
    return report


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# --- the graph's known shapes and types ----------------------------------------------------

class _Tensors:
    """Element type and shape of every tensor the graph declares or onnx's shape inference finds."""

    def __init__(self, model: onnx.ModelProto, path: Path) -> None:
        self.path = path
        try:
            inferred = shape_inference.infer_shapes(model, strict_mode=False).graph
        except Exception:  # inference fails on a broken model; the declared shapes remain
            inferred = model.graph
        self.types: dict[str, int] = {}
        self.shapes: dict[str, tuple[int | None, ...] | None] = {}
        # ONNX names every tensor once across a graph and its subgraphs: one table holds them all
        declared = list(graphs(model.graph))
        infos = [info for graph in graphs(inferred) for info in graph.value_info]
        for info in infos + [info for graph in declared for info in [*graph.input, *graph.output]]:
            tensor = info.type.tensor_type
            self.types[info.name] = tensor.elem_type
            self.shapes[info.name] = (tuple(d.dim_value if d.HasField("dim_value") else None
                                            for d in tensor.shape.dim) if tensor.HasField("shape") else None)
        self.declared_outputs = {info.name for graph in declared for info in [*graph.output, *graph.value_info]}
        self.initializers = {t.name: t for graph in declared for t in graph.initializer}
        for tensor in self.initializers.values():
            self.types[tensor.name] = tensor.data_type
            self.shapes[tensor.name] = tuple(tensor.dims)


def _type_name(element: int) -> str:
    try:
        return f"tensor({TensorProto.DataType.Name(element).lower()})"
    except ValueError:
        return f"tensor(<{element}>)"


def _opset(model: onnx.ModelProto) -> int | None:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


def _check_nodes(model: onnx.ModelProto, add: Callable[..., None], path: Path) -> int:
    recurrent = [(placed.path, placed.node) for placed in placed_nodes(model.graph)
                 if placed.node.op_type in schema.OPS and placed.node.domain in ("", "ai.onnx")]
    if not recurrent:
        return 0
    opset = _opset(model)
    try:
        if opset is None:
            raise schema.SchemaError("the model imports no opset of the default domain")
        specs = {op: schema.get(op, opset) for op in {n.op_type for _, n in recurrent}}
    except schema.SchemaError as error:
        count = len(recurrent)
        add("ONNX004", f"{error}: {'its' if count > 1 else 'the'} {count} GRU/LSTM/RNN "
                       f"node{'s are' if count > 1 else ' is'} not checked")
        return 0
    tensors = _Tensors(model, path)
    for index, node in recurrent:
        _check_node(index, node, specs[node.op_type], tensors, add)
    return len(recurrent)


def _check_node(index: str, node: onnx.NodeProto, spec: schema.OpSchema, tensors: _Tensors,
                add: Callable[..., None]) -> None:
    where = {"layer_id": str(index), "layer_name": node.name or None}
    label = f"node {index}{f' {node.name!r}' if node.name else ''} ({spec.key})"

    def report(code: str, message: str, **extra: Any) -> None:
        add(code, f"{label}: {message}", **where, **extra)

    attributes = schema.node_attributes(node)
    values, problems = schema.check_attributes(spec, attributes)
    for problem in problems:
        report(_PROBLEM_CODES[problem.kind], problem.message, attribute=problem.name, expected=problem.expected,
               found=problem.found)
    if not {p.name for p in problems} & {"activations", "activation_alpha", "activation_beta", "direction"}:
        _check_activations(spec, values, attributes, report)

    inputs = list(node.input)
    if len(inputs) > len(spec.inputs):
        report("ONNX020", f"{len(inputs)} inputs; {spec.key} takes at most {len(spec.inputs)} "
                          f"({', '.join(p.name for p in spec.inputs)})", expected=str(len(spec.inputs)),
               found=str(len(inputs)))
    if len(node.output) > len(spec.outputs):
        report("ONNX020", f"{len(node.output)} outputs; {spec.key} has {len(spec.outputs)} "
                          f"({', '.join(p.name for p in spec.outputs)})", expected=str(len(spec.outputs)),
               found=str(len(node.output)))
    given = {port.name: tensor for port, tensor in zip(spec.inputs, inputs) if tensor}
    for port in spec.inputs:
        if not port.optional and port.name not in given:
            report("ONNX020", f"input {port.name} is missing; it is required", port_id=port.name)
    _check_types(spec, given, tensors, report)
    if "direction" not in values or values.get("layout", 0) not in (0, 1):
        return
    _check_shapes(spec, values, given, dict(zip([p.name for p in spec.outputs], node.output)), tensors, report)


def _check_activations(spec: schema.OpSchema, values: dict[str, Any], attributes: dict[str, Any],
                       report: Callable[..., None]) -> None:
    from irtool.onnx.semantics import activations_per_gate

    directions = 2 if values["direction"] == "bidirectional" else 1
    try:
        activations_per_gate(spec.op_type, values, directions, attributes.get("activations") is not None)
    except ValueError as error:
        text = str(error)
        attribute = next((n for n in ("activation_alpha", "activation_beta") if text.startswith(n)), "activations")
        report("ONNX014", text, attribute=attribute)


def _check_types(spec: schema.OpSchema, given: dict[str, str], tensors: _Tensors, report: Callable[..., None]) -> None:
    shared: tuple[str, str] | None = None
    for port in spec.inputs:
        element = tensors.types.get(given.get(port.name, ""))
        if not element:
            continue
        name = _type_name(element)
        if name not in port.allowed:
            report("ONNX040", f"input {port.name} is {name}; {spec.key} allows {', '.join(port.allowed)} "
                              f"({port.type_param})", port_id=port.name, expected=", ".join(port.allowed), found=name)
        elif port.type_param == "T":
            if shared and name != shared[1]:
                report("ONNX040", f"input {port.name} is {name}; expected {shared[1]}, the type of {shared[0]} "
                                  f"(both are T)", port_id=port.name, expected=shared[1], found=name)
            shared = shared or (port.name, name)


def _check_shapes(spec: schema.OpSchema, values: dict[str, Any], given: dict[str, str], outputs: dict[str, str],
                  tensors: _Tensors, report: Callable[..., None]) -> None:
    layout = values.get("layout", 0)
    known = {"num_directions": 2 if values["direction"] == "bidirectional" else 1}
    if "hidden_size" in values and values["hidden_size"] > 0:
        known["hidden_size"] = values["hidden_size"]
    input_dims = shapes.input_dims(spec.op_type, layout)
    found = {name: tensors.shapes.get(tensor) for name, tensor in given.items() if name in input_dims}
    inputs_check = shapes.check(input_dims, found, known)
    sizes = inputs_check.sizes
    for problem in inputs_check.problems:
        report("ONNX030" if problem.dim is None else "ONNX031", f"input {problem.message}", port_id=problem.port,
               expected=problem.expected, found=problem.found)
    output_dims = shapes.output_dims(spec.op_type, layout)
    declared = {name: tensors.shapes.get(tensor) for name, tensor in outputs.items()
                if tensor and tensor in tensors.declared_outputs}
    for problem in shapes.check(output_dims, declared, sizes, inputs_check.origins).problems:
        report("ONNX030" if problem.dim is None else "ONNX032", f"output {problem.message}", port_id=problem.port,
               expected=problem.expected, found=problem.found)
    lengths = tensors.initializers.get(given.get("sequence_lens", ""))
    seq = sizes.get("seq_length")
    if lengths is not None and seq is not None and lengths.data_type == TensorProto.INT32:
        try:
            values_ = tensor_array(lengths, tensors.path, memory_limit()).reshape(-1)
        except ModelFileError:  # ONNX005 says why
            return
        bad = np.flatnonzero((values_ < 0) | (values_ > seq))
        if bad.size:
            k = int(bad[0])
            report("ONNX050", f"sequence_lens[{k}] is {int(values_[k])}; expected a value in [0, seq_length={seq}]",
                   port_id="sequence_lens", expected=f"[0, {seq}]", found=str(int(values_[k])))


def check_onnx_with_openvino(report: FileReport, path: str | Path) -> FileReport:
    """``--with-openvino`` for .onnx: OpenVINO's ONNX frontend reads and converts the model (IR080/IR081)."""
    from irtool.runtime.core import openvino_release
    from irtool.runtime.frontends import read_ir_frontend

    version = openvino_release()
    add = _reporter(report)
    model, problem = read_ir_frontend(path, "onnx")
    if model is None:
        add("IR080", f"OpenVINO {version} cannot read the file: {problem}")
    else:
        add("IR081", f"OpenVINO {version} read the file (ONNX frontend)")
    return replace(report, diagnostics=sorted_diagnostics(report.diagnostics))
