"""The model-level verdict (irtool.judge.verdicts.run_verdict) and the bound a model's outputs are
held to against its framework's (irtool.judge.bounds), on real ONNX models made with onnx.helper,
their expected outputs computed by onnx's own ReferenceEvaluator or by onnxruntime.

A model whose outputs --expected (or --compare-with RUNTIME) judged whole passes or fails on them:
a node that cannot be judged on its own (here a cell written in plain ops with an activation
OpenVINO's cells do not take, which irtool refuses to read as a cell) is listed with why, and no
longer turns the run into NOT JUDGED (exit 3).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main

HIDDEN, SIZE, BATCH, STEPS = 4, 3, 2, 3


def softsign_lstm_and_gru(path: Path) -> Path:
    """An LSTM unrolled into plain ops whose cell activation is Softsign (not one OpenVINO's
    LSTMCell takes: irtool sees the chain and refuses it), beside an ONNX GRU node on the same input."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)

    def uniform(*shape: int) -> np.ndarray:
        return rng.uniform(-.5, .5, shape).astype(np.float32)

    inits = [numpy_helper.from_array(a, n) for n, a in (
        ("W", uniform(4 * HIDDEN, SIZE)), ("R", uniform(4 * HIDDEN, HIDDEN)), ("Wb", uniform(4 * HIDDEN)),
        ("Rb", uniform(4 * HIDDEN)), ("h0", np.zeros((BATCH, HIDDEN), np.float32)),
        ("c0", np.zeros((BATCH, HIDDEN), np.float32)), ("axis0", np.array([0], np.int64)),
        ("split", np.array([HIDDEN] * 4, np.int64)), ("GW", uniform(1, 3 * HIDDEN, SIZE)),
        ("GR", uniform(1, 3 * HIDDEN, HIDDEN)))]
    node = helper.make_node
    nodes = [node("Split", ["X"], [f"x{t}_" for t in range(STEPS)], axis=0, num_outputs=STEPS),
             node("GRU", ["X", "GW", "GR"], ["G"], hidden_size=HIDDEN, name="gru")]
    h, c, ys = "h0", "c0", []
    for t in range(STEPS):
        s = f"s{t}/"
        nodes += [node("Squeeze", [f"x{t}_", "axis0"], [f"x{t}"]),
                  node("Gemm", [f"x{t}", "W", "Wb"], [s + "xw"], transB=1),
                  node("Gemm", [h, "R", "Rb"], [s + "hr"], transB=1), node("Add", [s + "xw", s + "hr"], [s + "g"]),
                  node("Split", [s + "g", "split"], [s + k for k in "iofc"], axis=1),
                  node("Sigmoid", [s + "i"], [s + "si"]), node("Sigmoid", [s + "o"], [s + "so"]),
                  node("Sigmoid", [s + "f"], [s + "sf"]), node("Softsign", [s + "c"], [s + "tc"]),
                  node("Mul", [s + "sf", c], [s + "fc"]), node("Mul", [s + "si", s + "tc"], [s + "ic"]),
                  node("Add", [s + "fc", s + "ic"], [s + "c_t"]), node("Tanh", [s + "c_t"], [s + "th"]),
                  node("Mul", [s + "so", s + "th"], [s + "h_t"]), node("Unsqueeze", [s + "h_t", "axis0"], [s + "y"])]
        h, c = s + "h_t", s + "c_t"
        ys.append(s + "y")
    nodes.append(node("Concat", ys, ["Y"], axis=0))
    info = helper.make_tensor_value_info
    graph = helper.make_graph(nodes, "softsign_lstm", [info("X", TensorProto.FLOAT, [STEPS, BATCH, SIZE])],
                              [info("Y", TensorProto.FLOAT, [STEPS, BATCH, HIDDEN]),
                               info("G", TensorProto.FLOAT, [STEPS, 1, BATCH, HIDDEN])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def reference_outputs(model: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What onnx's own ReferenceEvaluator computes for the model: the framework's outputs."""
    import onnx
    from onnx.reference import ReferenceEvaluator

    loaded = onnx.load(model)
    names = [out.name for out in loaded.graph.output]
    return dict(zip(names, ReferenceEvaluator(loaded).run(None, inputs)))


def run(capsys, *argv: str) -> tuple[int, dict, str]:
    code = main(["run", *argv, "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    main(["run", *argv])
    return code, data, capsys.readouterr().out


@pytest.fixture(scope="module")
def softsign(tmp_path_factory) -> tuple[Path, Path, dict]:
    folder = tmp_path_factory.mktemp("verdicts")
    model = softsign_lstm_and_gru(folder / "softsign.onnx")
    inputs = {"X": np.random.default_rng(5).standard_normal((STEPS, BATCH, SIZE)).astype(np.float32)}
    np.savez(folder / "in.npz", **inputs)
    return model, folder / "in.npz", reference_outputs(model, inputs)


def test_outputs_judged_whole_decide_the_run_and_each_node_not_judged_is_listed_with_why(softsign, capsys, tmp_path):
    model, inputs, outputs = softsign
    code, data, _ = run(capsys, str(model), "-d", "CPU", "--inputs", str(inputs))
    assert code == 3 and data["verdict"] == "unjudged"  # nothing judges the refused cells without --expected
    np.savez(tmp_path / "out.npz", **outputs)
    code, data, text = run(capsys, str(model), "-d", "CPU", "--inputs", str(inputs), "--expected", str(tmp_path / "out.npz"))
    assert code == 0 and data["verdict"] == "pass" and data["verdict_from"] == "outputs", data
    assert data["expected"]["verdict"] == "pass"
    verdicts = {node["name"]: node["verdict"] for node in data["nodes"]}
    assert verdicts == {"gru": "pass", "s0": "unjudged", "s1": "unjudged", "s2": "unjudged"}
    assert data["not_judged"] == ["s0", "s1", "s2"]
    assert all("not an activation irtool's reference computes" in node["reason"]
               for node in data["nodes"] if node["verdict"] == "unjudged")
    last = text.splitlines()[-1]
    assert last.startswith("PASS: expected outputs: 2 of 2 outputs within tolerance of ") and \
        last.endswith("1 of 1 judged nodes within tolerance; not judged on their own: 's0', 's1', 's2'"), last
    assert "  UNJUDGED node 's1' (LSTMCell-4): not recognized as a lowered LSTMCell: SoftSign 's1/tc' is not an " \
           "activation" in text.replace("\n      ", " ")


def test_outputs_that_differ_fail_the_run_whatever_nodes_were_not_judged(softsign, capsys, tmp_path):
    model, inputs, outputs = softsign
    np.savez(tmp_path / "off.npz", **{**outputs, "Y": outputs["Y"] + np.float32(1e-3)})
    code, data, text = run(capsys, str(model), "-d", "CPU", "--inputs", str(inputs), "--expected", str(tmp_path / "off.npz"))
    assert code == 1 and data["verdict"] == "fail" and data["expected"]["failed"] == ["Y"]
    assert text.splitlines()[-1].startswith("FAIL: expected outputs: 1 of 2 outputs outside tolerance of ")


def test_compare_with_onnxruntime_decides_the_run_as_expected_outputs_do(softsign, capsys):
    model, inputs, _ = softsign
    code, data, _ = run(capsys, str(model), "-d", "CPU", "--inputs", str(inputs), "--compare-with", "onnxruntime")
    assert code == 0 and data["verdict"] == "pass" and data["oracle"]["verdict"] == "pass"
    assert data["not_judged"] == ["s0", "s1", "s2"] and data["verdict_from"] == "outputs"


def wake_word(path: Path, inputs: int = 400, hidden: int = 64, logit: float = -11.3) -> tuple[Path, dict]:
    """A wake-word-like model: a probability of about 1.2e-05 (a sigmoid of -11.3) computed from
    a 400-wide input through two MatMuls, whose intermediate values reach tens."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, inputs)).astype(np.float32)
    w1 = rng.standard_normal((inputs, hidden)).astype(np.float32)
    w2 = (rng.standard_normal((hidden, 1)) * 0.3).astype(np.float32)
    b = np.array([logit - float((np.maximum(x @ w1, 0) @ w2)[0, 0])], np.float32)
    node = helper.make_node
    graph = helper.make_graph(
        [node("MatMul", ["x", "W1"], ["a"]), node("Relu", ["a"], ["r"]), node("MatMul", ["r", "W2"], ["z"]),
         node("Add", ["z", "b"], ["l"]), node("Sigmoid", ["l"], ["p"])], "wake",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, inputs])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 1])],
        [numpy_helper.from_array(a, n) for n, a in (("W1", w1), ("W2", w2), ("b", b))])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path, {"x": x}


