"""Weights stored as int8 whose products' activations a CPU may quantize at run time
(irtool.judge.quantized): a lowered cell of such a model is judged against the exact reference and
one with its product inputs quantized as the CPU quantizes them, and says so; with
DYNAMIC_QUANTIZATION_GROUP_SIZE=0 it is judged as any f32 node.  What the device does is read from
it (its property, what it computed), so the tests mean the same on a CPU that quantizes (AVX2_VNNI,
AVX512_VNNI) and on one that does not (AVX2 alone)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from irtool.cli.program import main
from irtool.judge.compare import TolerancePolicy
from irtool.judge.nodes import evaluate_node, judge_node
from irtool.judge.quantized import quantized_rows
from irtool.runtime.core import core
from irtool.runtime.nodes import Feed, RecurrentNode
from irtool.specs import registry

TF = Path(__file__).resolve().parent.parent / "samples" / "models" / "tf"
SAMPLE, INPUTS = str(TF / "keras_lstm_int8.tflite"), str(TF / "keras_lstm_int8.inputs.npz")
GROUP_SIZE = "DYNAMIC_QUANTIZATION_GROUP_SIZE"
WEIGHTS = "W, R stored as i8 (decompressed by a Convert)"


def run_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["run", *args, "-d", "CPU", "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def quantization_notes(node: dict) -> list[str]:
    return [note for note in node["notes"] if GROUP_SIZE in note]


def test_the_int8_sample_at_the_cpus_default_config_passes_with_the_quantization_named(capsys):
    group = int(core().get_property("CPU", GROUP_SIZE))  # what this CPU's plugin does by default
    code, result = run_json(capsys, SAMPLE, "--inputs", INPUTS)
    (node,) = result["nodes"]
    assert code == 0 and node["verdict"] == "pass" and node["weights"] == WEIGHTS, node
    notes = quantization_notes(node)
    if not group:
        assert not notes
        return
    (note,) = notes
    assert f"{GROUP_SIZE}={group}: int8 per group of {group}" in note and "what its products by W, R read" in note
    # which of the two it agreed with is what it computed, said either way
    assert "the device agrees with the quantized one" in note or "the device agrees with the exact one" in note


def test_the_int8_sample_with_dynamic_quantization_off_is_judged_exactly(capsys):
    code, result = run_json(capsys, SAMPLE, "--inputs", INPUTS, "--config", f"{GROUP_SIZE}=0")
    (node,) = result["nodes"]
    assert code == 0 and node["verdict"] == "pass" and node["max_abs"] < 1e-5
    assert node["weights"] == WEIGHTS and not quantization_notes(node)


def test_a_fault_planted_in_the_int8_model_still_fails_at_its_step(capsys):
    code, result = run_json(capsys, str(TF / "keras_lstm_int8_fault.xml"), "--inputs", INPUTS)
    (node,) = result["nodes"]
    assert code == 1 and node["verdict"] == "fail" and node["iteration"] == [3], node
    assert node["max_abs"] > 0.01 and "the device agrees" not in node["reason"]


def test_the_tflite_interpreter_judges_the_int8_sample_on_its_weights_dequantized(capsys):
    """The interpreter's hybrid kernels quantize the float inputs of the int8-weight products at run
    time, which moves the sample's output beyond f32's tolerance (a false FAIL before): the oracle
    runs the model on its weights dequantized to f32, what OpenVINO computes with run-time
    quantization off, and says how far the interpreter's run of the model as shipped is."""
    import re

    code, result = run_json(capsys, SAMPLE, "--inputs", INPUTS, "--compare-with", "tflite",
                            "--config", f"{GROUP_SIZE}=0")
    oracle = result["oracle"]
    assert code == 0 and oracle["verdict"] == "pass" and oracle["source"].startswith("ai-edge-litert")
    (output,) = oracle["outputs"]
    assert output["max_abs"] < 1e-6, output
    shipped = float(re.search(r"as shipped differs from that by up to ([\d.e-]+)$", oracle["note"]).group(1))
    assert "2 ops as int8 (FULLY_CONNECTED x2)" in oracle["note"] and shipped > 100 * output["tolerance"]["atol"]


