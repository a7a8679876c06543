"""``irtool harness SUITE... -d DEVICES --precision LIST --report-dir DIR``: run suites of cases
across devices and precisions in isolated workers and report what broke.

Exit 0 when every case passed (skips and known failures allowed), 1 on a failure, error,
crash, timeout or a regression against --baseline, 2 when the run could not start, 3 when
nothing was judged (every job skipped, or none had a reference): never 0 for a run that
checked nothing.
Results go to DIR/results.jsonl as each case finishes; DIR also gets results.json,
junit.xml, report.html and a reproducer folder per failure; with --keep-outputs, every job's
outputs in DIR/kept/ for ``irtool report rejudge`` (irtool.jobs.kept).
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from irtool.cli.common import fail, sigterm_as_interrupt
from irtool.cli.options import add_judging_options, add_release_options, parse_config, parse_tolerances, seconds
from irtool.core.jsonable import json_text
from irtool.core.text import cut, escaped_lines, shown
from irtool.harness.reports import column_label, column_of

SHOWN_VERDICTS = ("pass", "fail", "error", "crash", "timeout", "skip", "xfail", "xpass", "unjudged")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "harness", help="run suites across devices and precisions; report what broke",
        description="Run every case of the suites on every device at every precision, each in an isolated "
                    "worker, and write results.json, junit.xml, report.html and a reproducer per failure into "
                    "the report dir. Exit 0 when everything judged passed (skips and known failures allowed), "
                    "1 on a failure, error, crash, timeout or a regression against --baseline, 2 when the run "
                    "could not start, 3 when nothing was judged (every job skipped).")
    parser.add_argument("suites", nargs="+", type=Path, metavar="SUITE.toml", help="suite files (samples/suites)")
    parser.add_argument("-d", "--device", default="CPU", metavar="DEVICES",
                        help="comma-separated devices, e.g. CPU,AUTO:CPU,HETERO:CPU,GPU; a virtual device's own "
                             "list joins with +: HETERO:GPU+CPU (default CPU)")
    parser.add_argument("--precision", default="f32", metavar="LIST", help="comma-separated: f32,bf16,f16, or default (no hint: the precision each device picks, "
                             "read back and judged with its tolerance) (default f32)")
    parser.add_argument("--report-dir", type=Path, default=Path("irtool-report"), metavar="DIR",
                        help="where results and reports go (default irtool-report)")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    parser.add_argument("--timeout", type=seconds, metavar="S", help="seconds per case (default: the suite's, or 120)")
    parser.add_argument("--force", action="store_true",
                        help="replace the results of an earlier run in the report dir, and report files or "
                             "reproducers/reduced folders there that irtool did not write (refused without it)")
    parser.add_argument("--max-cases", type=int, metavar="N",
                        help="refuse a suite that makes more cases than N (default: the suite's max_cases, or 50000)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run whose results.jsonl is in the report dir; finished cases are kept")
    parser.add_argument("--shard", metavar="K/N", help="run the K-th of N deterministic slices of the matrix")
    parser.add_argument("--xfail", action="append", default=[], type=Path, metavar="FILE",
                        help="known-failures file (repeatable), besides the suite's own")
    parser.add_argument("--baseline", type=Path, metavar="OLD",
                        help="results.json (or report dir) of an earlier run: report and fail on regressions")
    parser.add_argument("--drift-factor", type=float, default=2.0, metavar="F",
                        help="with --baseline: max error grown more than F times is drift (default 2)")
    parser.add_argument("--time-factor", type=float, default=2.0, metavar="F",  # baseline.TIME_FACTOR
                        help="with --baseline or several --openvino releases: a compile or first inference more "
                             "than F times slower is a regression (default 2)")
    parser.add_argument("--time-floor", type=float, default=1.0, metavar="S",  # baseline.TIME_FLOOR
                        help="... when it is also slower by more than S seconds (default 1: the noise of a "
                             "busy machine does not count)")
    parser.add_argument("--expect-coverage", metavar="LIST",
                        help="comma-separated implementations the run must reach, each RNNSeq or OP:RNNSeq "
                             "(GRUSequence:TensorIterator): one that no job ran as fails the run, as a regression "
                             "does (besides the suites' own expect_coverage)")
    add_release_options(parser, "run the suites", ", and they are compared with each other; with --cluster, "
                        "versions (and current, this machine's) offered by the workers (irtool worker --openvino), "
                        "each job placed on a worker that offers its release")
    parser.add_argument("--cluster", metavar="ADDRESS",
                        help="run the jobs on the workers of this Dask scheduler (tcp://HOST:8786, tls://...; "
                             "irtool worker joins one; needs irtool[cluster]): each job where its device, "
                             "precision and --openvino release are offered, with the model files it names (of a "
                             "bounded size); one no worker offers is skipped (docs/cluster.md)")
    parser.add_argument("--scheduler-file", type=Path, metavar="FILE",
                        help="as --cluster, the scheduler named in this file (dask scheduler --scheduler-file)")
    parser.add_argument("--lost-after", type=seconds, default=300.0, metavar="S",
                        help="with --cluster: a job whose device no worker has offered for S seconds is lost; "
                             "the run is partial (exit 2) and --resume runs what it lost (default 300)")
    add_judging_options(parser)
    parser.add_argument("--reduce-failures", action="store_true",
                        help="after the run, shrink each new failure to its smallest reproducer (irtool reduce) "
                             "into DIR/reduced/")
    parser.add_argument("--reduce-budget", type=seconds, default=300.0, metavar="S",
                        help="with --reduce-failures: seconds per failure (default 300)")
    parser.add_argument("--keep-outputs", action="store_true",
                        help="keep every job's outputs (pass too) with the record of its run, its inputs and its "
                             "model (or the case that builds it) in DIR/kept/: irtool report rejudge DIR judges them "
                             "again without the device (docs/harness.md)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="the summary's format")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.cluster or args.scheduler_file:  # started already, unless the command line abbreviated its option
        from irtool.cli.cluster_early import start_client

        start_client(args.cluster, args.scheduler_file)
    from irtool.core.device_names import parse_device_list
    from irtool.harness.matrix import check_precisions, parse_list, parse_shard
    from irtool.harness.session import HarnessOptions, run_harness
    from irtool.jobs.environments import parse_releases

    options = HarnessOptions(
        suites=args.suites, devices=parse_device_list(args.device, "-d"),
        precisions=check_precisions(parse_list(args.precision, "--precision")),
        report_dir=args.report_dir, jobs=args.jobs, timeout=args.timeout, resume=args.resume,
        shard=parse_shard(args.shard) if args.shard else None, expected_failures=args.xfail,
        baseline=args.baseline, drift_factor=args.drift_factor, config=parse_config(args.config),
        tolerance=parse_tolerances(args.atol, args.rtol), reduce_failures=args.reduce_failures,
        reduce_budget=args.reduce_budget, force=args.force, max_cases=args.max_cases,
        openvino=parse_releases(args.openvino) if args.openvino is not None else (),
        openvino_cache=args.openvino_cache, time_factor=args.time_factor, time_floor=args.time_floor,
        expect_coverage=tuple(item.strip() for item in args.expect_coverage.split(","))
        if args.expect_coverage is not None else (), cluster=args.cluster, scheduler_file=args.scheduler_file,
        lost_after=args.lost_after, keep_outputs=args.keep_outputs)
    bar = None if args.no_progress else Progress(sys.stderr)
    text = args.format == "text"
    try:
        with sigterm_as_interrupt():
            from irtool.reduce.failures import reduce_failures

            outcome = run_harness(options, bar, (lambda plan: print(header(plan), flush=True)) if text else None,
                                  lambda line: print(shown(line), file=sys.stderr, flush=True), reduce_failures)
    finally:
        if bar:
            bar.finish()
    print(render(outcome, args.report_dir) if text else json_text(summary_json(outcome), indent=2))
    if outcome.stopped:
        fail(f"the run stopped: {outcome.stopped}; {len(outcome.run.results)} results are saved, --resume "
             f"continues once it can write again")
        return 2
    if outcome.interrupted:
        fail(f"interrupted: the reports in {args.report_dir} are partial; --resume continues the run"
             if outcome.run.partial else f"interrupted while reducing failures; the reports in {args.report_dir} "
             "are complete")
        return 130
    if outcome.lost:
        fail(f"{len(outcome.lost)} jobs lost on the cluster (LOST above, each with why): the reports in "
             f"{args.report_dir} are partial; --resume runs the jobs without a result")
    return outcome.exit_code


def header(plan: Any) -> str:
    """The first line of a run: what runs, where, with which OpenVINO."""
    kept = f", {plan.kept} kept from the earlier run" if plan.kept else ""
    skipped = f", {plan.skipped} cannot run here" if plan.skipped else ""
    return escaped_lines([f"irtool harness: {', '.join(plan.suites)}: {plan.jobs} jobs, {plan.to_run} run now{kept}{skipped}",
                   f"  devices {', '.join(plan.devices)}; precisions {', '.join(plan.precisions)}; "
                   f"openvino {plan.openvino_version}", *(f"  openvino {line}" for line in plan.releases)])


class Progress:
    """A one-line bar on a terminal, with elapsed time and an estimate of the time left; elsewhere
    (CI logs) one line per case that did not pass."""

    def __init__(self, stream: Any, clock: Any = time.monotonic):
        self.stream = stream
        self.tty = stream.isatty()
        self.counts: Counter = Counter()
        self.drawn = False
        self.clock = clock
        self.began = clock()
        self.first: tuple[int, float] | None = None  # (done, time) when the first job of this run finished

    def __call__(self, result: Any, done: int, total: int) -> None:
        self.counts[result.verdict] += 1
        if result.verdict in ("fail", "error", "crash", "timeout", "xpass"):
            self._clear()
            print(shown(f"{result.verdict.upper()}: {cut(result.name, 400)}: {cut(result.message)}"), file=self.stream)
        if self.tty:
            width = 30
            filled = width * done // max(total, 1)
            counts = " ".join(f"{v} {self.counts[v]}" for v in SHOWN_VERDICTS if self.counts[v])
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {counts} "
                              f"{self._times(result, done, total)}\033[K")
            self.stream.flush()
            self.drawn = True

    def _times(self, result: Any, done: int, total: int) -> str:
        """``1:05 elapsed, ~0:40 left``: the rate of the jobs that ran (skips and kept results cost nothing)."""
        now = self.clock()
        text = f"{duration(now - self.began)} elapsed"
        if result.verdict == "skip":
            return text
        if self.first is None:
            self.first = (done, now)
            return text
        ran, seconds = done - self.first[0], now - self.first[1]
        if ran > 0 and done < total:
            text += f", ~{duration(seconds / ran * (total - done))} left"
        return text

    def _clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\033[K")
            self.drawn = False

    def finish(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def duration(seconds: float) -> str:
    """``4.2 s``, ``1:05``, ``1:02:03``."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def render(outcome: Any, report_dir: Path) -> str:
    """The summary at the end: the table, each problem once (those the baseline diff lists as new
    are shown there only), skips by reason, the diff, the reports and the verdict."""
    run = outcome.run
    lines = [f"note: {note}" for note in outcome.notes] + _table(run.results)
    in_diff = set()
    if outcome.diff is not None:
        in_diff = {change.new.key for change in outcome.diff.new_failures + outcome.diff.new_crashes}
    problems = [r for r in run.results if r.verdict in ("fail", "error", "crash", "timeout", "xpass")]
    for result in problems:
        if result.key not in in_diff:
            lines.append(_problem(result, report_dir))
    for reduced in outcome.reduced:
        lines.append(f"REDUCED: {reduced.job}: " + (f"{reduced.folder} ({reduced.summary})" if reduced.folder
                                                    else reduced.summary))
    skips = Counter(f"{column_label(*column_of(r))}: {cut(r.message)}" for r in run.results if r.verdict == "skip")
    for reason, count in skips.items():
        lines.append(f"skipped {count}: {reason}")
    from irtool.harness.baseline import render_diff

    if outcome.diff is not None:
        lines.extend(render_diff(outcome.diff, where=lambda r: _where(r, report_dir)).split("\n"))
    for older, newer, diff in outcome.version_diffs:
        lines.append(f"openvino {older} -> {newer}:")
        lines.extend(render_diff(diff, where=lambda r: _where(r, report_dir)).split("\n"))
    from irtool.harness.coverage import coverage, render_text

    lines.extend(render_text(coverage(run.results)))
    lines.extend(f"COVERAGE: {missing}" for missing in outcome.coverage_missing)
    lines.append(f"reports: {report_dir / 'results.json'}, {report_dir / 'junit.xml'}, {report_dir / 'report.html'}")
    lines += [f"NOT WRITTEN: {result.name}: {result.unwritten}" for result in run.results if result.unwritten]
    lines += [f"LOST: {job}: {why}" for job, why in outcome.lost]
    regressed = outcome.overall[2]
    counts = ", ".join(f"{count} {verdict}" for verdict, count in run.summary.items()) or "no results"
    why = f"; regressed: {'; '.join(regressed)}" if regressed else ""
    if outcome.not_run:
        why += f"; {outcome.not_run} of {outcome.jobs} jobs not run"
    lines.append(f"{outcome.word} in {duration(outcome.seconds)}: {counts}{why}")
    return escaped_lines(lines)


