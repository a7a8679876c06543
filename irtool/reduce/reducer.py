"""The reduction loop: propose a smaller case, run it in an isolated worker, keep it if it still
fails by the criterion, until no proposal does.

The original case runs first, as given, and must fail (else :class:`NothingToReduce`); then
irtool's rebuild of it from its arrays, which must fail too: from then on every candidate
is such a rebuild (IR + inputs.npz in a scratch folder, run as a harness file case in one
worker kept alive across candidates, so a crash or hang costs that candidate only).  A
candidate that meets the criterion is run a second time and kept only if it meets it
again; one that does not is counted as flaky.  Axes are tried in order, each until it
cuts no more, and passes repeat until one keeps nothing.

After the rebuilt original and after every kept step, OUT_DIR/reproducer is replaced whole
(written beside it, then renamed), so an interrupted reduction leaves the best reproducer
found so far; OUT_DIR/reduce.log gets a line per event as it happens.  Nothing here prints:
the same lines go to ``progress``.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Mapping

import numpy as np

from irtool.core.device_names import check_device
from irtool.core.errors import IrtoolBug
from irtool.core.files import FileError, check_holds_no_input, check_not_input, writable_target
from irtool.core.npz import read_npz
from irtool.core.precisions import PRECISION_CHOICES
from irtool.core.text import shown
from irtool.jobs import faults
from irtool.jobs.pool import Pool
from irtool.jobs.records import ERROR, TIMEOUT, CaseResult, Job, SuiteCase, case_to_json, result_to_json
from irtool.jobs.worker import Runner, RunnerOptions
from irtool.judge.compare import TolerancePolicy
from irtool.pipeline.concrete import ConcreteCase, RebuildError, count_text
from irtool.reduce.axes import Proposal, axes_of
from irtool.reduce.check_script import CheckScript, CheckTimeout
from irtool.reduce.criterion import Criterion, SameFailure, check_outputs, failure_kind
from irtool.reduce.errors import ReduceError
from irtool.reduce.origin import Origin, concrete_case

Progress = Callable[[str], None]
REPRODUCER = "reproducer"
LOG = "reduce.log"
DONE, BUDGET, INTERRUPTED = "done", "budget", "interrupted"


class NothingToReduce(ReduceError):
    """The original case does not fail by the criterion."""


@dataclass(frozen=True)
class ReduceOptions:
    device: str
    out_dir: Path
    precision: str = "f32"
    config: Mapping[str, str] = field(default_factory=dict)
    tolerance: TolerancePolicy = field(default_factory=TolerancePolicy)
    criterion: Criterion | None = None  # None: fail as the original does
    timeout: float = 60.0  # seconds per candidate
    budget: float | None = None  # seconds for the whole reduction: the original's runs and checks too
    started: float | None = None  # time.monotonic() the budget counts from (default: when reduce_case starts)
    env: dict[str, str] | None = None  # the worker's environment (default: this one)
    python: str | None = None  # the worker's interpreter (an OpenVINO release's environment; default: this one)

    def __post_init__(self) -> None:
        """Refuse options that cannot make a reduction, naming the option, before a worker starts."""
        check_device(self.device)
        if self.precision not in PRECISION_CHOICES:
            raise ReduceError(f"--precision {self.precision}: expected one of {', '.join(PRECISION_CHOICES)}")
        if not (self.timeout > 0 and math.isfinite(self.timeout)):
            raise ReduceError(f"--timeout {self.timeout:g}: expected seconds > 0 (a finite number)")
        if self.budget is not None and not (self.budget > 0 and math.isfinite(self.budget)):
            raise ReduceError(f"--budget {self.budget:g}: expected seconds > 0 (a finite number)")


@dataclass(frozen=True)
class Step:
    number: int
    axis: str
    change: str  # "8->1", "bidirectional->forward", "->zeros"
    elements_before: int
    elements_after: int
    result: str  # the kept candidate's verdict, in short
    runs: int  # candidates run since the previous step, this one's two runs included

    def text(self) -> str:
        return (f"step {self.number}: {self.axis} {self.change}; elements {count_text(self.elements_before)}->"
                f"{count_text(self.elements_after)}; {self.result} [{self.runs} runs]")


@dataclass
class ReduceOutcome:
    reproducer: Path
    log: Path
    criterion: str
    original: str  # sizes of the original case
    final: str = ""  # sizes of the reduced case
    steps: list[Step] = field(default_factory=list)
    runs: int = 0
    flaky: int = 0
    stopped: str = DONE
    divergence: str | None = None
    result: CaseResult | None = None  # the reduced case's result
    unmatched_faults: list[str] = field(default_factory=list)  # IRTOOL_FAULT specs that matched no run

    @property
    def interrupted(self) -> bool:
        return self.stopped == INTERRUPTED


@dataclass
class _Trial:
    case: ConcreteCase
    job: Job
    model: Any  # ov.Model
    folder: Path
    result: CaseResult


class _OutOfBudget(Exception):
    pass


def reduce_case(origin: Origin, options: ReduceOptions, progress: Progress | None = None) -> ReduceOutcome:
    """Reduce ``origin``; see the module docstring."""
    from irtool.core.errors import RunSkipped
    from irtool.runtime.devices import check_device as check_device_here
    from irtool.runtime.devices import list_devices, skip_reason

    report = list_devices()
    check_device_here(options.device, report)  # a name OpenVINO knows here
    reason = skip_reason(options.device, options.precision, report)  # absent, or without the precision
    if reason:
        raise RunSkipped(f"{reason}: nothing was run")
    check_options(options)
    injected = faults.parse_faults((os.environ if options.env is None else options.env).get(faults.ENV, ""))
    original = concrete_case(origin.case)
    _out_dir(options.out_dir)
    _check_inputs_outside(origin.case, options.out_dir)
    scratch = Path(tempfile.mkdtemp(prefix="irtool-reduce-"))  # candidates, and the worker's reproducers
    runner = RunnerOptions(options.config, options.tolerance, report_dir=str(scratch))
    try:
        with (options.out_dir / LOG).open("w", encoding="utf-8") as log, \
                Pool(1, options.timeout, runner, options.env, options.python, spare=True) as pool:
            return _Reduction(origin.case, options, runner, pool, log, progress, injected).reduce(original)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def check_options(options: ReduceOptions) -> None:
    """ReduceError if the device refuses the precision and config themselves (on a one-op model):
    every candidate would then fail the same way, and reduce would "reduce" the options' error."""
    from irtool.core.errors import RunError
    from irtool.pipeline.build import probe_model
    from irtool.runtime.compile import compile_on

    try:
        compile_on(probe_model(), options.device, options.precision, options.config, Path("a one-op model"))
    except RunError as error:
        raise ReduceError(f"{options.device} at {options.precision} refuses the options themselves, whatever the "
                          f"case ({error.message}); reduce shrinks failures of a case, not of its options") from None


