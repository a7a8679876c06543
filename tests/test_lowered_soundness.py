"""Lowered-cell recognition is sound before it is wide: standard cells written unusually pass, and
lookalikes of them (gates that read more, rows moved across the batch, weights per step, states
rounded, projected or added to between steps) are never judged as the standard cell unless the
result names what differs, and never fail on a model OpenVINO runs right.

The models are onnx.helper graphs (tests/lowered_lookalikes.py), each run as .onnx and as the IR
OpenVINO's own convert_model and save_model make of it.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lowered_lookalikes as lookalikes  # noqa: E402

# (kind, variant, verdict of each node, what its result must say: in "lowered", a note, or the reason)
CASES = [
    ("LSTM", "standard", "pass", None),
    ("GRU", "standard", "pass", None),
    ("LSTM", "concat_twice", "pass", None),  # R read from both blocks of h, added up
    ("LSTM", "shared", "pass", None),
    ("LSTM", "sliced", "pass", None),  # per-gate Slices
    ("GRU", "sliced", "pass", None),
    ("GRU", "shared", "pass", None),  # of the other convention: z's weights negated, W shared
    ("LSTM", "state_rounded", "pass", "its h_t is rounded between every two steps (Convert 's0_h_f16' (to f16)"),
    ("GRU", "state_rounded", "pass", "its h_t is rounded between every two steps (Convert 's0_h_f16' (to f16)"),
    ("LSTM", "gates_rounded", "pass", "its gate pre-activations are rounded (Convert 's0_g_f16' (to f16))"),
    ("LSTM", "per_step", "pass", "the model computes each step with W and R of its own"),
    ("LSTM", "projection", "pass", "(MatMul 's0_proj' first: a projection, a residual or a function around the cell)"),
    ("LSTM", "residual", "pass", "(Add 's0_res' first: a projection, a residual or a function around the cell)"),
    ("GRU", "residual", "pass", "(Add 's0_res' first: a projection, a residual or a function around the cell)"),
    ("LSTM", "hard_sigmoid", "pass", "(activations hardsigmoid (alpha 0.2, beta 0.5), tanh, tanh)"),
    ("GRU", "hard_sigmoid", "pass", "(activations hardsigmoid (alpha 0.2, beta 0.5), tanh)"),
    ("LSTM", "clipped", "pass", "(activations hardsigmoid (alpha 1, beta 0), tanh, tanh)"),  # 0.2, 0.5: in W, B
    ("GRU", "clipped", "pass", "(activations hardsigmoid (alpha 1, beta 0), tanh)"),
    ("LSTM", "relu6", "pass", "(activations hardsigmoid (alpha 0.166667, beta 0.5), tanh, tanh)"),
    ("GRU", "relu6", "pass", "(activations hardsigmoid (alpha 0.166667, beta 0.5), tanh)"),
    ("GRU", "z_reads_reset", "unjudged", "its gate z also multiplies the reset product r*h (Multiply 's0_rh')"),
    ("LSTM", "batch_gather", "unjudged", "gate f adds Gather 's0_f_rows'"),
    ("GRU", "batch_gather", "unjudged", "its update gate z reads its products through Gather 's0_z_rows'"),
    ("LSTM", "coupled", "unjudged", "has no reset gate"),  # i = 1 - f: a GRU's update on c, without r
    ("LSTM", "c_matrix", "unjudged", "its gates multiply 3 tensors by weights"),  # c_{t-1} is not joined to x
    ("LSTM", "cell_clipped", "pass", "its state is not the step before's c_t but computed from it between every two "
                                     "steps ("),  # Clamp, or Minimum and Maximum
    # two products of a sigmoid and a function of c_t: which one is h_t is not guessed (it once was, by the
    # order OpenVINO listed c_t's readers in: a different cell from run to run)
    ("LSTM", "readout", "unjudged", "is read by 2 products that each could be its h_t"),
    # h_t = z*h + sigmoid(-a)*n: a GRU, whose 1 - z is a gate of its own; the sum looks like an LSTM's c_t
    ("GRU", "complement", "unjudged", "it is a state that weights multiply (a GRU's h_t"),
]


def run_json(capsys, path: Path) -> tuple[int, dict]:
    code = main(["run", str(path), "-d", "CPU", "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def said(node: dict) -> str:
    return " ".join([node.get("lowered") or "", node.get("reason") or ""] + list(node.get("notes") or []))


@pytest.mark.parametrize("form", ["onnx", "ir"])
@pytest.mark.parametrize("kind, variant, verdict, words", CASES, ids=[f"{k}-{v}" for k, v, *_ in CASES])
def test_a_cell_written_unusually_or_a_lookalike_is_judged_as_it_computes(capsys, tmp_path, kind, variant, verdict,
                                                                         words, form):
    code, result = run_json(capsys, lookalikes.save(kind, variant, tmp_path, form))
    nodes = result["nodes"]
    assert nodes and all(node["verdict"] == verdict for node in nodes), [(n["name"], n["verdict"], said(n)) for n in nodes]
    assert code == {"pass": 0, "unjudged": 3}[verdict]
    judged = [node for node in nodes if node["verdict"] == "pass"]
    # a recurrence is one node of every step (two side by side: two), never one per step
    assert len(judged) in (0, 2 if variant == "shared" else 1)
    assert all(node["iterations"] == lookalikes.STEPS and node["max_abs"] < 1e-5 for node in judged)
    if words is None:  # a standard cell: nothing said beyond what it is
        assert all(node["lowered"].endswith(f"unrolled over {lookalikes.STEPS} steps, the last one's h_t "
                                            + node["lowered"].rsplit("the last one's h_t ", 1)[1])
                   and not node.get("notes") for node in judged)
    else:
        pattern = re.escape(words).replace("s0_", r"s\d_")  # a lookalike is named at each of its steps
        assert all(re.search(pattern, said(node)) for node in nodes), [said(node) for node in nodes]


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_an_ir_whose_steps_repeat_their_friendly_names_is_one_recurrence(capsys, tmp_path, kind):
    """Every step's ops named like the first one's: tensors keyed by friendly name read one step's as
    another's (false FAILs); they are told apart by the node, and the recurrence is judged whole."""
    path = lookalikes.save(kind, "standard", tmp_path, "ir", repeat_names=True)
    import openvino as ov

    names = [op.get_friendly_name() for op in ov.Core().read_model(path).get_ordered_ops()]
    assert len(names) - len(set(names)) >= 3 * (lookalikes.STEPS - 1)  # the IR does repeat them
    code, result = run_json(capsys, path)
    (node,) = result["nodes"]
    assert code == 0 and node["verdict"] == "pass" and node["iterations"] == lookalikes.STEPS, node


