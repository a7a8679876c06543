"""Fuzzing what a user hands the harness, report and reduce: suite TOML, results.jsonl lines,
a reproducer's case.json and .npz inputs.

Each property: the input is read (and, where it reads, used: reports rendered, a diff made)
or refused with an IrtoolError whose message is one line naming the file; nothing else
escapes, and the CLI on the same input exits with a documented code (0 or 2) and never
says "internal error" or prints a traceback.  Time is bounded by construction: every
input is small (a few lists of at most 4 items, a few lines, a few KiB), and the suite
loader is capped at 200 cases.
"""
from __future__ import annotations

import io
import json
import math
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
from conftest_harness import output, sample_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irtool.cli.program import main
from irtool.core.errors import IrtoolError
from irtool.core.npz import read_npz
from irtool.harness.baseline import diff_runs
from irtool.harness.report_files import write_reports
from irtool.harness.store import read_jsonl
from irtool.jobs.records import result_to_json
from irtool.jobs.suite import load_suite
from irtool.reduce import load_origin

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _one_line_naming(error: IrtoolError, path: Path) -> None:
    assert "\n" not in error.message and str(path.name) in error.message, error.message
    assert "internal error" not in error.message and "Traceback" not in error.message


def read_or_refuse(folder: str, name: str, data: str | bytes, read: Callable[[Path], Any]) -> Any:
    """``read`` of a file holding ``data``: its value, or None when it was refused in one line naming the file."""
    path = Path(folder) / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    try:
        return read(path)
    except IrtoolError as error:
        _one_line_naming(error, path)
        return None


def _cli(capsys, *argv: str) -> int:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err, err
    return code


# ----------------------------------------------------------------------------- TOML values

scalars = st.one_of(st.integers(-3, 70), st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1),
                    st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                    st.sampled_from(["forward", "reverse", "bidirectional", "sigmoid", "tanh", "relu", "const",
                                     "parameter", "f32", "f16", "batch_size", "", "x[y]", "é"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.sampled_from(["a", "hidden_size", "b"]),
                                                                       inner, max_size=2)), max_leaves=6)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"


SUITE_KEYS = ["name", "description", "timeout", "expected_failures", "max_cases", "colour"]
GRID_KEYS = ["id", "op", "weights", "dynamic", "element_type", "seeds", "model_seed", "atol", "rtol"]
ATTRIBUTES = ["hidden_size", "direction", "clip", "activations", "linear_before_reset", "activations_alpha"]
SIZES = ["batch_size", "seq_length", "input_size", "hidden"]


@st.composite
def suites(draw) -> str:
    lines = ["[suite]"]
    for key in draw(st.lists(st.sampled_from(SUITE_KEYS), unique=True, max_size=3)):
        lines.append(f"{key} = {toml_value(draw(values))}")
    for _ in range(draw(st.integers(0, 2))):
        lines.append("[[grid]]")
        lines.append(f"op = {toml_value(draw(st.sampled_from(['GRUSequence', 'RNNCell', 'LSTMCell-4', 'Nope', 5])))}")
        for key in draw(st.lists(st.sampled_from(GRID_KEYS[2:]), unique=True, max_size=3)):
            lines.append(f"{key} = {toml_value(draw(values))}")
        attributes = draw(st.dictionaries(st.sampled_from(ATTRIBUTES), values, max_size=3))
        attributes.setdefault("hidden_size", draw(st.one_of(st.integers(1, 3), values)))
        lines.append(f"attributes = {toml_value(attributes)}")
        if draw(st.booleans()):
            lines.append(f"sizes = {toml_value(draw(st.dictionaries(st.sampled_from(SIZES), values, max_size=2)))}")
    if draw(st.booleans()):
        lines += ["[[files]]", f"paths = {toml_value(draw(st.one_of(values, st.just(['*.xml']))))}"]
    return "\n".join(lines) + "\n"


@FUZZ
@given(suites())
def test_any_suite_is_read_or_refused_in_one_line(text):
    with tempfile.TemporaryDirectory() as folder:
        suite = read_or_refuse(folder, "suite.toml", text, lambda path: load_suite(path, max_cases=200))
        assert suite is None or 0 < len(suite.cases) <= 200


# ----------------------------------------------------------------------------- results.jsonl

json_values = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False)
                           | st.text(max_size=6) | st.sampled_from(["inf", "nan", "pass", "fail", "running"]),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                        max_size=3),
                           max_leaves=8)
RESULT = result_to_json(sample_run().results[2])  # a failure with two outputs: every field is used
HEADER = {"run": dict(sample_run().meta)}


