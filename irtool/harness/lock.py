"""One writer per report dir: a lock file that names the command holding it.

REPORT_DIR/.irtool.lock is locked with ``flock`` for the whole of a harness run (and of a
``report render`` or ``report merge`` into the dir) and holds the holder's command, pid, host
and start time.  A second command on the same dir finds it locked and refuses, naming the
first.  The kernel drops the lock when its process ends, however it ends
(kill -9 included), so a lock left by a dead run is simply taken over; the file is
removed when the run ends normally.  Worker processes do not inherit it (close-on-exec).
"""
from __future__ import annotations

import json
import os
import socket
from datetime import datetime, timezone
from pathlib import Path

from irtool.core.documents import load_json
from irtool.core.errors import IrtoolError
from irtool.core.files import FileError, open_lock_file

LOCK_NAME = ".irtool.lock"
COMMANDS = ("harness run", "report render", "report merge")  # what a lock names as its holder

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux or macOS: no lock, as before
    fcntl = None  # type: ignore[assignment]


class LockedError(IrtoolError):
    """The report dir is in use by another run."""


class ReportDirLock:
    """Held from :meth:`acquire` to :meth:`release` (or the end of the process)."""

    def __init__(self, path: Path, fd: int | None):
        self.path = path
        self._fd = fd

    @classmethod
    def acquire(cls, report_dir: Path, command: str = "harness run", option: str = "--report-dir") \
            -> "ReportDirLock":
        """The lock of ``report_dir`` for ``command`` (what a refused one is told holds it); LockedError
        naming the holder, and ``option`` to give another dir, when another command holds it."""
        path = report_dir / LOCK_NAME
        if fcntl is None:  # pragma: no cover
            return cls(path, None)
        for _ in range(10):  # another run may remove the file between our open and our lock
            fd = _open(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder, what = _holder(fd)
                os.close(fd)
                raise LockedError(f"{report_dir}: another irtool {what} is using this report dir ({holder}); "
                                  f"wait for it to end, or give another {option}") from None
            if _same_file(fd, path):
                os.ftruncate(fd, 0)
                os.write(fd, json.dumps({"command": command, "pid": os.getpid(), "host": socket.gethostname(),
                                         "started": datetime.now(timezone.utc).isoformat(timespec="seconds")})
                         .encode())
                return cls(path, fd)
            os.close(fd)  # the file we locked was removed by the run that ended: lock the new one
        raise LockedError(f"{path}: could not lock it; another run keeps replacing it")

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # while still holding it: the next run locks a fresh file
        finally:
            os.close(self._fd)
            self._fd = None


def _open(path: Path) -> int:
    try:
        return open_lock_file(path, "report dir's lock file")
    except FileError as error:
        raise LockedError(error.message) from None


def _same_file(fd: int, path: Path) -> bool:
    try:
        found = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (found.st_dev, found.st_ino) == (mine.st_dev, mine.st_ino)


def _holder(fd: int) -> tuple[str, str]:
    """Who holds the lock, from what it wrote: "pid 123 on host-1, started 2026-...", or as much as is
    known; and its command ("harness run", "report merge")."""
    try:
        data = load_json(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict) or not data:
        return "its details are not written yet", "command"
    command = data.get("command", "harness run")  # an older irtool's lock: only its harness took one
    what = command if command in COMMANDS else "command"
    return f"pid {data.get('pid', '?')} on {data.get('host', '?')}, started {data.get('started', '?')}", what
