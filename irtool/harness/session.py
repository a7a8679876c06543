"""One harness run: suites -> jobs -> workers -> results.jsonl -> reports (and a baseline diff).

:func:`run_harness` does the whole run and returns what it found; it never prints.  The
CLI passes a ``progress`` callback to draw its bar.  An interrupted run (Ctrl-C, SIGTERM)
still writes its reports, marked partial; ``resume=True`` picks up the results.jsonl of
the report dir and runs only the jobs it does not hold, if it holds the same run: the
same suite contents and the same set of jobs (by whatever path the suites are named, in
whatever order devices and precisions are listed).

The report dir is locked for the run (:mod:`irtool.harness.lock`), and a fresh run does
not replace an earlier run's results unless ``force`` is set.  A baseline is read before
anything runs.  A results.jsonl that cannot be written (a full disk) stops the run: the
outcome says why, and holds the results saved before it.
"""
from __future__ import annotations

import math
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from irtool.core import interrupts
from irtool.core.device_names import check_device
from irtool.core.errors import IrtoolError, did_you_mean
from irtool.core.memory import memory_limit
from irtool.harness import coverage
from irtool.harness import expectations as known
from irtool.harness.baseline import TIME_FACTOR, TIME_FLOOR, diff_runs
from irtool.harness.earlier_run import check_no_earlier_run, resumed
from irtool.harness.lock import ReportDirLock
from irtool.harness.matrix import Shard, case_ops, check_precisions, file_op, make_jobs, matrix_digest
from irtool.harness.store import JSON_NAME, JSONL_NAME, JsonlWriter, RunResults, StoreError, load_results, now, run_meta
from irtool.jobs import faults
from irtool.jobs.environments import CURRENT, describe, device_report, environments
from irtool.jobs.job_results import base_result
from irtool.jobs.kept import KEPT
from irtool.jobs.pool import Pool, PoolError, worker_count
from irtool.jobs.records import FAILED, SKIP, CaseResult, Job, SuiteCase
from irtool.jobs.suite import load_suite
from irtool.jobs.worker import REPRODUCERS, RunnerOptions
from irtool.judge.compare import TolerancePolicy

if TYPE_CHECKING:  # pragma: no cover
    from irtool.harness.baseline import RunDiff

Progress = Callable[[CaseResult, int, int], None]
Start = Callable[["HarnessPlan"], None]
REDUCED = "reduced"  # --reduce-failures: REPORT_DIR/reduced/<reproducer name>/
# Shrinks failed jobs into a folder: irtool.reduce.failures.reduce_failures (-> reduced, interrupted).
Reducer = Callable[..., "tuple[list, bool]"]


class SessionError(IrtoolError):
    """A harness run that cannot start (suites, report dir, resume)."""