def _problem(result: Any, report_dir: Path) -> str:
    return f"{result.verdict.upper()}: {cut(result.name, 400)}: {cut(result.message)}{_where(result, report_dir)}"


def _where(result: Any, report_dir: Path) -> str:
    return f" [{report_dir / result.reproducer}]" if result.reproducer else ""


def _table(results: list) -> list[str]:
    """Verdict counts per device and precision (``default``: with the precision the devices chose);
    none for a run without results (a shard of no jobs)."""
    from irtool.core.precisions import DEVICE_DEFAULT
    from irtool.harness.reports import column_label

    if not results:
        return []
    rows: dict[tuple[str, str, str | None], Counter] = {}
    chose: dict[tuple[str, str, str | None], set[str]] = {}  # what the devices ran at, for --precision default
    for result in results:
        row = (result.device, result.precision, result.openvino)
        rows.setdefault(row, Counter())[result.verdict] += 1
        chose.setdefault(row, set()).update(result.effective_precision.values())
    columns = [v for v in SHOWN_VERDICTS if any(c[v] for c in rows.values())]
    names = [column_label(*row) + (f" ({'/'.join(sorted(chose[row]))})" if row[1] == DEVICE_DEFAULT and chose[row]
                                   else "") for row in rows]
    width = max([len("device precision")] + [len(n) for n in names])
    lines = [f"  {'device precision':<{width}}  " + "  ".join(f"{c:>7}" for c in columns)]
    for name, counts in zip(names, rows.values()):
        lines.append(f"  {name:<{width}}  " + "  ".join(f"{counts[c]:>7}" for c in columns))
    return lines


