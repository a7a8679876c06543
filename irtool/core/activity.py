"""What this process is doing, noted where a parent that supervises it can read it after a crash.

``irtool run``, ``reduce`` and ``validate`` hand a user's file to code that can crash the process
(OpenVINO's frontends segfault on a corrupt .tflite) or never return (the inference of a Loop
whose condition never turns false).  So their console entry forks: the child runs the command,
the parent only waits (irtool.cli.supervisor).  A child killed by a signal leaves no line of its own; the parent says it
in one line, from the note kept here: the file the child is on, what it is doing with it ("reading it with
OpenVINO's TensorFlow Lite frontend"), by when that step must end (``run --timeout``: the parent
stops the child past it), and what to print instead of the command's JSON report.

The note lives in memory shared with the parent (an anonymous mapping made before the fork), in
two slots: a note is written whole into the slot not in use, then that slot is made the current
one by one byte, so a child that dies mid-write leaves the previous note readable.  A harness
worker keeps its notes the same way in a file its pool made (:func:`note_file`), so that a job
whose worker died or was killed names the step it was in.  Without either (the library called
from Python, a test) nothing is noted and a step costs one check.
"""
from __future__ import annotations

import mmap
import os
import time
from collections import namedtuple
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the supervising parent imports this module before anything else: kept light
    from typing import IO, Any, Mapping

_SLOT = 1 << 15  # bytes of one note: a path, a line of what is done, a JSON report
_HEADER = 1  # the byte that says which slot holds the current note
_TEXT_LIMIT = 2000  # characters of a path or a step's words kept in a note
_ANSWERED = _HEADER + 2 * _SLOT  # the byte a child sets once its Python code has taken an interrupt
SIZE = _ANSWERED + 1  # bytes of the shared note
FILE_ENV = "IRTOOL_ACTIVITY_FD"  # names the note file's descriptor in a child that keeps its notes in one

_shared: mmap.mmap | None = None
_steps: list[tuple[str | None, str, float | None]] = []  # (subject, what, deadline) from outermost to innermost
_limit: float | None = None  # seconds a bounded step may take (run --timeout)
_report: Mapping[str, Any] | None = None  # the JSON object the command's report would have been
_failed: list = []  # the Note of the step a MemoryError left


# What a supervised child was doing when it was last noted: the file (or case) it was on, the step
# ("compiling it for CPU"), the time.monotonic() by which the step must end and the seconds it was
# given, and the JSON object to print for the command's report.
Note = namedtuple("Note", "subject what deadline limit report", defaults=(None,) * 5)


def share() -> mmap.mmap:
    """Make the shared note (the parent calls this once, before it forks); the child writes it."""
    global _shared
    _shared = mmap.mmap(-1, SIZE)
    return _shared


def note_file() -> IO[bytes]:
    """A file for a child's notes (a harness worker's: irtool.jobs.pool), to pass to the child
    with its descriptor in the variable FILE_ENV; :func:`read_file` reads it after the child ends."""
    import tempfile

    file = tempfile.TemporaryFile()
    file.truncate(SIZE)
    return file


def share_from_environment() -> None:
    """In a child started with a note file (FILE_ENV): write this process's notes there."""
    global _shared
    fd = os.environ.get(FILE_ENV, "")
    if fd.isdigit():
        try:
            _shared = mmap.mmap(int(fd), SIZE)
        except (OSError, ValueError):  # not the file it should be: the notes are only lost
            _shared = None


def read_file(file: IO[bytes]) -> Note:
    """The last note a child wrote into ``file`` (from :func:`note_file`)."""
    try:
        return read(os.pread(file.fileno(), SIZE, 0))
    except (OSError, ValueError):
        return Note()


def set_step_limit(seconds: float | None) -> None:
    """Each bounded step (reading, converting, compiling, inferring) may take at most ``seconds``."""
    global _limit
    _limit = seconds
    _write()


