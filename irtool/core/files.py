"""Reading and writing the files a user names, safely.

Reading (:func:`read_bytes`, :func:`read_text`, :func:`open_regular`): only a regular file
is read; a directory, a FIFO, a device or a socket is refused before it is opened for
reading (a FIFO is never waited on: the path is ``stat``-ed first, then opened with
O_NONBLOCK and ``fstat``-ed again, so a file swapped in between is caught too), and a
file larger than the caller's bound is refused before it is read.  Every refusal is a
:class:`FileError` whose message names the path, what the file was for and what was
wrong.

Writing (:func:`write_atomic`, :func:`atomic_writer`, :func:`replace_files`): the new
content goes to a temporary name in the target's folder and is renamed into place, so a
reader sees the old file or the new one, whole.  Only a regular file (or nothing) is
replaced: a directory, a device node, a FIFO or a socket at the target is refused.  A
symlink is followed deliberately: the file it points at (at the end of the chain) is
replaced and the link is kept, so ``out.npz -> runs/7/out.npz`` updates ``runs/7/out.npz``.
New files get the mode the user's umask gives (0644 under the usual 022, as ``open()``
would); a replaced file keeps its mode.  :func:`replace_files` replaces several files
(an IR's .xml and .bin) so that a failure part-way restores every old file.

Inputs (:func:`check_not_input`, :func:`check_holds_no_input`): nothing a command writes
may replace a file the same command reads (its model, the model's weights, ``--inputs``,
a suite, a known-failures file, a baseline), compared by resolved path and by inode, so
that a symlink or a hard link to an input counts as the input.

Faults (:func:`injected_write_fault`): ``IRTOOL_WRITE_FAULT`` holds ``enospc:GLOB`` or
``eio:GLOB`` items separated by ``;``; a write whose absolute target path matches GLOB
fails with that error, as a full or broken disk would (GLOB: only ``*`` and ``?`` are wildcards,
irtool.core.globs).  It exists for tests, where a
small tmpfs cannot be mounted.
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator, Sequence

from irtool.core.errors import IrtoolError
from irtool.core.globs import glob_matches

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
TEXT_LIMIT = 16 * MIB  # suites, known-failures files, case.json: hand-written or small
RESULTS_LIMIT = 1 * GIB  # results.json / results.jsonl of a big run
WRITE_FAULT_ENV = "IRTOOL_WRITE_FAULT"


class FileError(IrtoolError):
    """A file that cannot be read or written as asked: one line naming it and why."""


def kind_of(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def size_text(size: float) -> str:
    """Bytes as people read them: 512 bytes, 3.0 KiB, 1.5 GiB."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{int(size)} bytes"


def _os_error(path: Path, what: str, error: OSError, doing: str = "read") -> FileError:
    if error.errno == errno.ENOENT:
        return FileError(f"{path}: no such {what}")
    if error.errno == errno.ENOSPC:
        return FileError(f"{path}: disk full (no space left on device) while writing the {what}")
    return FileError(f"{path}: cannot {doing} the {what} ({error.strerror or error})")


# ----------------------------------------------------------------------------- reading

def open_regular(path: str | Path, what: str = "file", limit: int | None = None,
                 follow: bool = True) -> BinaryIO:
    """The file opened for binary reading, if it is a regular file of at most ``limit`` bytes.

    Never blocks: a FIFO or device is refused from ``stat`` before it is opened, and the
    open itself is non-blocking and checked again with ``fstat``.  ``follow=False``: a
    symlink is refused too (for files in a folder irtool does not own).
    """
    path = Path(path)
    try:
        found = os.stat(path, follow_symlinks=follow)
    except OSError as error:
        raise _os_error(path, what, error) from None
    if not follow and stat.S_ISLNK(found.st_mode):
        raise FileError(f"{path}: the {what} is a symlink; irtool reads it only as a regular file")
    _check_regular(path, what, found, limit)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags | (0 if follow else os.O_NOFOLLOW))
    except OSError as error:
        raise _os_error(path, what, error) from None
    try:
        _check_regular(path, what, os.fstat(fd), limit)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    # Outside the try: once the file object exists it alone closes the descriptor.  An interrupt
    # landing as it is returned would drop it (closing the fd) and then close the fd again, an
    # OSError (EBADF) in place of the interrupt, or the close of a file opened since under that number.
    return os.fdopen(fd, "rb")


