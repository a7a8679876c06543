"""The expected outputs of a GRU, LSTM or RNN node of an ONNX model, by tensor name.

For a caller holding a model's node and the values of the tensors it reads (initializers,
graph inputs, or tensors captured on the way): the node's attributes and inputs go to
``irtool.onnx.semantics.evaluate_node``, its outputs come back keyed by the names
the node gives them (an output the node leaves out is absent).
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import onnx

from irtool.onnx.schema import node_attributes
from irtool.onnx.semantics import evaluate_node


def evaluate_model_node(node: onnx.NodeProto, opset: int, tensors: Mapping[str, np.ndarray], *,
                        accumulate: Any = None, rounding: Any = None, given_y: Any = None) -> dict[str, np.ndarray]:
    """Outputs of ``node`` in ONNX semantics, by output name; ValueError naming the node if it cannot run.
    ``rounding`` and ``given_y``: as irtool.onnx.semantics.evaluate_node takes them."""
    label = f"node {node.name!r} ({node.op_type})" if node.name else f"{node.op_type} node"
    missing = [name for name in node.input if name and name not in tensors]
    if missing:
        raise ValueError(f"{label}: no value for its input tensor {missing[0]!r}")
    inputs = [tensors[name] if name else None for name in node.input]
    try:
        outputs = evaluate_node(node.op_type, opset, node_attributes(node), inputs, accumulate=accumulate,
                                rounding=rounding, given_y=given_y)
    except ValueError as error:
        raise ValueError(f"{label}: {error}") from None
    return {name: array for name, array in zip(node.output, outputs) if name}
