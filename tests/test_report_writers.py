"""``report render`` and ``report merge`` as writers of a report dir, run as real processes: one
writer per dir (a harness run's lock refuses them), an interrupted command leaves nothing or
only its own marked files and its rerun proceeds, and merge exits with the merged run's
verdict (a partial merge is not a pass)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest_harness import result, sample_run

from irtool.harness.marker import not_owned
from irtool.harness.reports import REPORT_NAMES
from irtool.harness.store import RunResults, write_json

REPRODUCERS = 150  # per shard, 64 KiB each: a copy that takes a second or more, to be interrupted in


def irtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _shards(root: Path, count: int = REPRODUCERS) -> None:
    """Two shards of failing jobs, each with its reproducer folder, in root/s1 and root/s2."""
    for k in (1, 2):
        results = []
        for index in range(count):
            folder = root / f"s{k}" / "reproducers" / f"gru-{k}-{index}"
            folder.mkdir(parents=True)
            (folder / "model.bin").write_bytes(bytes(64 << 10))
            results.append(result(f"gru-{k}-{index}", "fail", max_abs=0.1, message="Y: 1 of 64 outside",
                                  reproducer=f"reproducers/gru-{k}-{index}"))
        write_json(root / f"s{k}" / "results.json", RunResults({**sample_run().meta, "shard": f"{k}/2"}, results))


COMMANDS = {"merge": ["report", "merge", "s1", "s2", "-o", "new"], "render": ["report", "render", "s1", "-o", "new"]}


@pytest.mark.parametrize("command, how", [("merge", signal.SIGINT), ("merge", signal.SIGTERM),
                                          ("render", signal.SIGTERM)])
def test_an_interrupted_command_leaves_nothing_or_its_own_files_and_its_rerun_proceeds(tmp_path, command, how):
    _shards(tmp_path)
    args = [sys.executable, "-m", "irtool", *COMMANDS[command]]
    process = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = tmp_path / "new"
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        if out.is_dir() and any(files for _, _, files in os.walk(out)):  # it is copying the reproducers
            break
        time.sleep(0.002)
    time.sleep(0.1)
    process.send_signal(how)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and err == "irtool: error: interrupted\n", (process.returncode, err)
    if out.exists():  # whatever it left is irtool's, recorded as such
        assert not_owned(out, REPORT_NAMES, ("reproducers",)) == [], sorted(p.name for p in out.iterdir())
    again = irtool(*COMMANDS[command], cwd=tmp_path)
    # the reports written; merge exits with the run's verdict (it holds failures), render with 0
    assert again.returncode == (1 if command == "merge" else 0), again.stdout + again.stderr
    count = 2 * REPRODUCERS if command == "merge" else REPRODUCERS
    assert again.stdout.endswith(f": {count} results ({count} fail)\n"), again.stdout
    assert len(list((out / "reproducers").iterdir())) == count
    assert sorted(p.name for p in out.iterdir()) == [".irtool-files.json", "junit.xml", "report.html",
                                                     "reproducers", "results.json"]


def test_a_killed_commands_staging_folder_is_cleared_by_the_next(tmp_path):
    _shards(tmp_path, count=3)
    staged = tmp_path / "new" / ".irtool-staging" / "reproducers" / "half"
    staged.mkdir(parents=True)  # what a kill -9 mid-copy leaves
    done = irtool(*COMMANDS["merge"], cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert not (tmp_path / "new" / ".irtool-staging").exists()


def test_render_and_merge_refuse_a_report_dir_a_harness_run_is_using(tmp_path):
    """While a harness run holds --report-dir live, nothing else writes there (they wrote into it and
    exited 0; live/reproducers then held another run's folders its results never linked)."""
    _shards(tmp_path, count=2)
    (tmp_path / "suite.toml").write_text('[suite]\nname = "live"\n[[grid]]\nid = "cell"\nop = "RNNCell"\n'
                                         'attributes = { hidden_size = 2 }\n')
    env = dict(os.environ, IRTOOL_FAULT="hang:case=*")
    run = subprocess.Popen([sys.executable, "-m", "irtool", "harness", "suite.toml", "--report-dir", "live",
                            "--no-progress", "--timeout", "120"], cwd=tmp_path, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "live" / "results.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert run.poll() is None
        before = sorted(p.name for p in (tmp_path / "live").iterdir())
        for args in (["report", "render", "s1", "-o", "live"], ["report", "merge", "s1", "s2", "-o", "live"]):
            done = irtool(*args, cwd=tmp_path)
            assert done.returncode == 2, done.stdout + done.stderr
            assert done.stderr.startswith(f"irtool: error: live: another irtool harness run is using this report dir "
                                          f"(pid {run.pid} on "), done.stderr
            assert done.stderr.rstrip().endswith("wait for it to end, or give another -o"), done.stderr
        assert sorted(p.name for p in (tmp_path / "live").iterdir()) == before
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(timeout=60)


# ----------------------------------------------------------------------------- merge's exit code

def _merge(tmp_path: Path, shards: dict[str, list], *extra: str) -> subprocess.CompletedProcess:
    for shard, results in shards.items():
        (tmp_path / shard.replace("/", "of")).mkdir()
        write_json(tmp_path / shard.replace("/", "of") / "results.json",
                   RunResults({**sample_run().meta, "shard": shard}, results))
    return irtool("report", "merge", *(shard.replace("/", "of") for shard in shards), "-o", "merged", *extra,
                  cwd=tmp_path)


@pytest.mark.parametrize("verdicts, code", [(("pass", "pass"), 0), (("pass", "fail"), 1), (("pass", "crash"), 1),
                                            (("skip", "skip"), 3), (("unjudged", "skip"), 3)])
def test_merge_exits_with_the_merged_runs_verdict(tmp_path, verdicts, code):
    done = _merge(tmp_path, {f"{k + 1}/2": [result(f"c{k}", verdict, max_abs=1e-7)] for k, verdict in
                             enumerate(verdicts)})
    assert done.returncode == code, done.stdout + done.stderr
    assert (tmp_path / "merged" / "report.html").is_file()


def test_a_partial_merge_fails_unless_allowed(tmp_path):
    done = _merge(tmp_path, {"1/2": [result("a", "pass", max_abs=1e-7)]})
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.endswith("1 results (1 pass); partial run: shards 2/2 missing\n")
    assert done.stderr == ("irtool: error: partial run: shards 2/2 missing (the reports are written, marked partial); "
                           "--allow-partial judges what the shards hold\n")
    allowed = irtool("report", "merge", "1of2", "-o", "merged", "--allow-partial", cwd=tmp_path)
    assert allowed.returncode == 0 and allowed.stderr == "", allowed.stdout + allowed.stderr


def test_a_merge_names_the_shard_that_is_partial(tmp_path):
    """Both shards are there, one of an interrupted run: the error names it."""
    for shard, partial in (("1/2", False), ("2/2", True)):
        (tmp_path / shard.replace("/", "of")).mkdir()
        write_json(tmp_path / shard.replace("/", "of") / "results.json",
                   RunResults({**sample_run().meta, "shard": shard}, [result(f"c{shard[0]}", "pass", max_abs=1e-7)],
                              partial=partial))
    done = irtool("report", "merge", "1of2", "2of2", "-o", "merged", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == ("irtool: error: partial run: 2of2 is partial (the reports are written, marked partial); "
                           "--allow-partial judges what the shards hold\n")
