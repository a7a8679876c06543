"""``irtool run``: exit codes, one-line errors for bad input, --fill-defaults, samples, the console path."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main
from irtool.pipeline.build import build_and_save
from irtool.specs.cases import OpCase

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "ir"
GRU = OpCase("GRUSequence", {"hidden_size": 4, "direction": "bidirectional"},
             {"batch_size": 2, "seq_length": 3, "input_size": 5})


@pytest.fixture(scope="module")
def gru(tmp_path_factory) -> Path:
    return build_and_save(GRU, tmp_path_factory.mktemp("run") / "gru.xml")[0]


@pytest.fixture()
def gru_copy(gru, tmp_path) -> Path:
    for suffix in (".xml", ".bin"):
        (tmp_path / f"gru{suffix}").write_bytes(gru.with_suffix(suffix).read_bytes())
    return tmp_path / "gru.xml"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["run", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_skip_line(err: str) -> str:
    """A run skipped on this machine says so on one line, not as an error."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("irtool: skipped: "), err
    return lines[0]


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("irtool: error: "), err
    assert "Traceback" not in err
    return lines[0]


def inputs_of(gru: Path, seed: int = 0) -> dict[str, np.ndarray]:
    from irtool.pipeline.inputs import seeded_inputs
    from irtool.runtime.model import read_model

    return seeded_inputs(read_model(gru).model, seed)


def test_text_report_passes(gru, capsys):
    code, out, _ = run(capsys, str(gru), "-d", "CPU")
    assert code == 0
    assert "GRUSequence-5 (layer 'GRUSequence') on CPU" in out
    assert "f32 requested, f32 on CPU; execution devices: CPU" in out
    assert "max abs per time step:" in out and out.strip().endswith("PASS: 2 of 2 outputs within tolerance")


def test_a_file_openvino_reads_though_it_is_broken_is_said_beside_the_verdict(gru_copy, capsys):
    """An attribute given twice is not well-formed XML (irtool validate: IR001); OpenVINO reads the
    file, taking one of the two, and run judges what OpenVINO read: the run says so."""
    code, out, _ = run(capsys, str(gru_copy), "-d", "CPU")
    assert code == 0 and "warning:" not in out  # a valid file: nothing to say
    text = gru_copy.read_text()
    assert text.count('hidden_size="4"') == 1
    gru_copy.write_text(text.replace('hidden_size="4"', 'hidden_size="4" hidden_size="4"'))
    code, out, _ = run(capsys, str(gru_copy), "-d", "CPU", "--format", "json")
    finding = json.loads(out)["file_findings"]
    assert finding.startswith("irtool validate finds 1 error in the file, which OpenVINO read as it could; the "
                              f"first: {gru_copy}:")
    assert "error[IR001] XML is not well-formed: Attribute hidden_size redefined" in finding
    code, out, _ = run(capsys, str(gru_copy), "-d", "CPU")
    assert "  warning: irtool validate finds 1 error in the file" in out


def test_tight_per_output_tolerance_fails_with_exit_1(gru, capsys):
    code, out, _ = run(capsys, str(gru), "-d", "CPU", "--atol", "Y:0", "--rtol", "Y:0")
    assert code == 1
    assert "FAIL: 1 of 2 outputs outside tolerance (Y)" in out and "(--atol Y, --rtol Y)" in out


def test_json_report_and_saved_outputs(gru, capsys, tmp_path):
    out_path = tmp_path / "out.npz"
    code, out, _ = run(capsys, str(gru), "-d", "CPU", "--seed", "7", "--format", "json", "--save-outputs", str(out_path))
    result = json.loads(out)
    assert code == 0 and result["passed"] is True and result["inputs_from"] == "seed 7"
    assert [o["name"] for o in result["outputs"]] == ["Y", "Ho"]
    y = result["outputs"][0]
    for key in ("max_abs", "max_rel", "mean_abs", "outside", "outside_share", "worst_index", "worst_actual",
                "worst_expected", "needed_atol", "needed_rtol", "step_max_abs", "actual_nan", "nonfinite_mismatch"):
        assert key in y
    assert sorted(np.load(out_path).files) == ["Ho", "Y", "irtool:run"]  # the record of the run beside them
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "a temporary file was left"


