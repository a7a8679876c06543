"""The report files of a run, and the words and groups they share.

:func:`irtool.harness.report_files.write_reports` writes results.json, junit.xml and
report.html into a report dir; the writer of each file uses this module, which imports none of
them.  The helpers here say one result or one output the same way in every report: its column
("CPU f32"), its op group, and the statistics of an output.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from irtool.core.precisions import DEVICE_DEFAULT
from irtool.core.text import number
from irtool.harness.store import JSON_NAME, RunResults, StoreError
from irtool.jobs.records import CRASH, ERROR, EXIT_NOTHING_JUDGED, FAIL, TIMEOUT, CaseResult, run_verdict
from irtool.judge.compare import shown_pair

if TYPE_CHECKING:  # pragma: no cover
    from irtool.harness.baseline import RunDiff

JUNIT_NAME = "junit.xml"
HTML_NAME = "report.html"
PROBLEMS = (FAIL, ERROR, CRASH, TIMEOUT)  # the verdicts a report details, in this order
NOT_ONE_OP = "(not one RNN op)"
# Characters XML 1.0 cannot hold at all (most C0 controls, surrogates, U+FFFE/FFFF): a
# crashing plugin's stderr may contain any byte.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


REPORT_NAMES = (JSON_NAME, JUNIT_NAME, HTML_NAME)


@dataclass(frozen=True)
class BaselineDiff:
    """A run against its baseline (``irtool harness --baseline OLD``): what each report adds."""

    label: str  # the baseline as it was named (its path)
    diff: "RunDiff"

    def to_json(self) -> dict[str, Any]:
        return {"baseline": self.label, **self.diff.to_json()}


def results_dir(path: str | Path) -> Path:
    """The report dir a results file (or a report dir) given to load_results belongs to."""
    path = Path(path)
    return path if path.is_dir() else path.parent


REPRODUCER_FILES = 64  # bounds on one reproducer folder copied from a shard's report dir
REPRODUCER_BYTES = 2 << 30


def bring_reproducers(run: RunResults, source: str | Path, folder: str | Path, into: str | Path | None = None) \
        -> list[str]:
    """Make each result's reproducer link resolve inside ``folder``, where the reports are written:
    copy the reproducer folders from the run's own report dir ``source`` when that is elsewhere
    (into ``into``, a staging folder that takes ``folder``'s place later, when given), and drop a
    link whose folder is not there (or would lead out of ``source``).  Only regular files are
    copied (no symlink, device, FIFO or subfolder), at most REPRODUCER_FILES of at most
    REPRODUCER_BYTES in all per folder; a folder beyond that is not copied and its link dropped.
    Returns notes on what was left out."""
    from irtool.core.files import FileError

    source, folder = Path(source).resolve(), Path(folder).resolve()
    into = folder if into is None else Path(into).resolve()
    notes: list[str] = []
    if source == folder:
        return notes
    for result in run.results:
        if not result.reproducer:
            continue
        here = (source / result.reproducer).resolve()
        there = (into / result.reproducer).resolve()
        if not (here.is_relative_to(source) and there.is_relative_to(into) and here.is_dir()):
            result.reproducer = None
            continue
        try:
            files, skipped = _reproducer_files(here)
            there.mkdir(parents=True, exist_ok=True)
            for path in files:
                _copy_regular(path, there / path.name)
        except (OSError, FileError) as error:
            raise StoreError(f"{there}: cannot copy the reproducer from {here} "
                             f"({getattr(error, 'message', None) or error.strerror or error})") from None
        except _TooBig as error:
            result.reproducer = None
            notes.append(f"{here}: not copied ({error})")
            continue
        notes += [f"{here / name}: not copied ({kind}; only regular files are)" for name, kind in skipped]
    return notes


class _TooBig(Exception):
    pass


def _reproducer_files(folder: Path) -> tuple[list[Path], list[tuple[str, str]]]:
    """The regular files directly in ``folder`` (checked with lstat: a symlink is not followed), and
    the names left out with what they are; _TooBig past the bounds."""
    import os

    from irtool.core.files import kind_of, size_text

    files, skipped, total = [], [], 0
    with os.scandir(folder) as entries:
        for count, entry in enumerate(entries):
            if count >= 4 * REPRODUCER_FILES:
                raise _TooBig(f"more than {4 * REPRODUCER_FILES} entries")
            found = entry.stat(follow_symlinks=False)
            kind = "a symlink" if entry.is_symlink() else kind_of(found.st_mode)
            if kind is not None:
                skipped.append((entry.name, kind))
                continue
            total += found.st_size
            files.append(Path(entry.path))
    if len(files) > REPRODUCER_FILES or total > REPRODUCER_BYTES:
        raise _TooBig(f"{len(files)} files of {size_text(total)}; a reproducer is copied up to "
                      f"{REPRODUCER_FILES} files and {size_text(REPRODUCER_BYTES)}")
    return sorted(files), skipped


def _copy_regular(path: Path, target: Path) -> None:
    """Copy one regular file (opened without following a link or blocking, checked again once
    open); a file that grows while copied is cut at REPRODUCER_BYTES."""
    from irtool.core.files import atomic_writer, open_regular

    with open_regular(path, "reproducer file", REPRODUCER_BYTES, follow=False) as source, \
            atomic_writer(target, "reproducer file") as copy:
        left = REPRODUCER_BYTES
        while left > 0:
            chunk = source.read(min(1 << 20, left))
            if not chunk:
                break
            copy.write(chunk)
            left -= len(chunk)


Column = tuple[str, str, "str | None"]  # device, precision, OpenVINO release (None: a run of one)


def columns(run: RunResults) -> list[Column]:
    """The (device, precision, release) of a run: the asked ones in their order (the releases
    side by side under each device and precision), then any other found."""
    releases = list(run.meta.get("openvino_releases") or ()) or [None]
    asked = [(d, p, v) for d in run.meta.get("devices") or () for p in run.meta.get("precisions") or ()
             for v in releases]
    found = [column_of(r) for r in run.results]
    return list(dict.fromkeys(asked + found))


def column_of(result: CaseResult) -> Column:
    return (result.device, result.precision, result.openvino)


def column_label(device: str, precision: str, openvino: str | None = None) -> str:
    """``CPU f32``, or ``CPU f32 openvino 2025.4.1`` in a run of several releases."""
    return f"{device} {precision}" + (f" openvino {openvino}" if openvino else "")


def resolved_precision(precision: str, results: Iterable[CaseResult]) -> str:
    """A precision as a report names it: as asked, and ``default (bf16)`` for the device's default,
    with what the results say it resolved to (``default (bf16, f32)`` where devices differ; just
    ``default`` where no result says, a job that did not run)."""
    if precision != DEVICE_DEFAULT:
        return precision
    found = sorted({value for r in results for value in r.effective_precision.values()})
    return f"{precision} ({', '.join(found)})" if found else precision


def op_group(result: CaseResult, ops: Mapping[str, str] | None = None) -> str:
    """The op a result counts under: its op (for an IR file too, when it is one RNN op).  A job
    that did not run (skipped on an absent device) knows no op for an IR file; ``ops`` (from
    :func:`case_ops`) gives the one its case ran as elsewhere in the run."""
    return result.op or (ops or {}).get(result.case) or NOT_ONE_OP


def case_ops(results: Iterable[CaseResult]) -> dict[str, str]:
    """Case id -> the op a run found for it (on any device)."""
    return {r.case: r.op for r in results if r.op}


def one_line(text: str) -> str:
    return " ".join(text.split())


def xml_text(text: str) -> str:
    """Text with the characters XML cannot hold replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


# The statistics of one output, in the order reports show them.
OUTPUT_FIELDS = ("output", "shape", "max abs", "max rel", "mean abs", "outside", "worst at", "actual", "expected",
                 "needed atol", "needed rtol", "tolerance", "NaN/Inf")


def output_fields(out: Mapping[str, Any]) -> dict[str, str]:
    """An output's statistics as text, keyed by OUTPUT_FIELDS; an output that could not be
    compared (its shape differs) has just "output" and "problem"."""
    name = str(out.get("name", "?"))
    if out.get("problem"):
        return {"output": name, "problem": str(out["problem"])}
    outside, total = out.get("outside", 0), out.get("total", 0)
    share = f" ({outside / total:.1%})" if total else ""
    nonfinite = [out.get(k, 0) for k in ("actual_nan", "actual_inf", "expected_nan", "expected_inf")]
    worst = out.get("worst_index")
    actual, expected = shown_pair(out.get("worst_actual"), out.get("worst_expected"))
    return {
        "output": name, "shape": str(list(out.get("shape") or [])),
        "max abs": number(out.get("max_abs")), "max rel": number(out.get("max_rel")),
        "mean abs": number(out.get("mean_abs")), "outside": f"{outside}/{total}{share}",
        "worst at": "-" if worst is None else str(list(worst)),
        "actual": actual, "expected": expected,
        "needed atol": number(out.get("needed_atol")), "needed rtol": number(out.get("needed_rtol")),
        "tolerance": f"atol {number(out.get('atol'))}, rtol {number(out.get('rtol'))}"
                     + (f" ({out['tolerance_source']})" if out.get("tolerance_source") else ""),
        "NaN/Inf": ("device {}/{}, expected {}/{}".format(*nonfinite) if any(nonfinite) else "none"),
    }


def output_lines(result: CaseResult) -> list[str]:
    """A result's statistics as text, one line per output (junit.xml's failures, the pytest plugin)."""
    return ["  ".join(f"{key} {value}" if key != "output" else value for key, value in output_fields(out).items())
            for out in result.outputs]


def overall_verdict(summary: Mapping[str, int], diff: "RunDiff | None" = None, version_diffs: Iterable = (),
                    coverage_missing: Iterable[str] = ()) -> tuple[str, int, list[str]]:
    """A run's word and exit code (:func:`irtool.jobs.records.run_verdict` of its verdict counts and
    its regressions), and what regressed, one phrase each (``36 slower against the baseline``,
    ``1 expected implementation not reached``): what the console's last line and report.html
    say.  A baseline that holds no job of the run compared nothing: a run that passed is then
    NOTHING COMPARED (exit 3), not PASSED."""
    regressed = [f"{', '.join(diff.regressions())} against the baseline"] if diff is not None and diff.regressed \
        else []
    regressed += [f"{', '.join(older_diff.regressions())} from openvino {older} to {newer}"
                  for older, newer, older_diff in version_diffs if older_diff.regressed]
    missing = list(coverage_missing)
    if missing:
        regressed.append(f"{len(missing)} expected implementation{'' if len(missing) == 1 else 's'} not reached")
    word, code = run_verdict(summary, bool(regressed))
    if code == 0 and diff is not None and diff.nothing_compared:
        return "NOTHING COMPARED", EXIT_NOTHING_JUDGED, []
    return word, code, regressed