@dataclass(frozen=True)
class HarnessOptions:
    suites: Sequence[Path]
    devices: Sequence[str] = ("CPU",)
    precisions: Sequence[str] = ("f32",)
    report_dir: Path = Path("irtool-report")
    jobs: int = 1
    timeout: float | None = None  # seconds per case; default: the suites' own
    resume: bool = False
    shard: Shard | None = None
    expected_failures: Sequence[Path] = ()
    baseline: Path | None = None
    drift_factor: float = 2.0
    config: dict[str, str] = field(default_factory=dict)
    tolerance: TolerancePolicy = field(default_factory=TolerancePolicy)
    env: dict[str, str] | None = None  # the workers' environment (default: this one)
    reduce_failures: bool = False  # reduce each failure of this run into REPORT_DIR/reduced/
    reduce_budget: float = 300.0  # seconds per failure
    force: bool = False  # replace an earlier run's results in the report dir
    keep_outputs: bool = False  # every job's outputs and what replays them, into REPORT_DIR/kept/ (irtool.jobs.kept)
    max_cases: int | None = None  # per suite; default: the suite's own limit
    openvino: Sequence[str] = ()  # releases to run under, side by side (irtool.jobs.environments); () = this one
    openvino_cache: Path | None = None  # where their environments live (default: environments.cache_folder)
    time_factor: float = TIME_FACTOR  # with a baseline or several releases: slower than this many times ...
    time_floor: float = TIME_FLOOR  # ... and by more than this many seconds is a regression
    expect_coverage: Sequence[str] = ()  # implementations the run must reach, besides the suites' own
    cluster: str | None = None  # a Dask scheduler's address: the jobs run on its workers (irtool.harness.cluster)
    scheduler_file: Path | None = None  # ... or the file that names it
    lost_after: float = 300.0  # seconds no worker offers a job's device before the job is lost

    def __post_init__(self) -> None:
        """Refuse options that cannot make a run, with the option's name, before anything starts."""
        if not self.suites:
            raise SessionError("no suite given: name at least one suite file")
        if not self.devices:
            raise SessionError("-d: no device given")
        for device in self.devices:
            check_device(device)
        if not self.precisions:
            raise SessionError("--precision: no precision given")
        check_precisions(self.precisions)
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise SessionError(f"-j {self.jobs}: expected at least 1 worker")
        if self.timeout is not None and not (self.timeout > 0 and math.isfinite(self.timeout)):
            raise SessionError(f"--timeout {self.timeout:g}: expected seconds > 0 (a finite number)")
        if not (self.drift_factor > 1 and math.isfinite(self.drift_factor)):
            raise SessionError(f"--drift-factor {self.drift_factor:g}: expected a factor > 1 (a finite number)")
        if self.max_cases is not None and (isinstance(self.max_cases, bool) or not isinstance(self.max_cases, int)
                                           or self.max_cases < 1):
            raise SessionError(f"--max-cases {self.max_cases}: expected at least 1")
        if not (self.time_factor > 1 and math.isfinite(self.time_factor)):
            raise SessionError(f"--time-factor {self.time_factor:g}: expected a factor > 1 (a finite number)")
        if not (self.time_floor >= 0 and math.isfinite(self.time_floor)):
            raise SessionError(f"--time-floor {self.time_floor:g}: expected seconds >= 0 (a finite number)")
        if not (self.lost_after > 0 and math.isfinite(self.lost_after)):
            raise SessionError(f"--lost-after {self.lost_after:g}: expected seconds > 0 (a finite number)")
        if (self.cluster or self.scheduler_file) and any(r.startswith(("wheel:", "env:")) for r in self.openvino):
            raise SessionError("--openvino with --cluster names versions: a wheel or environment is a worker's own")
        if not (self.reduce_budget > 0 and math.isfinite(self.reduce_budget)):
            raise SessionError(f"--reduce-budget {self.reduce_budget:g}: expected seconds > 0 (a finite number)")


@dataclass(frozen=True)
class HarnessPlan:
    """What a run is about to do: told to the ``start`` callback before the first job runs."""

    suites: tuple[str, ...]
    devices: tuple[str, ...]
    precisions: tuple[str, ...]
    openvino_version: str
    jobs: int  # all the jobs of the matrix (of this shard)
    to_run: int  # the jobs that run now (not kept from --resume, not skipped here)
    kept: int  # results kept from --resume
    skipped: int  # jobs that cannot run here (absent device, unsupported precision)
    releases: tuple[str, ...] = ()  # with --openvino: "LABEL: exact version (what was asked)" of each usable one


