"""``irtool report diff|merge|render``: compare two runs, join shards, rewrite reports.

diff: exit 1 when the new run regressed (a new failure, crash or timeout, or accuracy
drift) against the old one, 0 otherwise.  merge and render: exit 0 once the reports are
written.  All: exit 2 when a results file cannot be read or the reports cannot be written.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from irtool.cli.common import UsageError
from irtool.lines import cut, joined

FORMATS = ("text", "json")
RESULTS_HELP = "results.json, results.jsonl, or a report dir holding one"


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
    merge.set_defaults(handler=handle_merge)

    render = actions.add_parser("render", help="rewrite results.json, junit.xml and report.html from results",
                                description="Write OUTDIR/results.json, junit.xml and report.html from a run's "
                                            "results (a results.jsonl of a run still going or killed, too).")
    render.add_argument("results", type=Path, metavar="RESULTS", help=RESULTS_HELP)
    render.add_argument("-o", "--output", type=Path, required=True, metavar="OUTDIR", help="report folder to write")
    render.set_defaults(handler=handle_render)


def handle_diff(args: argparse.Namespace) -> int:
    from irtool.harness.baseline import diff_runs, render_diff
    from irtool.harness.store import load_results

    options = {name: getattr(args, name) for name in ("drift_factor", "drift_floor", "time_factor", "time_floor")
               if getattr(args, name) is not None}
    old, new = load_results(args.old), load_results(args.new)
    diff = diff_runs(old, new, device_map=parse_pairs(args.device_map, "--device-map", "CPU=GPU"),
                     openvino_map=parse_pairs(args.openvino_map, "--openvino-map", "2025.4.1=2026.4.1"), **options)
    if args.format == "json":
        print(json.dumps(diff.to_json(), indent=1, allow_nan=False))
    else:
        print(render_diff(diff, f"{args.old} ({_describe(old.meta)})", f"{args.new} ({_describe(new.meta)})"))
    return 1 if diff.regressed else 0


def handle_merge(args: argparse.Namespace) -> int:
    from irtool.harness.merge import merge_runs
    from irtool.harness.reports import bring_reproducers, results_dir
    from irtool.harness.store import load_results

    runs = [load_results(path) for path in args.results]
    for path, run in zip(args.results, runs):
        bring_reproducers(run, results_dir(path), args.output)
    return _write(args.output, merge_runs(runs, names=[str(p) for p in args.results]))


def handle_render(args: argparse.Namespace) -> int:
    from irtool.harness.reports import bring_reproducers, results_dir
    from irtool.harness.store import load_results

    run = load_results(args.results)
    bring_reproducers(run, results_dir(args.results), args.output)
    return _write(args.output, run)


def _write(folder: Path, run: Any) -> int:
    from irtool.harness.reports import write_reports

    paths = write_reports(folder, run)
    counts = ", ".join(f"{count} {verdict}" for verdict, count in run.summary.items()) or "no results"
    missing = run.meta.get("missing_shards")
    print(f"wrote {', '.join(str(p) for p in paths.values())}: {len(run.results)} results ({counts})"
          + (f"; partial run: shards {joined(missing)} missing" if missing else "; partial run" if run.partial
             else ""))
    return 0


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
