"""The worker pool as reduce uses it: in a ``with`` block one worker serves run after run (a
crashed one is replaced and the replacement kept; with spare=True one more waits started to replace
the next), and all are closed at the end; outside
one, each run closes its workers as before."""
from __future__ import annotations

import os
import subprocess
import sys

from irtool.jobs.pool import Pool, worker_environment
from irtool.jobs.records import Job, SuiteCase
from irtool.jobs.worker import RunnerOptions


def job(hidden: int) -> Job:
    case = SuiteCase(id=f"cell[hidden_size={hidden}]", suite="pool", op="RNNCell", version=0,
                     attributes={"hidden_size": hidden})
    return Job(case, "CPU", "f32")


def run(pool: Pool, hidden: int) -> str:
    results = []
    pool.run([job(hidden)], results.append)
    (result,) = results
    return result.verdict


def pids(pool: Pool) -> list[int]:
    return [worker.process.pid for worker in pool._workers]


def test_a_pool_in_a_with_block_keeps_its_worker_and_replaces_a_crashed_one():
    env = dict(os.environ, IRTOOL_FAULT="abort:hidden_size=2")
    with Pool(1, 60, RunnerOptions(), env) as pool:
        assert run(pool, 1) == "pass"
        first = pids(pool)
        assert run(pool, 3) == "pass" and pids(pool) == first and len(first) == 1
        assert run(pool, 2) == "crash"
        assert run(pool, 4) == "pass"
        replacement = pids(pool)
        assert replacement != first and len(replacement) == 1
        assert run(pool, 5) == "pass" and pids(pool) == replacement
        workers = list(pool._workers)
    assert pool._workers == [] and all(worker.process.poll() is not None for worker in workers)


def test_a_spare_worker_is_started_after_the_first_loss_and_replaces_the_next_lost_worker():
    """Pool(spare=True), as reduce uses it: none before a worker is lost; then one waits started, takes
    over from the next crashed worker, and another is started in its place.  A spare that dies
    while waiting is dropped, and the next replacement started then."""
    env = dict(os.environ, IRTOOL_FAULT="abort:hidden_size=2")
    with Pool(1, 60, RunnerOptions(), env, spare=True) as pool:
        assert run(pool, 1) == "pass" and pool._spare is None
        assert run(pool, 2) == "crash"
        spare = pool._spare.process
        assert spare.poll() is None and spare.pid not in pids(pool)
        assert run(pool, 3) == "pass"
        assert pids(pool) == [spare.pid] and pool._spare.process.pid != spare.pid  # it took over; another waits
        pool._spare.process.kill()
        assert run(pool, 2) == "crash" and run(pool, 4) == "pass"
        assert pool._spare is not None and pool._spare.process.poll() is None
        workers = [*pool._workers, pool._spare]
    assert pool._workers == [] and pool._spare is None and all(w.process.poll() is not None for w in workers)


def test_a_pool_outside_a_with_block_closes_its_workers_after_each_run():
    pool = Pool(1, 60, RunnerOptions())
    assert run(pool, 1) == "pass"
    assert pool._workers == []


def test_a_worker_imports_openvino_without_the_telemetry_thread_that_forks():
    """With it, a child forked while the worker reads stdin hangs for good and outlives the worker."""
    code = "import threading, openvino; print(sorted(t.name for t in threading.enumerate()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=worker_environment(dict(os.environ, CI="false")))
    assert done.stdout.strip() == "['MainThread']", done.stdout + done.stderr
