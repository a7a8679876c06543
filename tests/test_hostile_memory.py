"""Memory bounded by what the process may really use: the estimate reads cgroup limits (v1 and v2)
and RLIMIT_AS beside MemAvailable, an allocation that fails all the same is one line with the
estimate, a process the kernel kills for memory is said, and IRTOOL_MEMORY_LIMIT is read alike by
every command.  Real processes and real OpenVINO on CPU; the cgroup reading also on a made tree."""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from irtool.cli.program import main
from irtool.core import memory

GIB = 1 << 30
SEQUENCE = "3000000"  # steps of a GRU of hidden size 16: about 5 GiB to judge, by irtool's estimate


def irtool(*args: str, cwd: Path, env: dict | None = None, limit: int | None = None,
           cgroup: Path | None = None) -> subprocess.CompletedProcess:
    def confine() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))

    return subprocess.run([sys.executable, "-m", "irtool", *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          timeout=300, stdin=subprocess.DEVNULL, preexec_fn=confine,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def dynamic(tmp_path_factory) -> Path:
    """A GRUSequence with dynamic batch and time: --seq-length sizes it."""
    from irtool.pipeline.build import build_and_save
    from irtool.specs.cases import OpCase

    folder = tmp_path_factory.mktemp("memory")
    case = OpCase("GRUSequence", {"hidden_size": 16, "direction": "forward"}, {"input_size": 8},
                  dynamic=("batch_size", "seq_length"))
    build_and_save(case, folder / "dyn.xml")
    return folder / "dyn.xml"


def test_an_address_space_limit_is_read_before_allocating(dynamic):
    done = irtool("run", dynamic.name, "-d", "CPU", "--seq-length", SEQUENCE, cwd=dynamic.parent, limit=3 * GIB)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("irtool: error: dyn.xml: judging node GRUSequence (")
    assert "more than" in done.stderr and "(the address space RLIMIT_AS (ulimit -v) leaves)" in done.stderr


def test_an_allocation_that_fails_is_one_line_with_the_estimate(dynamic):
    """With the check off, 20,000,000 steps' inputs (3.6 GiB by the estimate) do not fit 2 GiB of address space."""
    done = irtool("run", dynamic.name, "-d", "CPU", "--seq-length", "20000000", cwd=dynamic.parent, limit=2 * GIB,
                  env={"IRTOOL_MEMORY_LIMIT": "none"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("irtool: error: out of memory: an allocation failed while running it (dyn.xml); "
                                  "irtool estimated about 3.6 GiB for the inputs of dyn.xml; ")
    assert "internal error" not in done.stderr


def _memory_cgroup(name: str) -> Path | None:
    """A new cgroup (v1 or v2) below this process's memory cgroup, where one can be made here."""
    for folder, version in memory._cgroup_folders("/proc/self"):
        made = folder / name
        try:
            made.mkdir()
        except OSError:
            continue
        if (made / ("memory.max" if version == 2 else "memory.limit_in_bytes")).exists():
            return made
        made.rmdir()
    return None


def test_a_memory_cgroup_limit_is_read_before_allocating(dynamic):
    """In a cgroup of 1 GiB on a machine with far more: refused at once, where before it was killed
    silently by the kernel after minutes."""
    cgroup = _memory_cgroup(f"irtool-test-{os.getpid()}")
    if cgroup is None:
        pytest.skip("no memory cgroup can be made here (not root, or cgroups read-only); the made tree below "
                    "covers the reading")
    try:
        limit = "memory.max" if (cgroup / "memory.max").exists() else "memory.limit_in_bytes"
        (cgroup / limit).write_text(str(GIB))
        done = irtool("run", dynamic.name, "-d", "CPU", "--seq-length", "1500000", cwd=dynamic.parent, cgroup=cgroup)
    finally:
        time.sleep(0.2)
        cgroup.rmdir()
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "(what this process's cgroup allows (memory.max) less what it uses)" in done.stderr


@pytest.mark.parametrize("version", [1, 2])
def test_cgroup_limits_are_read_from_the_mounts_the_process_sees(tmp_path, version):
    """A made /proc/self and cgroup tree: the process's cgroup and the one above it each have a
    limit; the least headroom counts, the file cache it could drop counted as free."""
    proc, mount = tmp_path / "proc", tmp_path / "cgroup"
    inner = mount / "job" / "step"
    inner.mkdir(parents=True)
    proc.mkdir()
    if version == 2:
        (proc / "cgroup").write_text("0::/ci/job/step\n")
        (proc / "mountinfo").write_text(f"30 25 0:26 /ci {mount} rw,nosuid - cgroup2 cgroup2 rw\n")
        files = ("memory.max", "memory.current", "inactive_file")
    else:
        (proc / "cgroup").write_text("4:memory:/ci/job/step\n3:cpu,cpuacct:/ci/job/step\n")
        (proc / "mountinfo").write_text(f"31 25 0:27 /ci {mount} rw - cgroup cgroup rw,memory\n")
        files = ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
    for folder, limit, used, cache in ((inner, 4 * GIB, 3 * GIB, GIB), (inner.parent, 2 * GIB, GIB + GIB // 2, 0)):
        (folder / files[0]).write_text(f"{limit}\n")
        (folder / files[1]).write_text(f"{used}\n")
        (folder / "memory.stat").write_text(f"anon 1\n{files[2]} {cache}\n")
    (mount / files[0]).write_text("max\n" if version == 2 else "9223372036854771712\n")
    memory._cgroup_folders.cache_clear()
    assert memory.cgroup_available(proc) == GIB // 2  # the job's: 2 GiB less 1.5 GiB (the step's has 2 GiB)
    (inner.parent / files[0]).write_text("max\n" if version == 2 else "9223372036854771712\n")
    memory._cgroup_folders.cache_clear()
    assert memory.cgroup_available(proc) == 2 * GIB  # the step's: 4 GiB less (3 GiB less 1 GiB of cache)


def test_a_run_killed_as_the_out_of_memory_killer_kills_is_said(dynamic):
    """The kernel's SIGKILL leaves no line of the run's own: its supervisor says it, with the limit."""
    process = subprocess.Popen([sys.executable, "-m", "irtool", "run", dynamic.name, "-d", "CPU", "--seq-length",
                                "200000"], cwd=dynamic.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    child = None
    while time.monotonic() < deadline and child is None:
        found = Path(f"/proc/{process.pid}/task/{process.pid}/children")
        child = int(found.read_text().split()[0]) if found.exists() and found.read_text().split() else None
        time.sleep(0.05)
    time.sleep(3)
    os.kill(child, signal.SIGKILL)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2 and stderr.count("\n") == 1, stderr
    assert stderr.startswith("irtool: error: dyn.xml: irtool run died of SIGKILL (killed) while ")
    assert "(the kernel's out-of-memory killer ends a process so when memory runs out; memory irtool may use " \
           "here: " in stderr


def test_a_memory_limit_that_is_not_a_size_stops_a_harness_in_one_line(samples_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IRTOOL_MEMORY_LIMIT", "abc")
    code = main(["harness", str(samples_dir.parent / "suites" / "smoke.toml"), "-d", "CPU", "--report-dir",
                 str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err == ("irtool: error: IRTOOL_MEMORY_LIMIT=abc: expected a size in bytes such as 64G, "
                                 "512M or 1000000 (at most 15 digits), or none\n")
    assert not (tmp_path / "out" / "results.jsonl").exists()


def test_a_reproducer_that_cannot_be_made_says_why(tmp_path, dynamic, monkeypatch):
    """A job whose worker died (for memory, say) gets its reproducer from a fresh worker; when even
    that cannot be made, the result says why beside its verdict."""
    from irtool.jobs.records import Job, SuiteCase
    from irtool.jobs.worker import Runner, RunnerOptions

    monkeypatch.setenv("IRTOOL_MEMORY_LIMIT", "1M")
    job = Job(SuiteCase(id="big", suite="s", file=str(dynamic), shapes={"X": (2, 100000, 8)}), "CPU", "f32")
    unwritten: list[str] = []
    assert Runner(RunnerOptions(report_dir=str(tmp_path))).reproduce_only(job, unwritten) is None
    assert len(unwritten) == 1 and unwritten[0].startswith("the reproducer of big on CPU at f32: ")
    assert "more than 1.0 MiB (IRTOOL_MEMORY_LIMIT=1M)" in unwritten[0]


OOM_SUITE = """[suite]
name = "oom"
[[grid]]
id = "big"
op = "GRUSequence"
attributes = { hidden_size = 16, direction = "forward" }
sizes = { batch_size = 2, seq_length = 20000000, input_size = 8 }
"""  # 20,000,000 steps: its inputs alone take 3.6 GiB by irtool's estimate, which IRTOOL_MEMORY_LIMIT=none turns off


def _harness_out_of_memory(tmp_path: Path, limit: int | None = None, cgroup: Path | None = None) -> dict:
    (tmp_path / "oom.toml").write_text(OOM_SUITE)
    done = irtool("harness", "oom.toml", "-d", "CPU", "--report-dir", "out", "--no-progress", "--format", "json",
                  cwd=tmp_path, env={"IRTOOL_MEMORY_LIMIT": "none"}, limit=limit, cgroup=cgroup)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    import json

    return json.loads(done.stdout)


def _said_unwritten_or_written(report: dict, tmp_path: Path) -> None:
    [problem] = report["problems"]
    if problem["reproducer"] is None:
        [unwritten] = report["unwritten"]
        assert unwritten["unwritten"].startswith("the reproducer of big[seed=0] on CPU at f32: ")
    else:
        assert (tmp_path / "out" / problem["reproducer"] / "reproduce.py").is_file()


def test_a_harness_job_killed_for_memory_in_a_cgroup_is_a_crash_naming_the_limit(tmp_path):
    """In a memory cgroup of 1 GiB, the kernel's OOM killer kills the worker (SIGKILL): a crash
    naming the cgroup's limit, where it was an error; where no cgroup can be made here, the
    address space limit RLIMIT_AS of 2 GiB stands in (an allocation fails in the worker)."""
    cgroup = _memory_cgroup(f"irtool-oom-{os.getpid()}")
    try:
        if cgroup is not None:
            limit = "memory.max" if (cgroup / "memory.max").exists() else "memory.limit_in_bytes"
            (cgroup / limit).write_text(str(GIB))
            report = _harness_out_of_memory(tmp_path, cgroup=cgroup)
        else:
            report = _harness_out_of_memory(tmp_path, limit=2 * GIB)
    finally:
        if cgroup is not None:
            time.sleep(0.2)
            cgroup.rmdir()
    [problem] = report["problems"]
    assert report["summary"] == {"crash": 1} and problem["verdict"] == "crash", report
    said = (f"killed by the kernel's out-of-memory killer (it ran under the memory cgroup's limit of 1.0 GiB "
            f"({limit} of {cgroup}))" if cgroup is not None
            else "the address space limit RLIMIT_AS (ulimit -v) of 2.0 GiB")
    assert said in problem["message"] and " while making its inputs" in problem["message"], problem
    _said_unwritten_or_written(report, tmp_path)


def test_a_harness_job_out_of_address_space_is_a_crash_naming_rlimit_as_and_the_step(tmp_path):
    report = _harness_out_of_memory(tmp_path, limit=2 * GIB)
    [problem] = report["problems"]
    assert problem["verdict"] == "crash" and problem["message"].startswith(
        "out of memory: an allocation failed while making its inputs; ")
    assert problem["message"].endswith("; it ran under the address space limit RLIMIT_AS (ulimit -v) of 2.0 GiB")
    _said_unwritten_or_written(report, tmp_path)
