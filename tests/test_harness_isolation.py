"""Isolation: a case that aborts, segfaults or hangs its worker is recorded as such, with the
worker's last stderr lines and a reproducer; the rest of the run completes.  Real workers,
real OpenVINO; the faults come from IRTOOL_FAULT (irtool.jobs.faults)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

SUITE = """
[suite]
name = "iso"
[[grid]]
id = "cell"
op = "RNNCell"
attributes = { hidden_size = [1, 2, 3, 4, 5, 6] }
"""
FAULTS = "abort:hidden_size=2;hang:hidden_size=3;segfault:hidden_size=5"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("iso")
    (folder / "iso.toml").write_text(SUITE)
    env = dict(os.environ, IRTOOL_FAULT=FAULTS)
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(folder / "iso.toml"), "--timeout", "5",
                           "-j", "2", "--report-dir", str(folder / "out"), "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=300)
    results = {r["case"]: r for r in json.loads((folder / "out" / "results.json").read_text())["results"]}
    return done, results, folder / "out"


def case(hidden: int) -> str:
    return f"cell[hidden_size={hidden},seed=0]"


def test_the_run_completes_and_fails(run):
    done, results, _ = run
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert [results[case(h)]["verdict"] for h in range(1, 7)] == ["pass", "crash", "timeout", "pass", "crash", "pass"]


@pytest.mark.parametrize("hidden, message", [
    (2, "the worker died: SIGABRT (abort)"),
    (3, "ran past the timeout of 5 s; the worker was killed"),
    (5, "the worker died: SIGSEGV (segmentation fault)")])
def test_lost_jobs_say_why_with_the_workers_last_words_and_a_reproducer(run, hidden, message):
    _, results, out = run
    result = results[case(hidden)]
    assert result["message"] == message
    assert any(f"running {case(hidden)} on CPU at f32" in line for line in result["stderr"]), result["stderr"]
    folder = out / result["reproducer"]
    assert {p.name for p in folder.iterdir()} >= {"model.xml", "model.bin", "inputs.npz", "expected.npz",
                                                   "reproduce.py", "case.json"}
    record = json.loads((folder / "case.json").read_text())
    assert record["case"]["attributes"] == {"hidden_size": hidden}
    kept = record["result"]  # the lost job's result, as results.json has it
    assert (kept["verdict"], kept["message"], kept["time"]) == (result["verdict"], message, result["time"])
    with np.load(folder / "inputs.npz") as inputs:
        assert inputs[inputs.files[0]].shape[0] == 2  # the case's batch


def test_the_summary_names_each_lost_job(run):
    done, _, _ = run
    assert f"CRASH: {case(2)} on CPU at f32: the worker died: SIGABRT (abort)" in done.stdout
    assert f"TIMEOUT: {case(3)} on CPU at f32" in done.stdout
    assert re.search(r"^FAILED in [\d.]+ s: 3 pass, 2 crash, 1 timeout$", done.stdout, re.M), done.stdout


def test_a_lost_job_records_how_long_it_ran(run):
    """Not 0.000 s: a crash took as long as its job ran until the worker died, a timeout its limit."""
    _, results, _ = run
    assert results[case(2)]["time"] > 0 and results[case(5)]["time"] > 0
    assert results[case(3)]["time"] >= 5


def test_workers_import_path_brings_irtool_alone(tmp_path):
    """An installed irtool sits in a site-packages beside openvino: putting that folder on another
    release's import path would run the installed openvino under the release's name."""
    import os
    import subprocess
    import sys

    from irtool.jobs.pool import worker_environment

    env = worker_environment(None)
    first = env["PYTHONPATH"].split(os.pathsep)[0]
    assert os.listdir(first) == ["irtool"]
    done = subprocess.run([sys.executable, "-I", "-c", "import sys; sys.path.insert(0, sys.argv[1]); import irtool, "
                           "irtool.specs; print(len(list(irtool.specs.registry())))", first],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0 and int(done.stdout) >= 6, done.stderr


def test_the_import_path_folder_is_shared_and_outlives_a_killed_process(tmp_path):
    """Every process of one user and irtool reuses one folder (a harness killed by SIGKILL once left
    a folder in /tmp per run); where its name is taken by something else, a private one is used."""
    code = "from irtool.jobs.pool import irtool_only_path; print(irtool_only_path(), flush=True)"
    env = dict(os.environ, TMPDIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    killed = subprocess.Popen([sys.executable, "-c", code + "; import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
                              stdout=subprocess.PIPE, text=True, env=env)
    assert killed.stdout.read().strip() == first.stdout.strip() and killed.wait(timeout=60) == -9
    shared = first.stdout.strip()
    assert os.listdir(tmp_path) == [os.path.basename(shared)] and os.listdir(shared) == ["irtool"]
    os.unlink(os.path.join(shared, "irtool"))
    os.symlink(tmp_path, os.path.join(shared, "irtool"))  # another package's link: not used
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert other.returncode == 0 and other.stdout.strip() != shared and not os.path.exists(other.stdout.strip())
    gone = tmp_path / f"irtool-path-{os.getuid()}-0123456789ab"  # an irtool location that was removed
    gone.mkdir(mode=0o700)
    os.symlink(tmp_path / "removed-checkout" / "irtool", gone / "irtool")
    os.unlink(os.path.join(shared, "irtool"))
    os.rmdir(shared)
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert again.stdout.strip() == shared and sorted(os.listdir(tmp_path)) == [os.path.basename(shared)]
