"""The report files of a run: results.json, junit.xml and report.html, written together.

The harness writes them at the end of a run (partial or not), and ``irtool report render``
and ``irtool report merge`` on stored results.  Each file's writer (irtool.harness.html,
irtool.harness.junit) and this module use the shared words of irtool.harness.reports.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from irtool.harness.baseline import diff_versions
from irtool.harness.coverage import coverage
from irtool.harness.html import write_html
from irtool.harness.junit import write_junit
from irtool.harness.marker import check_owned, record_owned
from irtool.harness.reports import HTML_NAME, JUNIT_NAME, REPORT_NAMES, BaselineDiff
from irtool.harness.store import JSON_NAME, RunResults, StoreError, write_json


def write_reports(report_dir: str | Path, run: RunResults, baseline: BaselineDiff | None = None,
                  force: bool = False, coverage_missing: Sequence[str] = ()) -> dict[str, Path]:
    """Write results.json, junit.xml and report.html (each whole or not at all); their paths by
    name.  With ``baseline``, each holds the diff against it: results.json as ``baseline_diff``,
    junit.xml as a testsuite with a failing testcase per regressed job, report.html as a section.
    A report file there that irtool did not write (:mod:`irtool.harness.marker`) is replaced only
    with ``force``; the files written are recorded as irtool's.  ``coverage_missing``: the expected
    implementations the run did not reach (its expect_coverage), which report.html's verdict counts."""
    report_dir = make_folder(report_dir)
    check_owned(report_dir, REPORT_NAMES, force=force, option="-o")
    paths = write_report_files(report_dir, run, baseline, coverage_missing)
    try:
        record_owned(report_dir, REPORT_NAMES)
    except OSError as error:
        raise StoreError(f"{error.filename or report_dir}: cannot write the report ({error.strerror})") from None
    return paths


def make_folder(folder: str | Path) -> Path:
    """``folder`` made (with its parents) where it is not there yet; StoreError if it cannot be."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreError(f"{folder}: cannot create the report folder ({error.strerror})") from None
    return folder


def write_report_files(folder: Path, run: RunResults, baseline: BaselineDiff | None = None,
                       coverage_missing: Sequence[str] = ()) -> dict[str, Path]:
    """The three report files written into ``folder`` (whose marker is the caller's to update)."""
    paths = {"json": folder / JSON_NAME, "junit": folder / JUNIT_NAME, "html": folder / HTML_NAME}
    try:
        reached = coverage(run.results)  # once, for results.json and report.html
        write_json(paths["json"], run, {**_version_diffs(run), "coverage": [row.to_json() for row in reached],
                                        **({"baseline_diff": baseline.to_json()} if baseline else {})})
        write_junit(paths["junit"], run, baseline)
        write_html(paths["html"], run, baseline, coverage_missing, reached)
    except OSError as error:
        raise StoreError(f"{error.filename or folder}: cannot write the report ({error.strerror})") from None
    return paths


def _version_diffs(run: RunResults) -> dict[str, Any]:
    """results.json's ``openvino_diffs`` of a run of several releases: each against the next newer."""
    diffs = [{"older": older, "newer": newer, **diff.to_json()} for older, newer, diff in diff_versions(run)]
    return {"openvino_diffs": diffs} if diffs else {}
