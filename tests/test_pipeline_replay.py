"""A replay (irtool run --device-outputs; irtool.pipeline.replay and irtool.pipeline.recording): what
the record says against the flags, the inputs the outputs were computed from, the arrays of the file
against the model's outputs, and a header that says what was recorded and what assumed, never
measured here.  Real OpenVINO on CPU; the recordings are tests/data/recordings (a bf16 CPU's) and
this CPU's own outputs."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "data" / "recordings" / "cpu-bf16-avx512-openvino-2026.4.1" / "single-op" / "cases"
LSTM = CASES / "069_lstm_sequence"  # LSTMSequence-5, forward, [4, 10, 16] -> hidden 32: RNNSeq on CPU
GRU = ROOT / "samples" / "ir" / "valid" / "gru_sequence_forward.xml"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["run", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def lstm(capsys, *argv: str, outputs: Path = LSTM.with_suffix(".outputs-bf16.npz")) -> tuple[int, str, str]:
    return run(capsys, str(LSTM.with_suffix(".xml")), "--inputs", str(LSTM.with_suffix(".inputs.npz")),
               "--device-outputs", str(outputs), *argv)


def one_error(code: int, out: str, err: str, *said: str) -> None:
    assert code == 2 and not out, out
    assert len(err.strip().splitlines()) == 1 and "internal error" not in err and "Traceback" not in err, err
    for words in said:
        assert words in err, err


@pytest.fixture
def unrecorded(tmp_path) -> Path:
    """The recorded bf16 outputs of the LSTM without their record."""
    path = tmp_path / "bare.npz"
    with np.load(LSTM.with_suffix(".outputs-bf16.npz")) as recorded:
        np.savez(path, **{k: recorded[k] for k in recorded.files if not k.startswith("irtool:")})
    return path


# -- finding 2: a flag that contradicts the record is an error naming both; else the record is said as such

@pytest.mark.parametrize("flags, said", [
    (["-d", "GPU"], "recorded on CPU at bf16; -d GPU contradicts the record: give -d CPU"),
    (["-d", "CPU", "--precision", "f32"], "(bf16 requested); --precision f32 contradicts the record"),
    (["-d", "CPU", "--precision", "f16"], "--precision f16 contradicts the record"),
])
def test_a_flag_that_contradicts_the_record_is_an_error_naming_both(capsys, flags, said):
    one_error(*lstm(capsys, *flags), "069_lstm_sequence.outputs-bf16.npz: ", said)


@pytest.mark.parametrize("flags", [[], ["--precision", "bf16"]])
def test_the_record_is_said_as_recorded_never_as_requested_here(capsys, flags):
    code, out, err = lstm(capsys, "-d", "CPU", *flags)
    assert code == 0, out + err
    header = out.splitlines()[1]
    assert header.startswith("  precision: recorded on CPU at bf16 (bf16 requested); execution devices: CPU;"), header
    code, out, _ = lstm(capsys, "-d", "CPU", *flags, "--format", "json")
    data = json.loads(out)
    assert data["replay"]["run"] == "recorded" and data["replay"]["implementations"] == "recorded"
    assert data["run"]["precision"] == "bf16" and data["nodes"][0]["implementation"] == "RNNSeq (bf16)"


# -- finding 4: without a record, the device, precision and implementation are assumed, and said so

@pytest.mark.parametrize("device, implementation", [("CPU", "RNNSeq (bf16)"), ("GPU", None)])
def test_without_a_record_the_run_is_assumed_and_the_implementation_shown_is_the_judged_one(
        capsys, unrecorded, device, implementation):
    code, out, err = lstm(capsys, "-d", device, "--precision", "bf16", "--format", "json", outputs=unrecorded)
    assert code == 0, out + err
    data = json.loads(out)
    (node,) = data["nodes"]
    assert data["replay"]["run"] == "assumed" and node["implementation"] == implementation
    if implementation is not None:  # this CPU's path, said at the precision it was judged at (not its f32)
        assert node["against"].startswith("the bf16 emulation of cpu-native-bf16")
        assert data["replay"]["implementations"] == "assumed: the path this machine's CPU takes (read at f32), run at bf16"
    else:
        assert data["replay"]["implementations"] == "unknown" and "bf16 emulation" not in (node["against"] or "")
    code, out, _ = lstm(capsys, "-d", device, "--precision", "bf16", outputs=unrecorded)
    assert out.splitlines()[1] == (f"  precision: assumed bf16 on {device} (-d and --precision: the file has no "
                                   f"record of the run); openvino not recorded")
    assert f"bf16 on {device};" not in out and "requested" not in out.splitlines()[1]


def test_outputs_saved_by_a_replay_are_a_replays_never_a_record(capsys, unrecorded, tmp_path):
    again = tmp_path / "again.npz"
    assert lstm(capsys, "-d", "CPU", "--precision", "bf16", "--save-outputs", str(again), outputs=unrecorded)[0] == 0
    with np.load(again) as saved:
        assert "irtool:run" not in saved.files and "irtool:replayed" in saved.files
    code, out, err = lstm(capsys, "-d", "CPU", "--precision", "bf16", outputs=again)
    assert code == 0, err
    assert f"(no record of the run: outputs only, written by a replay of {unrecorded})" in " ".join(out.split())
    assert "recorded on CPU" not in out
    # a recorded file replayed and saved keeps the record it came from, and says it is a replay's
    kept = tmp_path / "kept.npz"
    assert lstm(capsys, "-d", "CPU", "--save-outputs", str(kept))[0] == 0
    code, out, _ = lstm(capsys, "-d", "CPU", outputs=kept)
    assert code == 0 and "recorded on CPU at bf16" in out and "written by a replay of " in " ".join(out.split())


# -- finding 3: the inputs the outputs were computed from

def test_outputs_are_replayed_on_the_inputs_they_were_computed_from(capsys, tmp_path):
    saved, inputs = tmp_path / "seed3.npz", tmp_path / "in.npz"
    assert run(capsys, str(GRU), "-d", "CPU", "--seed", "3", "--save-outputs", str(saved))[0] == 0
    code, out, err = run(capsys, str(GRU), "-d", "CPU", "--device-outputs", str(saved))  # the record's seed
    assert code == 0 and "checked: the record's digest (generated from seed 3, as recorded)" in out, out + err
    one_error(*run(capsys, str(GRU), "-d", "CPU", "--device-outputs", str(saved), "--seed", "0"),
              "seed3.npz: its outputs were computed from other inputs than the inputs generated from seed 0",
              "give the inputs they were computed from with --inputs")
    from irtool.pipeline.inputs import case_inputs
    from irtool.pipeline.prepare import read_and_prepare

    arrays = case_inputs(read_and_prepare(GRU), None, 3)[0]
    np.savez(inputs, **arrays)
    code, out, _ = run(capsys, str(GRU), "-d", "CPU", "--device-outputs", str(saved), "--inputs", str(inputs))
    assert code == 0 and "checked: the record's digest" in out
    arrays["X"] = arrays["X"] + 0.5
    np.savez(inputs, **arrays)
    one_error(*run(capsys, str(GRU), "-d", "CPU", "--device-outputs", str(saved), "--inputs", str(inputs)),
              f"other inputs than the --inputs file {inputs}")


def test_outputs_without_a_record_of_their_inputs_need_inputs(capsys, unrecorded):
    code, out, err = run(capsys, str(LSTM.with_suffix(".xml")), "-d", "CPU", "--precision", "bf16",
                         "--device-outputs", str(unrecorded))
    one_error(code, out, err, f"{unrecorded}: no record of the run says which inputs its outputs were computed from; "
                              f"give them with --inputs")
    one_error(*run(capsys, str(LSTM.with_suffix(".xml")), "-d", "CPU", "--device-outputs",
                   str(LSTM.with_suffix(".outputs-bf16.npz"))), "its record does not say which inputs")


# -- finding 5: every array of the file against the model's outputs, before anything is judged

def _reshaped(arrays: dict, key: str, how) -> dict:
    return {**arrays, key: how(arrays[key])}


@pytest.mark.parametrize("key, how, holds, expected", [
    ("Y", lambda a: a[:, :, :5], "float32[4, 1, 5, 32]", "a float array [4, 1, 10, 32]"),
    ("Y", lambda a: a.transpose(), "float32[32, 10, 1, 4]", "a float array [4, 1, 10, 32]"),
    ("Y", lambda a: a.astype(np.int32), "int32[4, 1, 10, 32]", "a float array [4, 1, 10, 32]"),
    ("Y", lambda a: a > 0, "bool[4, 1, 10, 32]", "a float array"),
    ("Y", lambda a: np.float32(a.flat[0]), "float32[]", "a float array [4, 1, 10, 32]"),
    ("Ho", lambda a: a[:, 0], "float32[4, 32]", "output Ho as it gives it on these inputs: a float array [4, 1, 32]"),
    ("Co", lambda a: a[:1], "float32[1, 1, 32]", "a float array [4, 1, 32]"),
])
def test_an_array_unlike_the_models_output_is_one_line_naming_the_file_and_key(capsys, tmp_path, key, how, holds,
                                                                               expected):
    with np.load(LSTM.with_suffix(".outputs-bf16.npz")) as recorded:
        arrays = {k: recorded[k] for k in recorded.files}
    path = tmp_path / "odd.npz"
    np.savez(path, **_reshaped(arrays, key, how))
    one_error(*lstm(capsys, "-d", "CPU", outputs=path), f"{path}: {key} holds {holds}; expected ", expected)


def test_other_float_dtypes_of_the_right_shape_are_judged(capsys, tmp_path):
    with np.load(LSTM.with_suffix(".outputs-bf16.npz")) as recorded:
        arrays = {k: recorded[k].astype(np.float64) if not k.startswith("irtool:") else recorded[k]
                  for k in recorded.files}
    np.savez(tmp_path / "f64.npz", **arrays)
    code, out, err = lstm(capsys, "-d", "CPU", outputs=tmp_path / "f64.npz")
    assert code == 0 and out.splitlines()[-1].startswith("PASS"), out + err


# -- finding 7: flags a replay cannot honour are refused, one line each

@pytest.mark.parametrize("flags, said", [
    (["--config", "PERFORMANCE_HINT=LATENCY"], "--config does not apply to a replay"),
    (["--seed", "4"], "--seed does not apply beside --inputs"),
    (["--shape", "X=[4,10,16]"], "--shape does not apply beside --inputs"),
    (["--batch", "4"], "--batch does not apply beside --inputs"),
    (["--seq-length", "10"], "--seq-length does not apply beside --inputs"),
    (["--openvino", "current"], "--openvino does not apply to a replay"),
])
def test_a_flag_a_replay_cannot_honour_is_refused(capsys, flags, said):
    one_error(*lstm(capsys, "-d", "CPU", *flags), said)


# -- finding 6: outputs that are not the file's own captured tensors: the recording is inconsistent

def test_outputs_that_disagree_with_their_own_captured_tensors_are_an_inconsistent_recording(capsys, tmp_path):
    model, saved, shifted = ROOT / "samples" / "models" / "lstm2_bidirectional.onnx", tmp_path / "o.npz", tmp_path / "s.npz"
    assert run(capsys, str(model), "-d", "CPU", "--shape", "x=[6,3,5]", "--save-outputs", str(saved))[0] == 0
    code, out, err = run(capsys, str(model), "-d", "CPU", "--device-outputs", str(saved))
    assert code == 0 and "  recorded outputs: agree with the file's own captured tensors" in out, out + err
    assert "probed copy" not in out and "unprobed" not in out
    with np.load(saved) as arrays:
        changed = {k: arrays[k] + np.float32(0.01) if not k.startswith("irtool:") else arrays[k] for k in arrays.files}
    np.savez(shifted, **changed)
    one_error(*run(capsys, str(model), "-d", "CPU", "--device-outputs", str(shifted)),
              f"{shifted}: its outputs differ from its own captured tensors of the same values (",
              "the recording is inconsistent")
