"""Shared by the hostile-input tests: a sentinel tree around the folder a test works in, and a
folder whose disk is full.

:class:`Sentinel` fills a temporary root with files and folders (and a place links may
point at) around ``work``; :meth:`Sentinel.check` asserts that nothing outside ``work``
was added, removed or changed (type, mode, size, content, link target).

:func:`full_folder` makes a folder whose writes fail with ENOSPC: a 4 KiB tmpfs mounted
there where the test runs as root and mount(8) is allowed (as in CI), else
``IRTOOL_WRITE_FAULT=enospc:FOLDER/*`` (irtool's own write-fault hook, irtool.core.files), so
that the test runs either way and asserts the same outcome.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

FILLER = ".filler"  # what fills a full tmpfs


class Sentinel:
    def __init__(self, root: Path):
        self.root = root
        self.work = root / "work"
        self.outside = root / "outside"  # where a hostile link or config points: must stay as it is
        self.work.mkdir()
        (self.outside / "deep").mkdir(parents=True)
        (self.outside / "keep.txt").write_text("sentinel\n")
        (self.outside / "deep" / "data.bin").write_bytes(bytes(range(256)))
        (root / "beside.xml").write_text("<net/>\n")
        self.before = self.snapshot()

    def snapshot(self) -> dict[str, tuple]:
        found = {}
        for folder, dirs, files in os.walk(self.root):
            here = Path(folder)
            if here == self.work:
                dirs[:] = []
                continue
            for name in dirs + files:
                path = here / name
                if path == self.work:
                    continue
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):
                    what: tuple = ("link", os.readlink(path))
                elif stat.S_ISREG(info.st_mode):
                    what = ("file", stat.S_IMODE(info.st_mode), hashlib.sha256(path.read_bytes()).hexdigest())
                else:
                    what = ("other", info.st_mode)
                found[str(path.relative_to(self.root))] = what
        return found

    def check(self) -> None:
        after = self.snapshot()
        added = sorted(set(after) - set(self.before))
        removed = sorted(set(self.before) - set(after))
        changed = sorted(k for k in set(after) & set(self.before) if after[k] != self.before[k])
        assert not (added or removed or changed), f"outside the work folder: added {added}, removed {removed}, " \
                                                  f"changed {changed}"


@contextmanager
def full_folder(folder: Path, monkeypatch, mode: str = "tmpfs") -> Iterator[str]:
    """``folder`` (made here) on a full disk for the block: "tmpfs" where it can be mounted, else
    (or with mode="fault") irtool's write-fault hook.  Yields the way used."""
    folder.mkdir(parents=True, exist_ok=True)
    if mode == "tmpfs" and os.geteuid() == 0 and shutil.which("mount"):
        made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(folder)], capture_output=True)
        if made.returncode == 0:
            try:
                fd = os.open(folder / FILLER, os.O_WRONLY | os.O_CREAT)  # every block taken
                try:
                    while os.write(fd, b"\0" * 1024):
                        pass
                except OSError:
                    pass
                finally:
                    os.close(fd)
                yield "tmpfs"
            finally:
                subprocess.run(["umount", "-l", str(folder)], check=False)
            return
    monkeypatch.setenv("IRTOOL_WRITE_FAULT", f"enospc:{folder.resolve()}/*")
    yield "fault"
