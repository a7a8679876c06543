"""Known OpenVINO faults named as hints by the signature of a failure, never as a verdict: the
CPU's sequence_lengths fault on samples/models/gru_lengths.xml, and no hint for a failure of
another kind."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main
from irtool.judge import known_faults
from irtool.pipeline.build import build_and_save
from irtool.reference import gru_sequence
from irtool.specs.cases import OpCase

ROOT = Path(__file__).resolve().parent.parent
LENGTHS_HINT = "this matches a known OpenVINO fault: the CPU plugin ignores sequence_lengths"


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(["run", *argv])
    return code, capsys.readouterr().out


def test_the_cpu_lengths_fault_is_named_in_text_and_json_and_still_fails(capsys):
    model = str(ROOT / "samples" / "models" / "gru_lengths.xml")
    code, out = run(capsys, model, "-d", "CPU")
    assert code == 1 and out.strip().splitlines()[-1].startswith("FAIL: 1 of 1 judged nodes")
    assert LENGTHS_HINT in " ".join(out.split()) and 'docs/run.md, "A CPU bug this found"' in " ".join(out.split())
    code, out = run(capsys, model, "-d", "CPU", "--format", "json")
    [node] = json.loads(out)["nodes"]
    assert code == 1 and node["verdict"] == "fail"
    assert [note.startswith(LENGTHS_HINT) for note in node["notes"]] == [True]


def test_a_failure_of_another_kind_gets_no_hint(tmp_path, capsys):
    case = OpCase("GRUSequence", {"hidden_size": 3, "direction": "forward"},
                  {"batch_size": 2, "seq_length": 4, "input_size": 2})
    xml = build_and_save(case, tmp_path / "gru.xml")[0]
    code, out = run(capsys, str(xml), "-d", "CPU", "--atol", "0", "--rtol", "0", "--format", "json")
    result = json.loads(out)
    assert code == 1 and result["verdict"] == "fail"
    assert "known OpenVINO fault" not in out


# ----------------------------------------------------------------------------- the signature itself

def _gru(direction: str, lengths: list[int], seed: int = 0):
    """The reference's outputs with these lengths (expected) and with the lengths ignored, as the
    CPU's fault computes (actual)."""
    rng = np.random.default_rng(seed)
    batch, steps, size, hidden = len(lengths), 5, 3, 4
    dirs = 2 if direction == "bidirectional" else 1
    x = rng.standard_normal((batch, steps, size), dtype=np.float32)
    h = rng.standard_normal((batch, dirs, hidden), dtype=np.float32)
    w = rng.standard_normal((dirs, 3 * hidden, size), dtype=np.float32)
    r = rng.standard_normal((dirs, 3 * hidden, hidden), dtype=np.float32)
    b = rng.standard_normal((dirs, 3 * hidden), dtype=np.float32)
    attributes = dict(hidden_size=hidden, direction=direction)
    expected = gru_sequence(x, h, np.array(lengths, np.int32), w, r, b, **attributes)
    ignored = gru_sequence(x, h, np.full(batch, steps, np.int32), w, r, b, **attributes)
    return np.array(lengths), dict(zip(("Y", "Ho"), expected)), dict(zip(("Y", "Ho"), ignored))


def _failure(direction, lengths, actual, expected):
    return known_faults.Failure("GRUSequence", direction, lengths, actual, expected, 1e-5, 1e-4)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lengths_ignored_has_the_signature(direction):
    lengths, expected, actual = _gru(direction, [5, 2, 3])
    assert known_faults.hints(_failure(direction, lengths, actual, expected))[0].startswith(LENGTHS_HINT)


def test_errors_within_a_sequence_or_full_lengths_or_reverse_do_not_have_it():
    lengths, expected, actual = _gru("forward", [5, 2, 3])
    wrong_inside = {"Y": actual["Y"].copy(), "Ho": actual["Ho"]}
    wrong_inside["Y"][1, 0, 0, 0] += 0.5  # a step within batch 1's length of 2
    assert known_faults.hints(_failure("forward", lengths, wrong_inside, expected)) == ()
    lengths, expected, actual = _gru("forward", [5, 5, 5])
    perturbed = {"Y": actual["Y"] + 0.1, "Ho": actual["Ho"] + 0.1}
    assert known_faults.hints(_failure("forward", lengths, perturbed, expected)) == ()
    lengths, expected, actual = _gru("reverse", [5, 2, 3])
    assert known_faults.hints(_failure("reverse", lengths, actual, expected)) == ()
    lengths, expected, actual = _gru("forward", [5, 2, 3])
    zeros_past = {"Y": expected["Y"], "Ho": actual["Ho"]}  # Y right, only Ho off: another fault
    assert known_faults.hints(_failure("forward", lengths, zeros_past, expected)) == ()


