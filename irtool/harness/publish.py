"""``report render`` and ``report merge`` write a report folder as one writer, in one step.

The folder is locked as a harness run locks its report dir (:mod:`irtool.harness.lock`), so
neither writes into a dir a run (or another render or merge) is using.  Everything is written
into a staging folder inside it first (``.irtool-staging``: the reproducers copied from the
runs' own dirs, then results.json, junit.xml and report.html), and moved into place at the
end: the marker records the staged files' digests before the first move
(:mod:`irtool.harness.marker`), so a command interrupted at any moment leaves only files irtool
owns, and one interrupted before the move leaves nothing (a folder it made is removed again).
Killed outright, it leaves its staging folder, which the next command into the folder removes.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Sequence

from irtool.core.files import Inputs, check_holds_no_input, check_not_input, replace_files
from irtool.harness.lock import ReportDirLock
from irtool.harness.marker import check_owned, digest, record_owned
from irtool.harness.report_files import make_folder, write_report_files
from irtool.harness.reports import REPORT_NAMES, BaselineDiff, bring_reproducers
from irtool.harness.store import RunResults, StoreError
from irtool.jobs.worker import REPRODUCERS

STAGING = ".irtool-staging"


def publish_reports(folder: Path, run: RunResults, sources: Sequence[tuple[RunResults, Path]], read: Inputs,
                    command: str, baseline: BaselineDiff | None = None, force: bool = False,
                    own_dir: bool = False) -> tuple[dict[str, Path], list[str]]:
    """Write ``run``'s reports into ``folder``, bringing the reproducers of each of ``sources`` (a run
    and its report dir) there, for ``command`` ("report render", "report merge"); nothing in ``read``
    (the results files read) is replaced.  ``own_dir``: ``folder`` is the run's own report dir
    (render in place: its results say whose it is, and its reproducers are where they are).
    Returns the reports' paths and notes on what was not copied."""
    created = not os.path.lexists(folder)
    folder = make_folder(folder)
    lock = ReportDirLock.acquire(folder, command, option="-o")
    staging = folder / STAGING
    done = False
    try:
        _check_folder(folder, read, force, own_dir)
        _remove(staging)  # a command killed outright left it: what it staged was never moved into place
        try:
            staging.mkdir()
        except OSError as error:
            raise StoreError(f"{folder}: cannot write in it ({error.strerror})") from None
        notes = [note for each, source in sources for note in bring_reproducers(each, source, folder, into=staging)]
        paths = write_report_files(staging, run, baseline)
        _move_into_place(folder, staging)
        done = True
    finally:
        if not done:
            _remove(staging)
        lock.release()
        if created and not done:
            _remove_if_empty(folder)
    return {key: folder / path.name for key, path in paths.items()}, notes


def _check_folder(folder: Path, read: Inputs, force: bool, own_dir: bool) -> None:
    """What the command would replace in ``folder`` must be irtool's (or ``force``), and none of ``read``."""
    staging = folder / STAGING
    if os.path.lexists(staging) and (os.path.islink(staging) or not staging.is_dir()):
        raise StoreError(f"{staging}: {'a symlink' if os.path.islink(staging) else 'a file'} where irtool stages "
                         f"its writes; remove it or give another -o")
    if own_dir:  # a run's own dir: its results say whose it is; the other reports must be irtool's
        check_owned(folder, [name for name in REPORT_NAMES if not any(path.name == name for _, path in read)], (),
                    force, option="-o")
        return
    for name in REPORT_NAMES:
        check_not_input(folder / name, read, "report")
    check_holds_no_input(folder / REPRODUCERS, read, "reproducers folder")
    check_owned(folder, REPORT_NAMES, (REPRODUCERS,), force, option="-o")


def _move_into_place(folder: Path, staging: Path) -> None:
    """The staged reproducers and reports moved into ``folder``, recorded in its marker as they go."""
    brought = (staging / REPRODUCERS).is_dir()
    try:
        record_owned(folder, folders=(REPRODUCERS,) if brought else (),
                     staged={name: digest(staging / name) for name in REPORT_NAMES})
        if brought:  # the folder of this run's reproducers replaces the one there, whole
            if os.path.lexists(folder / REPRODUCERS):
                os.rename(folder / REPRODUCERS, staging / f"old-{REPRODUCERS}")
            os.rename(staging / REPRODUCERS, folder / REPRODUCERS)
        replace_files([(staging / name, folder / name) for name in REPORT_NAMES], "report")
        record_owned(folder, REPORT_NAMES)
    except OSError as error:
        raise StoreError(f"{error.filename or folder}: cannot move the reports into place ({error.strerror})") from None
    _remove(staging)


def _remove(staging: Path) -> None:
    """The staging folder removed (a file or link of that name is the user's: refused earlier)."""
    if os.path.isdir(staging) and not os.path.islink(staging):
        shutil.rmtree(staging, ignore_errors=True)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:  # it holds something after all (another process wrote there): left as it is
        pass
