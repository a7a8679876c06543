"""``irtool run MODEL --openvino 2025.4.1,current``: the same run under several OpenVINO releases.

Each release runs this irtool in its own environment (irtool.jobs.environments) as ``irtool run
... --format json``; this process puts their node verdicts side by side and says what changed
from each release to the next newer one.  With one release the run is simply that release's
``irtool run``: its own report, its own exit code.  With several, a release that cannot run
the model (it cannot be installed, it is too old for irtool, its opsets lack an op of the
model, its openvino finds no such device here or the device lacks the precision) is skipped
with the reason, as the harness does (irtool.runtime.devices.skip_reason, asked in that
release's own environment).

Exit codes, over the releases: 1 when a node fails on any of them; else 2 when one could not run
the model for another reason than a skip (an error of the model; a device name OpenVINO does
not know is refused before any release is made); else 0 when some release judged something;
else 3 (nothing judged anywhere).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
from dataclasses import dataclass, field
from typing import Any, Callable

from irtool.cli.common import UsageError, stopped
from irtool.core.documents import load_json
from irtool.core.jsonable import json_text
from irtool.core.processes import signal_text
from irtool.core.text import escaped_lines
from irtool.jobs.environments import Environment, describe, environments, worker_environment

SKIPPED = "skipped"


@dataclass
class ReleaseRun:
    """One release's ``irtool run --format json``: its JSON, or why there is none."""

    label: str
    code: int
    data: dict = field(default_factory=dict)
    stopped: str | None = None  # the message of a run that judged nothing
    skipped: bool = False  # the release cannot run the model here (not an error of the model)
    env: Environment | None = None  # where it ran: what was asked, and the exact version found there

    @property
    def verdict(self) -> str:
        return SKIPPED if self.skipped else self.data.get("verdict", "error")

    @property
    def nodes(self) -> dict[str, dict]:
        return {node["name"]: node for node in self.data.get("nodes", [])}


RELEASE_ENV = "IRTOOL_RELEASE_RUN"  # set in a release's process: "" (the only release) or its label


def release_process(args: argparse.Namespace) -> bool:
    """Whether this process is one release's run of ``irtool run --openvino ...`` (see
    :func:`child_command`); if so, ``args`` becomes that release's: --openvino is done with, and with
    several releases (a label) the report is JSON and the files written are the release's own
    (OUT.npz -> OUT-2025.4.1.npz, --reproducers DIR -> DIR/2025.4.1).  The variable is dropped, so
    that nothing this process starts takes it for its own."""
    label = os.environ.pop(RELEASE_ENV, None)
    if label is None:
        return False
    args.openvino = None
    if label:
        args.format = "json"
        out = args.save_outputs
        if out is not None:
            args.save_outputs = out.with_name(f"{out.stem}-{label}{out.suffix}")
        if args.reproducers is not None:
            args.reproducers = args.reproducers / label
    return True


