"""Running jobs: :class:`Runner` in any process, and the worker process loop around it.

A worker is ``python -m irtool.harness.worker``.  It answers on a private copy of its
stdout (fd 1 itself is pointed at stderr, so nothing a plugin prints can corrupt the
protocol): first ``{"ready": {...}}``, then for each request line one answer line.
Requests: ``{"options": {...}}`` once, then ``{"job": {...}}`` (answer ``{"result": {...}}``)
or ``{"reproduce": {...}}`` (answer ``{"reproducer": path}``: write the reproducer of a job
whose worker crashed or hung, without compiling it).

A :class:`Runner` keeps one Core (irtool.execute.core), the models it built or read
(by model key) and the models it compiled (by model key, device, precision), so that
the seeds, devices and precisions of one model cost one build and one compile each.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from irtool.compare import TolerancePolicy
from irtool.errors import IrtoolError
from irtool.harness import faults
from irtool.harness.records import (ERROR, FAIL, PASS, UNJUDGED, CaseResult, Job, SuiteCase, case_from_json,
                                    case_to_json, plain, result_to_json)
from irtool.harness.suite import op_case

MODEL_CACHE = 8
COMPILED_CACHE = 16
DATA_CACHE = 4
REPRODUCERS = "reproducers"


@dataclass(frozen=True)
class RunnerOptions:
    config: Mapping[str, str] = field(default_factory=dict)
    tolerance: TolerancePolicy = field(default_factory=TolerancePolicy)
    report_dir: str | None = None  # reproducers go to REPORT_DIR/reproducers/<job>/

    def to_json(self) -> dict[str, Any]:
        return plain(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RunnerOptions":
        return cls(dict(data.get("config", {})), TolerancePolicy(**data.get("tolerance", {})), data.get("report_dir"))


@dataclass
class Prepared:
    """A model ready to run: the ov.Model and what irtool found in it."""

    model: Any
    name: str  # what messages call it
    rnn: Any  # irtool.execute.RnnOp or None
    why_not: str
    infos: list
    labels: list[tuple[str, ...]]


def reference_expected(prepared: Prepared, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The reference's outputs in model output order."""
    from irtool.execute import reference_outputs

    reference = reference_outputs(prepared.rnn, inputs)
    return [reference[port] for port in prepared.rnn.output_ports]


@dataclass
class CaseData:
    """A case's inputs, and the reference's outputs on them once asked for (the same for every
    device and precision the case runs on)."""

    inputs: dict[str, np.ndarray]
    _expected: list[np.ndarray] | None = None

    def expected(self, prepared: Prepared) -> list[np.ndarray]:
        if self._expected is None:
            self._expected = reference_expected(prepared, self.inputs)
        return self._expected


def job_to_json(job: Job) -> dict[str, Any]:
    return {"case": case_to_json(job.case), "device": job.device, "precision": job.precision}


def job_from_json(data: Mapping[str, Any]) -> Job:
    return Job(case_from_json(data["case"]), data["device"], data["precision"])


def reproducer_name(job: Job) -> str:
    """A folder name for a job: readable, filesystem-safe, unique by a short hash."""
    slug = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", job.name).strip("_")[:80]
    digest = hashlib.sha1(job.name.encode()).hexdigest()[:8]
    return f"{slug}-{digest}"


