"""Single-node ONNX models of GRU, LSTM and RNN, built with onnx.helper and checked by onnx.checker.

``node_model`` is the one way irtool makes such a model, from arrays (tests, the harness,
a reproducer); ``generate`` draws the arrays from sizes and a seed first (``irtool build
onnx-gru``).  Attribute names, types and defaults, input and output names, which inputs are
optional and which element types they allow all come from the op's schema in onnx's registry
(irtool.onnx.schema); the dims come from irtool.onnx.shapes.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Mapping, Sequence

import numpy as np
import onnx
from onnx import TensorProto, checker, helper, numpy_helper

from irtool.core.errors import IrtoolError, did_you_mean
from irtool.core.files import write_atomic
from irtool.onnx import schema, shapes
from irtool.specs.cases import port_tensor, ragged_lengths

MAX_BYTES = 1 << 30  # a protobuf model cannot pass 2 GiB; irtool makes no model above 1 GiB
ELEMENT_TYPES = {"f32": "float32", "f16": "float16", "f64": "float64"}
_ELEMENT_NUMBERS = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "float64": TensorProto.DOUBLE,
                    "int32": TensorProto.INT32}
WEIGHTS = ("W", "R", "B", "P")
# IR 8 (onnx 1.10): initializers need not be graph inputs (IR 3 demands it); onnxruntime and
# OpenVINO read it.  A higher opset raises it to the opset's minimum.
MIN_IR_VERSION = 8


class ModelError(IrtoolError, ValueError):
    """A single-node model that cannot be made: bad attribute, size, input or output name."""


def _raise_first(key: str, problems: Sequence[Any]) -> None:
    if problems:
        raise ModelError(f"{key}: {problems[0].message}")


def _checked(op_type: str, opset: int, attributes: Mapping[str, Any]) -> tuple[schema.OpSchema, dict[str, Any]]:
    """The op's schema and its attributes with defaults, checked (activations as the reference reads them)."""
    from irtool.onnx.semantics import activations_per_gate

    try:
        spec = schema.get(op_type, opset)
    except schema.SchemaError as error:
        raise ModelError(str(error)) from None
    values, problems = schema.check_attributes(spec, attributes)
    _raise_first(spec.key, problems)
    directions = 2 if values["direction"] == "bidirectional" else 1
    try:
        activations_per_gate(op_type, values, directions, attributes.get("activations") is not None)
    except ValueError as error:
        raise ModelError(f"{spec.key}: {error}") from None
    return spec, values


