"""Which files of a report dir irtool wrote: a marker file beside them, so that nothing another
tool wrote there is replaced or removed without ``--force``.

REPORT_DIR/.irtool-files.json is ``{"format": FORMAT, "files": {name: "sha256:HEX"}, "folders":
[name, ...]}``: each report file irtool wrote (results.json, junit.xml, report.html) with the
digest of what it wrote, and the folders it owns there (reproducers/, reduced/).  A report
file is irtool's only while its content is what the marker records: one that another tool
wrote, or rewrote after irtool (``pytest --junitxml`` into the same dir), is not, and
neither is a folder the marker does not list.  :func:`check_owned` refuses to go on over
such a file or folder unless forced; :func:`record_owned` updates the marker after a write.
results.jsonl is not listed: it carries its run's identity in its first line
(:mod:`irtool.harness.earlier_run` refuses another run's).

A command that moves several staged files into place (``report render``, ``report merge``:
:mod:`irtool.harness.publish`) records their digests as ``"staged"`` first: until the move is
done, a file is irtool's with its old content or its new one, so a command interrupted half-way
leaves only files irtool owns.
"""
from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Iterable

from irtool.core.documents import load_json
from irtool.core.errors import IrtoolError
from irtool.core.files import RESULTS_LIMIT, FileError, open_regular, read_text, writable_target, write_atomic
from irtool.core.jsonable import json_text

MARKER_NAME = ".irtool-files.json"
FORMAT = "irtool-files/1"
CHUNK = 1 << 20


class NotOwnedError(IrtoolError):
    """A report dir holds a file or folder irtool did not write, which this command would replace."""


def digest(path: Path) -> str:
    """``sha256:HEX`` of a regular file (read in chunks, bounded by RESULTS_LIMIT)."""
    hasher = hashlib.sha256()
    with open_regular(path, "report file", RESULTS_LIMIT) as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            hasher.update(chunk)
    return f"sha256:{hasher.hexdigest()}"


def read_marker(report_dir: Path) -> dict:
    """The marker's record ({"files": {...}, "folders": [...]}); empty when absent or unreadable
    (then nothing in the dir counts as irtool's)."""
    try:
        data = load_json(read_text(report_dir / MARKER_NAME, "marker file", 1 << 20))
    except (FileError, ValueError):
        return {"files": {}, "folders": []}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {"files": {}, "folders": []}
    files, staged = ({k: v for k, v in data[key].items() if isinstance(k, str) and isinstance(v, str)}
                     if isinstance(data.get(key), dict) else {} for key in ("files", "staged"))
    folders = data.get("folders") if isinstance(data.get("folders"), list) else []
    found = {"files": files, "folders": [f for f in folders if isinstance(f, str)]}
    return {**found, "staged": staged} if staged else found


def not_owned(report_dir: Path, files: Iterable[str], folders: Iterable[str] = ()) -> list[str]:
    """Those of ``files`` and ``folders`` in ``report_dir`` that exist and are not irtool's, each
    with why ("junit.xml (not written by irtool)")."""
    marker = read_marker(report_dir)
    found = []
    for name in files:
        path = report_dir / name
        if not os.path.lexists(path):
            continue
        recorded = marker["files"].get(name)
        staged = marker.get("staged", {}).get(name)  # a move into place that was interrupted: either is irtool's
        try:
            same = (recorded or staged) is not None and stat.S_ISREG(os.lstat(path).st_mode) and \
                digest(path) in (recorded, staged)
        except (OSError, FileError):
            same = False
        if not same:
            found.append(f"{name} (not written by irtool)" if recorded is None
                         else f"{name} (changed since irtool wrote it)")
    for name in folders:
        path = report_dir / name
        if not os.path.lexists(path):
            continue
        if os.path.islink(path) or not path.is_dir():
            found.append(f"{name} (not a folder irtool made: {'a symlink' if os.path.islink(path) else 'a file'})")
        elif name not in marker["folders"]:
            found.append(f"{name}/ (not made by irtool)")
    return found


def check_owned(report_dir: Path, files: Iterable[str], folders: Iterable[str] = (), force: bool = False,
                option: str = "--report-dir") -> None:
    """NotOwnedError naming what irtool would replace in ``report_dir`` that it did not write,
    unless ``force``.  A symlinked folder is refused even then: irtool would write through it; and
    a report file that is no regular file (a FIFO, a folder, a link to a device: FileError)."""
    for name in files:  # what no --force makes a file irtool may write over: checked before a run, not after it
        writable_target(report_dir / name, "report")
    found = not_owned(report_dir, files, folders)
    links = [name for name in folders if os.path.islink(report_dir / name)]
    if links:
        raise NotOwnedError(f"{report_dir / links[0]}: a symlink where irtool keeps its {links[0]} folder; "
                            f"remove it or give another {option}")
    if found and not force:
        raise NotOwnedError(f"{report_dir}: holds {', '.join(found)}, which this command would replace; "
                            f"--force replaces it, or give another {option}")


def record_owned(report_dir: Path, files: Iterable[str] = (), folders: Iterable[str] = (),
                 staged: dict[str, str] | None = None) -> None:
    """Add ``files`` (with the digest of what is in them now) and ``folders`` to the marker; with
    ``staged`` (name -> digest), record those as the content the files are about to take."""
    marker = read_marker(report_dir)
    for name in files:
        marker["files"][name] = digest(report_dir / name)
        marker.get("staged", {}).pop(name, None)
    if staged:
        marker["staged"] = {**marker.get("staged", {}), **staged}
    if not marker.get("staged"):
        marker.pop("staged", None)
    marker["folders"] = sorted(set(marker["folders"]) | set(folders))
    write_atomic(report_dir / MARKER_NAME, json_text({"format": FORMAT, **marker}, indent=1) + "\n",
                 "marker file")
