"""``irtool run`` judges recurrent nodes inside TensorIterator, Loop and If bodies, at every iteration.

The models come from tools no one here wrote (tests/real_models.py): a TensorIterator and a
Loop built through openvino's opset API, an If model built with onnx.helper and converted by
ov.convert_model, and a TensorIterator whose body node meets a real fault of OpenVINO's CPU
plugin (ragged sequence lengths in a dynamic-shape LSTMSequence) at one iteration only.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from real_models import (
    loop_gru_cell_model,
    loop_if_gru_cell_model,
    onnx_if_lstm_model,
    onnx_loop_lstm_model,
    onnx_nested_loop_model,
    ti_lengths_model,
    ti_lstm_cell_model,
)

from irtool.cli.program import main
from irtool.judge.verdicts import FAIL, PASS, UNJUDGED, NodeResult, run_verdict


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["run", *argv, "--format", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out else {}


def by_name(result: dict) -> dict[str, dict]:
    return {node["name"]: node for node in result["nodes"]}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("bodies")


@pytest.fixture(scope="module")
def loop_model(folder) -> Path:
    return loop_gru_cell_model(folder / "loop.xml")


@pytest.fixture(scope="module")
def if_onnx(folder) -> Path:
    return onnx_if_lstm_model(folder / "if.onnx")


@pytest.fixture(scope="module")
def if_ir(folder, if_onnx) -> Path:
    import openvino as ov

    ov.save_model(ov.convert_model(str(if_onnx)), str(folder / "if.xml"))
    return folder / "if.xml"


def save(folder: Path, name: str, **arrays: np.ndarray) -> Path:
    np.savez(folder / name, **arrays)
    return folder / name


@pytest.mark.parametrize("verdicts, reached, expected", [
    ([PASS] * 6 + [UNJUDGED], [True] * 7, UNJUDGED),  # six judged, one reached and not judged: not a pass
    ([PASS, UNJUDGED], [True, False], PASS),  # the one not judged was not reached
    ([UNJUDGED], [True], UNJUDGED),
    ([FAIL, UNJUDGED], [True, True], FAIL),
])
def test_a_reached_node_not_judged_keeps_the_verdict_from_pass(verdicts, reached, expected):
    nodes = [NodeResult(f"n{k}", "GRUCell", 3, "top level", verdict, reached=flag)
             for k, (verdict, flag) in enumerate(zip(verdicts, reached))]
    assert run_verdict(nodes) == expected


@pytest.mark.parametrize("verdicts, compared, expected", [
    ([PASS, UNJUDGED], [True], PASS),  # every output judged and agreed: the unjudged node is listed beside
    ([UNJUDGED, "error"], [True, True], PASS),
    ([FAIL, UNJUDGED], [True], FAIL),  # a failing node still fails the run
    ([PASS, UNJUDGED], [False], FAIL),
    ([PASS, UNJUDGED], [True, False], FAIL),  # --expected and --compare-with both: either failing fails
    ([PASS, UNJUDGED], [None], UNJUDGED),  # a comparison that judged no element of an output decides nothing
])
def test_a_comparison_of_every_output_decides_the_run_and_a_failing_node_still_fails_it(verdicts, compared, expected):
    from irtool.judge.compare import OutputDiff, Tolerance

    nodes = [NodeResult(f"n{k}", "GRUCell", 3, "top level", verdict, reason="why") for k, verdict in enumerate(verdicts)]
    comparisons = [[OutputDiff("y", (2,), Tolerance(1e-5, 1e-4), passed=agreed is not False, total=2,
                               unjudged=2 if agreed is None else 0)] for agreed in compared]
    assert run_verdict(nodes, True, comparisons) == expected
    assert run_verdict(nodes, False, comparisons) == FAIL  # probing changed the model's outputs


def test_a_tensor_iterator_body_node_is_judged_at_every_iteration(folder, capsys):
    path = ti_lstm_cell_model(folder / "ti.xml", seq=5)
    code, result = run_json(capsys, str(path), "-d", "CPU")
    assert code == 0 and result["verdict"] == "pass" and result["not_judged"] == [] and result["not_reached"] == []
    (node,) = result["nodes"]
    assert node["name"] == "cell" and node["type"] == "LSTMCell" and node["verdict"] == "pass"
    assert node["where"] == "body of TensorIterator 'ti'" and node["iterations"] == 5
    assert len(node["iteration"]) == 1 and 0 <= node["iteration"][0] < 5 and node["max_abs"] < 1e-5


def test_a_model_with_only_body_nodes_is_not_said_to_have_none(folder, capsys):
    path = ti_lstm_cell_model(folder / "ti-text.xml")
    assert main(["run", str(path), "-d", "CPU"]) == 0
    text = capsys.readouterr().out
    assert "no recurrent node" not in text and text.splitlines()[-1] == "PASS: 1 of 1 judged nodes within tolerance"


def test_top_level_cells_and_a_loop_body_cell_are_all_judged(folder, loop_model, capsys):
    inputs = save(folder, "steps3.npz", X=np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32),
                  H0=np.zeros((2, 4), np.float32), steps=np.array(3, np.int64))
    code, result = run_json(capsys, str(loop_model), "-d", "CPU", "--inputs", str(inputs))
    assert code == 0 and result["verdict"] == "pass", result
    nodes = by_name(result)
    assert [nodes[name]["verdict"] for name in ("top0", "top1", "inner")] == ["pass"] * 3
    assert nodes["inner"]["where"] == "body of Loop 'loop'" and nodes["inner"]["iterations"] == 3
    # what ran for it: the layer of its container in the unprobed compile (the CPU runs a Loop as
    # its TensorIterator layer, measured with openvino 2026.4.1)
    assert nodes["inner"]["container"] == "loop" and nodes["inner"]["implementation"] == "in TensorIterator"


def test_a_loop_that_ran_no_iteration_names_its_node_as_not_reached(folder, loop_model, capsys):
    inputs = save(folder, "steps0.npz", X=np.ones((4, 2, 3), np.float32), H0=np.zeros((2, 4), np.float32),
                  steps=np.array(0, np.int64))
    code, result = run_json(capsys, str(loop_model), "-d", "CPU", "--inputs", str(inputs))
    assert code == 0 and result["verdict"] == "pass" and result["not_reached"] == ["inner"]
    inner = by_name(result)["inner"]
    assert inner["verdict"] == "unjudged" and inner["reached"] is False
    assert inner["reason"] == "not reached on these inputs (Loop 'loop' ran no iteration)"
    main(["run", str(loop_model), "-d", "CPU", "--inputs", str(inputs)])
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == "PASS: 2 of 2 judged nodes within tolerance; not reached on these inputs: 'inner'"


def test_a_loop_that_runs_no_iteration_after_one_that_ran_is_not_judged_on_the_earlier_tensors(folder, loop_model):
    """A compiled model inferred again, as the harness does for each seed: where the Loop then runs
    no iteration, OpenVINO's CPU plugin (2026.4.1) leaves its concatenated outputs as the earlier
    inference's, and the body node was judged (and passed) on them.  Its own flag says it did not run."""
    from irtool.judge.compare import TolerancePolicy
    from irtool.pipeline.device_run import compile_prepared, execute
    from irtool.pipeline.judging import judge
    from irtool.pipeline.prepare import read_and_prepare

    prepared = read_and_prepare(loop_model)
    compiled = compile_prepared(prepared, "CPU", "f32", {})
    inputs = dict(X=np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32),
                  H0=np.zeros((2, 4), np.float32), steps=np.array(3, np.int64))
    for steps, reached in ((3, True), (0, False), (2, True)):
        inputs["steps"] = np.array(steps, np.int64)
        judgment = judge(prepared, inputs, execute(compiled, inputs, "CPU"), TolerancePolicy(), "f32")
        inner = next(node for node in judgment.nodes if node.name == "inner")
        assert inner.reached is reached and judgment.verdict == PASS
        assert inner.iterations == (steps if reached else None)
        if not reached:
            assert inner.reason == "not reached on these inputs (Loop 'loop' ran no iteration)"