def test_a_tflite_file_past_a_flatbuffers_size_goes_to_the_interpreter_by_path(tmp_path):
    """Such a file keeps its buffers outside the flatbuffer, so nothing of it is dequantized: the
    interpreter opens it as before (a sparse file of zeros: its own refusal, not a file-size error)."""
    import pytest

    from irtool.oracles.common import OracleRefused
    from irtool.oracles.tflite_run import FLATBUFFER_LIMIT, run_tflite

    big = tmp_path / "big.tflite"
    with open(big, "wb") as handle:
        handle.truncate(FLATBUFFER_LIMIT + 1)
    with pytest.raises(OracleRefused):  # the interpreter's refusal (a FileError if irtool had read it)
        run_tflite(big, {})


def lstm_cell(hidden: int, size: int, stored: str | None) -> tuple[RecurrentNode, dict[str, np.ndarray]]:
    """A top-level LSTMCell fed by model inputs, its W and R constant (stored as ``stored``), and its inputs."""
    rng = np.random.default_rng(3)
    spec = registry().get("LSTMCell", 4)
    weights = {"W": rng.uniform(-0.5, 0.5, (4 * hidden, size)), "R": rng.uniform(-0.5, 0.5, (4 * hidden, hidden)),
               "B": rng.uniform(-0.5, 0.5, 4 * hidden)}
    feeds = tuple(Feed(port, constant=weights[port.name].astype(np.float32),
                       stored=stored if port.name in ("W", "R") else None) if port.name in weights else
                  Feed(port, parameter=port.name) for port in spec.inputs)
    node = RecurrentNode(0, "cell", spec, {"hidden_size": hidden}, "top level", feeds, (0, 1), {0: 0, 1: 1})
    inputs = {"X": rng.standard_normal((2, size)), "initial_hidden_state": rng.uniform(-1, 1, (2, hidden)),
              "initial_cell_state": rng.uniform(-1, 1, (2, hidden))}
    return node, {name: array.astype(np.float32) for name, array in inputs.items()}


def test_a_device_that_quantizes_as_the_cpu_does_passes_and_is_told_apart_from_one_that_does_not():
    node, inputs = lstm_cell(32, 64, "i8")
    arrays = [inputs["X"], inputs["initial_hidden_state"], inputs["initial_cell_state"]] + \
        [feed.constant for feed in node.feeds[3:]]
    exact = evaluate_node(node, arrays)
    quantized = evaluate_node(node, [quantized_rows(a, 32) if k < 2 else a for k, a in enumerate(arrays)])
    effect = max(float(np.abs(e - q).max()) for e, q in zip(exact, quantized))
    assert effect > 1e-3  # far past the f32 tolerance: without the second reference it would fail

    def judged(outputs, group, stored="i8"):
        node_, _ = lstm_cell(32, 64, stored)
        return judge_node(node_, inputs, list(outputs), TolerancePolicy(), "f32", dynamic_quantization=group)

    for outputs, word in ((quantized, "the quantized one"), (exact, "the exact one")):
        result = judged(outputs, 32)
        (note,) = [n for n in result.notes if GROUP_SIZE in n]
        assert result.verdict == "pass" and f"the device agrees with {word}" in note
        assert f"moves its outputs by up to {effect:.3g}" in note
    assert judged(quantized, 0).verdict == "fail"  # the property 0: judged exactly
    assert judged(quantized, 32, stored=None).verdict == "fail"  # f32 weights: nothing quantizes
    faulty = (quantized[0] + np.float32(0.01), quantized[1])
    assert judged(faulty, 32).verdict == "fail"


def test_activations_are_quantized_per_group_of_each_row_symmetric_to_int8():
    values = np.array([[1.27, -0.6, 0.005, 0.0012, 0.0, 0.0], [2.54, 1.0, -0.3, 0.3, 0.1, 0.2]], np.float32)
    got = quantized_rows(values, 2)
    # a group's scale is its largest magnitude / 127; each value the nearest multiple of it
    assert np.allclose(got[0, :2], [1.27, -0.6]) and np.isclose(got[0, 3], 30 * 0.005 / 127)  # 30.48 steps: 30
    assert (got[0, 4:] == 0).all()  # a group of zeros stays zeros
    assert np.isclose(got[1, 1], 50 * 2.54 / 127)  # 1.0 is 50 steps of 0.02
    assert np.allclose(got[1, 2:4], [-0.3, 0.3]) and got.shape == values.shape and got.dtype == np.float32
