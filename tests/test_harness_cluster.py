"""``irtool harness --cluster``: one run across the workers of a Dask scheduler, on this machine.

A scheduler (``irtool scheduler``) on 127.0.0.1 and ``irtool worker`` processes that offer
different devices and precisions, all real OpenVINO on the CPU: jobs land only where their
device and precision are offered, a job no worker offers is skipped before the run, a worker
killed mid-run loses no job and doubles none, the only worker of a device dying leaves the run
partial with its jobs named until ``--resume`` on a worker that joined since, a segfault is
one crash result and no Dask worker dies, a worker of another irtool version is refused, and
the smoke suite gives on two workers what it gives without them.  One scheduler for the
module; every process is bounded in time and stopped by the test that starts it.
"""
from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

import irtool

from irtool.harness.session import HarnessOptions, run_harness
from irtool.jobs.records import CRASH, PASS, SKIP

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "samples" / "suites" / "smoke.toml"
START_LIMIT = 90.0  # seconds for a process to say it is up (imports openvino on a busy machine)
SUITE = """
[suite]
name = "lab"
timeout = 60
[[grid]]
id = "gru"
op = "GRUSequence-5"
attributes = { hidden_size = [2, 3, 4, 5, 6, 7], direction = "forward" }
sizes = { batch_size = 2, seq_length = 3, input_size = 3 }
"""
IRTOOL = [sys.executable, "-m", "irtool"]
# a worker of another irtool: this one, saying another version
OTHER_VERSION = [sys.executable, "-c", "import sys, irtool; irtool.__version__ = '0.0.0+other'; "
                 "from irtool.cli.program import main; sys.exit(main(sys.argv[1:]))"]


def _launch(command: list[str], cwd: Path | None = None) -> subprocess.Popen:
    """A process of ours; its stderr goes to a file (a pipe no one reads would block it once full)."""
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env={**os.environ, "CI": "true"},
                               cwd=cwd)
    process.log = log  # type: ignore[attr-defined]
    return process


def _up(process: subprocess.Popen, said: str, deadline: float) -> subprocess.Popen:
    """``process``, once a line of its stdout starts with ``said`` (before ``deadline``); else killed.
    Its stdout is read by a thread, so that a line buffered with the one before is not waited for."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in iter(process.stdout.readline, "")],
                     daemon=True).start()
    while True:
        try:
            if lines.get(timeout=max(deadline - time.monotonic(), 0)).startswith(said):
                return process
        except queue.Empty:
            break
    process.kill()
    process.wait(timeout=30)
    process.log.seek(0)
    raise AssertionError(f"{process.args} did not start: {process.log.read()[-3000:]}")


def _stop(*processes: subprocess.Popen) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
        process.log.close()


class Lab:
    def __init__(self, folder: Path):
        self.file = folder / "scheduler.json"
        command = [*IRTOOL, "scheduler", "--port", "0", "--scheduler-file", str(self.file)]
        self.processes = [_up(_launch(command), "scheduler at", time.monotonic() + START_LIMIT)]

    def workers(self, *specs: tuple[str, str, str], command: list[str] = IRTOOL, more: tuple[str, ...] = (),
                cwd: Path | None = None) -> list[subprocess.Popen]:
        """Workers (name, devices, precisions), started side by side (``more``: their other options)."""
        launched = [_launch([*command, "worker", "--scheduler-file", str(self.file), "--name", name,
                             "--devices", devices, "--precisions", precisions, *more], cwd)
                    for name, devices, precisions in specs]
        self.processes += launched
        deadline = time.monotonic() + START_LIMIT
        return [_up(process, "joined", deadline) for process in launched]

    def names(self, leaving: str | None = None) -> list[str]:
        """The workers the scheduler holds (once ``leaving`` is no longer among them: within 30 s)."""
        from distributed import Client

        with Client(scheduler_file=str(self.file), timeout=30, set_as_default=False) as client:
            for _ in range(300):
                names = sorted(str(w["name"]) for w in client.scheduler_info(n_workers=-1)["workers"].values())
                if leaving not in names:
                    return names
                time.sleep(0.1)
        raise AssertionError(f"worker {leaving} is still held by the scheduler: {names}")

    def options(self, folder: Path, devices: str, precisions: str, suite: Path | None = None, **more) -> HarnessOptions:
        if suite is None:
            suite = folder / "lab.toml"
            suite.write_text(SUITE)
        return HarnessOptions(suites=[suite], devices=devices.split(","), precisions=precisions.split(","),
                              report_dir=folder / "out", scheduler_file=self.file, **more)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A scheduler and two workers: a offers CPU and AUTO:CPU at f32 and default, b CPU and HETERO:CPU at f32."""
    made = Lab(tmp_path_factory.mktemp("lab"))
    try:
        made.workers(("a", "CPU,AUTO:CPU", "f32,default"), ("b", "CPU,HETERO:CPU", "f32"))
        yield made
    finally:
        _stop(*reversed(made.processes))