def test_inputs_from_npz_round_trip(gru, capsys, tmp_path):
    arrays = inputs_of(gru, seed=5)
    arrays["sequence_lengths"] = np.array([3, 0], np.int32)  # a length of 0: Ho is 0
    np.savez(tmp_path / "in.npz", **arrays)
    out_path = tmp_path / "out.npz"
    code, out, _ = run(capsys, str(gru), "-d", "CPU", "--inputs", str(tmp_path / "in.npz"),
                       "--save-outputs", str(out_path))
    assert code == 0, out
    assert np.all(np.load(out_path)["Ho"][1] == 0)


def test_numpy_defaults_are_converted_and_said(gru, capsys, tmp_path):
    """float64 data and int64 lengths (what np.array gives) become the model's f32 and i32 when
    every value fits; big-endian floats too; the report says so."""
    arrays = inputs_of(gru)
    original = {name: array.copy() for name, array in arrays.items()}
    arrays["X"] = arrays["X"].astype(np.float64)
    arrays["initial_hidden_state"] = arrays["initial_hidden_state"].astype(">f4")
    arrays["sequence_lengths"] = arrays["sequence_lengths"].astype(np.int64)
    np.savez(tmp_path / "in.npz", **arrays)
    code, out, _ = run(capsys, str(gru), "-d", "CPU", "--inputs", str(tmp_path / "in.npz"), "--format", "json")
    result = json.loads(out)
    assert code == 0 and result["verdict"] == "pass"
    assert result["input_notes"] == [
        "X: float64 converted to float32 (every value fits)",
        "initial_hidden_state: >f4 (big-endian float32) converted to float32 (every value fits)",
        "sequence_lengths: int64 converted to int32 (every value fits)"]
    code, plain_out, _ = run(capsys, str(gru), "-d", "CPU", "--inputs", str(tmp_path / "in.npz"))
    assert "converted: X: float64 converted to float32" in plain_out
    np.savez(tmp_path / "same.npz", **original)
    same = json.loads(run(capsys, str(gru), "-d", "CPU", "--inputs", str(tmp_path / "same.npz"), "--format", "json")[1])
    assert same["outputs"] == result["outputs"] and same["input_notes"] == []


def test_every_problem_of_an_npz_is_said_at_once(gru, capsys, tmp_path):
    arrays = inputs_of(gru)
    arrays.pop("initial_hidden_state")
    arrays["X"] = np.zeros((2, 3, 6))
    arrays["sequence_lengths"] = np.array([1.5, 2.0])
    arrays["extra"] = np.zeros(1)
    np.savez(tmp_path / "in.npz", **arrays)
    code, _, err = run(capsys, str(gru), "-d", "CPU", "--inputs", str(tmp_path / "in.npz"))
    line = one_error_line(err)
    assert code == 2
    for part in ("input X has shape [2, 3, 6], expected [2,3,5]", "no array for input initial_hidden_state",
                 "input sequence_lengths: dtype float64, expected int32: floats where whole numbers are expected",
                 "array extra matches no model input"):
        assert part in line, line


