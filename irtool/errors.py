"""The exceptions library code raises when one failure stops the work.

Each carries ``message``: the one line the CLI shows (exit 2).  ``IrtoolError`` is the
user's input, file or device; ``IrtoolBug`` is irtool's own fault and says so.
"""
from __future__ import annotations

import difflib
from typing import Iterable


class IrtoolError(Exception):
    """A case, model, input or device that stops the work; ``message`` is the one line to show."""

    exit_code = 2  # what the CLI exits with: the work could not be done

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InputError(IrtoolError, ValueError):
    """A value handed to a library function (the reference's inputs and attributes) that it cannot
    take; a ValueError too, as the reference's callers expect."""


class IrtoolBug(IrtoolError, RuntimeError):
    """Something irtool itself got wrong (not the user's file or device); the CLI says so."""

    def __init__(self, message: str):
        super().__init__(f"irtool bug: {message}")
        self.message = f"irtool bug: {message}"


class RunError(IrtoolError):
    """The model, its inputs or the device stop the run."""


class Unsupported(RunError):
    """OpenVINO does not implement a feature the model uses (an ONNX activation beyond Relu, Sigmoid and
    Tanh): reported as unsupported, never as a wrong result (``irtool run`` exits 2; the harness skips)."""


class RunSkipped(IrtoolError):
    """The run cannot happen as asked on this machine (a device that is absent here, a precision the device
    lacks): nothing is judged."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean validate?)`` when one of ``choices`` is close to ``word`` (case aside), else ""."""
    choices = list(choices)
    same = [choice for choice in choices if choice.lower() == word.lower()]
    close = same or difflib.get_close_matches(word, choices, n=1, cutoff=0.6) \
        or difflib.get_close_matches(word.upper(), choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""