def _out_dir(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise ReduceError(f"-o {folder}: a file, not a folder; reduce writes OUTDIR/reproducer and OUTDIR/{LOG}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ReduceError(f"-o {folder}: cannot create the folder ({error.strerror})") from None
    try:
        writable_target(folder / LOG, "reduce log")  # a FIFO there would block the open until a reader came
    except FileError as error:
        raise ReduceError(error.message) from None


def _check_inputs_outside(case: SuiteCase, out_dir: Path) -> None:
    """ReduceError if what reduce writes (OUTDIR/reproducer, replaced whole, and OUTDIR/reduce.log)
    would replace a file the case is read from (reducing OUTDIR/reproducer again into OUTDIR)."""
    read = []
    if case.file is not None:
        read.append(("the case's model", Path(case.file)))
        if case.file.endswith(".xml"):
            read.append(("the case's weights", Path(case.file).with_suffix(".bin")))
    if case.inputs is not None:
        read.append(("the case's inputs", Path(case.inputs)))
    try:
        check_holds_no_input(out_dir / REPRODUCER, read, "reduced reproducer folder")
        check_not_input(out_dir / LOG, read, "reduce log")
    except FileError as error:
        raise ReduceError(f"-o {out_dir}: {error.message}") from None


class _Reduction:
    def __init__(self, case: SuiteCase, options: ReduceOptions, runner: RunnerOptions, pool: Pool, log: IO[str],
                 progress: Progress | None, injected: Iterable[faults.Fault] = ()):
        self.case, self.options, self.runner, self.pool, self.log, self.progress = (
            case, options, runner, pool, log, progress)
        self.unmatched = list(injected)  # the IRTOOL_FAULT specs no run has matched yet
        self.scratch = Path(str(runner.report_dir))
        self.tried: set[str] = set()
        self.runs = self.flaky = self.since_step = 0
        started = time.monotonic() if options.started is None else options.started
        self.deadline = started + options.budget if options.budget else None
        if isinstance(options.criterion, CheckScript):  # the user's check() answers within a candidate's time,
            options.criterion.timeout = options.timeout  # and by the budget's end
            options.criterion.deadline = self.deadline

    def emit(self, line: str) -> None:
        line = shown(line)  # reduce.log and the terminal: one event, one line, names escaped
        self.log.write(line + "\n")
        self.log.flush()
        if self.progress:
            self.progress(line)

    # ------------------------------------------------------------------ start
    def _start(self, original: ConcreteCase) -> tuple[Criterion, _Trial]:
        """Run the original as given and as rebuilt; both must fail; the criterion."""
        options = self.options
        self.emit(f"reduce {self.case.id} ({original.spec.key}) on {options.device} at {options.precision}")
        given = self._run(Job(self.case, options.device, options.precision), original)
        self.emit(f"original: {original.describe()}; {count_text(original.elements)} elements; {_summary(given)}")
        if given.verdict == ERROR and given.message.startswith("internal error"):
            raise IrtoolBug(f"the original case met an irtool bug, which reduce does not shrink: {given.message}")
        criterion = options.criterion
        if criterion is None:
            if failure_kind(given) is None:
                raise NothingToReduce(f"{given.name}: {given.verdict}; it does not fail, so there is nothing to reduce")
        else:
            check_outputs(criterion, given)
            if not criterion.holds(given):
                raise NothingToReduce(f"{given.name}: {_summary(given)}; it does not meet {criterion.text}, "
                                      f"so there is nothing to reduce")
        rebuilt = self._trial(original)
        same = criterion.holds(rebuilt.result) if criterion else rebuilt.result.verdict == given.verdict
        if not same:
            raise ReduceError(f"{given.name} fails as given ({_summary(given)}) but not as reduce rebuilds it from "
                              f"its arrays ({_summary(rebuilt.result)}): flaky, or it depends on how the model is "
                              f"written; cannot reduce it")
        criterion = criterion or SameFailure.of(rebuilt.result)
        self.emit(f"criterion: {criterion.text}")
        self.since_step = 0
        return criterion, rebuilt

    # ------------------------------------------------------------------ the loop
    def reduce(self, original: ConcreteCase) -> ReduceOutcome:
        try:
            criterion, rebuilt = self._start(original)
        except (_OutOfBudget, CheckTimeout) as stop:
            if isinstance(stop, CheckTimeout) and not stop.budget:
                raise
            raise ReduceError(f"--budget {self.options.budget:g}: used up before the original case was judged as "
                              f"given and as rebuilt ({str(stop) or 'its run was stopped'}); no reproducer was written: "
                              f"give the reduction more time") from None
        outcome = ReduceOutcome(self.options.out_dir / REPRODUCER, self.options.out_dir / LOG, criterion.text,
                                original.describe())
        self.tried.add(original.fingerprint())
        best: _Trial | None = None
        try:
            self._keep(rebuilt)
            best = rebuilt
            for trial, step in self._steps(criterion, rebuilt, outcome):
                self._discard(best)
                best = trial
                outcome.steps.append(step)
                self.emit(step.text())
        except (_OutOfBudget, CheckTimeout) as stop:
            if isinstance(stop, CheckTimeout) and not stop.budget:  # the script's own fault, not the budget's
                raise
            outcome.stopped = BUDGET
        except KeyboardInterrupt:
            if best is None:
                raise
            outcome.stopped = INTERRUPTED
        self._finish(outcome, best)
        return outcome

    def _steps(self, criterion: Criterion, best: _Trial, outcome: ReduceOutcome) -> Iterator[tuple[_Trial, Step]]:
        """Each kept candidate, once it is written as the best reproducer, with its step."""
        axes = axes_of(best.case)
        changed = True
        while changed:
            changed = False
            for axis in axes:
                while (kept := self._first_kept(criterion, axis(best.case))) is not None:
                    proposal, trial = kept
                    step = Step(len(outcome.steps) + 1, proposal.axis, proposal.change, best.case.elements,
                                trial.case.elements, _summary(trial.result), self.since_step)
                    self._keep(trial)
                    best, changed, self.since_step = trial, True, 0
                    yield trial, step

    def _first_kept(self, criterion: Criterion, proposals: Iterable[Proposal]) -> tuple[Proposal, _Trial] | None:
        for proposal in proposals:
            try:
                proposal.case.symbols  # noqa: B018 - every candidate must fit the spec
            except ValueError as error:
                raise IrtoolBug(f"reduce made an invalid {proposal.axis} candidate: {error}") from None
            fingerprint = proposal.case.fingerprint()
            if fingerprint in self.tried:
                continue
            self.tried.add(fingerprint)
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise _OutOfBudget
            try:
                first = self._trial(proposal.case)
            except RebuildError as error:  # OpenVINO refuses a spec-valid candidate: not this way, then
                self.emit(f"skipped {proposal.axis} {proposal.change}: {error.message}")
                continue
            self._discard(first)
            if not criterion.holds(first.result):
                continue
            again = self._trial(proposal.case)
            if criterion.holds(again.result):
                return proposal, again
            self._discard(again)
            self.flaky += 1
            self.emit(f"flaky: {proposal.axis} {proposal.change}: {_summary(first.result)}, then "
                      f"{_summary(again.result)} on a re-run; not kept")
        return None

    # ------------------------------------------------------------------ running candidates
    def _run(self, job: Job, case: ConcreteCase) -> CaseResult:
        self._fault_check(job, case)
        left = self.deadline - time.monotonic() if self.deadline is not None else None
        if left is not None and left <= 0:
            raise _OutOfBudget
        limited = left is not None and left < self.options.timeout
        self.pool.timeout = left if limited else self.options.timeout
        results: list[CaseResult] = []
        self.pool.run([job], results.append)
        self.runs += 1
        self.since_step += 1
        if limited and results[0].verdict == TIMEOUT:  # stopped by the budget's end, not by its own timeout
            raise _OutOfBudget
        return results[0]

    def _trial(self, case: ConcreteCase) -> _Trial:
        folder = self.scratch / f"c{self.runs:05d}"
        folder.mkdir()
        xml, npz, model = case.write(folder)
        candidate = SuiteCase(id=f"{self.case.id}~{self.runs}", suite=self.case.suite, file=str(xml),
                              inputs=str(npz), atol=self.case.atol, rtol=self.case.rtol)
        job = Job(candidate, self.options.device, self.options.precision)
        return _Trial(case, job, model, folder, self._run(job, case))

    def _fault_check(self, job: Job, case: ConcreteCase) -> None:
        """Mark the IRTOOL_FAULT specs that match this job, on the fields the worker will see."""
        if not self.unmatched:
            return
        try:
            found = {**case.attributes, **case.symbols}
        except ValueError:
            found = dict(case.attributes)
        self.unmatched = [fault for fault in self.unmatched if not fault.matches(job, found)]

    def _discard(self, trial: _Trial) -> None:
        shutil.rmtree(trial.folder, ignore_errors=True)
        if trial.result.reproducer:
            shutil.rmtree(self.scratch / trial.result.reproducer, ignore_errors=True)

    def _keep(self, trial: _Trial) -> None:
        """Write the trial as OUT_DIR/reproducer (whole, replacing the previous best)."""
        from irtool.pipeline.reproducer import write_reproducer

        ran = self._worker_folder(trial)
        record = json.loads((ran / "case.json").read_text(encoding="utf-8"))
        folder = self.options.out_dir / REPRODUCER
        reduced = SuiteCase(id=f"{self.case.id} reduced", suite=self.case.suite,
                            file=str((folder / "model.xml").resolve()), inputs=str((folder / "inputs.npz").resolve()),
                            atol=self.case.atol, rtol=self.case.rtol)
        result = dataclasses.replace(trial.result, case=reduced.id, file=reduced.file, reproducer=None)
        write_reproducer(folder, model=trial.model, inputs=trial.case.inputs, expected=_npz(ran / "expected.npz"),
                         actual=_npz(ran / "actual.npz"), device=self.options.device, precision=self.options.precision,
                         config=self.options.config,
                         tolerances={name: tuple(pair) for name, pair in record["tolerances"].items()},
                         case=case_to_json(reduced), result=result_to_json(result))

    def _worker_folder(self, trial: _Trial) -> Path:
        """The reproducer the worker wrote for the trial (the pool has a fresh worker write it for a
        crash or a hang); made here, without compiling, if there is none."""
        relative = trial.result.reproducer or Runner(self.runner).reproduce_only(trial.job)
        if relative is None:
            raise IrtoolBug(f"reduce: no reproducer could be written for {trial.job.name}")
        return self.scratch / relative

    # ------------------------------------------------------------------ the end
    def _finish(self, outcome: ReduceOutcome, best: _Trial) -> None:
        outcome.final, outcome.result = best.case.describe(), best.result
        outcome.runs, outcome.flaky = self.runs, self.flaky
        outcome.unmatched_faults = [f"{faults.ENV}: {fault.written!r} matched none of the {self.runs} runs of this "
                                    f"reduction; it changed nothing" for fault in self.unmatched]
        outcome.divergence = divergence(best.result)
        ended = {DONE: "done: no smaller candidate fails so", BUDGET: "stopped: the time budget is used up",
                 INTERRUPTED: "interrupted"}[outcome.stopped]
        self.emit(f"{ended}; {len(outcome.steps)} steps kept of {self.runs} runs ({self.flaky} flaky)")
        self.emit(f"reduced: {outcome.final}; {count_text(best.case.elements)} elements; {_summary(best.result)}")
        decisive = decisive_inputs(best.case)
        if decisive:
            self.emit(f"inputs: {decisive}")
        if outcome.divergence:
            self.emit(f"diverges: {outcome.divergence}")
        self.emit(f"reproducer: {outcome.reproducer} (python {outcome.reproducer / 'reproduce.py'})")


FEW_ELEMENTS = 8  # an input this small is shown whole in the summary: its values may be what fails
_SHOWN_INPUTS = 8
_LINE_LIMIT = 400  # characters of the summary's inputs line


def decisive_inputs(case: ConcreteCase) -> str:
    """The inputs whose values may decide a failure, with their values: sequence_lengths (its
    first few values, whatever the batch) and every input of few elements; bounded whatever the
    case (``sequence_lengths [0]; initial_hidden_state [0.5]``)."""
    shown = []
    for port in case.ports:
        array = np.asarray(case.arrays[port.name])
        if port.name != "sequence_lengths" and array.size > FEW_ELEMENTS:
            continue
        flat = array.reshape(-1)[:FEW_ELEMENTS]
        values = ", ".join(str(int(v)) if array.dtype.kind in "iub" else f"{float(v):.4g}" for v in flat)
        more = f", ... ({array.size} values)" if array.size > FEW_ELEMENTS else ""
        shape = "" if array.ndim <= 1 else f" {list(array.shape)}"
        shown.append(f"{port.name}{shape} [{values}{more}]")
    text = "; ".join(shown[:_SHOWN_INPUTS]) + (f"; ... ({len(shown)} inputs)" if len(shown) > _SHOWN_INPUTS else "")
    return text if len(text) <= _LINE_LIMIT else text[:_LINE_LIMIT - 3] + "..."


def divergence(result: CaseResult) -> str | None:
    """The first time step at which an output's max abs error exceeds its atol, over all outputs."""
    first: tuple[int, str] | None = None
    for output in result.outputs:
        steps, atol = output.get("step_max_abs"), output.get("atol")
        if not steps or atol is None:
            continue
        for index, value in enumerate(steps):
            if value > atol:
                if first is None or index < first[0]:
                    first = (index, f"{output['name']} first at time step {index} "
                                    f"(max abs error {value:.3g} > atol {atol:g})")
                break
    return first[1] if first else None


def _summary(result: CaseResult) -> str:
    if result.max_abs is not None:
        return f"{result.verdict} (max abs {result.max_abs:.3g})"
    message = result.message if len(result.message) <= 120 else result.message[:117] + "..."
    return f"{result.verdict}: {message}" if message else result.verdict


def _npz(path: Path) -> dict[str, np.ndarray] | None:
    return read_npz(path, "reproducer arrays") if path.is_file() else None

