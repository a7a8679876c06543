"""Replay (irtool run --device-outputs, irtool.pipeline.recording): outputs a device gave elsewhere judged
here, and the bf16 precision model checked against what a real bf16 device computed.

tests/data/recordings/cpu-bf16-avx512-openvino-2026.4.1 is a compact subset of the recordings made on an
AMD EPYC with AVX512_BF16 (openvino 2026.4.1; README.source.md beside it says how): OpenVINO's CPU plugin
at bf16 on single-op models of the six ops, every path it runs them by, and planted weight faults.
Replayed on any CPU, whether it computes bf16 or not."""
from __future__ import annotations

import importlib.util
import json
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "tests" / "data" / "recordings" / "cpu-bf16-avx512-openvino-2026.4.1"
SINGLE_OP = RECORDED / "single-op"
MANIFEST = json.loads((SINGLE_OP / "manifest.json").read_text())
CASES = {case["id"]: case for case in MANIFEST["cases"]}
MODELS = ROOT / "samples" / "models"


@lru_cache(maxsize=1)
def replay_tool():
    """benchmarks/replay_recordings.py, which replays a whole recordings folder."""
    spec = importlib.util.spec_from_file_location("replay_recordings", ROOT / "benchmarks" / "replay_recordings.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def replay_json(capsys, case: dict, *more: str) -> tuple[int, dict]:
    files = case["files"]
    code, out, err = run(capsys, "run", str(SINGLE_OP / (files.get("xml") or files["clean_xml"])), "-d", "CPU",
                         "--precision", "bf16", "--inputs", str(SINGLE_OP / files["inputs"]),
                         "--device-outputs", str(SINGLE_OP / files["outputs-bf16"]), "--format", "json", *more)
    assert out, err
    return code, json.loads(out)


# The path each clean case ran, by what its runtime graph says and its attributes
def expected_path(case: dict) -> str:
    kinds = {layer["layerType"] for layer in case["runs"]["bf16"]["ran_as"]}
    kernel = case["clip"] == 0 and not (case["op"].startswith("LSTM") and case["activations"][-1] != "tanh")
    if "Subgraph" in kinds:
        return "cpu-decomposed-bf16"
    if "TensorIterator" in kinds:
        if kernel:
            return "cpu-loop-kernel-bf16"
        return "cpu-loop-decomposed-lbr-bf16" if case["linear_before_reset"] else "cpu-loop-decomposed-bf16"
    if case["direction"] == "bidirectional":  # one RNNSeq per direction
        return "cpu-native-split-bf16"
    return "cpu-native-bf16"


CLEAN = [case_id for case_id, case in CASES.items() if case["fault_of"] is None]
FAULTS = [case_id for case_id, case in CASES.items() if case["fault_of"] is not None]


def test_the_subset_is_compact_and_says_where_it_comes_from():
    size = sum(path.stat().st_size for path in RECORDED.rglob("*") if path.is_file())
    assert size < 5_000_000
    assert "avx512_bf16" in MANIFEST["cpu_flags"] and MANIFEST["openvino"].startswith("2026.4.1")
    assert "avx512_bf16" in (RECORDED.parent / "README.md").read_text()
    paths = {expected_path(CASES[case_id]) for case_id in CLEAN}
    assert paths == {"cpu-native-bf16", "cpu-native-split-bf16", "cpu-loop-kernel-bf16", "cpu-decomposed-bf16",
                     "cpu-loop-decomposed-bf16", "cpu-loop-decomposed-lbr-bf16"}


@pytest.mark.parametrize("case_id", CLEAN)
def test_a_clean_model_passes_on_what_the_bf16_device_computed_with_every_step_judged(capsys, case_id):
    """The node against the emulation of its path, each step from the device's own previous state; and
    --expected against its own f32 outputs: each output allowed what the device's rounding moved it by
    (which the node's verdict judges step by step), plus the path's bound, so a recurrence that
    amplifies rounding passes as long as the model computes what it should."""
    case = CASES[case_id]
    code, result = replay_json(capsys, case, "--expected", str(SINGLE_OP / case["files"]["outputs-f32"]))
    (node,) = result["nodes"]
    assert code == 0 and node["verdict"] == "pass", node["reason"]
    assert result["expected"]["verdict"] == "pass", result["expected"]
    assert "the device's bf16 rounding moved it by" in result["expected"]["bound"]
    assert node["against"].startswith(f"the bf16 emulation of {expected_path(case)} (measured)")
    assert result["replayed"].startswith("outputs from ")
    if case["steps"] is not None:  # a sequence: each step from the device's own previous state
        steps = f"each of its {case['steps']} steps" if case["steps"] != 1 else "its one step"
        said = f"{steps} judged from the device's own previous hidden state"
        assert any(note.startswith(said) for note in node["notes"]), node["notes"]
        for output in node["outputs"]:
            assert output["unjudged"] == 0


@lru_cache(maxsize=None)
def openvino_catches(case_id: str) -> bool:
    """Whether OpenVINO's CPU-test thresholds (abs 2^-7 and rel 1e-2 against f32) catch the fault, where
    they pass the clean model's own bf16 outputs."""
    case = CASES[case_id]
    clean = CASES[case["fault_of"]]["files"]
    f32, clean_bf16 = (dict(np.load(SINGLE_OP / clean[key])) for key in ("outputs-f32", "outputs-bf16"))
    faulty = dict(np.load(SINGLE_OP / case["files"]["outputs-bf16"]))
    tool = replay_tool()
    return tool.openvino_catches(faulty, f32) and not tool.openvino_catches(clean_bf16, f32)


# every other one (CI's time; benchmarks/replay_recordings.py replays them all: 107 of 107 fail)
@pytest.mark.parametrize("case_id", [case_id for case_id in FAULTS if openvino_catches(case_id)][::2])
def test_a_planted_weight_fault_that_openvinos_thresholds_catch_fails(capsys, case_id):
    code, result = replay_json(capsys, CASES[case_id])
    (node,) = result["nodes"]
    assert code == 1 and node["verdict"] == "fail", (CASES[case_id]["fault"], node["outputs"])


def test_the_subset_holds_faults_of_every_kind_that_openvino_catches():
    caught = [CASES[case_id]["fault"]["what"] for case_id in FAULTS if openvino_catches(case_id)]
    assert len(caught) >= 80 and {"bias", "R", "W"} <= set(caught)


@pytest.fixture
def gru(tmp_path, capsys):
    path = tmp_path / "gru.xml"
    assert main(["build", "gru-sequence", "--hidden-size", "8", "--input-size", "3", "--batch-size", "2",
                 "--seq-length", "5", "--direction", "bidirectional", "-o", str(path)]) == 0
    capsys.readouterr()
    return path


def test_saved_outputs_replay_to_the_same_verdict_and_still_serve_as_expected_outputs(capsys, gru, tmp_path):
    saved = tmp_path / "out.npz"
    code, live, _ = run(capsys, "run", str(gru), "-d", "CPU", "--seed", "3", "--save-outputs", str(saved),
                        "--format", "json")
    assert code == 0
    code, out, _ = run(capsys, "run", str(gru), "-d", "CPU", "--seed", "3", "--device-outputs", str(saved))
    assert code == 0 and out.splitlines()[-1].startswith("PASS")
    assert f"replayed: outputs from {saved} (recorded on CPU at f32, openvino " in " ".join(out.split())
    code, replayed, _ = run(capsys, "run", str(gru), "-d", "CPU", "--seed", "3", "--device-outputs", str(saved),
                            "--format", "json")
    live, replayed = json.loads(live), json.loads(replayed)
    assert [n["implementation"] for n in replayed["nodes"]] == [n["implementation"] for n in live["nodes"]]
    assert [o["max_abs"] for o in replayed["outputs"]] == [o["max_abs"] for o in live["outputs"]]
    code, out, _ = run(capsys, "run", str(gru), "-d", "CPU", "--seed", "3", "--expected", str(saved))
    assert code == 0, out  # the record beside the outputs is not taken for an output


def test_a_changed_output_replays_as_a_failure(capsys, gru, tmp_path):
    saved = tmp_path / "out.npz"
    assert run(capsys, "run", str(gru), "-d", "CPU", "--save-outputs", str(saved))[0] == 0
    arrays = dict(np.load(saved))
    arrays["Y"] = arrays["Y"].copy()
    arrays["Y"][1, 0, 2, 3] += 0.01
    np.savez(tmp_path / "wrong.npz", **arrays)
    code, out, _ = run(capsys, "run", str(gru), "-d", "CPU", "--device-outputs", str(tmp_path / "wrong.npz"))
    assert code == 1 and "FAIL: 1 of 2 outputs outside tolerance (Y)" in out


def test_a_device_absent_here_is_judged_from_its_recorded_outputs(capsys, gru, tmp_path):
    from irtool.pipeline.inputs import case_inputs
    from irtool.pipeline.prepare import read_and_prepare

    outputs = tmp_path / "gpu.npz"
    assert run(capsys, "run", str(gru), "-d", "CPU", "--save-outputs", str(tmp_path / "cpu.npz"))[0] == 0
    np.savez(outputs, **{k: v for k, v in np.load(tmp_path / "cpu.npz").items() if not k.startswith("irtool:")})
    np.savez(tmp_path / "in.npz", **case_inputs(read_and_prepare(gru), None, 0)[0])  # the inputs of seed 0
    code, out, _ = run(capsys, "run", str(gru), "-d", "GPU", "--precision", "f32", "--device-outputs", str(outputs),
                       "--inputs", str(tmp_path / "in.npz"))
    assert code == 0 and "no record" in out and "judged against the ideal reference" in " ".join(out.split())
    assert "  precision: assumed f32 on GPU (-d and --precision: the file has no record of the run)" in out


def test_a_model_whose_nodes_sit_inside_it_replays_from_the_tensors_it_recorded(capsys, tmp_path):
    model, inputs = MODELS / "lstm_f16w.xml", MODELS / "lstm_f16w.inputs.npz"
    saved = tmp_path / "out.npz"
    assert run(capsys, "run", str(model), "-d", "CPU", "--inputs", str(inputs), "--save-outputs", str(saved))[0] == 0
    assert any(key.startswith("irtool:captured:") for key in np.load(saved).files)
    code, out, _ = run(capsys, "run", str(model), "-d", "CPU", "--inputs", str(inputs), "--device-outputs", str(saved))
    assert code == 0 and "PASS" in out.splitlines()[-1]
    bare = tmp_path / "bare.npz"
    np.savez(bare, **{k: v for k, v in np.load(saved).items() if not k.startswith("irtool:")})
    code, _, err = run(capsys, "run", str(model), "-d", "CPU", "--inputs", str(inputs), "--precision", "f32",
                       "--device-outputs", str(bare))
    assert code == 2 and "holds the model's outputs only" in err and "--save-outputs" in err


@pytest.mark.parametrize("mangle, said", [
    (lambda arrays: arrays.update({"irtool:run": np.frombuffer(b"{not json", np.uint8)}), "cannot be read"),
    (lambda arrays: arrays.pop("Y"), "has no array for the model's output Y"),
])
def test_a_recording_that_cannot_be_used_is_one_line(capsys, gru, tmp_path, mangle, said):
    saved = tmp_path / "out.npz"
    assert run(capsys, "run", str(gru), "-d", "CPU", "--save-outputs", str(saved))[0] == 0
    arrays = dict(np.load(saved))
    mangle(arrays)
    np.savez(tmp_path / "bad.npz", **arrays)
    code, out, err = run(capsys, "run", str(gru), "-d", "CPU", "--device-outputs", str(tmp_path / "bad.npz"))
    assert code == 2 and said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


TF = MODELS / "tf"


@pytest.mark.parametrize("model, verdict", [("keras_lstm.tflite", "pass"), ("keras_lstm_fault.xml", "fail")])
def test_a_lowered_cell_at_bf16_is_bounded_by_the_decomposed_path_and_its_fault_fails(capsys, tmp_path, model,
                                                                                      verdict):
    """A Keras LSTM lowered to plain ops (a Loop of MatMul and Sigmoid): at bf16 its cell is judged
    against the ideal reference within what the decomposed path's rounding moves it by, not with
    bf16's flat tolerance, so the planted bias fault (0.5 at one step) fails; outputs computed here
    at f32 and replayed as bf16 ones (f32 outputs are within any bf16 bound of a correct cell)."""
    inputs, saved = TF / "keras_lstm.inputs.npz", tmp_path / "out.npz"
    run(capsys, "run", str(TF / model), "-d", "CPU", "--inputs", str(inputs), "--save-outputs", str(saved))
    bare = tmp_path / "bare.npz"
    np.savez(bare, **{k: v for k, v in np.load(saved).items() if k != "irtool:run"})  # what ran: read here
    code, out, _ = run(capsys, "run", str(TF / model), "-d", "CPU", "--precision", "bf16", "--inputs", str(inputs),
                       "--device-outputs", str(bare), "--format", "json")
    result = json.loads(out)
    (node,) = result["nodes"]
    assert node["verdict"] == verdict and code == {"pass": 0, "fail": 1}[verdict], node["reason"]
    assert node["against"].startswith("the ideal reference, allowed twice what the bf16 emulation of "
                                      "cpu-decomposed-bf16")
    assert "within what the bf16 emulation of their path moves them by" in result["references"]


# every fourth of them (CI's time; benchmarks/replay_recordings.py --expected replays them all: 100 of 100 fail)
@pytest.mark.parametrize("case_id", [case_id for case_id in FAULTS if openvino_catches(case_id)
                                     and CASES[case_id]["fault"]["what"] in ("bias", "R", "W")][::4])
def test_a_weight_fault_fails_through_expected_against_the_clean_models_f32_outputs(capsys, tmp_path, case_id):
    """The model itself is wrong (its weights changed, as a converter might): the device computes it
    right, so the node passes, and --expected against the clean model's f32 outputs fails."""
    case = CASES[case_id]
    clean = CASES[case["fault_of"]]["files"]
    model = replay_tool().faulty_model(SINGLE_OP / clean["xml"], case["fault"], tmp_path / "faulty.xml")
    code, out, _ = run(capsys, "run", str(model), "-d", "CPU", "--precision", "bf16", "--inputs",
                       str(SINGLE_OP / case["files"]["inputs"]), "--device-outputs",
                       str(SINGLE_OP / case["files"]["outputs-bf16"]), "--expected",
                       str(SINGLE_OP / clean["outputs-f32"]), "--format", "json")
    result = json.loads(out)
    assert code == 1 and result["expected"]["verdict"] == "fail", (case["fault"], result["expected"])


SUITES = RECORDED / "suites"
F16_JOBS = {job.name: job for job in sorted(SUITES.glob("*/*")) if "-f16" in job.name}


def replay_job_json(capsys, job: Path, tmp_path: Path, record: dict | None = None) -> tuple[int, dict]:
    """A suite's recorded job replayed as irtool report rejudge does: its actual.npz with the record of
    its run (case.json, or ``record`` in its place), written as --save-outputs writes it."""
    from irtool.core.npz import write_npz
    from irtool.pipeline.prepare import read_and_prepare
    from irtool.pipeline.recording import load_recording, record_arrays, with_case_record

    record = record or json.loads((job / "case.json").read_text())
    recorded = with_case_record(load_recording(job / "actual.npz"), record, read_and_prepare(job / "model.xml"))
    outputs = write_npz(tmp_path / "actual.npz", {**recorded.outputs,
                                                  **record_arrays(recorded.run, recorded.implementations, None)})
    code, out, err = run(capsys, "run", str(job / "model.xml"), "-d", "CPU", "--precision", "bf16", "--inputs",
                         str(job / "inputs.npz"), "--device-outputs", str(outputs), "--format", "json")
    assert out, err
    return code, json.loads(out)


@pytest.mark.parametrize("name", sorted(F16_JOBS))
def test_an_f16_model_at_bf16_matches_its_paths_emulation_bit_for_bit(capsys, tmp_path, name):
    """An f16 model (f16 Parameters and Results) at bf16: its initial cell state reaches RNNSeq and
    RNNCell through bf16 (not a TensorIterator's cell), and Co, an f16 output, holds f16 roundings;
    the emulation of its path gives every output bit for bit, where the f32 model's path did not."""
    job = F16_JOBS[name]
    code, result = replay_job_json(capsys, job, tmp_path)
    (node,) = result["nodes"]
    kernel = json.loads((job / "case.json").read_text())["result"]["implementations"]["LSTMSequence" if "seq" in name
                                                                                     else "LSTMCell"]
    path = "cpu-loop-kernel-f16-model-bf16" if "TensorIterator" in kernel else "cpu-native-f16-model-bf16"
    assert code == 0 and node["verdict"] == "pass", node["reason"]
    assert node["against"].startswith(f"the bf16 emulation of {path} (measured)"), node["against"]
    assert "cell_output f16" in node["against"]
    assert all(output["max_abs"] == 0 for output in node["outputs"]), node["outputs"]


def test_the_f16_models_subset_covers_the_native_kernel_and_the_loop():
    kinds = {json.loads((job / "case.json").read_text())["result"]["implementations"].popitem()[1].split(" ")[0]
             for job in F16_JOBS.values()}
    assert kinds == {"RNNSeq", "RNNCell", "TensorIterator"}


def test_a_record_that_contradicts_the_model_is_not_trusted(capsys, tmp_path):
    """A bidirectional LSTM whose record says it ran as one RNNSeq: the CPU runs every bidirectional
    sequence as one kernel per direction (each of the 36 recorded runtime graphs of one, at f32 and bf16
    alike), so the record misread what ran.  The replay reads what ran from this CPU and judges the node
    by the split path, whose emulation the device's outputs match; trusted, the record sent it to the
    unsplit path, which rounds the initial cell state otherwise and failed."""
    (job,) = SUITES.glob("full/lstm-rnnseq-dynamic_direction=bidirectional*")
    record = json.loads((job / "case.json").read_text())
    assert record["result"]["implementations"] == {"LSTMSequence": "RNNSeq (bf16)"}
    code, result = replay_job_json(capsys, job, tmp_path)
    (node,) = result["nodes"]
    assert code == 0 and node["verdict"] == "pass", node["reason"]
    assert node["against"].startswith("the bf16 emulation of cpu-native-dynamic-split-bf16"), node["against"]
    assert "not LSTMSequence's (RNNSeq (bf16): one layer, where CPU runs a bidirectional sequence as one kernel per " \
           "direction" in result["replayed"], result["replayed"]
    # a record that says the split is trusted as it is
    split = {**record, "result": {**record["result"],
                                  "implementations": {"LSTMSequence": "forward: RNNSeq (bf16); reverse: RNNSeq (bf16)"}}}
    code, result = replay_job_json(capsys, job, tmp_path, split)
    assert code == 0 and result["replayed"].endswith("what each node ran as: the record's"), result["replayed"]


def test_a_tensor_iterator_at_bf16_is_said_at_its_bodys_precision(capsys, tmp_path):
    """The CPU reports a TensorIterator's runtimePrecision f32 at bf16 too (its ports'), while its body's
    cell ran at bf16: what ran says bf16, from the run's record; at f32 on this CPU, f32."""
    (job,) = [job for name, job in F16_JOBS.items() if "rand-len" in name]
    assert json.loads((job / "case.json").read_text())["result"]["implementations"] == {
        "LSTMSequence": "TensorIterator (f32; decomposed)"}
    code, result = replay_job_json(capsys, job, tmp_path)
    (node,) = result["nodes"]
    assert code == 0 and node["implementation"] == "TensorIterator (bf16; decomposed)", node["implementation"]
    code, out, err = run(capsys, "run", str(job / "model.xml"), "-d", "CPU", "--inputs", str(job / "inputs.npz"),
                         "--format", "json")
    (node,) = json.loads(out)["nodes"]
    assert node["implementation"] == "TensorIterator (f32; decomposed)", (node, err)
