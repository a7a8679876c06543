"""A pytest plugin that turns a suite into tests, one per job, so pytest (and pytest-xdist's
``-n``) can run and spread them:

    pytest -p irtool.harness.pytest_plugin samples/suites/smoke.toml --irtool-device CPU,AUTO:CPU -n 2

Only suite files named on the command line are collected (a project's other TOML files
are not).  Each pytest process (each xdist worker) runs its jobs in one irtool worker
process of its own, as ``irtool harness -j 1`` does, so every verdict is an ordinary pytest
outcome: fail, error, crash (the worker died) and timeout (past the suite's timeout) fail
their test with the harness's one-line message and per-output statistics; a job that cannot
run here is skipped with the reason; a known failure of the suite's expected-failures file
(or of ``--irtool-xfail``) is an xfail, and a known failure that passed an xpass.

``--irtool-baseline OLD`` (a results.json or report dir of an earlier harness run) fails a
test whose job regressed against it, by ``irtool harness --baseline``'s rules (a new failure
or crash, accuracy drift, a changed implementation or precision, a slowdown);
``--irtool-reproducers DIR`` writes a reproducer folder per failing job into DIR/reproducers/; one
that cannot be written (a full disk) is said in its test's failure and after pytest's summary
(``NOT WRITTEN: JOB: why``), as ``irtool run`` and the harness say it.

Each test's id is pytest's form for parametrized tests, its parameters in one bracket group at the
end (``gru[direction=forward,seed=0-CPU-f32]``), so junit.xml names it as pytest names its own.

Like ``irtool harness``, a session whose suite jobs were all skipped (or where nothing was
judged) does not pass: pytest's summary is followed by ``irtool: ALL SKIPPED ...`` and the
exit code is 3, never 0.  A suite's ``expect_coverage`` (and ``--irtool-expect-coverage``) is
held as the harness holds it: an expected implementation that no job of the session reached
prints ``COVERAGE: ...`` and fails the session (exit 1), with ``-n`` too.
"""
from __future__ import annotations

import atexit
import json
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

import pytest

from irtool.core.errors import IrtoolError
from irtool.core.jsonable import json_text
from irtool.jobs.records import (
    EXIT_FAILED,
    EXIT_NOTHING_JUDGED,
    FAIL,
    FAILED,
    SKIP,
    UNJUDGED,
    XFAIL,
    XPASS,
    CaseResult,
    Job,
    run_verdict,
    speaking_result,
)

_COUNTS: Counter = Counter()  # the verdicts of this session's suite jobs, as pytest reported them
_SUITE_ITEM = "irtool_suite_job"  # the keyword that marks a job's test reports
_VERDICT = "irtool_verdict"  # the user property that carries a job's verdict (unjudged is a skip in pytest)
_XPASS = "irtool_xpass"  # the user property of a known failure that passed: its message
_RAN = "irtool_ran"  # the user property of what each result of a job ran as (the fields coverage reads), JSON
_RESULTS: list[CaseResult] = []  # those, gathered where the reports arrive (xdist's controller too)
_COVERAGE: dict[str, list[str]] = {"missing": [], "notes": []}  # the suites' expect_coverage, checked at the end
_UNWRITTEN = "irtool_unwritten"  # the user property of a file a job could not write (its reproducer), and why
_UNWRITTEN_LINES: list[str] = []  # those, gathered where the reports arrive


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("irtool", "irtool suites")
    group.addoption("--irtool-device", default="CPU", metavar="DEVICES",
                    help="comma-separated devices to run suite files on, as irtool harness -d takes them "
                         "(HETERO:GPU+CPU for a list inside one device; default CPU)")
    group.addoption("--irtool-precision", default="f32", metavar="LIST",
                    help="comma-separated precisions: f32,bf16,f16, or default (no hint: the precision "
                         "each device picks, read back and judged with its tolerance) (default f32)")
    group.addoption("--irtool-xfail", action="append", default=[], type=Path, metavar="FILE",
                    help="known-failures file (repeatable), besides each suite's own")
    group.addoption("--irtool-baseline", type=Path, metavar="OLD",
                    help="results.json (or report dir) of an earlier irtool harness run: a job that regressed "
                         "against it (new failure or crash, accuracy drift, changed implementation, slowdown) "
                         "fails its test")
    group.addoption("--irtool-reproducers", type=Path, metavar="DIR",
                    help="write a reproducer folder per failing job into DIR/reproducers/")
    group.addoption("--irtool-expect-coverage", metavar="LIST",
                    help="comma-separated implementations the session must reach, each IMPLEMENTATION or "
                         "OP:IMPLEMENTATION (RNNSeq,LSTMSequence:TensorIterator), as irtool harness "
                         "--expect-coverage takes them; besides the suites' own expect_coverage")


