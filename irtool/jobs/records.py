"""The records the harness passes around and stores: cases, jobs and their results.

A :class:`SuiteCase` is one case of a suite (an op case from a grid, or an IR file), a
:class:`Job` is a case on one device at one precision, a :class:`CaseResult` is what
running a job found.  Results are stored as JSON objects (one per line in results.jsonl,
a list in results.json) with exactly the fields of :class:`CaseResult`; ``outputs``
holds one dict per model output with the fields of :class:`irtool.judge.compare.OutputDiff`
plus ``atol``, ``rtol`` and ``tolerance_source`` (non-finite floats as "inf"/"nan").
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Mapping, Sequence

from irtool.core.formats import ORACLES
from irtool.core.jsonable import plain, quoted, unplain
from irtool.runtime.core import release_label
from irtool.specs.cases import LENGTHS, LENGTHS_TYPES, SOURCES, TRANSFORMS, VALUES, OpCase

# Verdicts.  PASS/FAIL: outputs compared; UNJUDGED: ran, but no reference applies (not a
# single RNN-family op); ERROR: could not build, compile or infer (one-line message);
# CRASH: the worker died (signal or exit code, last stderr lines); TIMEOUT: the case ran
# past its time limit; SKIP: not run here (absent device, unsupported precision);
# XFAIL/XPASS: a known failure that failed again / that now passes.
PASS, FAIL, UNJUDGED, ERROR, CRASH, TIMEOUT, SKIP, XFAIL, XPASS = (
    "pass", "fail", "unjudged", "error", "crash", "timeout", "skip", "xfail", "xpass")
VERDICTS = (PASS, FAIL, UNJUDGED, ERROR, CRASH, TIMEOUT, SKIP, XFAIL, XPASS)
FAILED = frozenset({FAIL, ERROR, CRASH, TIMEOUT})  # what makes a run exit 1
NODE_SEPARATOR = "::"  # a job's result per recurrent node: case id "<case>::<node name>"
RAN_OK = frozenset({PASS, UNJUDGED, XFAIL, XPASS, SKIP})
# Which verdict speaks for a job whose model gave one result per node: the first present.
JOB_VERDICT_ORDER = (CRASH, TIMEOUT, ERROR, FAIL, XPASS, XFAIL, PASS, UNJUDGED, SKIP)
JUDGED = frozenset({PASS, FAIL, XFAIL, XPASS})  # outputs were compared with what was expected

# Exit codes of a run (``irtool harness``, the pytest plugin; ``irtool run`` means the same);
# 2, could not run, is IrtoolError.exit_code.
EXIT_PASSED, EXIT_FAILED, EXIT_NOTHING_JUDGED = 0, 1, 3


def run_verdict(counts: Mapping[str, int], regressed: bool = False) -> tuple[str, int]:
    """The word and exit code of a run from its verdict counts: FAILED (1) on any failure or a
    regression; else PASSED (0) only if something was judged; else ALL SKIPPED or NOTHING
    JUDGED (3), never 0: a run that checked nothing must not read as a pass in CI."""
    if regressed or any(counts.get(v, 0) for v in FAILED):
        return "FAILED", EXIT_FAILED
    if any(counts.get(v, 0) for v in JUDGED):
        return "PASSED", EXIT_PASSED
    ran = sum(counts.values())
    return ("ALL SKIPPED" if ran and counts.get(SKIP, 0) == ran else "NOTHING JUDGED"), EXIT_NOTHING_JUDGED


class RecordError(ValueError):
    """A stored record whose fields do not have the types irtool writes; the message names the field."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _list_of(check: Any) -> Any:
    return lambda value: isinstance(value, list) and all(check(v) for v in value)


def _list_of_type(*kinds: type) -> Any:
    """A list whose items are of these exact types (as JSON gives them): one set of types per list,
    no call per item (a results file holds millions of numbers)."""
    allowed = frozenset(kinds)
    return lambda value: isinstance(value, list) and {type(v) for v in value} <= allowed


def _optional(check: Any) -> Any:
    return lambda value: value is None or check(value)


_is_str = lambda value: isinstance(value, str)  # noqa: E731
_is_flag = lambda value: isinstance(value, bool)  # noqa: E731
_is_count = lambda value: _is_int(value) and value >= 0  # noqa: E731


def is_tolerance(value: Any) -> bool:
    """A number that can be a tolerance: finite and >= 0."""
    return _is_number(value) and 0 <= value < float("inf")


