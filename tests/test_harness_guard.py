"""What a harness run guards against, with the real harness and OpenVINO: two runs on one
report dir, an earlier run's results (a baseline among them) replaced without --force, a
resume of an edited suite, workers outliving a kill -9, too many workers, a typo in a
per-output tolerance, a full disk."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from irtool.harness.lock import LOCK_NAME, ReportDirLock

SUITE = """
[suite]
name = "guard"
[[grid]]
id = "cell"
op = "RNNCell"
attributes = { hidden_size = [1, 2, 3] }
"""


def harness(folder: Path, *extra: str, suite: Path | None = None, env: dict | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess:
    suite = suite or folder / "suite.toml"
    if not suite.exists():
        suite.write_text(SUITE)
    command = [sys.executable, "-m", "irtool", "harness", str(suite), "--report-dir", str(folder / "out"),
               "--no-progress", *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def one_error_line(done: subprocess.CompletedProcess, says: str) -> None:
    """Exit 2 with one error line (a usage error also shows the usage), no traceback."""
    assert done.returncode == 2, done.stdout + done.stderr
    assert re.search(says, done.stderr), done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("irtool: error:")]
    assert len(errors) == 1 and "internal error" not in done.stderr and "Traceback" not in done.stderr


def descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid``, by pid, with its name (workers are ``irtool-worker``, forked
    from their pool's ``irtool-zygote`` on Linux)."""
    parents, names = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                name, fields = (entry / "stat").read_text().rsplit(")", 1)
            except OSError:
                continue
            parents[int(entry.name)], names[int(entry.name)] = int(fields.split()[1]), name.split("(", 1)[1]
    below = {pid}
    while True:
        more = {child for child, parent in parents.items() if parent in below} - below
        if not more:
            return {child: names[child] for child in below - {pid}}
        below |= more


def alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it is dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# ----------------------------------------------------------------------------- the report dir

def test_a_second_run_on_a_locked_dir_refuses_naming_the_first(tmp_path):
    (tmp_path / "out").mkdir()
    lock = ReportDirLock.acquire(tmp_path / "out")  # this process is "the first run"
    try:
        done = harness(tmp_path)
    finally:
        lock.release()
    one_error_line(done, rf"another irtool harness run is using this report dir \(pid {os.getpid()} on .*, started ")
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_a_lock_left_by_a_dead_run_is_taken_over(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / LOCK_NAME).write_text(json.dumps({"pid": 2 ** 22 + 1, "host": "gone", "started": "x"}))
    done = harness(tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "out" / LOCK_NAME).exists()


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    """A folder holding suite.toml and out/, a finished harness run of it (made once: the tests
    that start from an earlier run each get a copy)."""
    folder = tmp_path_factory.mktemp("finished")
    done = harness(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


def earlier_run(finished_run: Path, tmp_path: Path) -> None:
    """tmp_path holds a copy of the finished run: its suite, and out/ as that run left it."""
    shutil.copytree(finished_run, tmp_path, dirs_exist_ok=True)
    assert not (tmp_path / "out" / LOCK_NAME).exists() and (tmp_path / "out" / "results.json").is_file()


def test_an_earlier_run_is_kept_unless_forced(tmp_path, finished_run):
    earlier_run(finished_run, tmp_path)
    before = (tmp_path / "out" / "results.json").read_bytes()
    one_error_line(harness(tmp_path), r"out holds a run started .* of .*suite.toml; --resume continues it, --force "
                                      r"replaces it, or give this run another --report-dir")
    assert (tmp_path / "out" / "results.json").read_bytes() == before
    done = harness(tmp_path, "--force")
    assert done.returncode == 0 and re.search(r"^PASSED in [\d.]+ s: 3 pass$", done.stdout, re.MULTILINE)


def test_a_baseline_in_the_report_dir_is_read_before_it_is_replaced(tmp_path, finished_run):
    earlier_run(finished_run, tmp_path)
    one_error_line(harness(tmp_path, "--baseline", str(tmp_path / "out")), "out holds a run started")
    done = harness(tmp_path, "--baseline", str(tmp_path / "out"), "--force")
    assert done.returncode == 0, done.stderr
    assert re.search(r"baseline|regress|no change", done.stdout, re.IGNORECASE), done.stdout


def test_a_missing_baseline_stops_the_run_before_it_starts(tmp_path):
    one_error_line(harness(tmp_path, "--baseline", str(tmp_path / "nope" / "results.json")), "no such results file")
    assert not (tmp_path / "out" / "results.jsonl").exists()


# ----------------------------------------------------------------------------- resume

def test_resume_compares_what_the_run_means(tmp_path):
    assert harness(tmp_path, "--precision", "f32,bf16").returncode == 0
    # the same suite by another path, precisions listed in another order: the same run
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "suite.toml").symlink_to(tmp_path / "suite.toml")
    same = harness(tmp_path, "--resume", "--precision", "bf16,f32", suite=tmp_path / "elsewhere" / "suite.toml")
    assert same.returncode == 0, same.stderr
    assert ": 6 jobs, 0 run now" in same.stdout
    # an edited suite is another run, even with the same path
    (tmp_path / "suite.toml").write_text(SUITE.replace("[1, 2, 3]", "[1, 2, 64]"))
    one_error_line(harness(tmp_path, "--resume", "--precision", "f32,bf16"),
                   "cannot resume: a suite has changed since that run started")


