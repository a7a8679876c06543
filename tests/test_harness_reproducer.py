"""Reproducer folders: a real GRUSequence on CPU, reproduce.py run as a user would run it."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from irtool.jobs.records import SuiteCase, case_from_json, case_to_json
from irtool.judge.nodes import evaluate_node
from irtool.pipeline.build import build_model
from irtool.pipeline.inputs import seeded_inputs
from irtool.pipeline.prepare import prepare
from irtool.pipeline.reproducer import reproduce_script, write_reproducer
from irtool.runtime.captured import input_arrays
from irtool.runtime.compile import compile_on, infer
from irtool.specs.cases import OpCase

ATTRIBUTES = {"hidden_size": 4, "direction": "forward"}
SIZES = {"batch_size": 2, "seq_length": 3, "input_size": 5}
TOLERANCES = {"Y": (1e-5, 1e-4), "Ho": (1e-5, 1e-4)}
HOSTILE = 'gru"""\'\nimport os; os.system("echo pwned") #'


@pytest.fixture(scope="module")
def job():
    """The model, its inputs, the reference outputs and the CPU f32 outputs."""
    model = build_model(OpCase("GRUSequence", ATTRIBUTES, SIZES))
    node = prepare(model, "gru").single
    inputs = seeded_inputs(model, seed=0)
    arrays = input_arrays(node, inputs)
    expected = dict(zip(TOLERANCES, evaluate_node(node, arrays)))
    compiled, _ = compile_on(model, "CPU", "f32", {}, Path("gru.xml"))
    actual = dict(zip(TOLERANCES, infer(compiled, inputs, "CPU")))
    case = SuiteCase(id="gru-forward[seed=0]", suite="smoke", op="GRUSequence", version=5, attributes=ATTRIBUTES,
                     sizes=SIZES)
    return model, inputs, expected, actual, case


def _write(folder: Path, job, expected, **options) -> Path:
    model, inputs, _, actual, case = job
    arguments = dict(model=model, inputs=inputs, expected=expected, actual=actual, device="CPU", precision="f32",
                     config={"NUM_STREAMS": "1"}, tolerances=TOLERANCES, case=case_to_json(case),
                     result={"verdict": "fail", "max_abs": float("inf")})
    return write_reproducer(folder, **{**arguments, **options})


def _reproduce(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "reproduce.py", *args], cwd=folder, capture_output=True, text=True,
                          timeout=120)


def _perturbed(expected: dict) -> dict:
    return {name: array + (0.01 if name == "Ho" else 0.0) for name, array in expected.items()}


@pytest.mark.parametrize("make_expected, args, code, says", [
    (lambda e: e, (), 0, ["Y [2, 1, 3, 4]: PASS", "Ho [2, 1, 4]: PASS", "all outputs within tolerance"]),
    (_perturbed, (), 1, ["Y [2, 1, 3, 4]: PASS", "Ho [2, 1, 4]: FAIL", "outside 8/8", "MISMATCH in Ho"]),
    (lambda e: None, (), 0, ["Y: [2, 1, 3, 4] float32", "Ho: [2, 1, 4] float32", "no expected.npz"]),
    (lambda e: e, ("--device", "HETERO:CPU"), 0,
     ["gru-forward[seed=0] on HETERO:CPU at f32 (recorded on CPU): OpenVINO", "all outputs within tolerance"]),
], ids=["reference", "perturbed", "no-expected", "device-override"])
def test_reproduce_script(tmp_path, job, make_expected, args, code, says):
    folder = _write(tmp_path / "repro", job, make_expected(job[2]))
    done = _reproduce(folder, *args)
    assert done.returncode == code, done.stdout + done.stderr
    for text in says:
        assert text in done.stdout
    assert "'INFERENCE_PRECISION_HINT': 'f32', 'NUM_STREAMS': '1'" in done.stdout
    assert done.stdout.startswith(f"gru-forward[seed=0] on {args[1] if args else 'CPU'} at f32")


@pytest.mark.parametrize("device", ["GPU.7", "NOSUCH"])
def test_reproduce_on_an_absent_device_says_so_in_one_line_and_exits_2(tmp_path, job, device):
    """Exit 1 means "reproduced a mismatch": a device that is not here must not say that."""
    done = _reproduce(_write(tmp_path / "repro", job, job[2]), "--device", device)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"reproduce.py: error: cannot run on {device}: ") and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_folder_contents(tmp_path, job):
    folder = _write(tmp_path / "repro", job, job[2])
    assert sorted(p.name for p in folder.iterdir()) == [
        "actual.npz", "case.json", "expected.npz", "inputs.npz", "model.bin", "model.xml", "reproduce.py"]
    with np.load(folder / "inputs.npz") as inputs:
        assert inputs.files == ["X", "initial_hidden_state", "sequence_lengths"]
        np.testing.assert_array_equal(inputs["X"], job[1]["X"])
    with np.load(folder / "actual.npz") as actual:
        assert actual.files == ["Y", "Ho"]
    record = json.loads((folder / "case.json").read_text())
    assert case_from_json(record["case"]) == job[4]
    assert record["tolerances"] == {"Y": [1e-5, 1e-4], "Ho": [1e-5, 1e-4]}
    assert (record["device"], record["precision"], record["config"]) == ("CPU", "f32", {"NUM_STREAMS": "1"})
    assert record["result"] == {"verdict": "fail", "max_abs": "inf"}


def test_rewrite_replaces_the_old_folder_whole(tmp_path, job):
    _write(tmp_path / "repro", job, job[2])
    folder = _write(tmp_path / "repro", job, None, actual=None)  # a crash: nothing to compare
    assert not (folder / "expected.npz").exists() and not (folder / "actual.npz").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["repro"]  # no temporary folder left behind


def test_script_imports_only_openvino_numpy_and_the_standard_library(tmp_path, job):
    tree = ast.parse((_write(tmp_path / "repro", job, None) / "reproduce.py").read_text())
    modules = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}
    modules |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert {"openvino", "numpy"} <= modules
    assert modules - {"openvino", "numpy"} <= sys.stdlib_module_names


def test_values_enter_the_script_only_as_string_literals():
    script = reproduce_script({"id": HOSTILE}, HOSTILE, "f32", {HOSTILE: HOSTILE}, {HOSTILE: (1e-5, float("inf"))})
    tree = ast.parse(script)
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            call = node.value
            if ast.unparse(call.func) == "json.loads":
                (argument,) = call.args
                assert isinstance(argument, ast.Constant)
                values[node.targets[0].id] = json.loads(argument.value)
    import openvino

    assert values == {"MODEL_FILE": "model.xml", "CASE": HOSTILE, "DEVICE": HOSTILE, "PRECISION": "f32", "OPENVINO": openvino.get_version(),
                      "CONFIG": {HOSTILE: HOSTILE}, "TOLERANCES": [[HOSTILE, 1e-5, float("inf")]]}
    plain = ast.parse(reproduce_script({"id": "x"}, "CPU", "f32", {}, {"Y": (1e-5, 1e-4)}))
    assert ast.dump(tree).count("Call(") == ast.dump(plain).count("Call(")  # no statement added
    assert [type(node) for node in tree.body] == [type(node) for node in plain.body]