def pytest_configure(config: Any) -> None:
    from irtool.harness import coverage

    try:  # a misspelt item is said before anything runs
        coverage.parse_expected(_expect_coverage_option(config), "--irtool-expect-coverage")
    except IrtoolError as error:
        raise pytest.UsageError(error.message) from None


def _expect_coverage_option(config: Any) -> list[str]:
    given = config.getoption("--irtool-expect-coverage", None)
    return [item.strip() for item in given.split(",")] if given is not None else []


def pytest_collect_file(file_path: Path, parent: Any) -> Any:
    if file_path.suffix != ".toml":
        return None
    named = {Path(arg.split("::")[0]).resolve() for arg in parent.config.args}
    if file_path.resolve() not in named:
        return None
    return SuiteFile.from_parent(parent, path=file_path)


class SuiteFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        from irtool.core.device_names import parse_device_list
        from irtool.core.memory import memory_limit
        from irtool.harness import coverage, expectations
        from irtool.harness.matrix import check_precisions, make_jobs, parse_list
        from irtool.harness.matrix import case_ops
        from irtool.jobs.suite import load_suite

        config = self.config
        try:
            memory_limit()  # IRTOOL_MEMORY_LIMIT read as run reads it: said once, here
            suite = load_suite(self.path)
            devices = parse_device_list(config.getoption("--irtool-device"), "--irtool-device")
            precisions = check_precisions(parse_list(config.getoption("--irtool-precision"), "--irtool-precision"))
            files = ([suite.expected_failures] if suite.expected_failures else []) + config.getoption("--irtool-xfail")
            expected = [entry for path in files for entry in expectations.load_expectations(path)]
            coverage.parse_expected(list(suite.expect_coverage), f"{self.path}: expect_coverage", case_ops(suite.cases))
            if config.getoption("--irtool-baseline") is not None:
                _baseline(config.getoption("--irtool-baseline"))  # a baseline that cannot be read: said once, here
        except IrtoolError as error:
            raise self.CollectError(error.message) from None
        for job in make_jobs(suite.cases, devices, precisions):
            yield JobItem.from_parent(self, name=test_id(job), job=job, expected=expected, timeout=suite.timeout)


def test_id(job: Job) -> str:
    """A job's test id in pytest's form for parametrized tests, its parameters in one bracket group
    at the end: ``gru[direction=forward,seed=0-CPU-f32]`` for the job ``gru[direction=forward,seed=0]
    on CPU at f32`` (a name with text after its brackets is not an id junit readers and CI tools
    take apart as pytest's)."""
    case = job.case.id
    base, bracket, params = case.partition("[")
    if not (bracket and params.endswith("]") and "[" not in params and "]" not in params[:-1]):
        base, params = case, "]"
    return f"{base}[{params[:-1]}{'-' if params[:-1] else ''}{job.device}-{job.precision}]"


class JobFailed(Exception):
    def __init__(self, result: CaseResult, regression: str | None = None):
        super().__init__(result.message)
        self.result = result
        self.regression = regression