def test_the_same_model_gets_the_same_verdict_in_ten_runs(capsys, tmp_path):
    """Two GRUs of the other convention sharing their W (the negated z weights are temporaries, whose
    memory was once the key of joined weights): the same verdict and numbers in each of 10 runs."""
    path = lookalikes.save("GRU", "shared", tmp_path, "ir")
    seen = set()
    for _ in range(10):
        code, result = run_json(capsys, path)
        seen.add((code, tuple((n["name"], n["verdict"], n["max_abs"]) for n in result["nodes"])))
    assert len(seen) == 1, seen
    ((code, nodes),) = seen
    assert code == 0 and [verdict for _, verdict, _ in nodes] == ["pass", "pass"]


@pytest.mark.parametrize("form", ["onnx", "ir"])
def test_two_steps_reading_one_step_before_are_not_one_recurrence(capsys, tmp_path, form):
    """A second cell reads the states the last step reads: the chain keeps one of them, and the other is
    said not judged, with why (it was once dropped without a word, its step never judged nor listed)."""
    code, result = run_json(capsys, lookalikes.save("LSTM", "fork", tmp_path, form))
    verdicts = sorted((node["verdict"], said(node)) for node in result["nodes"])
    assert code == 3 and [verdict for verdict, _ in verdicts] == ["pass", "unjudged"], verdicts
    assert "is read as the state of another step too: not one recurrence" in verdicts[1][1]


def test_weights_are_joined_by_content_never_by_memory_address():
    """A part with the memory, shape and strides of one joined before but other data is joined anew."""
    from irtool.lowering.recognize import _joined

    buffer = np.arange(6, dtype=np.float32).reshape(2, 3)
    joined: dict = {}
    first = _joined([buffer], np.float32, joined)
    buffer *= 2  # the same memory, other data (as a freed temporary's address handed to the next one)
    second = _joined([buffer], np.float32, joined)
    np.testing.assert_array_equal(second, buffer)
    assert not np.array_equal(first, second)
    assert _joined([buffer.copy()], np.float32, joined) is second  # the same content: joined once


@pytest.mark.parametrize("form", ["onnx", "ir"])
def test_a_streaming_models_state_is_the_input_it_returns_updated(capsys, tmp_path, form):
    """Two stacked LSTM cells of one step, their states a model input sliced per layer and stacked into
    the model output fed back at the next call (DTLN's exports), every tensor as wide as the states:
    the widths tell neither cell's input from its state; the state input each cell's h_t is returned
    in place of does, and both are judged (the same verdict in each of three runs)."""
    path = lookalikes.save_streaming(tmp_path, form)
    seen = set()
    for _ in range(3):
        code, result = run_json(capsys, path)
        seen.add((code, tuple((n["name"], n["verdict"], n["max_abs"]) for n in result["nodes"])))
    ((code, nodes),) = seen
    assert code == 0 and [verdict for _, verdict, _ in nodes] == ["pass", "pass"], nodes
    assert all(max_abs < 1e-5 for *_, max_abs in nodes)