@pytest.mark.parametrize("change, expected", [
    (lambda a: a.pop("initial_hidden_state"), "no array for input initial_hidden_state (expected [2,2,4] float32)"),
    (lambda a: a.update(X=np.zeros((2, 3, 6), np.float32)), "input X has shape [2, 3, 6], expected [2,3,5]"),
    (lambda a: a.update(sequence_lengths=np.array([2**40, 1])),
     "input sequence_lengths: dtype int64, expected int32: values beyond int32's range"),
    (lambda a: a.update(sequence_lengths=np.array([np.nan, 1.0])),
     "input sequence_lengths: dtype float64, expected int32: NaN or Inf where whole numbers are expected"),
    (lambda a: a.update(sequence_lengths=np.array([3, 9], np.int32)),
     "input sequence_lengths holds sequence lengths [9] outside 0..3 (the seq_length of node 'GRUSequence')"),
    (lambda a: a.update(X=np.full((2, 3, 5), 1e300)), "input X: dtype float64, expected float32: values beyond"),
    (lambda a: a.update(extra=np.zeros(1)), "array extra matches no model input"),
])
def test_bad_npz_names_the_input_and_what_was_expected(gru, capsys, tmp_path, change, expected):
    arrays = inputs_of(gru)
    change(arrays)
    np.savez(tmp_path / "in.npz", **arrays)
    code, _, err = run(capsys, str(gru), "-d", "CPU", "--inputs", str(tmp_path / "in.npz"))
    assert code == 2
    line = one_error_line(err)
    assert "in.npz" in line and expected in line


def test_missing_inputs_file(gru, capsys, tmp_path):
    code, _, err = run(capsys, str(gru), "-d", "CPU", "--inputs", str(tmp_path / "nope.npz"))
    assert code == 2 and "nope.npz: no such inputs file" in one_error_line(err)


def test_missing_bin(gru_copy, capsys):
    gru_copy.with_suffix(".bin").unlink()
    for extra in ([], ["--fill-defaults"]):
        code, _, err = run(capsys, str(gru_copy), "-d", "CPU", *extra)
        assert code == 2 and "gru.bin: weights file not found" in one_error_line(err)


def test_short_bin(gru_copy, capsys):
    data = gru_copy.with_suffix(".bin").read_bytes()
    gru_copy.with_suffix(".bin").write_bytes(data[:100])
    code, _, err = run(capsys, str(gru_copy), "-d", "CPU")
    assert code == 2 and "gru.bin: 100 bytes, too short for the Const layers of gru.xml" in one_error_line(err)


def test_missing_model(capsys, tmp_path):
    code, _, err = run(capsys, str(tmp_path / "none.xml"), "-d", "CPU")
    assert code == 2 and "none.xml: no such model file" in one_error_line(err)


def test_absent_device_is_a_skip_with_openvino_reason_exit_3(gru, capsys, tmp_path):
    """A known device that is absent here is a skip (exit 3, nothing judged) with OpenVINO's reason,
    in text and JSON: the rule the harness follows (irtool.runtime.devices.skip_reason).  GPU and
    NPU are absent on this machine (no test here assumes so: a device that is present is left out)."""
    from irtool.runtime.devices import list_devices

    report = list_devices()
    reasons = {absent.name: absent.reason for absent in report.absent}
    out_path = tmp_path / "out.npz"
    checked = 0
    for asked, device in (("GPU", "GPU"), ("NPU", "NPU"), ("HETERO:GPU+CPU", "HETERO:GPU,CPU")):
        family = device.split(":")[-1].split(",")[0]
        if family not in reasons:
            continue
        checked += 1
        code, out, err = run(capsys, str(gru), "-d", asked, "--save-outputs", str(out_path))
        assert code == 3 and out == "", err
        assert err.startswith(f"irtool: skipped: {family} is not available here: {reasons[family]}")
        assert "error" not in err
        code, out, err = run(capsys, str(gru), "-d", asked, "--format", "json")
        data = json.loads(out)
        assert code == 3 and data["verdict"] == "unjudged" and data["nodes"] == []
        assert data["skipped"].startswith(f"{family} is not available here: {reasons[family]}")
    assert checked or not reasons
    assert not out_path.exists()