@dataclass
class HarnessOutcome:
    run: RunResults
    interrupted: bool = False
    diff: "RunDiff | None" = None  # when a baseline was given
    version_diffs: list = field(default_factory=list)  # (older, newer, RunDiff) per pair of --openvino releases
    reran: int = 0  # jobs run now (the rest came from --resume or were skipped)
    jobs: int = 0  # all the jobs of the matrix (of this shard): those without a result were not run
    reduced: list = field(default_factory=list)  # irtool.reduce.failures.Reduced, with --reduce-failures
    notes: list[str] = field(default_factory=list)  # what the run changed of what was asked (-j capped)
    stopped: str | None = None  # why the run stopped before its end (a full disk); exit 2
    lost: list[tuple[str, str]] = field(default_factory=list)  # (job, why) given up on a cluster; exit 2
    coverage_missing: list[str] = field(default_factory=list)  # expected implementations no job reached
    seconds: float = 0.0  # how long the run took (wall clock, reports and baseline diff included)

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.run.results if r.verdict in FAILED]

    @property
    def verdict(self) -> tuple[str, int]:
        """The run's word and exit code: see :func:`irtool.harness.reports.overall_verdict`."""
        return self.overall[:2]

    @property
    def overall(self) -> tuple[str, int, list[str]]:
        """The run's word, exit code and what regressed (:func:`irtool.harness.reports.overall_verdict`)."""
        from irtool.harness.reports import overall_verdict

        return overall_verdict(self.run.summary, self.diff, self.version_diffs, self.coverage_missing)

    @property
    def exit_code(self) -> int:
        """2 for a run stopped (its results could not be written), 130 for one interrupted, 2 for one that lost
        jobs (a cluster), else the verdict's."""
        return 2 if self.stopped else 130 if self.interrupted else 2 if self.lost else self.verdict[1]

    @property
    def word(self) -> str:
        """How the run ended, as its summary says it: STOPPED, INTERRUPTED, else the verdict's word."""
        return "STOPPED" if self.stopped else "INTERRUPTED" if self.interrupted else "PARTIAL" if self.lost \
            else self.verdict[0]

    @property
    def not_run(self) -> int:
        """The jobs of the matrix that have no result (a model's job has one result per node)."""
        return max(self.jobs - len({result.job_key for result in self.run.results}), 0)


def run_harness(options: HarnessOptions, progress: Progress | None = None,
                start: Start | None = None, log: Callable[[str], None] | None = None,
                reducer: Reducer | None = None) -> HarnessOutcome:
    """The whole run; ``start`` is told the plan before the first job, ``progress`` each result,
    ``log`` what takes long before it (making an OpenVINO release's environment).  With
    ``options.reduce_failures``, ``reducer`` (irtool.reduce.failures.reduce_failures, which the
    caller passes: the harness does not import reduce) shrinks each new failure."""
    began = time.monotonic()
    memory_limit()  # IRTOOL_MEMORY_LIMIT read as run reads it: one line before any job, not an error in each
    injected = faults.parse_faults((os.environ if options.env is None else options.env).get(faults.ENV, ""))
    baseline = load_results(options.baseline) if options.baseline is not None else None  # before any work
    suites = [load_suite(path, options.max_cases) for path in options.suites]
    cases = _all_cases(suites)
    expected = [entry for suite in suites if suite.expected_failures
                for entry in known.load_expectations(suite.expected_failures)]
    expected += [entry for path in options.expected_failures for entry in known.load_expectations(path)]
    _check_output_names(options.tolerance, cases)
    if options.config:
        _check_config(options.config, options.devices)
    ops = case_ops(cases)
    expect_coverage = [item for suite in suites for item in coverage.parse_expected(
        list(suite.expect_coverage), f"{suite.path}: expect_coverage", ops)] + coverage.parse_expected(
        list(options.expect_coverage), "--expect-coverage", ops)
    timeout = options.timeout or max(suite.timeout for suite in suites)
    report_dir = _report_dir(options.report_dir)
    _check_inputs_outside(report_dir, _run_inputs(options, suites, cases))
    lock = ReportDirLock.acquire(report_dir)
    pools: dict = {}  # release label (None: this openvino) -> its Pool; or None -> the Cluster
    try:
        runner_options = RunnerOptions(options.config, options.tolerance, str(report_dir), options.keep_outputs)
        cluster = None
        if options.cluster or options.scheduler_file:  # the releases are then the workers' (irtool worker --openvino)
            from irtool.harness.cluster import Cluster

            pools[None] = cluster = Cluster(options.cluster, options.scheduler_file, runner_options, timeout, report_dir,
                                            ";".join(fault.written for fault in injected) or None, options.lost_after)
        releases = (cluster.releases if cluster else environments)(options.openvino, options.openvino_cache, log)
        jobs = make_jobs(cases, options.devices, options.precisions, options.shard, list(releases) or [None])
        for fault in faults.unmatched(injected, jobs):
            raise faults.unmatched_error(fault, jobs, "of this run")
        order = {job.key: index for index, job in enumerate(jobs)}
        workers, note = worker_count(options.jobs, len(jobs)) if not cluster else (1, None)
        if not cluster:
            pools.update({label: Pool(workers, timeout, runner_options, options.env, env.python)
                          for label, env in releases.items() if env.usable} if releases else {
                None: Pool(workers, timeout, runner_options, options.env)})
            for pool in list(pools.values())[:1]:  # its workers import openvino while this process does
                pool.start(workers)
        outcome = _run(options, suites, jobs, order, expected, report_dir, pools, releases, timeout, progress,
                       start, baseline, reducer, expect_coverage, cluster)
    finally:
        for pool in pools.values():
            pool.close()
        lock.release()
    outcome.notes += ([note] if note else []) + (cluster.notes if cluster else [])
    outcome.seconds = time.monotonic() - began
    return outcome


