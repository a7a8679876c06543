"""``irtool report rejudge DIR -o OUTDIR``: judge a lab run's recorded outputs here, without its device.

DIR: a report dir written by ``irtool harness --keep-outputs``, or a tree of reproducer folders.
Exit codes as ``irtool harness``'s (0 every job judged passed, 1 a failure, 3 nothing judged,
130 interrupted); 2 when DIR cannot be re-judged (not such a folder, a file missing).
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from irtool.cli.common import fail, sigterm_as_interrupt
from irtool.cli.options import add_tolerance_options, parse_tolerances, seconds
from irtool.core.jsonable import json_text
from irtool.core.text import cut, escaped_lines

SHOWN_CHANGES = 40  # changed verdicts listed on the console; results.json holds them all


def register(actions: argparse._SubParsersAction) -> None:
    parser = actions.add_parser(
        "rejudge", help="judge a run's kept outputs (or reproducer folders) again here, without the device",
        description="Judge every job of DIR again from the outputs its device gave (kept by irtool harness "
                    "--keep-outputs, or the actual.npz of reproducer folders), as irtool run --device-outputs "
                    "does, without the device; write OUTDIR/results.json, junit.xml and report.html, and list the "
                    "jobs whose verdict is not the recorded one. Exit as irtool harness does.")
    parser.add_argument("source", type=Path, metavar="DIR",
                        help="a report dir written with --keep-outputs, or a folder of reproducer folders")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="OUTDIR", help="report folder to write")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    parser.add_argument("--timeout", type=seconds, default=120.0, metavar="S", help="seconds per job (default 120)")
    add_tolerance_options(parser, " in place of each case's")
    parser.add_argument("--xfail", action="append", default=[], type=Path, metavar="FILE",
                        help="known-failures file (repeatable)")
    parser.add_argument("--only", default="", metavar="TEXT", help="only the jobs whose folder name holds TEXT")
    parser.add_argument("--force", action="store_true",
                        help="replace report files (and a reproducers folder) in OUTDIR that irtool did not write")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="the summary's format")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from irtool.cli.harness_cmd import Progress, render, summary_json
    from irtool.harness.rejudge import RejudgeError, RejudgeOptions, rejudge

    if args.jobs < 1:
        raise RejudgeError(f"-j {args.jobs}: expected at least 1 worker")
    options = RejudgeOptions(args.source, args.output, args.jobs, args.timeout,
                             parse_tolerances(args.atol, args.rtol), args.xfail, args.force, args.only)
    bar = None if args.no_progress or args.format == "json" else Progress(sys.stderr)
    try:
        with sigterm_as_interrupt():
            found = rejudge(options, bar)
    finally:
        if bar:
            bar.finish()
    if args.format == "json":
        print(json_text({**summary_json(found.outcome), "rejudged": found.outcome.run.meta["rejudged"]}, indent=2))
    else:
        print(render_rejudged(found, args.output, render(found.outcome, args.output)))
    if found.outcome.interrupted:
        fail(f"interrupted: the reports in {args.output} are partial")
    return found.outcome.exit_code


def render_rejudged(found: Any, output: Path, summary: str) -> str:
    """What was re-judged, the harness's summary, and the verdicts that changed against the recorded ones."""
    lines = [f"irtool report rejudge: {found.outcome.jobs} jobs from {found.source}, judged here from their "
             f"recorded outputs"]
    empty = found.not_replayable
    lines += [f"note: {folder}: no device outputs (actual.npz): not re-judged" for folder in empty[:5]]
    lines += [f"note: and {len(empty) - 5} more folders without device outputs"] if len(empty) > 5 else []
    body = summary.split("\n")
    lines += body[:-1]
    moves = Counter(f"{change.recorded} -> {change.now}" for change in found.changes)
    lines.append(f"verdicts changed against the recorded ones: {len(found.changes)}"
                 + (f" ({', '.join(f'{move} {count}' for move, count in moves.items())})" if moves else "")
                 + f", {found.unchanged} unchanged")
    lines += [f"  {change.name}: {change.recorded} -> {change.now}"
              + (f": {cut(change.message)}" if change.message else "")
              + (f" (recorded: {cut(change.recorded_message)})" if change.recorded_message else "")
              + (f"; judged at other tolerances: {cut(change.tolerances)}" if change.tolerances else "")
              for change in found.changes[:SHOWN_CHANGES]]
    if len(found.changes) > SHOWN_CHANGES:
        lines.append(f"  ... and {len(found.changes) - SHOWN_CHANGES} more: {output / 'results.json'} (rejudged)")
    lines.append(body[-1])
    return escaped_lines(lines)
