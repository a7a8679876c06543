"""``irtool run`` judges every recurrent node of real converted models, on CPU, in-process.

The models come from tools no one here wrote (tests/real_models.py): onnx.helper graphs
converted by ov.convert_model (with and without f16 compression), openvino opset-API
graphs with the op among other ops, and PyTorch modules where torch is installed.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from real_models import OnnxCase, convert_onnx, onnx_inputs, opset_model

from irtool.cli.program import main

PASSING = [
    OnnxCase("GRU"),
    OnnxCase("GRU", bidirectional=True, weights="input", dynamic=False),
    OnnxCase("GRU", layers=2, bidirectional=True),
    OnnxCase("GRU", weights="input", lengths=True),
    OnnxCase("LSTM", head=False),
    OnnxCase("LSTM", layers=2, bidirectional=True),
    OnnxCase("LSTM", bidirectional=True, weights="input"),
    OnnxCase("RNN"),
    OnnxCase("RNN", layers=2, bidirectional=True, dynamic=False, lengths=True),
]
COMPRESSED = [PASSING[2], PASSING[5], PASSING[7]]
# OpenVINO 2026.4.1's CPU plugin ignores sequence_lengths when the op has Const weights and a
# dynamic dim (samples/suites/full.xfail.toml): an ordinary ONNX GRU with initializers, dynamic
# dims and a sequence_lens input reaches it.
CPU_LENGTHS_BUG = OnnxCase("GRU", lengths=True)
OPSET_OPS = ["GRUSequence", "LSTMSequence", "RNNSequence", "GRUCell", "LSTMCell", "RNNCell"]


def run_json(capsys, *argv: str) -> tuple[int, dict, str]:
    code = main(["run", *argv, "--format", "json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out else {}, captured.err


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("real")


@pytest.fixture(scope="module")
def converted(folder) -> dict:
    models = {(case, False): convert_onnx(case, folder) for case in PASSING + [CPU_LENGTHS_BUG]}
    models.update({(case, True): convert_onnx(case, folder, compress=True) for case in COMPRESSED})
    return models


def assert_all_nodes_pass(code: int, result: dict, count: int) -> None:
    assert code == 0, result
    assert result["verdict"] == "pass" and result["passed"] is True
    assert len(result["nodes"]) == count
    for node in result["nodes"]:
        assert node["verdict"] == "pass" and node["where"] == "top level", node
        assert node["outputs"] and all(out["passed"] for out in node["outputs"])
        assert node["max_abs"] < 1e-5
    if result["probe_check"] is not None:
        assert all(out["passed"] for out in result["probe_check"]["outputs"])


@pytest.mark.parametrize("case, compress", [(c, False) for c in PASSING] + [(c, True) for c in COMPRESSED],
                         ids=lambda v: v.name if isinstance(v, OnnxCase) else ("f16" if v else "f32w"))
def test_converted_onnx_model_every_node_passes_with_generated_and_given_inputs(case, compress, converted, capsys,
                                                                                 tmp_path):
    model = str(converted[(case, compress)])
    code, result, _ = run_json(capsys, model, "-d", "CPU")
    assert_all_nodes_pass(code, result, case.layers)
    if case.dynamic:  # sized from the nodes: no --shape needed, never 1 by default
        assert result["shapes_chosen"]["x"] == "from the recurrent nodes"
        shapes = {i["name"]: i["shape"] for i in result["inputs"]}
        assert shapes["x"][2] == case.input_size and min(shapes["x"]) > 1
    given = onnx_inputs(case, seed=5, seq=case.seq + 3 if case.dynamic else None,
                        batch=2 if case.dynamic else None,
                        lengths=None if not case.lengths else ([case.seq, 1, 2] if not case.dynamic else [7, 3]))
    np.savez(tmp_path / "in.npz", **given)
    code, result, _ = run_json(capsys, model, "-d", "CPU", "--inputs", str(tmp_path / "in.npz"))
    assert_all_nodes_pass(code, result, case.layers)
    assert {i["name"]: i["shape"] for i in result["inputs"]}["x"] == list(given["x"].shape)


@pytest.mark.parametrize("op", OPSET_OPS)
def test_opset_model_with_the_op_among_other_ops(op, folder, capsys):
    code, result, _ = run_json(capsys, str(opset_model(op, folder)), "-d", "CPU")
    assert_all_nodes_pass(code, result, 1)
    assert result["nodes"][0]["type"] == op
    assert result["probe_check"] is not None  # the node's outputs are not the model's: it was probed


@pytest.mark.parametrize("case", [PASSING[0], PASSING[5]], ids=lambda c: c.name)
def test_reduced_precision_uses_its_tolerance_and_shows_an_error(case, converted, capsys, cpu_precisions):
    code, result, err = run_json(capsys, str(converted[(case, False)]), "-d", "CPU", "--precision", "bf16")
    if "bf16" not in cpu_precisions:
        assert code == 3 and result["verdict"] == "unjudged" and "skipped: CPU does not support bf16" in err
        return
    assert code == 0 and result["verdict"] == "pass", result
    # a node the precision model knows the path of is judged against its emulation (the bf16-sized
    # error then shows against the ideal reference), another with bf16's default tolerance
    for node in result["nodes"]:
        said = "derived: " if node["against"] else "bf16 default"
        assert all(out["tolerance"]["source"].startswith(said) for out in node["outputs"])
    errors = [out["max_abs"] for node in result["nodes"] for out in (node["ideal"] if node["against"] else
                                                                        node["outputs"])]
    assert max(errors) > 1e-4, "a bf16 run with no bf16-sized error"


def test_the_cpu_sequence_lengths_bug_fails_at_its_node(converted, capsys, tmp_path):
    """Known OpenVINO bug (samples/suites/full.xfail.toml), reached from an ordinary ONNX model:
    this test expects the failure; it is irtool catching OpenVINO, not irtool failing."""
    model = str(converted[(CPU_LENGTHS_BUG, False)])
    code, result, _ = run_json(capsys, model, "-d", "CPU")
    assert code == 1 and result["verdict"] == "fail"
    (node,) = result["nodes"]
    assert node["type"] == "GRUSequence" and node["verdict"] == "fail"
    assert node["reason"].startswith("outside tolerance: Y (max abs")
    assert node["max_abs"] > 0.05 and node["first_step_outside"] is not None
    np.savez(tmp_path / "full.npz", **onnx_inputs(CPU_LENGTHS_BUG, lengths=[4, 4, 4]))
    code, result, _ = run_json(capsys, model, "-d", "CPU", "--inputs", str(tmp_path / "full.npz"))
    assert code == 0, "with full lengths the same model passes: the bug is about sequence_lengths"
    main(["run", model, "-d", "CPU"])
    text = capsys.readouterr().out
    assert "FAIL: 1 of 1 judged nodes outside tolerance" in text and "max abs per time step" in text


def test_a_model_with_no_recurrent_node_is_not_judged(folder, capsys):
    import openvino as ov
    import openvino.opset1 as ops

    x = ops.parameter([-1, 3], np.float32, name="x")
    ov.save_model(ov.Model([ops.relu(x)], [x], "relu"), str(folder / "relu.xml"))
    code, result, _ = run_json(capsys, str(folder / "relu.xml"), "-d", "CPU", "--shape", "x=[2,3]")
    assert code == 3 and result["verdict"] == "unjudged" and result["nodes"] == []
    assert "no node of the recurrent family" in result["no_reference"]


def test_a_node_inside_a_loop_body_is_judged_at_every_iteration(folder, capsys):
    import onnx
    import openvino as ov
    from onnx import TensorProto, helper, numpy_helper

    hidden, size = 4, 3
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.uniform(-.5, .5, shape).astype(np.float32), name)
               for name, shape in (("W", (1, 3 * hidden, size)), ("R", (1, 3 * hidden, hidden)))]
    body = helper.make_graph(
        [helper.make_node("GRU", ["x", "W", "R", "", "", "h"], ["y", "h_next"], hidden_size=hidden),
         helper.make_node("Identity", ["cond"], ["cond_next"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 2, hidden])],
        [helper.make_tensor_value_info("cond_next", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [1, 2, hidden])], weights)
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "h0"], ["hT"], body=body)], "loop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 2, size]),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, 2, hidden])],
        [helper.make_tensor_value_info("hT", TensorProto.FLOAT, [1, 2, hidden])],
        [numpy_helper.from_array(np.array(3, np.int64), "M")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), folder / "loop.onnx")
    ov.save_model(ov.convert_model(str(folder / "loop.onnx")), str(folder / "loop.xml"))
    code, result, _ = run_json(capsys, str(folder / "loop.xml"), "-d", "CPU")
    assert code == 0 and result["verdict"] == "pass" and result["not_judged"] == []
    (node,) = result["nodes"]
    assert node["type"] == "GRUSequence" and node["verdict"] == "pass"
    assert node["where"] == "body of Loop 'hT'" and node["iterations"] == 3 and node["iteration"] is not None


def test_a_dim_that_reaches_no_node_gets_the_batch_and_says_so(folder, capsys):
    import openvino as ov
    import openvino.opset1 as ops

    path = opset_model("GRUSequence", folder)
    model = ov.Core().read_model(str(path))
    extra = ops.parameter([-1], np.float32, name="extra")
    out = ops.add(model.outputs[0].get_node().input_value(0), ops.reduce_sum(extra, ops.constant(np.int64(0))))
    ov.save_model(ov.Model([out], list(model.get_parameters()) + [extra], "extra"), str(folder / "extra.xml"))
    for argv, size in (([], 2), (["--batch", "3"], 3)):
        code, result, _ = run_json(capsys, str(folder / "extra.xml"), "-d", "CPU", *argv)
        assert_all_nodes_pass(code, result, 1)
        assert {i["name"]: i["shape"] for i in result["inputs"]}["extra"] == [size]
        assert result["shapes_chosen"]["extra"] == f"dim 0 = {size} (--batch; it reaches no recurrent op's dims)"
    code, result, _ = run_json(capsys, str(folder / "extra.xml"), "-d", "CPU", "--shape", "extra=[3]")
    assert_all_nodes_pass(code, result, 1)


@pytest.mark.parametrize("argv, says", [
    (["--shape", "nope=[1,2,3]"], "--shape nope: gru-1l-fw-initializer-dyn-head.xml has no input of that name; "
                                  "its inputs are x"),
    (["--shape", "x=[2,3]"], "--shape x=[2, 3]: input x has rank 3"),
    (["--shape", "x=[4,2,9]"], "--shape x=[4, 2, 9]: dim 2 must be 5"),
    (["--shape", "x=2,a"], "--shape x=2,a: expected NAME=[D,D,...]"),
    (["--batch", "0"], "--batch 0: expected a whole number >= 1"),
])
def test_bad_shapes_are_one_line_and_exit_2(argv, says, converted, capsys):
    code = main(["run", str(converted[(PASSING[0], False)]), "-d", "CPU", *argv])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and says in err, err


@pytest.mark.parametrize("module", ["GRU", "LSTM", "RNN"])
def test_pytorch_module_converted_with_default_dynamic_shapes(module, folder, capsys):
    torch = pytest.importorskip("torch", reason="torch is an optional oracle, not a test dependency")
    import openvino as ov

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = getattr(torch.nn, module)(5, 8, num_layers=2, bidirectional=True, batch_first=True)
            self.head = torch.nn.Linear(16, 3)

        def forward(self, x):
            return self.head(self.rnn(x)[0])

    torch.manual_seed(0)
    path = folder / f"torch-{module}.xml"
    ov.save_model(ov.convert_model(Net().eval(), example_input=torch.randn(2, 4, 5)), str(path))
    code, result, _ = run_json(capsys, str(path), "-d", "CPU")
    assert_all_nodes_pass(code, result, 2)


def test_the_failing_node_gets_a_reproducer_that_fails_alone_and_reduce_takes_it(converted, capsys, tmp_path):
    import subprocess
    import sys

    model = converted[(CPU_LENGTHS_BUG, False)]
    code, result, _ = run_json(capsys, str(model), "-d", "CPU", "--reproducers", str(tmp_path / "repro"))
    assert code == 1
    (node,) = result["nodes"]
    folder = Path(result["reproducers"][node["name"]])
    assert folder.parent == tmp_path / "repro"
    assert {p.name for p in folder.iterdir()} >= {"model.xml", "model.bin", "inputs.npz", "expected.npz",
                                                  "actual.npz", "case.json", "reproduce.py"}
    case = json.loads((folder / "case.json").read_text())
    assert case["case"]["id"].endswith(f"::{node['name']}") and case["result"]["verdict"] == "fail"
    alone = subprocess.run([sys.executable, "reproduce.py"], cwd=folder, capture_output=True, text=True, timeout=120)
    assert alone.returncode == 1 and "MISMATCH in Y" in alone.stdout, alone.stdout + alone.stderr
    done = subprocess.run([sys.executable, "-m", "irtool", "reduce", str(model), "--node", node["name"], "-d", "CPU",
                           "-o", str(tmp_path / "reduced"), "--budget", "60"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reduced: batch_size 1" in done.stdout and (tmp_path / "reduced" / "reproducer" / "reproduce.py").is_file()
    again = subprocess.run([sys.executable, "reproduce.py"], cwd=tmp_path / "reduced" / "reproducer",
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 1


def test_reduce_names_a_node_that_is_not_there_or_passes(converted, tmp_path):
    import subprocess
    import sys

    model = str(converted[(PASSING[0], False)])
    done = subprocess.run([sys.executable, "-m", "irtool", "reduce", model, "--node", "nope", "-d", "CPU", "-o",
                           str(tmp_path / "r")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "no recurrent node named 'nope'; its recurrent nodes: 'GRUSequence_" in done.stderr
    name = done.stderr.split("its recurrent nodes: '")[1].split("'")[0]
    done = subprocess.run([sys.executable, "-m", "irtool", "reduce", model, "--node", name, "-d", "CPU", "-o",
                           str(tmp_path / "r")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and f"node '{name}'" in done.stdout and "does not fail" in done.stdout


def test_per_direction_activations_from_the_onnx_frontend(folder, capsys):
    """OpenVINO's ONNX frontend writes a bidirectional node's activations once per direction: equal
    halves are judged; different halves are an error that says what OpenVINO does with them."""
    import onnx
    import openvino as ov
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    verdicts = {}
    for name, activations in (("same", ["Relu", "Relu"]), ("differ", ["Relu", "Tanh"])):
        weights = [numpy_helper.from_array(rng.uniform(-.5, .5, shape).astype(np.float32), key)
                   for key, shape in (("W", (2, 4, 3)), ("R", (2, 4, 4)))]
        node = helper.make_node("RNN", ["x", "W", "R"], ["y", "yh"], hidden_size=4, direction="bidirectional",
                                activations=activations)
        graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["s", "b", 3])],
                                  [helper.make_tensor_value_info("yh", TensorProto.FLOAT, None)], weights)
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), folder / f"rnn-{name}.onnx")
        ov.save_model(ov.convert_model(str(folder / f"rnn-{name}.onnx")), str(folder / f"rnn-{name}.xml"))
        code, result, _ = run_json(capsys, str(folder / f"rnn-{name}.xml"), "-d", "CPU")
        verdicts[name] = (code, result["verdict"], result["nodes"][0]["reason"])
    assert verdicts["same"][:2] == (0, "pass")
    code, verdict, reason = verdicts["differ"]
    assert (code, verdict) == (2, "error") and "OpenVINO applies the first half to both directions" in reason


def test_a_model_without_recurrent_nodes_runs_at_the_batch_and_is_not_judged(folder, capsys):
    """Nothing is missing: its dynamic dim takes the batch (the header says so), and with no
    recurrent node nothing is judged (exit 3)."""
    import openvino as ov
    import openvino.opset1 as ops

    x = ops.parameter([-1, 3], np.float32, name="x")
    ov.save_model(ov.Model([ops.relu(x)], [x], "relu"), str(folder / "relu-dyn.xml"))
    code = main(["run", str(folder / "relu-dyn.xml"), "-d", "CPU"])
    out = capsys.readouterr().out
    assert code == 3 and "x float32[2, 3] (dynamic dims sized: dim 0 = 2 (--batch; it reaches no recurrent op's dims))" \
        in out, out
