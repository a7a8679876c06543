"""Helpers shared by the ONNX tests (imported by them; not a pytest conftest).

``backend_cases`` loads ONNX's own node test cases for GRU, LSTM and RNN through the onnx
package's case code (onnx.backend.test.case.node: importing a case module runs its exports,
which register the cases with their expected outputs); ``onnxruntime_node`` runs one node
on onnxruntime's CPU provider.
"""
from __future__ import annotations

import importlib
from typing import Any, Mapping

import numpy as np

from irtool.onnx import schema

RECURRENT = ("GRU", "LSTM", "RNN")


def backend_cases() -> list[Any]:
    """ONNX's backend node cases whose node is a GRU, LSTM or RNN (each with model and data_sets)."""
    cases = importlib.import_module("onnx.backend.test.case.node")
    for module in ("gru", "lstm", "rnn"):
        importlib.import_module(f"onnx.backend.test.case.node.{module}")
    found = [case for case in cases._NodeTestCases if case.model.graph.node[0].op_type in RECURRENT]
    assert len(found) >= 18, f"onnx's case code gave {len(found)} recurrent cases"
    return found


def case_inputs(case: Any) -> tuple[Any, int, list[np.ndarray | None], list[tuple[int, np.ndarray]]]:
    """(node, opset, inputs in ONNX order with None for absent, [(output index, expected)])."""
    node = case.model.graph.node[0]
    opset = next(o.version for o in case.model.opset_import if o.domain in ("", "ai.onnx"))
    (inputs, outputs), = case.data_sets
    given = iter(inputs)
    arrays = [next(given) if name else None for name in node.input]
    expected = list(zip([k for k, name in enumerate(node.output) if name], outputs))
    return node, opset, arrays, expected


def onnxruntime_node(op: str, opset: int, attributes: Mapping[str, Any],
                     inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """Every output of one node run by onnxruntime (CPU), the inputs all graph inputs.

    The model is made with onnx.helper alone, so that onnxruntime also sees nodes irtool's
    builder would refuse (the departures).
    """
    import onnxruntime
    from onnx import TensorProto, helper

    names = [port.name for port in schema.get(op, opset).inputs]
    node_inputs = [n if n in inputs else "" for n in names]
    while not node_inputs[-1]:
        node_inputs.pop()
    outputs = [port.name for port in schema.get(op, opset).outputs]
    node = helper.make_node(op, node_inputs, outputs, **attributes)
    element = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}
    graph = helper.make_graph(
        [node], "oracle", [helper.make_tensor_value_info(n, element[a.dtype], a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return tuple(session.run(None, dict(inputs)))


def input_list(op: str, opset: int, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray | None]:
    """Named inputs in ONNX order, None for the absent ones."""
    return [inputs.get(port.name) for port in schema.get(op, opset).inputs]