@pytest.mark.parametrize("first, second, taken", [(True, False, "lstm_a_h"), (False, True, "lstm_b_h"),
                                                  (False, False, "lstm_c_h")])
@pytest.mark.parametrize("form", ["ir", "onnx"])
def test_nested_if_branches_judge_the_lstm_taken_and_name_the_others(folder, if_ir, if_onnx, form, first, second,
                                                                     taken, capsys):
    inputs = save(folder, f"if{int(first)}{int(second)}.npz",
                  X=np.random.default_rng(1).standard_normal((3, 2, 3)).astype(np.float32),
                  first=np.array(first), second=np.array(second))
    code, result = run_json(capsys, str(if_ir if form == "ir" else if_onnx), "-d", "CPU", "--inputs", str(inputs))
    assert code == 0 and result["verdict"] == "pass", result
    assert len(result["nodes"]) == 3
    judged = [node for node in result["nodes"] if node["verdict"] == "pass"]
    assert len(judged) == 1 and any(taken in tensor for tensor in judged[0]["tensors"])
    assert sorted(result["not_reached"]) == sorted(n["name"] for n in result["nodes"] if n is not judged[0])
    wheres = sorted(node["where"] for node in result["nodes"])
    if form == "ir":  # OpenVINO's Ifs, named by their outputs
        assert wheres == ["else branch of If 'inner_h' in the else branch of If 'Y_h'",
                          "then branch of If 'Y_h'", "then branch of If 'inner_h' in the else branch of If 'Y_h'"]
    else:  # the ONNX graph's own nodes in its subgraphs, judged in ONNX semantics, placed in the ONNX graph
        assert wheres == ["ONNX graph node 0/else_branch/0/else_branch/0 (else_branch of If 'inner_if' in the "
                          "else_branch of If 'outer_if')",
                          "ONNX graph node 0/else_branch/0/then_branch/0 (then_branch of If 'inner_if' in the "
                          "else_branch of If 'outer_if')",
                          "ONNX graph node 0/then_branch/0 (then_branch of If 'outer_if')"]
        assert judged[0]["name"] == {"lstm_a_h": "lstm_a", "lstm_b_h": "lstm_b", "lstm_c_h": "lstm_c"}[taken]
        assert all(node["semantics"] == "ONNX" for node in result["nodes"])
        assert result["against"] == "reference (ONNX semantics: each ONNX node as its ONNX page defines it)"
    for node in result["nodes"]:
        if node is not judged[0]:
            assert node["reached"] is False and node["reason"].startswith("not reached on these inputs (in the ")


def loop_inputs(folder: Path, scan: bool, seq: int = 1) -> Path:
    rng = np.random.default_rng(4)
    arrays = dict(X=rng.standard_normal((3, seq, 2, 3)).astype(np.float32), h0=np.zeros((1, 2, 4), np.float32),
                  c0=np.zeros((1, 2, 4), np.float32))
    return save(folder, f"loop-{scan}-{seq}.npz", **arrays, **({} if scan else {"trip": np.array(3, np.int64)}))


