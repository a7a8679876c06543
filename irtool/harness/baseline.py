"""What changed between two runs: new failures and crashes, fixed cases, accuracy drift.

Results are matched by key (case, device, precision).  Each matched pair lands in at most
one list, checked in this order: a new crash (now crash/timeout, was not), a new failure
(now fail/error, was anything else: pass, xfail, unjudged, skip), fixed (was fail, error,
crash or timeout, now pass or xpass), drift (same verdict, max abs error grown more than
``drift_factor`` times and past ``drift_floor``), another verdict change.  A key only in
the new run is "added" and, if it failed, also a new failure or crash (the baseline does
not vouch for it); a key only in the old run is "removed" (a partial run removes many).

Besides the verdicts, a pair is checked for what ran and how long it took, whatever its
verdict list: "implementation" when a node's implementation (irtool.runtime.what_ran:
``RNNSeq (f32)`` became ``TensorIterator (f32; decomposed)``) or the effective precision
changed, "slower" when the compile or first-inference time grew more than ``time_factor``
times and by more than ``time_floor`` seconds (milliseconds of scheduling noise are not a
regression).  Both count as regressions: a fallback that still gives the right numbers is the
kind of regression the numbers alone miss.

Two runs may be two OpenVINO versions or two devices: ``device_map={"CPU": "GPU"}`` pairs
the old run's CPU results with the new run's GPU results (and leaves out every other
device of either run).  Every result carries the release that produced it (``CaseResult.openvino`` in a run with
several releases, else its ``openvino_version``): two runs that each hold one release pair
up as they are; where either holds several, the releases both hold pair release with
release (a run of one release against a baseline of several compares with that release's
results), or as ``openvino_map={"2025.4.1": "2026.4.1"}`` says (``current``: the release a
run was asked as current; both may be one run: :func:`diff_versions` compares each release
of a run with the next).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from irtool.core.errors import IrtoolError
from irtool.core.text import cut, escaped_lines, number
from irtool.harness.store import RunResults
from irtool.jobs.environments import release_order
from irtool.jobs.records import (
    CRASH,
    ERROR,
    FAIL,
    FAILED,
    NODE_SEPARATOR,
    PASS,
    TIMEOUT,
    XPASS,
    CaseResult,
    job_name,
    plain,
)
from irtool.runtime.core import release_label

DRIFT_FACTOR = 2.0
# f32 runs differ from the reference by a few units in the last place (worst seen 2.7e-7 for
# values up to 1); an error that grows but stays under 1e-6 is rounding noise, not drift.
# bf16 errors (1e-3 and up) are all above it, so bf16 drift is still caught.
DRIFT_FLOOR = 1e-6
CRASHED = frozenset({CRASH, TIMEOUT})
LISTED = 10  # added and removed jobs shown in the text (a partial run removes hundreds); JSON has all
TIME_FACTOR = 2.0
# Compile and first-inference times of these small models are tens of milliseconds and wobble by
# many times that on a shared machine (measured at loads of 6 to 8 on 2 cores: a compile of 0.04 s
# took 0.16 s in the next run, one of 0.17 s took 0.69 s); a growth under a second is not reported.
TIME_FLOOR = 1.0
KINDS = ("new_failures", "new_crashes", "drift", "implementation", "slower", "fixed", "changed", "added",
         "removed")  # the lists of a RunDiff


class BaselineError(IrtoolError):
    """Options of a run diff that make no sense (a drift factor below 1)."""


@dataclass(frozen=True)
class Change:
    """One job in both runs (or in one: ``old`` or ``new`` is None); ``factor`` is new max abs /
    old max abs, where both have one."""

    old: CaseResult | None
    new: CaseResult | None

    @property
    def ref(self) -> CaseResult:
        """The result that names the job: the new one, but the old node's where a whole case stopped."""
        if self.old is not None and self.new is not None and NODE_SEPARATOR not in self.new.case:
            return self.old if NODE_SEPARATOR in self.old.case else self.new
        return self.new or self.old  # type: ignore[return-value]

    @property
    def name(self) -> str:
        where = self.new or self.old
        return job_name(self.ref.case, where.device, where.precision, where.openvino)  # type: ignore[union-attr]

    @property
    def factor(self) -> float | None:
        if self.old is None or self.new is None or self.old.max_abs is None or self.new.max_abs is None:
            return None
        if self.old.max_abs == 0:
            return math.inf if self.new.max_abs > 0 else 1.0
        return self.new.max_abs / self.old.max_abs

    def ran_differently(self) -> list[str]:
        """What ran for a node, or at what precision, that differs between the two runs."""
        old, new = self.old, self.new
        if old is None or new is None:
            return []
        found = [f"{node}: {old.implementations[node]} -> {new.implementations.get(node, 'absent')}"
                 for node in old.implementations if old.implementations[node] != new.implementations.get(node)
                 and new.implementations]
        if old.effective_precision and new.effective_precision and old.effective_precision != new.effective_precision:
            found.append("effective precision " + _precisions(old) + " -> " + _precisions(new))
        return found

    def slower(self, factor: float, floor: float) -> list[str]:
        """The times (compile, first inference) that grew more than ``factor`` times and ``floor`` seconds."""
        if self.old is None or self.new is None:
            return []
        found = []
        for what in ("compile_time", "infer_time"):
            before, after = getattr(self.old, what), getattr(self.new, what)
            if before > 0 and after > before * factor and after - before > floor:
                found.append(f"{what.split('_')[0]} {before:.3g} s -> {after:.3g} s (x{after / before:.3g})")
        return found

    def describe(self, notes: list[str] | None = None) -> str:
        """One line: ``gru-b on CPU at f32: pass -> fail, max abs 2e-07 -> 0.2 (x1e+06): message``."""
        old, new = self.old, self.new
        if notes:
            return f"{self.name}: " + "; ".join(notes)
        was = "absent" if old is None else old.verdict
        if old and new and old.device != new.device:
            was += f" on {old.device}"
        if old and new and old.openvino != new.openvino and old.openvino:
            was += f" on openvino {old.openvino}"
        text = f"{self.name}: {was} -> {new.verdict if new else 'absent'}"
        if old and new and self.factor is not None:
            text += f", max abs {old.max_abs:.3g} -> {new.max_abs:.3g} (x{self.factor:.3g})"
        if old and new and None not in (_tolerance(old), _tolerance(new)) and _tolerance(old) != _tolerance(new):
            text += f", tolerance changed: {_tolerance(old)} -> {_tolerance(new)}"
        if new and new.message and new.verdict != PASS:
            text += f": {cut(' '.join(new.message.split()))}"
        return text

    def to_json(self) -> dict[str, Any]:
        ref = self.ref
        return {"case": ref.case, "device": ref.device, "precision": ref.precision,
                "openvino": (self.new or ref).openvino, "old_openvino": self.old.openvino if self.old else None,  # type: ignore
                "old_device": self.old.device if self.old else None,
                "old": self.old.verdict if self.old else None, "new": self.new.verdict if self.new else None,
                "old_max_abs": self.old.max_abs if self.old else None,
                "new_max_abs": self.new.max_abs if self.new else None,
                "factor": self.factor, "message": self.new.message if self.new else ""}