def child_command(env: Environment, args: argparse.Namespace, label: str | None) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of one release's process: this command line word for word
    (``args.argv``: a model named ``-d.xml`` after ``--``, ``--inputs=-in.npz``, whatever it held,
    reaches the release's irtool as it reached this one, which parses it itself), run by the
    release's Python, with :data:`RELEASE_ENV` telling it which release it is
    (:func:`release_process`)."""
    return [env.python, "-m", "irtool", *args.argv], {**worker_environment(), RELEASE_ENV: label or ""}


def run_releases(args: argparse.Namespace, log: Callable[[str], None]) -> int:
    from irtool.jobs.environments import parse_releases

    releases = parse_releases(args.openvino)
    _check_paths(args)  # before any release is made
    if args.compare_with is not None and args.compare_with.lower() == "onnxruntime" and releases != ["current"]:
        raise UsageError("--compare-with onnxruntime runs onnxruntime beside the installed openvino only (a release's "
                         "environment holds irtool's run-time dependencies, not onnxruntime); drop --openvino, or "
                         "give --openvino current")
    envs = environments(releases, args.openvino_cache, log)
    if len(envs) == 1:
        [(label, env)] = envs.items()
        if not env.usable:
            return stopped(args, "unjudged", f"skipped: openvino {env.release} cannot run here: {env.problem}", 3)
        argv, environment = child_command(env, args, None)
        code = subprocess.run(argv, env=environment, stdin=subprocess.DEVNULL).returncode
        if code < 0:  # the release's process died by a signal before its own supervisor could say so
            return stopped(args, "error", f"{args.model}: openvino {env.release}'s irtool run died: "
                                          f"{signal_text(-code)}", 2)
        return code
    runs = [dataclasses.replace(_run_one(label, env, args), env=env) for label, env in envs.items()]  # oldest first
    if args.format == "json":
        print(json_text(to_json(args, runs), indent=2))
    else:
        print(render_text(args, runs))
    return exit_code(runs)


def _check_paths(args: argparse.Namespace) -> None:
    """The model, the inputs and the files to write, checked as ``irtool run`` checks them, before
    any release is made or started."""
    from irtool.core.files import check_readable, writable_target
    from irtool.runtime.model import check_model_path

    check_model_path(args.model)
    if args.inputs is not None:
        check_readable(args.inputs, "inputs file")
    if args.expected is not None:
        check_readable(args.expected, "--expected file")
    if args.save_outputs is not None:  # each release's file goes beside it
        writable_target(args.save_outputs, "outputs file")


def _run_one(label: str, env: Environment, args: argparse.Namespace) -> ReleaseRun:
    if not env.usable:
        return ReleaseRun(label, 3, stopped=f"openvino {env.release} cannot run here: {env.problem}", skipped=True)
    argv, environment = child_command(env, args, label)
    done = subprocess.run(argv, capture_output=True, text=True, env=environment, stdin=subprocess.DEVNULL)
    try:
        data = load_json(done.stdout)
    except ValueError:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return ReleaseRun(label, 2, stopped=(lines or [f"irtool run exited {done.returncode} without a report"])[-1])
    stopped = data.get("error")
    stopped = stopped.removeprefix("skipped: ") if stopped else None
    # a release whose openvino cannot take the model or the device as asked is skipped, not an error
    skipped = stopped is not None and (done.returncode == 3 or bool(data.get("unsupported")))
    return ReleaseRun(label, done.returncode, data, stopped, skipped)


def exit_code(runs: list[ReleaseRun]) -> int:
    verdicts = {run.verdict for run in runs}
    if "fail" in verdicts:
        return 1
    if verdicts & {"error", "timeout"}:
        return 2
    if "pass" in verdicts:  # as run_cmd.exit_code: a pass whose --save-outputs was not written is 2
        return 2 if any((run.data or {}).get("unwritten") for run in runs) else 0
    return 3


def changes(older: ReleaseRun, newer: ReleaseRun) -> list[str]:
    """What differs from one release's run to the next: verdicts and implementations, per node."""
    if older.skipped or newer.skipped or older.stopped or newer.stopped:
        return [f"the model: {older.verdict} -> {newer.verdict}"] if older.verdict != newer.verdict else []
    lines = []
    for name in dict.fromkeys([*older.nodes, *newer.nodes]):
        old, new = older.nodes.get(name), newer.nodes.get(name)
        if old is None or new is None:
            lines.append(f"node {name}: {'only in ' + (older if new is None else newer).label}")
            continue
        if old["verdict"] != new["verdict"]:
            lines.append(f"node {name}: {old['verdict']} -> {new['verdict']}")
        if old.get("implementation") != new.get("implementation"):
            lines.append(f"node {name}: ran as {old.get('implementation') or '?'} -> {new.get('implementation') or '?'}")
    return lines


def _cell(run: ReleaseRun, node: dict | None) -> str:
    if run.skipped:
        return "SKIP"
    if node is None:
        return "ERROR" if run.stopped else "-"
    max_abs = node.get("max_abs")
    return " ".join(filter(None, [node["verdict"].upper(), None if max_abs is None else f"{max_abs:.3g}",
                                  node.get("implementation")]))


def render_text(args: argparse.Namespace, runs: list[ReleaseRun]) -> str:
    labels = [run.label for run in runs]
    lines = [f"{args.model}: on {args.device} at {args.precision}, under openvino {', '.join(labels)}"]
    names = list(dict.fromkeys(name for run in runs for name in run.nodes))
    rows = [("node", "type", *labels)]
    for name in names:
        node = next(run.nodes[name] for run in runs if name in run.nodes)
        rows.append((name, f"{node['type']}-{node['version']}", *(_cell(run, run.nodes.get(name)) for run in runs)))
    if len(rows) > 1:
        widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
        lines += ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    for run in runs:
        lines += [f"  {run.label}: {line}" for line in _where_lines(run) + _release_lines(run)]
    for older, newer in zip(runs, runs[1:]):
        found = changes(older, newer)
        lines.append(f"openvino {older.label} -> {newer.label}: " + ("; ".join(found) if found else "no change"))
    lines.append("; ".join(f"{run.verdict.upper()} on {run.label}" for run in runs))
    return escaped_lines(lines)


def _where_lines(run: ReleaseRun) -> list[str]:
    """Which openvino a release's column is, exactly (irtool.jobs.environments.describe)."""
    env = run.env
    if env is None or env.openvino_version is None:
        return []
    return [f"openvino {describe(env, run.label)}"]


def _release_lines(run: ReleaseRun) -> list[str]:
    """What one release's run says beyond the node table: why it stopped, its failing nodes, a
    comparison with a second device (--compare-with), and the files it wrote."""
    if run.stopped:
        return [f"{'skipped' if run.skipped else 'error'}: {run.stopped}"]
    data = run.data
    lines = [f"{node['verdict'].upper()} node '{node['name']}': {node.get('reason')}"
             for node in data.get("nodes", []) if node["verdict"] in ("fail", "error")]
    against = data.get("against") or ""
    if against and not against.startswith("reference"):
        lines.append(f"against {against}: " + ", ".join(
            f"{out['name']} {'PASS' if out['passed'] else 'FAIL'}" + ("" if out.get("max_abs") is None
                                                                      else f" max abs {out['max_abs']:.3g}")
            for out in data.get("outputs", [])))
    if data.get("saved_outputs"):
        lines.append(f"outputs saved to {data['saved_outputs']}")
    lines += [f"reproducer of node '{name}': {folder}" for name, folder in (data.get("reproducers") or {}).items()]
    lines += [f"NOT WRITTEN: {what}" for what in data.get("unwritten") or ()]
    return lines


def to_json(args: argparse.Namespace, runs: list[ReleaseRun]) -> dict[str, Any]:
    return {"model": str(args.model), "verdict": {0: "pass", 1: "fail", 2: "error", 3: "unjudged"}[exit_code(runs)],
            "releases": {run.label: {"verdict": run.verdict, "exit_code": run.code, "stopped": run.stopped,
                                     "asked": run.env.release if run.env else None,
                                     "openvino_version": run.env.openvino_version if run.env else None,
                                     "distribution": run.env.distribution if run.env else None,
                                     "run": run.data or None} for run in runs},
            "changes": [{"older": older.label, "newer": newer.label, "what": changes(older, newer)}
                        for older, newer in zip(runs, runs[1:])]}
