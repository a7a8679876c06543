"""Hostile writes (issue 22, item 2): nothing irtool writes replaces an input of the same command or
a file another tool wrote, and a write that fails (a full disk) never changes a verdict.

Each test works in a sentinel tree (tests/hostile.py): nothing outside its work folder may
change.  Full disks are a 4 KiB tmpfs where the tests run as root (as here and in CI), else
irtool's write-fault hook; the outcome asserted is the same.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import FILLER, Sentinel, full_folder

from irtool.cli.program import main
from irtool.pipeline.build import build_and_save
from irtool.specs.cases import OpCase

LSTM = OpCase("LSTMSequence", {"hidden_size": 4, "direction": "bidirectional"},
              {"batch_size": 2, "seq_length": 3, "input_size": 5})
TIGHT = ("--atol", "0", "--rtol", "0")  # f32 CPU against the reference differs by ~1e-7: a FAIL
SUITE = """
[[grid]]
id = "tight"
op = "LSTMSequence"
attributes = { hidden_size = 4, direction = "bidirectional" }
atol = 0.0
rtol = 0.0
"""
FULL_DISK_WAYS = ["tmpfs", "fault"]  # tmpfs falls back to the fault hook where it cannot be mounted


@pytest.fixture
def sentinel(tmp_path):
    tree = Sentinel(tmp_path)
    yield tree
    tree.check()


@pytest.fixture
def model(sentinel) -> Path:
    return build_and_save(LSTM, sentinel.work / "m.xml")[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def irtool(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *args], capture_output=True, text=True, timeout=600,
                          **kwargs)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["run", *argv])
    out, err = capsys.readouterr()
    if code == 2 and not out:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("irtool: error: ") and "Traceback" not in err, err
    return code, out, err


# ----------------------------------------------------------------------------- inputs are never replaced

def _save_outputs_targets(work: Path, model: Path) -> dict[str, tuple[Path, str]]:
    """Each way to name an input as the --save-outputs file, and the input it names."""
    inputs = work / "in.npz"
    (work / "link.npz").symlink_to(model.name)
    os.link(inputs, work / "hard.npz")
    return {"the model": (model, "the model"), "its weights": (model.with_suffix(".bin"), "the model's weights"),
            "--inputs": (inputs, "the --inputs file"), "a symlink to the model": (work / "link.npz", "the model"),
            "a hard link to --inputs": (work / "hard.npz", "the --inputs file"),
            "by another spelling": (work / "." / ".." / "work" / "in.npz", "the --inputs file")}


@pytest.mark.parametrize("how", ["the model", "its weights", "--inputs", "a symlink to the model",
                                 "a hard link to --inputs", "by another spelling"])
def test_save_outputs_never_replaces_an_input(how, sentinel, model, capsys):
    from irtool.core.npz import write_npz
    from irtool.pipeline.build import build_model
    from irtool.pipeline.inputs import seeded_inputs

    write_npz(sentinel.work / "in.npz", seeded_inputs(build_model(LSTM), seed=0), "inputs")
    target, role = _save_outputs_targets(sentinel.work, model)[how]
    before = {p.name: digest(p) for p in sentinel.work.iterdir() if p.is_file()}
    code, out, err = run(capsys, str(model), "-d", "CPU", "--inputs", str(sentinel.work / "in.npz"),
                         "--save-outputs", str(target))
    assert code == 2 and not out
    assert f"the --save-outputs file would replace {role}" in err and "which this command reads" in err
    assert {p.name: digest(p) for p in sentinel.work.iterdir() if p.is_file()} == before


def test_a_reproducer_folder_never_replaces_the_model_it_came_from(sentinel, model, capsys):
    code, out, _ = run(capsys, str(model), "-d", "CPU", *TIGHT, "--reproducers", str(sentinel.work / "rep"))
    assert code == 1 and "FAIL" in out.splitlines()[-1]
    (folder,) = (sentinel.work / "rep").iterdir()
    before = digest(folder / "model.xml")
    # running the reproducer's own model with the same --reproducers would replace its folder
    code, out, err = run(capsys, str(folder / "model.xml"), "-d", "CPU", *TIGHT, "--reproducers",
                         str(sentinel.work / "rep"))
    assert code == 2 and f"the reproducer folder of node 'LSTMSequence' holds the model {folder / 'model.xml'}" in err
    assert digest(folder / "model.xml") == before


# ----------------------------------------------------------------------------- full disks keep the verdict

@pytest.mark.parametrize("way", FULL_DISK_WAYS)
def test_run_reproducers_on_a_full_disk_still_print_the_fail(way, sentinel, model, capsys, monkeypatch):
    with full_folder(sentinel.work / "disk", monkeypatch, way):
        code, out, err = run(capsys, str(model), "-d", "CPU", *TIGHT, "--reproducers", str(sentinel.work / "disk"))
        lines = out.strip().splitlines()
        assert code == 1 and lines[-1].startswith("FAIL: 3 of 3 outputs outside tolerance"), out + err
        assert lines[-2].startswith(f"NOT WRITTEN: {sentinel.work / 'disk'}/LSTMSequence-")
        assert lines[-2].endswith("the reproducer could not be written (no space left on device)")
        assert "Traceback" not in err and not [p for p in (sentinel.work / "disk").iterdir()
                                                       if p.name != FILLER]
        code, out, _ = run(capsys, str(model), "-d", "CPU", *TIGHT, "--reproducers", str(sentinel.work / "disk"),
                           "--format", "json")
        data = json.loads(out)
        assert code == 1 and data["verdict"] == "fail" and data["reproducers"] == {}
        assert len(data["unwritten"]) == 1 and "no space left on device" in data["unwritten"][0]


@pytest.mark.parametrize("way", FULL_DISK_WAYS)
def test_save_outputs_on_a_full_disk_keeps_the_pass_and_exits_2(way, sentinel, model, capsys, monkeypatch):
    """A PASS whose --save-outputs could not be written exits 2 (the command did not do all it was
    asked), with the verdict printed; a FAIL stays 1."""
    with full_folder(sentinel.work / "disk", monkeypatch, way):
        out_file = sentinel.work / "disk" / "out.npz"
        code, out, _ = run(capsys, str(model), "-d", "CPU", "--save-outputs", str(out_file))
        lines = out.strip().splitlines()
        assert code == 2 and lines[-1].startswith("PASS: 3 of 3 outputs within tolerance"), out
        assert lines[-2] == f"NOT WRITTEN: {out_file}: disk full (no space left on device) while writing the " \
                            f"outputs file"
        code, out, _ = run(capsys, str(model), "-d", "CPU", *TIGHT, "--save-outputs", str(out_file))
        assert code == 1 and out.strip().splitlines()[-1].startswith("FAIL:")
        assert not out_file.exists()


@pytest.mark.parametrize("way", FULL_DISK_WAYS)
def test_a_harness_reproducer_on_a_full_disk_keeps_the_fail_and_resume_keeps_it(way, sentinel, monkeypatch):
    suite = sentinel.work / "suite.toml"
    suite.write_text(SUITE)
    report = sentinel.work / "report"
    with full_folder(report / "reproducers", monkeypatch, way):
        done = irtool("harness", str(suite), "--report-dir", str(report), "--precision", "f32", "--force")
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback" not in done.stderr and "internal error" not in done.stdout
        assert "FAIL: tight[seed=0] on CPU at f32: outside tolerance" in done.stdout
        unwritten = [line for line in done.stdout.splitlines() if line.startswith("NOT WRITTEN: ")]
        assert len(unwritten) == 1 and unwritten[0].startswith("NOT WRITTEN: tight[seed=0] on CPU at f32: ")
        assert "the reproducer could not be written (no space left on device)" in unwritten[0]
        (stored,) = json.loads((report / "results.json").read_text())["results"]
        assert stored["verdict"] == "fail" and stored["reproducer"] is None
        assert "no space left on device" in stored["unwritten"]
        lines = (report / "results.jsonl").read_text().splitlines()
        assert json.loads(lines[1])["verdict"] == "fail"
        done = irtool("harness", str(suite), "--report-dir", str(report), "--precision", "f32", "--resume")
        assert done.returncode == 1 and "FAILED" in done.stdout.splitlines()[-1], done.stdout + done.stderr
        (stored,) = json.loads((report / "results.json").read_text())["results"]
        assert stored["verdict"] == "fail"


def test_a_crashed_jobs_reproducer_on_a_full_disk_keeps_the_crash(sentinel, monkeypatch):
    suite = sentinel.work / "suite.toml"
    suite.write_text(SUITE)
    report = sentinel.work / "report"
    with full_folder(report / "reproducers", monkeypatch, "fault"):
        done = irtool("harness", str(suite), "--report-dir", str(report), "--precision", "f32", "--force",
                      env={**os.environ, "IRTOOL_FAULT": "abort:case=tight*"})
    assert done.returncode == 1 and "CRASH: tight[seed=0] on CPU at f32" in done.stdout, done.stdout + done.stderr
    (stored,) = json.loads((report / "results.json").read_text())["results"]
    assert stored["verdict"] == "crash" and stored["reproducer"] is None
    assert "the reproducer could not be written (no space left on device)" in stored["unwritten"]


def test_the_write_fault_hook_fails_only_the_paths_it_names(tmp_path, monkeypatch):
    from irtool.core.files import FileError, write_atomic

    monkeypatch.setenv("IRTOOL_WRITE_FAULT", f"eio:{tmp_path}/bad*; enospc:{tmp_path}/full/*")
    (tmp_path / "full").mkdir()
    write_atomic(tmp_path / "good.txt", "ok")
    with pytest.raises(FileError, match="bad.txt: cannot write the file \\(Input/output error\\)"):
        write_atomic(tmp_path / "bad.txt", "x")
    with pytest.raises(FileError, match="disk full"):
        write_atomic(tmp_path / "full" / "a.txt", "x")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["full", "good.txt"]  # no temporary left behind


# ----------------------------------------------------------------------------- report dirs: only irtool's files

@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("suite")
    (folder / "suite.toml").write_text('[[grid]]\nid = "gru"\nop = "GRUSequence"\n'
                                       'attributes = { hidden_size = 2, direction = "forward" }\n')
    return folder


def harness(suite: Path, report: Path, *args: str) -> subprocess.CompletedProcess:
    return irtool("harness", str(suite), "--report-dir", str(report), "--precision", "f32", *args)


def _one_line_refusal(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("irtool: error: "), done.stderr
    assert "Traceback" not in done.stderr and not done.stdout
    return lines[0]


@pytest.mark.parametrize("name", ["junit.xml", "report.html", "results.json"])
def test_a_report_file_another_tool_wrote_is_replaced_only_with_force(name, suite_dir, sentinel):
    report = sentinel.work / "report"
    report.mkdir()
    (report / name).write_text("written by another tool\n")
    line = _one_line_refusal(harness(suite_dir / "suite.toml", report))
    assert f"holds {name} (not written by irtool), which this command would replace; --force replaces it" in line
    assert (report / name).read_text() == "written by another tool\n"
    done = harness(suite_dir / "suite.toml", report, "--force")
    assert done.returncode == 0, done.stderr
    assert "written by another tool" not in (report / name).read_text()


def test_a_report_file_rewritten_after_irtool_is_no_longer_irtools(suite_dir, sentinel):
    report = sentinel.work / "report"
    assert harness(suite_dir / "suite.toml", report).returncode == 0
    # irtool's own files: a --resume rewrites them without --force
    assert harness(suite_dir / "suite.toml", report, "--resume").returncode == 0
    (report / "junit.xml").write_text("<testsuites/>\n")  # e.g. pytest --junitxml into the same dir
    line = _one_line_refusal(harness(suite_dir / "suite.toml", report, "--resume"))
    assert "junit.xml (changed since irtool wrote it)" in line
    assert (report / "junit.xml").read_text() == "<testsuites/>\n"


def test_a_folder_of_the_users_named_reproducers_is_not_removed(suite_dir, sentinel):
    report = sentinel.work / "report"
    (report / "reproducers").mkdir(parents=True)
    (report / "reproducers" / "mine.txt").write_text("keep me")
    line = _one_line_refusal(harness(suite_dir / "suite.toml", report))
    assert "reproducers/ (not made by irtool)" in line and (report / "reproducers" / "mine.txt").exists()


def test_a_symlinked_reproducers_folder_is_refused_even_with_force(suite_dir, sentinel):
    report = sentinel.work / "report"
    report.mkdir()
    (report / "reproducers").symlink_to(sentinel.outside)
    for extra in ((), ("--force",)):
        line = _one_line_refusal(harness(suite_dir / "suite.toml", report, *extra))
        assert "a symlink where irtool keeps its reproducers folder" in line


@pytest.mark.parametrize("where", ["suite in reproducers", "xfail is junit.xml", "baseline is results.json"])
def test_a_report_dir_never_replaces_the_runs_own_inputs(where, suite_dir, sentinel):
    report = sentinel.work / "report"
    suite = suite_dir / "suite.toml"
    args: tuple[str, ...] = ()
    if where == "suite in reproducers":
        (report / "reproducers").mkdir(parents=True)
        suite = report / "reproducers" / "suite.toml"
        suite.write_text((suite_dir / "suite.toml").read_text())
        says = "the reproducers folder of the report dir holds the suite"
    elif where == "xfail is junit.xml":
        report.mkdir()
        (report / "junit.xml").write_text('[[xfail]]\ncase = "nothing"\nreason = "r"\n')
        args = ("--xfail", str(report / "junit.xml"))
        says = "the junit.xml would replace the known-failures file"
    else:
        assert harness(suite, report).returncode == 0
        args = ("--baseline", str(report / "results.json"), "--resume")
        says = "the results.json would replace the baseline"
    before = {p: digest(p) for p in report.rglob("*") if p.is_file()}
    line = _one_line_refusal(harness(suite, report, *args))
    assert says in line, line
    assert {p: digest(p) for p in report.rglob("*") if p.is_file()} == before


# ----------------------------------------------------------------------------- report render / merge

def test_merge_never_replaces_a_shard_and_render_keeps_foreign_reports(suite_dir, sentinel, capsys):
    shard = sentinel.work / "shard"
    assert harness(suite_dir / "suite.toml", shard).returncode == 0
    other = sentinel.work / "other"
    other.mkdir()
    (other / "results.json").write_bytes((shard / "results.json").read_bytes())
    before = digest(shard / "results.json")
    assert main(["report", "merge", str(shard), str(other / "results.json"), "-o", str(shard)]) == 2
    err = capsys.readouterr().err
    assert "the report would replace the results file" in err and digest(shard / "results.json") == before
    assert main(["report", "merge", str(shard), "-o", str(shard)]) == 2  # one shard merged onto itself too
    assert "the report would replace the results file" in capsys.readouterr().err
    assert digest(shard / "results.json") == before
    foreign = sentinel.work / "foreign"
    foreign.mkdir()
    (foreign / "report.html").write_text("<p>another tool's page</p>")
    assert main(["report", "render", str(shard), "-o", str(foreign)]) == 2
    assert "report.html (not written by irtool)" in capsys.readouterr().err
    assert (foreign / "report.html").read_text() == "<p>another tool's page</p>"
    assert main(["report", "render", str(shard), "-o", str(foreign), "--force"]) == 0
    assert main(["report", "render", str(shard), "-o", str(foreign)]) == 0  # now irtool's own
    assert main(["report", "render", str(shard / "results.jsonl"), "-o", str(shard)]) == 0  # its own dir


# ----------------------------------------------------------------------------- reduce

def test_reduce_never_replaces_the_reproducer_it_reads(sentinel, capsys):
    from irtool.jobs.records import SuiteCase, case_to_json
    from irtool.pipeline.build import build_model
    from irtool.pipeline.inputs import seeded_inputs
    from irtool.pipeline.reproducer import write_reproducer

    model = build_model(OpCase("RNNCell", {"hidden_size": 2}))
    folder = sentinel.work / "out" / "reproducer"
    write_reproducer(folder, model=model, inputs=seeded_inputs(model, seed=0), expected=None, actual=None,
                     device="CPU", precision="f32", config={}, tolerances={"Ho": (1e-5, 1e-4)},
                     case=case_to_json(SuiteCase(id="cell", suite="s", op="RNNCell", version=0)), result=None)
    before = {p.name: digest(p) for p in folder.iterdir()}
    code = main(["reduce", str(folder), "-d", "CPU", "-o", str(sentinel.work / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "the reduced reproducer folder holds the case's model" in err, err
    assert {p.name: digest(p) for p in folder.iterdir()} == before


def test_stored_results_keep_what_was_not_written():
    from irtool.jobs.records import CaseResult, result_from_json, result_to_json

    result = CaseResult("c", "s", "CPU", "f32", "fail", unwritten="r: no space left on device")
    assert result_from_json(json.loads(json.dumps(result_to_json(result)))) == result
    with pytest.raises(Exception, match="unwritten"):
        result_from_json({**result_to_json(result), "unwritten": 5})
