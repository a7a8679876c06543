"""The small reads of an OpenVINO graph recognition rests on (and the rest of irtool shares through
irtool.runtime): a tensor's identity, a Constant's data (through the Convert that decompresses
it), how weights are stored, the ops a converter puts between a tensor and its reader, and an op
evaluated in this process.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from irtool.core.element_types import PACKED, unpack

Key = tuple[str, int]
LAYOUT = ("Reshape", "Squeeze", "Unsqueeze", "Convert")  # ops that keep the data (and here, its last axis)
DECOMPRESSION = ("Multiply", "Subtract", "Transpose", "Reshape", "Squeeze", "Unsqueeze")


def id_of(output: Any) -> Key:
    """A key for one output of one node that survives wrapper objects: its node's unique name in this
    process (OpenVINO's ``get_name``, ``<type>_<n>``, one per node object) and the output's index.
    Never the friendly name: a graph may repeat those (an IR written step by step from one template
    names every step's ops alike), and tensors keyed by it were read as one another."""
    return (output.get_node().get_name(), output.get_index())


def label(node: Any) -> str:
    """How messages name an op: ``MatMul 'lstm/MatMul'``."""
    return f"{node.get_type_name()} '{node.get_friendly_name()}'"


def root(value: Any) -> Any:
    """A tensor through the layout ops around it (Reshape, Squeeze, Unsqueeze, Convert): the same data,
    whatever shape a converter gave it on the way."""
    for _ in range(16):
        node = value.get_node()
        if node.get_type_name() not in LAYOUT:
            break
        value = node.input_value(0)
    return value


def narrowing(node: Any) -> bool:
    """Whether a Convert loses precision (f32 to f16 or bf16, a float to an integer): it rounds."""
    source, target = node.get_input_element_type(0), node.get_output_element_type(0)
    if source == target:
        return False
    if source.is_real() and not target.is_real():
        return True
    return target.bitwidth < source.bitwidth or (target.is_real() and source.is_real() and
                                                  target.bitwidth == source.bitwidth)


def rounding(node: Any) -> str:
    """A narrowing Convert in words: ``Convert 'g_f16' (to f16)``."""
    return f"{label(node)} (to {node.get_output_element_type(0).get_type_name()})"


def roundings(value: Any) -> list[Any]:
    """The narrowing Converts among the layout ops around a tensor (:func:`root`): an f16 round trip a
    converter wrote, nearest first."""
    found = []
    for _ in range(16):
        node = value.get_node()
        if node.get_type_name() not in LAYOUT:
            break
        if node.get_type_name() == "Convert" and narrowing(node):
            found.append(node)
        value = node.input_value(0)
    return found


def key(value: Any) -> Key:
    """A tensor's identity as data (:func:`root`)."""
    return id_of(root(value))


def last_dim(value: Any) -> int | None:
    shape = value.get_partial_shape()
    if shape.rank.is_dynamic or shape.rank.get_length() == 0 or shape[shape.rank.get_length() - 1].is_dynamic:
        return None
    return shape[shape.rank.get_length() - 1].get_length()


def operands(node: Any) -> list[Any]:
    return list(node.input_values())


def op_of(value: Any, kind: str) -> Any | None:
    node = root(value).get_node()
    return node if node.get_type_name() == kind else None


def is_one(value: Any) -> bool:
    data = constant_data(root(value).get_node())
    return data is not None and data.size > 0 and bool((np.asarray(data) == 1).all())


def constant_data(node: Any) -> np.ndarray | None:
    """The data of a Constant, or of a Constant through a Convert (f16-compressed weights); a packed
    type's (i4, u4, u1: OpenVINO's data is their bytes) one value an element."""
    kind = node.get_type_name()
    if kind == "Constant":
        return _values(node)
    if kind == "Convert" and node.input_value(0).get_node().get_type_name() == "Constant":
        return _values(node.input_value(0).get_node()).astype(node.get_output_element_type(0).to_dtype())
    return None


def _values(constant: Any) -> np.ndarray:
    name = constant.get_output_element_type(0).get_type_name()
    data = np.array(constant.get_data())
    return unpack(data, name, tuple(constant.get_output_shape(0))) if name in PACKED else data


def integer_storage(value: Any) -> str | None:
    """The integer type (i8, u8, i4, u4) constant weights are stored as where they reach ``value``
    through a Convert that decompresses them: Convert, then a zero point subtracted and a scale
    multiplied (as TFLite's dynamic-range quantization and NNCF's weight compression write them),
    through layout ops; None for anything else.  (A CPU may quantize the activations of a product
    by such weights at run time: irtool.judge.quantized.)"""
    node = value.get_node()
    for _ in range(8):
        kind = node.get_type_name()
        if kind == "Convert":
            stored = node.get_input_element_type(0)
            source = node.input_value(0).get_node().get_type_name()
            return stored.get_type_name() if source == "Constant" and stored.is_integral_number() else None
        if kind not in DECOMPRESSION:
            return None
        data = [source for source in node.input_values() if source.get_node().get_type_name() != "Constant"]
        if len(data) != 1:
            return None
        node = data[0].get_node()
    return None


def evaluate(node: Any, inputs: list[np.ndarray], index: int) -> np.ndarray | None:
    """Output ``index`` of ``node`` computed in this process from input arrays, or None where OpenVINO
    does not compute the op so."""
    import openvino as ov

    try:
        outputs = [ov.Tensor(node.get_output_element_type(k), ov.Shape([0])) for k in range(node.get_output_size())]
        arrays = [np.require(array, requirements="C") for array in inputs]  # keeps a scalar's shape ()
        if not node.evaluate(outputs, [ov.Tensor(array) for array in arrays]):
            return None
        return np.array(outputs[index].data)
    except (RuntimeError, TypeError, ValueError):
        return None


def zeros(like: Any, width: int) -> Any:
    """Zeros [batch, width], the batch ``like``'s (x_t; [1, batch, width] where x_t is [1, batch, input], as
    PyTorch's are): a state a converter folded away."""
    import openvino.opset8 as ops

    zero, minus_one = ops.constant(np.array([0], np.int64)), ops.constant(np.array([-1], np.int64))
    leading = ops.slice(ops.shape_of(like), zero, minus_one, ops.constant(np.array([1], np.int64)), zero)
    shape = ops.concat([leading, ops.constant(np.array([width], np.int64))], 0)
    zero = ops.constant(np.zeros((), like.get_element_type().to_dtype()))
    return ops.broadcast(zero, shape).output(0)
