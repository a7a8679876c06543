"""Small pieces every sub-command shares: the error line and the usage error."""
from __future__ import annotations

import sys


class UsageError(Exception):
    """A bad command line or an unreadable path: one line on stderr, exit 2."""


def fail(message: str) -> None:
    print(f"irtool: error: {message}", file=sys.stderr)
