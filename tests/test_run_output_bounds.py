"""The bound a model output is judged within against a framework's values scales with the output's
magnitude (irtool.judge.bounds): a wake-word probability of about 1e-05, far below the f32 atol,
is still compared to a relative error of about rtol."""
from __future__ import annotations

import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from irtool.cli.program import main
from irtool.judge.bounds import magnitude_bound
from irtool.judge.compare import Tolerance


def wake_word(folder) -> tuple[str, str, float]:
    """A MatMul + Sigmoid whose one output is a probability of about 1.17e-05 (a wake word not
    heard), made with onnx.helper; the model, its inputs and the probability."""
    weights = numpy_helper.from_array(np.full((3, 1), -3.8, np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["logit"]),
                               helper.make_node("Sigmoid", ["logit"], ["p"])], "wake",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
                              [helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 1])], [weights])
    model = folder / "wake.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    x = np.ones((1, 3), np.float32)
    np.savez(folder / "in.npz", x=x)
    return str(model), str(folder / "in.npz"), float(1 / (1 + np.exp(3 * 3.8)))


def test_an_output_far_below_atol_is_judged_by_its_relative_error(capsys, tmp_path):
    model, inputs, p = wake_word(tmp_path)
    assert 1e-05 < p < 1.3e-05
    np.savez(tmp_path / "off.npz", p=np.array([[p * 1.85]], np.float32))  # 85% off: within the f32 atol 1e-05
    code = main(["run", model, "-d", "CPU", "--inputs", inputs, "--expected", str(tmp_path / "off.npz"),
                 "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and data["verdict"] == "fail"
    (out,) = data["expected"]["outputs"]
    # scaled by the output's magnitude, floored at what f32 arithmetic through the model can hold (weights of 3.8)
    assert out["tolerance"]["atol"] == 2 * 2.0 ** -24 * np.float32(3.8) < p / 20, out["tolerance"]
    assert "not below 2 f32 roundings of 3.8 (the largest magnitude through the model)" in out["tolerance"]["source"]
    # and the right value passes: OpenVINO's f32 sigmoid is within rtol of it
    np.savez(tmp_path / "right.npz", p=np.array([[p]], np.float32))
    code = main(["run", model, "-d", "CPU", "--inputs", inputs, "--expected", str(tmp_path / "right.npz")])
    assert code == 0, capsys.readouterr().out
    capsys.readouterr()
    # an atol the user gives is theirs: it is not scaled
    code = main(["run", model, "-d", "CPU", "--inputs", inputs, "--expected", str(tmp_path / "off.npz"),
                 "--atol", "1e-05", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["expected"]["outputs"][0]["tolerance"]["atol"] == 1e-05


def test_the_bound_keeps_the_atol_of_outputs_of_magnitude_1_and_of_zeros():
    tolerance = Tolerance(1e-05, 1e-04, "f32 default")
    assert magnitude_bound(tolerance, np.array([0.5, -2.0])) == tolerance
    assert magnitude_bound(tolerance, np.zeros(3)) == tolerance  # nothing to scale by
    assert magnitude_bound(tolerance, np.array([1, 2], np.int32)) == tolerance
    scaled = magnitude_bound(tolerance, np.array([0.01, -0.02, np.inf]))
    assert scaled.atol == 1e-05 * 0.02 and scaled.rtol == 1e-04
    assert magnitude_bound(tolerance, np.array([0.01]), atol_given=True) == tolerance
