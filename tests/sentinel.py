"""A sentinel tree around a test's work folder: proof that nothing outside it was read or written.

The hostile-input tests (tests/test_hostile_*.py) import this (it is not a pytest conftest).
:class:`Sentinel` fills folders outside the work folder with files a hostile model might name
(``data.bin``, ``model.bin``, ``inputs.npz``, ``secret``) and watches them with the kernel's
inotify (through libc; in this process and every child): any open, read, write, creation,
deletion or change of attributes of a file in a watched folder is an event, whoever caused it.
:meth:`Sentinel.touched` lists them; a test asserts it is empty.
"""
from __future__ import annotations

import ctypes
import os
import struct
from pathlib import Path

IN_ACCESS, IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE, IN_OPEN = 0x1, 0x2, 0x4, 0x8, 0x20
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
WATCHED = (IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_OPEN | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE
           | IN_DELETE)
NAMES = {IN_ACCESS: "read", IN_MODIFY: "written", IN_ATTRIB: "attributes changed", IN_CLOSE_WRITE: "written",
         IN_OPEN: "opened", IN_MOVED_FROM: "moved away", IN_MOVED_TO: "moved in", IN_CREATE: "created",
         IN_DELETE: "deleted"}


class Sentinel:
    """Files in ``folders`` (created) that must stay untouched while a test runs."""

    def __init__(self, folders: list[Path], contents: dict[str, bytes]):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        assert self.fd >= 0, f"inotify_init1: errno {ctypes.get_errno()}"
        self.folders: dict[int, Path] = {}
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
            for name, data in contents.items():
                (folder / name).write_bytes(data)
        for folder in folders:
            wd = self.libc.inotify_add_watch(self.fd, os.fsencode(folder), WATCHED)
            assert wd >= 0, f"inotify_add_watch {folder}: errno {ctypes.get_errno()}"
            self.folders[wd] = folder
        self.touched()  # nothing so far counts

    def touched(self) -> list[str]:
        """``path: what happened`` for every file event in the sentinel folders since the last call."""
        found = []
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return found
            offset = 0
            while offset < len(data):
                wd, mask, _, length = struct.unpack_from("iIII", data, offset)
                name = data[offset + 16:offset + 16 + length].rstrip(b"\0").decode(errors="replace")
                offset += 16 + length
                if name:  # an event on the folder itself (listing it) reads no file
                    what = [word for bit, word in NAMES.items() if mask & bit]
                    found.append(f"{self.folders.get(wd, '?')}/{name}: {', '.join(what)}")

    def close(self) -> None:
        os.close(self.fd)
