"""``reduce --check-script FILE``: the user's ``check(result) -> bool``, run in a process of its own
that reduce can stop.

The script is the user's code: it may loop, call ``sys.exit(0)``, ``os._exit``, or crash.  In reduce's
own process any of these would end or hang the reduction (and a ``sys.exit(0)`` would end it with
exit 0 and no reproducer).  So it is imported by a small driver in a child Python, which answers
one JSON line per result it is sent: whether ``check()`` holds, or what went wrong.  Each answer
is waited for at most the candidates' ``--timeout`` (and, for a candidate, no later than the
``--budget``'s end, the wait for its import included: :class:`CheckTimeout` says which), then the
child is killed with its process group (what check() started dies with it).  The script's
exit, whatever its code, is an error naming the script, never reduce's exit.  The child dies
with reduce (and ignores Ctrl-C: reduce's interrupt is reduce's to handle).
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from irtool.core.files import FileError, check_readable
from irtool.jobs.records import CaseResult, result_to_json
from irtool.reduce.errors import ReduceError

DEFAULT_TIMEOUT = 60.0  # seconds for an answer, until reduce says otherwise

# The driver: import the script, then answer each result line with {"holds": bool} or {"error": text}.
_DRIVER = r'''
import ctypes, importlib.util, json, os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
try:
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with reduce
except Exception:
    pass
requests = os.fdopen(int(sys.argv[2]), "r", encoding="utf-8")
answers = os.fdopen(int(sys.argv[3]), "w", encoding="utf-8")
def answer(**message):
    answers.write(json.dumps(message) + "\n")
    answers.flush()
def said(error, where):
    if isinstance(error, SystemExit):
        return f"{where} called sys.exit({error.code!r}) instead of returning True or False"
    return f"{where} raised {type(error).__name__}: {error}"
try:
    spec = importlib.util.spec_from_file_location("irtool_reduce_check", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
except BaseException as error:
    answer(error=said(error, "importing it"))
    sys.exit(0)
check = getattr(module, "check", None)
if not callable(check):
    answer(error="defines no function check(result: dict) -> bool")
    sys.exit(0)
answer(ready=True)
for line in requests:
    try:
        answer(holds=bool(check(json.loads(line))))
    except BaseException as error:
        answer(error=said(error, "check()"))
'''


class CheckTimeout(ReduceError):
    """check() gave no answer in time; ``budget``: the time left of --budget was what ran out."""

    def __init__(self, message: str, budget: bool):
        super().__init__(message)
        self.budget = budget


class CheckScript:
    """The criterion of a check script, run in its own process (see the module docstring).
    ``timeout`` (seconds per answer) and ``deadline`` (time.monotonic() of the budget's end, or
    None) are set by the reduction that uses it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.text = f"--check-script {self.path}: check(result) is true"
        self.timeout = DEFAULT_TIMEOUT
        self.deadline: float | None = None
        self._process: subprocess.Popen | None = None
        self._requests: IO[str] | None = None
        self._answers: int | None = None
        self._buffer = b""

    def holds(self, result: CaseResult) -> bool:
        self._start()
        try:
            assert self._requests is not None
            self._requests.write(json.dumps(result_to_json(result), allow_nan=False) + "\n")
            self._requests.flush()
        except OSError:  # it has gone: the answer's wait says how it ended
            pass
        answer = self._answer("check()")
        if "error" in answer:
            self.close()
            raise ReduceError(f"{self.path}: {answer['error']}")
        return bool(answer.get("holds"))

    def _start(self) -> None:
        """The child, and its answer that the script imported and defines check()."""
        if self._process is not None:
            return
        request_read, request_write = os.pipe()
        answer_read, answer_write = os.pipe()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _DRIVER, str(self.path), str(request_read), str(answer_write)],
                stdin=subprocess.DEVNULL, pass_fds=(request_read, answer_write), start_new_session=True)
        except OSError as error:
            raise ReduceError(f"{self.path}: cannot start a Python for it ({error.strerror})") from None
        finally:
            os.close(request_read)
            os.close(answer_write)
        self._requests = os.fdopen(request_write, "w", encoding="utf-8")
        self._answers = answer_read
        answer = self._answer("importing it")
        if "error" in answer:
            self.close()
            raise ReduceError(f"{self.path}: {answer['error']}")

    def _answer(self, what: str) -> dict[str, Any]:
        """The next answer line; CheckTimeout when none comes in time, ReduceError when the child ends."""
        limit = time.monotonic() + self.timeout
        end = limit if self.deadline is None else min(limit, self.deadline)
        while b"\n" not in self._buffer:
            left = end - time.monotonic()
            ready = select.select([self._answers], [], [], max(left, 0.0))[0] if left > 0 else []
            if not ready:
                self.close()
                budget = self.deadline is not None and self.deadline < limit
                raise CheckTimeout(f"{self.path}: {what} gave no answer within "
                                   + ("the time left of --budget" if budget else f"{self.timeout:g} s (--timeout)")
                                   + "; it was stopped", budget)
            chunk = os.read(self._answers, 1 << 16)
            if not chunk:
                code = self._process.wait() if self._process is not None else None
                self.close()
                raise ReduceError(f"{self.path}: {what} ended its process (exit code {code}) instead of returning "
                                  f"True or False; a check script's exit is never reduce's")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            self.close()
            raise ReduceError(f"{self.path}: its process wrote what is not an answer") from None

    def close(self) -> None:
        """End the child (killed: its check() may be looping) and let go of its pipes."""
        process, self._process = self._process, None
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # its group: the child and what check() started
            except OSError:  # the group has gone
                pass
            process.wait()
        for closing in (self._requests,):
            try:
                if closing is not None:
                    closing.close()
            except OSError:
                pass
        if self._answers is not None:
            os.close(self._answers)
        self._requests, self._answers, self._buffer = None, None, b""


def load_check_script(path: Path, timeout: float = DEFAULT_TIMEOUT, deadline: float | None = None) -> CheckScript:
    """Start a check script's process; ReduceError if the file is missing, does not import within
    ``timeout`` seconds (nor by ``deadline``, the --budget's end as time.monotonic()), exits, or
    has no check()."""
    path = Path(path)
    try:
        check_readable(path, "check script")
    except FileError as error:
        raise ReduceError(error.message) from None
    script = CheckScript(path)
    script.timeout, script.deadline = timeout, deadline
    script._start()
    return script