def summary_json(outcome: Any) -> dict[str, Any]:
    data = {"exit_code": outcome.exit_code, "verdict": outcome.word, "regressed": outcome.overall[2],
            "seconds": round(outcome.seconds, 3),
            "interrupted": outcome.interrupted, "stopped": outcome.stopped, "notes": outcome.notes,
            "summary": outcome.run.summary, "jobs": outcome.jobs, "not_run": outcome.not_run,
            "problems": [{"name": r.name, "verdict": r.verdict, "message": r.message, "reproducer": r.reproducer}
                         for r in outcome.run.results if r.verdict in ("fail", "error", "crash", "timeout", "xpass")],
            "unwritten": [{"name": r.name, "verdict": r.verdict, "unwritten": r.unwritten}
                          for r in outcome.run.results if r.unwritten],
            "reduced": [{"name": r.job, "folder": str(r.folder) if r.folder else None, "summary": r.summary}
                        for r in outcome.reduced]}
    from irtool.harness.coverage import coverage

    data["coverage"] = [row.to_json() for row in coverage(outcome.run.results)]
    data["coverage_missing"] = outcome.coverage_missing
    if outcome.lost:  # a run on a cluster that gave jobs up
        data["lost"] = [{"name": job, "why": why} for job, why in outcome.lost]
    if outcome.diff is not None:
        data["baseline"] = outcome.diff.to_json()
    if outcome.version_diffs:
        data["openvino_diffs"] = [{"older": older, "newer": newer, **diff.to_json()}
                                  for older, newer, diff in outcome.version_diffs]
    return data