class JobItem(pytest.Item):
    def __init__(self, *, job: Job, expected: list, timeout: float, **kwargs: Any):
        super().__init__(**kwargs)
        self.job = job
        self.expected = expected
        self.timeout = timeout
        self.keywords[_SUITE_ITEM] = True

    def runtest(self) -> None:
        from irtool.harness import expectations
        from irtool.runtime.devices import skip_reason

        reason = skip_reason(self.job.device, self.job.precision, _devices())
        if reason is not None:
            pytest.skip(reason)
        results: list[CaseResult] = []
        try:
            pool = _pool(self.config.getoption("--irtool-reproducers"))
            pool.timeout = self.timeout
            pool.run([self.job], results.append)
        except IrtoolError as error:  # no worker could start: said as the harness says it
            pytest.fail(f"{self.job.name}: {error.message}", pytrace=False)
        results = [expectations.apply(self.expected, result) for result in results]
        result = speaking_result(results)  # a model's job: the failing node's result speaks for it
        self.user_properties.append((_VERDICT, result.verdict))  # reaches the report, through xdist too
        # for the suites' expect_coverage, as JSON: junit.xml writes a property's value as text
        self.user_properties.append((_RAN, json_text([_ran(r) for r in results])))
        self.user_properties += [(_UNWRITTEN, f"{r.name}: {r.unwritten}") for r in results if r.unwritten]
        if result.effective_precision:  # what the device ran at (with --irtool-precision default: what it chose)
            self.user_properties.append(("irtool_effective_precision", ", ".join(
                f"{precision} on {device}" for device, precision in result.effective_precision.items())))
        regression = self._regression(results)
        if result.verdict in FAILED or regression:
            raise JobFailed(result, regression)
        if result.verdict == XFAIL:
            pytest.xfail(result.message)
        if result.verdict == SKIP:
            pytest.skip(result.message)
        if result.verdict == UNJUDGED:  # nothing compared: never a passed test
            pytest.skip(f"nothing judged: {result.message}")
        if result.verdict == XPASS:
            self.user_properties.append((_XPASS, result.message))

    def _regression(self, results: list[CaseResult]) -> str | None:
        """What regressed against --irtool-baseline, as irtool harness says it; None: nothing."""
        path = self.config.getoption("--irtool-baseline")
        if path is None:
            return None
        from irtool.harness.baseline import diff_runs, render_diff
        from irtool.harness.store import RunResults

        old = _baseline(path)
        olds = [r for key in {r.job_key for r in results} | {self.job.key} for r in old.results_of.get(key, ())]
        diff = diff_runs(RunResults(old.run.meta, olds), RunResults({}, results))
        return render_diff(diff) if diff.regressed else None

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, JobFailed):
            from irtool.harness.reports import output_lines

            result = excinfo.value.result
            lines = [f"{result.verdict.upper()}: {result.name}: {result.message}"]
            lines.extend(f"  {line}" for line in output_lines(result))
            lines.extend(f"  stderr: {line}" for line in result.stderr)
            if result.reproducer:
                lines.append(f"  reproducer: {Path(self.config.getoption('--irtool-reproducers')) / result.reproducer}")
            if result.unwritten:
                lines.append(f"  NOT WRITTEN: {result.unwritten}")
            if excinfo.value.regression:
                lines.append(f"against the baseline {self.config.getoption('--irtool-baseline')}:")
                lines.extend(f"  {line}" for line in excinfo.value.regression.splitlines())
            return "\n".join(lines)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, self.name


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    """A known failure that passed is pytest's own xpass (passed, with the reason), as a test
    marked xfail that passes is."""
    outcome = yield
    report = outcome.get_result()
    if call.when == "call" and report.passed:
        message = dict(item.user_properties).get(_XPASS) if isinstance(item, JobItem) else None
        if message is not None:
            report.wasxfail = message


def pytest_runtest_logreport(report: Any) -> None:
    """Count each suite job's verdict (in the process that reports: xdist's controller too)."""
    if _SUITE_ITEM not in report.keywords:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        verdict = dict(report.user_properties).get(_VERDICT)
        if verdict is None:  # skipped before it ran, or failed in setup
            verdict = SKIP if report.skipped else FAIL
        _COUNTS[verdict] += 1
        _RESULTS.extend(CaseResult(case="", suite="", precision="", **fields)
                        for fields in json.loads(dict(report.user_properties).get(_RAN, "[]")))
        _UNWRITTEN_LINES.extend(value for key, value in report.user_properties if key == _UNWRITTEN)


