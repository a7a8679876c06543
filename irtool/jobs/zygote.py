"""Workers forked from a process that has imported them already (Linux).

Most of a worker's start is importing openvino, numpy and irtool: 0.3 to 0.6 s of CPU, paid
again for each worker a pool starts (one per lane, the replacement of each crashed or hung
worker, a spare).  A pool's zygote is started as a worker would be, with the same interpreter
and environment, imports the worker's modules once and then forks a worker for each request:
a fork costs a few milliseconds.  The zygote imports only modules: it creates no Core and
loads no plugin, so the forked worker starts from what a fresh process would have after its
imports (the one thread besides the zygote's own is numpy's BLAS pool, which its library
makes safe across a fork).  An import that fails in the zygote is left to each worker, which
imports again and fails as a worker started on its own does, with its traceback on its own
stderr.

The pool's side (:class:`Zygote`) sends each request over a Unix socket with the worker's
file descriptors (stdin, stdout and stderr, its activity notes, its end of the lifeline) and
gets back the worker's pid, and later its exit status: the worker is the zygote's child, so
the zygote reaps it and says how it ended (:class:`Forked` gives a pool what a ``Popen``
does).  A worker still ends with the pool, however the pool ends: its lifeline pipe is the
pool's (:mod:`irtool.jobs.lifeline`), and its parent, the zygote, ends with the pool too.
Where no zygote can be started, or it has died, the pool starts each worker as a process of
its own.  A zygote that dies takes its running workers with it (each a crash saying so), and
ends the workers it had not forked yet as it ended, its stderr being the first worker's.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from typing import IO

from irtool.core.processes import exit_text, set_name
from irtool.jobs.lifeline import PARENT_ENV, PIPE_ENV, die_with_parent, lifeline
from irtool.jobs.lifeline import worker_env as lifeline_env

SOCKET_ENV = "IRTOOL_ZYGOTE_FD"
MAX_FDS = 8  # a request's descriptors: stdin, stdout, stderr and those passed
MESSAGE_BYTES = 1 << 16
KILL_WAIT = 1.0  # seconds a worker killed before its pid is known waits for it (a fork takes milliseconds)


def available() -> bool:
    """Whether workers can be forked from a zygote here (Linux: fork, SOCK_SEQPACKET, fd passing)."""
    return sys.platform.startswith("linux") and hasattr(socket, "send_fds")


class Forked:
    """A worker forked by a :class:`Zygote`, with the parts of ``subprocess.Popen`` a pool uses."""

    def __init__(self, zygote: "Zygote", stdin: int, stdout: int):
        self._zygote = zygote
        self.stdin: IO[bytes] = os.fdopen(stdin, "wb")
        self.stdout: IO[bytes] = os.fdopen(stdout, "rb")
        self._pid: int | None = None  # once the zygote has said it
        self.returncode: int | None = None
        self.ended_with: str | None = None  # how the zygote ended, where the worker ended with it
        self._killed = False

    @property
    def pid(self) -> int | None:
        """The worker's pid, once the zygote has forked it (None: it never was)."""
        while self._pid is None and self.returncode is None:
            self._zygote.pump(None)
        return self._pid

    def _started(self, pid: int) -> None:
        self._pid = pid
        if self._killed:  # killed before the zygote forked it
            self._signal()

    def _signal(self) -> None:
        if self._pid is not None and self.returncode is None:
            try:
                os.kill(self._pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def poll(self) -> int | None:
        if self.returncode is None:
            self._zygote.pump(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired("irtool worker", timeout)
            self._zygote.pump(left)
        return self.returncode

    def kill(self) -> None:
        self._killed = True
        end = time.monotonic() + KILL_WAIT
        while self._pid is None and self.returncode is None and time.monotonic() < end:
            self._zygote.pump(end - time.monotonic())  # its pid may be on its way
        if self._pid is None and self.returncode is None:  # not forked yet: the zygote is still importing
            self._zygote.stop()  # and so has forked no worker that runs
        self._signal()


class Zygote:
    """The pool's side of a zygote: started at the first :meth:`fork`, ended by :meth:`stop`.
    ``env`` is the workers' environment, less the variables :meth:`fork` passes each one."""

    def __init__(self, python: str, env: dict[str, str]):
        self.python, self.env = python, env
        self._process: subprocess.Popen | None = None
        self._socket: socket.socket | None = None
        self._lifeline: int | None = None  # the write end of the zygote's own lifeline
        self._waiting: deque[Forked] = deque()  # asked for, pid not yet said (the zygote answers in order)
        self._forked: dict[int, Forked] = {}
        self.failed = not available()

    def fork(self, std_fds: tuple[int, int, int], passed: dict[str, int], ours: tuple[int, int]) -> Forked | None:
        """A worker whose stdin, stdout and stderr are ``std_fds``, passed the descriptors of
        ``passed``, each named by its variable (the worker finds its number there); ``ours`` are
        this process's ends of its stdin and stdout.  The descriptors are the worker's from then
        on.  None, with nothing taken, where there is no zygote to fork it (none could be
        started, or it has died): the caller starts the worker as a process of its own."""
        if not self.failed and self._socket is None:
            self._start(std_fds[2])
        if self.failed:
            return None
        fds = [*std_fds, *passed.values()]
        try:
            socket.send_fds(self._socket, [json.dumps({"passed": list(passed)}).encode()], fds)
        except OSError:
            self._died()
            return None
        for fd in fds:  # in flight to the zygote now: this process keeps no end the worker writes to
            os.close(fd)
        worker = Forked(self, *ours)
        self._waiting.append(worker)
        return worker

    def _start(self, stderr: int) -> None:
        """The zygote, its stderr the first worker's (which says what killed it if it dies importing)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        read_end, self._lifeline = lifeline()
        try:
            self._process = subprocess.Popen(
                (self.python, "-m", "irtool.jobs.zygote"), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=stderr, pass_fds=(theirs.fileno(), read_end),
                env={**self.env, **lifeline_env(read_end), SOCKET_ENV: str(theirs.fileno())})
        except OSError:
            ours.close()
            os.close(self._lifeline)
            self._lifeline, self.failed = None, True
            return
        finally:
            theirs.close()
            os.close(read_end)
        self._socket = ours

    def pump(self, timeout: float | None) -> None:
        """Read what the zygote says within ``timeout`` (None: until it says something)."""
        if self._socket is None:
            return
        ready, _, _ = select.select([self._socket], [], [], timeout)
        while ready and self._socket is not None:
            try:
                data = self._socket.recv(MESSAGE_BYTES, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self._died()
                return
            message = json.loads(data)
            if "pid" in message:
                worker = self._waiting.popleft()
                self._forked[message["pid"]] = worker
                worker._started(message["pid"])
            elif message.get("exit") in self._forked:
                self._forked.pop(message["exit"]).returncode = message["code"]

    def _died(self) -> None:
        """The zygote is gone (or stopped): its workers died with it (the kernel's parent-death
        signal), and those it had not forked never start: they end as it ended."""
        self.failed = True
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None
        code, ours = -signal.SIGKILL, True
        if self._process is not None:
            ours = self._process.poll() is None
            if ours:
                self._process.kill()
            code = self._process.wait()
            self._process = None
        ended = "stopped" if ours else f"died: {exit_text(code)}"
        for worker in self._forked.values():
            worker.returncode = -signal.SIGKILL
            worker.ended_with = f"it ended with the process it was forked from (irtool-zygote), which {ended}"
        self._forked.clear()
        while self._waiting:
            worker = self._waiting.popleft()
            worker.returncode = code
            worker.ended_with = f"the process it was to be forked from (irtool-zygote) {ended} before forking it"

    def stop(self) -> None:
        """End the zygote; a pool stops it after its workers, whose parent it is."""
        self._died()


# ---------------------------------------------------------------------------- the zygote's side
def main() -> None:
    """Import the worker's modules, then fork a worker for each request until the pool ends."""
    control = socket.socket(fileno=int(os.environ.pop(SOCKET_ENV)))
    lifeline_fd = int(os.environ.pop(PIPE_ENV))  # watched below, not by a thread: a fork copies no thread
    set_name("irtool-zygote")
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is for the pool and its workers
    try:
        _preload()
    except BaseException:  # each worker imports it again and fails there, as a worker started alone does
        pass
    import warnings

    warnings.filterwarnings("ignore", category=DeprecationWarning)  # fork() beside numpy's BLAS threads
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        ready, _, _ = select.select([control, wake_read, lifeline_fd], [], [])
        if lifeline_fd in ready and not os.read(lifeline_fd, 4096):
            os._exit(0)  # the pool ended
        if wake_read in ready:
            os.read(wake_read, 4096)
        _reap(control)
        if control in ready:
            data, fds, _, _ = socket.recv_fds(control, MESSAGE_BYTES, MAX_FDS)
            if not data:
                os._exit(0)  # the pool closed its end
            pid = os.fork()
            if pid == 0:
                _child(json.loads(data)["passed"], fds, (control.fileno(), wake_read, wake_write, lifeline_fd))
            for fd in fds:
                os.close(fd)
            control.send(json.dumps({"pid": pid}).encode())


def _preload() -> None:
    """What every job imports: the worker, openvino and the pipeline's modules (0.5 s of the
    CPU of a worker's start), creating nothing: no Core, no plugin, none of OpenVINO's threads."""
    import irtool.jobs.serve  # noqa: F401
    import irtool.lowering.recognize  # noqa: F401
    import irtool.pipeline.build  # noqa: F401
    import irtool.pipeline.device_run  # noqa: F401
    import irtool.pipeline.judging  # noqa: F401
    import irtool.pipeline.prepare  # noqa: F401
    import irtool.runtime.compile  # noqa: F401
    import irtool.runtime.devices  # noqa: F401
    from irtool.runtime.core import openvino_version

    openvino_version()  # imports openvino


def _reap(control: socket.socket) -> None:
    """Say how each ended child ended (as Popen's returncode: a signal negative)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        control.send(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}).encode())


def _child(passed: list[str], fds: list[int], zygotes: tuple[int, ...]) -> None:
    """In the forked worker: the zygote's descriptors closed, its own in place and named in its
    environment, signals as a new process has them, then the worker's loop."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in zygotes:
            os.close(fd)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
        for fd in fds[:3]:
            if fd > 2:
                os.close(fd)
        os.environ.update({name: str(fd) for name, fd in zip(passed, fds[3:])})
        os.environ[PARENT_ENV] = str(os.getppid())
        from irtool.jobs.lifeline import main as worker_main

        worker_main()
        code = 0
    except SystemExit as ended:
        code = ended.code if isinstance(ended.code, int) else (0 if ended.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


if __name__ == "__main__":
    main()
