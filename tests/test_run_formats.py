"""``irtool run``, the harness's ``[[models]]`` and ``reduce`` read every format OpenVINO reads.

The models are TensorFlow's own (samples/make_tf_models.py, run once with tensorflow; the
files are committed): BlockLSTM and GRUBlockCell in a ``tf.while_loop`` as frozen graphs,
whose recurrent cells OpenVINO's frontend puts inside Loop bodies, and a Keras LSTM as a
.tflite file and a SavedModel folder, of which OpenVINO keeps no recurrent op (the cell lowered to
plain ops in a Loop body, which irtool recognizes: tests/test_run_lowered.py).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main

TF = Path(__file__).resolve().parent.parent / "samples" / "models" / "tf"


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["run", *argv, "--format", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out else {}


@pytest.mark.parametrize("name, cell, iterations, depth", [
    ("block_lstm_while", "LSTMCell", 6, 2),  # BlockLSTM's own Loop inside the while loop's
    ("gru_block_while", "GRUCell", 6, 1),
])
def test_a_tensorflow_frozen_graph_runs_and_its_loop_body_cell_is_judged(capsys, tmp_path, name, cell, iterations,
                                                                        depth):
    saved = tmp_path / "outputs.npz"
    code, result = run_json(capsys, str(TF / f"{name}.pb"), "-d", "CPU", "--inputs", str(TF / f"{name}.inputs.npz"),
                            "--save-outputs", str(saved))
    assert code == 0 and result["verdict"] == "pass", result
    (node,) = result["nodes"]
    assert node["type"] == cell and node["verdict"] == "pass" and node["iterations"] == iterations
    assert len(node["iteration"]) == depth and node["where"].startswith("body of Loop ")
    # and the converted model computes what TensorFlow did, output by output (the samples' files are
    # keyed by the converted model's names: Identity:0, Identity_1:0)
    ours, theirs = np.load(saved), np.load(TF / f"{name}.outputs.npz")
    assert sorted(key for key in ours.files if not key.startswith("irtool:")) == sorted(theirs.files)
    for key in theirs.files:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.parametrize("path", ["keras_lstm.tflite", "keras_lstm"])
def test_a_tflite_file_and_a_saved_model_folder_run_and_their_lowered_cell_is_judged(capsys, path):
    code, result = run_json(capsys, str(TF / path), "-d", "CPU")
    assert code == 0 and result["verdict"] == "pass"
    assert [list(s[1]) for s in result["output_shapes"]] == [[2, 8]]
    (node,) = result["nodes"]
    assert node["type"] == "LSTMCell" and node["where"].startswith("body of Loop ") and node["lowered"]


def test_a_tflite_file_gives_tensorflows_outputs(capsys, tmp_path):
    saved = tmp_path / "outputs.npz"
    code, _ = run_json(capsys, str(TF / "keras_lstm.tflite"), "-d", "CPU", "--inputs", str(TF / "keras_lstm.inputs.npz"),
                       "--save-outputs", str(saved))
    assert code == 0
    ours = np.load(saved)
    np.testing.assert_allclose(ours[list(ours.keys())[0]], np.load(TF / "keras_lstm.outputs.npz")["StatefulPartitionedCall_1:0"],
                               rtol=1e-5, atol=1e-6)


def test_a_file_the_frontend_cannot_read_is_one_line_without_its_logging(capsys, tmp_path):
    (tmp_path / "junk.tflite").write_bytes(b"not a flatbuffer")
    code = main(["run", str(tmp_path / "junk.tflite"), "-d", "CPU"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"irtool: error: {tmp_path / 'junk.tflite'}: OpenVINO's TensorFlow Lite "
                                        f"frontend cannot read it: ") and len(err.strip().splitlines()) == 1


def test_the_harness_and_reduce_take_a_frozen_graph(tmp_path):
    suite = tmp_path / "tf.toml"
    suite.write_text(f'[[models]]\nid = "gru"\npath = "{TF / "gru_block_while.pb"}"\n'
                     f'inputs = "{TF / "gru_block_while.inputs.npz"}"\n')
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(suite), "-d", "CPU", "--report-dir",
                           str(tmp_path / "out"), "--no-progress", "-j", "1"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert result["verdict"] == "pass" and result["op"] == "GRUCell-3"
    node = result["node"]
    done = subprocess.run([sys.executable, "-m", "irtool", "reduce", str(TF / "gru_block_while.pb"), "--node", node,
                           "-d", "CPU", "--inputs", str(TF / "gru_block_while.inputs.npz"), "-o",
                           str(tmp_path / "reduced")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 1 and "does not fail, so there is nothing to reduce" in done.stdout + done.stderr
