"""report.html: one self-contained page (inline CSS and SVG, no script, no external resource).

It holds, in order: what ran where (versions, host, suites, times; a warning for a partial
run), the run's verdict in a banner counting failures, regressions and crashes, the count of
results of each verdict (and of the jobs they came from: a model's job has a result per node),
an op x (device, precision) pass-rate table in the manner
of OpenVINO's conformance summary, what regressed against the baseline (``--baseline``)
and between the releases of the run (``--openvino``), then every failure, error, crash and
timeout with its per-output statistics, a plot of max abs error per time step, the stderr tail and a link
to its reproducer folder, and last the xpass, xfail and skipped jobs with their reasons.
Every text that comes from a run is escaped.

Pass rate = passed / judged, where passed is pass or xpass, and judged is every job but the
skipped and unjudged ones (nothing was compared there: counted as passed they would overstate
the rate); an xfail counts against the rate, as a failure the page still shows.  Skipped and
unjudged jobs are counted beside it.
"""
from __future__ import annotations

import html
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence
from urllib.parse import quote

from irtool.core.files import write_atomic
from irtool.core.text import cut, number
from irtool.harness.reports import (
    NOT_ONE_OP,
    OUTPUT_FIELDS,
    PROBLEMS,
    BaselineDiff,
    case_ops,
    column_label,
    column_of,
    columns,
    op_group,
    output_fields,
    overall_verdict,
    xml_text,
)
from irtool.harness.store import RunResults
from irtool.jobs.records import CRASH, ERROR, FAIL, PASS, SKIP, TIMEOUT, UNJUDGED, VERDICTS, XFAIL, XPASS, CaseResult

if TYPE_CHECKING:  # pragma: no cover
    from irtool.harness.baseline import RunDiff