def test_a_fault_in_the_second_streaming_cell_fails_that_cell(capsys, tmp_path):
    """The device's second cell computed 0.5 off (replayed: its h_t, wherever it was captured and
    returned): that cell fails and the first, which fed it, passes."""
    path = lookalikes.save_streaming(tmp_path, "onnx")
    saved, bad = tmp_path / "out.npz", tmp_path / "bad.npz"
    assert main(["run", str(path), "-d", "CPU", "--save-outputs", str(saved)]) == 0
    capsys.readouterr()
    arrays = dict(np.load(saved))
    h_t = arrays["S_out"][1, 0].copy()  # layer 1's h_t, as the model returns it
    changed = [name for name, array in arrays.items() if array.shape == h_t.shape and np.array_equal(array, h_t)]
    assert "Y" in changed and len(changed) >= 2  # the model's output and the captured h_t
    stacked = [name for name, array in arrays.items() if np.array_equal(array, arrays["S_out"])]  # and its capture
    for name in changed:
        arrays[name] = arrays[name] + np.float32(0.5)
    for name in stacked:  # (a recording whose outputs are not its own captures is refused as inconsistent)
        arrays[name][1, 0] += np.float32(0.5)
    np.savez(bad, **arrays)
    code = main(["run", str(path), "-d", "CPU", "--device-outputs", str(bad), "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 1 and [n["verdict"] for n in result["nodes"]] == ["pass", "fail"], result["nodes"]
    assert result["nodes"][1]["max_abs"] == pytest.approx(0.5, abs=1e-5)


@pytest.mark.parametrize("form", ["onnx", "ir"])
def test_a_clip_scaled_past_one_is_no_hard_sigmoid_and_no_cell(capsys, tmp_path, form):
    """Clip(x + 3, 0, 6) / 5 reaches 1.2: not a hardsigmoid (relu6 / 6 is), so the gates have no
    activation irtool computes and no cell is claimed."""
    code, result = run_json(capsys, lookalikes.save("LSTM", "relu6_wide", tmp_path, form))
    assert code == 3 and result["verdict"] == "unjudged" and result["nodes"] == [], result["nodes"]


VAD_INPUTS = {"X": np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5),
              "S": np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4)}


def _vad_inputs(folder: Path, in_if: bool, rate: int = 16000) -> Path:
    path = folder / "vad.inputs.npz"
    np.savez(path, **VAD_INPUTS, **({"sr": np.array(rate, np.int64)} if in_if else {}))
    return path


@pytest.mark.parametrize("form", ["onnx", "ir"])
@pytest.mark.parametrize("in_if", [True, False], ids=["in-if", "top-level"])
def test_a_cell_whose_state_is_a_dynamic_model_input_returned_updated_is_judged(capsys, tmp_path, form, in_if):
    """Silero VAD's op18 export: one LSTM step of Gemms, h and c Gathers of the state input [2, batch,
    128] (the batch dynamic), h_t and c_t stacked into the output of that shape; x as wide as the
    state. In an If's branch (the whole model in one per sample rate) and at the top level, the state
    is the input returned updated (the branch's Parameters and Results for the model's), and the cell
    is judged; in an If, the branch not taken is named as not reached."""
    path = lookalikes.save_vad(tmp_path, form, in_if)
    code = main(["run", str(path), "-d", "CPU", "--inputs", str(_vad_inputs(tmp_path, in_if)), "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    verdicts = [(n["name"], n["verdict"]) for n in result["nodes"]]
    assert code == 0, verdicts
    judged = [n for n in result["nodes"] if n["verdict"] == "pass"]
    assert len(judged) == 1 and judged[0]["max_abs"] < 1e-5, verdicts
    assert ("k16_" in judged[0]["name"]) if in_if else True
    assert len(result["nodes"]) == (2 if in_if else 1)
    assert all("not reached" in said(n) for n in result["nodes"] if n["verdict"] != "pass"), result["nodes"]


def test_a_fault_in_a_cell_inside_an_if_branch_fails_it(capsys, tmp_path):
    """The device's h_t of the branch taken 0.5 off (replayed: wherever it was captured and returned):
    that cell fails, and so the run."""
    path = lookalikes.save_vad(tmp_path, "ir", in_if=True)
    inputs, saved, bad = _vad_inputs(tmp_path, True), tmp_path / "out.npz", tmp_path / "bad.npz"
    assert main(["run", str(path), "-d", "CPU", "--inputs", str(inputs), "--save-outputs", str(saved)]) == 0
    capsys.readouterr()
    arrays = dict(np.load(saved))
    h_t = arrays["S_out"][0].copy()
    changed = [name for name, array in arrays.items() if array.shape == h_t.shape and np.array_equal(array, h_t)]
    assert changed  # the captured h_t
    stacked = [name for name, array in arrays.items() if np.array_equal(array, arrays["S_out"])]  # and its capture
    for name in changed:
        arrays[name] = arrays[name] + np.float32(0.5)
    for name in stacked:  # (a recording whose outputs are not its own captures is refused as inconsistent)
        arrays[name][0] += np.float32(0.5)
    np.savez(bad, **arrays)
    code = main(["run", str(path), "-d", "CPU", "--inputs", str(inputs), "--device-outputs", str(bad),
                 "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    failed = [n for n in result["nodes"] if n["verdict"] == "fail"]
    assert code == 1 and len(failed) == 1 and failed[0]["max_abs"] == pytest.approx(0.5, abs=1e-5), result["nodes"]
