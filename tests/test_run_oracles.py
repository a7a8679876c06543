"""``irtool run MODEL --compare-with onnxruntime|tflite|tensorflow|paddle``: the model's own framework's
runtime as an oracle, judging the model's outputs as ``--expected`` does, recurrent node or not.

The models are the frameworks' own (samples/make_tf_models.py, make_paddle_models.py: committed
with the frameworks' outputs on their inputs) and onnx.helper graphs.  onnxruntime is a test
dependency; the TFLite interpreter, TensorFlow and Paddle are extras too big to be (21, 274 and 195
MB wheels): their tests run where they are installed and skip saying so where not, and the
committed outputs the frameworks computed are checked against OpenVINO (tests/test_run_framework_models.py)
whatever is installed.
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "samples" / "models"


def installed(*modules: str) -> bool:
    return any(importlib.util.find_spec(module) is not None for module in modules)


RUNTIMES = {"tflite": installed("ai_edge_litert", "tflite_runtime"), "tensorflow": installed("tensorflow"),
            "paddle": installed("paddle")}


def needs(oracle: str):
    return pytest.mark.skipif(not RUNTIMES[oracle], reason=f"{oracle} is not installed here "
                                                           f"(pip install 'irtool[{oracle}]')")


@pytest.fixture(scope="module")
def dense(tmp_path_factory) -> Path:
    """An ONNX MatMul + Sigmoid (no recurrent op) and its inputs (samples/make_expected.py)."""
    sys.path.insert(0, str(ROOT / "samples"))
    from make_expected import main as make_expected

    folder = tmp_path_factory.mktemp("oracle")
    make_expected(folder)
    return folder


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["run", *argv, "--format", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out else {}


def test_onnxruntime_judges_a_model_with_no_recurrent_node(dense, capsys):
    """It was computed and hidden: NOT JUDGED, exit 3, while JSON held its comparison."""
    args = [str(dense / "dense.onnx"), "-d", "CPU", "--inputs", str(dense / "dense-in.npz"), "--compare-with",
            "onnxruntime"]
    code = main(["run", *args])
    out = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and out[-1].startswith("PASS: 1 of 1 outputs within tolerance of onnxruntime "), out
    assert any(line.startswith("  against onnxruntime ") for line in out)
    code, result = run_json(capsys, *args)
    oracle = result["oracle"]
    assert code == 0 and result["verdict"] == "pass" and oracle["verdict"] == "pass" and result["nodes"] == []
    assert [o["name"] for o in oracle["outputs"]] == ["y"] and oracle["outputs"][0]["total"] == 8


def test_a_model_no_one_judges_is_told_which_runtime_would(dense, capsys):
    code = main(["run", str(dense / "dense.onnx"), "-d", "CPU", "--inputs", str(dense / "dense-in.npz")])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert code == 3 and last.startswith("NOT JUDGED: nothing was compared")
    assert "--compare-with onnxruntime would judge its outputs" in last


@pytest.mark.parametrize("model, oracle, said", [
    ("tf/keras_lstm.tflite", "paddle", "--compare-with paddle runs PaddlePaddle .pdmodel models, and this is a "
                                       "TensorFlow Lite model: its framework's runtime is --compare-with tflite"),
    ("gru_lengths.xml", "tensorflow", "and this is an IR model: compare it with a second device"),
])
def test_a_runtime_that_does_not_read_the_format_is_one_line(capsys, model, oracle, said):
    code = main(["run", str(MODELS / model), "-d", "CPU", "--compare-with", oracle])
    err = capsys.readouterr().err
    assert code == 2 and said in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("oracle, model", [("tflite", "tf/keras_gru.tflite"), ("tensorflow", "tf/keras_lstm"),
                                           ("paddle", "paddle/lstm.pdmodel")])
def test_a_runtime_not_installed_names_the_extra_to_install(capsys, monkeypatch, oracle, model):
    from irtool.oracles import process

    monkeypatch.setitem(process.MODULES, oracle, (("irtool_no_such_runtime",), process.MODULES[oracle][1]))
    code = main(["run", str(MODELS / model), "-d", "CPU", "--compare-with", oracle])
    err = capsys.readouterr().err
    assert code == 2 and f"(pip install 'irtool[{oracle}]')" in err and len(err.splitlines()) == 1


# The samples with the outputs their framework computed (committed); the runtime must compute the same.
SAMPLES = [
    ("tflite", "tf/keras_lstm.tflite", "tf/keras_lstm", 1),  # the Keras cells lowered to plain ops (docs/lowered.md)
    ("tflite", "tf/keras_gru.tflite", "tf/keras_gru", 1),
    ("tflite", "tf/keras_simple_rnn.tflite", "tf/keras_simple_rnn", 1),
    ("tensorflow", "tf/keras_lstm", "tf/keras_lstm.saved_model", 1),
    ("tensorflow", "tf/keras_gru", "tf/keras_gru.saved_model", 1),
    ("tensorflow", "tf/block_lstm_while.pb", "tf/block_lstm_while", 1),
    ("tensorflow", "tf/gru_block_steps.pb", "tf/gru_block_steps", 1),
    ("paddle", "paddle/lstm.pdmodel", "paddle/lstm", 1),
]


@pytest.mark.parametrize("oracle, model, stem, nodes", [pytest.param(*s, marks=needs(s[0])) for s in SAMPLES],
                         ids=[s[1] for s in SAMPLES])
def test_each_runtime_judges_its_formats_models_recurrent_node_or_not(capsys, oracle, model, stem, nodes):
    code, result = run_json(capsys, str(MODELS / model), "-d", "CPU", "--inputs", str(MODELS / f"{stem}.inputs.npz"),
                            "--compare-with", oracle)
    judged = result["oracle"]
    assert code == 0 and result["verdict"] == "pass" and judged["verdict"] == "pass", result
    assert len(result["nodes"]) == nodes and judged["missing"] == [] and judged["extra"] == []
    committed = dict(np.load(MODELS / f"{stem}.outputs.npz"))  # what the framework computed when it was made
    assert sorted(o["name"] for o in judged["outputs"]) == sorted(committed)
    assert all(o["passed"] and o["max_abs"] < 1e-5 for o in judged["outputs"])


@needs("paddle")
def test_the_runtime_fails_a_model_openvino_gets_wrong(capsys):
    """A Paddle LSTM given sequence_length meets the CPU plugin's dynamic-path fault: Paddle Inference
    disagrees with OpenVINO on every output, and the model fails against it."""
    code, result = run_json(capsys, str(MODELS / "paddle" / "lstm_lengths.pdmodel"), "-d", "CPU", "--inputs",
                            str(MODELS / "paddle" / "lstm_lengths.inputs.npz"), "--compare-with", "paddle")
    assert code == 1 and result["oracle"]["verdict"] == "fail"
    assert sorted(result["oracle"]["failed"]) == sorted(np.load(MODELS / "paddle" / "lstm_lengths.outputs.npz"))


def test_harness_models_take_compare_with_as_a_result_of_their_own(dense, tmp_path):
    """A [[models]] entry's compare_with: the runtime's judgment is CASE::RUNTIME in results, junit
    and report.html; a Paddle LSTM that OpenVINO's CPU plugin gets wrong fails there where Paddle is
    installed."""
    import subprocess

    import lxml.etree as ET

    suite = tmp_path / "s.toml"
    entries = [f'[[models]]\nid = "dense"\npath = "{dense / "dense.onnx"}"\ninputs = "{dense / "dense-in.npz"}"\n'
               f'compare_with = "onnxruntime"\n']
    if RUNTIMES["tflite"]:
        entries.append(f'[[models]]\nid = "gru"\npath = "{MODELS / "tf" / "keras_gru.tflite"}"\n'
                       f'inputs = "{MODELS / "tf" / "keras_gru.inputs.npz"}"\ncompare_with = "tflite"\n')
    suite.write_text("\n".join(entries))
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(suite), "-d", "CPU", "--report-dir",
                           str(tmp_path / "out"), "--no-progress"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    results = {r["case"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())["results"]}
    # the Keras GRU's cell, lowered to plain ops, is a node of its own beside the runtime's judgment
    assert set(results) == {"dense[inputs]::onnxruntime"} | (
        {"gru[inputs]::tflite", "gru[inputs]::GRU@19"} if RUNTIMES["tflite"] else set())
    assert all(r["verdict"] == "pass" and r["outputs"] for r in results.values())
    cases = [case.get("name") for case in ET.parse(str(tmp_path / "out" / "junit.xml")).getroot().iter("testcase")]
    assert sorted(cases) == sorted(f"{case} on CPU at f32" for case in results)
    assert f'title="{len(results)} pass"' in (tmp_path / "out" / "report.html").read_text()  # the pass-rate table


def test_a_suites_compare_with_must_read_the_models_format(dense, tmp_path):
    from irtool.jobs.suite import SuiteError, load_suite

    suite = tmp_path / "s.toml"
    suite.write_text(f'[[models]]\npath = "{dense / "dense.onnx"}"\ncompare_with = "tflite"\n')
    with pytest.raises(SuiteError, match="compare_with is 'tflite'; expected 'onnxruntime', the runtime that reads "
                                         "ONNX models"):
        load_suite(suite)


def test_the_runtimes_child_keeps_no_secret_of_the_environment_and_has_a_scratch_home(tmp_path):
    """The framework runs the model's own graph (a SavedModel may hold ReadFile, WriteFile): its
    process gets only what a Python and the frameworks need, and an empty folder as HOME."""
    from irtool.oracles.process import oracle_environment

    environ = {"PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TF_CPP_MIN_LOG_LEVEL": "2",
               "OMP_NUM_THREADS": "2", "HOME": "/home/user", "AWS_SECRET_ACCESS_KEY": "secret",
               "GITHUB_TOKEN": "token", "SSH_AUTH_SOCK": "/tmp/agent", "PGPASSWORD": "password"}
    env = oracle_environment(environ, tmp_path)
    assert env["HOME"] == str(tmp_path) and env["PATH"] == "/usr/bin" and env["TF_CPP_MIN_LOG_LEVEL"] == "2"
    assert set(env) == {"PATH", "LANG", "LC_ALL", "TF_CPP_MIN_LOG_LEVEL", "OMP_NUM_THREADS", "HOME", "PYTHONPATH"}


@needs("tflite")
def test_a_runtime_runs_in_a_scratch_folder_with_a_relative_model_path_and_secrets_around(capsys, monkeypatch):
    """The child's working directory is a scratch folder: the model's path is made absolute for it,
    and what the environment held beyond what the runtime needs was not needed."""
    monkeypatch.chdir(MODELS / "tf")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    code, result = run_json(capsys, "keras_gru.tflite", "-d", "CPU", "--inputs", "keras_gru.inputs.npz",
                            "--compare-with", "tflite")
    assert code == 0 and result["oracle"]["verdict"] == "pass", result