def _ran(result: CaseResult) -> dict[str, Any]:
    """What coverage reads of a result, as plain data (an xdist worker sends it in its report)."""
    return {"verdict": result.verdict, "op": result.op, "device": result.device, "openvino": result.release or None,
            "implementations": dict(result.implementations),
            "conditions": {node: dict(items) for node, items in result.conditions.items()}}


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    if _COUNTS and exitstatus == 0 and run_verdict(_COUNTS)[1] == EXIT_NOTHING_JUDGED:
        session.exitstatus = EXIT_NOTHING_JUDGED
    if _COUNTS and not hasattr(session.config, "workerinput"):  # the process that has every job's report
        _check_coverage(session)


def _check_coverage(session: Any) -> None:
    """The suites' expect_coverage, held as irtool harness holds it: an expected implementation that
    no job of this session reached fails the session (exit 1); a session where no job that ran
    reported its implementation is not held to it (a note)."""
    from irtool.harness import coverage
    from irtool.jobs.suite import load_suite

    expected = coverage.parse_expected(_expect_coverage_option(session.config), "--irtool-expect-coverage")
    for path in _suite_paths(session.config):
        try:
            expected += coverage.parse_expected(list(load_suite(path).expect_coverage), f"{path}: expect_coverage")
        except IrtoolError:
            continue  # said when the suite was collected
    if not expected:
        return
    rows = coverage.coverage(_RESULTS)
    if not rows:
        _COVERAGE["notes"].append(coverage.NOT_CHECKED)
        return
    _COVERAGE["missing"] = coverage.missing(rows, expected)
    if _COVERAGE["missing"]:
        session.exitstatus = EXIT_FAILED


def _suite_paths(config: Any) -> list[Path]:
    """The suite files named on the command line (those this plugin collects)."""
    paths = [Path(arg.split("::")[0]) for arg in config.args]
    return list(dict.fromkeys(path for path in paths if path.suffix == ".toml" and path.is_file()))


def pytest_unconfigure(config: Any) -> None:
    _close_pool()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    if _COUNTS:
        for line in _UNWRITTEN_LINES:  # a verdict never changes for it, but it is said, as run and harness say it
            terminalreporter.write_line(f"NOT WRITTEN: {line}")
        for note in _COVERAGE["notes"]:
            terminalreporter.write_line(f"irtool: note: {note}")
        for missing in _COVERAGE["missing"]:
            terminalreporter.write_line(f"COVERAGE: {missing}")
        word, _ = run_verdict(_COUNTS, bool(_COVERAGE["missing"]))
        counts = ", ".join(f"{count} {verdict}" for verdict, count in sorted(_COUNTS.items()))
        terminalreporter.write_line(f"irtool: {word}: {counts} (suite jobs)")


@lru_cache(maxsize=1)
def _devices() -> Any:
    from irtool.runtime.devices import list_devices

    return list_devices()


class _Baseline:
    """An earlier run and its results by job key (a model's job: every node's result)."""

    def __init__(self, path: Path):
        from irtool.harness.store import load_results

        self.run = load_results(path)
        self.results_of: dict[tuple, list[CaseResult]] = {}
        for result in self.run.results:
            self.results_of.setdefault(result.job_key, []).append(result)


@lru_cache(maxsize=1)
def _baseline(path: Path) -> _Baseline:
    return _Baseline(path)


_POOLS: list = []


def _pool(reproducers: Path | None) -> Any:
    """This pytest process's one worker process (started at its first job, kept for the rest):
    a crash or a hang costs that job, not pytest, and it keeps compiled models between jobs."""
    if not _POOLS:
        from irtool.jobs.pool import Pool
        from irtool.jobs.worker import RunnerOptions

        pool = Pool(1, 120.0, RunnerOptions(report_dir=str(reproducers) if reproducers is not None else None))
        pool.__enter__()
        _POOLS.append(pool)
        atexit.register(_close_pool)
    return _POOLS[0]


def _close_pool() -> None:
    while _POOLS:
        _POOLS.pop().__exit__(None, None, None)
