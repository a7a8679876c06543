"""irtool harness --keep-outputs and irtool report rejudge: a run's outputs judged again without its
device, real OpenVINO on CPU (the recording is the CPU's own outputs; the re-judgment reads them back)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SUITE = f"""\
[suite]
name = "kept"

[[grid]]
id = "gru"
op = "GRUSequence-5"
attributes = {{ hidden_size = 4, direction = ["forward", "bidirectional"] }}
sizes = {{ batch_size = 2, seq_length = 3, input_size = 3 }}

# a model converted by torch.onnx (samples/models): two LSTM nodes, a result each
[[models]]
id = "lstm2-onnx"
path = "{ROOT / 'samples' / 'models' / 'lstm2_bidirectional.onnx'}"
shapes = {{ x = [6, 3, 5] }}
"""


def irtool(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *args], capture_output=True, text=True, timeout=600,
                          **kwargs)


def results(folder: Path) -> dict:
    return {(r["case"], r["device"], r["precision"]): r for r in json.loads((folder / "results.json").read_text())["results"]}


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """A run of the suite on CPU and AUTO:CPU with --keep-outputs (every job passes)."""
    folder = tmp_path_factory.mktemp("kept")
    (folder / "suite.toml").write_text(SUITE)
    done = irtool("harness", str(folder / "suite.toml"), "-d", "CPU,AUTO:CPU", "--report-dir", str(folder / "run"),
                  "--keep-outputs", "--no-progress", "-j", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


def test_every_job_is_kept_and_what_cases_share_is_kept_once(kept):
    jobs = sorted((kept / "run" / "kept").glob("*/job.json"))
    assert len(jobs) == 6  # 3 cases on 2 devices, each passed
    shared = kept / "run" / "kept" / "shared"
    # the ONNX model once for both devices, the inputs of each case once for both devices
    assert [p.name for p in shared.glob("*/*")] == ["lstm2_bidirectional.onnx"]
    assert len(list(shared.glob("*.npz"))) == 3
    record = json.loads(jobs[0].read_text())
    assert {r["verdict"] for r in record["results"]} == {"pass"}
    with np.load(jobs[0].parent / "outputs.npz") as outputs:
        assert "irtool:run" in outputs.files  # the record of the run, as --save-outputs writes it


def test_a_kept_run_rejudged_gives_the_same_verdicts_and_says_where_from(kept):
    out = kept / "rejudged"
    done = irtool("report", "rejudge", str(kept / "run"), "-o", str(out), "-j", "2", "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdicts changed against the recorded ones: 0, 8 unchanged" in done.stdout
    before, after = results(kept / "run"), results(out)
    assert before.keys() == after.keys() and len(after) == 8  # a result per LSTM node of the model
    for key, result in after.items():
        for name in ("verdict", "max_abs", "implementations", "op", "effective_precision"):
            assert result[name] == before[key][name], (key, name)
        assert result["replayed"].startswith(f"outputs from {kept / 'run' / 'kept'}/")
        assert "what each node ran as: the record's" in result["replayed"]
    assert "replayed" not in before[next(iter(before))]  # a run of its own device stores what it always did
    assert (out / "junit.xml").read_text().count("replayed: outputs from ") == 8
    assert f"re-judged from</td><td>{kept / 'run'}: 0 verdicts changed" in (out / "report.html").read_text()
    assert json.loads((out / "results.json").read_text())["rejudged"]["unchanged"] == 8


def test_a_tampered_output_fails_on_rejudge(kept, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(kept / "run", copy)
    target = next((copy / "kept").glob("gru_direction=forward*on_CPU_at_f32*/outputs.npz"))
    arrays = dict(np.load(target))
    arrays["Y"] = arrays["Y"].copy()
    arrays["Y"].flat[5] += 0.25  # one element
    np.savez(target, **arrays)
    done = irtool("report", "rejudge", str(copy), "-o", str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "verdicts changed against the recorded ones: 1 (pass -> fail 1), 7 unchanged" in done.stdout
    line = next(line for line in done.stdout.splitlines() if line.startswith("  gru[direction=forward"))
    assert "on CPU at f32: pass -> fail: outside tolerance: Y (max abs 0.25, 1/24)" in line
    failed = [r for r in results(tmp_path / "out").values() if r["verdict"] == "fail"]
    assert [(r["case"], r["device"]) for r in failed] == [("gru[direction=forward,seed=0]", "CPU")]


@pytest.fixture(scope="module")
def reproducers(tmp_path_factory):
    """A harness run whose device gave one case's outputs off by 0.5 (IRTOOL_FAULT skew): its
    reproducer folders hold actual.npz without a record of the run, as runs before --save-outputs."""
    import os

    folder = tmp_path_factory.mktemp("reproducers")
    (folder / "suite.toml").write_text(SUITE)
    env = {**os.environ, "IRTOOL_FAULT": "skew:0.5,case=gru[direction=bidirectional*"}
    done = irtool("harness", str(folder / "suite.toml"), "--report-dir", str(folder / "run"), "--no-progress",
                  env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    return folder


def test_a_tree_of_reproducer_folders_is_rejudged_with_the_record_its_case_json_gives(reproducers):
    tree = reproducers / "run" / "reproducers"
    (folder,) = tree.iterdir()
    with np.load(folder / "actual.npz") as actual:
        assert not [key for key in actual.files if key.startswith("irtool:")]  # no record in the file
    out = reproducers / "rejudged"
    done = irtool("report", "rejudge", str(tree), "-o", str(out), "--no-progress")
    assert done.returncode == 1, done.stdout + done.stderr  # still off by 0.5
    assert "1 jobs from" in done.stdout and "verdicts changed against the recorded ones: 0, 1 unchanged" in done.stdout
    (result,) = results(out).values()
    assert result["case"] == "gru[direction=bidirectional,seed=0]" and result["verdict"] == "fail"
    assert result["replayed"].startswith(f"outputs from {folder / 'actual.npz'} (recorded on CPU at f32, openvino ")
    # other tolerances: the verdict changes, and the change says what was recorded
    loose = irtool("report", "rejudge", str(reproducers / "run"), "-o", str(reproducers / "loose"), "--atol", "1",
                   "--no-progress")
    assert loose.returncode == 0, loose.stdout + loose.stderr
    assert "verdicts changed against the recorded ones: 1 (fail -> pass 1), 0 unchanged" in loose.stdout
    assert "(recorded: outside tolerance: " in loose.stdout


def _broken_inputs(root: Path) -> tuple[list[str], str]:
    run = root / "broken"
    shutil.copytree(root / "run", run)
    for shared in (run / "kept" / "shared").glob("*.npz"):
        shared.unlink()
    return [str(run)], "its inputs "


def _broken_json(root: Path) -> tuple[list[str], str]:
    run = root / "badjson"
    shutil.copytree(root / "run", run)
    next((run / "kept").glob("*/job.json")).write_text("{not json")
    return [str(run)], "job.json: not JSON"


def _nothing(root: Path) -> tuple[list[str], str]:
    shutil.rmtree(root / "run" / "kept")  # a run without --keep-outputs whose jobs all passed: no reproducers
    return [str(root / "run")], "nothing to re-judge"


@pytest.mark.parametrize("make", [
    lambda root: ([str(root / "absent")], "absent: no such folder; expected a report dir written by irtool harness "
                                          "--keep-outputs"),
    _nothing,
    lambda root: ([str(root / "run"), "-o", str(root / "run")], "would write over what is re-judged"),
    _broken_inputs,
    _broken_json,
])
def test_what_cannot_be_rejudged_is_one_line_and_exit_2(kept, tmp_path, make):
    root = tmp_path / "root"
    root.mkdir()
    shutil.copytree(kept / "run", root / "run")
    args, message = make(root)
    if "-o" not in args:
        args += ["-o", str(tmp_path / "out")]
    done = irtool("report", "rejudge", *args, "--no-progress")
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_job_of_several_shapes_in_order_is_not_kept_and_says_so(tmp_path):
    (tmp_path / "suite.toml").write_text("""\