class Runner:
    def __init__(self, options: RunnerOptions | None = None):
        self.options = options or RunnerOptions()
        self.faults = faults.faults_from_environment()
        self._models = Lru(MODEL_CACHE)  # model key -> Prepared
        self._compiled = Lru(COMPILED_CACHE)  # (model key, device, precision) -> (compiled, DeviceRun, seconds)
        self._data = Lru(DATA_CACHE)  # (model key, seed, inputs file) -> CaseData

    # ------------------------------------------------------------------ one job
    def run(self, job: Job) -> CaseResult:
        """Run one job and judge it; every failure of the case becomes a verdict, never an exception."""
        from irtool.runtime.compile import infer

        case = job.case
        result = base_result(job)
        start = time.perf_counter()
        prepared = data = None
        try:
            prepared = self.prepare(case)
            if prepared.rnn is not None:
                result.op = prepared.rnn.spec.key  # an IR file's op, too
            data = self.data(case, prepared)
            inputs = data.inputs
            if self.faults:
                faults.inject(self.faults, job, op_fields(prepared, inputs))
            result.shapes = {name: list(array.shape) for name, array in inputs.items()}
            compiled, device_run, result.compile_time = self._compile(case, prepared, job.device, job.precision)
            result.effective_precision = dict(device_run.effective_precision)
            result.execution_devices = list(device_run.execution_devices)
            started = time.perf_counter()
            actual = infer(compiled, inputs, job.device)
            result.infer_time = time.perf_counter() - started
            self._judge(result, job, prepared, data, actual, device_run.precision)
        except IrtoolError as error:
            result.verdict, result.message = ERROR, error.message
            if prepared is not None and data is not None:
                self._reproduce(job, result, prepared, data.inputs)
        result.time = time.perf_counter() - start
        return result

    def _judge(self, result: CaseResult, job: Job, prepared: Prepared, data: "CaseData",
               actual: list[np.ndarray], precision: str) -> None:
        from irtool.execute import diff_outputs

        if prepared.rnn is None:
            result.verdict, result.message = UNJUDGED, f"no reference applies: {prepared.why_not}"
            return
        expected = data.expected(prepared)
        diffs = diff_outputs(prepared.labels, actual, expected, self._policy(job.case), precision, prepared.rnn)
        result.outputs = [output_record(diff) for diff in diffs]
        result.max_abs = max((d.max_abs for d in diffs), default=None)
        failed = [d.name for d in diffs if not d.passed]
        result.verdict = FAIL if failed else PASS
        if failed:
            result.message = "outside tolerance: " + ", ".join(
                f"{d.name} (max abs {d.max_abs:.3g}, {d.outside}/{d.total})" if not d.problem else f"{d.name} ({d.problem})"
                for d in diffs if not d.passed)
            self._reproduce(job, result, prepared, data.inputs, actual, expected, diffs)

    def _policy(self, case: SuiteCase) -> TolerancePolicy:
        """The case's own atol/rtol, unless the run overrides them."""
        policy = self.options.tolerance
        return TolerancePolicy(policy.atol if policy.atol is not None else case.atol,
                               policy.rtol if policy.rtol is not None else case.rtol,
                               policy.output_atol, policy.output_rtol)

    @staticmethod
    def inputs(case: SuiteCase, prepared: Prepared) -> dict[str, np.ndarray]:
        """The case's inputs: from its .npz, or seeded (dynamic dims take the case's sizes)."""
        from irtool.execute import load_inputs, make_inputs

        if case.inputs is not None:
            return load_inputs(case.inputs, prepared.infos)
        return make_inputs(prepared.infos, prepared.rnn, case.seed, case.sizes)

    # ------------------------------------------------------------------ caches
    def data(self, case: SuiteCase, prepared: Prepared) -> CaseData:
        """The case's inputs (and reference outputs), made once for all its devices and precisions."""
        key = (case.model_key, case.seed, case.inputs)
        found = self._data.get(key)
        if found is None:
            found = self._data.put(key, CaseData(self.inputs(case, prepared)))
        return found

    def prepare(self, case: SuiteCase) -> Prepared:
        """The case's model, built or read once per model key."""
        from irtool.execute import find_rnn_op, output_labels
        from irtool.runtime.model import model_inputs, read_model

        prepared = self._models.get(case.model_key)
        if prepared is not None:
            return prepared
        if case.file is not None:
            loaded = read_model(case.file, case.fill_defaults)
            model, name = loaded.model, Path(case.file).name
        else:
            from irtool.build import build_model

            model, name = build_model(op_case(case)), f"{case.op} model"
        rnn, why_not = find_rnn_op(model)
        return self._models.put(case.model_key,
                                Prepared(model, name, rnn, why_not, model_inputs(model), output_labels(model, rnn)))

    def _compile(self, case: SuiteCase, prepared: Prepared, device: str, precision: str) -> tuple[Any, Any, float]:
        """Compiled model, DeviceRun and compile seconds (0 when reused).  A device that cannot
        compile is asked which ops it does not support, so that is said rather than a crash text."""
        from irtool.errors import RunError
        from irtool.runtime.compile import check_support, compile_on

        key = (case.model_key, device, precision)
        found = self._compiled.get(key)
        if found is not None:
            return found[0], found[1], 0.0
        started = time.perf_counter()
        try:
            compiled, device_run = compile_on(prepared.model, device, precision, self.options.config,
                                              Path(prepared.name))
        except RunError:
            check_support(prepared.model, device, Path(prepared.name))
            raise
        return self._compiled.put(key, (compiled, device_run, time.perf_counter() - started))

    # ------------------------------------------------------------------ reproducers
    def reproduce_only(self, job: Job) -> str | None:
        """The reproducer of a job whose worker crashed or hung: the model, its inputs and the
        reference's outputs where one applies; nothing is compiled."""
        try:
            prepared = self.prepare(job.case)
            data = self.data(job.case, prepared)
            expected = data.expected(prepared) if prepared.rnn is not None else None
        except IrtoolError:
            return None
        result = base_result(job)
        self._reproduce(job, result, prepared, data.inputs, expected=expected)
        return result.reproducer

    def _reproduce(self, job: Job, result: CaseResult, prepared: Prepared, inputs: Mapping[str, np.ndarray],
                   actual: list[np.ndarray] | None = None, expected: list[np.ndarray] | None = None,
                   diffs: tuple = ()) -> None:
        if self.options.report_dir is None:
            return
        from irtool.harness.reproducer import write_reproducer

        relative = f"{REPRODUCERS}/{reproducer_name(job)}"
        names = [labels[0] for labels in prepared.labels]
        tolerances = {d.name: (d.tolerance.atol, d.tolerance.rtol) for d in diffs} or self._tolerances(job, prepared)
        result.reproducer = relative
        folder = Path(self.options.report_dir) / relative
        folder.parent.mkdir(parents=True, exist_ok=True)
        write_reproducer(folder, model=prepared.model, inputs=inputs,
                         expected=dict(zip(names, expected)) if expected is not None else None,
                         actual=dict(zip(names, actual)) if actual is not None else None,
                         device=job.device, precision=job.precision, config=self.options.config,
                         tolerances=tolerances, case=case_to_json(job.case), result=result_to_json(result))

    def _tolerances(self, job: Job, prepared: Prepared) -> dict[str, tuple[float, float]]:
        """Each output's tolerance at the requested precision, for a job that compared nothing."""
        from irtool.execute import output_tolerance

        tolerances = {}
        for labels, output in zip(prepared.labels, prepared.model.outputs):
            tolerance = output_tolerance(self._policy(job.case), labels, job.precision,
                                         output.get_element_type().to_dtype())
            tolerances[labels[0]] = (tolerance.atol, tolerance.rtol)
        return tolerances


