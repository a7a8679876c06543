"""``irtool run --expected OUT.npz`` and ``expected`` in ``[[models]]``: the model's outputs judged
against given values (onnxruntime's here, as a framework's would be), recurrent node or not."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import lxml.etree as ET
import numpy as np
import pytest

from irtool.cli.program import main
from irtool.core.npz import read_npz
from irtool.jobs.suite import SuiteError, load_suite
from irtool.pipeline.build import build_and_save
from irtool.specs.cases import OpCase

ROOT = Path(__file__).resolve().parent.parent
LSTM2 = ROOT / "samples" / "models" / "lstm2_bidirectional.xml"


@pytest.fixture(scope="module")
def dense(tmp_path_factory) -> Path:
    """An ONNX model with no recurrent op (MatMul + Sigmoid), its inputs, and onnxruntime's outputs
    as the expected ones, as samples/make_expected.py makes them: dense.onnx, in.npz, out.npz."""
    import shutil
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "samples"))
    from make_expected import main as make_expected

    folder = tmp_path_factory.mktemp("expected")
    make_expected(folder)
    shutil.copyfile(folder / "dense-in.npz", folder / "in.npz")
    shutil.copyfile(folder / "dense-out.npz", folder / "out.npz")
    return folder


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["run", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_dense(capsys, folder: Path, expected: Path, *more: str) -> tuple[int, str, str]:
    return run(capsys, str(folder / "dense.onnx"), "-d", "CPU", "--inputs", str(folder / "in.npz"),
               "--expected", str(expected), *more)


def changed(source: Path, target: Path, name: str, index: tuple[int, ...], by: float) -> Path:
    arrays = {key: array.copy() for key, array in read_npz(source).items()}
    arrays[name][index] += by
    np.savez(target, **arrays)
    return target


def test_a_model_with_no_recurrent_node_passes_against_onnxruntime(dense, capsys):
    code, out, _ = run_dense(capsys, dense, dense / "out.npz")
    assert code == 0, out
    assert "0 recurrent nodes" in out.splitlines()[0]
    assert out.strip().splitlines()[-1] == f"PASS: 1 of 1 outputs within tolerance of {dense / 'out.npz'}"
    # without --expected the same model is not judged at all
    code, out, _ = run(capsys, str(dense / "dense.onnx"), "-d", "CPU", "--inputs", str(dense / "in.npz"))
    assert code == 3 and out.strip().splitlines()[-1].startswith("NOT JUDGED")


def test_one_changed_value_fails_naming_the_output_and_the_worst_index(dense, capsys, tmp_path):
    wrong = changed(dense / "out.npz", tmp_path / "wrong.npz", "y", (1, 2), 0.01)
    code, out, _ = run_dense(capsys, dense, wrong)
    assert code == 1, out
    assert "worst at [1, 2]" in out and "outside 1/8" in out
    assert out.strip().splitlines()[-1] == f"FAIL: 1 of 1 outputs outside tolerance of {wrong} (y)"
    code, out, _ = run_dense(capsys, dense, wrong, "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "fail" and data["expected"]["failed"] == ["y"]
    (y,) = data["expected"]["outputs"]
    assert y["worst_index"] == [1, 2] and y["outside"] == 1 and y["step_max_abs"] is None  # no time axis known
    # a per-output tolerance applies to it, as to a node's output
    code, out, _ = run_dense(capsys, dense, wrong, "--atol", "y:0.02")
    assert code == 0 and "(--atol y, f32 default)" in out


@pytest.mark.parametrize("arrays, said", [
    (lambda y: {"z": y}, "{bad}: has no array for the model's output y; it has z (irtool run --save-outputs shows "
                         "the outputs' names)"),
    (lambda y: {"y": y[:, :3].copy(), "h": y},
     "{bad}: array y has shape [2, 3], but the model's output y is [2, 4] on these inputs: the file does not match "
     "the model (or its inputs)"),
    (lambda y: {"y": y.T.copy()}, "{bad}: array y has shape [4, 2], but the model's output y is [2, 4] on these "
                                  "inputs: the file does not match the model (or its inputs)"),
], ids=["missing", "narrower", "transposed"])
def test_a_file_that_does_not_match_the_model_is_one_line_exit_2(dense, capsys, tmp_path, arrays, said):
    """An output the file lacks, or an array of another shape than the model computed, says nothing of
    the device: a usage error naming the file, the output and what the file has (not a FAIL)."""
    y = read_npz(dense / "out.npz")["y"]
    bad = tmp_path / "bad.npz"
    np.savez(bad, **arrays(y))
    code, out, err = run_dense(capsys, dense, bad)
    assert code == 2 and out == "" and err == f"irtool: error: {said.format(bad=bad)}\n", err


@pytest.mark.parametrize("arrays, said", [
    (lambda y: {"y": y, "extra": y}, ["extra [2, 4] FAIL: ", "but the model has no output of that name"]),
    (lambda y: {"y": np.zeros((2, 4), dtype=np.int64)}, ["y [2, 4] FAIL: dtype float32 differs from expected int64"]),
], ids=["extra", "dtype"])
def test_a_mismatch_of_the_outputs_is_a_failure_that_says_so(dense, capsys, tmp_path, arrays, said):
    y = read_npz(dense / "out.npz")["y"]
    np.savez(tmp_path / "bad.npz", **arrays(y))
    code, out, _ = run_dense(capsys, dense, tmp_path / "bad.npz")
    assert code == 1, out
    flat = " ".join(out.split())  # long lines are wrapped
    for text in said:
        assert " ".join(text.split()) in flat
    assert out.strip().splitlines()[-1].startswith("FAIL: ")


@pytest.mark.parametrize("content, said", [
    (b"y = 1\n", "not an .npz"),
    (None, "array 'y' has dtype complex64; expected outputs are numbers"),
], ids=["not-npz", "complex"])
def test_a_bad_expected_file_is_one_line_exit_2(dense, capsys, tmp_path, content, said):
    bad = tmp_path / "bad.npz"
    if content is None:
        np.savez(bad, y=np.zeros((2, 4), dtype=np.complex64))
    else:
        bad.write_bytes(content)
    code, out, err = run_dense(capsys, dense, bad)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and said in lines[0] and str(bad) in lines[0], err


def test_expected_and_a_second_device_are_refused_together(dense, capsys):
    code, _, err = run_dense(capsys, dense, dense / "out.npz", "--compare-with", "CPU")
    assert code == 2 and "give one of them" in err


def test_a_recurrent_model_shows_its_nodes_and_its_expected_outputs(capsys, tmp_path):
    saved = tmp_path / "saved.npz"
    code, _, _ = run(capsys, str(LSTM2), "-d", "CPU", "--save-outputs", str(saved))
    assert code == 0
    code, out, _ = run(capsys, str(LSTM2), "-d", "CPU", "--expected", str(saved))
    assert code == 0 and out.strip().splitlines()[-1] == (
        f"PASS: 2 of 2 judged nodes within tolerance; expected outputs: 2 of 2 outputs within tolerance of {saved}")
    name = next(iter(read_npz(saved)))
    wrong = changed(saved, tmp_path / "wrong.npz", name, (0, 1, 3), 0.5)
    code, out, _ = run(capsys, str(LSTM2), "-d", "CPU", "--expected", str(wrong), "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "fail"
    assert [node["verdict"] for node in data["nodes"]] == ["pass", "pass"]  # the nodes agree; the outputs do not
    assert data["expected"]["failed"] == [name]
    assert next(o for o in data["expected"]["outputs"] if o["name"] == name)["worst_index"] == [0, 1, 3]


def test_an_output_with_a_time_axis_has_per_step_errors(capsys, tmp_path):
    case = OpCase("GRUSequence", {"hidden_size": 4, "direction": "forward"},
                  {"batch_size": 2, "seq_length": 5, "input_size": 3})
    xml = build_and_save(case, tmp_path / "gru.xml")[0]
    saved = tmp_path / "saved.npz"
    assert run(capsys, str(xml), "-d", "CPU", "--save-outputs", str(saved))[0] == 0
    wrong = changed(saved, tmp_path / "wrong.npz", "Y", (1, 0, 3, 2), 0.1)  # [batch, dirs, time, hidden]: step 3
    code, out, _ = run(capsys, str(xml), "-d", "CPU", "--expected", str(wrong), "--format", "json")
    assert code == 1
    outputs = {o["name"]: o for o in json.loads(out)["expected"]["outputs"]}
    assert outputs["Y"]["first_step_outside"] == 3 and len(outputs["Y"]["step_max_abs"]) == 5
    assert outputs["Ho"]["passed"] and outputs["Ho"]["step_max_abs"] is None


def irtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *args], capture_output=True, text=True, timeout=600)


def test_harness_models_take_expected_outputs_as_a_result_of_their_own(dense, tmp_path):
    changed(dense / "out.npz", tmp_path / "wrong.npz", "y", (0, 3), -0.2)
    saved = tmp_path / "lstm2-out.npz"
    assert main(["run", str(LSTM2), "-d", "CPU", "--save-outputs", str(saved)]) == 0
    suite = tmp_path / "s.toml"
    suite.write_text(f'[[models]]\nid = "dense"\npath = "{dense / "dense.onnx"}"\ninputs = "{dense / "in.npz"}"\n'
                     f'expected = "wrong.npz"\n\n'
                     f'[[models]]\nid = "lstm2"\npath = "{LSTM2}"\nexpected = "lstm2-out.npz"\n')
    done = irtool("harness", str(suite), "-d", "CPU", "--report-dir", str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 1, done.stdout + done.stderr
    results = {r["case"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())["results"]}
    assert set(results) == {"dense[inputs]::outputs", "lstm2[seed=0]::LSTMSequence_54",
                            "lstm2[seed=0]::LSTMSequence_117", "lstm2[seed=0]::outputs"}
    failing = results["dense[inputs]::outputs"]
    assert failing["verdict"] == "fail" and "outside tolerance of wrong.npz: y" in failing["message"]
    assert [o["worst_index"] for o in failing["outputs"]] == [[0, 3]]
    assert all(results[case]["verdict"] == "pass" for case in results if case.startswith("lstm2"))
    cases = [case.get("name") for case in ET.parse(str(tmp_path / "out" / "junit.xml")).getroot().iter("testcase")]
    assert sorted(cases) == sorted(f"{case} on CPU at f32" for case in results)
    assert "dense[inputs]::outputs" in (tmp_path / "out" / "report.html").read_text()


@pytest.mark.parametrize("arrays, said", [
    (lambda y: {"z": y}, "has no array for the model's output y; it has z"),
    (lambda y: {"y": y.T.copy()}, "array y has shape [4, 2], but the model's output y is [2, 4] on these inputs"),
], ids=["missing", "shape"])
def test_a_suite_case_whose_expected_file_does_not_match_the_model_is_an_error(dense, tmp_path, arrays, said):
    np.savez(tmp_path / "bad.npz", **arrays(read_npz(dense / "out.npz")["y"]))
    suite = tmp_path / "s.toml"
    suite.write_text(f'[[models]]\nid = "dense"\npath = "{dense / "dense.onnx"}"\ninputs = "{dense / "in.npz"}"\n'
                     f'expected = "bad.npz"\n')
    done = irtool("harness", str(suite), "-d", "CPU", "--report-dir", str(tmp_path / "out"), "--no-progress")
    results = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert [r["verdict"] for r in results] == ["error"], done.stdout + done.stderr
    assert said in results[0]["message"] and "bad.npz" in results[0]["message"], results[0]["message"]
    assert "1 error" in done.stdout and "fail" not in done.stdout.lower().replace("failed in", ""), done.stdout


def test_a_suite_case_keeps_its_nodes_results_beside_an_expected_file_of_another_shape(tmp_path):
    saved = tmp_path / "saved.npz"
    assert main(["run", str(LSTM2), "-d", "CPU", "--save-outputs", str(saved)]) == 0
    arrays = read_npz(saved)
    first = next(iter(arrays))
    np.savez(tmp_path / "bad.npz", **{**arrays, first: arrays[first][:1].copy()})
    suite = tmp_path / "s.toml"
    suite.write_text(f'[[models]]\nid = "lstm2"\npath = "{LSTM2}"\nexpected = "bad.npz"\n')
    irtool("harness", str(suite), "-d", "CPU", "--report-dir", str(tmp_path / "out"), "--no-progress")
    results = {r["case"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())["results"]}
    assert {case: r["verdict"] for case, r in results.items()} == {
        "lstm2[seed=0]::LSTMSequence_54": "pass", "lstm2[seed=0]::LSTMSequence_117": "pass",
        "lstm2[seed=0]::outputs": "error"}
    assert f"array {first} has shape [1, " in results["lstm2[seed=0]::outputs"]["message"]


def test_a_suite_expected_file_must_exist(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text(f'[[models]]\npath = "{LSTM2}"\nexpected = "nowhere.npz"\n')
    with pytest.raises(SuiteError, match="expected 'nowhere.npz' is no .npz file"):
        load_suite(suite)


def test_expected_without_inputs_for_dims_no_node_sizes_runs_at_the_batch_on_seeded_inputs(capsys, tmp_path):
    """A dim no node sizes takes the batch (the header says so); expected outputs on seeded inputs
    fail, saying that the inputs were seeded."""
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "dyn.onnx")
    np.savez(tmp_path / "out.npz", y=np.zeros((2, 3), np.float32))
    code, out, err = run(capsys, str(tmp_path / "dyn.onnx"), "-d", "CPU", "--expected", str(tmp_path / "out.npz"))
    assert code == 1 and "x float32[2, 3] (dynamic dims sized: dim 0 = 2 (--batch; it reaches no recurrent op's dims))" \
        in out and "the inputs were seeded (seed 0), not given" in out, out + err


def test_expected_outputs_on_seeded_inputs_say_why_they_may_not_match(dense, capsys):
    """A framework's outputs compared on irtool's seeded inputs cannot agree: the failure says the
    inputs were seeded and how to give the framework's; irtool's own saved outputs, same seed, pass."""
    code, out, _ = run(capsys, str(dense / "dense.onnx"), "-d", "CPU", "--expected", str(dense / "out.npz"))
    assert code == 1
    assert "note: the inputs were seeded (seed 0), not given: expected outputs hold only for the inputs" in \
        " ".join(out.split())
    saved = dense / "seeded-out.npz"
    assert run(capsys, str(dense / "dense.onnx"), "-d", "CPU", "--save-outputs", str(saved))[0] == 3  # nothing judged
    code, out, _ = run(capsys, str(dense / "dense.onnx"), "-d", "CPU", "--expected", str(saved))
    assert code == 0 and "note: the inputs were seeded" not in out


def test_a_verdict_line_with_two_judgments_leads_with_the_one_that_failed(capsys, tmp_path):
    """``FAIL: 2 of 2 outputs within tolerance; expected outputs: 2 of 2 outside`` read as a
    contradiction: the part that failed comes first and each part names what it is held to."""
    model = tmp_path / "gru.xml"
    build_and_save(OpCase("GRUSequence", {"hidden_size": 4, "direction": "forward"},
                          {"batch_size": 2, "seq_length": 3, "input_size": 3}), model)
    saved = tmp_path / "saved.npz"
    assert run(capsys, str(model), "-d", "CPU", "--save-outputs", str(saved))[0] == 0
    wrong = changed(saved, tmp_path / "wrong.npz", "Y", (0, 0, 1, 2), 0.5)
    code, out, _ = run(capsys, str(model), "-d", "CPU", "--expected", str(wrong))
    assert code == 1 and out.strip().splitlines()[-1] == (
        f"FAIL: expected outputs: 1 of 2 outputs outside tolerance of {wrong} (Y); reference: 2 of 2 outputs within "
        "tolerance")
    code, out, _ = run(capsys, str(model), "-d", "CPU", "--expected", str(saved))
    assert code == 0 and out.strip().splitlines()[-1] == (
        f"PASS: reference: 2 of 2 outputs within tolerance; expected outputs: 2 of 2 outputs within tolerance of "
        f"{saved}")
    # a model of several nodes: the same order
    saved = tmp_path / "lstm2.npz"
    assert run(capsys, str(LSTM2), "-d", "CPU", "--save-outputs", str(saved))[0] == 0
    name = next(iter(read_npz(saved)))
    wrong = changed(saved, tmp_path / "lstm2-wrong.npz", name, (0, 1, 3), 0.5)
    code, out, _ = run(capsys, str(LSTM2), "-d", "CPU", "--expected", str(wrong))
    assert code == 1 and out.strip().splitlines()[-1] == (
        f"FAIL: expected outputs: 1 of 2 outputs outside tolerance of {wrong} ({name}); 2 of 2 judged nodes within "
        "tolerance")


@pytest.mark.parametrize("length", [40, 48])
def test_text_lines_never_wrap_inside_a_field(capsys, tmp_path, length):
    """A statistics line longer than run's 120 columns (long output names) breaks between its fields:
    it broke inside them (`outside 0/32` / `(0.0%)`, `outside` / `0/32 (0.0%)`)."""
    import openvino as ov

    from irtool.cli.run_text import WIDTH

    model = ov.Core().read_model(str(LSTM2))
    for k, output in enumerate(model.outputs):
        output.get_tensor().set_names({f"model_{k}/" + "x" * length})
    ov.save_model(model, str(tmp_path / "long.xml"), compress_to_fp16=False)
    saved = tmp_path / "saved.npz"
    assert run(capsys, str(tmp_path / "long.xml"), "-d", "CPU", "--save-outputs", str(saved))[0] == 0
    code, out, _ = run(capsys, str(tmp_path / "long.xml"), "-d", "CPU", "--expected", str(saved))
    lines = out.splitlines()
    assert code == 0 and all(len(line) <= WIDTH for line in lines[1:-1]), out
    for line in lines:  # a field whole on its line: "outside N/M (P%)"
        assert "outside" not in line or re.search(r"outside \d+/\d+ \(\d+\.\d%\)", line), line
        assert not re.match(r"\s*(\(\d+\.\d%\)|\d+/\d+ )", line), line
    # the expected outputs' two lines of statistics, each broken before its last field
    assert sum(1 for line in lines if re.fullmatch(r"\s+outside \d+/\d+ \(\d+\.\d%\)", line)) == 2, out
