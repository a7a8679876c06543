"""When does a candidate still fail?  The criterion reduce keeps candidates by.

* By default, the same way as the original: the same kind of failure (a mismatch beyond
  tolerance, a NaN/Inf mismatch, a wrong output shape, a crash with the same signal in the
  same step, a timeout, or an error whose message differs only in its numbers), judged with
  the same tolerance.
* ``--check EXPR``: comparisons of a result's numbers, joined by ``and`` / ``or`` (``and``
  binds tighter), e.g. ``max_abs>0.1``, ``Y.nonfinite_mismatch>0 or Ho.max_rel>=1e-2``,
  ``verdict==crash``.  A metric without an output name is its largest value over the
  outputs; a result without outputs (a crash) has none, and no comparison of it holds.
  It is parsed here, never evaluated as Python.
* ``--check-script FILE``: a Python file defining ``check(result: dict) -> bool``, called with
  the result as the harness stores it (results.json's fields), in a process of its own that
  reduce can stop (:mod:`irtool.reduce.check_script`).
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from irtool.jobs.records import CRASH, ERROR, FAIL, TIMEOUT, VERDICTS, CaseResult
from irtool.reduce.errors import ReduceError

METRICS = ("max_abs", "max_rel", "mean_abs", "outside", "total", "needed_atol", "needed_rtol", "actual_nan",
           "actual_inf", "expected_nan", "expected_inf", "nonfinite_mismatch", "atol", "rtol")
OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt, "<": operator.lt}
_CLAUSE = re.compile(r"\s*(?:(?P<output>[^\s.<>=!]+)\.)?(?P<name>[A-Za-z_]\w*)\s*(?P<op>>=|<=|==|!=|>|<)\s*"
                     r"(?P<value>[^\s<>=!]+)\s*$")


class Criterion(Protocol):
    text: str  # what the log and the CLI print

    def holds(self, result: CaseResult) -> bool: ...


# ----------------------------------------------------------------------------- the default

def failure_kind(result: CaseResult) -> str | None:
    """How a result fails, as the default criterion compares it; None when it does not fail."""
    if result.verdict == FAIL:
        failing = [output for output in result.outputs if not output.get("passed", True)]
        if any(output.get("problem") for output in failing):
            return "wrong output shape"
        if any(output.get("nonfinite_mismatch") for output in failing):
            return "NaN/Inf mismatch"
        return "mismatch beyond tolerance"
    if result.verdict == ERROR:
        return "error: " + re.sub(r"\d+(\.\d+)?", "#", result.message)
    if result.verdict == CRASH:
        return f"crash: {result.message}"
    if result.verdict == TIMEOUT:
        return "timeout"
    return None


@dataclass(frozen=True)
class SameFailure:
    kind: str
    text: str

    @classmethod
    def of(cls, result: CaseResult) -> "SameFailure":
        kind = failure_kind(result)
        if kind is None:
            raise ReduceError(f"{result.name} does not fail ({result.verdict})")  # callers check first
        tolerances = "; ".join(f"{o['name']} atol {o['atol']:g} rtol {o['rtol']:g} ({o['tolerance_source']})"
                               for o in result.outputs if "atol" in o)
        return cls(kind, f"fails as the original does: {kind}" + (f", with {tolerances}" if tolerances else ""))

    def holds(self, result: CaseResult) -> bool:
        return failure_kind(result) == self.kind


# ----------------------------------------------------------------------------- --check

@dataclass(frozen=True)
class Clause:
    output: str | None
    name: str
    op: str
    value: float | str

    def holds(self, result: CaseResult) -> bool:
        compare = OPERATORS[self.op]
        if self.name == "verdict":
            return compare(result.verdict, self.value)
        values = [float(output[self.name]) for output in result.outputs
                  if (self.output is None or output.get("name") == self.output)
                  and isinstance(output.get(self.name), (int, float))]
        return bool(values) and compare(max(values), self.value)


@dataclass(frozen=True)
class CheckExpression:
    """Clauses in disjunctive form: the expression holds when every clause of some group does."""

    groups: tuple[tuple[Clause, ...], ...]
    text: str

    def holds(self, result: CaseResult) -> bool:
        return any(all(clause.holds(result) for clause in group) for group in self.groups)

    def outputs(self) -> set[str]:
        return {clause.output for group in self.groups for clause in group if clause.output is not None}


def parse_check(text: str) -> CheckExpression:
    """Parse a --check expression; ReduceError says what is wrong and what is expected."""
    groups = []
    for alternative in re.split(r"\s+or\s+", text.strip()):
        group = tuple(_clause(text, part) for part in re.split(r"\s+and\s+", alternative))
        groups.append(group)
    return CheckExpression(tuple(groups), f"--check {text.strip()}")


def _clause(text: str, part: str) -> Clause:
    match = _CLAUSE.match(part)
    if not part.strip():
        raise ReduceError(f"--check {text!r}: an empty comparison; write e.g. max_abs>0.1")
    if match is None:
        raise ReduceError(f"--check {text!r}: {part.strip()!r} is not METRIC OP VALUE or OUTPUT.METRIC OP VALUE "
                          f"(OP one of {' '.join(OPERATORS)}), e.g. max_abs>0.1 or Y.max_rel>=1e-2")
    output, name, op, value = match.group("output", "name", "op", "value")
    if name == "verdict":
        if output is not None or op not in ("==", "!=") or value not in VERDICTS:
            raise ReduceError(f"--check {text!r}: write verdict==VERDICT or verdict!=VERDICT, with VERDICT one of "
                              f"{', '.join(VERDICTS)}")
        return Clause(None, name, op, value)
    if name not in METRICS:
        raise ReduceError(f"--check {text!r}: unknown metric {name!r}; metrics are verdict, {', '.join(METRICS)}")
    try:
        number = float(value)
    except ValueError:
        raise ReduceError(f"--check {text!r}: {value!r} after {name}{op} is not a number") from None
    return Clause(output, name, op, number)


def check_outputs(criterion: Criterion, result: CaseResult) -> None:
    """A --check that names an output the case does not have would never hold: say so."""
    if not isinstance(criterion, CheckExpression):
        return
    names = {output.get("name") for output in result.outputs}
    unknown = sorted(criterion.outputs() - names)
    if unknown and names:
        raise ReduceError(f"{criterion.text}: the case has no output {unknown[0]}; its outputs are "
                          f"{', '.join(sorted(n for n in names if n))}")