@pytest.mark.parametrize("scan, axis", [(False, 0), (True, 0), (True, 1)], ids=["Loop", "Scan", "Scan-axis-1"])
def test_an_onnx_node_in_a_loop_or_scan_body_is_judged_in_onnx_semantics_at_every_iteration(folder, scan, axis,
                                                                                            capsys):
    """A Scan's sliced input keeps its unit axis in OpenVINO's body (axis 0 or 1): read at its ONNX rank."""
    path = onnx_loop_lstm_model(folder / f"loop-{scan}-{axis}.onnx", scan=scan, seq=3 if axis else 1, scan_axis=axis)
    inputs = loop_inputs(folder, scan, 3 if axis else 1)
    if axis:  # X [seq, steps, batch, size]
        inputs = save(folder, "scan-axis-1.npz", **{**np.load(inputs), "X": np.load(inputs)["X"].transpose(1, 0, 2, 3)})
    code, result = run_json(capsys, str(path), "-d", "CPU", "--precision", "f32", "--inputs", str(inputs))
    assert code == 0 and result["verdict"] == "pass", result
    (node,) = result["nodes"]
    kind = "Scan" if scan else "Loop"
    assert node["name"] == "cell" and node["semantics"] == "ONNX" and node["iterations"] == 3
    assert node["where"] == f"ONNX graph node 0/body/{0 if scan else 1} (body of {kind} 'steps')"
    assert node["max_abs"] < 1e-5 and node["implementation"] == "in TensorIterator"


def test_exposing_a_tensor_computed_in_a_loop_body_leaves_what_the_body_computes_unchanged(folder, capsys):
    """x_t = Gather(X, iter) feeding an LSTM of 3 steps whose Y nothing reads: exposed as it was (an
    Unsqueeze and a Result on it), OpenVINO's CPU plugin computed the LSTM from other data, from
    run to run (2026.4.1, measured): the probed copy's outputs differed and the node failed with
    numbers of no meaning."""
    path = onnx_loop_lstm_model(folder / "loop-seq3.onnx", seq=3)
    inputs = save(folder, "loop-seq3.npz", X=np.random.default_rng(8).standard_normal((3, 3, 2, 3)).astype(np.float32),
                  trip=np.array(3, np.int64), h0=np.zeros((1, 2, 4), np.float32), c0=np.zeros((1, 2, 4), np.float32))
    for _ in range(3):
        code, result = run_json(capsys, str(path), "-d", "CPU", "--precision", "f32", "--inputs", str(inputs))
        assert code == 0 and result["verdict"] == "pass", result
        assert all(output["passed"] for output in result["probe_check"]["outputs"])
        assert result["nodes"][0]["iterations"] == 3


@pytest.mark.parametrize("scan", [False, True], ids=["Loop", "Scan"])
def test_a_frontend_fault_in_a_body_fails_the_onnx_node_at_the_first_iteration_it_shows(folder, scan, capsys):
    """OpenVINO's ONNX frontend drops LSTM peepholes; here they read only the previous cell state,
    zero at iteration 0, so iteration 0 agrees and iteration 1 is the first wrong.  The node
    OpenVINO converted it to computes what it says (its IR passes): only ONNX semantics see it."""
    import openvino as ov

    path = onnx_loop_lstm_model(folder / f"peepholes-{scan}.onnx", peepholes=True, scan=scan)
    inputs = loop_inputs(folder, scan)
    code, result = run_json(capsys, str(path), "-d", "CPU", "--precision", "f32", "--inputs", str(inputs))
    assert code == 1 and result["verdict"] == "fail"
    (node,) = result["nodes"]
    assert node["verdict"] == "fail" and node["iteration"] == [1] and node["iterations"] == 3
    assert node["reason"].startswith(f"at iteration 1 of {'Scan' if scan else 'Loop'} 'steps': outside tolerance: ")
    assert "drops the peepholes P" in node["reason"]
    # onnxruntime, an implementation no one here wrote, disagrees with OpenVINO on the model's outputs
    code, result = run_json(capsys, str(path), "-d", "CPU", "--precision", "f32", "--inputs", str(inputs),
                            "--compare-with", "onnxruntime")
    assert code == 1 and result["oracle"]["verdict"] == "fail" and result["oracle"]["failed"]
    assert result["second_opinion"]["in_subgraphs"] == ["cell"]
    ov.save_model(ov.convert_model(str(path)), str(folder / f"peepholes-{scan}.xml"))
    code, result = run_json(capsys, str(folder / f"peepholes-{scan}.xml"), "-d", "CPU", "--precision", "f32",
                            "--inputs", str(inputs))
    assert code == 0 and result["nodes"][0]["semantics"] == "OpenVINO" and result["nodes"][0]["iterations"] == 3


@pytest.mark.parametrize("ragged", [False, True], ids=["same-count", "count-per-outer-iteration"])
def test_a_loop_in_a_loop_is_judged_only_where_it_runs_as_many_iterations_each_time(folder, ragged, capsys):
    """The inner Loop's tensors are stacked once per outer iteration; where its trip count is the
    outer iteration number, OpenVINO's CPU plugin stacked garbage or aborted the process
    (2026.4.1, measured), so the node is named as not judged, with why, and never run that way."""
    path = onnx_nested_loop_model(folder / f"nested-{ragged}.onnx", ragged)
    inputs = save(folder, f"nested-{ragged}.npz", X=np.random.default_rng(3).standard_normal((2, 1, 2, 3)).astype(
        np.float32), steps=np.array(3, np.int64), trip=np.array(2, np.int64), h0=np.zeros((1, 2, 4), np.float32))
    code, result = run_json(capsys, str(path), "-d", "CPU", "--precision", "f32", "--inputs", str(inputs))
    (node,) = result["nodes"]
    assert node["name"] == "deep"
    if not ragged:
        assert code == 0 and node["verdict"] == "pass" and node["iterations"] == 6
        assert node["where"] == "ONNX graph node 0/body/0/body/1 (body of Loop 'inner' in the body of Loop 'outer')"
    else:
        assert code == 3 and result["verdict"] == "unjudged" and result["not_judged"] == ["deep"]
        assert "sits in a loop, and its trip count or condition may differ at each iteration around it" in \
            node["reason"]


