"""The case matrix: every case passes ``irtool run -d CPU`` at f32, and at bf16 with the bf16
tolerance while reporting a non-zero error (proof that the precision really changed) on a CPU
that has bf16; on one without, the bf16 run is skipped with the reason and exit 3.
Real OpenVINO on CPU, in-process through ``irtool.cli.program.main``."""
from __future__ import annotations

import json

import pytest

from irtool.cli.program import main
from irtool.judge.compare import DEFAULT_TOLERANCES
from irtool.pipeline.build import build_and_save
from irtool.specs.cases import OpCase

SIZES = {"batch_size": 3, "seq_length": 5, "input_size": 6}
CELL = {"batch_size": 3, "input_size": 6}


def seq(op: str, direction: str, **attributes) -> OpCase:
    return OpCase(op, {"hidden_size": 4, "direction": direction, **attributes}, SIZES)


MATRIX = {
    "gru-forward": seq("GRUSequence", "forward"),
    "gru-reverse": seq("GRUSequence", "reverse"),
    "gru-bidirectional-lbr": seq("GRUSequence", "bidirectional", linear_before_reset=True),
    "gru-clip-activations": seq("GRUSequence", "forward", clip=0.7, activations=["tanh", "relu"]),
    "gru-parameters-dynamic-batch": OpCase("GRUSequence", {"hidden_size": 4, "direction": "bidirectional"}, SIZES,
                                           weights_as_parameters=True, dynamic=("batch_size",)),
    "lstm-parameters-dynamic-batch-seq": OpCase("LSTMSequence", {"hidden_size": 4, "direction": "reverse"}, SIZES,
                                                weights_as_parameters=True, dynamic=("batch_size", "seq_length")),
    "lstm-forward": seq("LSTMSequence", "forward"),
    "lstm-reverse": seq("LSTMSequence", "reverse"),
    "lstm-bidirectional": seq("LSTMSequence", "bidirectional"),
    "lstm-clip-activations": seq("LSTMSequence", "forward", clip=0.9, activations=["sigmoid", "relu", "tanh"]),
    "lstm-parameters": OpCase("LSTMSequence", {"hidden_size": 4, "direction": "forward"}, SIZES,
                              weights_as_parameters=True),
    "rnn-forward": seq("RNNSequence", "forward"),
    "rnn-reverse": seq("RNNSequence", "reverse"),
    "rnn-bidirectional-relu-clip": seq("RNNSequence", "bidirectional", activations=["relu"], clip=1.5),
    "gru-cell": OpCase("GRUCell", {"hidden_size": 4}, CELL),
    "gru-cell-lbr-parameters": OpCase("GRUCell", {"hidden_size": 4, "linear_before_reset": True}, CELL,
                                      weights_as_parameters=True),
    "lstm-cell": OpCase("LSTMCell", {"hidden_size": 4}, CELL),
    "rnn-cell-sigmoid": OpCase("RNNCell", {"hidden_size": 4, "activations": ["sigmoid"]}, CELL),
}


# Found by this matrix (openvino 2026.4.1): the CPU plugin ignores sequence_lengths when a
# sequence op with Const weights has a dynamic dim (Y is not 0 past a short sequence's length,
# Ho is the state after all steps).  With Parameter weights, or static dims, or full lengths
# it agrees with the reference (test_dynamic_const_weights_pass_with_full_lengths).
CPU_IGNORES_LENGTHS = "openvino 2026.4.1 CPU ignores sequence_lengths with Const weights and a dynamic dim"
KNOWN_CPU_BUGS = {
    "gru-const-dynamic-batch": OpCase("GRUSequence", {"hidden_size": 4, "direction": "forward"}, SIZES,
                                      dynamic=("batch_size",)),
    "rnn-const-dynamic-seq": OpCase("RNNSequence", {"hidden_size": 4, "direction": "reverse"}, SIZES,
                                    dynamic=("seq_length",)),
}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("matrix")
    cases = {**MATRIX, **KNOWN_CPU_BUGS}
    return {name: build_and_save(case, folder / f"{name}.xml")[0] for name, case in cases.items()}


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["run", *argv, "--format", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out else {}


@pytest.mark.parametrize("name", list(MATRIX) + [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=CPU_IGNORES_LENGTHS)) for name in KNOWN_CPU_BUGS])
def test_case_passes_at_f32_and_at_bf16_with_a_real_error(name, models, capsys, cpu_precisions):
    code, result = run_json(capsys, str(models[name]), "-d", "CPU", "--precision", "f32")
    assert code == 0, result
    assert result["passed"] is True and result["against"] == "reference"
    assert result["run"]["effective_precision"] == {"CPU": "f32"}
    f32_error = max(out["max_abs"] for out in result["outputs"])
    assert f32_error < DEFAULT_TOLERANCES["f32"].atol

    if "bf16" not in cpu_precisions:
        assert_skipped_without_bf16(capsys, models[name], "CPU")
        return
    code, result = run_json(capsys, str(models[name]), "-d", "CPU", "--precision", "bf16")
    assert code == 0, result
    assert result["run"]["effective_precision"] == {"CPU": "bf16"}
    (node,) = result["nodes"]
    if node["against"]:  # judged against the emulation of its path: the bf16-sized error is the ideal's
        assert all(out["tolerance"]["source"].startswith("derived: ") for out in result["outputs"])
        bf16_error = max(out["max_abs"] for out in node["ideal"])
    else:
        assert all(out["tolerance"]["source"] == "bf16 default" for out in result["outputs"])
        bf16_error = max(out["max_abs"] for out in result["outputs"])
    assert bf16_error > 10 * max(f32_error, 1e-7), "bf16 run shows no bf16-sized error"


