"""Running jobs: :class:`Runner`, in a worker process (:mod:`irtool.jobs.serve`) or in any other.

A :class:`Runner` keeps one Core (irtool.runtime.core), the models it built or read
(by model key) and the models it compiled (by model key, device, precision), so that
the seeds, devices and precisions of one model cost one build and one compile each.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from irtool.core import activity
from irtool.core.errors import IrtoolError, NotConvertible, RunError, RunSkipped, Unsupported
from irtool.core.text import cut, joined
from irtool.jobs import faults
from irtool.jobs.conditions import node_conditions
from irtool.jobs.kept import keep_job, replayed_job
from irtool.jobs.job_results import (
    base_result,
    expectations_broken,
    model_results,
    op_fields,
    output_problem,
    output_record,
    probe_problems,
)
from irtool.jobs.records import (
    CRASH,
    ERROR,
    FAIL,
    NODE_SEPARATOR,
    PASS,
    SKIP,
    UNJUDGED,
    CaseResult,
    Job,
    SuiteCase,
    case_from_json,
    case_to_json,
    op_case,
    plain,
    result_to_json,
)
from irtool.judge.compare import TolerancePolicy
from irtool.reference.rounding import EXACT, Rounding
from irtool.runtime.captured import input_arrays
from irtool.specs.cases import DataKind

MODEL_CACHE = 8
COMPILED_CACHE = 16
DATA_CACHE = 4
REFERENCE_CACHE = 8
REPRODUCERS = "reproducers"


@dataclass(frozen=True)
class RunnerOptions:
    config: Mapping[str, str] = field(default_factory=dict)
    tolerance: TolerancePolicy = field(default_factory=TolerancePolicy)
    report_dir: str | None = None  # reproducers go to REPORT_DIR/reproducers/<job>/
    keep_outputs: bool = False  # every job's outputs and what replays them go to REPORT_DIR/kept/ (irtool.jobs.kept)

    def to_json(self) -> dict[str, Any]:
        return plain(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "RunnerOptions":
        return cls(dict(data.get("config", {})), TolerancePolicy(**data.get("tolerance", {})), data.get("report_dir"),
                   bool(data.get("keep_outputs")))


@dataclass
class CaseData:
    """A case's inputs: the same for every device and precision the case runs on."""

    inputs: dict[str, np.ndarray]
    expected: Any = None  # the case's expected outputs (irtool.judge.expected.ExpectedOutputs), where it has them
    oracle: Any = None  # its framework runtime's outputs (irtool.pipeline.oracle.OracleOutputs), with compare_with
    sized: Mapping[str, str] = field(default_factory=dict)  # input -> how irtool sized its dynamic dims


def job_to_json(job: Job) -> dict[str, Any]:
    return {"case": case_to_json(job.case), "device": job.device, "precision": job.precision,
            "openvino": job.openvino, **({"replay": job.replay} if job.replay else {})}


def job_from_json(data: Mapping[str, Any]) -> Job:
    return Job(case_from_json(data["case"]), data["device"], data["precision"], data.get("openvino"), data.get("replay"))


def reproducer_name(job: Job) -> str:
    """A folder name for a job: readable, filesystem-safe, unique by a short hash."""
    slug = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", job.name).strip("_")[:80]
    digest = hashlib.sha1(job.name.encode()).hexdigest()[:8]
    return f"{slug}-{digest}"