PASSED = frozenset({PASS, XPASS})
STDERR_TAIL = 30  # lines of a crashed or hung worker's stderr shown
LISTED_CHANGES = 20  # jobs named per change of the release diff
# What one page lists, whatever the run's size (results.json and junit.xml hold every result):
LISTED_PROBLEMS = 300  # failures, errors, crashes and timeouts detailed, in that order; the rest counted
LISTED_NAMES = 200  # jobs named per reason of the xpass, xfail and skip tables
RATE_ROWS = 100  # ops of the pass-rate table; the others share one row
RATE_COLUMNS = 48  # (device, precision, release) columns of the pass-rate table; the others share one
PLOT_POINTS = 500  # a longer per-step curve is drawn from the maximum of each bucket of steps
LOG_SPAN = 100.0  # a plot's y axis is logarithmic when its values span this factor or more
STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f2f2f2}
td.rate{text-align:center;min-width:6em}
td.rate small,td.empty{color:#555}
.warning{background:#fff3cd;border:1px solid #e0b000;padding:.5em}
.verdict{font-weight:bold;padding:0 .4em;border-radius:3px;color:#fff}
.verdict.pass,.verdict.unjudged,.verdict.xpass{background:#2e7d32}.verdict.fail{background:#c62828}
.verdict.error{background:#ad1457}.verdict.crash,.verdict.timeout{background:#4a148c}
.verdict.skip,.verdict.xfail{background:#616161}
div.banner{color:#fff;padding:.5em 1em;border-radius:4px;margin:1em 0}
div.banner.failed{background:#c62828}div.banner.passed{background:#2e7d32}div.banner.other{background:#616161}
div.banner p.overall{font-size:1.4em;margin:.2em 0}div.banner .count{display:inline-block;margin-right:1.5em}
div.banner .count b{font-size:1.3em}
section.problem{border-top:2px solid #ddd;margin-top:1.2em}
pre{background:#f7f7f7;padding:.5em;overflow-x:auto}
svg text{font:11px sans-serif}
"""


def write_html(path: str | Path, run: RunResults, baseline: BaselineDiff | None = None,
               coverage_missing: Sequence[str] = (), coverage_rows: Sequence[Any] | None = None) -> None:
    write_atomic(path, render_html(run, baseline, coverage_missing, coverage_rows), "report")


def render_html(run: RunResults, baseline: BaselineDiff | None = None, coverage_missing: Sequence[str] = (),
                coverage_rows: Sequence[Any] | None = None) -> str:
    """The page; ``coverage_rows`` (irtool.harness.coverage.coverage of the run) where the caller has
    them already, else they are made here."""
    parts = [_header(run), _verdict(run, baseline, coverage_missing), _summary(run), _pass_rates(run),
             _coverage(run, coverage_rows),
             _baseline(baseline), _version_diffs(run),
             _problems(run),
             _by_reason(run, XPASS, "Known failures that now pass (xpass)"),
             _by_reason(run, XFAIL, "Known failures (xfail)"), _by_reason(run, SKIP, "Skipped")]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>irtool harness report</title><style>{STYLE}</style></head>\n<body>\n"
            + "\n".join(part for part in parts if part) + "\n</body></html>\n")


def _e(value: Any) -> str:
    return html.escape(xml_text(str(value)))


Cell = str | tuple[str, str]  # HTML already escaped, or (attributes of the <td>, HTML)


def _table(head: Sequence[str] | None, rows: Iterable[Sequence[Cell]], cls: str) -> str:
    """A table whose head (if any) is plain text and whose cells are HTML already escaped."""
    head_html = "<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead>" if head else ""
    body = "".join("<tr>" + "".join(_td(cell) for cell in row) + "</tr>" for row in rows)
    return f'<table class="{cls}">{head_html}<tbody>{body}</tbody></table>'


def _td(cell: Cell) -> str:
    attributes, content = cell if isinstance(cell, tuple) else ("", cell)
    return f"<td{attributes}>{content}</td>"


def _badge(verdict: str) -> str:
    return f'<span class="verdict {_e(verdict)}">{_e(verdict.upper())}</span>'


# ----------------------------------------------------------------------------- header and counts

def _header(run: RunResults) -> str:
    meta = run.meta
    host = meta.get("host") or {}
    releases = meta.get("openvino_releases") or {}
    rows = [("irtool", meta.get("irtool_version")), ("OpenVINO", meta.get("openvino_version"))]
    rows += [(f"OpenVINO {label}", f"{info.get('openvino_version') or 'not run'} ({info.get('release')})"
              + (f": {info['problem']}" if info.get("problem") else "")) for label, info in releases.items()]
    rows += [("host", ", ".join(str(host[k]) for k in ("name", "platform", "cpu") if host.get(k))),
             ("python", host.get("python")), ("suites", ", ".join(meta.get("suites") or ())),
             ("devices", ", ".join(meta.get("devices") or ())), ("precisions", ", ".join(meta.get("precisions") or ())),
             ("shard", meta.get("shard")), ("started", meta.get("started")), ("finished", meta.get("finished"))]
    rows += [(f"shard {s.get('shard') or k + 1}", f"{s.get('host') or '?'}, {s.get('started')} to {s.get('finished')}")
             for k, s in enumerate(meta.get("shards") or ())]
    workers = Counter(r.host for r in run.results if r.host)  # a run on a cluster: the results of each worker
    rows += [("workers", ", ".join(f"{name} ({count})" for name, count in sorted(workers.items())))]
    rejudged = meta.get("rejudged") or {}  # irtool report rejudge: the recorded outputs of another run
    rows += [("re-judged from", f"{rejudged.get('source')}: {len(rejudged.get('changed') or ())} verdicts changed "
                                f"against the recorded ones, {rejudged.get('unchanged')} unchanged" if rejudged else None)]
    text = "<h1>irtool harness report</h1>\n" + _table(None, ((_e(k), _e(v)) for k, v in rows if v), "meta")
    if run.partial:
        text += ('\n<p class="warning"><strong>Partial run:</strong> not every job ran (the run was interrupted, '
                 "is still going or lost jobs with the workers of a cluster); "
                 f"everything below covers the {len(run.results)} results recorded.</p>")
    return text


def _verdict(run: RunResults, baseline: BaselineDiff | None, coverage_missing: Sequence[str]) -> str:
    """The run's verdict, as the console's last line says it (irtool.harness.reports.overall_verdict):
    ``FAILED: 36 slower against the baseline``, in a banner of the verdict's colour that counts the
    failures (fail and error results), the regressions (jobs regressed against the baseline or from
    one release to the next, expected implementations not reached) and the crashes (crash and
    timeout results); a partial run's verdict is of what it holds."""
    diff = baseline.diff if baseline is not None else None
    from irtool.harness.baseline import diff_versions

    versions = diff_versions(run)
    word, _, regressed = overall_verdict(run.summary, diff, versions, coverage_missing)
    failures = ", ".join(f"{run.summary[v]} {v}" for v in PROBLEMS if run.summary.get(v))
    if word == "FAILED":  # what failed and what regressed alike, as the console's last line counts them
        why = "; ".join([failures] * bool(failures) + regressed)
    elif word == "NOTHING COMPARED":
        why = "no job of this run is in the baseline"
    else:
        why = ""
    why += "".join(f"; {missing}" for missing in coverage_missing)
    partial = " (partial run)" if run.partial else ""
    diffs = ([diff] if diff is not None else []) + [older_diff for _, _, older_diff in versions]
    counts = (("failures", run.summary.get(FAIL, 0) + run.summary.get(ERROR, 0)),
              ("regressions", sum(len(changes) for d in diffs for _, changes in d.sections[:5])
               + len(coverage_missing)),
              ("crashes", run.summary.get(CRASH, 0) + run.summary.get(TIMEOUT, 0)))
    tone = {"FAILED": "failed", "PASSED": "passed"}.get(word, "other")
    return (f'<div class="banner {tone}"><p class="overall">Verdict{partial}: <strong>{_e(word)}</strong>'
            f'{": " + _e(why.lstrip("; ")) if why else ""}</p>\n<p class="counts">'
            + "".join(f'<span class="count {name}"><b>{count}</b> {name}</span>' for name, count in counts)
            + "</p></div>")


def _summary(run: RunResults) -> str:
    """Each verdict's count of results (a model's job has one per node and per judgment of its
    outputs), their total, and the jobs they came from."""
    summary = run.summary
    jobs = len({r.job_key for r in run.results})
    rows = [(_badge(v), str(n)) for v, n in summary.items()] + [("total", str(len(run.results))), ("jobs", str(jobs))]
    return "<h2>Summary</h2>\n" + _table(("verdict", "results"), rows, "summary")


# ----------------------------------------------------------------------------- pass rates

def _pass_rates(run: RunResults) -> str:
    """The op x column table, counted in one pass over the results.  A run of hostile size (a
    results file naming thousands of ops or devices) keeps the table to RATE_ROWS ops and
    RATE_COLUMNS columns: the rest are counted in one "other" row and column."""
    ops = case_ops(run.results)
    cells: dict[tuple[str | None, tuple], Counter] = {}
    for r in run.results:
        column = column_of(r)
        for group in (op_group(r, ops), None):  # None: the "all ops" row
            cells.setdefault((group, column), Counter())[r.verdict] += 1
    groups = sorted({group for group, _ in cells if group is not None}, key=lambda g: (g == NOT_ONE_OP, g))
    cols = columns(run)
    other_group = f"({len(groups) - RATE_ROWS} other ops)" if len(groups) > RATE_ROWS else None
    other_column = (("", f"({len(cols) - RATE_COLUMNS} other columns)", None) if len(cols) > RATE_COLUMNS
                    else None)
    if other_group or other_column:  # fold the cells past the limits into the "other" row and column
        kept_groups, kept_cols = set(groups[:RATE_ROWS]), set(cols[:RATE_COLUMNS])
        folded: dict[tuple[str | None, tuple], Counter] = {}
        for (group, column), counts in cells.items():
            key = (group if group is None or group in kept_groups else other_group,
                   column if column in kept_cols else other_column)
            folded.setdefault(key, Counter()).update(counts)
        cells = folded
        groups = groups[:RATE_ROWS] + ([other_group] if other_group else [])
        cols = cols[:RATE_COLUMNS] + ([other_column] if other_column else [])
    rows = [[_e(group)] + [_rate_cell(cells.get((group, col), Counter())) for col in cols] for group in groups]
    if len(groups) > 1:
        rows.append(["<strong>all ops</strong>"] + [_rate_cell(cells.get((None, col), Counter())) for col in cols])
    head = ["op"] + [column_label(*col) if col != other_column else col[1] for col in cols]
    return ("<h2>Pass rate by op and device</h2>\n<p>passed / judged (skipped and unjudged jobs apart: nothing was "
            "compared there); passed counts pass and xpass.</p>\n" + _table(head, rows, "passrate"))


def _coverage(run: RunResults, reached: Sequence[Any] | None) -> str:
    """Which implementations the run reached per op, device and release, and what led to each."""
    from irtool.harness.coverage import conditions_text, coverage

    rows = [[_e(row.op), _e(row.device), _e(row.release), _e(row.implementation), str(row.nodes),
             "<br>".join(f"{_e(conditions_text(items))} ({count})" for items, count in row.conditions)]
            for row in (coverage(run.results) if reached is None else reached)]
    if not rows:
        return ""
    return ("<h2 id=\"coverage\">Implementations reached</h2>\n<p>what each node ran as (its runtime layer type; a "
            "node split per direction counts under each direction's), and the conditions of the nodes that ran "
            "so: shapes, direction, where sequence_lengths and the weights came from and what the lengths held "
            "(nodes).</p>\n" + _table(("op", "device", "openvino", "implementation", "nodes", "conditions"), rows,
                                       "coverage"))


def _rate_cell(counts: Counter) -> Cell:
    """One cell of the pass-rate table: passed/judged, the %, skips, unjudged and xfails, coloured by the rate."""
    total = sum(counts.values())
    if not total:
        return ' class="empty"', "-"
    skipped, unjudged = counts[SKIP], counts[UNJUDGED]
    ran = total - skipped - unjudged
    passed = sum(counts[v] for v in PASSED)
    title = ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])
    apart = [f"{skipped} skipped"] * bool(skipped) + [f"{unjudged} unjudged"] * bool(unjudged)
    if not ran:
        return f' class="rate" title="{_e(title)}" style="background:#e0e0e0"', ", ".join(apart)
    notes = apart + [f"{counts[XFAIL]} xfail"] * bool(counts[XFAIL])
    small = f"<br><small>{', '.join(notes)}</small>" if notes else ""
    rate = passed / ran
    # Green only when everything passed: anything less runs from red (0%) to amber (99%), so that
    # a 96% cell never passes for a 100% one at a glance.
    colour = "hsl(120,50%,78%)" if passed == ran else f"hsl({round(40 * rate)},85%,80%)"
    return (f' class="rate" title="{_e(title)}" style="background:{colour}"',
            f"{passed}/{ran}<br>{math.floor(rate * 1000) / 10:g}%{small}")


# ----------------------------------------------------------------------------- releases

def _version_diffs(run: RunResults) -> str:
    """Each OpenVINO release of the run against the next newer one, by irtool report diff's rules."""
    from irtool.harness.baseline import diff_versions

    parts = [f"<h3>OpenVINO {_e(older)} &rarr; {_e(newer)}: {_diff_verdict(diff)}</h3>\n"
             + _diff_table(diff, "<p>The releases agree on every job: same verdicts, no drift, the same "
                                 "implementations, no slowdown.</p>")
             for older, newer, diff in diff_versions(run)]
    return "<h2>Between OpenVINO releases</h2>\n" + "\n".join(parts) if parts else ""


def _baseline(baseline: BaselineDiff | None) -> str:
    """The run against its baseline (--baseline OLD), by irtool report diff's rules."""
    if baseline is None:
        return ""
    return (f'<h2 id="baseline">Against the baseline {_e(baseline.label)}: {_diff_verdict(baseline.diff)}</h2>\n'
            + _diff_table(baseline.diff, "<p>The run agrees with its baseline on every job: same verdicts, no "
                                         "drift, the same implementations, no slowdown.</p>"))


def _diff_verdict(diff: "RunDiff") -> str:
    return ("<strong>regressed</strong>" if diff.regressed else
            "no new failure, crash, drift, change of implementation or slowdown")


def _diff_table(diff: "RunDiff", same: str) -> str:
    """A diff's lists, each with its jobs and what changed (the first LISTED_CHANGES of each); ``same``
    when every list is empty."""
    rows = [[_e(title.split(" (")[0]), str(len(changes)),
             "<br>".join(_e(change.describe(diff.notes(title, change))) for change in changes[:LISTED_CHANGES])
             + ("<br>..." if len(changes) > LISTED_CHANGES else "")]
            for title, changes in diff.sections if changes]
    return _table(("change", "jobs", "which"), rows, "versions") if rows else same


# ----------------------------------------------------------------------------- problems

def _problems(run: RunResults) -> str:
    """Each failure, error, crash and timeout in detail, the first LISTED_PROBLEMS of them (in that
    order of verdicts); the others are counted, by verdict."""
    by_verdict: dict[str, list[CaseResult]] = {verdict: [] for verdict in PROBLEMS}
    for r in run.results:
        if r.verdict in by_verdict:
            by_verdict[r.verdict].append(r)
    problems = [r for verdict in PROBLEMS for r in by_verdict[verdict]]
    if not problems:
        return ""
    shown = problems[:LISTED_PROBLEMS]
    rest = Counter(r.verdict for r in problems[LISTED_PROBLEMS:])
    more = ("" if not rest else '<p class="more">... and ' + ", ".join(f"{n} more {v}" for v, n in rest.items())
            + " not detailed here (this page details the first " + str(LISTED_PROBLEMS) + "); junit.xml and "
            "results.json hold every one.</p>")
    return (f"<h2 id=\"problems\">Failures, errors, crashes and timeouts ({len(problems)})</h2>\n"
            + "\n".join(_problem(r) for r in shown) + (f"\n{more}" if more else ""))


def _problem(result: CaseResult) -> str:
    facts = [("suite", result.suite), ("op", result.op), ("file", result.file),
             ("attributes", ", ".join(f"{k}={v}" for k, v in result.attributes.items())),
             ("shapes", ", ".join(f"{k} {v}" for k, v in result.shapes.items())),
             ("sized by irtool", "; ".join(f"{k}: {v}" for k, v in result.sized.items())), ("seed", result.seed),
             ("effective precision", ", ".join(f"{p} on {d}" for d, p in result.effective_precision.items())),
             ("openvino", result.openvino_version), ("host", result.host), ("replayed", result.replayed),
             ("ran as", ", ".join(f"{node}: {impl}" for node, impl in result.implementations.items())),
             ("time", _time(result))]
    parts = [f'<section class="problem"><h3>{_badge(result.verdict)} {_e(result.name)}</h3>',
             _table(None, ((_e(k), _e(v)) for k, v in facts if v not in (None, "")), "facts"),
             f'<p class="message">{_e(cut(result.message))}</p>']
    if result.outputs:
        parts.append(_outputs_table(result.outputs))
    for out in result.outputs:
        steps = out.get("step_max_abs")
        if steps:
            parts.append(step_plot(str(out.get("name", "?")), steps, out.get("atol")))
    if result.stderr:
        parts.append("<p>stderr (its last lines):</p>"
                     f'<pre class="stderr">{_e(chr(10).join(cut(line) for line in result.stderr[-STDERR_TAIL:]))}</pre>')
    if result.reproducer:
        href = quote(result.reproducer.rstrip("/")) + "/"
        parts.append(f'<p>reproducer: <a class="reproducer" href="{_e(href)}">{_e(result.reproducer)}</a> '
                     "(run <code>python reproduce.py</code> in it)</p>")
    return "\n".join(parts) + "</section>"


def _time(result: CaseResult) -> str:
    """How long a job took: a crash or timeout ran for its time and measured no compile or inference
    (an older irtool stored 0 for it: "-", not known)."""
    if result.verdict in (CRASH, TIMEOUT):
        return f"{result.time:.3f} s until it {'crashed' if result.verdict == CRASH else 'was killed'}" \
            if result.time > 0 else "-"
    return (f"{result.time:.3f} s (compile {result.compile_time:.3f} s, first inference "
            f"{result.infer_time:.3f} s)")


def _outputs_table(outputs: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for out in outputs:
        fields = output_fields(out)
        if "problem" in fields:
            rows.append([_e(fields["output"]), (f' colspan="{len(OUTPUT_FIELDS) - 1}"', _e(fields["problem"]))])
        else:
            rows.append([_e(fields[key]) for key in OUTPUT_FIELDS])
    return _table(OUTPUT_FIELDS, rows, "outputs")


@dataclass(frozen=True)
class _Axis:
    """A plot's y axis: linear from 0, or logarithmic over whole decades.

    A log axis keeps its decades as exponents (``low`` and ``high`` are 10**exponent): the
    decade above 1.7e308 or below 5e-324 is no float, and one as a float is inf or 0."""

    low: float
    high: float
    log: bool
    low_exp: int = 0
    high_exp: int = 0

    @classmethod
    def fit(cls, values: Sequence[float]) -> "_Axis":
        """Logarithmic when the positive values span LOG_SPAN or more; non-finite values are left out."""
        known = [v for v in values if math.isfinite(v)]
        positive = [v for v in known if v > 0]
        if positive and max(positive) / min(positive) >= LOG_SPAN:
            low_exp, high_exp = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
            return cls(_power(low_exp), _power(high_exp), True, low_exp, high_exp)
        top = max(known, default=0.0) or 1.0
        return cls(0.0, top * 1.1 if math.isfinite(top * 1.1) else top, False)

    def fraction(self, value: float) -> float:
        """Where a value sits, 0 at the bottom and 1 at the top: zeros at the bottom, non-finite at the top."""
        if not math.isfinite(value):
            return 1.0
        if self.log:
            if value <= 0:
                return 0.0
            share = (math.log10(value) - self.low_exp) / (self.high_exp - self.low_exp)
        else:
            share = value / self.high
        return min(max(share, 0.0), 1.0)

    def tick(self, top: bool) -> str:
        """The label of the top or the bottom of the axis."""
        if self.log:
            exponent = self.high_exp if top else self.low_exp
            return number(_power(exponent), 2) if -300 <= exponent <= 300 else f"1e{exponent:+03d}"
        return number(self.high if top else self.low, 2)


def _power(exponent: int) -> float:
    """10**exponent as a float, clamped to the finite positive floats."""
    return min(max(10.0 ** max(min(exponent, 308), -323), 5e-324), 1.7976931348623157e308)


def step_plot(name: str, values: Sequence[float], atol: float | None, width: int = 440, height: int = 170) -> str:
    """An inline SVG line plot of max abs error per time step, with the atol as a dashed line.

    One label per axis: the y axis says what it measures and its scale (rotated, at the left),
    the x axis "time step"; the output's name heads the plot; the tick labels sit outside the frame."""
    left, right, top, bottom = 78, 12, 22, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [float(v) for v in values]
    axis = _Axis.fit(values + ([float(atol)] if atol else []))

    def y(value: float) -> float:
        return top + plot_h * (1 - axis.fraction(value))

    count = len(values)
    steps, values = _buckets(values)
    xs = [left + (plot_w * k / (count - 1) if count > 1 else plot_w / 2) for k in steps]
    points = " ".join(f"{x:.1f},{y(v):.1f}" for x, v in zip(xs, values))
    scale = "log" if axis.log else "linear"
    middle = top + plot_h / 2
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="steps" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img">',
             f"<title>max abs error per time step of {_e(name)}</title>",
             f'<text class="plot-title" x="{left}" y="14" font-weight="bold">{_e(name)}</text>',
             f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>',
             f'<text class="y-label" x="12" y="{middle:.0f}" text-anchor="middle" '
             f'transform="rotate(-90 12 {middle:.0f})">max abs error ({scale} scale)</text>',
             f'<text class="y-tick" x="{left - 4}" y="{top + 8}" text-anchor="end">{axis.tick(top=True)}</text>',
             f'<text class="y-tick" x="{left - 4}" y="{top + plot_h}" text-anchor="end">{axis.tick(top=False)}</text>',
             f'<text class="x-tick" x="{left}" y="{height - 14}" text-anchor="middle">0</text>',
             f'<text class="x-tick" x="{left + plot_w}" y="{height - 14}" text-anchor="middle">{count - 1}</text>',
             f'<text class="x-label" x="{left + plot_w / 2:.0f}" y="{height - 3}" text-anchor="middle">time step</text>']
    if atol:
        line_y = y(float(atol))
        label_y = line_y - 3 if line_y - 3 > top + 10 else line_y + 12  # inside the frame, clear of its edge
        parts.append(f'<line class="atol" x1="{left}" y1="{line_y:.1f}" x2="{left + plot_w}" y2="{line_y:.1f}" '
                     f'stroke="#c62828" stroke-dasharray="4 3"/>'
                     f'<text class="atol" x="{left + plot_w - 3}" y="{label_y:.1f}" text-anchor="end" fill="#c62828">'
                     f"atol {number(float(atol))}</text>")
    parts.append(f'<polyline points="{points}" fill="none" stroke="#1565c0" stroke-width="1.5"/>')
    if count <= PLOT_POINTS:  # a dot per step, with its value; a long curve is the line alone
        parts.extend(f'<circle cx="{x:.1f}" cy="{y(v):.1f}" r="2" fill="#1565c0"><title>step {k}: {number(v)}'
                     "</title></circle>" for k, x, v in zip(steps, xs, values))
    else:
        parts.append(f"<desc>{count} steps drawn as {len(values)} points, each the largest error of its "
                     f"{-(-count // PLOT_POINTS)} steps</desc>")
    return "\n".join(parts) + "</svg>"


def _buckets(values: list[float]) -> tuple[list[int], list[float]]:
    """At most PLOT_POINTS (step, value) points: every step of a short curve; for a long one the
    worst step of each run of steps (a max keeps every spike; NaN and inf count as the worst)."""
    if len(values) <= PLOT_POINTS:
        return list(range(len(values))), values
    size = -(-len(values) // PLOT_POINTS)
    steps, kept = [], []
    for start in range(0, len(values), size):
        chunk = values[start:start + size]
        worst = max(range(len(chunk)), key=lambda k: chunk[k] if math.isfinite(chunk[k]) else math.inf)
        steps.append(start + worst)
        kept.append(chunk[worst])
    return steps, kept


# ----------------------------------------------------------------------------- known failures and skips

def _issue(issue: str | None) -> str:
    if not issue:
        return ""
    if issue.startswith(("https://", "http://")):
        return f'<a href="{_e(issue)}">{_e(issue)}</a>'
    return _e(issue)


def _by_reason(run: RunResults, verdict: str, title: str) -> str:
    """The jobs of one verdict grouped by reason (and issue): one absent device may skip hundreds of
    jobs for one reason, and one known bug may account for many known failures.  A known failure's
    reason is its known-failures entry's, not its message (which holds each case's own numbers):
    one row per bug, each job listed under it with what it found."""
    groups: dict[tuple[str, str | None], list[str]] = {}
    for r in run.results:
        if r.verdict == verdict:
            if r.known is not None:
                line = f"{r.name}: {r.raw_verdict}" + (f": {r.raw_message}" if r.raw_message else "")
            else:
                line = r.name
            groups.setdefault((r.known or r.message, r.issue), []).append(line)
    if not groups:
        return ""
    issues = any(issue for _, issue in groups)
    rows = ([_e(reason or "(no reason given)")] + [_issue(issue)] * issues + [str(len(names)),
            f"<details><summary>jobs</summary>{_names(names)}</details>"]
            for (reason, issue), names in groups.items())
    head = ("reason",) + ("issue",) * issues + ("jobs", "")
    count = sum(len(names) for names in groups.values())
    return f'<h2 id="{verdict}">{_e(title)} ({count})</h2>\n' + _table(head, rows, f"by-reason {verdict}")


def _names(names: list[str]) -> str:
    """The jobs of one reason, the first LISTED_NAMES of them and a count of the rest."""
    listed = "<br>".join(_e(n) for n in names[:LISTED_NAMES])
    return listed + (f"<br>... and {len(names) - LISTED_NAMES} more" if len(names) > LISTED_NAMES else "")