def _check_regular(path: Path, what: str, found: os.stat_result, limit: int | None) -> None:
    kind = kind_of(found.st_mode)
    if kind is not None:
        raise FileError(f"{path}: the {what} is {kind}; irtool reads only regular files")
    if limit is not None and found.st_size > limit:
        raise FileError(f"{path}: the {what} is {size_text(found.st_size)}, more than the {size_text(limit)} "
                        f"irtool reads")


def check_readable(path: str | Path, what: str = "file", limit: int | None = None) -> Path:
    """FileError unless ``path`` is a regular file (of at most ``limit`` bytes) this process can
    open: for a file another library reads by its path (OpenVINO's .xml and .bin)."""
    open_regular(path, what, limit).close()
    return Path(path)


def read_bytes(path: str | Path, what: str = "file", limit: int = TEXT_LIMIT) -> bytes:
    """The whole content of a regular file of at most ``limit`` bytes (see :func:`open_regular`)."""
    path = Path(path)
    with open_regular(path, what, limit) as handle:
        try:
            data = handle.read(limit + 1)
        except OSError as error:
            raise _os_error(path, what, error) from None
    if len(data) > limit:  # it grew while being read
        raise FileError(f"{path}: the {what} is more than the {size_text(limit)} irtool reads")
    return data


def read_text(path: str | Path, what: str = "file", limit: int = TEXT_LIMIT) -> str:
    """A regular UTF-8 text file of at most ``limit`` bytes."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FileError(f"{path}: the {what} is not UTF-8 text (byte {error.start})") from None


def open_lock_file(path: str | Path, what: str = "lock file") -> int:
    """A lock file opened read-write (made if absent, mode 0644): never through a symlink (O_NOFOLLOW:
    a link planted there cannot make irtool create a file elsewhere), never blocking (O_NONBLOCK:
    a FIFO there does not hang), and a FileError unless what was opened is a regular file."""
    path = Path(path)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise FileError(f"{path}: the {what} is a symlink; irtool opens it only as a regular file "
                            f"(remove the link)") from None
        raise FileError(f"{path}: cannot open the {what} ({error.strerror})") from None
    kind = kind_of(os.fstat(fd).st_mode)
    if kind is not None:
        os.close(fd)
        raise FileError(f"{path}: the {what} is {kind}; irtool locks only a regular file (remove it)")
    return fd


# ----------------------------------------------------------------------------- writing

def user_file_mode() -> int:
    """The mode a new file gets from ``open()``: 0666 less the umask (read without changing it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no /proc: the classic read, which sets it back at once
    os.umask(mask)
    return 0o666 & ~mask


def writable_target(path: str | Path, what: str = "file") -> Path:
    """The file a write to ``path`` replaces: symlinks followed to the end; FileError if that
    is not a regular file (or absent) in an existing folder."""
    path = Path(path)
    final = Path(os.path.realpath(path))
    try:
        found = os.stat(final)
    except FileNotFoundError:
        found = None
    except OSError as error:
        raise _os_error(path, what, error, "write") from None
    linked = final != path.absolute()
    shown = f"{path} (-> {final})" if linked else path
    if found is not None:
        kind = kind_of(found.st_mode)
        if kind is not None:
            raise FileError(f"{shown}: {kind}; irtool writes the {what} only as a new file or over a regular file")
    if not final.parent.is_dir():
        raise FileError(f"{shown}: folder {final.parent if linked else path.parent} does not exist")
    return final


def injected_write_fault(path: str | Path) -> None:
    """OSError(ENOSPC or EIO) when ``IRTOOL_WRITE_FAULT`` names ``path`` (see the module docstring)."""
    text = os.environ.get(WRITE_FAULT_ENV)
    if not text:
        return
    target = os.path.abspath(path)
    for item in text.split(";"):
        kind, sep, pattern = item.strip().partition(":")
        code = {"enospc": errno.ENOSPC, "eio": errno.EIO}.get(kind.strip().lower())
        if code is not None and sep and glob_matches(pattern.strip(), target):
            raise OSError(code, os.strerror(code), target)


Inputs = Iterable[tuple[str, "str | Path"]]  # (what it is to the command, its path): ("the model", m.xml)


def _identity(path: str | Path) -> tuple[str, tuple[int, int] | None]:
    """A file's resolved path and (device, inode), the latter None when it does not exist."""
    final = os.path.realpath(path)
    try:
        found = os.stat(final)
    except OSError:
        return final, None
    return final, (found.st_dev, found.st_ino)


def check_not_input(target: str | Path, inputs: Inputs, what: str = "file") -> None:
    """FileError if writing ``target`` would replace one of ``inputs`` (by resolved path, or the
    same inode: a symlink or hard link to an input is the input)."""
    final, inode = _identity(target)
    for role, path in inputs:
        other, other_inode = _identity(path)
        if final == other or (inode is not None and inode == other_inode):
            raise FileError(f"{target}: the {what} would replace {role} {path}, which this command reads; "
                            f"write it elsewhere")


def check_holds_no_input(folder: str | Path, inputs: Inputs, what: str = "folder") -> None:
    """FileError if ``folder`` (which a command replaces or empties) is, or holds, one of ``inputs``."""
    final = Path(os.path.realpath(folder))
    for role, path in inputs:
        other = Path(os.path.realpath(path))
        if other == final or other.is_relative_to(final):
            raise FileError(f"{folder}: the {what} holds {role} {path}, which this command reads, and would be "
                            f"replaced; write it elsewhere")


def _new_mode(final: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(final).st_mode)
    except OSError:
        return user_file_mode()


def _temp_file(final: Path, what: str) -> tuple[int, Path]:
    try:
        fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    except OSError as error:
        raise FileError(f"{final}: cannot write the {what} in {final.parent} ({error.strerror})") from None
    return fd, Path(name)


@contextmanager
def atomic_writer(path: str | Path, what: str = "file") -> Iterator[BinaryIO]:
    """A binary handle whose content replaces ``path`` when the block ends without an error
    (see the module docstring); on an error the old file is untouched."""
    final = writable_target(path, what)
    fd, temp = _temp_file(final, what)
    try:
        with os.fdopen(fd, "wb") as handle:
            injected_write_fault(final)
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, _new_mode(final))
        os.replace(temp, final)
    except OSError as error:
        raise _os_error(Path(path), what, error, "write") from None
    finally:
        temp.unlink(missing_ok=True)


