"""junit.xml: a run as JUnit XML, the dialect Jenkins, GitLab and GitHub read.

One ``<testsuite>`` per (device, precision), named like "CPU f32" (the device's default
precision with what it resolved to: "CPU default (bf16)"); one ``<testcase>`` per result, named
as the job is with the precision so resolved ("gru-forward[seed=0] on CPU at default (bf16)"):
unique in the file, since CI tools show testcases without their testsuite's name.  Its
classname is ``suite.op`` for a job of one op (a generated case, an IR file of one RNN op),
``suite.MODEL`` for the results of a model (its file name, dots as underscores: its nodes', its
expected outputs' and its runtime's results under one class) and for a file that is not one op,
so CI tools group cases by suite and op or model.  fail is a ``<failure>``; error, crash
and timeout are ``<error type=verdict>``; skip, unjudged (nothing compared: never a pass)
and xfail are ``<skipped>``; xpass passes
with a ``<system-out>`` saying that the known failure now passes.  A run of several releases
has one more testsuite per pair of releases ("openvino 2025.4.1 -> 2026.4.1"): a failing
testcase per job that regressed from the older to the newer, and a run with ``--baseline OLD``
one more ("baseline OLD"): a failing testcase per job that regressed against it, so that CI
fails where the harness exits 1.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Iterator

from irtool.core.files import atomic_writer
from irtool.core.text import cut
from irtool.harness.baseline import RunDiff, diff_versions
from irtool.harness.reports import (
    BaselineDiff,
    column_label,
    column_of,
    columns,
    one_line,
    output_lines,
    resolved_precision,
    xml_text,
)
from irtool.harness.store import RunResults
from irtool.jobs.records import CRASH, ERROR, FAIL, SKIP, TIMEOUT, UNJUDGED, XFAIL, XPASS, CaseResult, job_name

PROPERTIES = ("irtool_version", "openvino_version", "shard", "started", "finished")


def write_junit(path: str | Path, run: RunResults, baseline: "BaselineDiff | None" = None) -> None:
    with atomic_writer(path, "report") as handle:
        for chunk in junit_chunks(run, baseline):
            handle.write(chunk)


def junit_chunks(run: RunResults, baseline: "BaselineDiff | None" = None) -> Iterator[bytes]:
    """junit.xml in pieces, a testcase at a time: a run of 200,000 results is never one tree in
    memory.  The counts each start tag carries are summed from the results first."""
    by_column: dict[tuple, list[CaseResult]] = {}
    for result in run.results:  # one pass: a testsuite per column, however many columns
        by_column.setdefault(column_of(result), []).append(result)
    suites = [(column, by_column[column]) for column in columns(run) if column in by_column]
    releases = [_diff_suite(f"openvino {older} -> {newer}", diff) for older, newer, diff in diff_versions(run)]
    if baseline is not None:
        releases.append(_diff_suite(f"baseline {baseline.label}", baseline.diff))
    counts = [_counts(results) for _, results in suites] + [_element_counts(suite) for suite in releases]
    yield b"<?xml version='1.0' encoding='utf-8'?>\n"
    if not counts:
        yield _start_tag("testsuites", {"name": "irtool harness", **_total(counts)})[:-1] + b" />\n"
        return
    yield _start_tag("testsuites", {"name": "irtool harness", **_total(counts)})
    for (column, results), suite_counts in zip(suites, counts):
        yield from _testsuite(run, column, results, suite_counts)
    for suite in releases:
        ET.indent(suite, level=1)
        yield b"\n  " + ET.tostring(suite, encoding="utf-8")
    yield b"\n</testsuites>\n"


def _testsuite(run: RunResults, column: tuple, results: list[CaseResult], counts: dict[str, str]) -> Iterator[bytes]:
    device, precision, release = column
    attributes = {"name": column_label(device, resolved_precision(precision, results), release)}
    host = run.meta.get("host") or {}
    if host.get("name"):
        attributes["hostname"] = xml_text(str(host["name"]))
    if _timestamp(run.meta.get("started")):
        attributes["timestamp"] = _timestamp(run.meta.get("started"))  # type: ignore[assignment]
    yield b"\n  " + _start_tag("testsuite", {**attributes, **counts})
    properties = ET.Element("properties")
    meta = dict(run.meta)
    if column[2]:  # the release this testsuite ran under, as its openvino said (not the installed one)
        meta["openvino_version"] = next((r.openvino_version for r in results if r.openvino_version), column[2])
    for name in PROPERTIES:
        if meta.get(name) is not None:
            ET.SubElement(properties, "property", name=name, value=xml_text(str(meta[name])))
    ET.SubElement(properties, "property", name="partial", value=str(run.partial).lower())
    yield from _indented(properties)
    for result in results:
        yield from _indented(_testcase(result))
    yield b"\n  </testsuite>"


def _indented(element: ET.Element) -> Iterator[bytes]:
    """An element of a testsuite, indented as ET.indent indents the whole tree."""
    ET.indent(element, level=2)
    yield b"\n    " + ET.tostring(element, encoding="utf-8").removeprefix(b"<?xml version='1.0' encoding='utf-8'?>\n")


def _start_tag(tag: str, attributes: dict[str, str]) -> bytes:
    """``<tag a="1">`` with the attributes escaped as ElementTree escapes them."""
    return ET.tostring(ET.Element(tag, attributes), encoding="utf-8").removeprefix(
        b"<?xml version='1.0' encoding='utf-8'?>\n").removesuffix(b" />") + b">"


def _counts(results: list[CaseResult]) -> dict[str, str]:
    """tests/failures/errors/skipped/time of a testsuite of these results (as _testcase writes them)."""
    verdicts = Counter(r.verdict for r in results)
    return {"tests": str(len(results)), "failures": str(verdicts[FAIL]),
            "errors": str(verdicts[ERROR] + verdicts[CRASH] + verdicts[TIMEOUT]),
            "skipped": str(verdicts[SKIP] + verdicts[XFAIL] + verdicts[UNJUDGED]),
            "time": f"{sum(float(f'{r.time:.3f}') for r in results):.3f}"}


def _element_counts(suite: ET.Element) -> dict[str, str]:
    return {key: suite.get(key, "0") for key in ("tests", "failures", "errors", "skipped", "time")}


def _total(counts: list[dict[str, str]]) -> dict[str, str]:
    total = {key: str(sum(int(c[key]) for c in counts)) for key in ("tests", "failures", "errors", "skipped")}
    return {**total, "time": f"{sum(float(c['time']) for c in counts):.3f}"}


def _diff_suite(name: str, diff: RunDiff) -> ET.Element:
    """A comparison (two releases of a run, or a run and its baseline) as a testsuite, so that a CI
    reading junit.xml fails where the harness does: a testcase per regressed job (new failure or
    crash, drift, changed implementation, slowdown), or one passing testcase saying nothing regressed."""
    suite = ET.Element("testsuite", name=xml_text(name))
    cases = []
    for title, changes in diff.sections[:5]:  # the regressions
        for change in changes:
            case = ET.Element("testcase", classname=xml_text(name), name=xml_text(change.name), time="0.000")
            ET.SubElement(case, "failure", type="regression",
                          message=xml_text(f"{title}: {one_line(change.describe(diff.notes(title, change)))}"))
            cases.append(case)
    if not cases:
        cases.append(ET.Element("testcase", classname=xml_text(name), name="no regression", time="0.000"))
    suite.extend(cases)
    _set_counts(suite, cases)
    return suite


def _timestamp(started: str | None) -> str | None:
    """ISO 8601 in UTC without an offset, as the JUnit schema's timestamp pattern has it."""
    try:
        moment = datetime.fromisoformat(str(started))
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def _testcase(result: CaseResult) -> ET.Element:
    name = job_name(result.case, result.device, resolved_precision(result.precision, [result]), result.openvino)
    case = ET.Element("testcase", classname=xml_text(class_name(result)), name=xml_text(name),
                      time=f"{result.time:.3f}")
    message = xml_text(cut(one_line(result.message)))
    said = [f"host: {result.host}"] if result.host else []  # the worker that ran it (a run on a cluster)
    said += [f"replayed: {result.replayed}"] if result.replayed else []  # judged from outputs recorded elsewhere
    if result.verdict == FAIL:
        failure = ET.SubElement(case, "failure", message=message, type=FAIL)
        failure.text = xml_text("\n".join([cut(result.message), *output_lines(result)]))
    elif result.verdict in (ERROR, CRASH, TIMEOUT):
        error = ET.SubElement(case, "error", message=message, type=result.verdict)
        error.text = xml_text("\n".join(cut(line) for line in [result.message, *result.stderr]))
    elif result.verdict == SKIP:
        ET.SubElement(case, "skipped", message=message)
    elif result.verdict == XFAIL:
        ET.SubElement(case, "skipped", message=f"xfail: {message}" + (f" ({result.issue})" if result.issue else ""))
    elif result.verdict == XPASS:
        said.insert(0, f"xpass: known failure now passes; remove it from the expected failures "
                       f"({one_line(result.message)}{', ' + result.issue if result.issue else ''})")
    elif result.verdict == UNJUDGED:
        ET.SubElement(case, "skipped", message=f"nothing judged: {message or 'no reference applies'}")
    if said:
        ET.SubElement(case, "system-out").text = xml_text("\n".join(said))
    return case


