"""``irtool report diff|merge|render|rejudge``: compare two runs, join shards, rewrite reports,
judge a run's kept outputs again without its device (rejudge: irtool.cli.rejudge_cmd).

diff: exit 1 when the new run regressed (a new failure, crash or timeout, or accuracy
drift) against the old one; 3 when no job of the new run is in the old one (nothing compared);
0 otherwise.  merge: the merged run's verdict, as ``irtool harness`` exits (0 passed, 1 a
failure or a regression between its OpenVINO releases, 3 nothing judged), and 2 for a partial
merge (a shard missing or partial) unless ``--allow-partial``.  render: exit 0 once the reports
are written (its reports hold a regression against ``--baseline``; its exit code does not).
All: exit 2 when a results file cannot be read or the reports cannot be written.  merge and
render lock OUTDIR as a harness run locks its report dir, and move what they write into place
at the end (irtool.harness.publish).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from irtool.cli.common import UsageError, fail, sigterm_as_interrupt
from irtool.core.jsonable import json_text
from irtool.core.text import cut, joined, shown

FORMATS = ("text", "json")
EXIT_COULD_NOT_RUN = 2  # as an IrtoolError exits: what was asked could not be done whole (a partial merge)
RESULTS_HELP = "results.json, results.jsonl, or a report dir holding one"
FORCE_HELP = ("replace report files (and a reproducers folder) in OUTDIR that irtool did not write "
              "(by default such a folder is refused)")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="compare two runs, merge shards, rewrite junit.xml and report.html",
                                   description="Compare two harness runs (diff), join the results of shards "
                                               "(merge), or write the reports of a run again (render).")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    diff = actions.add_parser("diff", help="what regressed between two runs (exit 1 if anything did)",
                              description="List new failures, new crashes, accuracy drift and fixed cases of NEW "
                                          "against OLD; exit 1 on a regression.")
    diff.add_argument("old", type=Path, metavar="OLD", help=f"baseline: {RESULTS_HELP}")
    diff.add_argument("new", type=Path, metavar="NEW", help=f"the run to judge: {RESULTS_HELP}")
    diff.add_argument("--drift-factor", type=float, metavar="F",
                      help="max abs error growth that counts as drift (default 2)")
    diff.add_argument("--drift-floor", type=float, metavar="A",
                      help="max abs error at or under which growth is noise (default 1e-6)")
    diff.add_argument("--device-map", action="append", default=[], metavar="OLD=NEW",
                      help="compare OLD's device with NEW's device (repeatable), e.g. CPU=GPU")
    diff.add_argument("--openvino-map", action="append", default=[], metavar="OLD=NEW",
                      help="compare OLD's results of one OpenVINO release with NEW's of another (runs with "
                           "--openvino; repeatable; OLD and NEW may be the same run), e.g. 2025.4.1=2026.4.1")
    diff.add_argument("--time-factor", type=float, metavar="F",
                      help="a compile or first inference more than F times slower is a regression (default 2)")
    diff.add_argument("--time-floor", type=float, metavar="S",
                      help="... when it is also slower by more than S seconds (default 1)")
    diff.add_argument("--format", choices=FORMATS, default="text")
    diff.set_defaults(handler=handle_diff)

    merge = actions.add_parser("merge", help="join shard results and write the reports",
                               description="Join the results of shards into OUTDIR/results.json, junit.xml and "
                                           "report.html.")
    merge.add_argument("results", type=Path, nargs="+", metavar="RESULTS", help=RESULTS_HELP)
    merge.add_argument("-o", "--output", type=Path, required=True, metavar="OUTDIR", help="report folder to write")
    merge.add_argument("--force", action="store_true", help=FORCE_HELP)
    merge.add_argument("--allow-partial", action="store_true",
                       help="exit with the verdict of what the shards hold when some are missing or partial "
                            "(by default such a merge exits 2)")
    merge.set_defaults(handler=handle_merge)

    render = actions.add_parser("render", help="rewrite results.json, junit.xml and report.html from results",
                                description="Write OUTDIR/results.json, junit.xml and report.html from a run's "
                                            "results (a results.jsonl of a run still going or killed, too).")
    render.add_argument("results", type=Path, metavar="RESULTS", help=RESULTS_HELP)
    render.add_argument("-o", "--output", type=Path, required=True, metavar="OUTDIR", help="report folder to write")
    render.add_argument("--xfail", action="append", type=Path, metavar="FILE",
                        help="known-failures file (repeatable) to apply instead of the ones the run applied: "
                             "each result is judged again from the verdict its job found")
    render.add_argument("--baseline", type=Path, metavar="OLD",
                        help=f"compare with an earlier run ({RESULTS_HELP}), as irtool harness --baseline does: "
                             "the reports hold what regressed")
    render.add_argument("--force", action="store_true", help=FORCE_HELP)
    render.set_defaults(handler=handle_render)

    from irtool.cli import rejudge_cmd

    rejudge_cmd.register(actions)


def handle_diff(args: argparse.Namespace) -> int:
    from irtool.harness.baseline import diff_runs, render_diff
    from irtool.harness.store import load_results

    options = {name: getattr(args, name) for name in ("drift_factor", "drift_floor", "time_factor", "time_floor")
               if getattr(args, name) is not None}
    old, new = load_results(args.old), load_results(args.new)
    diff = diff_runs(old, new, device_map=parse_pairs(args.device_map, "--device-map", "CPU=GPU"),
                     openvino_map=parse_pairs(args.openvino_map, "--openvino-map", "2025.4.1=2026.4.1"), **options)
    if args.format == "json":
        print(json_text(diff.to_json(), indent=1, allow_nan=False))
    else:
        print(render_diff(diff, f"{args.old} ({_describe(old.meta)})", f"{args.new} ({_describe(new.meta)})"))
    from irtool.jobs.records import EXIT_FAILED, EXIT_NOTHING_JUDGED, EXIT_PASSED

    return EXIT_FAILED if diff.regressed else EXIT_NOTHING_JUDGED if diff.nothing_compared else EXIT_PASSED


def handle_merge(args: argparse.Namespace) -> int:
    from irtool.harness.merge import merge_runs
    from irtool.harness.store import load_results

    with sigterm_as_interrupt():
        runs = [load_results(path) for path in args.results]
        merged = merge_runs(runs, names=[str(p) for p in args.results])
        _write(args, runs, merged, "report merge")
    missing = merged.meta.get("missing_shards")
    if merged.partial and not args.allow_partial:
        partial = [str(path) for path, run in zip(args.results, runs) if run.partial]
        why = "; ".join(([f"shards {joined(missing)} missing"] if missing else []) +
                        ([f"{joined(partial)} {'is' if len(partial) == 1 else 'are'} partial"] if partial else []))
        fail(f"partial run: {why} (the reports are written, marked partial); --allow-partial judges what the shards "
             "hold")
        return EXIT_COULD_NOT_RUN
    from irtool.harness.baseline import diff_versions
    from irtool.harness.reports import overall_verdict

    return overall_verdict(merged.summary, version_diffs=diff_versions(merged))[1]


def handle_render(args: argparse.Namespace) -> int:
    from irtool.harness.store import load_results

    with sigterm_as_interrupt():
        run = load_results(args.results)
        if args.xfail is not None:
            from irtool.harness.expectations import apply, load_expectations, unmatched

            entries = [entry for path in args.xfail for entry in load_expectations(path)]
            run.results = [apply(entries, result) for result in run.results]
            for note in unmatched(entries, run.results):
                print(f"irtool: note: {shown(note)}", file=sys.stderr)
        baseline = None
        if args.baseline is not None:
            from irtool.harness.baseline import diff_runs
            from irtool.harness.reports import BaselineDiff

            baseline = BaselineDiff(str(args.baseline), diff_runs(load_results(args.baseline), run))
        _write(args, [run], run, "report render", baseline)
    return 0


def _write(args: argparse.Namespace, runs: list[Any], run: Any, command: str, baseline: Any = None) -> None:
    """Write the reports into OUTDIR with each run's reproducers (irtool.harness.publish); nothing read is
    replaced.  Says what was written, and each reproducer left out."""
    from irtool.harness.publish import publish_reports
    from irtool.harness.reports import REPORT_NAMES, results_dir
    from irtool.harness.store import JSONL_NAME

    folder = args.output
    paths = args.results if isinstance(args.results, list) else [args.results]
    read = [("the results file", p) for path in paths
            for p in ([path] if not Path(path).is_dir() else [Path(path) / n for n in (*REPORT_NAMES, JSONL_NAME)])]
    # render into a run's own dir rewrites its reports; a merge never writes over one of its shards
    own_dir = command == "report render" and results_dir(paths[0]).resolve() == Path(folder).resolve()
    written, notes = publish_reports(folder, run, [(each, results_dir(path)) for path, each in zip(paths, runs)],
                                     read, command, baseline, args.force, own_dir)
    for note in notes:
        print(f"irtool: note: {shown(note)}", file=sys.stderr)
    counts = ", ".join(f"{count} {verdict}" for verdict, count in run.summary.items()) or "no results"
    missing = run.meta.get("missing_shards")
    print(shown(f"wrote {', '.join(str(p) for p in written.values())}: {len(run.results)} results ({counts})"
                + (f"; partial run: shards {joined(missing)} missing" if missing else "; partial run" if run.partial
                   else "")))


def parse_pairs(items: list[str], option: str, example: str) -> dict[str, str]:
    """``--device-map CPU=GPU`` or ``--openvino-map 2025.4.1=2026.4.1`` (repeated) -> {old: new}."""
    pairs = {}
    for item in items:
        old, sep, new = item.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise UsageError(f"{option} {item}: expected OLD=NEW, e.g. {example}")
        pairs[old.strip()] = new.strip()
    return pairs


# ----------------------------------------------------------------------------- rendering

def _describe(meta: dict[str, Any]) -> str:
    releases = joined(meta.get("openvino_releases") or ()) or cut(str(meta.get("openvino_version", "?")), 200)
    return f"OpenVINO {releases}, {joined(meta.get('devices') or ()) or 'no devices'}"