def _run_inputs(options: HarnessOptions, suites: list, cases: Sequence[SuiteCase]) -> list[tuple[str, Path]]:
    """Every file a run reads, by what it is to the run: nothing the run writes may replace them."""
    found = [("the suite", Path(suite.path)) for suite in suites]
    found += [("the known-failures file", Path(suite.expected_failures)) for suite in suites
              if suite.expected_failures]
    found += [("the known-failures file", Path(path)) for path in options.expected_failures]
    # A fresh run refuses a dir holding results unless forced, and --force replaces the run the baseline
    # was (read whole first: the rolling baseline); --resume would replace it unasked.
    if options.baseline is not None and options.resume:
        found += [("the baseline", Path(options.baseline) / name) for name in (JSON_NAME, JSONL_NAME)] \
            if Path(options.baseline).is_dir() else [("the baseline", Path(options.baseline))]
    for case in cases:
        if case.file is not None:
            found.append((f"the model of case {case.id}", Path(case.file)))
            if case.file.endswith(".xml"):
                found.append((f"the weights of case {case.id}", Path(case.file).with_suffix(".bin")))
        if case.inputs is not None:
            found.append((f"the inputs of case {case.id}", Path(case.inputs)))
    return list(dict.fromkeys(found))


def _check_inputs_outside(report_dir: Path, inputs: list[tuple[str, Path]]) -> None:
    """SessionError if a file the run writes in ``report_dir`` (its results, reports, lock, marker)
    is one of ``inputs``, or a folder it empties (reproducers/, reduced/) holds one."""
    from irtool.core.files import check_holds_no_input, check_not_input
    from irtool.harness.lock import LOCK_NAME
    from irtool.harness.marker import MARKER_NAME
    from irtool.harness.reports import REPORT_NAMES

    try:
        for name in (*REPORT_NAMES, JSONL_NAME, LOCK_NAME, MARKER_NAME):
            check_not_input(report_dir / name, inputs, name)
        for folder in (REPRODUCERS, REDUCED):
            check_holds_no_input(report_dir / folder, inputs, f"{folder} folder of the report dir")
    except IrtoolError as error:
        raise SessionError(f"{error.message} (--report-dir {report_dir})") from None


def _check_output_names(tolerance: TolerancePolicy, cases: Sequence[SuiteCase]) -> None:
    """--atol/--rtol OUTPUT:... must name an output some case of the run has (as run refuses a typo),
    and a [[models]] entry's tolerances an output of its own model (an IR file's: checked here)."""
    from irtool.specs import registry

    ports = {port.name for spec in registry() if spec.family for port in spec.outputs}
    if tolerance.output_atol or tolerance.output_rtol:
        names = set(ports)
        for case in cases:
            if case.file is not None:
                names |= _file_output_names(case.file)
        unknown = tolerance.unknown_outputs(names)
        if unknown:
            raise SessionError(f"--atol/--rtol name output {unknown[0]}, which no case of this run has"
                               f"{did_you_mean(unknown[0], names)}; outputs are "
                               f"{', '.join(sorted(names))}")
    for case in cases:
        if case.tolerances and case.file is not None and case.file.endswith((".xml", ".onnx")):
            names = ports | _file_output_names(case.file)
            unknown = sorted(set(case.tolerances) - names)
            if unknown:
                ports_said = "Y, Y_h, Y_c" if case.file.endswith(".onnx") else "Y, Ho, Co"
                raise SessionError(f"case {case.id}: tolerances name {unknown[0]!r}, which {Path(case.file).name} "
                                   f"does not have{did_you_mean(unknown[0], names)}; name a port ({ports_said}), "
                                   f"NODE:PORT or an output tensor")