def test_a_tiny_output_is_held_to_what_rounding_through_the_model_allows_not_below(capsys, tmp_path):
    """Its sigmoid agrees with onnxruntime's to a few 1e-09 (ORT's and OpenVINO's sigmoid and sums
    differ in their last digits), which an atol scaled by the output's 1.2e-05 alone (1.2e-10)
    failed; the floor of the bound, roundings at the magnitudes flowing through the model, passes it."""
    from irtool.core.precisions import UNIT_ROUNDOFF
    from irtool.judge.bounds import FLOOR_ROUNDINGS

    model, inputs = wake_word(tmp_path / "wake.onnx")
    np.savez(tmp_path / "in.npz", **inputs)
    code, data, text = run(capsys, str(model), "-d", "CPU", "--inputs", str(tmp_path / "in.npz"),
                           "--compare-with", "onnxruntime")
    assert code == 0 and data["verdict"] == "pass", text
    (p,) = data["oracle"]["outputs"]
    magnitude = abs(p["worst_expected"])
    assert 1e-5 < magnitude < 2e-5
    flowing = max(float(np.abs(inputs["x"]).max()), 11.3)  # the input, and the bias at least
    tolerance = p["tolerance"]
    assert FLOOR_ROUNDINGS * UNIT_ROUNDOFF["f32"] * flowing <= tolerance["atol"] < 1e-5
    assert "not below 2 f32 roundings of" in tolerance["source"]
    assert p["max_abs"] > 1e-5 * magnitude  # what the atol scaled by the output alone would have failed