# ----------------------------------------------------------------------------- workers

def test_kill_9_of_the_harness_leaves_no_worker(tmp_path):
    (tmp_path / "suite.toml").write_text(SUITE)
    env = dict(os.environ, IRTOOL_FAULT="hang:case=*")
    process = subprocess.Popen([sys.executable, "-m", "irtool", "harness", str(tmp_path / "suite.toml"),
                                "--report-dir", str(tmp_path / "out"), "--no-progress", "-j", "2"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 120
        below: dict[int, str] = {}
        while time.monotonic() < deadline and list(below.values()).count("irtool-worker") < 2:
            below = descendants(process.pid)
            time.sleep(0.1)
        assert sorted(set(below.values())) == ["irtool-worker", "irtool-zygote"], below
        workers = list(below)
        time.sleep(2)  # the workers have set their guards and hang in their first job
        assert all(alive(pid) for pid in workers)
    finally:
        process.kill()
        process.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not any(alive(pid) for pid in workers), f"workers {workers} outlived their harness"
    # the dead run's lock is taken over by the next run, which continues it
    done = harness(tmp_path, "--resume")
    assert done.returncode == 0, done.stderr


def test_jobs_are_capped_by_cpus_and_jobs_and_it_is_said(tmp_path):
    done = harness(tmp_path, "-j", "1000")
    assert done.returncode == 0, done.stderr
    assert re.search(r"note: -j 1000: \d+ workers?, one per CPU and per job at most \(\d+ (CPU|job)s? here\)",
                     done.stdout), done.stdout


def test_a_per_output_tolerance_must_name_an_output(tmp_path):
    one_error_line(harness(tmp_path, "--atol", "NOPE:0"), "--atol/--rtol name output NOPE, which no case of this run "
                                                          "has; outputs are .*Ho.*Y")
    assert harness(tmp_path, "--atol", "Ho:1e-5").returncode == 0


# ----------------------------------------------------------------------------- inputs

@pytest.mark.parametrize("head, says", [
    ("timeout = nan", r"\[suite\] timeout is nan; expected a number of seconds > 0 and at most 604800"),
    ("timeout = inf", r"\[suite\] timeout is inf"),
    ("timeout = 1e300", r"\[suite\] timeout is 1e\+300"),
    ("expected_failures = 5", r"\[suite\] expected_failures is 5; expected a string"),
    ("max_cases = 2", r"its grids make 3 cases, more than the limit of 2; .* max_cases in \[suite\] or --max-cases"),
])
def test_suite_head_errors(tmp_path, head, says):
    (tmp_path / "suite.toml").write_text(SUITE.replace('name = "guard"', f'name = "guard"\n{head}'))
    one_error_line(harness(tmp_path), says)


@pytest.mark.parametrize("value", ["nan", "inf", "1e300", "0", "-1"])
def test_timeout_option_is_finite_and_positive(tmp_path, value):
    one_error_line(harness(tmp_path, "--timeout", value), r"--timeout: .*expected a number of seconds > 0")


@pytest.mark.parametrize("grid, says", [
    ('weights = [["const"]]', r"weights is \['const'\]; expected const or parameter"),
    ('attributes = { hidden_size = { a = 1 } }', r"attribute 'hidden_size': \{'a': 1\} is not an integer"),
    ('attributes = { hidden_size = 2, clip = "x" }', r"attribute 'clip': 'x' is not a number"),
    ('attributes = { hidden_size = 2 }\nsizes = { batch_size = 1.5 }', r"batch_size is 1.5; expected a positive"),
])
def test_grid_type_errors_are_caught_when_the_suite_is_read(tmp_path, grid, says):
    (tmp_path / "suite.toml").write_text(f'[[grid]]\nop = "RNNCell"\n{grid}\n')
    one_error_line(harness(tmp_path), says)


def test_xfail_file_type_errors(tmp_path):
    (tmp_path / "x.toml").write_text("xfail = [1, 2]\n")
    one_error_line(harness(tmp_path, "--xfail", str(tmp_path / "x.toml")),
                   r"x.toml: xfail entry 1 is 1; expected an \[\[xfail\]\] table")
    os.mkfifo(tmp_path / "fifo.toml")
    one_error_line(harness(tmp_path, "--xfail", str(tmp_path / "fifo.toml")), r"is a named pipe \(FIFO\)")


# ----------------------------------------------------------------------------- a full disk

def test_a_full_disk_stops_the_run_and_says_what_was_saved(tmp_path, small_disk):
    hidden = list(range(1, 121))
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE.replace("[1, 2, 3]", str(hidden)))
    (small_disk / "taken").write_bytes(bytes(64 << 10))  # of its 96 KiB: full after some 15 results, not 60
    out = small_disk / "out"
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(suite), "--report-dir", str(out),
                           "--no-progress"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "disk full (no space left on device)" in done.stderr and "internal error" not in done.stderr
    saved = int(re.search(r"(\d+) results are saved", done.stderr).group(1))
    assert 0 < saved < len(hidden)
    assert re.search(rf"^STOPPED in [\d.]+ s: {saved} pass; {len(hidden) - saved} of {len(hidden)} jobs not run$",
                     done.stdout, re.MULTILINE), done.stdout
    from irtool.harness.store import read_jsonl

    assert len(read_jsonl(out / "results.jsonl").results) == saved  # what it says is what is there


def test_a_fifo_where_results_go_is_refused_not_waited_on(tmp_path):
    (tmp_path / "out").mkdir()
    os.mkfifo(tmp_path / "out" / "results.jsonl")
    one_error_line(harness(tmp_path, "--force", timeout=120),
                   r"results.jsonl: a named pipe \(FIFO\); irtool writes the results file only as a new file")


@pytest.mark.parametrize("name, make, kind", [
    ("report.html", os.mkfifo, r"a named pipe \(FIFO\)"),
    ("junit.xml", os.mkdir, "a directory"),
    ("results.json", lambda path: os.symlink(os.devnull, path), r"\(-> /dev/null\): a character device"),
])
def test_a_report_file_no_force_can_write_over_is_refused_before_the_run(name, make, kind, tmp_path):
    """--force replaces report files irtool did not write, never a FIFO, a folder or a device: the run
    was refused only once its jobs had run, without its summary or verdict."""
    (tmp_path / "out").mkdir()
    make(tmp_path / "out" / name)
    done = harness(tmp_path, "--force", timeout=120)
    one_error_line(done, rf"{name}.*{kind}; irtool writes the report only as a new file or over a regular file")
    assert not (tmp_path / "out" / "results.jsonl").exists()  # no job ran


PARENT = """
import os, subprocess, sys, time
from irtool.jobs.lifeline import PIPE_ENV, lifeline
read_end, write_end = lifeline()
env = {k: v for k, v in os.environ.items() if k != "IRTOOL_PARENT_PID"}
env[PIPE_ENV] = str(read_end)   # the pipe alone: no parent-death signal
stdin = int(os.environ["TEST_STDIN_FD"])  # held open by the test: the worker never sees end-of-input
worker = subprocess.Popen([sys.executable, "-m", "irtool.jobs.lifeline"], stdin=stdin,
                          stdout=subprocess.DEVNULL, pass_fds=(read_end,), env=env)
os.close(read_end)
print(worker.pid, flush=True)
time.sleep(600)
"""


def test_the_lifeline_pipe_alone_ends_an_orphaned_worker(tmp_path):
    """Where there is no parent-death signal (not Linux), the pipe ends the worker, even one whose
    requests never end (its stdin is held open by this test, as a plugin holding the worker in a
    job would keep it from reading)."""
    requests, held = os.pipe()
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, pass_fds=(requests,),
                              env=dict(os.environ, TEST_STDIN_FD=str(requests)))
    os.close(requests)
    try:
        worker = int(parent.stdout.readline())
        time.sleep(3)
        assert alive(worker)
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and alive(worker):
        time.sleep(0.1)
    try:
        assert not alive(worker), "the worker outlived its parent"
    finally:
        os.close(held)