def _file_output_names(path: str) -> set[str]:
    """Every name an IR file gives a layer output or a Result (what run accepts, and more)."""
    from irtool.ir import IRParseError, parse_ir

    if path.endswith(".onnx"):  # the ONNX graph's names (irtool.onnx.graph.OnnxGraph.tolerance_names)
        from irtool.core.errors import RunError
        from irtool.ir.parse import DEFAULT_MAX_BYTES
        from irtool.onnx.graph import load_graph

        try:
            return load_graph(path, DEFAULT_MAX_BYTES).tolerance_names()
        except RunError:
            return set()  # the job says what is wrong with the file
    if not path.endswith(".xml"):  # another format's names are OpenVINO's to tell, when it reads the model
        return set()
    try:
        model = parse_ir(path)
    except (IRParseError, OSError):
        return set()  # the job says what is wrong with the file
    from irtool.specs import registry

    names = set()
    for layer in model.layers:
        if layer.type == "Result" and layer.name:
            names.add(layer.name)
        for port in layer.outputs:
            names.update(name.strip() for name in (port.names or "").split(",") if name.strip())
        spec = registry().for_ir(layer.type or "", layer.version)
        if spec is not None and spec.family and layer.name:
            names.update(f"{layer.name}:{port.name}" for port in spec.outputs)
    return names