def test_every_known_fault_names_the_docs_that_describe_it():
    for fault in known_faults.KNOWN_FAULTS:
        page, _, section = fault.where.partition(", ")
        text = (ROOT / page).read_text()
        assert section.strip('"') in text, fault.id


def test_the_harness_message_carries_the_hint_and_the_verdict_stays_fail(tmp_path):
    import subprocess
    import sys

    suite = tmp_path / "s.toml"
    suite.write_text(f'[[files]]\nid = "m"\npaths = ["{ROOT / "samples" / "models" / "gru_lengths.xml"}"]\n')
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(suite), "-d", "CPU", "--report-dir",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    [result] = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert result["verdict"] == "fail" and LENGTHS_HINT in result["message"]


# ----------------------------------------------------------------------------- ONNX frontend properties

def test_one_activation_set_of_a_bidirectional_gru_is_not_per_direction_activations(capsys):
    """broken_gru.onnx is bidirectional with activations [Sigmoid, Tanh]: one direction's f, g, not
    Sigmoid forward and Tanh backward; its failure (a W/R shape mismatch) gets no such hint."""
    code = main(["run", str(ROOT / "samples" / "models" / "broken_gru.onnx"), "-d", "CPU"])
    err = capsys.readouterr().err
    assert code == 2 and "Second dimension of W input shape" in err
    assert "activations differ per direction" not in err and "known faults" not in err


@pytest.mark.parametrize("op, activations, differs", [
    ("GRU", ["Sigmoid", "Tanh"], False),  # one set
    ("GRU", ["Sigmoid", "Tanh", "Sigmoid", "Relu"], True),
    ("GRU", ["Sigmoid", "Tanh", "Sigmoid", "Tanh"], False),
    ("LSTM", ["Sigmoid", "Tanh", "Tanh"], False),
    ("LSTM", ["Sigmoid", "Tanh", "Relu", "Sigmoid", "Tanh", "Tanh"], True),
    ("RNN", ["Tanh"], False),
    ("RNN", ["Tanh", "Relu"], True),
])
def test_per_direction_activations_needs_one_whole_set_per_direction(op, activations, differs):
    import onnx

    from irtool.onnx.graph import OnnxNode
    proto = onnx.helper.make_node(op, ["X", "W", "R"], ["Y"], name="n", hidden_size=2,
                                  direction="bidirectional", activations=activations)
    node = OnnxNode(0, proto, 14, {"hidden_size": 2, "direction": "bidirectional", "activations": activations})
    assert ("per-direction-activations" in node.frontend_properties({})) == differs


@pytest.mark.parametrize("alphas", [[1.0, 2.0, 3.0], [0.5] * 5])
def test_alphas_past_the_activations_are_ignored_as_openvino_ignores_them(alphas, capsys, tmp_path):
    """OpenVINO reads activations_alpha by the activation's position and runs a cell with more values
    than activations (validate warns, IR027); run refused to judge it ("the reference refuses it")."""
    import openvino as ov
    from openvino import opset3

    rng = np.random.default_rng(1)
    x, h = opset3.parameter([2, 3], np.float32, name="X"), opset3.parameter([2, 4], np.float32, name="H")
    weights = [opset3.constant(rng.uniform(-1, 1, shape).astype(np.float32)) for shape in ([12, 3], [12, 4], [12])]
    path = tmp_path / "cell.xml"
    ov.save_model(ov.Model([opset3.gru_cell(x, h, *weights, 4, activations_alpha=alphas)], [x, h]), path)
    assert "activations_alpha" in path.read_text()
    code = main(["run", str(path), "-d", "CPU", "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and [node["verdict"] for node in report["nodes"]] == ["pass"], report