class Runner:
    """The pipeline of irtool.pipeline, with the caches of a worker around its stages."""

    def __init__(self, options: RunnerOptions | None = None):
        self.options = options or RunnerOptions()
        self.faults = faults.faults_from_environment()
        self._models = Lru(MODEL_CACHE)  # model key -> Prepared
        self._compiled = Lru(COMPILED_CACHE)  # (model key, device, precision) -> Compiled
        self._data = Lru(DATA_CACHE)  # (model key, seed, inputs file) -> CaseData
        self._references = Lru(REFERENCE_CACHE)  # (model key, node, digest of its inputs) -> outputs

    # ------------------------------------------------------------------ one job
    def run(self, job: Job) -> list[CaseResult]:
        """Run one job and judge it; every failure of the case becomes a verdict, never an exception.

        One result for a model of one recurrent op fed by its inputs (what ``irtool build`` writes)
        or with no recurrent node; one per recurrent node for any other model (case ids
        ``CASE::NODE``): each judged node is a result of its own in results and reports."""
        from irtool.pipeline.device_run import execute, weights_rounding_cost
        from irtool.pipeline.judging import judge, with_implementations

        case = job.case
        result = base_result(job)
        start = time.perf_counter()
        prepared = data = None
        try:
            prepared = self.prepare(case)
            if prepared.single is not None:
                result.op = prepared.single.spec.key  # an IR file's op, too
            with activity.doing(None, "making its inputs", bounded=False):
                data = self.data(case, prepared)
            inputs = data.inputs
            changes = faults.inject(self.faults, job, op_fields(prepared, inputs)) if self.faults else faults.Changes()
            result.shapes, result.sized = {name: list(array.shape) for name, array in inputs.items()}, dict(data.sized)
            if job.replay is None:
                compiled, reused = self._compile(case, prepared, job.device, job.precision, changes.slow)
            else:  # outputs the device gave elsewhere (irtool report rejudge), judged as if it just had
                compiled, replayed, result.replayed = replayed_job(job, prepared, self.options.config)
                reused = False
            result.compile_time = 0.0 if reused else compiled.seconds
            result.implementations = {name: impl.describe() for name, impl in compiled.implementations.items()}
            result.effective_precision = dict(compiled.run.effective_precision)
            result.execution_devices = list(compiled.run.execution_devices)
            runs = self._shape_runs(case, prepared, data)
            for position, (label, data) in enumerate(runs, 1):  # one compiled model, each shape in order
                inputs = data.inputs
                executed = replayed if job.replay is not None else \
                    faults.skewed(execute(compiled, inputs, job.device), changes.skew)
                cost = weights_rounding_cost(prepared, compiled, inputs, self.options.config) \
                    if (data.expected is not None or data.oracle is not None) and job.replay is None else None
                judgment = with_implementations(judge(prepared, inputs, executed, self._policy(case),
                                                      compiled.run.precision, self._reference(case),
                                                      expected=data.expected,
                                                      oracle=data.oracle.expected if data.oracle else None,
                                                      runs=compiled.runs,
                                                      dynamic_quantization=compiled.run.dynamic_quantization,
                                                      weights_cost=cost),
                                                compiled)
                if job.replay is not None:  # outputs that are not its own captured ones: an error of the job
                    from irtool.pipeline.replay import check_consistent

                    check_consistent(judgment, str(job.replay))
                if judgment.verdict != PASS:
                    break
            result.infer_time = executed.seconds
            result.shapes = {name: list(array.shape) for name, array in inputs.items()}
            result.conditions = {node.name: node_conditions(node, input_arrays(node, inputs, executed.captured))
                                 for node in prepared.probed.judgeable}
            # by the judged nodes' own names: an ONNX model's OpenVINO nodes are named by a counter
            # (GRUSequence_9661), different in every process and release, its ONNX nodes are not
            result.implementations = {node.name: node.implementation for node in judgment.nodes
                                      if node.implementation} or result.implementations
            if len(judgment.nodes) == 1 and len(result.conditions) == 1:  # an ONNX node: by its own name
                result.conditions = {judgment.nodes[0].name: next(iter(result.conditions.values()))}
            # a grid case of the onnx frontend is one case, as an IR op is; a user's model is judged node by node
            one_onnx_node = prepared.onnx is not None and len(judgment.nodes) == 1 and case.op is not None
            if prepared.single is None and judgment.nodes and not one_onnx_node:  # a whole model: a result per node
                results = self._per_node(result, job, prepared, data, executed, judgment, compiled)
            else:
                self._record(result, job, prepared, data, executed, judgment)
                results = [result]
            if judgment.expected is not None or data.oracle is not None:  # the model's outputs judged
                results = (results if judgment.nodes else []) + model_results(result, judgment, case, data.oracle)
            elapsed = time.perf_counter() - start
            if len(runs) > 1:  # which of the shapes inferred in order this result is of
                said = (f"shape {position} of {len(runs)} ({label})" if judgment.verdict != PASS
                        else f"{len(runs)} shapes inferred in order on one compiled model ({'; '.join(l for l, _ in runs)})")
                for each in results:
                    each.message = f"{said}: {each.message}" if each.message else said
            for note in _open_notes(case):  # what the device did with a value the spec leaves open
                for each in results:
                    did = "matched it" if each.verdict == PASS else "did not match it" if each.verdict == FAIL else ""
                    said = f"{note}: {job.device} {did}" if did else note
                    each.message = f"{each.message}; {said}" if each.message else said
            for each in results:  # an input the device narrowed before its nodes received it (int64 as int32)
                each.message = "; ".join(filter(None, [each.message, *executed.narrowed]))
            for each in results:  # a suite's expect_impl and max_compile_s, for every node
                broken = expectations_broken(case, each.implementations, compiled.seconds)
                if broken and each.verdict in (PASS, FAIL):
                    each.verdict = FAIL
                    each.message = "; ".join(filter(None, [each.message, *broken]))
                each.time = elapsed
                if changes.implementation is not None:
                    each.implementations = {node: changes.implementation for node in each.implementations}
            if self.options.keep_outputs and self.options.report_dir is not None and job.replay is None:
                keep_job(self.options.report_dir, reproducer_name(job), job, prepared, data.inputs, compiled, executed,
                         results, len(runs))
            return results
        except NotConvertible as error:  # a model file its frontend cannot convert: an error, as irtool run says
            result.verdict, result.message = ERROR, error.message
        except Unsupported as error:  # a feature OpenVINO lacks: skipped, as a precision a device lacks is
            result.verdict, result.message = SKIP, error.message
        except MemoryError:  # past what the estimates foresaw: the job crashed for memory, as one the kernel kills
            self._out_of_memory(job, result)
        except RunSkipped as error:  # nothing to judge in the model, and nothing to run it on
            result.verdict, result.message = UNJUDGED, error.message
        except IrtoolError as error:
            if isinstance(error, RunError):  # an IR file OpenVINO could not take: what irtool validate says of it
                from irtool.pipeline.prepare import with_validation

                error = with_validation(error, case.file)
            result.verdict, result.message = ERROR, error.message
            if prepared is not None and data is not None:
                self._reproduce(job, result, prepared, data.inputs)
        result.time = time.perf_counter() - start
        return [result]

    def _out_of_memory(self, job: Job, result: CaseResult) -> None:
        """A job whose allocation failed (RLIMIT_AS, or no memory left): a crash, saying what it was
        doing, its estimate and the limits it ran under; its reproducer written once what it held
        is freed (the model and its inputs, nothing compiled), or why not."""
        from irtool.core.memory import limits_in_force, out_of_memory

        doing = activity.failed_at().what
        result.verdict = CRASH
        result.message = f"{out_of_memory(doing)}; it ran under {limits_in_force()}"
        unwritten: list[str] = []
        result.reproducer = self.reproduce_only(job, unwritten, lost=result)
        result.unwritten = "; ".join(unwritten) or None

    def _record(self, result: CaseResult, job: Job, prepared: Any, data: CaseData, executed: Any,
                judgment: Any) -> None:
        """The judgment of a single-op model (or one with no recurrent node) as its CaseResult: the
        node's output diffs, the verdict, and a reproducer for a failure."""
        if len(judgment.nodes) == 1 and not result.op:  # a model of one ONNX node, or of one node in a body
            result.op = f"{judgment.nodes[0].type}-{judgment.nodes[0].version}"
        diffs = [d for node in judgment.nodes for d in node.outputs]
        result.outputs = [output_record(d) for d in diffs]
        result.max_abs = max((d.max_abs for d in diffs), default=None)
        # the nodes' verdict: the expected outputs' is a result of its own (expected_result)
        verdict = result.verdict = judgment.node_verdict or judgment.verdict
        if verdict == UNJUDGED:
            unreached = [node for node in judgment.nodes if not node.reached]
            result.message = (joined(f"{node.name}: {node.reason}" for node in unreached)
                              if unreached and len(unreached) == len(judgment.nodes)
                              else f"no reference applies: {judgment.why_unjudged}")
            return
        problems = [output_problem(d) for d in diffs if not d.passed]
        problems += [f"node {node.name}: {node.reason}" for node in judgment.nodes if node.verdict == ERROR]
        problems += [note for node in judgment.nodes if node.verdict == FAIL for note in node.notes]
        problems += probe_problems(judgment)
        if verdict in (FAIL, ERROR):
            at = next((node.at for node in judgment.nodes if node.verdict == FAIL and node.at), None)
            result.message = (f"at {at}: " if at else "") + ("outside tolerance: " if verdict == FAIL else "") + \
                joined(problems)
            single = prepared.single
            expected = None
            if single is not None:
                by_port = {d.name: k for k, d in enumerate(judgment.nodes[0].outputs)}
                reference = self._reference(job.case)(single, input_arrays(single, data.inputs))
                expected = [reference[by_port[d.name]] for d in judgment.outputs] if judgment.outputs else None
            if verdict == FAIL and expected is None:  # the whole model with nothing to compare would not fail
                given = f"--inputs {job.case.inputs}" if job.case.inputs else f"--seed {job.case.seed}"
                result.message += (f"; no reproducer folder: the failing node is judged inside the model, where "
                                   f"irtool run {job.case.file or prepared.name} -d {job.device} --precision "
                                   f"{job.precision} {given} reproduces it")
                return
            self._reproduce(job, result, prepared, data.inputs, executed.outputs, expected, judgment.outputs)

    def _per_node(self, base: CaseResult, job: Job, prepared: Any, data: CaseData, executed: Any, judgment: Any,
                  compiled: Any) -> list[CaseResult]:
        """One result per node of a whole model: its verdict, diffs and implementation, and a
        reproducer of the node (a single-op IR with its captured inputs) where it fails.  Probing
        that changed the model's outputs fails every node: none of them may be what the model runs."""
        from irtool.pipeline.reproducer import (
            ReproducerError,
            judged_ir_nodes,
            node_folder_name,
            write_judged_node_reproducer,
        )

        probe = probe_problems(judgment)
        results = []
        ir_nodes = judged_ir_nodes(prepared, judgment.nodes)
        for verdict in judgment.nodes:
            node = ir_nodes.get(verdict.name)  # None: an ONNX node, judged in ONNX semantics
            ran = node.name if node is not None else verdict.converted_to  # an ONNX node: what it was converted to
            result = dataclasses.replace(base, case=f"{base.case}{NODE_SEPARATOR}{verdict.name}", node=verdict.name,
                                         op=f"{verdict.type}-{verdict.version}",
                                         implementations={verdict.name: verdict.implementation}
                                         if verdict.implementation else {},
                                         conditions={verdict.name: base.conditions[ran]}
                                         if ran in base.conditions else {})
            result.outputs = [output_record(d) for d in verdict.outputs]
            result.max_abs = verdict.max_abs
            result.verdict = FAIL if probe and verdict.verdict == PASS else verdict.verdict
            reasons = ([verdict.reason if not verdict.reached else f"no reference applies: {verdict.reason}"]
                       if verdict.verdict == UNJUDGED else
                       [(f"at {verdict.at}: " if verdict.at else "") + "outside tolerance: "
                        + joined(output_problem(d) for d in verdict.outputs if not d.passed)]
                       + list(verdict.notes) if verdict.verdict == FAIL
                       else [verdict.reason or ""] if verdict.verdict == ERROR else [])
            if verdict.verdict == ERROR and judgment.verdict == PASS:  # the model's outputs, judged whole, agree:
                result.verdict = UNJUDGED  # the node is listed as not judged on its own, as irtool run lists it
                reasons = [f"could not be judged on its own ({verdict.reason}); the model's outputs, judged whole, "
                           f"agree"]
            result.message = cut("; ".join(filter(None, reasons + probe)))
            if verdict.verdict == FAIL and self.options.report_dir is not None:
                relative = f"{REPRODUCERS}/{reproducer_name(job)}-{node_folder_name(verdict.name)}"
                folder = Path(self.options.report_dir) / relative
                try:
                    write_judged_node_reproducer(folder, prepared, node, verdict, data.inputs, executed, compiled.run,
                                                 self.options.config)
                    result.reproducer = relative
                except ReproducerError as error:  # the verdict stands; what was not written is said beside it
                    result.unwritten = error.message
            results.append(result)
        return results

    def _policy(self, case: SuiteCase) -> TolerancePolicy:
        """The case's own atol/rtol (and per-output ones), unless the run overrides them."""
        policy = self.options.tolerance
        return TolerancePolicy(policy.atol if policy.atol is not None else case.atol,
                               policy.rtol if policy.rtol is not None else case.rtol,
                               {**{k: t[0] for k, t in case.tolerances.items()}, **(policy.output_atol or {})},
                               {**{k: t[1] for k, t in case.tolerances.items()}, **(policy.output_rtol or {})})

    def _reference(self, case: SuiteCase) -> Any:
        """The reference of a node on its input arrays (rounding as a device does, where asked), cached
        by the arrays' digest and the rounding: the same for every device and precision that gives
        the node the same inputs and rounds alike."""
        from irtool.judge.nodes import arrays_digest, evaluate_node

        open_values = bool(_open_notes(case))

        def reference(node: Any, arrays: Any, rounding: Rounding = EXACT) -> Any:
            if open_values:  # a value the spec leaves open, read as its spec file says (a clip of -1: none)
                node = dataclasses.replace(node, attributes=node.spec.read_open(node.attributes)[0])
            key = (_read_key(case), node.index, arrays_digest(arrays), rounding)
            found = self._references.get(key)
            return found if found is not None else self._references.put(key, evaluate_node(node, arrays, rounding))

        return reference

    def _shape_runs(self, case: SuiteCase, prepared: Any, data: CaseData) -> list[tuple[str, CaseData]]:
        """The inputs a job infers, in order: its own, or one per ``infer_sizes`` entry (labelled
        by its sizes), all on the one compiled model."""
        if not case.infer_sizes:
            return [("", data)]
        return [(", ".join(f"{name} {size}" for name, size in sizes.items()), self.data(case, prepared, sizes))
                for sizes in case.infer_sizes]

    # ------------------------------------------------------------------ caches
    def data(self, case: SuiteCase, prepared: Any, sizes: Mapping[str, int] | None = None) -> CaseData:
        """The case's inputs, made once for all its devices and precisions: from its .npz, or
        seeded (dynamic dims take the case's shapes and sizes, or ``sizes`` over them)."""
        from irtool.pipeline.inputs import case_inputs
        from irtool.runtime.sizes import GIVEN

        sizes = {**case.sizes, **(sizes or {})}
        key = (case.model_key, case.seed, case.inputs, case.expected, repr(sorted(case.shapes.items())),
               repr(sorted(sizes.items())))
        found = self._data.get(key)
        if found is None and case.frontend == "onnx" and case.inputs is None:
            from irtool.jobs.frontends import onnx_inputs

            found = self._data.put(key, CaseData(onnx_inputs(case)))
        if found is None:
            kind = op_case(case).data if case.op is not None and case.frontend == "ir" else DataKind()
            inputs, sized, _ = case_inputs(prepared, case.inputs, case.seed, shapes=case.shapes, sizes=sizes,
                                           data=kind)
            expected = oracle = None
            if case.expected is not None:
                from irtool.judge.expected import check_expected_names, load_expected

                expected = load_expected(case.expected, "suite's expected outputs")
                check_expected_names(prepared.labels, expected)
            if case.compare_with is not None:
                from irtool.pipeline.oracle import check_oracle, oracle_outputs

                check_oracle(case.compare_with, case.file)
                oracle = oracle_outputs(case.compare_with, case.file, prepared, inputs, self._policy(case))
            found = self._data.put(key, CaseData(inputs, expected, oracle,
                                                 {name: how for name, how in sized.items() if how != GIVEN}))
        return found

    def prepare(self, case: SuiteCase) -> Any:
        """The case's model, built or read once per model key."""
        from irtool.pipeline.prepare import prepare, read_and_prepare

        prepared = self._models.get(_read_key(case))
        if prepared is not None:
            return prepared
        if case.file is not None:
            prepared = read_and_prepare(case.file, case.fill_defaults, case.shapes, case.inputs,
                                        case.sizes.get("batch_size"))
        elif case.frontend == "onnx":
            from irtool.jobs.frontends import onnx_model
            from irtool.pipeline.prepare import prepare_onnx

            prepared = prepare_onnx(onnx_model(case, case.model_seed).model, f"{case.op} ONNX model")
        else:
            from irtool.pipeline.build import build_model
            from irtool.pipeline.prepare import prepare_equivalent

            built = op_case(case)
            # a transformed model (a sequence as a TensorIterator, a cell as plain ops) runs in place of
            # the op, and its outputs are judged as the op's
            prepared = prepare(build_model(built), f"{case.op} model") if built.transform == "none" else \
                prepare_equivalent(build_model(dataclasses.replace(built, transform="none")), build_model(built),
                                   f"{case.op} model, {built.transform}")
        return self._models.put(_read_key(case), prepared)

    def _compile(self, case: SuiteCase, prepared: Any, device: str, precision: str,
                 slow: float = 0.0) -> tuple[Any, bool]:
        """The compiled model on ``device`` at ``precision``, and whether it was reused.  ``slow``:
        seconds an IRTOOL_FAULT makes the compile step sleep (counted in its time)."""
        from irtool.pipeline.device_run import compile_prepared

        key = (_read_key(case), device, precision)
        found = self._compiled.get(key)
        if found is not None:
            return found, True
        compiled = compile_prepared(prepared, device, precision, self.options.config)
        if slow:
            time.sleep(slow)
            compiled = dataclasses.replace(compiled, seconds=compiled.seconds + slow)
        return self._compiled.put(key, compiled), False

    # ------------------------------------------------------------------ reproducers
    def reproduce_only(self, job: Job, unwritten: list[str] | None = None,
                       lost: CaseResult | None = None) -> str | None:
        """The reproducer of a job whose worker crashed or hung (``lost``: the result its pool
        recorded, which case.json keeps): the model, its inputs and the reference's outputs where
        they need no device; nothing is compiled.  Why it could not be written (a full disk), if
        so, is appended to ``unwritten``."""
        try:
            prepared = self.prepare(job.case)
            data = self.data(job.case, prepared)
            expected = None
            single = prepared.single
            if single is not None and set((single.model_outputs or {}).values()) == set(range(len(prepared.labels))):
                reference = self._reference(job.case)(single, input_arrays(single, data.inputs))
                ports = {index: port for port, index in single.model_outputs.items()}
                expected = [reference[ports[k]] for k in range(len(prepared.labels))]
        except (IrtoolError, ValueError, MemoryError) as error:  # said beside the verdict: why there is none
            if unwritten is not None:
                why = error.message if isinstance(error, IrtoolError) else \
                    "out of memory" if isinstance(error, MemoryError) else str(error)
                unwritten.append(f"the reproducer of {job.name}: {why}")
            return None
        result = dataclasses.replace(lost) if lost is not None else base_result(job)
        self._reproduce(job, result, prepared, data.inputs, expected=expected)
        if result.unwritten and unwritten is not None:
            unwritten.append(result.unwritten)
        return result.reproducer

    def _reproduce(self, job: Job, result: CaseResult, prepared: Any, inputs: Mapping[str, np.ndarray],
                   actual: list[np.ndarray] | None = None, expected: list[np.ndarray] | None = None,
                   diffs: tuple = ()) -> None:
        if self.options.report_dir is None:
            return
        from irtool.pipeline.reproducer import ReproducerError, write_reproducer

        relative = f"{REPRODUCERS}/{reproducer_name(job)}"
        names = [labels[0] for labels in prepared.labels]
        tolerances = ({d.name: (d.tolerance.atol, d.tolerance.rtol) for d in diffs}
                      if len(diffs) == len(names) else self._tolerances(job, prepared))
        result.reproducer = relative
        folder = Path(self.options.report_dir) / relative
        try:
            write_reproducer(folder, model=prepared.model, inputs=inputs,
                             expected=dict(zip(names, expected)) if expected is not None else None,
                             actual=dict(zip(names, actual)) if actual is not None else None,
                             device=job.device, precision=job.precision, config=self.options.config,
                             tolerances=tolerances, case=case_to_json(job.case), result=result_to_json(result))
        except ReproducerError as error:  # the verdict stands; what was not written is said beside it
            result.reproducer, result.unwritten = None, error.message

    def _tolerances(self, job: Job, prepared: Any) -> dict[str, tuple[float, float]]:
        """Each output's tolerance at the requested precision, for a job that compared nothing."""
        from irtool.judge.compare import output_tolerance

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


def _open_notes(case: SuiteCase) -> list[str]:
    """A grid case's notes on the attribute values its spec leaves open (irtool.specs.cases.OpCase.open_notes)."""
    return op_case(case).open_notes if case.op is not None and case.frontend == "ir" else []


def _read_key(case: SuiteCase) -> Any:
    """What identifies the model a case reads: its model key, and for a model file the shapes it
    may be converted with (its shapes, inputs and batch: irtool.runtime.model.read_model converts a
    model with them when its frontend needs them, so two [[models]] entries of one file may differ)."""
    if case.file is None:
        return case.model_key
    return case.model_key, case.inputs, repr(sorted(case.shapes.items())), case.sizes.get("batch_size")