def _keys(results) -> Counter:
    return Counter(result.job_key for result in results)


def test_jobs_land_only_where_offered_and_what_none_offers_is_skipped_before_the_run(lab, tmp_path):
    plans = []
    outcome = run_harness(lab.options(tmp_path, "CPU,AUTO:CPU,HETERO:CPU", "f32,default"), start=plans.append)
    hosts = {(r.device, r.precision): set() for r in outcome.run.results}
    for result in outcome.run.results:
        hosts[result.device, result.precision].add(result.host)
    assert hosts[("AUTO:CPU", "f32")] == hosts[("AUTO:CPU", "default")] == hosts[("CPU", "default")] == {"a"}
    assert hosts[("HETERO:CPU", "f32")] == {"b"}
    assert hosts[("CPU", "f32")] <= {"a", "b"}
    skipped = [r for r in outcome.run.results if r.verdict == SKIP]
    assert {(r.device, r.precision) for r in skipped} == {("HETERO:CPU", "default")} and len(skipped) == 6
    assert plans[0].skipped == 6 and plans[0].to_run == 30  # decided before the first job ran
    assert skipped[0].message == "no worker of the cluster offers HETERO:CPU at default (looked at: a, b)"
    assert skipped[0].host is None
    assert {r.verdict for r in outcome.run.results} == {PASS, SKIP} and outcome.exit_code == 0
    stored = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()[1:-1]]
    assert {row.get("host") for row in stored} == {"a", "b", None}
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert junit.count("<system-out>host: a</system-out>") + junit.count("<system-out>host: b</system-out>") == 30
    html = (tmp_path / "out" / "report.html").read_text()
    assert re.search(r"<td>workers</td><td>a \(\d+\), b \(\d+\)</td>", html), html[:3000]
    assert _keys(outcome.run.results) == Counter(set(_keys(outcome.run.results)))  # each job once


def test_a_segfault_is_one_crash_result_and_no_dask_worker_dies(lab, tmp_path):
    first = lab.processes[:3]  # the scheduler, a and b
    fault = {**os.environ, "IRTOOL_FAULT": "segfault:case=*hidden_size=4*,device=CPU"}
    outcome = run_harness(lab.options(tmp_path, "CPU", "f32", env=fault))
    crashed = [r for r in outcome.run.results if r.verdict == CRASH]
    assert len(crashed) == 1 and crashed[0].case.startswith("gru[hidden_size=4") and "SIGSEGV" in crashed[0].message
    assert crashed[0].host in ("a", "b") and "<td>host</td>" in (tmp_path / "out" / "report.html").read_text()
    assert crashed[0].reproducer and (tmp_path / "out" / crashed[0].reproducer / "model.xml").is_file()
    assert Counter(r.verdict for r in outcome.run.results) == {PASS: 5, CRASH: 1}
    assert all(process.poll() is None for process in first)
    assert lab.names() == ["a", "b"]  # the same two workers: neither died nor was restarted


def test_a_worker_killed_mid_run_loses_no_job_and_doubles_none(lab, tmp_path):
    (doomed,) = lab.workers(("c", "CPU", "f32"))

    def kill_c(result, done, total):  # once c has run a job (or, should it get none, mid-run all the same)
        if (result.host == "c" or done >= 12) and doomed.poll() is None:
            doomed.send_signal(signal.SIGKILL)

    outcome = run_harness(lab.options(tmp_path, "CPU", "f32", suite=SMOKE), progress=kill_c)
    _stop(doomed)
    assert doomed.returncode == -signal.SIGKILL
    assert not outcome.lost and outcome.exit_code == 0
    keys = _keys(outcome.run.results)
    assert len(keys) == outcome.jobs == 36
    assert set(Counter(result.key for result in outcome.run.results).values()) == {1}  # one per job (or node)