class Lru:
    """The ``size`` most recently used entries: what a worker keeps between jobs."""

    def __init__(self, size: int):
        self.size = size
        self._entries: OrderedDict = OrderedDict()

    def get(self, key: Any) -> Any:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: Any, value: Any) -> Any:
        self._entries[key] = value
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return value


def op_fields(prepared: Prepared, inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """The RNN op's attributes and dim sizes on these inputs (empty for a model without one)."""
    from irtool.execute import op_symbols

    if prepared.rnn is None:
        return {}
    return {**prepared.rnn.attributes, **op_symbols(prepared.rnn, inputs)}


def base_result(job: Job) -> CaseResult:
    case = job.case
    return CaseResult(case=case.id, suite=case.suite, device=job.device, precision=job.precision, verdict=ERROR,
                      op=f"{case.op}-{case.version}" if case.op else None, file=case.file,
                      attributes=dict(case.attributes), element_type=case.element_type if case.op else None,
                      seed=case.seed)


def output_record(diff: Any) -> dict[str, Any]:
    """An OutputDiff as stored: its fields, with the tolerance flattened to atol, rtol, tolerance_source."""
    record = plain(diff)
    tolerance = record.pop("tolerance")
    record.update(atol=tolerance["atol"], rtol=tolerance["rtol"], tolerance_source=tolerance["source"])
    return record


# ----------------------------------------------------------------------------- the process

def serve(requests: Any, answers: Any) -> None:
    """Answer requests (JSON lines) until the input ends."""
    import openvino as ov

    from irtool.runtime.core import core

    core()
    _send(answers, {"ready": {"pid": os.getpid(), "openvino": ov.get_version()}})
    runner = Runner()
    for line in requests:
        request = json.loads(line)
        if "options" in request:
            runner = Runner(RunnerOptions.from_json(request["options"]))
        elif "job" in request:
            job = job_from_json(request["job"])
            print(f"irtool worker {os.getpid()}: running {job.name}", file=sys.stderr, flush=True)
            try:
                result = runner.run(job)
            except Exception as error:  # irtool's own bug: say so for this job, keep serving
                result = base_result(job)
                result.message = f"internal error (an irtool bug): {type(error).__name__}: {error}"
                result.stderr = traceback.format_exc().splitlines()[-20:]
            _send(answers, {"result": result_to_json(result)})
        elif "reproduce" in request:
            try:
                folder = runner.reproduce_only(job_from_json(request["reproduce"]))
            except Exception:  # irtool's own bug: the job is recorded without a reproducer
                traceback.print_exc()
                folder = None
            _send(answers, {"reproducer": folder})


def _send(answers: Any, message: Mapping[str, Any]) -> None:
    answers.write(json.dumps(message, allow_nan=False) + "\n")
    answers.flush()


def main() -> None:
    """Requests and answers go through private copies of fds 0 and 1: what plugins and libraries
    print goes to stderr, and a process a library forks (openvino's telemetry) that closes
    its stdin cannot block on the lock of the stream the worker is reading."""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")
    sys.stdout = sys.stderr
    serve(requests, answers)


if __name__ == "__main__":
    main()
