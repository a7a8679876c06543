"""An earlier run's results in a report dir: continued by ``--resume`` when they are this run's,
never mixed into it otherwise, and never replaced by a fresh run unasked.

A results.jsonl is this run's only when its header says so: the SHA-256 of each suite's text
(``suite_digests``) and the digest of the set of jobs (``matrix``) must be this run's.  A header
without them says nothing of what its results belong to (an older irtool's, or one edited), so
it is refused rather than trusted, and so is any result that is not of a job of this run, or a
second result of one job (:func:`irtool.harness.store.read_jsonl` names the line).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Container

from irtool.core.errors import IrtoolError
from irtool.harness.store import JSON_NAME, JSONL_NAME, RunResults, StoreError, load_results, read_jsonl

DIGESTS = ("suite_digests", "matrix")  # what a run header must hold for its results to be resumed
AGAIN = "run without --resume (--force replaces it) or with another --report-dir"


class EarlierRunError(IrtoolError):
    """A report dir whose results cannot be continued or replaced as asked."""


def resumed(path: Path, meta: dict, jobs: Container[tuple]) -> RunResults:
    """The results of the run in the results.jsonl at ``path`` (a torn last line cut off the file),
    which must be the run ``meta`` describes and hold only results of ``jobs`` (job keys), each once."""
    try:
        previous = read_jsonl(path, repair=True, header=lambda old: _check_same_run(path, old, meta), jobs=jobs)
    except StoreError as error:
        raise EarlierRunError(f"{error.message}; --resume cannot continue it: {AGAIN}") from None
    if not previous.meta:  # no header at all (an empty file)
        _check_same_run(path, {}, meta)
    return previous


def _check_same_run(path: Path, old: dict, new: dict) -> None:
    """EarlierRunError unless the run header ``old`` says it is the run ``new``: the same suites'
    contents and the same set of jobs, by their digests."""
    missing = [name for name in DIGESTS if not old.get(name)]
    if missing:
        raise EarlierRunError(f"{path}: cannot resume: its run header has no {' and no '.join(missing)} (irtool "
                              f"writes them), so nothing says which suites and jobs its results are of; {AGAIN}")
    if old["suite_digests"] != new["suite_digests"]:
        raise EarlierRunError(f"{path}: cannot resume: a suite has changed since that run started (its content "
                              f"differs); {AGAIN}")
    if old["matrix"] != new["matrix"]:
        raise EarlierRunError(f"{path}: cannot resume: it holds a run of other jobs (devices, precisions, shard or "
                              f"cases differ); {AGAIN}")


def check_no_earlier_run(report_dir: Path, resume: bool) -> None:
    """EarlierRunError if the dir holds another run's results, which a fresh run would replace."""
    found = [report_dir / name for name in (JSONL_NAME, JSON_NAME) if os.path.lexists(report_dir / name)]
    if not found:
        return
    try:
        meta = load_results(found[0]).meta
        what = f"a run started {meta.get('started') or '?'} of {', '.join(meta.get('suites') or ()) or '?'}"
    except IrtoolError:
        what = "results this run cannot read"
    hint = "it has no results.jsonl to resume; " if resume else "--resume continues it, "
    raise EarlierRunError(f"{report_dir} holds {what}; {hint}--force replaces it, or give this run another "
                          f"--report-dir")