def test_the_only_worker_of_a_device_dies_the_run_is_partial_and_resume_completes_it(lab, tmp_path):
    (only,) = lab.workers(("d", "HETERO:CPU", "default"))

    def kill_d(result, done, total):
        if result.host == "d" and only.poll() is None:
            only.send_signal(signal.SIGKILL)

    outcome = run_harness(lab.options(tmp_path, "HETERO:CPU", "default", lost_after=1.0), progress=kill_d)
    _stop(only)
    assert outcome.lost and outcome.exit_code == 2 and outcome.word == "PARTIAL" and outcome.run.partial
    ran = {r.name for r in outcome.run.results}
    assert len(ran) + len(outcome.lost) == 6 and not ran & {job for job, _ in outcome.lost}
    assert all(why == "no worker has offered HETERO:CPU at default for 1 s (it was offered by: d)"
               for _, why in outcome.lost)
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["partial"] is True
    (joined,) = lab.workers(("e", "HETERO:CPU", "default"))
    try:
        resumed = run_harness(lab.options(tmp_path, "HETERO:CPU", "default", resume=True))
    finally:
        _stop(joined)
        lab.names(leaving="e")
    assert resumed.exit_code == 0 and not resumed.lost and resumed.reran == len(outcome.lost)
    assert set(_keys(resumed.run.results).values()) == {1} and len(resumed.run.results) == 6
    assert {r.host for r in resumed.run.results if r.name in {job for job, _ in outcome.lost}} == {"e"}


def test_a_worker_of_another_irtool_version_is_refused_by_name(lab, tmp_path):
    (other,) = lab.workers(("old", "HETERO:CPU", "default"), command=OTHER_VERSION)
    try:
        outcome = run_harness(lab.options(tmp_path, "HETERO:CPU", "default"))
    finally:
        _stop(other)
    assert f"cluster: worker old refused: it runs irtool 0.0.0+other, this harness irtool {irtool.__version__}" \
        in outcome.notes
    assert {r.verdict for r in outcome.run.results} == {SKIP} and outcome.exit_code == 3
    assert "(looked at: a, b, old)" in outcome.run.results[0].message


def test_the_scheduler_lost_mid_run_leaves_the_run_partial_naming_each_job_without_a_result(tmp_path):
    own = Lab(tmp_path)  # a scheduler of this test's own: it is killed
    try:
        own.workers(("s", "CPU", "f32"))
        scheduler = own.processes[0]

        def kill_scheduler(result, done, total):
            if scheduler.poll() is None:
                scheduler.send_signal(signal.SIGKILL)

        outcome = run_harness(own.options(tmp_path, "CPU", "f32", suite=SMOKE), progress=kill_scheduler)
    finally:
        _stop(*reversed(own.processes))
    assert outcome.exit_code == 2 and outcome.word == "PARTIAL" and outcome.run.partial
    ran = {r.name for r in outcome.run.results}
    lost = [job for job, _ in outcome.lost]
    assert ran and lost and len(ran) + len(lost) == outcome.jobs == 36 and not ran & set(lost)
    assert all(why.startswith("the scheduler was lost mid-run") for _, why in outcome.lost), outcome.lost


def test_outputs_a_report_dir_cannot_take_are_said_missing_and_the_verdicts_stand(lab, tmp_path):
    """A task's answer from a worker, its kept outputs unpacked into a report dir that cannot take them
    (a file where its folder should be): each result keeps its verdict and says what was not written."""
    from distributed import Client

    from irtool.harness.cluster import Cluster
    from irtool.harness.matrix import make_jobs
    from irtool.jobs.cluster import resource
    from irtool.jobs.cluster_files import pack
    from irtool.jobs.cluster_task import run_group
    from irtool.jobs.pool import groups_of
    from irtool.jobs.suite import load_suite

    suite = tmp_path / "lab.toml"
    suite.write_text(SUITE.replace("[2, 3, 4, 5, 6, 7]", "[2, 3]"))
    group = [job for group in groups_of(make_jobs(load_suite(suite).cases, ["CPU"], ["f32"])) for job in group]
    shipment = pack(group)
    with Client(scheduler_file=str(lab.file), timeout=30, set_as_default=False) as client:
        answer = client.submit(run_group, shipment.jobs, shipment.files, {"keep_outputs": True}, 60.0, None,
                               pure=False, resources={resource("CPU", "f32"): 1}).result(timeout=300)
    (tmp_path / "blocked").write_text("a file where the report dir should be")
    collector = Cluster.__new__(Cluster)  # the harness's side of a task's end, without a scheduler of its own
    collector.report_dir, collector.options, collector.lost = tmp_path / "blocked" / "out", {"keep_outputs": True}, []
    results: list = []
    collector._collect(("done", 0, answer), group, shipment.folders, results.append, set())
    assert [r.verdict for r in results] == [PASS, PASS] and not collector.lost
    assert all(r.unwritten.startswith("its reproducer or kept outputs, sent back by the worker: ")
               and r.reproducer is None for r in results), [r.unwritten for r in results]


