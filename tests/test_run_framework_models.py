"""``irtool run`` on real models made by PyTorch, Keras and PaddlePaddle, judged against the
frameworks' own outputs (``--inputs`` / ``--expected``).

The files are the frameworks' (samples/make_torch_models.py, make_tf_models.py and
make_paddle_models.py, run once with torch, tensorflow and paddle; the files are committed, the
frameworks are not test dependencies). What is asserted is what openvino 2026.4.1 was measured
to do on the CPU: a PyTorch packed sequence and a Paddle LSTM given ``sequence_length`` reach the
CPU plugin's dynamic-path sequence_lengths fault (the node fails with the known-fault hint and
the model's outputs differ from the framework's); a plain PyTorch GRU and a Paddle LSTM pass
both ways; Keras's GRU and SimpleRNN keep no recurrent op (their cells lowered to plain ops, which
irtool recognizes and judges as nodes), and ``--expected`` passes them too.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main
from irtool.judge.known_faults import KNOWN_FAULTS

MODELS = Path(__file__).resolve().parent.parent / "samples" / "models"
LENGTHS_FAULT = next(fault for fault in KNOWN_FAULTS if fault.id == "cpu-sequence-lengths")


def run_expected(capsys, model: Path, stem: Path) -> tuple[int, dict]:
    """Runs MODEL on STEM.inputs.npz against STEM.outputs.npz (the framework's), as JSON."""
    code = main(["run", str(model), "-d", "CPU", "--inputs", f"{stem}.inputs.npz", "--expected", f"{stem}.outputs.npz",
                 "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def framework_output_names(stem: Path) -> list[str]:
    return list(np.load(f"{stem}.outputs.npz"))


@pytest.mark.parametrize("model, cell, reached_through", [
    ("torch/packed_lstm.xml", "LSTMSequence", "Gather"),  # the batch comes through the lengths' sort
    ("paddle/lstm_lengths.pdmodel", "LSTMSequence", "Transpose"),
])
def test_a_frameworks_sequence_lengths_on_a_dynamic_batch_fail_the_node_on_the_known_cpu_fault(capsys, model, cell,
                                                                                                reached_through):
    stem = MODELS / model.rsplit(".", 1)[0]
    code, result = run_expected(capsys, MODELS / model, stem)
    assert code == 1 and result["verdict"] == "fail"
    (node,) = result["nodes"]
    assert node["type"] == cell and node["where"] == "top level" and node["verdict"] == "fail"
    assert node["tensors"][0].startswith(f"from {reached_through} ")
    assert any(note.startswith(LENGTHS_FAULT.hint()[:60]) for note in node["notes"]), node["notes"]
    # the steps before the shortest sequence's end agree; the fault shows from there on
    y = node["outputs"][0]
    assert y["name"] == "Y" and node["first_step_outside"] == 3
    # and the converted model's outputs are not what the framework computed: all three differ
    expected = result["expected"]
    assert expected["verdict"] == "fail" and expected["missing"] == [] and expected["extra"] == []
    assert expected["failed"] == framework_output_names(stem)


@pytest.mark.parametrize("model, cell", [
    ("torch/gru.xml", "GRUSequence"),
    ("paddle/lstm.pdmodel", "LSTMSequence"),
])
def test_a_frameworks_plain_sequence_passes_as_a_node_and_against_the_frameworks_outputs(capsys, model, cell):
    stem = MODELS / model.rsplit(".", 1)[0]
    code, result = run_expected(capsys, MODELS / model, stem)
    assert code == 0 and result["verdict"] == "pass"
    (node,) = result["nodes"]
    assert node["type"] == cell and node["verdict"] == "pass"
    expected = result["expected"]
    assert expected["verdict"] == "pass" and expected["failed"] == []
    assert [o["name"] for o in expected["outputs"]] == framework_output_names(stem)
    assert all(o["passed"] and o["max_abs"] < 1e-6 for o in expected["outputs"])


@pytest.mark.parametrize("name, cell", [("keras_gru", "GRUCell"), ("keras_simple_rnn", "RNNCell")])
def test_a_keras_recurrence_keeps_no_recurrent_op_and_is_judged_as_its_lowered_cell_and_by_kerass_outputs(
        capsys, name, cell):
    stem = MODELS / "tf" / name
    code, result = run_expected(capsys, MODELS / "tf" / f"{name}.tflite", stem)
    assert code == 0 and result["verdict"] == "pass"
    assert [(n["type"], n["verdict"]) for n in result["nodes"]] == [(cell, "pass")] and result["nodes"][0]["lowered"]
    assert result["no_reference"] is None and result["against"] == "reference"
    expected = result["expected"]
    assert expected["verdict"] == "pass" and sorted(o["name"] for o in expected["outputs"]) == sorted(
        framework_output_names(stem))
    assert sorted(o["shape"] for o in expected["outputs"]) == [[2, 6, 8], [2, 8]]  # the sequence and the last state


@pytest.mark.parametrize("model, stem, nodes", [
    ("block_lstm_while.pb", "block_lstm_while", ["LSTMCell"]),
    ("gru_block_while.pb", "gru_block_while", ["GRUCell"]),
    ("keras_lstm.tflite", "keras_lstm", ["LSTMCell"]),  # lowered to plain ops: the cells irtool recognizes
    ("keras_lstm", "keras_lstm.saved_model", ["LSTMCell"]),  # the SavedModel names its input and output apart
    ("keras_gru.tflite", "keras_gru", ["GRUCell"]),
    ("keras_gru", "keras_gru.saved_model", ["GRUCell"]),
    ("keras_simple_rnn.tflite", "keras_simple_rnn", ["RNNCell"]),
])
def test_each_tensorflow_sample_passes_against_tensorflows_outputs(capsys, model, stem, nodes):
    """Each TF sample's .inputs.npz / .outputs.npz are keyed by the converted model's own names
    (a frozen graph's Identity:0 is its c, Identity_1:0 its h), so --expected compares every output."""
    code, result = run_expected(capsys, MODELS / "tf" / model, MODELS / "tf" / stem)
    assert code == 0 and result["verdict"] == "pass"
    assert [n["type"] for n in result["nodes"]] == nodes
    assert all(n["verdict"] == "pass" for n in result["nodes"])
    expected = result["expected"]
    assert expected["verdict"] == "pass" and expected["missing"] == [] and expected["extra"] == []
    assert sorted(o["name"] for o in expected["outputs"]) == sorted(framework_output_names(MODELS / "tf" / stem))
    assert all(o["passed"] for o in expected["outputs"])


def test_a_keras_output_made_wrong_fails_against_kerass_outputs(capsys, tmp_path):
    """The PASS above could fail: one value of Keras's sequence off by 0.01 is a FAIL naming that output."""
    stem = MODELS / "tf" / "keras_gru"
    outputs = dict(np.load(f"{stem}.outputs.npz"))
    sequence = next(key for key, value in outputs.items() if value.ndim == 3)
    outputs[sequence][1, 4, 2] += 0.01
    wrong = tmp_path / "keras_gru"
    np.savez(f"{wrong}.outputs.npz", **outputs)
    (tmp_path / "keras_gru.inputs.npz").write_bytes(Path(f"{stem}.inputs.npz").read_bytes())
    code, result = run_expected(capsys, MODELS / "tf" / "keras_gru.tflite", wrong)
    assert code == 1 and result["expected"]["failed"] == [sequence]
    (bad,) = [o for o in result["expected"]["outputs"] if not o["passed"]]
    assert bad["worst_index"] == [1, 4, 2] and bad["outside"] == 1


def test_a_packed_sequence_is_sized_through_the_lengths_sort_and_fails_on_seeded_inputs_too(capsys):
    """No --inputs: the batch reaches the LSTMSequence through the lengths' TopK/Gather, irtool sizes
    the dynamic dims all the same, and the seeded ragged lengths meet the same fault."""
    code = main(["run", str(MODELS / "torch" / "packed_lstm.xml"), "-d", "CPU", "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 1 and result["verdict"] == "fail"
    (node,) = result["nodes"]
    assert any(note.startswith(LENGTHS_FAULT.hint()[:60]) for note in node["notes"]), node["notes"]
    assert [(i["name"], i["shape"]) for i in result["inputs"]] == [("x", [2, 4, 3]), ("8", [2])]
    assert result["shapes_chosen"] == {"x": "from the recurrent nodes", "8": "from the recurrent nodes"}


@pytest.mark.parametrize("model, cell", [("block_lstm_steps.pb", "LSTMCell"), ("gru_block_steps.pb", "GRUCell")])
def test_a_dim_that_counts_a_loops_iterations_is_sized_as_the_steps(capsys, model, cell):
    """TensorFlow's while loop over as many steps as x has: x's dynamic dim 0 reaches no recurrent
    node, only the Loop's condition (t < tf.shape(x)[0]).  It is sized like a time axis (--seq-length,
    else the default), the choice said, and the cell is judged at every iteration."""
    path = str(MODELS / "tf" / model)
    code = main(["run", path, "-d", "CPU", "--seq-length", "3", "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["verdict"] == "pass", result
    assert [i["shape"] for i in result["inputs"]] == [[3, 2, 3]]
    (how,) = result["shapes_chosen"].values()
    assert how.startswith("dim 0 = 3, the iterations of Loop '") and how.endswith("(--seq-length)")
    (node,) = result["nodes"]
    assert node["type"] == cell and node["verdict"] == "pass" and node["iterations"] == 3
    code = main(["run", path, "-d", "CPU"])
    out = capsys.readouterr().out
    assert code == 0 and "x:0 float32[4, 2, 3] (dynamic dims sized: dim 0 = 4, the iterations of Loop" in out
    # and TensorFlow's own outputs on its 6 steps agree with the converted model's
    stem = MODELS / "tf" / model.removesuffix(".pb")
    code, result = run_expected(capsys, MODELS / "tf" / model, stem)
    assert code == 0 and result["expected"]["verdict"] == "pass"


@pytest.mark.parametrize("extra", [[], ["--save-outputs", "OUT"]], ids=["plain", "save-outputs"])
def test_a_model_with_no_recurrent_op_runs_at_the_batch_it_says(capsys, tmp_path, extra):
    """A model with no recurrent op and a dynamic batch (samples/make_expected.py's dense graph, the
    batch left dynamic): the batch takes --batch's size (default 2), the header says so, and with
    nothing to judge the run exits 3 (a Keras SavedModel once said `skipped`, then asked for --shape)."""
    import sys

    import onnx

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "samples"))
    from make_expected import dense

    onnx.save(dense(np.random.default_rng(0), "batch"), tmp_path / "dyn.onnx")
    extra = [str(tmp_path / "out.npz") if item == "OUT" else item for item in extra]
    code = main(["run", str(tmp_path / "dyn.onnx"), "-d", "CPU", *extra])
    out = capsys.readouterr().out
    assert code == 3 and "x float32[2, 3] (dynamic dims sized: dim 0 = 2 (--batch; it reaches no recurrent op's dims))" \
        in out, out
    if extra:
        assert np.load(tmp_path / "out.npz")["y"].shape == (2, 4)
    assert main(["run", str(tmp_path / "dyn.onnx"), "-d", "CPU", "--shape", "x=[3,3]", *extra]) == 3
    assert "x float32[3, 3]\n" in capsys.readouterr().out
