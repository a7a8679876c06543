"""``irtool run model.onnx``: each ONNX GRU, LSTM and RNN node judged in ONNX semantics.

The models are ONNX's own backend node cases (written by the onnx package's case code, run
with their own inputs through ``--inputs``), graphs made with onnx.helper where the nodes
read tensors computed on the way, and single-node models from irtool.onnx.model.  OpenVINO
(CPU, f32) runs them; the frontend's known faults (docs/onnx.md) must fail at their node with
their explanation, and the activations it lacks must be reported as unsupported.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from conftest_onnx import backend_cases
from real_models import OnnxCase, onnx_inputs, onnx_model

from irtool.cli.program import main
from irtool.onnx.model import generate, save, save_inputs

# The backend cases OpenVINO 2026.4.1 gets wrong, and the words their failure must carry.
KNOWN_WRONG = {"test_gru_batchwise": "ignores layout=1", "test_lstm_batchwise": "ignores layout=1",
               "test_simple_rnn_batchwise": "ignores layout=1", "test_lstm_with_peepholes": "drops the peepholes P"}
CASES = {case.name: case for case in backend_cases()}
SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "models"


def run_json(capsys, *argv: str) -> tuple[int, dict, str]:
    code = main(["run", *argv, "--format", "json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out else {}, captured.err


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Each backend case as .onnx and its inputs as .npz keyed by the graph's input names."""
    folder = tmp_path_factory.mktemp("onnx-cases")
    files = {}
    for name, case in CASES.items():
        (inputs, _), = case.data_sets
        names = [i.name for i in case.model.graph.input]
        onnx.save(case.model, folder / f"{name}.onnx")
        np.savez(folder / f"{name}.npz", **dict(zip(names, inputs)))
        files[name] = (folder / f"{name}.onnx", folder / f"{name}.npz")
    return files


@pytest.mark.parametrize("name", sorted(CASES))
def test_backend_case(name, written, capsys):
    model, inputs = written[name]
    code, result, err = run_json(capsys, str(model), "-d", "CPU", "--inputs", str(inputs))
    node, = result["nodes"]
    op = CASES[name].model.graph.node[0].op_type
    assert node["type"] == op and node["semantics"] == "ONNX"
    opset = next(o.version for o in CASES[name].model.opset_import if o.domain in ("", "ai.onnx"))
    assert node["version"] == onnx.defs.get_schema(op, opset).since_version
    if name in KNOWN_WRONG:
        assert code == 1 and result["verdict"] == "fail" and node["verdict"] == "fail", result
        assert KNOWN_WRONG[name] in node["reason"], node["reason"]
    else:
        assert code == 0 and node["verdict"] == "pass", node
        assert node["outputs"] and all(out["passed"] for out in node["outputs"])
        assert node["max_abs"] < 1e-5


@pytest.mark.parametrize("name", ["test_gru_batchwise", "test_simple_rnn_batchwise"])
def test_onnxs_own_outputs_of_a_layout_1_node_fail_as_the_conversion_fault_not_as_a_wrong_file(name, written,
                                                                                             tmp_path, capsys):
    """ONNX's expected outputs of a layout=1 node have the shapes the model declares; OpenVINO's frontend
    ignores the layout, so its outputs are shaped otherwise.  That is a failure of the run (the node's
    known fault, and the outputs against the file), never "the file does not match the model" (exit 2)."""
    model, inputs = written[name]
    (_, outputs), = CASES[name].data_sets
    np.savez(tmp_path / "expected.npz", **dict(zip([o.name for o in CASES[name].model.graph.output], outputs)))
    code, result, err = run_json(capsys, str(model), "-d", "CPU", "--inputs", str(inputs),
                                 "--expected", str(tmp_path / "expected.npz"))
    assert code == 1 and result["verdict"] == "fail", (err, result.get("verdict"))
    node, = result["nodes"]
    assert node["verdict"] == "fail" and "ignores layout=1" in node["reason"]
    diffs = result["expected"]["outputs"]
    assert diffs and not any(diff["passed"] for diff in diffs), diffs
    assert any("differs from expected" in (diff["problem"] or "") for diff in diffs), diffs  # Y_h: [1, 1, 6]


def test_backend_cases_cover_the_known_faults():
    assert set(KNOWN_WRONG) <= set(CASES)


