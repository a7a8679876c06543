"""Worker processes with a per-case timeout: a crash or a hang costs one case, not the run.

The jobs are cut into groups that share a compiled model (one model on one device at one
precision, all its seeds); a free worker takes the next group and is sent its jobs one at a
time.  A worker that dies (signal, exit) is recorded as CRASH for the job it was running,
with the last lines of its stderr; one that runs past the timeout is killed and recorded as
TIMEOUT.  Either way a fresh worker takes over the rest of the group and, when a report
dir is set, first writes the lost job's reproducer (model and inputs, nothing compiled).
Workers end with this process, however it ends (:mod:`irtool.jobs.lifeline`).
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Sequence

import irtool
from irtool.core import activity, memory
from irtool.core.errors import IrtoolBug, IrtoolError
from irtool.core.processes import exit_text
from irtool.core.text import counted, cut
from irtool.jobs.job_results import base_result
from irtool.jobs.lifeline import PIPE_ENV, lifeline
from irtool.jobs.lifeline import worker_env as lifeline_env
from irtool.jobs.records import CRASH, TIMEOUT, CaseResult, Job, result_from_json, result_to_json
from irtool.jobs.worker import RunnerOptions, job_to_json
from irtool.jobs.zygote import Forked, Zygote

STARTUP_TIMEOUT = 120.0  # importing openvino and creating a Core on a busy machine
STDERR_LINES = 20
STDERR_BYTES = 256 << 10  # of a worker's stderr read for its last lines
WORKER_MODULE = ("-m", "irtool.jobs.lifeline")  # the worker loop, bound to this process


class PoolError(IrtoolError):
    """Workers that cannot be started at all."""


@dataclass
class _Task:
    job: Job
    reproduce_for: CaseResult | None = None  # a crashed/hung job's result, waiting for its reproducer


@dataclass
class _Worker:
    process: subprocess.Popen | Forked
    stderr: IO[bytes]
    ready: bool = False
    buffer: bytes = b""
    task: _Task | None = None
    deadline: float = 0.0
    started: float = 0.0  # when its task was sent
    queue: deque = field(default_factory=deque)  # the rest of its group
    lifeline: int | None = None  # this process's end of the worker's lifeline pipe
    openvino_version: str | None = None  # as its ready message says
    notes: IO[bytes] | None = None  # what it is doing (irtool.core.activity), read when it dies or hangs
    oom_kills: int | None = None  # the OOM killer's count in this process's memory cgroups when it started
    asked: bool = False  # for its devices (Pool.devices), not answered yet

    @property
    def busy(self) -> bool:
        """Whether the pool waits on it: starting, running a task or answering a question."""
        return self.task is not None or not self.ready or self.asked

    def send(self, message: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message, allow_nan=False) + "\n").encode())
        self.process.stdin.flush()

    def stderr_tail(self) -> list[str]:
        """The last STDERR_LINES lines the worker wrote, from at most its last STDERR_BYTES (a
        worker may write gigabytes), each cut to one line's limit."""
        size = self.stderr.seek(0, os.SEEK_END)
        self.stderr.seek(max(size - STDERR_BYTES, 0))
        lines = self.stderr.read(STDERR_BYTES).decode("utf-8", errors="replace").splitlines()
        if size > STDERR_BYTES and lines:
            lines = lines[1:] or [lines[0]]  # the first is a line's end (unless one line fills it all)
        return [cut(line) for line in lines if line.strip()][-STDERR_LINES:]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if self.lifeline is not None:
            os.close(self.lifeline)
            self.lifeline = None
        for stream in (self.process.stdin, self.process.stdout, self.stderr, self.notes):
            try:
                stream.close()
            except (OSError, AttributeError):
                pass


