"""IRs that ov.convert_model writes from ONNX models built with onnx.helper (GRU, LSTM, RNN; uni-
and bidirectional, activations written per direction; dynamic and static dims; saved with and
without f16 compression) get no error and no warning from the validator: notes only."""
from __future__ import annotations

import itertools

import numpy as np
import onnx
import openvino as ov
import pytest
from onnx import TensorProto, helper, numpy_helper

from irtool.validate import validate_file

B, T, I, H = 2, 3, 4, 5
GATES = {"GRU": 3, "LSTM": 4, "RNN": 1}
ACTIVATIONS = {"GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"], "RNN": ["Tanh"]}


def onnx_model(op: str, direction: str, dynamic: bool, explicit_activations: bool) -> onnx.ModelProto:
    nd = 2 if direction == "bidirectional" else 1
    gates = GATES[op]
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), name)
               for name, shape in (("W", [nd, gates * H, I]), ("R", [nd, gates * H, H]), ("B", [nd, 2 * gates * H]))]
    attributes = {"hidden_size": H, "direction": direction}
    if explicit_activations:  # one list per direction, as ONNX asks of a bidirectional node
        attributes["activations"] = ACTIVATIONS[op] * nd
    node = helper.make_node(op, ["X", "W", "R", "B"], ["Y", "Y_h"], **attributes)
    batch, steps = ("batch", "steps") if dynamic else (B, T)
    graph = helper.make_graph(
        [node], f"{op}-{direction}", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [steps, batch, I])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [steps, nd, batch, H]),
         helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [nd, batch, H])], initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    return model


CASES = list(itertools.product(("GRU", "LSTM", "RNN"), ("forward", "reverse", "bidirectional"), (False, True),
                               (False, True), (False, True)))


@pytest.mark.parametrize("op, direction, dynamic, explicit, compress", CASES,
                         ids=[f"{o}-{d}-{'dyn' if dy else 'static'}-{'acts' if e else 'default'}-{'f16' if c else 'f32'}"
                              for o, d, dy, e, c in CASES])
def test_converted_onnx_model_gets_notes_only(tmp_path, op, direction, dynamic, explicit, compress):
    source = tmp_path / "m.onnx"
    onnx.save(onnx_model(op, direction, dynamic, explicit), str(source))
    path = tmp_path / "m.xml"
    ov.save_model(ov.convert_model(str(source)), str(path), compress_to_fp16=compress)
    report = validate_file(path)
    loud = [f"{d.code} {d.severity}: {d.message}" for d in report.diagnostics if d.severity != "note"]
    assert loud == []
    codes = {d.code for d in report.diagnostics}
    # the ops around the recurrent one (Transpose, Squeeze, ...) are noted once per type, not per layer
    noted = [d.found for d in report.diagnostics if d.code == "IR010"]
    assert len(noted) == len(set(noted))
    if direction == "bidirectional" and explicit:
        assert "IR028" in codes  # written once per direction, halves equal