def test_the_smoke_suite_on_two_workers_gives_what_it_gives_without_them(lab, tmp_path):
    local = run_harness(HarnessOptions(suites=[SMOKE], devices=["CPU", "AUTO:CPU"], precisions=["f32"],
                                       report_dir=tmp_path / "local", jobs=2))
    code = subprocess.run([*IRTOOL, "harness", str(SMOKE), "-d", "CPU,AUTO:CPU", "--precision", "f32",
                           "--scheduler-file", str(lab.file), "--report-dir", str(tmp_path / "lab"),
                           "--no-progress"], capture_output=True, text=True, timeout=300)
    assert code.returncode == 0, code.stderr
    on_lab = json.loads((tmp_path / "lab" / "results.json").read_text())["results"]
    assert {(r["case"], r["device"], r["precision"]): r["verdict"] for r in on_lab} == \
        {(r.case, r.device, r.precision): r.verdict for r in local.run.results}
    assert len(on_lab) == len(local.run.results) == 72


def test_kept_outputs_come_back_from_the_workers_and_judge_again_as_the_run_judged(lab, tmp_path):
    import psutil

    outcome = run_harness(lab.options(tmp_path, "CPU,HETERO:CPU", "f32", keep_outputs=True))
    assert outcome.exit_code == 0 and {r.verdict for r in outcome.run.results} == {PASS}
    assert {r.host for r in outcome.run.results if r.device == "HETERO:CPU"} == {"b"}
    kept = tmp_path / "out" / "kept"
    assert len(list(kept.glob("*/job.json"))) == len(list(kept.glob("*/outputs.npz"))) == 12  # 6 cases, 2 devices
    assert len(list((kept / "shared").glob("*.npz"))) == 6  # each case's inputs once, whichever worker ran it
    done = subprocess.run([*IRTOOL, "report", "rejudge", str(tmp_path / "out"), "-o", str(tmp_path / "again"),
                           "--no-progress"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    again = json.loads((tmp_path / "again" / "results.json").read_text())
    assert {(r["case"], r["device"]): r["verdict"] for r in again["results"]} == \
        {(r.case, r.device): r.verdict for r in outcome.run.results}
    assert all(r["replayed"] for r in again["results"]) and again["rejudged"]["changed"] == []
    # b ran this run's jobs with --keep-outputs and others without: it keeps one process for its one lane
    (tmp_path / "plain").mkdir()
    assert run_harness(lab.options(tmp_path / "plain", "HETERO:CPU", "f32")).exit_code == 0
    worker_b = lab.processes[2]
    assert [p.name() for p in psutil.Process(worker_b.pid).children(recursive=True)].count("irtool-worker") == 1


def test_without_the_cluster_nothing_of_it_is_imported(tmp_path):
    suite = tmp_path / "lab.toml"
    suite.write_text(SUITE.replace("[2, 3, 4, 5, 6, 7]", "2"))
    script = ("import sys; from irtool.cli.program import main; code = main(sys.argv[1:]); "
              "assert not [m for m in sys.modules if m.split('.')[0] == 'distributed' or 'cluster' in m], "
              "sorted(sys.modules); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", script, "harness", str(suite), "--report-dir", str(tmp_path / "out"),
                           "--no-progress"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert rows[1]["verdict"] == PASS and not [row for row in rows if "host" in row and "run" not in row]


def test_without_distributed_one_line_names_the_extra(tmp_path):
    script = ("import sys; sys.modules['distributed'] = None; from irtool.cli.program import main; "
              "sys.exit(main(sys.argv[1:]))")
    for argv in (["worker", "tcp://127.0.0.1:1"],  # irtool scheduler says it as irtool worker does (worker_cmd._quiet)
                 ["harness", str(SMOKE), "--cluster", "tcp://127.0.0.1:1", "--report-dir", str(tmp_path / "o")]):
        done = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and done.stderr.strip().splitlines() == [
            "irtool: error: the cluster needs dask distributed, which is not installed here: "
            "pip install 'irtool[cluster]'"], (argv, done.stderr)


def test_a_scheduler_file_in_no_folder_is_one_line_not_an_internal_error(tmp_path):
    done = subprocess.run([*IRTOOL, "scheduler", "--port", "0", "--scheduler-file", str(tmp_path / "no" / "s.json")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        f"irtool: error: {tmp_path / 'no' / 's.json'}: folder {tmp_path / 'no'} does not exist"], done.stderr


def test_a_scheduler_address_dask_cannot_use_is_one_line_from_the_client_process(tmp_path):
    done = subprocess.run([*IRTOOL, "harness", str(SMOKE), "--cluster", "nothing://here:1", "--report-dir",
                           str(tmp_path / "o")], capture_output=True, text=True, timeout=300)
    (line,) = done.stderr.strip().splitlines()  # Dask's own words, after irtool's: its schemes vary by release
    assert done.returncode == 2 and line.startswith(
        "irtool: error: --cluster nothing://here:1: cannot reach the scheduler (unknown address scheme 'nothing'"), line


def test_lost_jobs_are_listed_and_the_run_is_partial_exit_2(tmp_path):
    from irtool.cli.harness_cmd import render, summary_json
    from irtool.harness.session import HarnessOutcome
    from irtool.harness.store import RunResults

    why = "no worker has offered HETERO:CPU at default for 300 s (it was offered by: d)"
    outcome = HarnessOutcome(RunResults({}, [], partial=True), jobs=1, lost=[("gru on HETERO:CPU at default", why)])
    lines = render(outcome, tmp_path).splitlines()
    assert f"LOST: gru on HETERO:CPU at default: {why}" in lines
    assert lines[-1].startswith("PARTIAL in ") and lines[-1].endswith("; 1 of 1 jobs not run")
    assert outcome.exit_code == 2 and summary_json(outcome)["lost"] == [{"name": "gru on HETERO:CPU at default",
                                                                        "why": why}]


def test_a_worker_that_cannot_offer_what_it_is_asked_says_so_in_one_line():
    from irtool.jobs.cluster import ClusterError, offer

    with pytest.raises(ClusterError, match="^--lanes 0: expected at least 1$"):
        offer(lanes=0)
    done = subprocess.run([*IRTOOL, "worker", "tcp://127.0.0.1:1", "--devices", "GPU"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("irtool: error: --devices GPU: cannot run here: GPU is not available here")
    assert len(done.stderr.splitlines()) == 1 and not done.stdout


MODELS = ROOT / "samples" / "suites" / "models.toml"


def _verdicts(results) -> dict:
    """What a run found, by job (and node): verdict, message and the model file named."""
    return {(r.case, r.device, r.precision, r.openvino): (r.verdict, r.message, r.file) for r in results}


def test_releases_are_the_workers_and_each_job_runs_where_its_release_is_offered(
        lab, tmp_path, older_openvino, openvino_cache):
    """A worker in another folder offers CPU f32 under the older release and its own: the models suite
    (its files sent with the tasks) gives under each release what a run without --cluster gives;
    a release no worker offers is skipped before the run, with the workers looked at."""
    from conftest import OLDER_OPENVINO as OLDER

    env, _ = older_openvino
    assert env.usable, env.problem
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (worker,) = lab.workers(("r", "CPU", "f32"), more=("--openvino", f"{OLDER},current", "--openvino-cache",
                                                       str(openvino_cache)), cwd=elsewhere)
    try:
        on_lab = run_harness(lab.options(tmp_path, "CPU", "f32", suite=MODELS, openvino=(OLDER, "current", "2024.6.0")))
    finally:
        _stop(worker)
        lab.names(leaving="r")
    local = run_harness(HarnessOptions(suites=[MODELS], devices=["CPU"], precisions=["f32"], report_dir=tmp_path / "l",
                                       openvino=(OLDER, "current"), openvino_cache=openvino_cache))
    ran = [r for r in on_lab.run.results if r.openvino != "2024.6.0"]
    assert _verdicts(ran) == _verdicts(local.run.results)
    older = [r for r in ran if r.openvino == OLDER]
    assert {r.host for r in older if r.verdict != SKIP} == {"r"}
    assert {r.openvino_version.split("-")[0] for r in older if r.verdict != SKIP} == {OLDER}
    erfinv = next(r for r in older if r.case.startswith("erfinv_gru"))  # the older release cannot read it
    assert erfinv.verdict == SKIP and erfinv.message.startswith(str(ROOT / "samples" / "models" / "erfinv_gru.xml"))
    absent = [r for r in on_lab.run.results if r.openvino == "2024.6.0"]
    assert len(absent) == 5 and {r.message for r in absent} == {
        "no worker of the cluster offers CPU at f32 under openvino 2024.6.0 (looked at: a, b, r)"}
    saved = json.loads((tmp_path / "out" / "results.json").read_text())["openvino_releases"]
    assert saved[OLDER]["openvino_version"].startswith(OLDER) and saved["2024.6.0"]["problem"].startswith(
        "no worker of the cluster offers it")
    assert on_lab.exit_code == local.exit_code == 0


def test_a_jobs_files_go_with_its_task_to_a_worker_that_cannot_read_them(lab, tmp_path):
    """A suite's models and .npz copied into a folder, packed for their tasks, the folder deleted: the
    workers run the jobs from what the tasks carry, and the results (said back in the harness's
    paths) are what a run without --cluster gave on the folder."""
    from distributed import Client

    from irtool.harness.matrix import make_jobs
    from irtool.jobs.cluster import resource
    from irtool.jobs.cluster_files import pack
    from irtool.jobs.cluster_task import results_of, run_group
    from irtool.jobs.pool import groups_of
    from irtool.jobs.records import result_from_json
    from irtool.jobs.suite import load_suite

    folder = tmp_path / "gone"
    (folder / "m").mkdir(parents=True)
    for name in ("gru_lengths.xml", "gru_lengths.bin", "lstm_f16w.xml", "lstm_f16w.bin", "lstm_f16w.expected.npz"):
        (folder / "m" / name).write_bytes((ROOT / "samples" / "models" / name).read_bytes())
    suite = folder / "shipped.toml"
    suite.write_text('[suite]\nname = "shipped"\n[[models]]\npath = "m/gru_lengths.xml"\n'
                     '[[models]]\npath = "m/lstm_f16w.xml"\nexpected = "m/lstm_f16w.expected.npz"\n')
    local = run_harness(HarnessOptions(suites=[suite], report_dir=tmp_path / "local"))
    shipments = [pack(group) for group in groups_of(make_jobs(load_suite(suite).cases, ["CPU"], ["f32"]))]
    assert all(str(folder) not in json.dumps(shipment.jobs) for shipment in shipments)
    for path in sorted(folder.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    folder.rmdir()
    results = []
    with Client(scheduler_file=str(lab.file), timeout=30, set_as_default=False) as client:
        for shipment in shipments:
            answer = client.submit(run_group, shipment.jobs, shipment.files, {}, 60.0, None, pure=False,
                                   resources={resource("CPU", "f32"): 1}).result(timeout=300)
            results += [result_from_json(data) for data in results_of(answer, shipment.folders)]
    assert _verdicts(results) == _verdicts(local.run.results)
    assert {r.verdict for r in results} >= {"fail", PASS}  # a failing model and one judged by its .npz, both as here
    assert {r.file for r in results} == {str(folder / "m" / "gru_lengths.xml"), str(folder / "m" / "lstm_f16w.xml")}


def test_a_worker_holds_a_task_set_up_beside_its_lane_and_runs_one_job_at_a_time_on_it(lab, tmp_path):
    """Worker b (one lane) given six tasks at once: it runs two at a time, one on its lane and one
    set up, waiting for the lane (irtool.jobs.cluster.WAITING), and never starts a second lane
    process for them; each job's result comes back once, from b."""
    from distributed import Client

    from irtool.harness.matrix import make_jobs
    from irtool.jobs.cluster import WAITING, resource
    from irtool.jobs.cluster_client import run_task
    from irtool.jobs.cluster_files import pack
    from irtool.jobs.cluster_task import results_of
    from irtool.jobs.pool import groups_of
    from irtool.jobs.suite import load_suite

    suite = tmp_path / "lab.toml"
    suite.write_text(SUITE)
    shipments = [pack(group) for group in groups_of(make_jobs(load_suite(suite).cases, ["HETERO:CPU"], ["f32"]))]
    assert len(shipments) == 6

    def seen(dask_worker) -> tuple[int, int]:  # on b: its tasks running, its lane processes
        import psutil

        lanes = 0
        for child in psutil.Process().children(recursive=True):  # a lane's worker is its zygote's child
            try:
                lanes += child.name() == "irtool-worker"
            except psutil.Error:  # a lane of other options, ending
                pass
        return len(dask_worker.state.executing), lanes

    def submit(client, shipment):
        return client.submit(run_task, shipment.jobs, shipment.files, {}, 60.0, None, pure=False,
                             resources={resource("HETERO:CPU", "f32"): 1})

    with Client(scheduler_file=str(lab.file), timeout=30, set_as_default=False) as client:
        b = next(address for address, worker in client.scheduler_info(n_workers=-1)["workers"].items()
                 if worker["name"] == "b")
        submit(client, shipments[0]).result(timeout=300)  # b's lane is now one of these tasks' options
        futures = [submit(client, shipment) for shipment in shipments]
        views = []
        while not all(future.done() for future in futures):
            views.append(client.run(seen, workers=[b])[b])
            time.sleep(0.02)
        answers = [future.result(timeout=300) for future in futures]
    assert max(running for running, _ in views) == 1 + WAITING
    assert max(lanes for _, lanes in views) == 1
    results = [data for answer, shipment in zip(answers, shipments) for data in results_of(answer, shipment.folders)]
    assert len(results) == 6 and {data["host"] for data in results} == {"b"}
    assert len({data["case"] for data in results}) == 6


def test_a_job_whose_files_are_too_many_bytes_is_skipped_before_the_run(lab, tmp_path, monkeypatch):
    from irtool.jobs import cluster_files

    monkeypatch.setattr(cluster_files, "MAX_BYTES", 8192)
    suite = tmp_path / "big.toml"
    suite.write_text(f'[suite]\nname = "big"\n[[models]]\npath = "{ROOT}/samples/models/gru_lengths.xml"\n'
                     f'[[models]]\npath = "{ROOT}/samples/models/erfinv_gru.xml"\n')
    outcome = run_harness(lab.options(tmp_path, "CPU", "f32", suite=suite))
    big, small = outcome.run.results
    assert big.verdict == SKIP and big.message == ("its files are 13.1 KiB, more than the 8.0 KiB a job sends to a "
                                                   "worker of the cluster (docs/cluster.md): run it without --cluster")
    assert small.verdict == PASS and small.host in ("a", "b")


def test_an_onnx_models_external_data_goes_with_it_and_lands_where_the_job_reads_it(tmp_path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from irtool.jobs.cluster_files import land, pack
    from irtool.jobs.records import Job, SuiteCase

    weight = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [weight])
    (tmp_path / "src").mkdir()
    onnx.save_model(helper.make_model(graph), str(tmp_path / "src" / "m.onnx"), save_as_external_data=True,
                    location="m.weights", size_threshold=0)
    shipment = pack([Job(SuiteCase(id="m", suite="s", file=str(tmp_path / "src" / "m.onnx")), "CPU", "f32")])
    assert shipment.jobs[0]["case"]["file"] == "0/m.onnx" and shipment.folders == {"0": str(tmp_path / "src")}
    [landed] = land(shipment.files, shipment.jobs, tmp_path / "dst")
    assert landed["case"]["file"] == str(tmp_path / "dst" / "0" / "m.onnx")
    assert (tmp_path / "dst" / "0" / "m.weights").read_bytes() == (tmp_path / "src" / "m.weights").read_bytes()


def test_a_harness_on_a_cluster_names_releases_by_version_and_a_worker_refuses_one_it_cannot_run(tmp_path):
    from irtool.harness.session import SessionError

    with pytest.raises(SessionError, match="^--openvino with --cluster names versions: a wheel or environment is a "
                                           "worker's own$"):
        HarnessOptions(suites=[SMOKE], cluster="tcp://127.0.0.1:1", openvino=(f"env:{tmp_path}",))
    done = subprocess.run([*IRTOOL, "worker", "tcp://127.0.0.1:1", "--openvino", "env:" + str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith(f"irtool: error: --openvino env:{tmp_path}: no bin/python")
    assert len(done.stderr.splitlines()) == 1 and not done.stdout
