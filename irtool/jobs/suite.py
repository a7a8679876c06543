"""Suites: TOML files (read with the standard library) that list the cases to run.

    [suite]
    name = "smoke"                      # default: the file's stem
    description = "..."
    timeout = 60                        # seconds per case (default 120; at most a week)
    expected_failures = "smoke.xfail.toml"   # optional, relative to the suite file
    expect_coverage = ["RNNSeq", "GRUSequence:TensorIterator"]   # implementations the run must reach
    max_cases = 100000                  # refuse a suite that expands to more (default 50000)

    [[grid]]                            # op cases: the product of every list given
    id = "gru-seq"
    op = "GRUSequence"                  # or "GRUSequence-5"; default: the newest version
    attributes = { hidden_size = [1, 16], direction = ["forward", "bidirectional"],
                   activations = [["sigmoid", "tanh"], ["relu", "tanh"]] }
    sizes = { batch_size = [1, 3], seq_length = 5, input_size = 8 }
    weights = ["const", "parameter"]    # where W, R, B come from (default "const")
    sources = { W = "parameter", sequence_lengths = ["parameter", "const"] }  # any input's source,
                                        # overriding weights (default: data, states and lengths are
                                        # Parameters, weights as `weights` says)
    lengths = ["ragged", "full", "zero", "random"]   # sequence_lengths content (default "ragged";
                                        # "random": each in [0, seq_length], zeros allowed)
    lengths_type = ["i32", "i64"]       # sequence_lengths element type (default "i32")
    transform = ["none", "sequence_to_ti"]   # OpenVINO's ConvertSequenceToTensorIterator before compiling
    values = ["unsaturated", "saturating"]   # data ranges (default "unsaturated": weights in
                                        # +-1/sqrt(hidden_size), data in [-1, 1); "saturating": every
                                        # float input in [0, 10), as OpenVINO's own tests draw them)
    dynamic = [[], ["batch_size"]]      # dims the model leaves dynamic (default none)
    bounds = { batch_size = [1, 15] }   # dynamic dims with bounds (min..max), as a model declares them
    infer_sizes = [{ batch_size = 1 }, { batch_size = 7 }]   # sizes of the dynamic dims, inferred in
                                        # order on one compiled model, each judged (default: sizes)
    element_type = "f32"                # or "f16"
    seeds = [0, 1]                      # input seeds (default [0])
    model_seed = 0                      # seed of the Const weights (default 0)
    atol = 1e-4                         # optional tolerance overrides for these cases
    rtol = 1e-3

    [[files]]                           # IR files, hand-written or not
    id = "valid"                        # default: the folder name
    paths = ["../ir/valid/*.xml"]       # globs, relative to the suite file
    fill_defaults = false
    seeds = [0]

    [[models]]                          # a real model: every recurrent node in it is judged
    id = "lstm2"                        # default: the file's stem
    path = "../models/lstm2_bidirectional.xml"   # IR .xml (any converter) or .onnx, relative
    inputs = "lstm2-inputs.npz"         # optional: inputs by model input name (else seeded)
    expected = "lstm2-outputs.npz"      # optional: the model's expected outputs by name (the framework's)
    # compare_with = "onnxruntime"      # optional: its framework's runtime judges its outputs (onnxruntime,
                                        # tflite, tensorflow or paddle: the one that reads its format)
    shapes = { x = [4, 2, 5] }          # optional: sizes of dynamic input dims (else from the nodes)
    seeds = [0]
    tolerances = { "LSTMSequence_54:Y" = [1e-4, 1e-3] }  # optional [atol, rtol] per [NODE:]OUTPUT

Each recurrent node of a ``[[models]]`` model (or of any file that is not one op fed by its
inputs) is
one result of its own, with the case id ``<case>::<node name>``, and one testcase in
junit.xml; a failing node gets a reproducer of its own (a single-op IR of the node with
the inputs the device gave it), which ``irtool reduce`` takes.  With ``expected``, the model's
outputs against those values are one more result, ``<case>::outputs``: the whole model judged,
whether or not it holds a recurrent node; with ``compare_with``, against the runtime's outputs,
``<case>::<runtime>`` (``<case>::tflite``).

A list is one axis of the grid, except for a value that is a list itself (an
``activations`` list, ``dynamic``): there, a list of lists is the axis.  A case's id is
``<id>[<axis>=<value>,...,seed=<n>]`` with every axis written as a list in the file, so
ids stay the same from run to run and a known-failures pattern can name them.

The number of cases is counted from the lists' lengths before any case is made: a suite
over its limit (``max_cases``, or ``--max-cases`` on the command line) is refused at once,
whatever its size, with the count and the way to raise the limit.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from irtool.core.documents import load_toml
from irtool.core.errors import IrtoolError, did_you_mean
from irtool.core.files import read_text
from irtool.core.formats import formats_text, model_format
from irtool.core.jsonable import quoted
from irtool.core.text import undecodable_escaped
from irtool.jobs.frontends import FRONTENDS, ONNX_OPS, latest_opset, onnx_model
from irtool.jobs.records import SuiteCase, op_case
from irtool.specs import get_spec
from irtool.specs.cases import LENGTHS, LENGTHS_TYPES, SOURCES, TRANSFORMS, VALUES, CaseError, case_ports
from irtool.specs.values import format_value

DEFAULT_TIMEOUT = 120.0
MAX_SECONDS = 7 * 24 * 3600.0  # a timeout beyond a week is a mistake (and 1e300 overflows the clock)
DEFAULT_MAX_CASES = 50_000  # about 100 MB of cases; raise it with max_cases or --max-cases
SUITE_TABLES = ("suite", "grid", "files", "models")
SUITE_KEYS = frozenset({"name", "description", "timeout", "expected_failures", "max_cases", "expect_coverage"})
GRID_KEYS = frozenset({"id", "op", "attributes", "sizes", "weights", "dynamic", "element_type", "seeds",
                       "model_seed", "atol", "rtol", "frontend", "opset", "inputs", "expect_impl", "max_compile_s",
                       "sources", "lengths", "lengths_type", "values", "bounds", "infer_sizes",
                       "transform"})
DATA_AXES = ("lengths", "lengths_type", "values", "transform")  # grid keys of an op case's data, each a string or a list
FILES_KEYS = frozenset({"id", "paths", "fill_defaults", "seeds", "atol", "rtol", "expect_impl", "max_compile_s"})
MODELS_KEYS = frozenset({"id", "path", "inputs", "expected", "compare_with", "shapes", "seeds", "atol", "rtol", "tolerances"})
WEIGHTS = {"const": False, "parameter": True}
LIST_TYPES = frozenset({"string_list", "float_list", "int_list", "shape"})


class SuiteError(IrtoolError):
    """A suite file that cannot be read or names a case that cannot be made."""


@dataclass(frozen=True)
class Suite:
    name: str
    path: Path
    description: str
    timeout: float
    expected_failures: Path | None
    cases: tuple[SuiteCase, ...]
    digest: str  # sha256 of the file's text: what --resume compares
    expect_coverage: tuple[str, ...] = ()  # implementations a run must reach (irtool.harness.coverage)


def load_suite(path: str | Path, max_cases: int | None = None) -> Suite:
    """Read and expand a suite; SuiteError names the file, the table and what is wrong.

    ``max_cases`` (the command line's) overrides the suite's own limit on its case count.
    """
    path = Path(path)
    text = read_text(path, "suite file")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    try:
        data = load_toml(text)
    except tomllib.TOMLDecodeError as error:
        raise SuiteError(f"{path}: not valid TOML: {error}") from None
    unknown = sorted(set(data) - set(SUITE_TABLES))
    if unknown:
        raise SuiteError(f"{path}: unknown table [{unknown[0]}]{did_you_mean(unknown[0], SUITE_TABLES)}; "
                         f"a suite has [suite], [[grid]], [[files]] and "
                         f"[[models]]")
    head = _table(path, "[suite]", data.get("suite", {}), SUITE_KEYS)
    name = _text(path, head, "name", path.stem)
    description = _text(path, head, "description", "")
    xfail = _text(path, head, "expected_failures", "")
    coverage = head.get("expect_coverage", [])
    if not isinstance(coverage, list) or not all(isinstance(item, str) for item in coverage):
        raise SuiteError(f"{path}: [suite] expect_coverage is {quoted(coverage)}; expected a list of implementations "
                         f"such as [\"RNNSeq\", \"GRUSequence:TensorIterator\"]")
    timeout = check_seconds(head.get("timeout", DEFAULT_TIMEOUT), f"{path}: [suite] timeout", SuiteError)
    limit = max_cases if max_cases is not None else _count_limit(path, head.get("max_cases", DEFAULT_MAX_CASES))
    grids = [(f"[[grid]] {grid.get('id', index + 1)!r}", grid) for index, grid in enumerate(_tables(path, data, "grid"))]
    files = [(f"[[files]] {table.get('id', index + 1)!r}", table)
             for index, table in enumerate(_tables(path, data, "files"))]
    count = sum(_grid_count(path, where, _table(path, where, grid, GRID_KEYS)) for where, grid in grids)
    if count > limit:
        raise SuiteError(f"{path}: its grids make {count:,} cases, more than the limit of {limit:,}; make the grids "
                         f"smaller, or raise the limit with max_cases in [suite] or --max-cases")
    cases: list[SuiteCase] = []
    for where, grid in grids:
        cases.extend(_grid_cases(path, where, name, grid))
    models = [(f"[[models]] {table.get('id', index + 1)!r}", table)
              for index, table in enumerate(_tables(path, data, "models"))]
    for where, table in files + models:
        keys = FILES_KEYS if where.startswith("[[files]]") else MODELS_KEYS
        make = _file_cases if keys is FILES_KEYS else _model_cases
        cases.extend(make(path, where, name, _table(path, where, table, keys)))
        if len(cases) > limit:
            raise SuiteError(f"{path}: more than the limit of {limit:,} cases; raise it with max_cases in [suite] "
                             f"or --max-cases")
    if not cases:
        raise SuiteError(f"{path}: the suite has no cases; add a [[grid]], [[files]] or [[models]] table")
    _check_unique(path, cases)
    return Suite(name, path, description, timeout, (path.parent / xfail) if xfail else None, tuple(cases), digest,
                 tuple(coverage))


def _text(path: Path, head: Mapping[str, Any], key: str, default: str) -> str:
    value = head.get(key, default)
    if not isinstance(value, str):
        raise SuiteError(f"{path}: [suite] {key} is {quoted(value)}; expected a string")
    return value


def _count_limit(path: Path, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SuiteError(f"{path}: [suite] max_cases is {quoted(value)}; expected an integer >= 1")
    return value


def check_seconds(value: Any, what: str, error: type[Exception] = ValueError) -> float:
    """A number of seconds that a deadline can use: finite, > 0 and at most a week (NaN, inf
    and 1e300 are refused: NaN never expires, the others overflow the clock)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_SECONDS:
        said = f"{what} is {quoted(value)}" if what else quoted(value)
        raise error(f"{said}; expected a number of seconds > 0 and at most {MAX_SECONDS:g} (a week)")
    return float(value)


def _tables(path: Path, data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    tables = data.get(key, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise SuiteError(f"{path}: {key} must be an array of tables, written [[{key}]]")
    return tables


def _table(path: Path, where: str, table: Any, keys: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(table, dict):
        raise SuiteError(f"{path}: {where} must be a table")
    unknown = sorted(set(table) - keys)
    if unknown:
        raise SuiteError(f"{path}: {where}: unknown key {unknown[0]!r}{did_you_mean(unknown[0], keys)}; "
                         f"expected one of {', '.join(sorted(keys))}")
    return table


# ----------------------------------------------------------------------------- grids

@dataclass(frozen=True)
class _Axis:
    """One field of a grid: its values, and whether the file gave it as an axis (a list)."""

    name: str
    values: tuple[Any, ...]
    listed: bool


def _axis(name: str, value: Any, value_is_list: bool) -> _Axis:
    """A list is an axis; for a field whose value is a list, a list of lists is."""
    if value_is_list:
        if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
            return _Axis(name, tuple(value), True)
        return _Axis(name, (value,), False)
    if isinstance(value, list):
        return _Axis(name, tuple(value), True)
    return _Axis(name, (value,), False)


def _grid_count(path: Path, where: str, grid: Mapping[str, Any]) -> int:
    """How many cases a grid makes: the product of its axes' lengths, nothing made."""
    _, axes, seeds = _grid_axes(path, where, grid)
    return math.prod(len(axis.values) for axis in axes) * len(seeds)


def _grid_axes(path: Path, where: str, grid: Mapping[str, Any]) -> tuple[Any, list[_Axis], list[int]]:
    op_text = grid.get("op")
    if not isinstance(op_text, str):
        raise SuiteError(f"{path}: {where}: 'op' is required, e.g. op = \"GRUSequence\"")
    op, version = _op_name(op_text)
    if op in ONNX_OPS:
        return _onnx_grid_axes(path, where, op, grid)
    for key in ("opset", "inputs"):
        if key in grid:
            raise SuiteError(f"{path}: {where}: {key!r} is for grids of an ONNX op (op = \"GRU\", \"LSTM\" or \"RNN\")")
    try:
        spec = get_spec(op, version)
    except KeyError as error:
        raise SuiteError(f"{path}: {where}: {error.args[0]}") from None
    attributes = _mapping(path, where, grid, "attributes")
    unknown = sorted(set(attributes) - set(spec.attributes))
    if unknown:
        raise SuiteError(f"{path}: {where}: {spec.key} has no attribute {unknown[0]!r}"
                         f"{did_you_mean(unknown[0], spec.attributes)}; "
                         f"it has {', '.join(spec.attributes)}")
    axes = [_axis(f"attributes.{name}", value, spec.attributes[name].type in LIST_TYPES)
            for name, value in attributes.items()]
    axes += [_axis(f"sizes.{name}", value, False) for name, value in _mapping(path, where, grid, "sizes").items()]
    sources = _mapping(path, where, grid, "sources")
    ports = [port.name for port in case_ports(spec)]
    unknown = sorted(set(sources) - set(ports))
    if unknown:
        raise SuiteError(f"{path}: {where}: sources: {spec.key} has no input {unknown[0]!r} that a case feeds; "
                         f"its inputs are {', '.join(ports)}")
    axes += [_axis(f"sources.{name}", value, False) for name, value in sources.items()]
    axes += [_axis(f"bounds.{name}", value, True) for name, value in _mapping(path, where, grid, "bounds").items()]
    if "infer_sizes" in grid:
        axes.append(_infer_sizes_axis(path, where, grid["infer_sizes"]))
    axes += [_axis(name, grid[name], name == "dynamic") for name in ("weights", "dynamic", "element_type", "frontend",
                                                                      *DATA_AXES) if name in grid]
    return spec, axes, _seeds(path, where, grid)


@dataclass(frozen=True)
class _OnnxOp:
    type: str
    version: None = None  # each case's opset is its version


def _onnx_grid_axes(path: Path, where: str, op: str, grid: Mapping[str, Any]) -> tuple[Any, list[_Axis], list[int]]:
    """A grid of an ONNX op: ONNX attributes (checked per opset when the cases are made), an
    ``opset`` axis (default: the op's newest), ``inputs`` (the optional inputs the node takes)."""
    from irtool.onnx import schema

    if grid.get("frontend", "onnx") not in ("onnx", ["onnx"]):
        raise SuiteError(f"{path}: {where}: {op} is an ONNX op; its frontend is onnx")
    known = {name for version in schema.versions(op) for name in schema.get(op, version).attributes}
    attributes = _mapping(path, where, grid, "attributes")
    unknown = sorted(set(attributes) - known)
    if unknown:
        raise SuiteError(f"{path}: {where}: {op} has no attribute {unknown[0]!r}{did_you_mean(unknown[0], known)}; "
                         f"it has {', '.join(sorted(known))}")
    for key in ("sources", "bounds", "infer_sizes", *DATA_AXES):
        if key in grid:
            raise SuiteError(f"{path}: {where}: {key!r} is for grids of an OpenVINO op (op = \"GRUSequence\" ...); "
                             f"an ONNX op's grid takes weights and inputs")
    lists = {"activations", "activation_alpha", "activation_beta"}
    axes = [_axis("opset", grid.get("opset", latest_opset(op)), False)]
    axes += [_axis(f"attributes.{name}", value, name in lists) for name, value in attributes.items()]
    axes += [_axis(f"sizes.{name}", value, False) for name, value in _mapping(path, where, grid, "sizes").items()]
    axes += [_axis(name, grid[name], name in ("dynamic", "inputs")) for name in ("weights", "dynamic", "element_type",
                                                                                   "inputs") if name in grid]
    return _OnnxOp(op), axes, _seeds(path, where, grid)


def _grid_cases(path: Path, where: str, suite: str, grid: Mapping[str, Any]) -> Iterator[SuiteCase]:
    spec, axes, seeds = _grid_axes(path, where, grid)
    base_id = _case_id_base(path, where, grid, spec.type)
    for point in _product(axes):
        for seed in seeds:
            yield _grid_case(path, base_id, suite, spec.type, spec.version, point, axes, seed, grid)


def _infer_sizes_axis(path: Path, where: str, value: Any) -> _Axis:
    """``infer_sizes``: a list of size tables (one case), or a list of such lists (an axis)."""
    def sizes_list(item: Any) -> bool:
        return isinstance(item, list) and bool(item) and all(
            isinstance(sizes, dict) and sizes and all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                                       for v in sizes.values()) for sizes in item)

    if sizes_list(value):
        return _Axis("infer_sizes", (value,), False)
    if isinstance(value, list) and value and all(sizes_list(item) for item in value):
        return _Axis("infer_sizes", tuple(value), True)
    raise SuiteError(f"{path}: {where}: infer_sizes is {quoted(value)}; expected a list of tables of dim sizes, e.g. "
                     f"infer_sizes = [{{ batch_size = 1 }}, {{ batch_size = 7 }}]")


def _op_name(text: str) -> tuple[str, int | None]:
    """``GRUSequence-5`` -> ("GRUSequence", 5); a version is 1 to 9 ASCII digits (int() takes any
    Unicode digit, and refuses 4,300 of them), else the whole text is the name."""
    name, sep, version = text.rpartition("-")
    if sep and _VERSION.fullmatch(version):
        return name, int(version)
    return text, None


_VERSION = re.compile(r"[0-9]{1,9}", re.ASCII)


def _mapping(path: Path, where: str, grid: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = grid.get(key, {})
    if not isinstance(value, dict):
        raise SuiteError(f"{path}: {where}: {key!r} must be a table, e.g. {key} = {{ name = value }}")
    return value


def _seeds(path: Path, where: str, table: Mapping[str, Any]) -> list[int]:
    seeds = table.get("seeds", [0])
    seeds = seeds if isinstance(seeds, list) else [seeds]
    if not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise SuiteError(f"{path}: {where}: seeds is {table.get('seeds')!r}; expected a list of integers >= 0")
    return seeds


def _case_id_base(path: Path, where: str, table: Mapping[str, Any], fallback: str) -> str:
    base = table.get("id", fallback)
    if not isinstance(base, str) or not base or any(c in base for c in "[]/ ") or "::" in base:
        raise SuiteError(f"{path}: {where}: id {base!r} must be a non-empty name without '[', ']', '/', '::' or "
                         f"spaces")
    return base


def _product(axes: list[_Axis]) -> Iterator[dict[str, Any]]:
    for values in itertools.product(*(axis.values for axis in axes)):
        yield dict(zip((axis.name for axis in axes), values))


def _id_value(value: Any) -> str:
    if isinstance(value, dict):  # a table of dim sizes (infer_sizes): 1x7
        return "x".join(_id_value(v) for v in value.values())
    if isinstance(value, list):
        return "+".join(_id_value(v) for v in value) or "none"
    return format_value(value)


def _grid_case(path: Path, base_id: str, suite: str, op: str, version: int, point: Mapping[str, Any],
               axes: list[_Axis], seed: int, grid: Mapping[str, Any]) -> SuiteCase:
    labels = [f"{axis.name.rpartition('.')[2]}={_id_value(point[axis.name])}" for axis in axes if axis.listed]
    case_id = f"{base_id}[{','.join(labels + [f'seed={seed}'])}]"
    attributes = {k.partition(".")[2]: v for k, v in point.items() if k.startswith("attributes.")}
    sizes = {k.partition(".")[2]: v for k, v in point.items() if k.startswith("sizes.")}
    weights = point.get("weights", "const")
    if not isinstance(weights, str) or weights not in WEIGHTS:
        raise SuiteError(f"{path}: case {case_id}: weights is {quoted(weights)}{did_you_mean(weights, WEIGHTS)}; "
                         f"expected const or parameter")
    element_type = point.get("element_type", "f32")
    if not isinstance(element_type, str):
        raise SuiteError(f"{path}: case {case_id}: element_type is {quoted(element_type)}; expected a string")
    dynamic = point.get("dynamic", [])
    if not isinstance(dynamic, list) or not all(isinstance(d, str) for d in dynamic):
        raise SuiteError(f"{path}: case {case_id}: dynamic is {dynamic!r}; expected a list of dim names")
    frontend = point.get("frontend", "onnx" if op in ONNX_OPS else "ir")
    if frontend not in FRONTENDS:
        raise SuiteError(f"{path}: case {case_id}: frontend is {quoted(frontend)}{did_you_mean(frontend, FRONTENDS)}; "
                         f"expected one of {', '.join(FRONTENDS)}")
    data = {key: point.get(key, default) for key, default in (("lengths", "ragged"), ("lengths_type", "i32"),
                                                                ("values", "unsaturated"), ("transform", "none"))}
    for key, value in data.items():
        allowed = {"lengths": LENGTHS, "lengths_type": tuple(LENGTHS_TYPES), "values": VALUES,
                   "transform": TRANSFORMS}[key]
        if value not in allowed:
            raise SuiteError(f"{path}: case {case_id}: {key} is {quoted(value)}; expected one of {', '.join(allowed)}")
    bounds = {k.partition(".")[2]: tuple(v) for k, v in point.items() if k.startswith("bounds.")}
    infer_sizes = tuple(point.get("infer_sizes", ()))
    unbound = sorted({name for sizes in infer_sizes for name in sizes} - set(dynamic) - set(bounds))
    if unbound:
        free = list(get_spec(op, point.get("opset", version)).free_symbols) if op not in ONNX_OPS else []
        if unbound[0] not in free:
            raise SuiteError(f"{path}: case {case_id}: infer_sizes names {', '.join(unbound)}, not a dim of the op"
                             f"{did_you_mean(unbound[0], free)}; its dims: {', '.join(free)}")
        raise SuiteError(f"{path}: case {case_id}: infer_sizes names {', '.join(unbound)}, not a dynamic dim of the "
                         f"case; make it dynamic (dynamic = [{', '.join(repr(n) for n in unbound)}]) or bounded")
    sources = {k.partition(".")[2]: v for k, v in point.items() if k.startswith("sources.")}
    for port, source in sources.items():
        if source not in SOURCES:
            raise SuiteError(f"{path}: case {case_id}: the source of {port} is {quoted(source)}; expected "
                             f"parameter or const")
    inputs = point.get("inputs")
    if inputs is not None and not (isinstance(inputs, list) and all(isinstance(i, str) for i in inputs)):
        raise SuiteError(f"{path}: case {case_id}: inputs is {inputs!r}; expected a list of ONNX input names")
    case = SuiteCase(id=case_id, suite=suite, op=op, version=point.get("opset", version), attributes=attributes,
                     sizes=sizes, element_type=element_type, weights_as_parameters=WEIGHTS[weights],
                     dynamic=tuple(dynamic), seed=seed, model_seed=_int(path, case_id, grid, "model_seed"),
                     atol=_tolerance(path, case_id, grid, "atol"), rtol=_tolerance(path, case_id, grid, "rtol"),
                     frontend=frontend, optional_inputs=tuple(inputs) if inputs is not None else None,
                     sources=sources, bounds=bounds, infer_sizes=infer_sizes, **data,
                     **_expectations(path, case_id, grid))
    try:
        if frontend == "onnx":
            onnx_model(case, case.model_seed)  # checks the node, its inputs and sizes as its cases will build it
        else:
            checked = op_case(case)
            checked.symbols  # noqa: B018 - checks attributes, sizes and dynamic dims now
            for sizes in case.infer_sizes:  # each within the bounds, and a valid case of the op
                dataclasses.replace(checked, sizes={**checked.sizes, **sizes}).symbols  # noqa: B018
    except CaseError as error:
        raise SuiteError(f"{path}: case {case_id}: {error.message}") from None
    except ValueError as error:  # the ONNX node's attributes (irtool.onnx.model.ModelError) or op
        raise SuiteError(f"{path}: case {case_id}: {error}") from None
    return case


def _int(path: Path, case_id: str, table: Mapping[str, Any], key: str) -> int:
    value = table.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise SuiteError(f"{path}: case {case_id}: {key} is {value!r}; expected an integer >= 0")
    return value


def _expectations(path: Path, case_id: str, table: Mapping[str, Any]) -> dict[str, Any]:
    """``expect_impl`` (text every recurrent node's implementation must contain, e.g. "RNNSeq") and
    ``max_compile_s`` (seconds a compile may take): a job that breaks one fails."""
    found: dict[str, Any] = {}
    impl = table.get("expect_impl")
    if impl is not None:
        if not isinstance(impl, str) or not impl.strip():
            raise SuiteError(f"{path}: case {case_id}: expect_impl is {quoted(impl)}; expected a non-empty string "
                             "such as \"RNNSeq\"")
        found["expect_impl"] = impl
    limit = table.get("max_compile_s")
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 < limit <= MAX_SECONDS:
            raise SuiteError(f"{path}: case {case_id}: max_compile_s is {quoted(limit)}; expected seconds > 0 and at "
                             f"most {MAX_SECONDS:g}")
        found["max_compile_s"] = float(limit)
    return found


def _tolerance(path: Path, case_id: str, table: Mapping[str, Any], key: str) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        raise SuiteError(f"{path}: case {case_id}: {key} is {value!r}; expected a finite number >= 0")
    return float(value)


# ----------------------------------------------------------------------------- files

def _file_cases(path: Path, where: str, suite: str, table: Mapping[str, Any]) -> list[SuiteCase]:
    patterns = table.get("paths")
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) for p in patterns):
        raise SuiteError(f"{path}: {where}: 'paths' is required: a list of globs, e.g. paths = [\"ir/*.xml\"]")
    matched: dict[Path, None] = {}  # in order, each once (a dict: linear in the number of files)
    for pattern in patterns:
        found = sorted(expand_glob(path.parent, pattern))
        if not found:
            raise SuiteError(f"{path}: {where}: {pattern!r} matches no file (relative to {path.parent})")
        matched.update(dict.fromkeys(found))
    files = list(matched)
    fill = table.get("fill_defaults", False)
    if not isinstance(fill, bool):
        raise SuiteError(f"{path}: {where}: fill_defaults is {fill!r}; expected true or false")
    prefix = _case_id_base(path, where, table, files[0].parent.name or "file")
    cases = []
    for file in files:
        for seed in _seeds(path, where, table):
            case_id = undecodable_escaped(f"{prefix}:{file.stem}[seed={seed}]")  # an id, not a path: strict text
            cases.append(SuiteCase(id=case_id, suite=suite, file=str(file.resolve()), fill_defaults=fill, seed=seed,
                                   atol=_tolerance(path, case_id, table, "atol"),
                                   rtol=_tolerance(path, case_id, table, "rtol"),
                                   **_expectations(path, case_id, table)))
    return cases


def expand_glob(base: Path, pattern: str) -> list[Path]:
    """The files ``pattern`` (relative to ``base``, or absolute) matches, as glob.glob(recursive=True)
    finds them, except that ``**`` never descends into a symlinked folder: two symlinks to ``.``
    would make it walk forever.  Names starting with a dot match only where the pattern spells the
    dot, as with glob."""
    anchor = Path(pattern).anchor
    root, rest = (Path(anchor), Path(pattern).relative_to(anchor)) if anchor else (base, Path(pattern))
    if not rest.parts:
        return [root] if root.exists() else []
    literal = set(rest.parts)
    dotted = any(part.startswith(".") and part not in (".", "..") for part in rest.parts)  # ".*.xml"
    found = []
    for match in root.glob(str(rest)):  # pathlib's ** does not follow symlinks
        parts = match.relative_to(root).parts
        if not dotted and any(part.startswith(".") and part not in literal for part in parts):
            continue
        found.append(match)
    return found


def _model_cases(path: Path, where: str, suite: str, table: Mapping[str, Any]) -> list[SuiteCase]:
    """A [[models]] entry's cases, one per seed (or one with its inputs file)."""
    given = table.get("path")
    if not isinstance(given, str) or not given:
        raise SuiteError(f"{path}: {where}: 'path' is required: the model file, e.g. path = \"models/lstm.xml\"")
    model = (path.parent / given).resolve()
    if not model.exists():
        raise SuiteError(f"{path}: {where}: {given!r} is no model file (relative to {path.parent})")
    if model_format(model) is None or not (model.is_file() or model.is_dir()):
        raise SuiteError(f"{path}: {where}: {given!r} is not a model OpenVINO reads: {formats_text()}")
    inputs, expected = (_npz_entry(path, where, table, key) for key in ("inputs", "expected"))
    oracle = table.get("compare_with")
    if oracle is not None and (not isinstance(oracle, str) or oracle != model_format(model).oracle):
        theirs = model_format(model).oracle
        raise SuiteError(f"{path}: {where}: compare_with is {quoted(oracle)}; expected "
                         + (f"{theirs!r}, the runtime that reads {model_format(model).label} models" if theirs else
                            f"none: no runtime of irtool's reads {model_format(model).label} models"))
    shapes = _mapping(path, where, table, "shapes")
    for name, dims in shapes.items():
        if not (isinstance(dims, list) and dims and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                         for d in dims)):
            raise SuiteError(f"{path}: {where}: shapes.{name} is {dims!r}; expected a list of sizes, e.g. [2, 5, 8]")
    tolerances = _mapping(path, where, table, "tolerances")
    for name, pair in tolerances.items():
        if not (isinstance(pair, list) and len(pair) == 2 and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < float("inf") for v in pair)):
            raise SuiteError(f"{path}: {where}: tolerances.{name} is {pair!r}; expected [atol, rtol], two finite "
                             f"numbers >= 0")
    base = undecodable_escaped(_case_id_base(path, where, table, model.stem))  # an id, not a path: strict text
    seeds = [0] if inputs is not None else _seeds(path, where, table)
    cases = []
    for seed in seeds:
        case_id = f"{base}[inputs]" if inputs is not None else f"{base}[seed={seed}]"
        cases.append(SuiteCase(id=case_id, suite=suite, file=str(model), inputs=inputs, expected=expected,
                               compare_with=oracle, seed=seed,
                               shapes={name: tuple(dims) for name, dims in shapes.items()},
                               tolerances={name: (float(a), float(r)) for name, (a, r) in tolerances.items()},
                               atol=_tolerance(path, case_id, table, "atol"),
                               rtol=_tolerance(path, case_id, table, "rtol")))
    return cases


def _npz_entry(path: Path, where: str, table: Mapping[str, Any], key: str) -> str | None:
    """A [[models]] entry's .npz (``inputs``, ``expected``), relative to the suite file, as an absolute path."""
    given = table.get(key)
    if given is None:
        return None
    if not isinstance(given, str) or not (path.parent / given).is_file():
        raise SuiteError(f"{path}: {where}: {key} {given!r} is no .npz file (relative to {path.parent})")
    return str((path.parent / given).resolve())


def _check_unique(path: Path, cases: list[SuiteCase]) -> None:
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise SuiteError(f"{path}: two cases have the id {case.id}; give their tables different ids")
        seen.add(case.id)