@pytest.mark.parametrize("device, says", [
    ("NOSUCH", "-d NOSUCH: 'NOSUCH' is not a device OpenVINO knows"),
    ("cpu", "(did you mean CPU?)"),
    ("MULTI", "-d MULTI: MULTI needs a device list, e.g. MULTI:CPU or MULTI:GPU+CPU"),
    ("HETERO:GPU,CPU", "inside a virtual device's list write +, e.g. HETERO:GPU+CPU"),
])
def test_a_device_name_openvino_does_not_know_is_one_line_with_a_suggestion(gru, capsys, device, says):
    code, out, err = run(capsys, str(gru), "-d", device)
    assert code == 2 and out == "" and says in one_error_line(err)


@pytest.mark.parametrize("name, says", [
    ("torch", "--compare-with torch: neither a device OpenVINO knows nor a runtime irtool runs; runtimes: onnxruntime"),
    ("onnxruntim", "(did you mean onnxruntime?)"),
    ("GPUU", "(did you mean GPU?)"),
    ("HETERO:", "--compare-with HETERO:: HETERO needs a device list"),
])
def test_compare_with_a_name_it_does_not_take_lists_the_runtimes_and_the_devices(gru, capsys, name, says):
    """Neither a device nor a runtime: one line naming both kinds, and for a framework without a runtime here
    (PyTorch) the way to compare with it (--expected), not a device it is near to in spelling."""
    code, out, err = run(capsys, str(gru), "-d", "CPU", "--compare-with", name)
    line = one_error_line(err)
    assert code == 2 and out == "" and says in line, line
    assert ("give them with --expected" in line) == (":" not in name)


@pytest.mark.parametrize("target, says", [
    ("gru.bin", "gru.bin: is an IR's weights file; give the .xml beside it"),
    (".", ": is a folder without saved_model.pb; expected a model: IR .xml, ONNX .onnx, TensorFlow Lite .tflite, "
          "TensorFlow frozen graph .pb, PaddlePaddle .pdmodel and TensorFlow SavedModel folders"),
    ("model.caffemodel", "model.caffemodel: irtool runs the models OpenVINO reads: IR .xml, ONNX .onnx"),
    # a .pb is TensorFlow's: its frontend's verdict in one line, nothing it logs on the way
    ("model.pb", "model.pb: OpenVINO's TensorFlow frozen graph frontend cannot read it: "),
    ("/dev/null", "/dev/null: not a regular file"),
    ("gone.xml", "gone.xml: no such model file"),
])
def test_what_is_not_a_model_file_is_one_line_and_a_json_error(gru, capsys, target, says):
    path = target if target.startswith("/") else str(gru.parent / target)
    if target in ("model.pb", "model.caffemodel"):
        (gru.parent / target).write_bytes(b"\x08\x01")
    code, out, err = run(capsys, path, "-d", "CPU", "--format", "json")
    assert code == 2 and says in one_error_line(err) and "Error parsing" not in err
    assert json.loads(out) == {"model": path, "verdict": "error", "error": one_error_line(err)[len("irtool: error: "):],
                               "skipped": None, "nodes": [], "unsupported": False,
                               "unsupported_ops": []}


def test_compare_with_second_device(gru, capsys, cpu_precisions):
    code, out, _ = run(capsys, str(gru), "-d", "AUTO:CPU", "--compare-with", "HETERO:CPU:f32", "--format", "json")
    result = json.loads(out)
    assert code == 0 and result["against"] == "HETERO:CPU (f32)" and result["against_run"]["device"] == "HETERO:CPU"
    assert all(o["tolerance"]["source"] == "f32 default" for o in result["outputs"])
    code, out, err = run(capsys, str(gru), "-d", "CPU", "--precision", "bf16", "--compare-with", "HETERO:CPU:f32",
                         "--format", "json")
    if "bf16" not in cpu_precisions:
        assert code == 3 and json.loads(out)["verdict"] == "unjudged"
        assert "skipped: CPU does not support bf16" in one_skip_line(err)
        return
    result = json.loads(out)
    assert code == 0 and result["against"] == "HETERO:CPU (f32)"
    assert all(o["tolerance"]["source"] == "bf16 default" and o["max_abs"] > 0 for o in result["outputs"])


