"""Nothing lost: a run killed midway is continued by --resume without running a finished case
twice; an interrupted run (SIGINT, SIGTERM) writes partial reports.  Real harness processes."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from irtool.cli import common
from irtool.core import interrupts
from irtool.harness.store import read_jsonl

CASES = 40
SUITE = f"""
[suite]
name = "resume"
[[grid]]
id = "cell"
op = "RNNCell"
attributes = {{ hidden_size = {list(range(1, CASES + 1))} }}
"""


def harness(folder: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "irtool", "harness", str(folder / "suite.toml"), "--report-dir",
            str(folder / "out"), "--no-progress", *extra]


def jsonl_results(folder: Path) -> list[dict]:
    lines = (folder / "out" / "results.jsonl").read_text().splitlines()
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a torn last line
    return [r for r in records if "verdict" in r]


def start_and_stop(folder: Path, after: int, how: int) -> subprocess.Popen:
    """Start a run and send ``how`` once ``after`` results are stored."""
    (folder / "suite.toml").write_text(SUITE)
    process = subprocess.Popen(harness(folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    jsonl = folder / "out" / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if jsonl.is_file() and len(jsonl_results(folder)) >= after:
            break
        if process.poll() is not None:
            pytest.fail(f"the run ended before it could be stopped: {process.communicate()}")
        time.sleep(0.01)
    if how == signal.SIGKILL:
        os.killpg(process.pid, signal.SIGKILL)  # the harness and its worker, as kill -9 would
    else:
        os.kill(process.pid, how)
    process.wait(timeout=60)
    return process


def test_killed_run_resumes_without_redoing_or_losing_a_case(tmp_path):
    process = start_and_stop(tmp_path, after=5, how=signal.SIGKILL)
    assert process.returncode == -signal.SIGKILL
    before = {r["case"]: r for r in jsonl_results(tmp_path)}
    assert 5 <= len(before) < CASES
    assert read_jsonl(tmp_path / "out" / "results.jsonl").partial  # no end line: the run did not end
    with open(tmp_path / "out" / "results.jsonl", "a") as handle:
        handle.write('{"case": "cell[hidden_size=9')  # a line the kill tore in half

    done = subprocess.run(harness(tmp_path, "--resume"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{CASES} jobs, {CASES - len(before)} run now, {len(before)} kept from the earlier run" in done.stdout
    stored = Counter(r["case"] for r in jsonl_results(tmp_path))
    assert len(stored) == CASES and set(stored.values()) == {1}, "a finished case ran twice"
    final = json.loads((tmp_path / "out" / "results.json").read_text())
    assert final["partial"] is False and final["summary"] == {"pass": CASES}
    whole = read_jsonl(tmp_path / "out" / "results.jsonl")  # the resumed run ended it: report render reads it whole
    assert not whole.partial and len(whole.results) == CASES
    by_case = {r["case"]: r for r in final["results"]}
    assert [r["case"] for r in final["results"]] == [f"cell[hidden_size={k},seed=0]" for k in range(1, CASES + 1)]
    for case, record in before.items():
        assert by_case[case]["time"] == record["time"], f"{case} was run again or changed"


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_run_writes_partial_reports_and_says_how_to_go_on(tmp_path, how):
    process = start_and_stop(tmp_path, after=3, how=how)
    stdout, stderr = process.communicate()
    assert process.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr
    assert "interrupted" in stderr and "--resume" in stderr
    final = json.loads((tmp_path / "out" / "results.json").read_text())
    assert final["partial"] is True and 3 <= len(final["results"]) < CASES
    ran = len(final["results"])
    assert re.search(rf"^INTERRUPTED in [\d.]+ s: {ran} pass; {CASES - ran} of {CASES} jobs not run$", stdout,
                     re.MULTILINE), stdout
    assert (tmp_path / "out" / "junit.xml").is_file() and (tmp_path / "out" / "report.html").is_file()


@pytest.mark.parametrize("ends", ["whole", "with an error"])
def test_an_interrupt_during_a_held_step_waits_for_its_end(monkeypatch, ends):
    """What records a result (a line of results.jsonl, then the reports' list) is held whole: an
    interrupt that lands between the two is raised after both, so the reports never lack a result
    the .jsonl holds; a step that ends with an error of its own (a full disk) stops the work with it."""
    monkeypatch.setattr(common, "_last_interrupt", [float("-inf")])
    previous = signal.signal(signal.SIGUSR1, common.interrupt_once)
    done = []
    try:
        with pytest.raises(KeyboardInterrupt if ends == "whole" else OSError):
            with interrupts.held():
                os.kill(os.getpid(), signal.SIGUSR1)
                done.append("after the interrupt")
                if ends != "whole":
                    raise OSError("no space left on device")
        assert done == ["after the interrupt"]
        monkeypatch.setattr(common, "_last_interrupt", [float("-inf")])
        with pytest.raises(KeyboardInterrupt):  # outside a held step, at once
            os.kill(os.getpid(), signal.SIGUSR1)
            done.append("not reached")
        assert done == ["after the interrupt"]
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_resume_refuses_a_report_dir_of_another_run(tmp_path):
    (tmp_path / "suite.toml").write_text(SUITE)
    subprocess.run(harness(tmp_path, "--shard", "1/8"), capture_output=True, text=True, timeout=300, check=True)
    done = subprocess.run(harness(tmp_path, "--resume", "--precision", "bf16"), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2
    assert "cannot resume: it holds a run of other jobs (devices, precisions, shard or cases differ)" in done.stderr


KNOWN = """
[suite]
name = "known"
[[grid]]
id = "tight"
op = "RNNSequence"
attributes = { hidden_size = 4, direction = "forward" }
atol = 0.0
rtol = 0.0
[[grid]]
id = "fine"
op = "RNNSequence"
attributes = { hidden_size = 3, direction = "forward" }
"""


def test_resume_and_render_apply_the_known_failures_of_now_to_the_raw_verdicts(tmp_path):
    """Results keep what each job found; --resume applies the known-failures file as it is now (an
    edited file changes the verdicts of kept results), and report render --xfail applies another."""
    (tmp_path / "suite.toml").write_text(KNOWN)
    known = tmp_path / "known.toml"
    known.write_text('[[xfail]]\ncase = "tight*"\nreason = "no tolerance"\nissue = "BUG-1"\n')
    done = subprocess.run(harness(tmp_path, "--xfail", str(known)), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    [stored] = [r for r in jsonl_results(tmp_path) if r["case"].startswith("tight")]
    assert (stored["verdict"], stored["raw_verdict"], stored["known"]) == ("xfail", "fail", "no tolerance")
    assert stored["raw_message"].startswith("outside tolerance: Y")

    known.write_text('[[xfail]]\ncase = "fine*"\nreason = "said to fail"\n')  # the entry moved to the other case
    done = subprocess.run(harness(tmp_path, "--xfail", str(known), "--resume"), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    verdicts = {r["case"]: (r["verdict"], r["issue"]) for r in
                json.loads((tmp_path / "out" / "results.json").read_text())["results"]}
    assert verdicts == {"tight[seed=0]": ("fail", None), "fine[seed=0]": ("xpass", None)}
    assert "0 run now, 2 kept from the earlier run" in done.stdout

    first = tmp_path / "first.toml"
    first.write_text('[[xfail]]\ncase = "tight*"\nreason = "no tolerance"\nissue = "BUG-1"\n')
    render = subprocess.run([sys.executable, "-m", "irtool", "report", "render", str(tmp_path / "out"), "-o",
                             str(tmp_path / "again"), "--xfail", str(first)], capture_output=True, text=True,
                            timeout=300)
    assert render.returncode == 0, render.stdout + render.stderr
    results = json.loads((tmp_path / "again" / "results.json").read_text())["results"]
    verdicts = {r["case"]: (r["verdict"], r["issue"]) for r in results}
    assert verdicts == {"tight[seed=0]": ("xfail", "BUG-1"), "fine[seed=0]": ("pass", None)}
    [tight] = [r for r in results if r["case"] == "tight[seed=0]"]
    assert tight["message"].startswith("no tolerance (known failure; fail: outside tolerance: Y")


SMALL = """
[suite]
name = "small"
[[grid]]
id = "cell"
op = "RNNCell"
attributes = { hidden_size = [1, 2, 3] }
sizes = { batch_size = BATCH }
"""


def _small_run(folder: Path, batch: int = 2) -> list[str]:
    """A finished run of SMALL (3 jobs) in folder/out; the lines of its results.jsonl."""
    (folder / "suite.toml").write_text(SMALL.replace("BATCH", str(batch)))
    done = subprocess.run(harness(folder), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return (folder / "out" / "results.jsonl").read_text().splitlines()


def _resume(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(harness(folder, "--resume"), capture_output=True, text=True, timeout=300)


def test_resume_refuses_a_duplicated_result_line_naming_it(tmp_path):
    """A result line copied (or forged) into results.jsonl would be counted twice (4 passes for 3
    jobs; a forged duplicate adds a FAIL): --resume and report render refuse it, naming the line."""
    lines = _small_run(tmp_path)
    (tmp_path / "out" / "results.jsonl").write_text("\n".join(lines + [lines[1]]) + "\n")
    done = _resume(tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    copied = len(lines) + 1  # the header, 3 results, the end of the run, then the copy
    assert done.stderr.startswith(f"irtool: error: {tmp_path / 'out' / 'results.jsonl'}:{copied}: a second result "
                                  "of cell[hidden_size=1,seed=0] on CPU at f32 (the first is on line 2)"), done.stderr
    assert "--resume cannot continue it" in done.stderr and "Traceback" not in done.stderr
    render = subprocess.run([sys.executable, "-m", "irtool", "report", "render",
                             str(tmp_path / "out" / "results.jsonl"), "-o", str(tmp_path / "again")],
                            capture_output=True, text=True, timeout=300)
    assert render.returncode == 2 and f":{copied}: a second result of" in render.stderr, render.stdout + render.stderr


def test_resume_refuses_a_header_without_its_digests(tmp_path):
    """A header stripped of its suite and matrix digests says nothing of what its results are of: a
    suite edited since (batch 2 -> 3, the same case ids) must not get the old results mixed in."""
    lines = _small_run(tmp_path, batch=2)
    header = json.loads(lines[0])
    del header["run"]["matrix"], header["run"]["suite_digests"]
    (tmp_path / "out" / "results.jsonl").write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    (tmp_path / "suite.toml").write_text(SMALL.replace("BATCH", "3"))
    done = _resume(tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot resume: its run header has no suite_digests and no matrix (irtool writes them)" in done.stderr


def test_resume_refuses_a_result_of_a_job_not_in_the_run(tmp_path):
    lines = _small_run(tmp_path)
    foreign = json.loads(lines[2])
    foreign["case"] = "cell[hidden_size=9,seed=0]"
    (tmp_path / "out" / "results.jsonl").write_text("\n".join(lines[:2] + [json.dumps(foreign)] + lines[3:]) + "\n")
    done = _resume(tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert ":3: a result of cell[hidden_size=9,seed=0] on CPU at f32, which is not a job of this run" in done.stderr


def test_resume_keeps_a_models_node_results_without_running_it_again(tmp_path):
    """A model's job stores one result per node (case MODEL[seed=0]::NODE): --resume keeps them as
    that job's, rather than running it again and appending a second result of every node."""
    suite = Path(__file__).parent.parent / "samples" / "suites" / "models.toml"
    command = [sys.executable, "-m", "irtool", "harness", str(suite), "--report-dir", str(tmp_path / "out"),
               "--no-progress"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    stored = (tmp_path / "out" / "results.jsonl").read_text()
    again = subprocess.run(command + ["--resume"], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "5 jobs, 0 run now, 5 kept from the earlier run" in again.stdout
    assert (tmp_path / "out" / "results.jsonl").read_text() == stored
    assert again.stdout.splitlines()[-1].endswith(first.stdout.splitlines()[-1].split(": ", 1)[1])