_is_tolerance = _optional(is_tolerance)
MAX_SECONDS = 1e9  # a job's time as a results file may give it (32 years): sums of 200,000 stay finite
_is_seconds = lambda value: _is_number(value) and 0 <= value <= MAX_SECONDS  # noqa: E731
CASE_FIELDS: dict[str, tuple[Any, str]] = {
    "id": (_is_str, "a string"), "suite": (_is_str, "a string"), "op": (_optional(_is_str), "a string or null"),
    "version": (_optional(_is_int), "an integer or null"),
    "attributes": (lambda v: isinstance(v, Mapping), "an object"),
    "sizes": (lambda v: isinstance(v, Mapping), "an object"), "element_type": (_is_str, "a string"),
    "weights_as_parameters": (_is_flag, "true or false"),
    "dynamic": (lambda v: isinstance(v, tuple) and all(isinstance(x, str) for x in v), "a list of strings"),
    "file": (_optional(_is_str), "a string or null"), "fill_defaults": (_is_flag, "true or false"),
    "inputs": (_optional(_is_str), "a string or null"),
    "compare_with": (_optional(lambda v: v in ORACLES), f"null or one of {', '.join(ORACLES)}"), "seed": (_is_count, "an integer >= 0"),
    "model_seed": (_is_count, "an integer >= 0"), "atol": (_is_tolerance, "a number >= 0 or null"),
    "rtol": (_is_tolerance, "a number >= 0 or null"),
    "shapes": (lambda v: isinstance(v, Mapping) and all(
        isinstance(k, str) and isinstance(d, (list, tuple)) and all(_is_count(x) for x in d) for k, d in v.items()),
        "an object of input name -> list of sizes"),
    "tolerances": (lambda v: isinstance(v, Mapping) and all(
        isinstance(k, str) and isinstance(t, (list, tuple)) and len(t) == 2 and all(_is_tolerance(x) for x in t)
        for k, t in v.items()), "an object of output name -> [atol, rtol]"),
    "frontend": (lambda v: v in ("ir", "onnx"), "ir or onnx"),
    "optional_inputs": (_optional(lambda v: isinstance(v, tuple) and all(isinstance(x, str) for x in v)),
                        "a list of strings or null"),
    "expect_impl": (_optional(_is_str), "a string or null"),
    "max_compile_s": (_optional(lambda v: _is_number(v) and v > 0), "a number > 0 or null"),
    "sources": (lambda v: isinstance(v, Mapping) and all(isinstance(k, str) and v[k] in SOURCES for k in v),
                "an object of input name -> parameter or const"),
    "lengths": (lambda v: v in LENGTHS, f"one of {', '.join(LENGTHS)}"),
    "lengths_type": (lambda v: v in LENGTHS_TYPES, f"one of {', '.join(LENGTHS_TYPES)}"),
    "values": (lambda v: v in VALUES, f"one of {', '.join(VALUES)}"),
    "transform": (lambda v: v in TRANSFORMS, f"one of {', '.join(TRANSFORMS)}"),
    "bounds": (lambda v: isinstance(v, Mapping) and all(
        isinstance(k, str) and isinstance(b, (list, tuple)) and len(b) == 2 and all(_is_count(x) for x in b)
        for k, b in v.items()), "an object of dim name -> [min, max]"),
    "infer_sizes": (lambda v: isinstance(v, tuple) and all(isinstance(m, Mapping) and all(
        isinstance(k, str) and _is_count(x) for k, x in m.items()) for m in v), "a list of objects of dim sizes"),
}
@dataclass(frozen=True)
class SuiteCase:
    """One case: an op case (``op`` set) or a model file (``file`` set: an IR file, or a
    ``[[models]]`` entry's IR or ONNX model with its input ``shapes`` and per-output ``tolerances``).

    ``attributes`` are typed values with the spec's names; ``sizes`` the free dim symbols
    (batch_size, seq_length, input_size); ``seed`` seeds the inputs (unless ``inputs`` names
    an .npz) and ``model_seed`` the Const weights, so cases that differ only by their inputs
    share one compiled model.
    """

    id: str
    suite: str
    op: str | None = None
    version: int | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    sizes: Mapping[str, int] = field(default_factory=dict)
    element_type: str = "f32"
    weights_as_parameters: bool = False
    dynamic: tuple[str, ...] = ()
    file: str | None = None
    fill_defaults: bool = False
    inputs: str | None = None  # an .npz of the model's inputs (by name); else seeded ones
    expected: str | None = None  # an .npz of the model's expected outputs (by name): judged as a result of its own
    compare_with: str | None = None  # the framework's runtime whose outputs judge the model's (a result of its own)
    seed: int = 0
    model_seed: int = 0
    atol: float | None = None
    rtol: float | None = None
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # a model's dynamic input dims
    tolerances: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # [NODE:]OUTPUT -> (atol, rtol)
    frontend: str = "ir"  # "onnx": a single-node ONNX model read by OpenVINO's ONNX frontend (jobs/frontends.py)
    optional_inputs: tuple[str, ...] | None = None  # an ONNX node's optional inputs; None: the builder's default
    expect_impl: str | None = None  # text each recurrent node's implementation must contain ("RNNSeq")
    max_compile_s: float | None = None  # seconds its compile may take
    sources: Mapping[str, str] = field(default_factory=dict)  # input port -> "parameter" or "const"
    lengths: str = "ragged"  # sequence_lengths content (irtool.specs.cases.DataKind)
    lengths_type: str = "i32"
    values: str = "unsaturated"  # data ranges (irtool.specs.cases.DataKind)
    transform: str = "none"  # done to the built model before compiling (irtool.specs.cases.TRANSFORMS)
    bounds: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # bounded dynamic dims: [min, max]
    # sizes of the dynamic dims inferred one after another on one compiled model (each judged)
    infer_sizes: tuple[Mapping[str, int], ...] = ()

    def __post_init__(self) -> None:
        for name, (check, words) in CASE_FIELDS.items():
            value = getattr(self, name)
            if not check(value):
                raise RecordError(f"case field {name!r} is {quoted(value)}; expected {words}")

    @cached_property
    def model_key(self) -> str:
        """What identifies the model (not the inputs): jobs with one key share a compiled model."""
        data = case_to_json(self)
        for name in ("id", "seed", "inputs", "expected", "compare_with", "atol", "rtol", "shapes", "tolerances", "expect_impl",
                     "max_compile_s"):
            data.pop(name)
        return repr(sorted(data.items()))