@pytest.mark.parametrize("wrong", [0.5, 2.0])
def test_a_tiny_output_made_wrong_still_fails(capsys, tmp_path, wrong):
    model, inputs = wake_word(tmp_path / "wake.onnx")
    np.savez(tmp_path / "in.npz", **inputs)
    outputs = reference_outputs(model, inputs)
    np.savez(tmp_path / "off.npz", p=outputs["p"] * np.float32(wrong))
    code, data, _ = run(capsys, str(model), "-d", "CPU", "--inputs", str(tmp_path / "in.npz"), "--expected",
                        str(tmp_path / "off.npz"))
    assert code == 1 and data["verdict"] == "fail" and data["expected"]["failed"] == ["p"]


def test_the_harness_gives_the_same_verdict_and_lists_each_node_not_judged(softsign, tmp_path):
    """The harness's results of the model (a result per node, one for its expected outputs) say what
    irtool run says: the outputs pass, the refused cells are not judged (skipped in junit.xml, with
    why), the run passes (exit 0), and junit.xml holds them under the model's class."""
    import subprocess
    import sys

    import lxml.etree as ET
    import lxml.html

    model, inputs, outputs = softsign
    np.savez(tmp_path / "out.npz", **outputs)
    suite = tmp_path / "s.toml"
    suite.write_text(f'[[models]]\nid = "softsign"\npath = "{model}"\ninputs = "{inputs}"\nexpected = "out.npz"\n')
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(suite), "-d", "CPU", "--report-dir",
                           str(tmp_path / "out"), "--no-progress"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    results = {r["case"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())["results"]}
    verdicts = {case.split("::")[1]: r["verdict"] for case, r in results.items()}
    assert verdicts == {"gru": "pass", "s0": "unjudged", "s1": "unjudged", "s2": "unjudged", "outputs": "pass"}
    assert "not an activation irtool's reference computes" in results["softsign[inputs]::s1"]["message"]
    junit = ET.parse(str(tmp_path / "out" / "junit.xml")).getroot()
    cases = {case.get("name"): case for case in junit.iter("testcase")}
    skipped = cases["softsign[inputs]::s1 on CPU at f32"].find("skipped")
    assert skipped is not None and "not an activation" in skipped.get("message")
    assert {case.get("classname") for case in cases.values()} == {"s.softsign_onnx"}  # suite s, model softsign.onnx
    page = lxml.html.parse(str(tmp_path / "out" / "report.html")).getroot()
    assert page.xpath("//div[@class='banner passed']/p[@class='overall']")[0].text_content() == "Verdict: PASSED"