@st.composite
def result_lines(draw) -> str:
    """A stored result with fields replaced, dropped or added, or any JSON at all."""
    kind = draw(st.sampled_from(["mutated", "mutated-output", "any"]))
    if kind == "any":
        return json.dumps(draw(json_values))
    record = json.loads(json.dumps(RESULT))
    if kind == "mutated-output":
        record["outputs"] = [dict(output())]
        field = draw(st.sampled_from(sorted(record["outputs"][0])))
        record["outputs"][0][field] = draw(json_values)
    else:
        field = draw(st.sampled_from(sorted(record)))
        if draw(st.booleans()):
            record[field] = draw(json_values)
        else:
            del record[field]
    return json.dumps(record)


@st.composite
def jsonl_files(draw) -> str:
    header = json.dumps(HEADER) if draw(st.booleans()) else json.dumps({"run": draw(json_values)})
    lines = [header] + draw(st.lists(result_lines(), min_size=1, max_size=3))
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


@FUZZ
@given(jsonl_files())
def test_any_results_file_is_read_and_rendered_or_refused(text):
    with tempfile.TemporaryDirectory() as folder:
        run = read_or_refuse(folder, "results.jsonl", text, read_jsonl)
        if run is not None:
            write_reports(Path(folder) / "out", run)  # what reading accepts, every report can show
            diff_runs(run, run)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jsonl_files())
def test_report_commands_exit_0_2_or_3(capsys, text):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "results.jsonl"
        path.write_text(text)
        assert _cli(capsys, "report", "render", str(path), "-o", str(Path(folder) / "out")) in (0, 2)
        # 3: the file holds no result (an unterminated last line is dropped), so nothing was compared
        assert _cli(capsys, "report", "diff", str(path), str(path)) in (0, 2, 3)


# ----------------------------------------------------------------------------- case.json

CASE_JSON = {"case": {"id": "cell[seed=0]", "suite": "s", "op": "RNNCell", "version": 0, "seed": 0},
             "device": "CPU", "precision": "f32", "config": {"NUM_STREAMS": "1"},
             "tolerances": {"Ho": [1e-5, 1e-4]}, "result": None}


@st.composite
def case_jsons(draw) -> str:
    record = json.loads(json.dumps(CASE_JSON))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["top", "case", "tolerances"]))
        target = record if where == "top" or not isinstance(record.get(where), dict) else record[where]
        key = draw(st.sampled_from(sorted(target) + ["extra"]))
        if draw(st.booleans()):
            target[key] = draw(json_values)
        else:
            target.pop(key, None)
    return json.dumps(record) if draw(st.integers(0, 9)) else json.dumps(draw(json_values))


@FUZZ
@given(case_jsons())
def test_any_case_json_is_read_or_refused_in_one_line(text):
    with tempfile.TemporaryDirectory() as folder:
        repro = Path(folder)
        for name in ("model.xml", "inputs.npz"):
            (repro / name).write_bytes(b"")  # load_origin reads case.json only
        read_or_refuse(folder, "case.json", text, lambda path: load_origin(str(path.parent)))


# ----------------------------------------------------------------------------- .npz

def _valid_npz() -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, X=np.arange(12, dtype=np.float32).reshape(3, 4), lengths=np.array([4, 2], np.int32))
    return buffer.getvalue()


VALID_NPZ = _valid_npz()


@st.composite
def npz_bytes(draw) -> bytes:
    """A valid .npz with bytes flipped, cut or inserted; or a zip of arbitrary members."""
    kind = draw(st.sampled_from(["flipped", "cut", "members"]))
    if kind == "members":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name in draw(st.lists(st.sampled_from(["X.npy", "Y.npy", "x.txt", "d/"]), max_size=3, unique=True)):
                header = draw(st.sampled_from([b"\x93NUMPY\x01\x00", b"\x93NUMPY\x02\x00", b"\x93NUMPY\x03\x00",
                                               b""]))
                archive.writestr(name, header + draw(st.binary(max_size=200)))
        return buffer.getvalue()
    data = bytearray(VALID_NPZ)
    if kind == "cut":
        return bytes(data[:draw(st.integers(0, len(data)))])
    for _ in range(draw(st.integers(1, 8))):
        data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


@FUZZ
@given(npz_bytes())
def test_any_npz_is_read_or_refused_in_one_line(data):
    with tempfile.TemporaryDirectory() as folder:
        arrays = read_or_refuse(folder, "inputs.npz", data, lambda path: read_npz(path, limit=1 << 20))
        assert arrays is None or all(isinstance(a, np.ndarray) and a.nbytes <= 1 << 20 for a in arrays.values())


def test_bare_infinity_or_nan_in_a_results_file_is_refused(tmp_path):
    """Found by the fuzz suite above: Python reads JavaScript's Infinity, strict JSON cannot write it back."""
    import subprocess
    import sys

    for text in ('{"run": {"": Infinity}}\n', '{"run": {"x": NaN}}\n'):
        path = tmp_path / "results.jsonl"
        path.write_text(text)
        done = subprocess.run([sys.executable, "-m", "irtool", "report", "render", str(path), "-o", str(tmp_path / "r")],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "Traceback" not in done.stderr and "internal error" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "results.jsonl:1" in done.stderr