@dataclass(frozen=True)
class Job:
    case: SuiteCase
    device: str
    precision: str
    openvino: str | None = None  # the release it runs under (--openvino); None: the one irtool runs under
    replay: str | None = None  # outputs recorded elsewhere to judge in place of running it (irtool.jobs.kept)

    @property
    def key(self) -> tuple[str, str, str, str | None]:
        return (self.case.id, self.device, self.precision, self.openvino)

    @property
    def name(self) -> str:
        return job_name(*self.key)


def job_name(case_id: str, device: str, precision: str, openvino: str | None = None) -> str:
    """The one-line name of a job: ``gru-forward[seed=0] on AUTO:CPU at bf16`` (``... on openvino
    2025.4.1`` in a run of several releases)."""
    return f"{case_id} on {device} at {precision}" + (f" on openvino {openvino}" if openvino else "")


@dataclass
class CaseResult:
    case: str
    suite: str
    device: str
    precision: str
    verdict: str
    op: str | None = None  # "GRUSequence-5"; None for a file that is not one RNN-family op
    file: str | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    shapes: Mapping[str, list[int]] = field(default_factory=dict)  # model input name -> shape run
    element_type: str | None = None
    seed: int = 0
    effective_precision: Mapping[str, str] = field(default_factory=dict)  # execution device -> precision
    execution_devices: list[str] = field(default_factory=list)
    message: str = ""  # why: error/crash/timeout/skip line, xfail reason, or the failing outputs
    stderr: list[str] = field(default_factory=list)  # last stderr lines of a crashed or hung worker
    outputs: list[dict[str, Any]] = field(default_factory=list)
    max_abs: float | None = None  # the largest max_abs over the outputs
    time: float = 0.0  # seconds for the whole job in the worker (build/read, compile, infer, compare)
    compile_time: float = 0.0
    infer_time: float = 0.0
    implementations: Mapping[str, str] = field(default_factory=dict)  # node -> what the device ran for it
    node: str | None = None  # the recurrent node judged, where the job's model has several (case is CASE::NODE)
    reproducer: str | None = None  # folder, relative to the report dir
    unwritten: str | None = None  # what could not be written beside the verdict (its reproducer), and why
    issue: str | None = None  # the known-failure entry's link, for xfail/xpass
    openvino: str | None = None  # the release axis of a run with --openvino (part of the key); else None
    openvino_version: str | None = None  # what the worker's openvino said it is (get_version())
    # A known-failures entry that matched (irtool.harness.expectations.apply): its reason, and the
    # verdict and message the job found before the entry was applied (None: no entry applied)
    known: str | None = None
    raw_verdict: str | None = None
    raw_message: str | None = None
    # node -> what decided its implementation (irtool.jobs.conditions: shapes, sequence_lengths, weights)
    conditions: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    host: str | None = None  # the worker that ran it, in a run on a cluster (irtool worker --name); stored only then
    replayed: str | None = None  # judged from outputs recorded elsewhere (irtool report rejudge): from where; stored only then
    sized: Mapping[str, str] = field(default_factory=dict)  # input -> how irtool sized its dynamic dims; stored only then

    @property
    def key(self) -> tuple[str, str, str, str | None]:
        return (self.case, self.device, self.precision, self.openvino)

    @property
    def release(self) -> str:
        """The release that produced it: its release axis, else what its worker's openvino said it
        is; "" for a job that reached no worker in a run of one release."""
        return self.openvino or release_label(self.openvino_version or "")

    @property
    def job_key(self) -> tuple[str, str, str, str | None]:
        """The key of the job that made this result (a model's job makes one result per node)."""
        case = self.case[:-len(NODE_SEPARATOR + self.node)] if self.node else self.case
        return (case, self.device, self.precision, self.openvino)

    @property
    def name(self) -> str:
        return job_name(*self.key)