def test_unknown_output_in_tolerance_and_bad_options(gru, capsys):
    code, _, err = run(capsys, str(gru), "-d", "CPU", "--atol", "Yh:1e-3")
    assert code == 2 and ("name output Yh, which gru.xml does not have (did you mean Y?); it names "
                          "GRUSequence:Ho, GRUSequence:Y, Ho, Y" in one_error_line(err))
    code, _, err = run(capsys, str(gru), "-d", "CPU", "--atol", "Y:abc")
    assert code == 2 and "--atol Y:abc: expected a number" in one_error_line(err)
    code, _, err = run(capsys, str(gru), "-d", "CPU", "--config", "INFERENCE_PRECISION_HINT=bf16")
    assert code == 2 and "--precision" in one_error_line(err)


def test_extra_config_is_passed_to_the_device(gru, capsys):
    code, out, _ = run(capsys, str(gru), "-d", "CPU", "--config", "NUM_STREAMS=1", "--format", "json")
    assert code == 0 and json.loads(out)["run"]["config"] == {"INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": "1"}
    code, _, err = run(capsys, str(gru), "-d", "CPU", "--config", "NO_SUCH_KEY=1")
    assert code == 2 and one_error_line(err).startswith("irtool: error: CPU cannot compile gru.xml: ")


def test_activations_omitted_fails_to_compile_with_cause_and_fix_then_passes_with_fill_defaults(gru_copy, capsys):
    xml = gru_copy.read_text()
    assert 'activations="sigmoid, tanh"' in xml
    gru_copy.write_text(xml.replace(' activations="sigmoid, tanh"', ""))
    code, _, err = run(capsys, str(gru_copy), "-d", "CPU")
    line = one_error_line(err)
    assert code == 2
    assert "CPU cannot compile gru.xml: layer 'GRUSequence' (GRUSequence) omits activations" in line
    assert "vector::_M_range_check" in line and "--fill-defaults" in line and 'activations="sigmoid,tanh"' in line
    code, out, _ = run(capsys, str(gru_copy), "-d", "CPU", "--fill-defaults")
    assert code == 0
    assert "filled default: layer 'GRUSequence' (GRUSequence): activations=sigmoid,tanh" in out


def test_spec_page_example_net_needs_fill_defaults(capsys):
    example = SAMPLES / "spec-examples" / "GRUSequence-5.net.xml"
    if not example.exists():
        pytest.skip("samples/ir/spec-examples/GRUSequence-5.net.xml is not in this checkout")
    code, _, err = run(capsys, str(example), "-d", "CPU")
    assert code == 2 and "--fill-defaults" in one_error_line(err)
    code, out, _ = run(capsys, str(example), "-d", "CPU", "--fill-defaults")
    assert code == 0 and "PASS" in out


VALID_SAMPLES = sorted((SAMPLES / "valid").glob("*.xml"))


@pytest.mark.parametrize("sample", VALID_SAMPLES, ids=[p.stem for p in VALID_SAMPLES])
def test_valid_samples_run_and_pass(sample, capsys):
    code, out, err = run(capsys, str(sample), "-d", "CPU")
    assert code == 0, out + err


def test_model_that_is_not_one_rnn_op_runs_without_a_reference(capsys, tmp_path):
    import openvino as ov
    import openvino.opset1 as ops

    x = ops.parameter([2, 3], np.float32, name="x")
    y = ops.parameter([2, 3], np.float32, name="y")
    ov.save_model(ov.Model([ops.add(x, y)], [x, y], "add"), str(tmp_path / "add.xml"))
    code, out, _ = run(capsys, str(tmp_path / "add.xml"), "-d", "CPU")
    assert code == 3
    assert "no reference applies: the model has no node of the recurrent family" in out
    assert out.strip().splitlines()[-1].startswith("NOT JUDGED: nothing was compared") and "PASS" not in out