def node_model(op_type: str, opset: int, attributes: Mapping[str, Any], inputs: Mapping[str, np.ndarray], *,
               initializers: Collection[str] = (), outputs: Sequence[str] | None = None,
               dynamic: Collection[str] = ()) -> onnx.ModelProto:
    """A model of one ``op_type`` node at ``opset``, checked by onnx.checker.

    ``inputs`` maps the ONNX input names given to their arrays (an optional input left out
    is absent from the node); those named in ``initializers`` are stored in the model, the
    others are graph inputs of the arrays' dtype and shape, the dims of the size symbols in
    ``dynamic`` (batch_size, seq_length, input_size) left symbolic under those names.
    ``outputs`` names the outputs the node produces (default: all); the graph outputs carry
    the dims the ONNX page gives them.
    """
    spec, values = _checked(op_type, opset, attributes)
    names = [p.name for p in spec.inputs]
    for name in [*inputs, *initializers]:
        if name not in names:
            raise ModelError(f"{spec.key} has no input {name!r}; its inputs are {', '.join(names)}")
    for port in spec.inputs:
        if not port.optional and port.name not in inputs:
            raise ModelError(f"{spec.key}: input {port.name} is required")
        if port.name in inputs and schema.tensor_type(inputs[port.name].dtype) not in port.allowed:
            raise ModelError(f"{spec.key}: {port.name} has dtype {inputs[port.name].dtype}; the schema allows "
                             f"{', '.join(port.allowed)}")
    layout = values.get("layout", 0)
    known = {"num_directions": 2 if values["direction"] == "bidirectional" else 1}
    if "hidden_size" in values:
        known["hidden_size"] = values["hidden_size"]
    input_dims = shapes.input_dims(op_type, layout)
    found = shapes.check(input_dims, {n: a.shape for n, a in inputs.items()}, known)
    _raise_first(spec.key, found.problems)
    sizes = found.sizes
    for symbol in dynamic:
        if symbol not in shapes.SIZE_SYMBOLS:
            raise ModelError(f"dynamic dim {symbol!r}: expected some of {', '.join(shapes.SIZE_SYMBOLS)}")

    def dims(expected: Sequence[shapes.Dim]) -> list[int | str]:
        return [d.symbol if d.symbol in dynamic else d.factor * sizes[d.symbol] for d in expected]

    output_names = [p.name for p in spec.outputs]
    wanted = output_names if outputs is None else list(outputs)
    for name in wanted:
        if name not in output_names:
            raise ModelError(f"{spec.key} has no output {name!r}; its outputs are {', '.join(output_names)}")
    if not wanted:
        raise ModelError(f"{spec.key}: the node must produce at least one output")

    node_inputs = [n if n in inputs else "" for n in names]
    while node_inputs and not node_inputs[-1]:
        node_inputs.pop()
    node_outputs = [n if n in wanted else "" for n in output_names]
    while node_outputs and not node_outputs[-1]:
        node_outputs.pop()
    given = {k: v for k, v in attributes.items() if v is not None}
    node = helper.make_node(op_type, node_inputs, node_outputs, name=f"{op_type.lower()}_node", **given)
    dtype = inputs["X"].dtype
    graph_inputs = []
    for name in names:
        if name in inputs and name not in initializers:
            graph_inputs.append(helper.make_tensor_value_info(name, _ELEMENT_NUMBERS[inputs[name].dtype.name],
                                                              dims(input_dims[name])))
    output_dims = shapes.output_dims(op_type, layout)
    graph_outputs = [helper.make_tensor_value_info(name, _ELEMENT_NUMBERS[dtype.name], dims(output_dims[name]))
                     for name in wanted]
    graph = helper.make_graph([node], f"{op_type.lower()}_opset{opset}", graph_inputs, graph_outputs,
                              initializer=[numpy_helper.from_array(inputs[n], n) for n in names
                                           if n in inputs and n in initializers])
    opsets = [helper.make_opsetid("", int(opset))]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="irtool",
                              ir_version=_ir_version(opsets))
    try:
        checker.check_model(model, full_check=True)
    except (checker.ValidationError, onnx.shape_inference.InferenceError) as error:
        raise IrtoolError(f"irtool bug: the {spec.key} model it built fails onnx.checker: {error}") from None
    return model


def lone_node_model(proto: onnx.NodeProto, opset: int, values: Mapping[str, np.ndarray],
                    initializers: Collection[str] = ()) -> onnx.ModelProto:
    """A model of one node of a graph (a copy of ``proto``, its attributes as they are), fed the
    values it was judged on: its inputs in ``initializers`` stored in the model, the others graph
    inputs of their arrays' shapes; its outputs those of ``proto`` that ``values`` holds."""
    node = onnx.NodeProto()
    node.CopyFrom(proto)
    inputs = [name for name in dict.fromkeys(node.input) if name]
    outputs = [name for name in node.output if name and name in values]

    def info(name: str) -> onnx.ValueInfoProto:
        array = values[name]
        return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape))

    graph = helper.make_graph([node], f"{proto.op_type.lower()}_alone",
                              [info(n) for n in inputs if n not in initializers], [info(n) for n in outputs],
                              initializer=[numpy_helper.from_array(values[n], n) for n in inputs if n in initializers])
    opsets = [helper.make_opsetid("", int(opset))]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="irtool", ir_version=_ir_version(opsets))
    checker.check_model(model)
    return model


def _ir_version(opsets: list[onnx.OperatorSetIdProto]) -> int:
    try:
        minimum = helper.find_min_ir_version_for(opsets)
    except ValueError:  # opsets 2 to 4 are in no onnx release's table; IR 3 covers them
        minimum = 3
    return max(minimum, MIN_IR_VERSION)


@dataclass(frozen=True)
class Generated:
    """A generated model and the values of its graph inputs (what a run feeds it)."""

    model: onnx.ModelProto
    feeds: dict[str, np.ndarray] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)


