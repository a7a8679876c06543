"""Small pieces every sub-command shares: the error line and the usage error."""
from __future__ import annotations

import signal
import sys
from contextlib import contextmanager
from typing import Any, Iterator

from irtool.errors import IrtoolError
from irtool.text import cut
from irtool.text import shown


class UsageError(IrtoolError):
    """A bad command line or an unreadable path: one line on stderr, exit 2 (said by cli.main)."""


def fail(message: str) -> None:
    """The error line on stderr: one line whatever a name in it holds, cut to one line's limit (an
    error may quote a value of megabytes)."""
    print(f"irtool: error: {cut(shown(message))}", file=sys.stderr)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a cancelled CI job, kill) stops the work as Ctrl-C does, so what is done is kept."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