@pytest.mark.parametrize("op", ["GRU", "LSTM", "RNN"])
def test_activations_per_direction_fail_on_the_backward_half(op, tmp_path, capsys):
    per_direction = {"GRU": ["Sigmoid", "Tanh", "Sigmoid", "Relu"], "RNN": ["Tanh", "Relu"],
                     "LSTM": ["Sigmoid", "Tanh", "Tanh", "Sigmoid", "Relu", "Relu"]}[op]
    made = generate(op, 14, {"hidden_size": 5, "direction": "bidirectional", "activations": per_direction}, seed=3,
                    optional_inputs=("B", "initial_h"))
    save(made.model, tmp_path / "m.onnx")
    save_inputs(made.feeds, tmp_path / "m.npz")
    code, result, _ = run_json(capsys, str(tmp_path / "m.onnx"), "-d", "CPU", "--inputs", str(tmp_path / "m.npz"))
    node, = result["nodes"]
    assert code == 1 and node["verdict"] == "fail", node
    assert "the backward half (direction 1) is off" in node["reason"]
    assert "the forward half is within tolerance" in node["reason"]
    assert "OpenVINO applies the forward set to both directions" in node["reason"]


@pytest.mark.parametrize("activation", ["LeakyRelu", "HardSigmoid", "Affine", "Elu", "Softsign"])
def test_unsupported_activation_is_reported_as_unsupported(activation, tmp_path, capsys):
    made = generate("GRU", 14, {"hidden_size": 4, "activations": [activation, "Tanh"]}, optional_inputs=("B",))
    save(made.model, tmp_path / "m.onnx")
    code = main(["run", str(tmp_path / "m.onnx"), "-d", "CPU"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"uses {activation}" in err and "unsupported by OpenVINO" in err and "Traceback" not in err


@pytest.mark.parametrize("case", [OnnxCase("GRU", layers=2, bidirectional=True),
                                  OnnxCase("LSTM", layers=2, bidirectional=True, weights="input"),
                                  OnnxCase("RNN", layers=2, bidirectional=True, dynamic=False, lengths=True)],
                         ids=lambda c: c.name)
def test_nodes_reading_tensors_computed_on_the_way(case, tmp_path, capsys):
    """Layer 1 reads layer 0's Y through a Transpose and a Reshape: OpenVINO's tensor named y0."""
    onnx.save(onnx_model(case), tmp_path / "m.onnx")
    np.savez(tmp_path / "m.npz", **onnx_inputs(case))
    for extra in ([], ["--inputs", str(tmp_path / "m.npz")]):
        code, result, _ = run_json(capsys, str(tmp_path / "m.onnx"), "-d", "CPU", *extra)
        assert code == 0, result
        first, second = result["nodes"]
        assert first["verdict"] == second["verdict"] == "pass"
        assert second["max_abs"] < 1e-5 and {o["name"] for o in second["outputs"]} >= {"Y1"}
        # layer 0's Y_h is read by no op: the frontend drops it, and the reason says so
        assert [o["name"] for o in first["outputs"]] == ["Y0"]
        assert "Y_h0" in first["reason"] and "did not keep it" in first["reason"]


def test_dynamic_dims_follow_shape(tmp_path, capsys):
    """(Without sequence_lens: ragged lengths with initializer weights and dynamic dims reach the
    CPU plugin's sequence_lengths bug, samples/suites/full.xfail.toml.)"""
    made = generate("LSTM", 22, {"hidden_size": 4, "direction": "reverse"}, dynamic=("batch_size", "seq_length"),
                    optional_inputs=("B", "initial_h", "initial_c"))
    save(made.model, tmp_path / "m.onnx")
    code, result, _ = run_json(capsys, str(tmp_path / "m.onnx"), "-d", "CPU", "--shape", "X=[6,3,8]",
                               "--shape", "initial_h=[1,3,4]", "--shape", "initial_c=[1,3,4]")
    assert code == 0, result
    assert {i["name"]: i["shape"] for i in result["inputs"]}["X"] == [6, 3, 8]
    node, = result["nodes"]
    assert node["verdict"] == "pass" and node["semantics"] == "ONNX"


def test_inputs_keyed_by_other_names_are_refused(written, tmp_path, capsys):
    model, _ = written["test_gru_defaults"]
    np.savez(tmp_path / "bad.npz", x=np.zeros((1, 3, 2), np.float32))
    code = main(["run", str(model), "-d", "CPU", "--inputs", str(tmp_path / "bad.npz")])
    err = capsys.readouterr().err
    assert code == 2 and "no array for input X" in err


def test_reproducers_never_fail_a_passing_onnx_run_and_say_none_was_needed(written, tmp_path, capsys):
    """A CI wrapper that always passes --reproducers keeps green ONNX runs green."""
    model, inputs = written["test_gru_defaults"]
    code = main(["run", str(model), "-d", "CPU", "--inputs", str(inputs), "--reproducers", str(tmp_path / "r")])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and out[-1].startswith("PASS")
    assert out[-2] == f"  no reproducer written to {tmp_path / 'r'}: no node failed"
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("model, inputs, node", [
    ("test_lstm_with_peepholes", None, "LSTM -> Y_h"),  # a main-graph node (ONNX's own backend case, unnamed)
    (SAMPLES / "loop_peepholes.onnx", SAMPLES / "loop_peepholes.npz", "cell"),  # an LSTM in a Loop body
])
def test_a_failing_onnx_node_gets_a_single_node_onnx_reproducer_that_fails_alone(written, tmp_path, capsys, model,
                                                                                  inputs, node):
    import subprocess
    import sys

    if inputs is None:
        model, inputs = written[model]
    code, result, _ = run_json(capsys, str(model), "-d", "CPU", "--inputs", str(inputs),
                               "--reproducers", str(tmp_path / "r"))
    (failed,) = [n for n in result["nodes"] if n["verdict"] == "fail"]
    folder = Path(result["reproducers"][failed["name"]])
    assert code == 1 and failed["name"] == node and folder.parent == tmp_path / "r"
    assert sorted(p.name for p in folder.iterdir()) == ["actual.npz", "case.json", "expected.npz", "inputs.npz",
                                                        "model.onnx", "reproduce.py"]
    alone = onnx.load(folder / "model.onnx")
    assert [n.op_type for n in alone.graph.node] == ["LSTM"]
    onnx.checker.check_model(alone)
    done = subprocess.run([sys.executable, str(folder / "reproduce.py")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "MISMATCH" in done.stdout, done.stdout + done.stderr
    # and irtool judges the node alone the same way, on the same values
    code, alone_result, _ = run_json(capsys, str(folder / "model.onnx"), "-d", "CPU", "--inputs",
                                     str(folder / "inputs.npz"))
    (judged,) = alone_result["nodes"]
    assert code == 1 and judged["verdict"] == "fail" and judged["name"] == failed["name"]
    assert judged["max_abs"] == pytest.approx(failed["max_abs"], rel=1e-3)


# ----------------------------------------------------------------------------- --compare-with onnxruntime

def test_onnxruntime_agrees_on_a_model_openvino_gets_right(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    case = OnnxCase("GRU", layers=2, bidirectional=True)
    onnx.save(onnx_model(case), tmp_path / "m.onnx")
    code, result, _ = run_json(capsys, str(tmp_path / "m.onnx"), "-d", "CPU", "--compare-with", "onnxruntime")
    assert code == 0 and result["verdict"] == "pass"
    second = result["second_opinion"]
    assert second["tool"].startswith("onnxruntime ") and second["refused"] is None
    assert [n["agrees"] for n in second["nodes"]] == [True, True]
    oracle = result["oracle"]  # the model's outputs against onnxruntime's: a judgment of its own
    assert oracle["source"] == second["tool"] and oracle["verdict"] == "pass"
    assert {d["name"] for d in oracle["outputs"]} == {"Y_h1", "z"} and all(d["passed"] for d in oracle["outputs"])


def test_onnxruntime_refusing_layout_1_is_its_departure_and_the_verdict_stays_the_spec(written, capsys):
    pytest.importorskip("onnxruntime")
    model, inputs = written["test_gru_batchwise"]
    code, result, err = run_json(capsys, str(model), "-d", "CPU", "--inputs", str(inputs), "--compare-with",
                                 "onnxruntime")
    assert code == 1 and result["nodes"][0]["verdict"] == "fail"  # the spec's verdict on OpenVINO
    refused = result["second_opinion"]["refused"]
    assert "layout == 1" in refused and "onnxruntime refuses layout=1" in refused
    assert "onnxruntime" not in err  # its own log lines are kept off the terminal


def test_onnxruntime_departures_are_named_from_the_attributes():
    import tempfile

    from irtool.onnx.graph import load_graph
    from irtool.onnx.onnxruntime_run import departures

    with tempfile.TemporaryDirectory() as folder:
        made = generate("GRU", 14, {"hidden_size": 4, "activations": ["Affine", "ThresholdedRelu"],
                                    "activation_beta": [0.5]}, optional_inputs=("B",))
        node, = load_graph(save(made.model, Path(folder) / "m.onnx"), 1 << 20).nodes
    found = departures(node)
    assert found == ["Affine without alpha: onnxruntime uses 0, the page 1 (Affine's default)",
                     "ThresholdedRelu without alpha: onnxruntime uses 0, the page 1 (ThresholdedRelu's default)"]


def test_compare_with_onnxruntime_where_it_is_not_installed(written, monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    model, _ = written["test_gru_defaults"]
    code = main(["run", str(model), "-d", "CPU", "--compare-with", "onnxruntime"])
    err = capsys.readouterr().err
    assert code == 2 and "onnxruntime is not installed (pip install 'irtool[onnxruntime]')" in err


def test_compare_with_onnxruntime_needs_an_onnx_model(tmp_path, capsys):
    from irtool.pipeline.build import build_and_save
    from irtool.specs.cases import OpCase

    case = OpCase("GRUSequence", {"hidden_size": 4, "direction": "forward"},
                  {"batch_size": 1, "seq_length": 2, "input_size": 3})
    xml = build_and_save(case, tmp_path / "g.xml")[0]
    code = main(["run", str(xml), "-d", "CPU", "--compare-with", "onnxruntime"])
    assert code == 2 and "--compare-with onnxruntime runs ONNX .onnx models, and this is an IR model: compare it " \
        "with a second device" in capsys.readouterr().err


def test_missing_hidden_size_is_unsupported_by_openvino(written, tmp_path, capsys):
    model = onnx.load(written["test_gru_defaults"][0])
    node = model.graph.node[0]
    kept = [a for a in node.attribute if a.name != "hidden_size"]
    del node.attribute[:]
    node.attribute.extend(kept)
    onnx.save(model, tmp_path / "m.onnx")
    code = main(["run", str(tmp_path / "m.onnx"), "-d", "CPU"])
    err = capsys.readouterr().err
    assert code == 2 and "has no hidden_size" in err and "unsupported by OpenVINO" in err


@pytest.mark.parametrize("constant_weights, kind, path", [(False, "TensorIterator", "cpu-loop-decomposed-bf16"),
                                                          (True, "RNNSeq", "cpu-native-bf16")])
def test_an_onnx_node_at_bf16_is_judged_by_the_precision_path_its_openvino_node_ran(tmp_path, capsys,
                                                                                  constant_weights, kind, path):
    """ONNX's own GRU case (named, with W, R and B graph inputs or initializers) run at f32 here passes
    against the ideal reference; its recording replayed as a bf16 run's is judged, in ONNX semantics,
    against the emulation of the path the OpenVINO node it became ran (the CPU's RNNSeq where W, R and
    B are Constants, a TensorIterator over the decomposed cell where they are inputs), held to that
    path's bound, and the header names that reference."""
    model = onnx.ModelProto()
    model.CopyFrom(CASES["test_gru_seq_length"].model)
    model.graph.node[0].name = "gru"
    (arrays, _), = CASES["test_gru_seq_length"].data_sets
    given = dict(zip([i.name for i in model.graph.input], arrays))
    if constant_weights:
        for name in ("W", "R", "B"):
            model.graph.initializer.append(onnx.numpy_helper.from_array(given.pop(name), name))
        kept = [i for i in model.graph.input if i.name in given]
        del model.graph.input[:]
        model.graph.input.extend(kept)
    onnx.save(model, tmp_path / "gru.onnx")
    np.savez(tmp_path / "in.npz", **given)
    code, result, err = run_json(capsys, str(tmp_path / "gru.onnx"), "-d", "CPU", "--inputs", str(tmp_path / "in.npz"),
                                 "--save-outputs", str(tmp_path / "out.npz"))
    (node,) = result["nodes"]
    assert code == 0 and node["verdict"] == "pass" and node["against"] is None, (node, err)
    assert all(out["tolerance"]["source"] == "f32 default" for out in node["outputs"])
    saved = dict(np.load(tmp_path / "out.npz"))
    record = json.loads(saved["irtool:run"].tobytes())
    (ran,) = record["implementations"].values()
    assert ran["layer_types"] == [kind], record
    record.update(requested_precision="bf16", effective_precision={"CPU": "bf16"})
    saved["irtool:run"] = np.frombuffer(json.dumps(record).encode(), np.uint8)
    np.savez(tmp_path / "as-bf16.npz", **saved)
    code, result, err = run_json(capsys, str(tmp_path / "gru.onnx"), "-d", "CPU", "--precision", "bf16", "--inputs",
                                 str(tmp_path / "in.npz"), "--device-outputs", str(tmp_path / "as-bf16.npz"))
    (node,) = result["nodes"]
    assert node["semantics"] == "ONNX" and node["implementation"] == \
        ("TensorIterator (bf16; decomposed)" if kind == "TensorIterator" else "RNNSeq (f32)")
    assert node["against"].startswith(f"the bf16 emulation of {path} (measured)"), node["against"]
    assert all(out["tolerance"]["source"].startswith(f"derived: {path}'s bound") for out in node["outputs"])
    assert node["ideal"] and all(out["max_abs"] < 1e-5 for out in node["ideal"])  # f32 values: the ideal's
    assert result["against"].startswith("reference (ONNX semantics") and path in result["references"], result
