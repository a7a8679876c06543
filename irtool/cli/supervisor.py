"""``run``, ``reduce`` and ``validate`` supervised: the command runs in a forked child, and this
process only waits for it.

These commands hand a user's file to code that can end the process by a signal (OpenVINO's
TensorFlow Lite frontend segfaults on a .tflite with one byte changed, measured with openvino
2026.4.1) or never return (the inference of a Loop whose condition never turns false).  The console
entry forks before it has loaded anything but the interpreter; the child runs the command as an
unsupervised process would, noting each risky step (irtool.core.activity), and the parent:

- exits with the child's exit code, and prints nothing of its own while the child lives;
- says a child that died of a signal nobody sent it (SIGSEGV, SIGABRT, SIGKILL from the
  out-of-memory killer) in one line naming the file, the step and the signal, exit 2 (and, for
  ``run --format json``, prints the JSON object the run would have: verdict ``error``);
- stops (SIGKILL) a child whose step runs past its limit (``run --timeout``): one line, exit 2,
  JSON verdict ``timeout``;
- passes on SIGINT, SIGTERM and SIGHUP sent to it alone (``kill PID``, a test's
  ``send_signal``); a terminal's Ctrl-C reaches the child as it always did (the parent leaves it
  to the child), and a child that dies of a signal the parent was sent too makes the parent die
  of it as well.  A child whose Python code has not taken such a signal within 2 s (it cannot
  while a plugin's call holds the process: an endless inference), or has not ended 5 s after it
  took it, is killed, and the parent ends as the child would have: ``interrupted``, exit 130,
  for Ctrl-C.  (The child's handler says it took the signal in the shared note.)

What it costs a run: one fork of a small process, and a parent asleep in sigtimedwait, which
wakes twice a second to read the child's note for a step's deadline.
"""
from __future__ import annotations

import os
import signal
import time
from typing import TYPE_CHECKING

from irtool.core import activity

if TYPE_CHECKING:  # typing's names only: this module loads before any command, kept light
    from typing import Sequence

COMMANDS = frozenset({"run", "reduce", "validate"})
EXIT_FAILED = 2
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_WAITED = frozenset({signal.SIGCHLD, *_FORWARDED})
_SI_KERNEL = 0x80  # si_code of a signal the kernel sent (a terminal's Ctrl-C or hangup), on Linux
_POLL = 0.5  # seconds between looks at the child's note, for its step's deadline
_GRACE = 5.0  # seconds an interrupted child that took the interrupt has to end by itself
_UNANSWERED = 2.0  # seconds after which a child that has not taken it is held in a plugin's call that may not return


def command_of(argv: Sequence[str]) -> str | None:
    """The sub-command a command line names, as the parser will find it: its first word that is
    not an option."""
    return next((word for word in argv if not word.startswith("-")), None)


def supervise(argv: Sequence[str]) -> int | None:
    """For a supervised command: fork; in the child return None (it goes on to run the command),
    in the parent wait for the child and return the exit code.  None at once for any other
    command, or where there is no fork (the command then runs in this process)."""
    command = command_of(argv)
    if command not in COMMANDS or not hasattr(os, "fork") or not hasattr(signal, "sigtimedwait"):
        return None
    shared = activity.share()
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _WAITED)  # nothing delivered: waited for, one by one
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
        _child_setup(parent)
        return None
    return _wait(child, shared, command, before)


def _child_setup(parent: int) -> None:
    """The child dies with the parent (kill -9 of the parent leaves no command running on), and a
    second interrupt that is the first delivered twice (to the process group, and passed on by the
    parent) is not a second KeyboardInterrupt."""
    from irtool.cli.common import interrupt_once
    from irtool.core.processes import kill_with_parent

    kill_with_parent()
    if os.getppid() != parent:  # the parent ended before the signal was asked for
        os._exit(EXIT_FAILED)
    signal.signal(signal.SIGINT, interrupt_once)


def _wait(child: int, shared: object, command: str, mask: object) -> int:
    received: dict[int, float] = {}  # signal -> when it first came
    stopped: activity.Note | None = None
    while True:
        note = activity.read(shared)
        wait = _POLL if note.deadline is None else min(_POLL, max(0.0, note.deadline - time.monotonic()))
        found = signal.sigtimedwait(_WAITED, wait)
        if found is not None and found.si_signo in _FORWARDED:
            received.setdefault(found.si_signo, time.monotonic())
            if found.si_code != _SI_KERNEL:  # sent to this process: the child has not had it
                _send(child, found.si_signo)
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            break
        now = time.monotonic()
        note = activity.read(shared)
        if stopped is None and note.deadline is not None and now > note.deadline:
            stopped = note
            _send(child, signal.SIGKILL)
        if received and now - min(received.values()) > (
                _GRACE if activity.interrupt_answered(shared) else _UNANSWERED):
            _send(child, signal.SIGKILL)  # held in a plugin's call it cannot stop itself; or it did not in time
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if stopped is not None:
        return _said(command, stopped, "timeout", _timeout_text(command, stopped))
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    signum = os.WTERMSIG(status)
    if signum == signal.SIGKILL and received:  # stopped here after an interrupt it could not act on
        signum = min(received, key=received.__getitem__)
        if signum == signal.SIGINT:  # said by the console entry, as the child would have said it
            raise KeyboardInterrupt
    if signum in received:  # it died of what this process was sent too: so does this one
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum
    return _said(command, activity.read(shared), "error", _crash_text(command, activity.read(shared), signum))


def _send(child: int, signum: int) -> None:
    try:
        os.kill(child, signum)
    except ProcessLookupError:  # it has just ended: waitpid says how
        pass


def _crash_text(command: str, note: activity.Note, signum: int) -> str:
    from irtool.core.processes import signal_text

    said = f"irtool {command} died of {signal_text(signum)}" + (f" while {note.what}" if note.what else "")
    if signum == signal.SIGKILL:
        from irtool.core.memory import limit_text

        said += f" (the kernel's out-of-memory killer ends a process so when memory runs out; {limit_text()})"
    return f"{note.subject}: {said}" if note.subject else said


def _timeout_text(command: str, note: activity.Note) -> str:
    said = f"timeout: still {note.what} after {note.limit:g} s (--timeout {note.limit:g}, for each step); stopped"
    return f"{note.subject}: {said}" if note.subject else f"irtool {command}: {said}"


def _said(command: str, note: activity.Note, verdict: str, message: str) -> int:
    """The child's end in one line on stderr (and its command's JSON report on stdout, if it had one)."""
    from irtool.cli.common import fail
    from irtool.core.jsonable import json_text

    fail(message + ("; nothing was judged" if command == "run" else ""))
    if note.report is not None:
        print(json_text({**note.report, "verdict": verdict, "error": message}, indent=2), flush=True)
    return EXIT_FAILED