def class_name(result: CaseResult) -> str:
    """``suite.op`` for a job of one op (a generated case, an IR file of one RNN op); ``suite.MODEL``
    for a model's results (its nodes', its expected outputs', its runtime's: ``CASE::NAME``) and for
    a file that is not one op: its file name, dots as underscores (CI tools read dots as packages)."""
    if result.file and (result.node or not result.op):
        return f"{result.suite}.{Path(result.file).name.replace('.', '_')}"
    return f"{result.suite}.{result.op or 'file'}"


def _set_counts(element: ET.Element, children: Iterable[ET.Element]) -> None:
    """tests/failures/errors/skipped/time of a testsuite from its testcases, or of testsuites
    from its testsuites."""
    children = list(children)
    if element.tag == "testsuite":
        counts = {"tests": len(children),
                  "failures": sum(c.find("failure") is not None for c in children),
                  "errors": sum(c.find("error") is not None for c in children),
                  "skipped": sum(c.find("skipped") is not None for c in children)}
    else:
        counts = {key: sum(int(c.get(key, 0)) for c in children) for key in ("tests", "failures", "errors", "skipped")}
    for key, value in counts.items():
        element.set(key, str(value))
    element.set("time", f"{sum(float(c.get('time', 0)) for c in children):.3f}")