def _run(options: HarnessOptions, suites: list, jobs: list[Job], order: dict, expected: list, report_dir: Path,
         pools: dict, releases: dict, timeout: float, progress: Progress | None, start: Start | None,
         baseline: RunResults | None, reducer: Reducer | None = None,
         expect_coverage: Sequence[tuple[str | None, str]] = (), cluster: Any = None) -> HarnessOutcome:
    seen: dict = {}  # release label -> (its DeviceReport, or None and why)
    if cluster:  # the workers' openvino ran the jobs (the harness need not import its own)
        from irtool.runtime.core import openvino_version

        version = ", ".join(sorted(cluster.openvino_versions)) or openvino_version()
    else:  # this process's, as its workers say it
        label = next((label for label, env in releases.items() if env.release == CURRENT), None)
        version = _devices(label, releases.get(label), pools, seen)[0].openvino
    meta = run_meta([str(s.path) for s in suites], options.devices, options.precisions,
                    str(options.shard) if options.shard else None, version)
    meta["suite_digests"] = sorted(suite.digest for suite in suites)
    meta["matrix"] = matrix_digest(jobs)
    if releases:  # the reports compare the releases by the rules of this run
        meta["diff_rules"] = {"drift_factor": options.drift_factor, "time_factor": options.time_factor,
                              "time_floor": options.time_floor}
        meta["openvino_releases"] = {label: {"release": env.release, "openvino_version": env.openvino_version,
                                             "distribution": env.distribution, "problem": env.problem}
                                     for label, env in releases.items()}
    results, writer = _open_store(report_dir, meta, options, order)
    results[:] = [known.apply(expected, r) for r in results]  # kept by --resume: the known failures of now
    done = {r.job_key for r in results}
    outcome = HarnessOutcome(RunResults(meta, results, partial=True), jobs=len(jobs))

    finished = set(done)

    def record(result: CaseResult) -> None:
        result = known.apply(expected, result)
        with interrupts.held():  # results.json and results.jsonl hold the same results, interrupted or not
            writer.append(result)
            results.append(result)
            finished.add(result.job_key)
        if progress:
            progress(result, len(finished), len(jobs))

    reasons: dict[tuple, str | None] = {}  # (device, precision, release, on a cluster the case's files)
    runnable: list[Job] = []
    skipped: list[CaseResult] = []
    for job in jobs:
        if job.key in done:
            continue
        pair = (job.device, job.precision, job.openvino, cluster and job.case.id)  # on a cluster: its files' size
        if pair not in reasons:
            reasons[pair] = (cluster.skip_reason(job) if cluster
                             else _skip_reason(job, releases.get(job.openvino), pools, seen))
        if reasons[pair] is None:
            runnable.append(job)
        else:
            skipped.append(base_result(job))
            skipped[-1].verdict, skipped[-1].message = SKIP, reasons[pair]
            if job.case.file and not skipped[-1].op:  # so that reports count it under its op
                skipped[-1].op = file_op(job.case.file)
    outcome.reran = len(runnable)
    if start:
        start(HarnessPlan(tuple(meta["suites"]), tuple(options.devices), tuple(options.precisions),
                          ", ".join(releases) or meta["openvino_version"], len(jobs), len(runnable), len(done), len(skipped),
                          tuple(f"{label}: {describe(env, label)}" for label, env in releases.items() if env.usable)))
    for result in skipped:
        record(result)
    try:
        for label, pool in pools.items():
            pool.run([job for job in runnable if cluster or job.openvino == label], record)
        outcome.lost = cluster.lost if cluster else []
        outcome.run.partial = bool(outcome.lost)
    except KeyboardInterrupt:
        outcome.interrupted = True
    except StoreError as error:  # results.jsonl cannot be written (a full disk): stop, keep what is saved
        outcome.stopped = error.message
    finally:
        meta["finished"] = now()
        _finish_store(writer, outcome, meta["finished"])
        results.sort(key=lambda r: order.get(r.job_key, len(order)))
        unpaired = None  # a baseline that cannot be compared: said once the reports are written
        if baseline is not None:  # the reports hold the diff, as the release diffs
            try:
                outcome.diff = diff_runs(baseline, outcome.run, options.drift_factor, time_factor=options.time_factor,
                                         time_floor=options.time_floor)
            except IrtoolError as error:
                unpaired = error
        if expect_coverage and not outcome.interrupted and not outcome.stopped:  # before the reports: they say it
            rows = coverage.coverage(outcome.run.results)
            if rows:
                outcome.coverage_missing = coverage.missing(rows, expect_coverage)
            else:  # nothing ran, or no device said what it ran: nothing to hold the run to
                outcome.notes.append(coverage.NOT_CHECKED)
        _write_reports(report_dir, outcome, str(options.baseline) if baseline is not None else None)
    if unpaired is not None:
        raise unpaired
    if not outcome.interrupted and not outcome.stopped:
        outcome.notes += known.unmatched(expected, results)
    if options.reduce_failures and reducer is not None and not outcome.interrupted and not outcome.stopped:
        failed = {result.job_key for result in outcome.failed}  # known failures (xfail) are not among them
        outcome.reduced, outcome.interrupted = reducer(
            [job for job in runnable if job.key in failed], report_dir / REDUCED, config=options.config,
            tolerance=options.tolerance, timeout=timeout, budget=options.reduce_budget, env=options.env,
            pythons={k: v.python for k, v in releases.items()})
    from irtool.harness.baseline import diff_versions

    outcome.version_diffs = diff_versions(outcome.run)
    return outcome


def _skip_reason(job: Job, env: Any, pools: dict, seen: dict) -> str | None:
    """Why ``job`` cannot run here, or None: its release cannot be used, or that release's openvino
    lacks the device or the precision.  Each release is asked what it sees, once per run (in
    ``seen``): an older plugin may lack a precision the installed one has, or the other way round."""
    from irtool.runtime.devices import skip_reason

    report, problem = _devices(job.openvino, env, pools, seen)
    if report is None:
        return f"openvino {env.release} cannot run here: {problem}"
    reason = skip_reason(job.device, job.precision, report)
    return f"openvino {job.openvino}: {reason}" if reason and job.openvino else reason


