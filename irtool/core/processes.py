"""Processes irtool starts or runs in: how a process's end is said, and a child that dies with its
parent."""
from __future__ import annotations

import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
# What the signals a crash or a kill ends a process with mean, in the words a user knows.
_MEANINGS = {"SIGSEGV": "segmentation fault", "SIGABRT": "abort", "SIGBUS": "bus error", "SIGFPE": "arithmetic error",
             "SIGILL": "illegal instruction", "SIGKILL": "killed", "SIGTERM": "terminated"}


def signal_text(signum: int) -> str:
    """``SIGSEGV (segmentation fault)``, ``SIGKILL (killed)``, ``signal 77`` for one Python has no name of."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
    meaning = _MEANINGS.get(name)
    return f"{name} ({meaning})" if meaning else name


def exit_text(code: int) -> str:
    """A subprocess's return code in words: a signal (negative) or ``exit code N``."""
    return signal_text(-code) if code < 0 else f"exit code {code}"


def kill_with_parent(signum: int = signal.SIGKILL) -> None:
    """Linux: the kernel sends this process ``signum`` when its parent ends (prctl PR_SET_PDEATHSIG),
    so that a child left by a parent killed with SIGKILL does not run on alone.  Elsewhere, or
    where prctl cannot be called, nothing."""
    _prctl(PR_SET_PDEATHSIG, signum)


def set_name(name: str) -> None:
    """Linux: the name ``ps -o comm``, ``top`` and ``pgrep`` show for this process (at most 15
    bytes; its command line stays as it is).  Elsewhere nothing."""
    import ctypes

    _prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]))


def _prctl(option: int, value: object) -> None:
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)  # the process's libc
    except (OSError, AttributeError):
        pass