@pytest.fixture(scope="module")
def lengths_case(folder) -> tuple[Path, Path]:
    """Full sequence lengths at iterations 0, 1 and 3, ragged ones at iteration 2."""
    path = ti_lengths_model(folder / "lengths.xml")
    lengths = np.full((4, 3), 4, np.int32)
    lengths[2] = [4, 2, 1]
    inputs = save(folder, "lengths.npz", X=np.random.default_rng(2).standard_normal((4, 3, 4, 3)).astype(np.float32),
                  L=lengths, H0=np.zeros((3, 1, 4), np.float32), C0=np.zeros((3, 1, 4), np.float32))
    return path, inputs


def test_a_wrong_body_node_fails_at_its_iteration_with_a_reproducer_that_fails_alone(folder, lengths_case, capsys):
    path, inputs = lengths_case
    code, result = run_json(capsys, str(path), "-d", "CPU", "--inputs", str(inputs),
                            "--reproducers", str(folder / "reproducers"))
    assert code == 1 and result["verdict"] == "fail"
    (node,) = result["nodes"]
    assert node["name"] == "seq" and node["verdict"] == "fail" and node["iteration"] == [2]
    assert node["iterations"] == 4 and node["reason"].startswith("at iteration 2 of TensorIterator 'ti': outside")
    assert node["first_step_outside"] == 1  # the batch element of length 1 goes wrong after its first step
    folder = Path(result["reproducers"]["seq"])
    stored = np.load(folder / "inputs.npz")
    assert sorted(stored["sequence_lengths"].tolist()) == [1, 2, 4]  # the inputs of iteration 2
    done = subprocess.run([sys.executable, str(folder / "reproduce.py")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1 and "MISMATCH" in done.stdout, done.stdout + done.stderr


def test_the_same_body_node_passes_where_every_iteration_has_full_lengths(folder, lengths_case, capsys):
    path, _ = lengths_case
    inputs = save(folder, "full.npz", X=np.random.default_rng(2).standard_normal((4, 3, 4, 3)).astype(np.float32),
                  L=np.full((4, 3), 4, np.int32), H0=np.zeros((3, 1, 4), np.float32),
                  C0=np.zeros((3, 1, 4), np.float32))
    code, result = run_json(capsys, str(path), "-d", "CPU", "--inputs", str(inputs))
    assert code == 0 and result["nodes"][0]["iterations"] == 4 and result["nodes"][0]["verdict"] == "pass"


def test_probing_a_body_leaves_the_model_as_read_unchanged(folder):
    import openvino as ov

    from irtool.runtime.probe import probe_model

    model = ov.Core().read_model(str(ti_lstm_cell_model(folder / "ti-unchanged.xml")))
    probed = probe_model(model)
    (ti,) = [op for op in model.get_ordered_ops() if op.get_type_name() == "TensorIterator"]
    assert ti.get_output_size() == 1 and len(ti.get_function().get_results()) == 2
    assert len(probed.probed.outputs) > len(model.outputs)


# ----------------------------------------------------------------------------- the one pipeline: harness, reduce

def test_the_harness_judges_body_nodes_per_node_with_the_iteration_and_a_reproducer(folder, lengths_case, if_ir):
    path, inputs = lengths_case
    if_inputs = save(folder, "if-harness.npz", X=np.random.default_rng(1).standard_normal((3, 2, 3)).astype(np.float32),
                     first=np.array(False), second=np.array(True))
    suite = folder / "bodies.toml"
    suite.write_text(f'[suite]\nname = "bodies"\n\n[[models]]\nid = "lengths"\npath = "{path}"\ninputs = "{inputs}"\n\n'
                     f'[[models]]\nid = "if"\npath = "{if_ir}"\ninputs = "{if_inputs}"\n')
    out = folder / "harness"
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(suite), "-d", "CPU", "--report-dir",
                           str(out), "--no-progress", "-j", "1"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    results = {r["case"]: r for r in json.loads((out / "results.json").read_text())["results"]}
    failed = results["lengths[inputs]::seq"]
    assert failed["verdict"] == "fail"
    assert failed["message"].startswith("at iteration 2 of TensorIterator 'ti': outside tolerance: ")
    alone = subprocess.run([sys.executable, "reproduce.py"], cwd=out / failed["reproducer"], capture_output=True,
                           text=True, timeout=300)
    assert alone.returncode == 1 and "MISMATCH" in alone.stdout
    branches = [r for case, r in results.items() if case.startswith("if[")]
    assert sorted(r["verdict"] for r in branches) == ["pass", "unjudged", "unjudged"]
    assert all(r["message"].startswith("not reached on these inputs") for r in branches if r["verdict"] == "unjudged")


def test_reduce_takes_a_body_node_by_name(folder, lengths_case):
    path, inputs = lengths_case
    out = folder / "reduced"
    done = subprocess.run([sys.executable, "-m", "irtool", "reduce", str(path), "--node", "seq", "-d", "CPU",
                           "--inputs", str(inputs), "-o", str(out), "--budget", "60"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    case = json.loads((out / "reproducer" / "case.json").read_text())
    assert case["case"]["id"] == "lengths::seq reduced"
    alone = subprocess.run([sys.executable, "reproduce.py"], cwd=out / "reproducer", capture_output=True, text=True,
                           timeout=300)
    assert alone.returncode == 1 and "MISMATCH" in alone.stdout


def test_iterations_stacked_on_the_batch_axis_give_each_iterations_reference(folder, lengths_case):
    """The judge evaluates all iterations of a body node in one reference call (one matrix product
    per step instead of one per step and iteration); each iteration's slice must be what the
    reference gives that iteration alone, ragged lengths included."""
    from irtool.judge.nodes import _batched_reference, evaluate_node
    from irtool.pipeline.device_run import compile_prepared, execute
    from irtool.pipeline.inputs import case_inputs
    from irtool.pipeline.prepare import read_and_prepare
    from irtool.runtime.captured import iteration_arrays, reached_iterations

    path, inputs_file = lengths_case
    prepared = read_and_prepare(path)
    inputs, _, _ = case_inputs(prepared, inputs_file)
    executed = execute(compile_prepared(prepared, "CPU", "f32", {}), inputs, "CPU")
    (node,) = prepared.nodes
    per_iteration = [iteration_arrays(node, inputs, executed.captured, index)[0]
                     for index in reached_iterations(node, executed.captured)]
    batched = _batched_reference(node, per_iteration, evaluate_node)
    assert batched is not None and len(batched) == 4
    for arrays, together in zip(per_iteration, batched):
        for alone, stacked in zip(evaluate_node(node, arrays), together):
            np.testing.assert_allclose(stacked, alone, rtol=1e-6, atol=1e-7)


def test_dynamic_dims_that_reach_a_body_node_are_sized_and_its_lengths_made_valid(folder, lengths_case, capsys):
    """Seeded inputs: the batch dim reaches the LSTMSequence only inside the TensorIterator's body,
    and L feeds its sequence_lengths through the body's sliced input."""
    path, _ = lengths_case
    code, result = run_json(capsys, str(path), "-d", "CPU", "--batch", "3")
    shapes = {i["name"]: i["shape"] for i in result["inputs"]}
    assert shapes == {"X": [4, 3, 4, 3], "L": [4, 3], "H0": [3, 1, 4], "C0": [3, 1, 4]}
    assert result["shapes_chosen"]["X"] == "from the recurrent nodes"
    # ragged lengths, all valid: the reference accepts them, and the CPU's fault is found
    assert code == 1 and result["nodes"][0]["verdict"] == "fail" and result["nodes"][0]["iterations"] == 4


def test_the_summary_and_json_name_a_reached_node_that_was_not_judged(folder, loop_model):
    """Six judged cells and one reached cell left unjudged printed "PASS: 6 of 6 judged nodes"; now
    the verdict is unjudged (exit 3) and the node is named, with its reason."""
    import dataclasses

    from irtool.cli.run_cmd import render_text, to_json
    from irtool.pipeline.run import RunOptions, run

    inputs = save(folder, "steps2.npz", X=np.ones((4, 2, 3), np.float32), H0=np.zeros((2, 4), np.float32),
                  steps=np.array(2, np.int64))
    result = run(RunOptions(model=loop_model, device="CPU", inputs=inputs))
    assert result.verdict == PASS
    nodes = tuple(dataclasses.replace(node, verdict=UNJUDGED, reason="inside the body: not judged (for the test)",
                                      outputs=()) if node.name == "inner" else node for node in result.nodes)
    result = dataclasses.replace(result, nodes=nodes, verdict=run_verdict(nodes, result.probe_check is None or result.probe_check.passed))
    assert result.verdict == UNJUDGED and result.passed is None
    lines = render_text(result).splitlines()
    assert lines[-1] == ("NOT JUDGED: 1 node(s) the inputs reached were not judged; 2 judged within tolerance; "
                         "not judged: 'inner'")
    assert "  UNJUDGED node 'inner' (GRUCell-3): inside the body: not judged (for the test)" in lines
    data = to_json(result)
    assert data["verdict"] == "unjudged" and data["not_judged"] == ["inner"] and data["not_reached"] == []


def test_weights_passed_into_a_body_are_read_once_not_captured_per_iteration(folder, capsys):
    """A Loop whose cell's W, R, B are Consts outside it, passed in as invariant inputs (as a
    frontend may): they are constant data of the node, not a per-iteration probe."""
    import openvino as ov

    from irtool.runtime.probe import probe_model

    path = loop_gru_cell_model(folder / "loop-outside.xml", weights_outside=True)
    inner = next(node for node in probe_model(ov.Core().read_model(str(path))).nodes if node.name == "inner")
    assert [feed.port.name for feed in inner.feeds if feed.constant is not None] == ["W", "R", "B"]
    assert [feed.port.name for feed in inner.feeds if feed.probe is not None] == ["X", "initial_hidden_state"]
    inputs = save(folder, "outside.npz", X=np.random.default_rng(3).standard_normal((4, 2, 3)).astype(np.float32),
                  H0=np.zeros((2, 4), np.float32), steps=np.array(4, np.int64))
    code, result = run_json(capsys, str(path), "-d", "CPU", "--inputs", str(inputs))
    assert code == 0 and by_name(result)["inner"]["iterations"] == 4 and by_name(result)["inner"]["verdict"] == "pass"


def test_a_cell_in_an_if_inside_a_loop_is_judged_at_the_iterations_its_branch_ran(folder, capsys):
    path = loop_if_gru_cell_model(folder / "loop-if.xml", seq=5)
    code, result = run_json(capsys, str(path), "-d", "CPU")
    assert code == 0 and result["verdict"] == "pass"
    (node,) = result["nodes"]
    assert node["name"] == "even_cell" and node["where"] == "then branch of If 'pick' in the body of Loop 'loop'"
    assert node["iterations"] == 3 and node["iteration"][0] in (0, 2, 4)  # iterations 0, 2 and 4 of 5


def test_a_branch_tensor_of_dynamic_shape_inside_a_loop_is_named_not_judged(folder, capsys):
    """Zeros of the other branch's shape cannot be made for it, and a Loop cannot stack tensors of
    two shapes: the node is not judged, and the verdict says so (never PASS)."""
    import openvino as ov

    static = ov.Core().read_model(str(loop_if_gru_cell_model(folder / "loop-if-static.xml")))
    model = static.clone()
    for parameter in model.get_parameters():  # the batch dim dynamic, as a converter leaves it
        shape = parameter.get_partial_shape()
        shape[1 if len(shape) == 3 else 0] = ov.Dimension(-1)
        parameter.set_partial_shape(shape)
    (loop,) = [op for op in model.get_ordered_ops() if op.get_type_name() == "Loop"]
    body = loop.get_function()
    for parameter in body.get_parameters()[1:]:
        shape = parameter.get_partial_shape()
        shape[1 if len(shape) == 3 else 0] = ov.Dimension(-1)
        parameter.set_partial_shape(shape)
    model.validate_nodes_and_infer_types()
    ov.save_model(model, str(folder / "loop-if-dynamic.xml"), compress_to_fp16=False)
    code, result = run_json(capsys, str(folder / "loop-if-dynamic.xml"), "-d", "CPU")
    assert code == 3 and result["verdict"] == "unjudged" and result["not_judged"] == ["even_cell"]
    assert "its tensor of dynamic shape [?,3] is in a branch inside a loop" in result["nodes"][0]["reason"]


def test_dynamic_dims_reaching_lstms_only_in_if_branches_are_sized_and_the_taken_one_judged(folder, capsys):
    """As silero-vad holds its LSTMs: every dim of X dynamic, reaching LSTMs only inside If branches."""
    path = onnx_if_lstm_model(folder / "if-dynamic.onnx", dynamic=True)
    code, result = run_json(capsys, str(path), "-d", "CPU", "--batch", "3", "--seq-length", "5")
    assert code == 0 and result["verdict"] == "pass", result
    assert {i["name"]: i["shape"] for i in result["inputs"]}["X"] == [5, 3, 3]
    assert len([n for n in result["nodes"] if n["verdict"] == "pass"]) == 1 and len(result["not_reached"]) == 2


@pytest.mark.parametrize("block", [None, 8, 24])  # elements compared at a time: all, 1 iteration, 3 (and 1 left)
@pytest.mark.parametrize("case", ["loop", "lengths"])
def test_iterations_seen_at_once_give_the_verdict_and_worst_iteration_of_each_seen_alone(folder, loop_model,
                                                                                       lengths_case, monkeypatch,
                                                                                       block, case):
    """Every iteration within tolerance is seen with one comparison per output over blocks of
    iterations; the node's result (verdict, the iteration it reports, its diffs) is what diffing
    each alone gives, also where one iteration fails (the lengths case fails at iteration 2)."""
    import irtool.judge.nodes as node_judge
    from irtool.judge.compare import TolerancePolicy
    from irtool.pipeline.device_run import compile_prepared, execute
    from irtool.pipeline.inputs import case_inputs
    from irtool.pipeline.judging import judge
    from irtool.pipeline.prepare import read_and_prepare

    if block is not None:
        monkeypatch.setattr(node_judge, "WORST_BLOCK_ELEMENTS", block)
    path, inputs_file = (loop_model, None) if case == "loop" else lengths_case
    prepared = read_and_prepare(path)
    inputs, _, _ = case_inputs(prepared, inputs_file)
    executed = execute(compile_prepared(prepared, "CPU", "f32", {}), inputs, "CPU")
    fast = judge(prepared, inputs, executed, TolerancePolicy(), "f32")
    monkeypatch.setattr(node_judge, "_worst_of_passing_iterations", lambda *args: None)
    alone = judge(prepared, inputs, executed, TolerancePolicy(), "f32")
    body = [k for k, node in enumerate(alone.nodes) if node.iterations]
    assert body and fast.verdict == alone.verdict == ("pass" if case == "loop" else "fail")
    assert all(alone.nodes[k].iterations > 1 for k in body)
    for k in body:
        assert fast.nodes[k].iteration == alone.nodes[k].iteration
        assert fast.nodes[k].outputs == alone.nodes[k].outputs


def two_branch_model(path: Path, names: tuple[str, str], layout: int = 0) -> Path:
    """If(c) with an LSTM in each branch (then, else) of seq 3 and batch 2: X [3, 2, 3], initial_h h0
    [1, 2, 4]; with layout 1 batch-major, X [2, 3, 3], h0 [2, 1, 4] (what OpenVINO's frontend reads as
    sequence-major, and refuses)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(2)
    info = helper.make_tensor_value_info
    x, state = ([3, 2, 3], [1, 2, 4]) if layout == 0 else ([2, 3, 3], [2, 1, 4])

    def branch(name: str, output: str) -> onnx.GraphProto:
        weights = [numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), f"{output}_{w}")
                   for w, shape in (("W", (1, 16, 3)), ("R", (1, 16, 4)))]
        node = helper.make_node("LSTM", ["X", weights[0].name, weights[1].name, "", "", "h0"], ["", output],
                                hidden_size=4, layout=layout, name=name)
        return helper.make_graph([node], output, [], [info(output, TensorProto.FLOAT, state)], weights)

    graph = helper.make_graph([helper.make_node("If", ["c"], ["h"], then_branch=branch(names[0], "then_h"),
                                                else_branch=branch(names[1], "else_h"))],
                              "g", [info("X", TensorProto.FLOAT, x), info("h0", TensorProto.FLOAT, state),
                                    info("c", TensorProto.BOOL, [])],
                              [info("h", TensorProto.FLOAT, state)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), path)
    return path


def test_a_model_openvino_cannot_convert_names_the_known_fault_of_a_node_in_a_subgraph(folder, capsys):
    """A layout=1 LSTM in an If branch (batch 2, seq 3): OpenVINO's frontend reads it as sequence-major
    and refuses the dims; the error names the fault, as it does for a main-graph node."""
    path = two_branch_model(folder / "if-layout1.onnx", ("a", "b"), layout=1)
    assert main(["run", str(path), "-d", "CPU"]) == 2
    error = capsys.readouterr().err
    assert "known faults of OpenVINO's ONNX frontend that may explain it: " in error
    for name in ("a", "b"):  # onnx.helper writes the else_branch first
        assert f"node '{name}' (LSTM-14): OpenVINO's ONNX frontend ignores layout=1" in error


def test_two_onnx_nodes_of_one_name_are_named_apart_and_a_tolerance_reaches_each(folder, capsys):
    """Two branches' LSTMs both named 'rec': the report calls them rec and rec#2, and --atol (and a
    case's tolerances) name them so; a name neither has is refused with the nearest."""
    path = two_branch_model(folder / "if-same-names.onnx", ("rec", "rec"))
    inputs = save(folder, "if-same-names.npz", X=np.ones((3, 2, 3), np.float32), h0=np.zeros((1, 2, 4), np.float32),
                  c=np.array(True))
    code, result = run_json(capsys, str(path), "-d", "CPU", "--precision", "f32", "--inputs", str(inputs),
                            "--atol", "rec#2:then_h:0.25")
    assert code == 0 and sorted(node["name"] for node in result["nodes"]) == ["rec", "rec#2"]
    judged = next(node for node in result["nodes"] if node["verdict"] == "pass")
    assert judged["name"] == "rec#2" and judged["outputs"][0]["tolerance"]["atol"] == 0.25
    assert main(["run", str(path), "-d", "CPU", "--inputs", str(inputs), "--atol", "rec#3:then_h:0.1"]) == 2
    assert "(did you mean rec#2:then_h?)" in capsys.readouterr().err
    suite = folder / "same-names.toml"
    suite.write_text(f'[suite]\nname = "n"\n[[models]]\nid = "m"\npath = "{path}"\ninputs = "{inputs}"\n'
                     f'tolerances = {{ "rec#3:then_h" = [0.1, 0.1] }}\n')
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(suite), "-d", "CPU", "--report-dir",
                           str(folder / "same-names"), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "tolerances name 'rec#3:then_h', which if-same-names.onnx does not have " \
        "(did you mean rec#2:then_h?)" in done.stderr, done.stdout + done.stderr


def test_the_harness_judges_an_onnx_node_in_a_loop_body_at_its_iteration_with_the_node_alone_as_its_reproducer(folder):
    """A model whose one ONNX node fails inside a Loop: a result of the node, with the iteration, and a
    reproducer of the node alone at that iteration (once a folder of the whole model with nothing to
    compare, whose reproduce.py passed; then none)."""
    root = Path(__file__).resolve().parent.parent / "samples" / "models"
    suite = folder / "onnx-loop.toml"
    suite.write_text(f'[suite]\nname = "onnx-loop"\n[[models]]\nid = "peepholes"\npath = "{root / "loop_peepholes.onnx"}"'
                     f'\ninputs = "{root / "loop_peepholes.npz"}"\n')
    out = folder / "harness-onnx-loop"
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(suite), "-d", "CPU", "--precision", "f32",
                           "--report-dir", str(out), "--no-progress"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    (record,) = json.loads((out / "results.json").read_text())["results"]
    assert record["case"] == "peepholes[inputs]::cell" and record["verdict"] == "fail" and record["op"] == "LSTM-14"
    assert record["message"].startswith("at iteration 1 of Loop 'steps': outside tolerance: ")
    reproducer = out / record["reproducer"]
    assert (reproducer / "model.onnx").is_file()
    alone = subprocess.run([sys.executable, "reproduce.py"], cwd=reproducer, capture_output=True, text=True,
                           timeout=120)
    assert alone.returncode == 1 and "MISMATCH in h_out, c_out" in alone.stdout, alone.stdout + alone.stderr


def test_seeded_inputs_run_a_loop_at_least_once_and_the_header_shows_the_trip_count(folder, loop_model, capsys):
    """Small seeded ints made a Loop's trip count 0 for one seed in four (nothing in it was judged), or
    more than the body indexes: it is 2, a state carried once."""
    for seed in range(8):
        code, result = run_json(capsys, str(loop_model), "-d", "CPU", "--seed", str(seed))
        steps = next(i for i in result["inputs"] if i["name"] == "steps")
        assert code == 0 and steps["value"] == 2 and by_name(result)["inner"]["iterations"] == 2
    main(["run", str(loop_model), "-d", "CPU", "--seed", "1"])
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("  inputs (seed 1)"))
    assert "steps int64[] = " in header


def test_a_loop_of_constant_trip_count_0_is_not_reached_and_never_probed(folder):
    """Compiling a copy that exposed such a Loop's body killed the process in OpenVINO's CPU plugin
    (SIGFPE, 2026.4.1) while the model itself runs: irtool must say the node is not reached, and
    must not crash (run in a process of its own, so that a crash fails this test, not the suite)."""
    path = onnx_loop_lstm_model(folder / "trip0.onnx", constant_trip=0)
    inputs = save(folder, "trip0.npz", X=np.ones((3, 1, 2, 3), np.float32), h0=np.zeros((1, 2, 4), np.float32),
                  c0=np.zeros((1, 2, 4), np.float32))
    done = subprocess.run([sys.executable, "-m", "irtool", "run", str(path), "-d", "CPU", "--precision", "f32",
                           "--inputs", str(inputs), "--format", "json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr
    (node,) = json.loads(done.stdout)["nodes"]
    assert node["name"] == "cell" and node["reached"] is False
    assert node["reason"].startswith("not reached on these inputs (Loop ") and \
        node["reason"].endswith("never runs: its trip count is 0)")


def test_an_input_the_frontend_names_twice_is_fed_by_the_models_name(folder, capsys):
    """A Loop of constant false condition, folded away by OpenVINO's ONNX frontend: its carried input
    h0 becomes the model's output too, named 'Yl' and 'h_l_out', and clones and compiled models of it
    keep only 'h_l_out' (2026.4.1, measured): irtool stopped with an internal error."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    info = helper.make_tensor_value_info
    state = [1, 2, 4]
    body = helper.make_graph(
        [helper.make_node("Gather", ["X", "it"], ["x_i"], axis=0),
         helper.make_node("GRU", ["x_i", "W", "R", "", "", "h_i"], ["Y_i", "h_i_out"], hidden_size=4, name="gi"),
         helper.make_node("Identity", ["cin"], ["cout"])],
        "body", [info("it", TensorProto.INT64, []), info("cin", TensorProto.BOOL, []), info("h_i", TensorProto.FLOAT, state)],
        [info("cout", TensorProto.BOOL, []), info("h_i_out", TensorProto.FLOAT, state),
         info("Y_i", TensorProto.FLOAT, [2, 1, 2, 4])])
    constants = [helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value))
                 for name, value in (("trip", np.array(3, np.int64)), ("go", np.array(False)))]
    graph = helper.make_graph(
        constants + [helper.make_node("Loop", ["trip", "go", "h0"], ["h_l_out", "Yl"], body=body, name="inner")],
        "folded", [info("X", TensorProto.FLOAT, [3, 2, 2, 3]), info("h0", TensorProto.FLOAT, state)],
        [info("h_l_out", TensorProto.FLOAT, state)],
        [numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)
         for name, shape in (("W", (1, 12, 3)), ("R", (1, 12, 4)))])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), folder / "folded.onnx")
    code, result = run_json(capsys, str(folder / "folded.onnx"), "-d", "CPU", "--precision", "f32")
    assert code == 3 and result["verdict"] == "unjudged", result  # the node's tensors went with the Loop
    assert [i["name"] for i in result["inputs"]] == ["X", "Yl"]


def folded_if_model(path: Path, hidden: int = 4) -> Path:
    """An If on the batch of the initial state H0 (Cast(Shape(H0)[1]) to bool, as Silero VAD's exports
    test their state) between an LSTM given H0 and one without, every shape static (onnx.helper):
    OpenVINO's ONNX frontend keeps the If, and the CPU plugin folds it, running the branch's LSTM
    at the top level."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)

    def weight(name: str, shape: tuple[int, ...]):
        return numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)

    def branch(prefix: str, with_state: bool):
        node = helper.make_node("LSTM", ["X", prefix + "W", prefix + "R", prefix + "B", "", "H0" if with_state else ""],
                                ["", prefix + "h"], hidden_size=hidden, name=prefix + "lstm")
        weights = [weight(prefix + "W", (1, 4 * hidden, 3)), weight(prefix + "R", (1, 4 * hidden, hidden)),
                   weight(prefix + "B", (1, 8 * hidden))]
        return helper.make_graph([node], prefix, [], [helper.make_tensor_value_info(prefix + "h", TensorProto.FLOAT,
                                                                                     None)], weights)

    nodes = [helper.make_node("Shape", ["H0"], ["shape"]), helper.make_node("Gather", ["shape", "one"], ["batch"]),
             helper.make_node("Cast", ["batch"], ["given"], to=TensorProto.BOOL),
             helper.make_node("If", ["given"], ["Y_h"], then_branch=branch("a_", True),
                              else_branch=branch("b_", False), name="by_state")]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [5, 1, 3]),
              helper.make_tensor_value_info("H0", TensorProto.FLOAT, [1, 1, hidden])]
    graph = helper.make_graph(nodes, "folded_if", inputs,
                              [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, 1, hidden])],
                              [numpy_helper.from_array(np.array(1, np.int64), "one")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_a_node_whose_if_the_device_folds_says_what_it_ran_as(capsys, tmp_path):
    """The If is gone from what the CPU runs: the LSTM of the branch taken ran as RNNSeq at the top
    level, and says so (it said '-', its container's implementation not reported)."""
    code, result = run_json(capsys, str(folded_if_model(tmp_path / "folded_if.onnx")), "-d", "CPU")
    nodes = {node["name"]: node for node in result["nodes"]}
    assert code == 0 and nodes["a_lstm"]["verdict"] == PASS, nodes
    assert nodes["a_lstm"]["implementation"] == "RNNSeq (f32)", nodes["a_lstm"]
    assert nodes["b_lstm"]["verdict"] == UNJUDGED and nodes["b_lstm"]["implementation"] is None