def test_console_entry_point_in_a_subprocess(gru):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "irtool", "run", str(gru), "-d", "GPUU"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("irtool: error: -d GPUU: 'GPUU' is not a device OpenVINO knows (did you mean GPU?)")
    assert "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "irtool", "run", str(gru), "-d", "CPU"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and "PASS: 2 of 2" in done.stdout


def test_precision_default_sets_no_hint_and_judges_what_the_device_chose(gru, capsys, cpu_default_precision):
    """--precision default: no INFERENCE_PRECISION_HINT; the precision the CPU picked is read back from
    the compiled model (bf16 on a CPU with bf16, f32 on one without), reported, and sets the tolerance."""
    code, out, err = run(capsys, str(gru), "-d", "CPU", "--precision", "default", "--format", "json")
    result = json.loads(out)
    assert code == 0 and result["verdict"] == "pass", err
    assert "INFERENCE_PRECISION_HINT" not in result["run"]["config"]
    assert result["run"]["requested_precision"] == "default"
    assert result["run"]["effective_precision"] == {"CPU": cpu_default_precision}
    assert result["run"]["precision"] == cpu_default_precision
    # at f32 the precision's default; at bf16 the bound of the path the precision model knows it ran
    (node,) = result["nodes"]
    said = "derived: " if node["against"] else f"{cpu_default_precision} default"
    assert all(o["tolerance"]["source"].startswith(said) for o in result["outputs"]), result["outputs"]
    code, out, _ = run(capsys, str(gru), "-d", "AUTO:CPU", "--precision", "default")
    assert code == 0
    assert f"precision: the device's default requested (no hint), {cpu_default_precision} on CPU;" in out
    assert f"({cpu_default_precision} default)" in out or "(derived: " in out


def test_a_precision_the_device_lacks_is_skipped_and_one_it_has_sets_the_tolerance(gru, capsys, cpu_precisions):
    """A CPU runs a precision it lacks as another one (f16 as bf16 on a CPU with bf16 and no FP16,
    bf16 as f32 on one without: measured), so run skips it, as the harness does; one it has is what
    ran, judged with its default tolerance or, where the precision model knows the path it ran,
    against its emulation with the bound derived for it."""
    for precision in ("f16", "bf16"):
        code, out, err = run(capsys, str(gru), "-d", "CPU", "--precision", precision, "--format", "json")
        if precision not in cpu_precisions:
            message = one_skip_line(err)[len("irtool: "):]
            assert code == 3 and json.loads(out) == {"model": str(gru), "verdict": "unjudged", "nodes": [],
                                                     "error": message, "skipped": message[len("skipped: "):],
                                                     "unsupported": False, "unsupported_ops": []}
            assert f"skipped: CPU does not support {precision} (its precisions: {', '.join(cpu_precisions)})" \
                in one_skip_line(err)
            continue
        result = json.loads(out)
        assert code == 0 and result["run"]["effective_precision"] == {"CPU": precision}
        assert all(o["tolerance"]["source"] == f"{precision} default" or
                   o["tolerance"]["source"].startswith("derived: ") and "bound against its emulation" in
                   o["tolerance"]["source"] for o in result["outputs"])


def test_an_f16_output_is_judged_with_the_f16_tolerance_even_at_f32(capsys, tmp_path):
    """An f16 output holds f16 roundings whatever the device computes in."""
    path = tmp_path / "gru16.xml"
    build_and_save(OpCase("GRUSequence", {"hidden_size": 8, "direction": "bidirectional"},
                          {"batch_size": 3, "seq_length": 6, "input_size": 5}, element_type="f16"), path)
    code, out, _ = run(capsys, str(path), "-d", "CPU", "--precision", "f32", "--format", "json")
    result = json.loads(out)
    assert code == 0, out
    assert [o["tolerance"]["source"] for o in result["outputs"]] == ["f16 default", "f16 default"]
    assert set(result["run"]["effective_precision"].values()) == {"f32"}
