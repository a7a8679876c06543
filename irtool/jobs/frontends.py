"""The ``frontend`` axis of suites: a grid case as IR (``ir``, the opset builders) or as a
single-node ONNX model read by OpenVINO's ONNX frontend (``onnx``, irtool.onnx.model).

A grid whose ``op`` is an ONNX op (``GRU``, ``LSTM``, ``RNN``) takes ONNX attributes and an
``opset`` axis, and runs through the onnx frontend only.  A grid of an IR sequence op
(GRUSequence, LSTMSequence, RNNSequence) may list ``frontend = ["ir", "onnx"]``: its onnx
cases are the ONNX node of the same meaning (activations named as ONNX names them, once per
direction; clip 0 left out; the lengths and initial states as inputs, as the IR op takes
them), at the op's newest opset.  Either way the onnx model's nodes are judged in ONNX
semantics (irtool.judge.onnx_nodes).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from irtool.jobs.records import op_case

FRONTENDS = ("ir", "onnx")
ONNX_OPS = ("GRU", "LSTM", "RNN")  # irtool.onnx.schema.OPS, without importing onnx to read a suite
IR_TO_ONNX = {"GRUSequence": "GRU", "LSTMSequence": "LSTM", "RNNSequence": "RNN"}
ONNX_NAMES = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh"}


def latest_opset(op_type: str) -> int:
    from irtool.onnx import schema

    return schema.versions(op_type)[-1]


def onnx_node(case: Any) -> tuple[str, int, dict[str, Any], tuple[str, ...]]:
    """The ONNX op, opset, attributes and optional inputs of a case of the onnx frontend;
    ValueError for an IR op without an ONNX counterpart."""
    if case.op in ONNX_OPS:
        inputs = case.optional_inputs if case.optional_inputs is not None else ("B", "sequence_lens", "initial_h")
        return case.op, case.version, dict(case.attributes), tuple(inputs)
    op = IR_TO_ONNX.get(case.op or "")
    if op is None:
        raise ValueError(f"frontend onnx: {case.op} has no ONNX counterpart (ONNX has the sequence ops GRU, LSTM "
                         f"and RNN: GRUSequence, LSTMSequence and RNNSequence)")

    ir = op_case(case).filled_attributes
    attributes: dict[str, Any] = {"hidden_size": ir["hidden_size"], "direction": ir["direction"]}
    names = [ONNX_NAMES[a.lower()] for a in ir["activations"]]
    attributes["activations"] = names * (2 if ir["direction"] == "bidirectional" else 1)
    if ir.get("clip"):
        attributes["clip"] = float(ir["clip"])
    if "linear_before_reset" in ir:
        attributes["linear_before_reset"] = int(bool(ir["linear_before_reset"]))
    inputs = ("B", "sequence_lens", "initial_h") + (("initial_c",) if op == "LSTM" else ())
    return op, latest_opset(op), attributes, inputs


def onnx_model(case: Any, seed: int) -> Any:
    """The case's single-node ONNX model and its graph inputs' values (irtool.onnx.model.Generated),
    drawn from ``seed``; ModelError (a ValueError) if the node is not valid."""
    from irtool.onnx.model import generate

    op, opset, attributes, inputs = onnx_node(case)
    sizes = dict(case.sizes)
    return generate(op, opset, attributes, optional_inputs=inputs, weights_as_inputs=case.weights_as_parameters,
                    element_type=case.element_type, seed=seed, dynamic=tuple(case.dynamic),
                    **{key: sizes[name] for key, name in (("batch", "batch_size"), ("seq_length", "seq_length"),
                                                          ("input_size", "input_size")) if name in sizes})


def onnx_inputs(case: Any) -> dict[str, np.ndarray]:
    """A case's seeded inputs: its model's graph inputs drawn from the case's seed (the weights,
    initializers, come from its model_seed)."""
    return onnx_model(case, case.seed).feeds