def step_limit() -> float | None:
    """The seconds each bounded step may take (None: no limit is set)."""
    return _limit


def set_report(document: Mapping[str, Any] | None) -> None:
    """The JSON object the parent prints, its ``verdict`` and ``error`` filled in, if the child dies
    or is stopped before it prints its own (``run --format json``: a consumer always gets one)."""
    global _report
    _report = document
    _write()


class doing:  # noqa: N801 - used as a context manager: ``with doing(path, "reading it with OpenVINO"):``
    """A step of the work, noted for the supervisor while it lasts: ``subject`` (None: the
    enclosing step's), what is done with it, and whether the step is ``bounded`` by the step limit."""

    __slots__ = ("subject", "what", "bounded")

    def __init__(self, subject: object | None, what: str, bounded: bool = True):
        self.subject = None if subject is None else str(subject)
        self.what = what
        self.bounded = bounded

    def __enter__(self) -> "doing":
        if _shared is not None:
            deadline = time.monotonic() + _limit if self.bounded and _limit is not None else None
            _steps.append((self.subject, self.what, deadline))
            _write()
        return self

    def __exit__(self, kind: type | None, *exc_info: object) -> None:
        if _shared is not None and _steps:
            if kind is not None and issubclass(kind, MemoryError) and not _failed:  # where the allocation failed, for its one line
                _failed.append(current())
            _steps.pop()
            _write()


def failed_at() -> Note:
    """The step in which a MemoryError was raised (it has since left every step), else the current one."""
    return _failed[0] if _failed else current()


def current() -> Note:
    """This process's own note (what :func:`read` would give the parent)."""
    subject = next((s for s, _, _ in reversed(_steps) if s is not None), None)
    what = _steps[-1][1] if _steps else None
    deadline = next((d for _, _, d in reversed(_steps) if d is not None), None)
    return Note(subject, what, deadline, _limit, _report)


def _write() -> None:
    if _shared is None:
        return
    import json

    note = current()
    data = json.dumps({"subject": _cut(note.subject), "what": _cut(note.what), "deadline": note.deadline,
                       "limit": note.limit, "report": note.report}).encode("ascii")
    if len(data) > _SLOT - 4:  # a report too big to keep: the line is what matters
        data = json.dumps({"subject": _cut(note.subject), "what": _cut(note.what), "deadline": note.deadline,
                           "limit": note.limit}).encode("ascii")
    slot = 1 - _shared[0]
    start = _HEADER + slot * _SLOT
    _shared[start:start + 4] = len(data).to_bytes(4, "little")
    _shared[start + 4:start + 4 + len(data)] = data
    _shared[0] = slot


def answer_interrupt() -> None:
    """Say that this process's Python code has taken an interrupt: it is not held in a plugin's
    call, and its supervisor leaves it time to end by itself (irtool.cli.supervisor).  One byte,
    set from a signal handler: nothing to tear."""
    if _shared is not None:
        _shared[_ANSWERED] = 1


def interrupt_answered(shared: mmap.mmap | bytes) -> bool:
    """Whether the child has said (:func:`answer_interrupt`) that it took an interrupt."""
    return len(shared) >= SIZE and shared[_ANSWERED] == 1


def read(shared: mmap.mmap | bytes) -> Note:
    """The last note the child wrote into ``shared`` (the parent calls this); an empty Note if none."""
    import json

    if len(shared) < SIZE or shared[0] not in (0, 1):
        return Note()
    start = _HEADER + shared[0] * _SLOT
    size = int.from_bytes(shared[start:start + 4], "little")
    if not 0 < size <= _SLOT - 4:
        return Note()
    try:
        data = json.loads(shared[start + 4:start + 4 + size])
        return Note(data.get("subject"), data.get("what"), data.get("deadline"), data.get("limit"),
                    data.get("report"))
    except (ValueError, AttributeError):
        return Note()


def _cut(text: str | None) -> str | None:
    return text if text is None or len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT - 3] + "..."