def assert_skipped_without_bf16(capsys, model, device: str) -> None:
    """A CPU without bf16 would run a bf16 request at f32: run says so and judges nothing."""
    code = main(["run", str(model), "-d", device, "--precision", "bf16"])  # text: nothing on stdout
    captured = capsys.readouterr()
    assert code == 3 and captured.out == ""
    assert captured.err.startswith("irtool: skipped: CPU does not support bf16 (its precisions: f32")
    assert captured.err.rstrip().endswith("nothing was run") and len(captured.err.splitlines()) == 1


def test_dynamic_const_weights_pass_with_full_lengths(models, capsys, tmp_path):
    """The known CPU bug above is about sequence_lengths only: with full lengths the same model passes."""
    import numpy as np

    rng = np.random.default_rng(3)
    batch, steps = SIZES["batch_size"], SIZES["seq_length"]
    arrays = {"X": rng.uniform(-1, 1, (batch, steps, SIZES["input_size"])).astype(np.float32),
              "initial_hidden_state": rng.uniform(-1, 1, (batch, 1, 4)).astype(np.float32),
              "sequence_lengths": np.full(batch, steps, np.int32)}
    np.savez(tmp_path / "full.npz", **arrays)
    code, result = run_json(capsys, str(models["gru-const-dynamic-batch"]), "-d", "CPU", "--inputs",
                            str(tmp_path / "full.npz"))
    assert code == 0 and result["passed"] is True
    arrays["sequence_lengths"] = np.array([steps, 2, 1][:batch], np.int32)
    np.savez(tmp_path / "ragged.npz", **arrays)
    code, result = run_json(capsys, str(models["gru-const-dynamic-batch"]), "-d", "CPU", "--inputs",
                            str(tmp_path / "ragged.npz"))
    assert code == 1 and result["passed"] is False


def test_sequence_outputs_report_per_step_errors(models, capsys):
    code, result = run_json(capsys, str(models["lstm-bidirectional"]), "-d", "CPU")
    assert code == 0
    by_name = {out["name"]: out for out in result["outputs"]}
    assert set(by_name) == {"Y", "Ho", "Co"}
    assert len(by_name["Y"]["step_max_abs"]) == SIZES["seq_length"]
    assert by_name["Ho"]["step_max_abs"] is None


def test_generated_lengths_are_ragged_and_valid(models, capsys, tmp_path):
    out = tmp_path / "out.npz"
    code, result = run_json(capsys, str(models["gru-forward"]), "-d", "CPU", "--save-outputs", str(out))
    assert code == 0 and result["saved_outputs"] == str(out)
    import numpy as np

    from irtool.pipeline.inputs import seeded_inputs
    from irtool.runtime.model import read_model

    lengths = seeded_inputs(read_model(models["gru-forward"]).model, seed=0)["sequence_lengths"]
    assert lengths.min() >= 1 and lengths.max() == SIZES["seq_length"] and len(set(lengths.tolist())) > 1
    y = np.load(out)["Y"]
    short = int(np.argmin(lengths))
    assert np.all(y[short, :, lengths[short]:, :] == 0), "Y past a sequence's length must be 0"


@pytest.mark.parametrize("device", ["AUTO:CPU", "HETERO:CPU", "MULTI:CPU", "BATCH:CPU", "AUTO"])
def test_virtual_devices_run_with_the_precision_they_were_asked_for(device, models, capsys, cpu_precisions):
    if "bf16" not in cpu_precisions:
        assert_skipped_without_bf16(capsys, models["gru-bidirectional-lbr"], device)
    for precision in [p for p in ("f32", "bf16") if p in cpu_precisions]:
        code, result = run_json(capsys, str(models["gru-bidirectional-lbr"]), "-d", device, "--precision", precision)
        assert code == 0, result
        assert result["run"]["execution_devices"] == ["CPU"]
        assert result["run"]["effective_precision"] == {"CPU": precision}