def write_atomic(path: str | Path, data: str | bytes, what: str = "file") -> None:
    """Write a file whole or not at all (text as UTF-8); see the module docstring."""
    with atomic_writer(path, what) as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)


def replace_files(moves: Sequence[tuple[Path, Path]], what: str = "file") -> None:
    """Rename each new file onto its target so that all are replaced or none is.

    Every target is checked first (regular or absent); each existing one gets a hard link
    as its backup (so no target is ever missing), then the new files are renamed into
    place.  If a rename fails, the targets already replaced get their backups back (a
    target that did not exist is removed again) and the error is raised.  New files get
    the target's mode, or the umask's.
    """
    finals = [(Path(new), writable_target(target, what)) for new, target in moves]
    backups: list[tuple[Path, Path | None]] = []
    done: list[tuple[Path, Path | None]] = []
    try:
        for _, final in finals:
            injected_write_fault(final)
            backups.append((final, _backup(final) if os.path.lexists(final) else None))
        for (new, final), (_, backup) in zip(finals, backups):
            os.chmod(new, _new_mode(final))
            os.replace(new, final)
            done.append((final, backup))
    except OSError as error:
        for final, backup in reversed(done):
            if backup is not None:
                os.replace(backup, final)
            else:
                final.unlink(missing_ok=True)
        failed = Path(error.filename) if error.filename else finals[0][1]
        raise _os_error(failed, what, error, "write") from None
    finally:
        for _, backup in backups:
            if backup is not None:
                backup.unlink(missing_ok=True)


def _backup(final: Path) -> Path:
    """A hard link to ``final`` beside it (a copy where the file system has no hard links)."""
    fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".old", dir=final.parent)
    os.close(fd)
    backup = Path(name)
    backup.unlink()
    try:
        os.link(final, backup)
    except OSError:
        import shutil

        shutil.copy2(final, backup)
    return backup