def _precisions(result: CaseResult) -> str:
    return ", ".join(f"{p} on {d}" for d, p in result.effective_precision.items())


@dataclass
class RunDiff:
    drift_factor: float = DRIFT_FACTOR
    drift_floor: float = DRIFT_FLOOR
    time_factor: float = TIME_FACTOR
    time_floor: float = TIME_FLOOR
    new_failures: list[Change] = field(default_factory=list)
    new_crashes: list[Change] = field(default_factory=list)
    drift: list[Change] = field(default_factory=list)
    implementation: list[Change] = field(default_factory=list)
    slower: list[Change] = field(default_factory=list)
    fixed: list[Change] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)
    added: list[Change] = field(default_factory=list)
    removed: list[Change] = field(default_factory=list)
    compared: int = 0  # jobs of the new run paired with a job of the old one

    @property
    def regressed(self) -> bool:
        return bool(self.new_failures or self.new_crashes or self.drift or self.implementation or self.slower)

    @property
    def nothing_compared(self) -> bool:
        """No job of the new run is in the old one: the diff judged nothing (exit 3, never OK)."""
        return self.compared == 0

    def regressions(self) -> list[str]:
        """Each regression list that is not empty, counted: ``36 slower``, ``2 new failures``."""
        return [f"{len(changes)} {title.split(' (')[0]}" for title, changes in self.sections[:5] if changes]

    @property
    def sections(self) -> list[tuple[str, list[Change]]]:
        """(title, changes) of each list, regressions first."""
        drift = f"accuracy drift (max abs error grew more than {self.drift_factor:g}x, past {self.drift_floor:g})"
        slower = (f"slower (compile or first inference more than {self.time_factor:g}x, by more than "
                  f"{self.time_floor:g} s)")
        return [("new failures", self.new_failures), ("new crashes and timeouts", self.new_crashes),
                (drift, self.drift), ("implementation or precision changed", self.implementation),
                (slower, self.slower), ("fixed", self.fixed), ("other verdict changes", self.changed),
                ("added", self.added), ("removed", self.removed)]

    def notes(self, title: str, change: Change) -> list[str] | None:
        """What a line of the "implementation" or "slower" list says (None: the verdict line)."""
        if title.startswith("implementation"):
            return change.ran_differently()
        if title.startswith("slower"):
            return change.slower(self.time_factor, self.time_floor)
        return None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready (an infinite factor, from an old max abs of 0, as "inf")."""
        lists = {kind: [change.to_json() for change in getattr(self, kind)] for kind in KINDS}
        for change, data in zip(self.implementation, lists["implementation"]):
            data["what"] = change.ran_differently()
        for change, data in zip(self.slower, lists["slower"]):
            data["what"] = change.slower(self.time_factor, self.time_floor)
        return plain({"regressed": self.regressed, "compared": self.compared, "drift_factor": self.drift_factor,
                      "drift_floor": self.drift_floor,
                      "time_factor": self.time_factor, "time_floor": self.time_floor, **lists})


def diff_runs(old: RunResults, new: RunResults, drift_factor: float = DRIFT_FACTOR, drift_floor: float = DRIFT_FLOOR,
              device_map: Mapping[str, str] | None = None, time_factor: float = TIME_FACTOR,
              time_floor: float = TIME_FLOOR, openvino_map: Mapping[str, str] | None = None) -> RunDiff:
    """Compare two runs job by job; see the module docstring for the rules."""
    if not (time_factor >= 1 and math.isfinite(time_factor)):
        raise BaselineError(f"time factor {time_factor}: expected a finite number >= 1 (how many times a compile "
                            f"or inference may slow down)")
    if not 0 <= time_floor < float("inf"):
        raise BaselineError(f"time floor {time_floor}: expected a finite number of seconds >= 0")
    if not drift_factor >= 1:
        raise BaselineError(f"drift factor {drift_factor}: expected a number >= 1 (how many times the max abs "
                            f"error may grow)")
    if not 0 <= drift_floor < float("inf"):
        raise BaselineError(f"drift floor {drift_floor}: expected a finite number >= 0 (the max abs error at or "
                            f"under which growth is noise)")
    old_results, new_results = old.results, new.results
    openvino_map = {_named(old, k): _named(new, v) for k, v in (openvino_map or {}).items()}
    old_of, new_of = _release_of(old), _release_of(new)
    for which, results, wanted, release_of in (("old", old_results, openvino_map.keys(), old_of),
                                               ("new", new_results, openvino_map.values(), new_of)):
        held = {release_of(r) for r in results}
        missing = sorted(set(wanted) - held)
        if missing:
            raise BaselineError(f"openvino map: the {which} run holds no results of openvino {missing[0]} "
                                f"(its releases: {', '.join(sorted(v for v in held if v)) or 'unknown'})")
    old_held, new_held = {old_of(r) for r in old_results}, {new_of(r) for r in new_results}
    if openvino_map:
        old_results = [r for r in old_results if old_of(r) in openvino_map]
        new_results = [r for r in new_results if new_of(r) in openvino_map.values()]
    elif len(old_held) > 1 or len(new_held) > 1:  # a run of several releases: the releases both hold
        common = old_held & new_held
        if not common:
            raise BaselineError(f"the runs hold no release in common (old: {', '.join(sorted(old_held))}; new: "
                                f"{', '.join(sorted(new_held))}); say which to compare with an openvino map "
                                f"(report diff --openvino-map OLD=NEW)")
        old_results = [r for r in old_results if old_of(r) in common]
        new_results = [r for r in new_results if new_of(r) in common]
    # Two runs of one release each pair up as they are (two releases compared); else release with
    # release, or as mapped.
    by_release = bool(openvino_map) or len(old_held) > 1 or len(new_held) > 1
    old_release = (lambda r: openvino_map.get(old_of(r), old_of(r))) if by_release else (lambda r: None)
    new_release = new_of if by_release else (lambda r: None)
    if device_map:
        olds = {(r.case, device_map[r.device], r.precision, old_release(r)): r for r in old_results
                if r.device in device_map}
        news = {(r.case, r.device, r.precision, new_release(r)): r for r in new_results
                if r.device in device_map.values()}
    else:
        olds = {(r.case, r.device, r.precision, old_release(r)): r for r in old_results}
        news = {(r.case, r.device, r.precision, new_release(r)): r for r in new_results}
    diff = RunDiff(drift_factor, drift_floor, time_factor, time_floor)
    for before, after in _pairs(olds, news):
        if before is None:
            diff.added.append(Change(None, after))
        if after is None:
            diff.removed.append(Change(before, None))
            continue
        diff.compared += before is not None
        kind = _kind(before, after, drift_factor, drift_floor)
        if kind:
            getattr(diff, kind).append(Change(before, after))
        change = Change(before, after)
        if change.ran_differently():
            diff.implementation.append(change)
        if change.slower(time_factor, time_floor):
            diff.slower.append(change)
    return diff


def _pairs(olds: dict, news: dict) -> list[tuple[CaseResult | None, CaseResult | None]]:
    """The jobs of two runs paired by key, (old, None) and (None, new) where one run lacks it.  A
    whole model's case is one result where it stopped before its nodes were judged (a release
    that cannot read it, a crash) and a result per node (CASE::NODE) where they were: each node
    result is paired with the other run's whole-case result, so that skip -> pass or crash ->
    fail is said per node, not as a job removed and others added."""
    def whole(key: tuple) -> tuple:
        return (key[0].partition(NODE_SEPARATOR)[0], *key[1:])

    pairs: list[tuple[CaseResult | None, CaseResult | None]] = []
    paired_old, paired_new = set(), set()
    for key, after in news.items():
        if key in olds:
            pairs.append((olds[key], after))
            paired_old.add(key)
        elif whole(key) != key and whole(key) in olds and whole(key) not in news:  # old stopped, new has nodes
            pairs.append((olds[whole(key)], after))
            paired_old.add(whole(key))
        else:
            continue
        paired_new.add(key)
    for key, before in olds.items():
        if key not in paired_old and whole(key) != key and whole(key) in news and whole(key) not in olds:
            pairs.append((before, news[whole(key)]))  # old had nodes, new stopped
            paired_old.add(key)
            paired_new.add(whole(key))
    pairs += [(None, after) for key, after in news.items() if key not in paired_new]
    pairs += [(before, None) for key, before in olds.items() if key not in paired_old]
    return pairs


def _kind(old: CaseResult | None, new: CaseResult, drift_factor: float, drift_floor: float) -> str | None:
    """The list of RunDiff a job belongs in (besides "added"), or None: nothing to say."""
    was = old.verdict if old else None
    if new.verdict in CRASHED and was not in CRASHED:
        return "new_crashes"
    if new.verdict in (FAIL, ERROR) and was not in FAILED:
        return "new_failures"
    if old is None:
        return None
    if was in FAILED and new.verdict in (PASS, XPASS):
        return "fixed"
    if was != new.verdict:
        return "changed"
    factor = Change(old, new).factor
    if factor is not None and factor > drift_factor and new.max_abs > drift_floor:  # type: ignore[operator]
        return "drift"
    return None


def _tolerance(result: CaseResult) -> str | None:
    """The tolerances a result was judged with (``atol 1e-05 rtol 0.0001``, per output where they
    differ); None when it was not judged (no outputs compared)."""
    pairs = {(out.get("atol"), out.get("rtol")) for out in result.outputs}
    if not pairs or (None, None) in pairs:
        return None
    if len(pairs) == 1:
        atol, rtol = pairs.pop()
        return f"atol {number(atol)} rtol {number(rtol)}"
    return ", ".join(f"{out.get('name')} atol {number(out.get('atol'))} rtol {number(out.get('rtol'))}"
                     for out in result.outputs)


NOTHING_COMPARED = "nothing compared: no job of NEW is in OLD"


def render_diff(diff: RunDiff, old: str | None = None, new: str | None = None,
                where: Callable[[CaseResult], str] | None = None) -> str:
    """The diff as text: what the runs are (when labels are given), each non-empty list, and a
    last line saying REGRESSED and why, or OK.  ``where`` adds to a new failure or crash where
    to look (the harness: its reproducer)."""
    lines = [f"old: {old}", f"new: {new}"] if old and new else []
    for title, changes in diff.sections:
        if changes:
            shown = changes if title not in ("added", "removed") else changes[:LISTED]
            lines.append(f"{title} ({len(changes)}):")
            lines.extend(f"  {change.describe(diff.notes(title, change))}" +
                         (where(change.new) if where and change.new and title.startswith("new") else "")
                         for change in shown)
            if len(shown) < len(changes):
                lines.append(f"  ... and {len(changes) - len(shown)} more")
    lines.append(f"REGRESSED: {', '.join(diff.regressions())}" if diff.regressed else
                 NOTHING_COMPARED if diff.nothing_compared else
                 f"OK: no new failure, crash, drift, change of implementation or slowdown ({len(diff.fixed)} fixed)")
    return escaped_lines(lines)


def _release_of(run: RunResults) -> Callable[[CaseResult], str]:
    """A result's release: its release axis, else what its worker's openvino said it is, else
    (a job skipped before it reached a worker) the release the run ran under."""
    default = release_label(run.meta.get("openvino_version") or "")
    return lambda r: r.release or default


def _named(run: RunResults, release: str) -> str:
    """A release as a map names it: a label, or ``current`` for the run's release asked as current."""
    asked = {entry.get("release"): label for label, entry in (run.meta.get("openvino_releases") or {}).items()}
    return asked.get(release, release) if release == "current" else release


def releases_of(run: RunResults) -> list[str]:
    """The releases a run of several (--openvino) holds, oldest first; [] for a run of one."""
    found = {r.openvino for r in run.results if r.openvino}
    return sorted(found, key=release_order) if len(found) > 1 else []


def diff_versions(run: RunResults) -> list[tuple[str, str, RunDiff]]:
    """Each release of a run against the next newer one: (older, newer, diff), oldest first, by
    the rules the run recorded (``diff_rules``: the harness's --drift-factor, --time-factor and
    --time-floor), else the defaults."""
    unusable = {label for label, entry in (run.meta.get("openvino_releases") or {}).items() if entry.get("problem")}
    releases = [release for release in releases_of(run) if release not in unusable]  # all skipped: nothing to say
    rules = dict(run.meta.get("diff_rules") or {})
    return [(older, newer, diff_runs(run, run, openvino_map={older: newer}, **rules))
            for older, newer in zip(releases, releases[1:])]
