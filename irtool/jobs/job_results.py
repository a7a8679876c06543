"""The records a job's results are made of: the result every job starts from, the results of a
model's outputs (against expected outputs or a framework's runtime), an output's comparison as a
result holds it, and what a job broke of its case's expectations (no OpenVINO here)."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from irtool.jobs.records import ERROR, NODE_SEPARATOR, UNJUDGED, CaseResult, Job, SuiteCase, plain
from irtool.runtime.what_ran import meets
from irtool.specs import check_shapes


def expectations_broken(case: SuiteCase, implementations: Mapping[str, str], compile_seconds: float) -> list[str]:
    """What a job broke of its case's ``expect_impl`` and ``max_compile_s``, one sentence each."""
    broken = []
    if case.expect_impl is not None:
        if not implementations:
            broken.append(f"expected the implementation {case.expect_impl!r}, but the runtime graph names none")
        broken += [f"expected the implementation {case.expect_impl!r}, node {node} ran as {impl}"
                   for node, impl in implementations.items() if not meets(impl, case.expect_impl)]
    if case.max_compile_s is not None and compile_seconds > case.max_compile_s:
        broken.append(f"compiling took {compile_seconds:.3g} s, more than max_compile_s = {case.max_compile_s:g}")
    return broken


def output_problem(diff: Any) -> str:
    """``Y (max abs 0.5, 3/64)``, or the output's problem."""
    return f"{diff.name} (max abs {diff.max_abs:.3g}, {diff.outside}/{diff.total})" if not diff.problem \
        else f"{diff.name} ({diff.problem})"


def probe_problems(judgment: Any) -> list[str]:
    """A sentence where probing the model (its nodes' outputs made outputs) changed its outputs."""
    check = judgment.probe_check
    if check is None or check.passed:
        return []
    return ["probing changed the model's outputs (" + ", ".join(
        f"{d.name} max abs {d.max_abs:.3g}" for d in check.outputs if not d.passed) + ")"]


def op_fields(prepared: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """A single-op model's attributes and dim sizes on these inputs (empty for other models)."""
    node = prepared.single
    if node is None:
        return {}
    shapes = [feed.constant.shape if feed.constant is not None else inputs[feed.parameter].shape for feed in node.feeds]
    try:
        sizes = check_shapes(node.spec, node.attributes, shapes)
    except ValueError:
        sizes = {}
    return {**node.attributes, **sizes}


EXPECTED_OUTPUTS = "outputs"  # the case id of a job's expected-outputs result: CASE::outputs


def model_results(base: CaseResult, judgment: Any, case: SuiteCase, oracle: Any) -> list[CaseResult]:
    """The results of the model's outputs: against the case's ``expected`` file (``CASE::outputs``)
    and against its framework's runtime (``CASE::<runtime>``; unjudged where it refused the model)."""
    results = []
    if judgment.expected is not None:
        results.append(expected_result(base, judgment.expected, EXPECTED_OUTPUTS, judgment.nodes))
    if oracle is not None and judgment.oracle is not None:
        results.append(expected_result(base, judgment.oracle, case.compare_with, judgment.nodes))
    elif oracle is not None:
        result = expected_result(base, None, case.compare_with, judgment.nodes)
        result.verdict, result.message = UNJUDGED, oracle.refused
        results.append(result)
    return results


def expected_result(base: CaseResult, expected: Any, name: str, nodes: Any) -> CaseResult:
    """The result of a judgment of the model's outputs (``CASE::NAME``; ``NAME#expected`` where a node
    has that name): against the case's ``expected`` file or its runtime's outputs (``expected``; None
    where there are none)."""
    name = name if all(node.name != name for node in nodes) else f"{name}#expected"
    diffs = expected.outputs if expected is not None else ()
    result = dataclasses.replace(base, case=f"{base.case}{NODE_SEPARATOR}{name}", node=name,
                                 verdict=expected.verdict if expected is not None else UNJUDGED,
                                 outputs=[output_record(d) for d in diffs], reproducer=None, unwritten=None,
                                 max_abs=max((d.max_abs for d in diffs if not d.problem), default=None),
                                 conditions={}, implementations={})  # its nodes have results of their own
    if expected is not None and expected.mismatch is not None:  # the file does not match the model: no verdict
        result.verdict, result.message = ERROR, expected.mismatch
        return result
    result.message = "" if expected is None or expected.passed else \
        f"outside tolerance of {Path(expected.source).name}: " + ", ".join(output_problem(d) for d in diffs if not d.passed)
    return result


def base_result(job: Job) -> CaseResult:
    case = job.case
    return CaseResult(case=case.id, suite=case.suite, device=job.device, precision=job.precision, verdict=ERROR,
                      op=f"{case.op}-{case.version}" if case.op else None, file=case.file,
                      attributes=dict(case.attributes), element_type=case.element_type if case.op else None,
                      seed=case.seed, openvino=job.openvino)


def output_record(diff: Any, name: str | None = None) -> dict[str, Any]:
    """An OutputDiff as a result holds it: its fields, with the tolerance flattened to atol, rtol,
    tolerance_source; floats stay floats (inf and nan too: result_to_json spells them for JSON)."""
    record = plain(diff, numbers=True)
    if name is not None:
        record["name"] = name
    tolerance = record.pop("tolerance")
    record.update(atol=tolerance["atol"], rtol=tolerance["rtol"], tolerance_source=tolerance["source"])
    return record
