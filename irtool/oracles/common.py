"""What the framework runtimes share: the refusal of a model, and the line that says a runtime is missing."""
from __future__ import annotations

from irtool.core.errors import RunError


class OracleRefused(Exception):
    """The runtime would not load or run the model; the message is its reason, on one line."""


def refused(error: BaseException) -> OracleRefused:
    """A runtime's exception as one line: its last line that says something (their messages run
    over many lines of C++ context)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return OracleRefused(lines[-1] if lines else type(error).__name__)


def not_installed(oracle: str, what: str) -> RunError:
    """The one line for a runtime that is not installed: which extra brings it."""
    return RunError(f"--compare-with {oracle}: {what} is not installed (pip install 'irtool[{oracle}]')")
