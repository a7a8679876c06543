"""``[[models]]`` in suites: real converted models, every recurrent node one result and one testcase."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import lxml.etree as ET
import pytest

from irtool.jobs.records import NODE_SEPARATOR
from irtool.jobs.suite import SuiteError, load_suite

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "samples" / "suites" / "models.toml"


def irtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("models") / "out"
    done = irtool("harness", str(MODELS), "-d", "CPU", "--report-dir", str(out), "--no-progress")
    return done, out, json.loads((out / "results.json").read_text())["results"]


def test_every_node_of_every_model_is_a_result_of_its_own(run):
    done, _, results = run
    assert done.returncode == 0, done.stdout + done.stderr
    by_model: dict[str, list[dict]] = {}
    for result in results:
        model, sep, node = result["case"].partition(NODE_SEPARATOR)
        assert sep and node == result["node"], result["case"]
        by_model.setdefault(model, []).append(result)
    assert {m: len(r) for m, r in by_model.items()} == {
        "lstm2_bidirectional[seed=0]": 2, "lstm2_bidirectional[seed=1]": 2, "lstm2-onnx[seed=0]": 2,
        "gru_lengths[seed=0]": 1, "erfinv_gru[seed=0]": 1}
    for result in results:
        assert result["outputs"] and result["implementations"].keys() == {result["node"]}
        # an .onnx model's nodes are the ONNX graph's, judged in ONNX semantics
        ops = ("LSTM-14",) if result["case"].startswith("lstm2-onnx") else ("LSTMSequence-5", "GRUSequence-5")
        assert result["op"] in ops
    onnx = by_model["lstm2-onnx[seed=0]"][0]
    assert onnx["shapes"] == {"x": [6, 3, 5]}  # the suite's shapes, not the defaults
    assert all(r["verdict"] == "pass" for m, rs in by_model.items() if m.startswith("lstm2") for r in rs)


def test_each_result_says_how_irtool_sized_its_models_dynamic_dims_and_only_those(run):
    """A model's dims the suite leaves dynamic are sized by irtool, as ``irtool run`` says in its
    header: each result stores how (``sized``); dims the suite's shapes give, or a static model's,
    store nothing."""
    _, out, results = run
    sized = {r["case"].split(NODE_SEPARATOR)[0]: r.get("sized") for r in results}
    assert sized == {"lstm2_bidirectional[seed=0]": {"x": "from the recurrent nodes"},
                     "lstm2_bidirectional[seed=1]": {"x": "from the recurrent nodes"}, "lstm2-onnx[seed=0]": None,
                     "gru_lengths[seed=0]": {"x": "from the recurrent nodes", "lens": "from the recurrent nodes"},
                     "erfinv_gru[seed=0]": None}
    from conftest_harness import sample_run

    from irtool.harness.html import render_html
    from irtool.jobs.records import result_from_json

    run_results = sample_run()
    failed = next(r for r in run_results.results if r.verdict == "fail")
    failed.sized = result_from_json({**next(r for r in results if r.get("sized")), "verdict": "fail"}).sized
    assert "<td>sized by irtool</td><td>x: from the recurrent nodes</td>" in render_html(run_results)  # a failure's details


def test_the_known_cpu_bug_is_a_known_failure_with_a_node_reproducer(run):
    _, out, results = run
    (gru,) = [r for r in results if r["case"].startswith("gru_lengths")]
    assert gru["verdict"] == "xfail" and "ignores sequence_lengths" in gru["message"]
    folder = out / gru["reproducer"]
    case = json.loads((folder / "case.json").read_text())
    assert case["result"]["node"] == gru["node"] and (folder / "reproduce.py").is_file()
    alone = subprocess.run([sys.executable, "reproduce.py"], cwd=folder, capture_output=True, text=True, timeout=120)
    assert alone.returncode == 1 and "MISMATCH" in alone.stdout


def test_each_node_is_a_testcase_in_junit(run):
    _, out, results = run
    cases = [case.get("name") for case in ET.parse(str(out / "junit.xml")).getroot().iter("testcase")]
    assert sorted(cases) == sorted(f"{r['case']} on CPU at f32" for r in results)  # unique per device and precision


def test_per_node_tolerances_from_the_suite_apply(tmp_path):
    suite = tmp_path / "s.toml"
    model = ROOT / "samples" / "models" / "lstm2_bidirectional.xml"
    suite.write_text(f'[[models]]\npath = "{model}"\ntolerances = {{ "LSTMSequence_117:Y" = [0.0, 0.0] }}\n')
    done = irtool("harness", str(suite), "--report-dir", str(tmp_path / "out"), "--no-progress")
    results = {r["node"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())["results"]}
    assert done.returncode == 1
    tight = next(o for o in results["LSTMSequence_117"]["outputs"] if o["name"] == "Y")
    assert (tight["atol"], tight["rtol"]) == (0.0, 0.0) and results["LSTMSequence_117"]["verdict"] == "fail"
    assert results["LSTMSequence_54"]["verdict"] == "pass"
    assert {o["atol"] for o in results["LSTMSequence_54"]["outputs"]} == {1e-5}


def test_a_model_with_no_recurrent_node_is_unjudged_and_the_run_says_so(tmp_path):
    import numpy as np
    import openvino as ov
    import openvino.opset1 as ops

    x = ops.parameter([2, 3], np.float32, name="x")
    ov.save_model(ov.Model([ops.relu(x)], [x], "relu"), str(tmp_path / "relu.xml"))
    (tmp_path / "s.toml").write_text('[[models]]\npath = "relu.xml"\n')
    done = irtool("harness", str(tmp_path / "s.toml"), "--report-dir", str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 3 and "PASSED" not in done.stdout, done.stdout + done.stderr
    (result,) = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert result["verdict"] == "unjudged" and "no node of the recurrent family" in result["message"]


@pytest.mark.parametrize("table, says", [
    ('[[models]]\nid = "x"\n', "'path' is required"),
    ('[[models]]\npath = "m.caffemodel"\n', "is not a model OpenVINO reads: IR .xml, ONNX .onnx"),
    ('[[models]]\npath = "gone.xml"\n', "is no model file"),
    ('[[models]]\npath = "m.xml"\nshapes = { x = [2, -1] }\n', "shapes.x is [2, -1]; expected a list of sizes"),
    ('[[models]]\npath = "m.xml"\ntolerances = { Y = 1e-3 }\n', "tolerances.Y is 0.001; expected [atol, rtol]"),
    ('[[models]]\npath = "m.xml"\ninputs = "none.npz"\n', "inputs 'none.npz' is no .npz file"),
    ('[[models]]\nid = "a::b"\npath = "m.xml"\n', "without '[', ']', '/', '::' or spaces"),
    ('[[models]]\npath = "m.xml"\nnodes = 1\n', "nodes"),
])
def test_bad_model_tables_name_the_table_and_the_key(tmp_path, table, says):
    (tmp_path / "m.xml").write_text("<net/>")
    (tmp_path / "m.caffemodel").write_text("")
    (tmp_path / "s.toml").write_text(table)
    with pytest.raises(SuiteError, match=None) as caught:
        load_suite(tmp_path / "s.toml")
    assert says in caught.value.message and "[[models]]" in caught.value.message


def test_a_tolerance_that_names_no_output_of_the_model_stops_the_run(tmp_path):
    model = ROOT / "samples" / "models" / "lstm2_bidirectional.xml"
    (tmp_path / "s.toml").write_text(f'[[models]]\npath = "{model}"\ntolerances = {{ "NOPE_1:Y" = [1e-4, 1e-3] }}\n')
    done = irtool("harness", str(tmp_path / "s.toml"), "--report-dir", str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 2 and not (tmp_path / "out" / "results.jsonl").exists()
    assert "tolerances name 'NOPE_1:Y', which lstm2_bidirectional.xml does not have" in done.stderr


def test_a_known_failure_naming_a_models_case_covers_its_nodes(tmp_path):
    """``case = "gru_lengths[*]"`` names the model's job; its node results (``gru_lengths[seed=0]::NODE``)
    are covered by it, as ``gru_lengths[*]::*`` covers them (the run stayed red with a note); an entry
    naming a model whose every node passed is said, to be removed."""
    models = Path(__file__).parent.parent / "samples" / "models"
    (tmp_path / "suite.toml").write_text(f'[suite]\nname = "m"\n[[models]]\npath = "{models / "gru_lengths.xml"}"\n'
                                         f'[[models]]\npath = "{models / "lstm2_bidirectional.xml"}"\n')
    (tmp_path / "known.toml").write_text('[[xfail]]\ncase = "gru_lengths[*]"\nreason = "the CPU lengths bug"\n'
                                         '[[xfail]]\ncase = "lstm2_bidirectional[*]"\nreason = "said to fail"\n')
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(tmp_path / "suite.toml"), "--xfail",
                           str(tmp_path / "known.toml"), "--report-dir", str(tmp_path / "out"), "--no-progress"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].endswith(": 2 pass, 1 xfail"), done.stdout
    assert (f"note: known failure 'lstm2_bidirectional[*]' ({tmp_path / 'known.toml'}) names models whose every "
            "node passed in this run: remove it from the known failures") in done.stdout
    results = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    [known] = [r for r in results if r["verdict"] == "xfail"]
    assert known["case"].startswith(f"gru_lengths[seed=0]{NODE_SEPARATOR}") and known["known"] == "the CPU lengths bug"


def test_a_model_that_cannot_be_read_is_an_error_never_a_pass(tmp_path):
    """OpenVINO's Paddle frontend reads an empty .pdmodel as a model with no outputs: that is a file
    that cannot be read (an error, exit 1 in a suite, 2 for run), not a model with nothing to judge
    (it gave `PASSED: 1 pass, 1 unjudged`, exit 0); an empty file of any format is said to be one."""
    models = Path(__file__).parent.parent / "samples" / "models"
    (tmp_path / "empty.pdmodel").write_bytes(b"")
    (tmp_path / "suite.toml").write_text(f'[suite]\nname = "m"\n[[models]]\npath = "empty.pdmodel"\n'
                                         f'[[models]]\npath = "{models / "lstm2_bidirectional.xml"}"\n')
    done = irtool("harness", str(tmp_path / "suite.toml"), "--report-dir", str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].endswith(": 2 pass, 1 error"), done.stdout
    results = {r["case"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())["results"]}
    said = "an empty file (0 bytes), not a model"
    assert results["empty[seed=0]"]["verdict"] == "error" and said in results["empty[seed=0]"]["message"]
    run = irtool("run", str(tmp_path / "empty.pdmodel"), "-d", "CPU")
    assert run.returncode == 2 and run.stderr == f"irtool: error: {tmp_path / 'empty.pdmodel'}: {said} (a cut-off or " \
                                                 "broken file?)\n", run.stdout + run.stderr
    for suffix in (".onnx", ".xml", ".tflite"):  # every format alike (an empty .onnx was "imports no opset")
        (tmp_path / f"empty{suffix}").write_bytes(b"")
        run = irtool("run", str(tmp_path / f"empty{suffix}"), "-d", "CPU")
        assert run.returncode == 2 and f"empty{suffix}: {said}" in run.stderr, run.stderr
    (tmp_path / "loop.xml").symlink_to(tmp_path / "loop.xml")
    run = irtool("run", str(tmp_path / "loop.xml"), "-d", "CPU")
    assert run.returncode == 2 and run.stderr == f"irtool: error: {tmp_path / 'loop.xml'}: cannot be read: Too many " \
                                                 "levels of symbolic links\n", run.stderr


def test_a_single_node_onnx_model_is_judged_node_by_node_with_an_onnx_reproducer(tmp_path):
    """A user's .onnx of one node is a model like any other: its node is a result of its own
    (``gru[seed=0]::NODE``) and, failing, has a reproducer: the node alone as an ONNX model
    (it was a model-level result saying the node was judged inside the model, with none)."""
    built = irtool("build", "onnx-gru", "--opset", "14", "--hidden-size", "4", "-o", str(tmp_path / "gru.onnx"))
    assert built.returncode == 0, built.stderr
    (tmp_path / "s.toml").write_text('[[models]]\npath = "gru.onnx"\natol = 0.0\nrtol = 0.0\n')
    done = irtool("harness", str(tmp_path / "s.toml"), "--report-dir", str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 1, done.stdout + done.stderr
    [result] = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert result["case"] == f"gru[seed=0]{NODE_SEPARATOR}{result['node']}" and result["op"] == "GRU-14"
    assert result["verdict"] == "fail" and result["reproducer"], result
    folder = tmp_path / "out" / result["reproducer"]
    assert (folder / "model.onnx").is_file()
    again = subprocess.run([sys.executable, "reproduce.py"], cwd=folder, capture_output=True, text=True, timeout=120)
    assert again.returncode == 1, again.stdout + again.stderr  # the mismatch, reproduced alone