def speaking_result(results: Sequence["CaseResult"]) -> "CaseResult":
    """The result that speaks for a job: the first by JOB_VERDICT_ORDER (a failing node's)."""
    return min(results, key=lambda r: JOB_VERDICT_ORDER.index(r.verdict) if r.verdict in JOB_VERDICT_ORDER
               else len(JOB_VERDICT_ORDER))


def op_case(case: SuiteCase) -> OpCase:
    """The OpCase that builds a grid case's model (weights seeded by ``model_seed``)."""
    return OpCase(case.op or "", dict(case.attributes), dict(case.sizes), case.version, case.element_type,
                  case.model_seed, case.weights_as_parameters, tuple(case.dynamic), dict(case.sources),
                  case.lengths, case.lengths_type, case.values, dict(case.bounds), case.transform)


def case_to_json(case: SuiteCase) -> dict[str, Any]:
    return plain(case)


def case_from_json(data: Mapping[str, Any]) -> SuiteCase:
    """A stored case; RecordError names a field that is unknown or of the wrong type."""
    data = dict(unplain(dict(data)))
    unknown = sorted(set(data) - {f.name for f in dataclasses.fields(SuiteCase)})
    if unknown:
        raise RecordError(f"unknown case field {unknown[0]!r}")
    if "id" not in data or "suite" not in data:
        raise RecordError("a case needs 'id' and 'suite'")
    dynamic = data.get("dynamic", ())
    data["dynamic"] = tuple(dynamic) if isinstance(dynamic, list) else dynamic
    if isinstance(data.get("optional_inputs"), list):
        data["optional_inputs"] = tuple(data["optional_inputs"])
    if isinstance(data.get("infer_sizes"), list):
        data["infer_sizes"] = tuple(data["infer_sizes"])
    return SuiteCase(**data)


def result_to_json(result: CaseResult) -> dict[str, Any]:
    data = plain(result)
    for name in ("host", "replayed", "sized"):  # a run on one machine, of its own device, stores what it always stored
        if not data[name]:
            del data[name]
    return data


