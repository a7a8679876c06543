"""Small pieces sub-commands share: the error line, the usage error, a run that stopped."""
from __future__ import annotations

import argparse
import signal
import sys
import time
from contextlib import contextmanager
from typing import Any, Iterator

from irtool.core import activity, interrupts
from irtool.core.errors import IrtoolError
from irtool.core.jsonable import json_text
from irtool.core.text import cut, shown

NOTHING_JUDGED = 3  # the exit code of a run that ran but judged nothing


class UsageError(IrtoolError):
    """A bad command line or an unreadable path: one line on stderr, exit 2 (said by cli.main)."""


def fail(message: str) -> None:
    """The error line on stderr: one line whatever a name in it holds, cut to one line's limit (an
    error may quote a value of megabytes)."""
    print(f"irtool: error: {cut(shown(message))}", file=sys.stderr)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a cancelled CI job, kill) stops the work as Ctrl-C does, so what is done is kept."""
    previous = signal.signal(signal.SIGTERM, interrupt_once)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


_REPEAT = 1.0  # seconds within which a second interrupt is the same one, delivered twice
_last_interrupt = [float("-inf")]


def interrupt_once(signum: int, frame: Any) -> None:
    """A SIGINT (or SIGTERM) handler raising KeyboardInterrupt, but not again for one that comes
    within a second of the last: the same interrupt, sent to the process group and passed on by
    the supervisor (irtool.cli.supervisor), which it tells that the interrupt was taken."""
    activity.answer_interrupt()
    now = time.monotonic()
    if now - _last_interrupt[0] < _REPEAT:
        return
    _last_interrupt[0] = now
    if not interrupts.put_off():  # else raised where the steps that must happen together end
        raise KeyboardInterrupt


def stopped(args: argparse.Namespace, verdict: str, message: str, code: int, unsupported: bool = False,
            lacks: tuple[str, ...] = ()) -> int:
    """A ``run`` that stopped before judging: one line on stderr, and with --format json a JSON object
    on stdout too, so a consumer always gets one (``skipped``: why nothing was run, for a skip;
    ``unsupported``: OpenVINO, this release of it, lacks what the model needs; ``unsupported_ops``:
    the ops or tensor types it lacks, where OpenVINO named them)."""
    if code == NOTHING_JUDGED:
        print(f"irtool: {shown(message)}", file=sys.stderr)  # a skip, not an error
    else:
        fail(message)
    if args.format == "json":
        skipped = message.removeprefix("skipped: ") if code == NOTHING_JUDGED else None
        print(json_text(stopped_report(args, verdict, message, skipped, unsupported, lacks), indent=2))
    return code


def stopped_report(args: argparse.Namespace, verdict: str, message: str, skipped: str | None = None,
                   unsupported: bool = False, lacks: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON object of a ``run`` that judged nothing (also what its supervisor prints for a run
    that crashed or ran past --timeout)."""
    return {"model": str(args.model), "verdict": verdict, "error": message, "skipped": skipped, "nodes": [],
            "unsupported": unsupported, "unsupported_ops": list(lacks)}
