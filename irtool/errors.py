"""The exceptions library code raises when one failure stops the work.

Each carries ``message``: the one line the CLI shows (exit 2).  ``IrtoolError`` is the
user's input, file or device; ``IrtoolBug`` is irtool's own fault and says so.
"""
from __future__ import annotations


class IrtoolError(Exception):
    """A case, model, input or device that stops the work; ``message`` is the one line to show."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class IrtoolBug(RuntimeError):
    """Something irtool itself got wrong (not the user's file or device)."""

    def __init__(self, message: str):
        super().__init__(f"irtool bug: {message}")
        self.message = f"irtool bug: {message}"


class RunError(IrtoolError):
    """The model, its inputs or the device stop the run."""


class RunSkipped(IrtoolError):
    """The run cannot happen as asked on this machine (a precision the device lacks): nothing is judged."""
