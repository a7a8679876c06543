"""A pytest plugin that turns a suite into tests, one per job, so pytest (and pytest-xdist's
``-n``) can run and spread them:

    pytest -p irtool.harness.pytest_plugin samples/suites/smoke.toml --irtool-device CPU,AUTO:CPU -n 2

Only suite files named on the command line are collected (a project's other TOML files
are not).  Each test runs its job in the pytest process (xdist's workers give the
isolation; a crash takes down one xdist worker, which xdist reports and replaces).  A job
that cannot run here is skipped with the reason, a known failure of the suite's
expected-failures file is an xfail, and a failure shows the harness's one-line message
and per-output statistics.

Like ``irtool harness``, a session whose suite jobs were all skipped (or where nothing was
judged) does not pass: pytest's summary is followed by ``irtool: ALL SKIPPED ...`` and the
exit code is 3, never 0.
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import pytest

from irtool.errors import IrtoolError
from irtool.jobs.records import (EXIT_NOTHING_JUDGED, FAIL, FAILED, SKIP, XFAIL, XPASS, CaseResult, Job, run_verdict,
                                    speaking_result)

_COUNTS: Counter = Counter()  # the verdicts of this session's suite jobs, as pytest reported them
_SUITE_ITEM = "irtool_suite_job"  # the keyword that marks a job's test reports
_VERDICT = "irtool_verdict"  # the user property that carries a job's verdict (unjudged passes in pytest)


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("irtool", "irtool suites")
    group.addoption("--irtool-device", default="CPU", metavar="DEVICES",
                    help="comma-separated devices to run suite files on, as irtool harness -d takes them "
                         "(HETERO:GPU+CPU for a list inside one device; default CPU)")
    group.addoption("--irtool-precision", default="f32", metavar="LIST",
                    help="comma-separated precisions: f32,bf16,f16, or default (no hint: the precision "
                         "each device picks, read back and judged with its tolerance) (default f32)")


def pytest_collect_file(file_path: Path, parent: Any) -> Any:
    if file_path.suffix != ".toml":
        return None
    named = {Path(arg.split("::")[0]).resolve() for arg in parent.config.args}
    if file_path.resolve() not in named:
        return None
    return SuiteFile.from_parent(parent, path=file_path)


class SuiteFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        from irtool.devices import parse_device_list
        from irtool.harness.matrix import check_precisions, make_jobs, parse_list
        from irtool.jobs.suite import load_suite

        config = self.config
        try:
            suite = load_suite(self.path)
            devices = parse_device_list(config.getoption("--irtool-device"), "--irtool-device")
            precisions = check_precisions(parse_list(config.getoption("--irtool-precision"), "--irtool-precision"))
        except IrtoolError as error:
            raise self.CollectError(error.message) from None
        for job in make_jobs(suite.cases, devices, precisions):
            yield JobItem.from_parent(self, name=job.name, job=job, expected=suite.expected_failures)


class JobFailed(Exception):
    def __init__(self, result: CaseResult):
        super().__init__(result.message)
        self.result = result


class JobItem(pytest.Item):
    def __init__(self, *, job: Job, expected: Path | None, **kwargs: Any):
        super().__init__(**kwargs)
        self.job = job
        self.expected = expected
        self.keywords[_SUITE_ITEM] = True

    def runtest(self) -> None:
        from irtool.harness import expectations
        from irtool.runtime.devices import skip_reason

        reason = skip_reason(self.job.device, self.job.precision, _devices())
        if reason is not None:
            pytest.skip(reason)
        results = _runner().run(self.job)
        if self.expected is not None:
            entries = expectations.load_expectations(self.expected)
            results = [expectations.apply(entries, result) for result in results]
        result = speaking_result(results)  # a model's job: the failing node's result speaks for it
        self.user_properties.append((_VERDICT, result.verdict))  # reaches the report, through xdist too
        if result.effective_precision:  # what the device ran at (with --irtool-precision default: what it chose)
            self.user_properties.append(("irtool_effective_precision", ", ".join(
                f"{precision} on {device}" for device, precision in result.effective_precision.items())))
        if result.verdict == XFAIL:
            pytest.xfail(result.message)
        if result.verdict in FAILED:
            raise JobFailed(result)
        if result.verdict == XPASS:
            self.add_report_section("call", "irtool", result.message)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, JobFailed):
            result = excinfo.value.result
            lines = [f"{result.verdict.upper()}: {result.name}: {result.message}"]
            for output in result.outputs:
                lines.append(f"  {output['name']}: max abs {output['max_abs']:.3g}, max rel {output['max_rel']:.3g}, "
                             f"outside {output['outside']}/{output['total']} (atol {output['atol']:.3g}, "
                             f"rtol {output['rtol']:.3g}); worst at {output['worst_index']}: "
                             f"device {output['worst_actual']!r}, expected {output['worst_expected']!r}")
            lines.extend(f"  stderr: {line}" for line in result.stderr)
            return "\n".join(lines)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


def pytest_runtest_logreport(report: Any) -> None:
    """Count each suite job's verdict (in the process that reports: xdist's controller too)."""
    if _SUITE_ITEM not in report.keywords:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        verdict = dict(report.user_properties).get(_VERDICT)
        if verdict is None:  # skipped before it ran, or failed in setup
            verdict = SKIP if report.skipped else FAIL
        _COUNTS[verdict] += 1


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    if _COUNTS and exitstatus == 0 and run_verdict(_COUNTS)[1] == EXIT_NOTHING_JUDGED:
        session.exitstatus = EXIT_NOTHING_JUDGED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    if _COUNTS:
        word, _ = run_verdict(_COUNTS)
        counts = ", ".join(f"{count} {verdict}" for verdict, count in sorted(_COUNTS.items()))
        terminalreporter.write_line(f"irtool: {word}: {counts} (suite jobs)")


@lru_cache(maxsize=1)
def _devices() -> Any:
    from irtool.runtime.devices import list_devices

    return list_devices()


@lru_cache(maxsize=1)
def _runner() -> Any:
    """One Runner per pytest process: it keeps built and compiled models between tests."""
    from irtool.jobs.worker import Runner

    return Runner()
