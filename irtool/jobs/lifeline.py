"""Workers die with the process that started them, however it ends (kill -9 included).

A worker is started as ``python -m irtool.jobs.lifeline``, which sets up two guards and
then runs the worker loop (:func:`irtool.jobs.serve.main`):

* on Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills the worker when its
  parent ends.  The parent may already have ended before the call; the worker then sees a
  parent pid other than the one in ``IRTOOL_PARENT_PID`` and exits at once;
* everywhere, a pipe: the parent keeps the write end of a pipe whose read end the worker
  watches from a thread (fd ``IRTOOL_LIFELINE_FD``).  When the parent ends, the kernel
  closes the write end, the read returns end-of-file and the worker exits, even while a
  plugin holds its main thread (a hung compile).

Without the variables (a worker started by hand) neither guard is set.
"""
from __future__ import annotations

import os
import sys
import threading

from irtool.core.processes import kill_with_parent, set_name

PARENT_ENV = "IRTOOL_PARENT_PID"
PIPE_ENV = "IRTOOL_LIFELINE_FD"
EXIT_ORPHANED = 70  # what an orphaned worker exits with (it is killed by SIGKILL where prctl exists)


def lifeline() -> tuple[int, int]:
    """A pipe for one worker: (read end, to pass to the worker; write end, for the parent to keep)."""
    read_end, write_end = os.pipe()
    return read_end, write_end


def worker_env(read_end: int) -> dict[str, str]:
    """The variables that tell a worker its parent and its end of the lifeline."""
    return {PARENT_ENV: str(os.getpid()), PIPE_ENV: str(read_end)}


def die_with_parent() -> None:
    """Set both guards from the environment (see the module docstring)."""
    parent = os.environ.get(PARENT_ENV)
    if parent and sys.platform.startswith("linux"):
        kill_with_parent()  # no prctl: the pipe still holds
        if str(os.getppid()) != parent:  # the parent ended before the signal was asked for
            os._exit(EXIT_ORPHANED)
    fd = os.environ.get(PIPE_ENV)
    if fd and fd.isdigit():
        threading.Thread(target=_watch, args=(int(fd),), name="irtool-lifeline", daemon=True).start()


def _watch(fd: int) -> None:
    """Block on the lifeline until the parent's end closes, then end this process at once."""
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass
    os._exit(EXIT_ORPHANED)


def main() -> None:
    set_name("irtool-worker")
    die_with_parent()
    from irtool.jobs.serve import main as worker_main

    worker_main()


if __name__ == "__main__":
    main()
