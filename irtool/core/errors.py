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


class OpenVINOFailed(RunError):
    """OpenVINO itself could not read, compile or run the model (not irtool refusing it): for an IR,
    what ``irtool validate`` finds in the file may name the cause OpenVINO does not."""


class Unsupported(RunError):
    """OpenVINO does not implement a feature the model uses (an ONNX activation beyond Relu, Sigmoid and
    Tanh, an opset a release lacks): reported as unsupported, never as a wrong result (``irtool run``
    exits 2; the harness skips, but for :class:`NotConvertible`); ``ops`` names the ops (or tensor types) it lacks, where known."""

    def __init__(self, message: str, ops: tuple[str, ...] = ()):
        super().__init__(message)
        self.ops = ops


class NotConvertible(Unsupported):
    """A frontend cannot convert a model file (its report names the ops and why): an error of the run in
    ``irtool run`` and the harness alike, never a skip, which could hide a conversion regression (an
    IR of an opset a release lacks, or a feature OpenVINO does not implement, stays Unsupported)."""


class RunSkipped(IrtoolError):
    """The run cannot happen as asked on this machine (a device that is absent here, a precision the device
    lacks): nothing is judged."""


_SUGGEST_LIMIT = 100  # characters; a longer word is no misspelling worth difflib's quadratic time


def closest(word: object, choices: Iterable[str]) -> str | None:
    """The one of ``choices`` that ``word`` most likely misspells (case aside), or None.  The one
    rule for suggestions, wherever a closed list of names is checked."""
    if not isinstance(word, str) or not word or len(word) > _SUGGEST_LIMIT:
        return None
    choices = [choice for choice in choices if isinstance(choice, str)]
    same = [choice for choice in choices if choice.lower() == word.lower()]
    close = same or difflib.get_close_matches(word, choices, n=1, cutoff=0.6) \
        or difflib.get_close_matches(word.lower(), [c.lower() for c in choices], n=1, cutoff=0.6)
    if close and close[0] not in choices:  # matched in lower case: the choice as written
        close = [next(c for c in choices if c.lower() == close[0])]
    return close[0] if close else None


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """`` (did you mean validate?)`` when one of ``choices`` is close to ``word`` (see closest), else ""."""
    close = closest(word, choices)
    return f" (did you mean {close}?)" if close else ""