[suite]
name = "shapes"

[[grid]]
id = "dynamic"
op = "GRUSequence-5"
attributes = { hidden_size = 2, direction = "forward" }
sizes = { batch_size = 3, seq_length = 2, input_size = 3 }
dynamic = ["batch_size"]
infer_sizes = [{ batch_size = 3 }, { batch_size = 2 }]
lengths = "full"
""")
    done = irtool("harness", str(tmp_path / "suite.toml"), "--report-dir", str(tmp_path / "run"), "--keep-outputs",
                  "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr  # the verdict stands
    assert "--keep-outputs: not kept: the job infers 2 shapes in order (infer_sizes)" in done.stdout  # NOT WRITTEN: ...
    assert not list((tmp_path / "run" / "kept").glob("*/job.json"))
    (result,) = results(tmp_path / "run").values()
    assert result["verdict"] == "pass" and "not kept" in result["unwritten"]


def test_a_kept_output_that_cannot_be_written_leaves_the_verdict_and_says_why(tmp_path):
    import os

    (tmp_path / "suite.toml").write_text(SUITE)
    env = {**os.environ, "IRTOOL_WRITE_FAULT": "enospc:*/kept/gru_direction=forward*/outputs.npz"}
    done = irtool("harness", str(tmp_path / "suite.toml"), "--report-dir", str(tmp_path / "run"), "--keep-outputs",
                  "--no-progress", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("NOT WRITTEN: gru[direction=forward"))
    assert "--keep-outputs: not kept: " in line
    failed = next(r for r in results(tmp_path / "run").values() if r["unwritten"])
    assert failed["verdict"] == "pass" and failed["unwritten"].endswith(
        "outputs.npz: disk full (no space left on device) while writing the kept outputs file")
    assert len(list((tmp_path / "run" / "kept").glob("*/job.json"))) == 2  # the other two jobs


def test_a_case_built_otherwise_now_is_an_error_not_a_verdict(kept, tmp_path):
    """A grid case is kept as its case; the digest of its node's arrays says when this irtool builds
    another model from it (here: the digest changed, as another build would change it)."""
    copy = tmp_path / "run"
    shutil.copytree(kept / "run", copy)
    target = next((copy / "kept").glob("gru_direction=forward*on_CPU_at_f32*/job.json"))
    record = json.loads(target.read_text())
    assert len(record["model_digest"]) == 32
    record["model_digest"] = "0" * 32
    target.write_text(json.dumps(record))
    done = irtool("report", "rejudge", str(copy), "-o", str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 1, done.stdout + done.stderr
    (error,) = [r for r in results(tmp_path / "out").values() if r["verdict"] != "pass"]
    assert error["verdict"] == "error" and "is not the one the device ran (its weights differ" in error["message"]


RECORDED_CASES = ROOT / "tests" / "data" / "recordings" / "cpu-bf16-avx512-openvino-2026.4.1" / "single-op" / "cases"


@pytest.fixture(scope="module")
def run_reproducers(tmp_path_factory):
    """The reproducer folder irtool run --reproducers writes of a node it failed (every tolerance 0:
    the CPU's f32 LSTM differs from the reference by an ulp or two)."""
    from irtool.cli.program import main

    folder = tmp_path_factory.mktemp("run-reproducers")
    code = main(["run", str(RECORDED_CASES / "069_lstm_sequence.xml"), "-d", "CPU", "--inputs",
                 str(RECORDED_CASES / "069_lstm_sequence.inputs.npz"), "--atol", "0", "--rtol", "0",
                 "--reproducers", str(folder / "tree"), "--format", "json"])
    assert code == 1
    return folder / "tree"


def _as_written_before(tree: Path) -> None:
    """case.json as irtool run wrote it before it kept the job and how it ran beside the result."""
    (case,) = tree.glob("*/case.json")
    data = json.loads(case.read_text())
    data["result"] = {k: data["result"][k] for k in ("verdict", "message", "node", "model")}
    case.write_text(json.dumps(data))


@pytest.mark.parametrize("written", ["now", "before"])
def test_a_reproducer_folder_irtool_run_wrote_is_rejudged(run_reproducers, tmp_path, capsys, written):
    from irtool.cli.program import main

    tree = tmp_path / "tree"
    shutil.copytree(run_reproducers, tree)
    if written == "before":
        _as_written_before(tree)
    code = main(["report", "rejudge", str(tree), "-o", str(tmp_path / "out"), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, out + err  # each output judged with the default f32 tolerance: within it
    assert "verdicts changed against the recorded ones: 1 (fail -> pass 1), 0 unchanged" in out, out
    # the change is the tolerance's alone, and said so (it was not: a fail -> pass of the same outputs)
    assert "; judged at other tolerances: Y at atol 0, rtol 0 then, atol 1e-05, rtol 0.0001 now (f32 default)" in out
    (result,) = results(tmp_path / "out").values()
    assert (result["case"], result["node"], result["verdict"]) == ("069_lstm_sequence::node", "node", "pass")
    assert " (recorded on CPU at f32, openvino " in result["replayed"]
    if written == "now":  # what the node ran as, kept by the folder
        assert result["implementations"] == {"LSTMSequence": "RNNSeq (f32)"}


@pytest.mark.parametrize("content, said", [
    ("{not json", "case.json: not JSON"),
    ("[1]", "case.json: expected a JSON object"),
    ('{"case": 5, "device": "CPU", "precision": "f32", "result": {}}', "not what irtool harness or irtool run"),
    ('{"case": {"id": "a", "suite": "run", "bogus": 1}, "device": "CPU", "precision": "f32", "result": {}}',
     "unknown case field 'bogus'"),
    ('{"case": {"id": "a", "suite": "run"}, "device": "CPU", "precision": "f32", "result": {"verdict": "zz"}}',
     "unknown verdict 'zz'"),
    ('{"case": {"id": "a", "suite": "run"}, "precision": "f32", "result": {"verdict": "fail"}}', "'device'"),
])
def test_an_unreadable_case_json_is_one_line_naming_it(run_reproducers, tmp_path, capsys, content, said):
    from irtool.cli.program import main

    tree = tmp_path / "tree"
    shutil.copytree(run_reproducers, tree)
    (case,) = tree.glob("*/case.json")
    case.write_text(content)
    code = main(["report", "rejudge", str(tree), "-o", str(tmp_path / "out"), "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    assert err.startswith(f"irtool: error: {case}: ") and said in err and "internal error" not in err, err
    assert len(err.strip().splitlines()) == 1


def _written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize("make, said", [
    (lambda root: root / "absent", "absent: no such folder"),
    (lambda root: _written(root / "results.json", "{}"),
     "results.json: is a file (results.json), not a folder: give the folder that holds it ("),
    (lambda root: _written(root / "notes.txt", ""), "notes.txt: is a file, not a folder"),
    (lambda root: __import__("os").mkfifo(root / "fifo") or root / "fifo", "fifo: is a FIFO, not a folder"),
])
def test_a_path_that_is_not_a_folder_is_said_for_what_it_is(tmp_path, make, said):
    from irtool.harness.rejudge import RejudgeError, find_replays

    with pytest.raises(RejudgeError) as caught:
        find_replays(make(tmp_path))
    assert said in caught.value.message and "expected a report dir written by irtool harness" in caught.value.message


def test_irtool_run_of_a_reproducer_folder_points_to_rejudge(run_reproducers, capsys):
    from irtool.cli.program import main

    (folder,) = run_reproducers.iterdir()
    assert main(["run", str(folder), "-d", "CPU"]) == 2
    out, err = capsys.readouterr()
    assert not out and len(err.strip().splitlines()) == 1
    assert f"{folder}: is a reproducer folder (it holds case.json), not a model: irtool report rejudge {folder}" in err
    assert f"irtool run {folder / 'model.xml'} -d DEVICE --inputs {folder / 'inputs.npz'}" in err
