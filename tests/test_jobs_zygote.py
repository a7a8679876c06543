"""Workers forked from their pool's zygote (irtool.jobs.zygote): one process imports openvino for
all of a pool's workers, each worker is the process it would be alone (its own descriptors,
signals, name and exit status), and a zygote that dies takes its workers' jobs as crashes, the
run going on with workers started alone."""
from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from irtool.jobs import zygote
from irtool.jobs.pool import Pool
from irtool.jobs.records import Job, SuiteCase
from irtool.jobs.worker import RunnerOptions

pytestmark = pytest.mark.skipif(not zygote.available(), reason="workers are forked from a zygote on Linux only")


def job(hidden: int, case: str | None = None) -> Job:
    return Job(SuiteCase(id=case or f"cell[hidden_size={hidden}]", suite="zygote", op="RNNCell", version=0,
                         attributes={"hidden_size": hidden}), "CPU", "f32")


def ready(pool: Pool, count: int) -> list[int]:
    """Start ``count`` workers and wait until each has said ready; their pids."""
    pool.start(count)
    while not all(worker.ready for worker in pool._workers):
        pool._wait(lambda result: None)
    return [worker.process.pid for worker in pool._workers]


def stat(pid: int) -> tuple[str, int]:
    """(name, parent pid) of a process, from /proc."""
    name, rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)
    return name.split("(", 1)[1], int(rest.split()[1])


def loaded_openvino(pid: int) -> bool:
    return "/libopenvino.so" in Path(f"/proc/{pid}/maps").read_text()


def test_a_pools_workers_are_forked_from_one_zygote_that_imported_openvino_before_them():
    with Pool(2, 60, RunnerOptions()) as pool:
        pids = ready(pool, 2)
        (parent,) = {stat(pid)[1] for pid in pids}
        assert parent != os.getpid() and stat(parent)[0] == "irtool-zygote" and loaded_openvino(parent)
        assert [stat(pid)[0] for pid in pids] == ["irtool-worker"] * 2
        results = []
        pool.run([job(2), job(3)], results.append)
        assert [r.verdict for r in results] == ["pass", "pass"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in (*pids, parent)):
        time.sleep(0.05)
    assert not any(Path(f"/proc/{pid}").exists() for pid in (*pids, parent))  # closed: none left, no zombie


def test_without_fork_each_worker_is_a_child_of_the_pool():
    with Pool(2, 60, RunnerOptions(), fork=False) as pool:
        pids = ready(pool, 2)
        assert [stat(pid) for pid in pids] == [("irtool-worker", os.getpid())] * 2


@pytest.mark.parametrize("action, said", [("segfault", "SIGSEGV (segmentation fault)"), ("exit", "exit code 3"),
                                          ("abort", "SIGABRT (abort)")])
def test_a_forked_worker_ends_as_a_worker_started_alone_would(action, said):
    """Its exit status comes from the zygote, which reaps it: the crash says the signal or code."""
    env = dict(os.environ, IRTOOL_FAULT=f"{action}:hidden_size=2")
    for fork in (True, False):
        results = []
        with Pool(1, 60, RunnerOptions(), env, fork=fork) as pool:
            pool.run([job(2), job(3)], results.append)
        assert [r.verdict for r in results] == ["crash", "pass"] and results[0].message == f"the worker died: {said}"


def test_a_hung_forked_worker_is_killed_at_the_timeout_and_replaced():
    env = dict(os.environ, IRTOOL_FAULT="hang:hidden_size=2")
    results = []
    with Pool(1, 5, RunnerOptions(), env) as pool:
        pool.run([job(2), job(3)], results.append)
    assert [r.verdict for r in results] == ["timeout", "pass"]


def test_a_zygote_killed_mid_run_costs_its_workers_jobs_and_the_run_goes_on_with_workers_started_alone():
    env = dict(os.environ, IRTOOL_FAULT="hang:hidden_size=2")
    results = []
    with Pool(1, 60, RunnerOptions(), env) as pool:
        (pid,) = ready(pool, 1)
        killer = threading.Timer(1.0, os.kill, (stat(pid)[1], signal.SIGKILL))  # while the worker hangs in its job
        killer.start()
        pool.run([job(2), job(3)], results.append)
        killer.join()
        (replacement,) = [worker.process.pid for worker in pool._workers]
        assert stat(replacement)[1] == os.getpid()  # started alone: no zygote to fork it
    assert [r.verdict for r in results] == ["crash", "pass"]
    assert results[0].message == ("the worker died: it ended with the process it was forked from (irtool-zygote), "
                                  "which died: SIGKILL (killed)")


def test_a_worker_that_cannot_import_is_said_as_a_worker_started_alone_says_it(tmp_path):
    """The zygote's failed import is left to each worker, which fails with its own traceback: the
    pool says why in one line, as it does for a worker started alone."""
    (tmp_path / "openvino").mkdir()
    (tmp_path / "openvino" / "__init__.py").write_text("raise ImportError('this openvino is broken')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    said = []
    for fork in (True, False):
        with pytest.raises(Exception) as raised:
            with Pool(1, 60, RunnerOptions(), env, fork=fork) as pool:
                pool.run([job(2)], lambda result: None)
        said.append(str(raised.value))
    assert said[0] == said[1] and "exited at start (exit code 1)" in said[0] and "this openvino is broken" in said[0]