def worker_environment(env: dict[str, str] | None) -> dict[str, str]:
    """The workers' environment: ``env`` (default this process's), with this irtool first on
    the import path, so that a worker runs the same code as its parent, installed or not, and
    openvino's telemetry off.  The path holds irtool alone (:func:`irtool_only_path`): the folder
    an installed irtool sits in is a site-packages with its own openvino, which would shadow
    the openvino of another release's environment."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [irtool_only_path(), env.get("PYTHONPATH")]))
    # Importing openvino 2026.4 sends a telemetry event from a thread that forks (multiprocessing).
    # A worker's main thread is by then reading requests from stdin, and the forked child hangs for
    # good closing stdin, outliving the worker.  openvino sends no telemetry when CI=true.
    env["CI"] = "true"
    return env


_IRTOOL_ONLY: list[str] = []  # the folder found or made once per process


def irtool_only_path() -> str:
    """A folder whose only entry is a link to this irtool package: an import path that brings
    irtool and nothing else.  One per user and irtool location, in the temporary folder, made
    whole under another name and renamed into place, then reused (a process killed by a signal
    leaves nothing behind); where that name holds anything else, or another user's folder, a
    private one serves this process and is removed when it ends."""
    if not _IRTOOL_ONLY:
        import hashlib

        package = Path(irtool.__file__).resolve().parent
        shared = Path(tempfile.gettempdir()) / (
            f"irtool-path-{os.getuid()}-{hashlib.sha256(str(package).encode()).hexdigest()[:12]}")
        if not _links_to(shared, package):
            _remove_stale(shared.parent, f"irtool-path-{os.getuid()}-")
            staging = _linking_folder(package, prefix=f"{shared.name}.", where=shared.parent)
            try:
                os.rename(staging, shared)  # refused where another process made it first
            except OSError:
                _remove(staging)
        if _links_to(shared, package):
            _IRTOOL_ONLY.append(str(shared))
        else:
            import atexit

            private = _linking_folder(package, prefix="irtool-path-")
            atexit.register(_remove, private)
            _IRTOOL_ONLY.append(private)
    return _IRTOOL_ONLY[0]


def _linking_folder(package: Path, prefix: str, where: Path | None = None) -> str:
    folder = tempfile.mkdtemp(prefix=prefix, dir=where)  # this user's alone (mode 0700)
    os.symlink(package, Path(folder) / "irtool")
    return folder


def _links_to(folder: Path, package: Path | None) -> bool:
    """Whether ``folder`` is this user's own folder, closed to others, holding only a link to
    ``package`` (None: to a folder that no longer exists)."""
    import stat

    try:
        found = os.lstat(folder)
        if not (stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o077
                and os.listdir(folder) == ["irtool"]):
            return False
        target = os.readlink(folder / "irtool")
        return target == str(package) if package is not None else not os.path.exists(target)
    except OSError:
        return False


def _remove_stale(where: Path, prefix: str) -> None:
    """This user's import-path folders of irtool locations that are gone (a test's copy of the repository)."""
    try:
        names = [entry.name for entry in os.scandir(where) if entry.name.startswith(prefix)]
    except OSError:
        return
    for name in names:
        if _links_to(where / name, None):
            _remove(str(where / name))


def _remove(folder: str) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def worker_count(asked: int, jobs: int) -> tuple[int, str | None]:
    """Workers to start for ``-j asked``: at most one per CPU and one per job; and the note
    that says so when that is fewer than asked."""
    cpus = usable_cpus()
    count = max(1, min(asked, cpus, jobs))
    if count == asked:
        return count, None
    why = counted(cpus, "CPU") if count == cpus and cpus < asked else counted(jobs, "job")
    return count, f"-j {asked}: {counted(count, 'worker')}, one per CPU and per job at most ({why} here)"


def groups_of(jobs: Sequence[Job]) -> list[list[Job]]:
    """Consecutive jobs that share a compiled model."""
    groups: list[list[Job]] = []
    for job in jobs:
        key = (job.case.model_key, job.device, job.precision)
        if groups and (groups[-1][0].case.model_key, groups[-1][0].device, groups[-1][0].precision) == key:
            groups[-1].append(job)
        else:
            groups.append([job])
    return groups


class Pool:
    """Runs jobs on ``size`` workers; :meth:`run` calls ``on_result`` as each job finishes.

    Used as a context manager, the pool keeps its idle workers between calls of :meth:`run`
    until the ``with`` block ends (``irtool reduce`` runs hundreds of one-job batches, and a
    worker costs about a second to start); otherwise each :meth:`run` closes them at its end.

    With ``spare``, once a worker has been lost (a crash, a timeout) one more is kept started
    in reserve: the next lost worker's replacement is then ready at once, its start having
    overlapped the jobs run meanwhile, and another spare is started in its place (``irtool
    reduce``: when a candidate crashes the worker, the next ones often do too).

    Workers are forked from the pool's zygote where the OS allows (:mod:`irtool.jobs.zygote`):
    a worker's imports are paid once a pool, not once a worker; ``fork=False`` starts each as a
    process of its own (benchmarks/bench_pool_start.py compares the two).
    """

    def __init__(self, size: int, timeout: float, options: RunnerOptions, env: dict[str, str] | None = None,
                 python: str | None = None, spare: bool = False, fork: bool = True):
        self.size = max(1, size)
        self.timeout = timeout
        self.options = options
        self.env = env
        # The workers' interpreter: this one, or an OpenVINO release's environment
        # (irtool.jobs.environments), which runs this irtool from PYTHONPATH (worker_environment).
        self.python = python or sys.executable
        self._selector = selectors.DefaultSelector()
        self._workers: list[_Worker] = []
        self.spare = spare
        self._spare: _Worker | None = None  # started, not in service: it takes no job until a worker is lost
        self._keep = False
        self._pending: deque = deque()
        self._fork = fork
        self._zygote: Zygote | None = None
        self._devices: dict | None = None

    def __enter__(self) -> "Pool":
        self._keep = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._keep = False
        self.close()

    def start(self, count: int) -> None:
        """Start up to ``count`` workers now, so that their start-up overlaps the caller's work."""
        while len(self._workers) < min(count, self.size):
            self._workers.append(self._start())

    def devices(self) -> dict | None:
        """What this pool's openvino sees here (:func:`irtool.runtime.devices.report_to_json`), as
        a worker says it, so that the harness need not import an openvino of its own to ask (nor
        start a process of another release's); None where the worker died first."""
        if self._devices is None:
            self.start(1)
            worker = self._workers[0]
            worker.asked, worker.deadline = True, max(worker.deadline, time.monotonic() + STARTUP_TIMEOUT)
            try:
                worker.send({"devices": True})
            except (BrokenPipeError, OSError):
                pass  # it died: the wait finds it gone
            while worker.asked and worker in self._workers:
                self._wait(_no_result)
        return self._devices

    def run(self, jobs: Sequence[Job], on_result: Callable[[CaseResult], None]) -> None:
        self._pending = pending = deque(groups_of(jobs))
        try:
            while pending or any(w.task or w.queue for w in self._workers):
                self._fill()
                self._wait(on_result)
        except BaseException:
            self.close()  # a worker may be mid-job: none is reused after an interruption
            raise
        if not self._keep:
            self.close()

    def close(self) -> None:
        for worker in self._workers:
            self._drop(worker)
        self._workers.clear()
        if self._spare is not None:
            self._drop(self._spare)
            self._spare = None
        if self._zygote is not None:  # the workers' parent: after them
            self._zygote.stop()
            self._zygote = None

    # ------------------------------------------------------------------ scheduling
    def _fill(self) -> None:
        busy = sum(bool(w.task or w.queue) for w in self._workers)
        while len(self._workers) < min(self.size, len(self._pending) + busy):
            self._workers.append(self._start())
        for worker in self._workers:
            if worker.ready and worker.task is None:
                self._give(worker)

    def _give(self, worker: _Worker) -> None:
        """Send a free worker its next job: the rest of its group, else the next group."""
        if not worker.queue and self._pending:
            worker.queue.extend(_Task(job) for job in self._pending.popleft())
        if worker.queue:
            self._assign(worker, worker.queue.popleft())

    def _assign(self, worker: _Worker, task: _Task) -> None:
        worker.task = task
        worker.started = time.monotonic()
        worker.deadline = worker.started + self.timeout
        message = {"job": job_to_json(task.job)} if task.reproduce_for is None else \
            {"reproduce": job_to_json(task.job), "result": result_to_json(task.reproduce_for)}  # what case.json keeps
        try:
            worker.send(message)
        except (BrokenPipeError, OSError):
            pass  # it died before reading: the wait finds it gone and records the crash

    def _start(self, queue: deque | None = None) -> _Worker:
        """A worker for service: the spare if there is one (another is started in its place), else a new one."""
        worker, self._spare = self._spare, None
        if worker is None:
            worker = self._new_worker()
        else:
            self._spare = self._new_worker()
        worker.queue = queue or deque()
        return worker

    def _new_worker(self) -> _Worker:
        stderr, notes = tempfile.TemporaryFile(), activity.note_file()
        read_end, write_end = lifeline()
        try:
            process = self._forked_worker(stderr, notes, read_end) or subprocess.Popen(
                (self.python, *WORKER_MODULE), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                env={**worker_environment(self.env), **lifeline_env(read_end), activity.FILE_ENV: str(notes.fileno())},
                pass_fds=(read_end, notes.fileno()))
        except OSError as error:
            os.close(write_end)
            notes.close()
            raise PoolError(f"cannot start a worker process ({error.strerror})") from None
        finally:
            os.close(read_end)
        worker = _Worker(process, stderr, lifeline=write_end, notes=notes, oom_kills=memory.oom_kills())
        worker.deadline = time.monotonic() + STARTUP_TIMEOUT
        os.set_blocking(process.stdout.fileno(), False)
        self._selector.register(process.stdout, selectors.EVENT_READ, worker)
        return worker

    def _forked_worker(self, stderr: IO[bytes], notes: IO[bytes], read_end: int) -> Forked | None:
        """A worker forked from the pool's zygote (started with the first) on pipes of its own, given
        copies of ``stderr``, ``notes`` and ``read_end`` (its lifeline); None where it cannot be."""
        if not self._fork:
            return None
        if self._zygote is None:
            self._zygote = Zygote(self.python, worker_environment(self.env))
        if self._zygote.failed:  # not on this OS, or it could not start or has died
            return None
        stdin_read, stdin_write = os.pipe()
        stdout_read, stdout_write = os.pipe()
        fds = (stdin_read, stdout_write, os.dup(stderr.fileno()))
        passed = {PIPE_ENV: os.dup(read_end), activity.FILE_ENV: os.dup(notes.fileno())}
        worker = self._zygote.fork(fds, passed, (stdin_write, stdout_read))
        if worker is None:
            for fd in (*fds, *passed.values(), stdin_write, stdout_read):
                os.close(fd)
        return worker

    # ------------------------------------------------------------------ events
    def _wait(self, on_result: Callable[[CaseResult], None]) -> None:
        now = time.monotonic()
        busy = [w for w in self._workers if w.busy]
        if not busy:
            return
        timeout = max(0.0, min(w.deadline for w in busy) - now)
        for key, _ in self._selector.select(timeout):
            self._read(key.data, on_result)
        now = time.monotonic()
        for worker in list(self._workers):
            if worker.busy and now >= worker.deadline:
                self._lost(worker, TIMEOUT, on_result)

    def _read(self, worker: _Worker, on_result: Callable[[CaseResult], None]) -> None:
        try:
            chunk = os.read(worker.process.stdout.fileno(), 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self._lost(worker, CRASH, on_result)
            return
        worker.buffer += chunk
        while b"\n" in worker.buffer:
            line, worker.buffer = worker.buffer.split(b"\n", 1)
            self._answer(worker, json.loads(line), on_result)

    def _answer(self, worker: _Worker, message: dict, on_result: Callable[[CaseResult], None]) -> None:
        if "devices" in message:
            worker.asked, self._devices = False, message["devices"]
            return
        if "ready" in message:
            worker.ready = True
            worker.openvino_version = message["ready"].get("openvino")
            worker.send({"options": self.options.to_json()})
            return
        task, worker.task = worker.task, None
        if task is None:
            return
        self._give(worker)  # the worker goes on while this process records the answer
        if "results" in message:
            for data in message["results"]:
                result = result_from_json(data)
                result.openvino_version = worker.openvino_version
                on_result(result)
        elif task.reproduce_for is not None:
            task.reproduce_for.reproducer = message.get("reproducer")
            task.reproduce_for.unwritten = message.get("unwritten") or task.reproduce_for.unwritten
            on_result(task.reproduce_for)

    def _lost(self, worker: _Worker, verdict: str, on_result: Callable[[CaseResult], None]) -> None:
        """A worker that died or ran out of time: record its job, replace it, keep its group."""
        if worker is self._spare:  # it ran nothing; a replacement started when one is needed says why it fails
            self._drop(worker)
            self._spare = None
            return
        task = worker.task
        ended = time.monotonic()
        if verdict == CRASH:  # its output ended: give it the moment to end itself, so a SIGKILL is not ours
            try:
                worker.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        ours = worker.process.poll() is None
        if ours:
            worker.process.kill()
        code = worker.process.wait()
        died = ("it closed its output and was killed" if ours else getattr(worker.process, "ended_with", None)
                or _death(code, worker.oom_kills)) if verdict == CRASH else ""
        tail = worker.stderr_tail()
        doing = activity.read_file(worker.notes).what if worker.notes is not None else None
        during = f" while {doing}" if doing else ""
        self._drop(worker)
        self._workers.remove(worker)
        if task is None and not worker.ready:
            raise PoolError(_startup_failure(code, tail, verdict))
        rest = worker.queue
        if task is not None and task.reproduce_for is not None:  # the reproducer itself failed: the job without it
            lost = task.reproduce_for
            lost.unwritten = lost.unwritten or (
                f"the reproducer of {lost.name}: the worker writing it " +
                (f"ran past the timeout of {self.timeout:g} s" if verdict == TIMEOUT else f"died too: {died}") + during)
            on_result(lost)
        elif task is not None:
            result = base_result(task.job)
            result.verdict, result.stderr, result.openvino_version = verdict, tail, worker.openvino_version
            result.time = ended - worker.started  # how long it ran until it died or was killed
            result.message = (f"ran past the timeout of {self.timeout:g} s{during}; the worker was killed"
                              if verdict == TIMEOUT else f"the worker died: {died}{during}")
            if self.options.report_dir is not None:
                rest.appendleft(_Task(task.job, reproduce_for=result))
            else:
                on_result(result)
        if rest:
            self._workers.append(self._start(rest))
        if self.spare and self._spare is None:  # the first loss: from now on one waits in reserve
            self._spare = self._new_worker()

    def _drop(self, worker: _Worker) -> None:
        try:
            self._selector.unregister(worker.process.stdout)
        except (KeyError, ValueError):
            pass
        worker.kill()


def _no_result(result: CaseResult) -> None:
    raise IrtoolBug(f"a result of {result.name} when no job was sent")


def _death(code: int, oom_kills_before: int | None) -> str:
    """How a worker died, in words; a SIGKILL this process did not send said as the kernel's
    out-of-memory killer's (certainly so where its cgroup's count of such kills grew meanwhile),
    with the memory limits the worker ran under."""
    if code != -signal.SIGKILL:
        return exit_text(code)
    after = memory.oom_kills()
    if oom_kills_before is not None and after is not None and after > oom_kills_before:
        return f"killed by the kernel's out-of-memory killer (it ran under {memory.limits_in_force()})"
    return (f"{exit_text(code)}, as the kernel's out-of-memory killer ends a process (it ran under "
            f"{memory.limits_in_force()})")


def _startup_failure(code: int, tail: list[str], verdict: str) -> str:
    why = "did not start in time" if verdict == TIMEOUT else f"exited at start ({exit_text(code)})"
    return f"a worker process {why}: {tail[-1] if tail else 'no output'}"