def _devices(label: str | None, env: Any, pools: dict, seen: dict) -> tuple[Any, str | None]:
    """(DeviceReport, None) of the openvino of release ``label`` (None: this process's), or (None,
    why it cannot say), once per run: as that release's workers say it, so that this process
    imports no openvino of its own (0.6 s of CPU) nor starts one more of another release's."""
    from irtool.runtime.devices import list_devices, report_from_json

    if label not in seen:
        try:
            said = pools[label].devices() if label in pools else None
        except PoolError:  # its workers cannot start: asked as below, which says why
            said = None
        if said is not None:
            seen[label] = report_from_json(said), None
        else:  # no worker said it: asked here (this openvino), or in the release's environment
            seen[label] = (list_devices(), None) if env is None or env.release == CURRENT else \
                device_report(env) if env.usable else (None, env.problem)
    return seen[label]


def _check_config(config: Mapping[str, str], devices: Sequence[str]) -> None:
    """SessionError before anything is made if a device here refuses ``--config`` (each of its
    jobs would be an error otherwise): the smallest model, compiled once per device present."""
    from irtool.core.errors import RunError
    from irtool.pipeline.build import probe_model
    from irtool.runtime.compile import compile_on
    from irtool.runtime.devices import list_devices, skip_reason

    report = list_devices()
    for device in devices:
        if skip_reason(device, "f32", report) is not None:  # absent here: its jobs are skipped anyway
            continue
        try:
            compile_on(probe_model(), device, "f32", config, Path("a probe model"))
        except RunError as error:
            said = ", ".join(f"{key}={value}" for key, value in config.items())
            raise SessionError(f"--config {said}: {device} refuses it ({error.message}); nothing was run") from None


def _finish_store(writer: JsonlWriter, outcome: HarnessOutcome, finished: str) -> None:
    try:
        if not outcome.run.partial:
            writer.end(len(outcome.run.results), finished)
        writer.close()
    except StoreError as error:
        outcome.stopped = outcome.stopped or error.message


def _write_reports(report_dir: Path, outcome: HarnessOutcome, baseline: str | None) -> None:
    from irtool.harness.report_files import write_reports
    from irtool.harness.reports import BaselineDiff

    try:
        write_reports(report_dir, outcome.run,
                      BaselineDiff(baseline, outcome.diff) if baseline and outcome.diff is not None else None,
                      force=True,  # checked before the run began (_open_store)
                      coverage_missing=outcome.coverage_missing)
    except IrtoolError as error:
        if not outcome.stopped:  # a full disk stops the results and the reports alike: say it once
            raise
        outcome.stopped += f"; the reports could not be written either ({error.message})"


def _all_cases(suites: list) -> list[SuiteCase]:
    cases: list[SuiteCase] = []
    where: dict[str, Path] = {}
    for suite in suites:
        for case in suite.cases:
            if case.id in where:
                raise SessionError(f"case {case.id} is in both {where[case.id]} and {suite.path}; "
                                   "give one of their tables another id")
            where[case.id] = suite.path
            cases.append(case)
    return cases


def _report_dir(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SessionError(f"{path}: cannot create the report dir ({error.strerror})") from None
    return path


def _open_store(report_dir: Path, meta: dict, options: HarnessOptions,
                order: dict) -> tuple[list[CaseResult], JsonlWriter]:
    """The results already there (with --resume) and the writer that appends the new ones."""
    from irtool.harness.marker import check_owned, record_owned
    from irtool.harness.reports import REPORT_NAMES

    jsonl = report_dir / JSONL_NAME
    # the reports this run will write, and the folders it empties, must be irtool's (or --force)
    check_owned(report_dir, REPORT_NAMES, (REPRODUCERS, REDUCED, KEPT), options.force)
    if options.resume and jsonl.is_file():
        previous = resumed(jsonl, meta, order)
        meta["started"] = previous.meta.get("started", meta["started"])
        return previous.results, JsonlWriter(jsonl, None, append=True, ended=not previous.partial)
    if not options.force:
        check_no_earlier_run(report_dir, options.resume)
    for folder in (REPRODUCERS, REDUCED, KEPT):  # a fresh run's reproducers, reductions and kept outputs only
        shutil.rmtree(report_dir / folder, ignore_errors=True)
    try:
        record_owned(report_dir, folders=(REPRODUCERS, REDUCED, KEPT))
    except IrtoolError as error:
        raise SessionError(f"{report_dir}: cannot write in the report dir ({error.message})") from None
    return [], JsonlWriter(jsonl, meta, append=False)