# The type of each stored field, as (check, words for the message).  Every reader of results
# (reports, diff, merge, resume) relies on these, so a file is checked once when it is read.
RESULT_FIELDS: dict[str, tuple[Any, str]] = {
    "case": (_is_str, "a string"), "suite": (_is_str, "a string"), "device": (_is_str, "a string"),
    "precision": (_is_str, "a string"), "op": (_optional(_is_str), "a string or null"),
    "file": (_optional(_is_str), "a string or null"), "attributes": (lambda v: isinstance(v, dict), "an object"),
    "shapes": (lambda v: isinstance(v, dict) and all(_list_of_type(int)(s) for s in v.values()),
               "an object of integer lists"),
    "element_type": (_optional(_is_str), "a string or null"), "seed": (_is_int, "an integer"),
    "effective_precision": (lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
                            "an object of strings"),
    "execution_devices": (_list_of_type(str), "a list of strings"), "message": (_is_str, "a string"),
    "stderr": (_list_of_type(str), "a list of strings"), "outputs": (_list_of(lambda v: isinstance(v, dict)),
                                                                    "a list of objects"),
    "max_abs": (_optional(_is_number), "a number or null"),
    **{name: (_is_seconds, f"a number of seconds from 0 to {MAX_SECONDS:.0e}")
       for name in ("time", "compile_time", "infer_time")},
    "reproducer": (_optional(_is_str), "a string or null"), "unwritten": (_optional(_is_str), "a string or null"),
    "issue": (_optional(_is_str), "a string or null"),
    "implementations": (lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
                        "an object of strings"),
    "openvino": (_optional(_is_str), "a string or null"), "openvino_version": (_optional(_is_str), "a string or null"),
    "host": (_optional(_is_str), "a string or null"), "replayed": (_optional(_is_str), "a string or null"),
    "sized": (lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()), "an object of strings"),
    "known": (_optional(_is_str), "a string or null"), "raw_message": (_optional(_is_str), "a string or null"),
    "raw_verdict": (_optional(lambda v: v in VERDICTS), f"null or one of {', '.join(VERDICTS)}"),
    "conditions": (lambda v: isinstance(v, dict) and all(
        isinstance(c, dict) and all(isinstance(x, str) and isinstance(y, str) for x, y in c.items())
        for c in v.values()), "an object of node -> object of strings"),
}
REQUIRED_FIELDS = ("case", "suite", "device", "precision", "verdict")
_NUMBER_OR_NULL = (_optional(_is_number), "a number or null")
# The fields of a stored output (irtool.judge.compare.OutputDiff, flattened) that reports read.
OUTPUT_FIELDS: dict[str, tuple[Any, str]] = {
    "name": (_is_str, "a string"), "shape": (_list_of_type(int), "a list of integers"),
    "passed": (lambda v: isinstance(v, bool), "true or false"), "problem": (_optional(_is_str), "a string or null"),
    "worst_index": (_optional(_list_of_type(int)), "a list of integers or null"),
    "step_max_abs": (_optional(_list_of_type(int, float)), "a list of numbers or null"),
    "tolerance_source": (_optional(_is_str), "a string or null"),
    **{name: _NUMBER_OR_NULL for name in ("max_abs", "max_rel", "mean_abs", "worst_actual", "worst_expected",
                                          "needed_atol", "needed_rtol", "atol", "rtol")},
    **{name: (_is_int, "an integer") for name in ("outside", "total", "actual_nan", "actual_inf", "expected_nan",
                                                   "expected_inf", "nonfinite_mismatch")},
}


def check_result_json(data: Any, nonfinite: bool = True) -> dict[str, Any]:
    """The stored result with non-finite numbers back as floats; RecordError naming the first
    field that is missing or of the wrong type, or a verdict irtool does not know."""
    if not isinstance(data, dict):
        raise RecordError(f"a result is a JSON object, not {quoted(data)}")
    data = unplain(dict(data)) if nonfinite else dict(data)
    missing = [name for name in REQUIRED_FIELDS if name not in data]
    if missing:
        raise RecordError(f"a result without {', '.join(missing)}")
    if data["verdict"] not in VERDICTS:
        raise RecordError(f"unknown verdict {quoted(data['verdict'])}; verdicts are {', '.join(VERDICTS)}")
    for name, (check, words) in RESULT_FIELDS.items():
        if name in data and not check(data[name]):
            raise RecordError(f"field {name!r} is {quoted(data[name])}; expected {words}")
    for index, output in enumerate(data.get("outputs", ())):
        for name, (check, words) in OUTPUT_FIELDS.items():
            if name in output and not check(output[name]):
                raise RecordError(f"outputs[{index}].{name} is {quoted(output[name])}; expected {words}")
    if "outputs" in data:  # one string per field name, not one per output read (most of a result's memory)
        data["outputs"] = [{sys.intern(k): v for k, v in output.items()} for output in data["outputs"]]
    for name in _SHARED_VALUES:
        if type(data.get(name)) is str:
            data[name] = sys.intern(data[name])
    return data


# The fields whose few values recur in every result of a run: held once however many results are read.
_SHARED_VALUES = ("suite", "device", "precision", "verdict", "op", "element_type", "openvino", "openvino_version")


_RESULT_NAMES = frozenset(f.name for f in dataclasses.fields(CaseResult))


def result_from_json(data: Mapping[str, Any], nonfinite: bool = True) -> CaseResult:
    """A stored result, checked (:func:`check_result_json`); unknown fields (from a newer irtool)
    are dropped, missing optional ones default.  ``nonfinite=False`` says the record holds no
    "inf", "-inf" or "nan" string (its reader saw none in its text): nothing to turn back."""
    return CaseResult(**{k: v for k, v in check_result_json(data, nonfinite).items() if k in _RESULT_NAMES})