def generate(op_type: str, opset: int, attributes: Mapping[str, Any], *, batch: int = 2, seq_length: int = 4,
             input_size: int = 8, optional_inputs: Collection[str] = ("B", "sequence_lens", "initial_h", "initial_c"),
             sequence_lens: Sequence[int] | None = None, outputs: Sequence[str] | None = None,
             weights_as_inputs: bool = False, element_type: str = "f32", seed: int = 0,
             dynamic: Collection[str] = ()) -> Generated:
    """A single-node model with seeded data of the given sizes.

    ``hidden_size`` comes from the attributes (required here: it sizes W and R).  The
    ``optional_inputs`` the op has are present (others are left out of the node); sequence
    lengths are ``sequence_lens`` or ragged ones drawn from the seed; the other tensors are
    drawn as for IR models (irtool.specs.cases.port_tensor: W, R, B and P in +-1/sqrt(hidden_size),
    the rest in [-1, 1)).  W, R, B and P are initializers unless ``weights_as_inputs``.
    ``dynamic`` names the size symbols (batch_size, seq_length, input_size) left symbolic.
    """
    spec, values = _checked(op_type, opset, attributes)
    if "hidden_size" not in values:
        raise ModelError(f"{spec.key}: hidden_size is needed to size W and R")
    if element_type not in ELEMENT_TYPES:
        raise ModelError(f"element type is {element_type!r}{did_you_mean(element_type, ELEMENT_TYPES)}; "
                         f"expected one of {', '.join(ELEMENT_TYPES)}")
    optional = {p.name for p in spec.inputs if p.optional}
    unknown = sorted(set(optional_inputs) - {p.name for p in spec.inputs})
    if unknown:
        raise ModelError(f"{spec.key} has no input {unknown[0]!r}{did_you_mean(unknown[0], optional)}; "
                         f"its optional inputs are {', '.join(sorted(optional))}")
    if sequence_lens is not None and "sequence_lens" not in optional:
        raise ModelError(f"{spec.key} has no sequence_lens input")
    symbols = {"batch_size": batch, "seq_length": seq_length, "input_size": input_size,
               "hidden_size": values["hidden_size"], "num_directions": 2 if values["direction"] == "bidirectional" else 1}
    for name, value in symbols.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ModelError(f"{name} is {value!r}; expected a positive integer")
    dtype = np.dtype(ELEMENT_TYPES[element_type])
    dims = shapes.input_dims(op_type, values.get("layout", 0))
    present = [p.name for p in spec.inputs
               if not p.optional or p.name in optional_inputs or (p.name == "sequence_lens" and sequence_lens)]
    shape_of = {name: tuple(d.factor * symbols[d.symbol] for d in dims[name]) for name in present}
    total = sum(math.prod(s) for s in shape_of.values()) * dtype.itemsize
    if total > MAX_BYTES:
        raise ModelError(f"the tensors would take {total} bytes; irtool builds models up to {MAX_BYTES} bytes")
    rng = np.random.default_rng(seed)
    arrays: dict[str, np.ndarray] = {}
    for name in present:
        if name == "sequence_lens":
            lengths = (np.asarray(sequence_lens, dtype=np.int64) if sequence_lens is not None
                       else ragged_lengths((batch,), seq_length, rng))
            if lengths.shape != (batch,) or lengths.min() < 0 or lengths.max() > seq_length:
                raise ModelError(f"sequence_lens is {lengths.tolist()}; expected {batch} values in [0, {seq_length}]")
            arrays[name] = lengths.astype(np.int32)
        else:
            arrays[name] = port_tensor("weights" if name in WEIGHTS else "data", shape_of[name], dtype, rng, symbols)
    initializers = () if weights_as_inputs else [n for n in WEIGHTS if n in arrays]
    model = node_model(op_type, opset, attributes, arrays, initializers=initializers, outputs=outputs,
                       dynamic=dynamic)
    feeds = {n: a for n, a in arrays.items() if n not in initializers}
    return Generated(model, feeds, symbols)


def _write(path: str | Path, suffix: str, what: str, data: bytes) -> Path:
    """Write ``data`` whole or not at all (a temporary name beside it, renamed into place),
    never over anything but a regular file (a FIFO, device or folder stays)."""
    path = Path(path)
    if path.suffix != suffix:
        raise ModelError(f"{path}: the {what} file name must end in {suffix}")
    if not path.parent.is_dir():
        raise ModelError(f"{path}: folder {path.parent} does not exist")
    if path.exists() and not path.is_file():
        raise ModelError(f"{path} exists and is not a regular file; refusing to replace it")
    write_atomic(path, data)
    return path


def save(model: onnx.ModelProto, path: str | Path) -> Path:
    """Write ``model`` to ``path`` (.onnx), atomically."""
    return _write(path, ".onnx", "model", model.SerializeToString())


def save_inputs(feeds: Mapping[str, np.ndarray], path: str | Path) -> Path:
    """Write the graph inputs' values as an .npz keyed by ONNX input name, atomically."""
    buffer = io.BytesIO()
    np.savez(buffer, **feeds)
    return _write(path, ".npz", "inputs", buffer.getvalue())
