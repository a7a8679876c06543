"""Judging at the precision a node ran at (irtool.judge.precision, schemas/precision.json): the
precision model's paths, a recurrence that amplifies named with the step from which no reference
can judge it, a model whose weights are stored as f16 judged against its framework's float32
outputs, and the mechanism that judges a node against the emulation of its path.  Runs on any CPU;
tests/test_precision_device.py holds what needs a CPU with bf16."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main
from irtool.judge.compare import Tolerance, compare_output
from irtool.judge.precision import emulation
from irtool.reference.rounding import Rounding
from irtool.specs.precision import PRECISION_FILE, cell_kernel_takes, path_for, precision_paths

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "samples" / "models"


def test_every_path_of_the_precision_model_is_a_rounding_and_says_where_it_comes_from():
    paths = precision_paths()
    assert len({p.id for p in paths}) == len(paths) >= 5
    for path in paths:
        assert not Rounding(**path.round).exact, path.id
        assert path.source and path.says and path.accumulate == "f32"
    assert json.loads(PRECISION_FILE.read_text())["paths"][0]["id"] == paths[0].id


@pytest.mark.parametrize("device, kinds, precision, split, cell_kernel, expected", [
    ("CPU", ("RNNSeq",), "bf16", False, True, "cpu-native-bf16"),
    ("CPU", ("RNNSeq",), "bf16", True, True, "cpu-native-split-bf16"),
    ("CPU", ("Reshape", "TensorIterator"), "bf16", False, True, "cpu-loop-kernel-bf16"),
    ("CPU", ("Reshape", "TensorIterator"), "bf16", False, False, "cpu-loop-decomposed-bf16"),
    ("CPU", ("Subgraph",), "bf16", False, False, "cpu-decomposed-bf16"),
    ("CPU", ("RNNCell",), "f16", False, True, "cpu-native-f16"),
    ("CPU", ("Subgraph",), "f16", False, False, "cpu-decomposed-f16"),
    ("GPU.0", ("lstm_seq",), "f16", False, True, "gpu-f16"),
    ("HETERO:CPU", ("RNNSeq",), "bf16", False, True, "cpu-native-bf16"),
    ("CPU", ("RNNSeq",), "f32", False, True, None),
    ("NPU", ("RNNSeq",), "f16", False, True, None),
])
def test_a_node_takes_the_path_of_what_it_ran(device, kinds, precision, split, cell_kernel, expected):
    path = path_for(device, kinds, precision, split, cell_kernel)
    assert (path.id if path else None) == expected


@pytest.mark.parametrize("op, attributes, takes", [
    ("GRUSequence", {"activations": ["sigmoid", "tanh"], "clip": 0.0}, True),
    ("GRUCell", {"clip": 1.0}, False),
    ("LSTMSequence", {"activations": ["sigmoid", "tanh", "relu"]}, False),
    ("LSTMCell", {}, True),
    ("RNNSequence", {"activations": ["relu"]}, True),
    ("RNNCell", {"activations": ["tanh"], "activations_alpha": [0.5]}, False),
])
def test_the_cell_kernel_takes_constant_weights_no_clip_and_its_own_activations(op, attributes, takes):
    assert cell_kernel_takes(op, attributes) is takes
    assert not cell_kernel_takes(op, attributes, constant_weights=False)  # W, R or B computed: decomposed


def test_the_native_bf16_path_rounds_the_weights_as_openvino_converts_them():
    found = emulation("CPU", ("RNNSeq",), "bf16")
    assert found.rounding.weights == "bf16-openvino" and found.rounding.state == "bf16"
    assert found.rounding.bias is None and found.rounding.cell_state is None  # f32 in oneDNN's bf16 RNN
    assert found.unit == 2.0 ** -8 and "cpu-native-bf16 (measured)" in found.describe()
    assert emulation("CPU", ("RNNSeq",), "f16").unit == 2.0 ** -11
    decomposed = emulation("CPU", ("Subgraph",), "bf16", cell_kernel=False).rounding
    assert decomposed.weights == "bf16" and decomposed.products == "bf16" and decomposed.state is None


def test_an_overflow_is_counted_apart_from_a_mismatch():
    expected = np.array([1.0, 7.0e4, -9.0e4, 7.0e4], np.float32)
    actual = np.array([1.0, np.inf, -np.inf, -np.inf], np.float32)
    diff = compare_output("Y", actual, expected, Tolerance(1e-3, 1e-3), range_limit=65504.0)
    assert diff.overflow == 2 and diff.nonfinite_mismatch == 1 and not diff.passed  # -inf for 7e4 is wrong
    fine = compare_output("Y", actual[:3], expected[:3], Tolerance(1e-3, 1e-3), range_limit=65504.0)
    assert fine.passed and fine.overflow == 2
    assert not compare_output("Y", actual[:3], expected[:3], Tolerance(1e-3, 1e-3)).passed  # no range: a mismatch


AMPLIFYING = (MODELS / "amplifying_rnn.xml", MODELS / "amplifying_rnn.npz")  # samples/make_models.py


def test_a_recurrence_that_amplifies_is_judged_up_to_the_step_it_can_be_and_says_so(capsys):
    """An RNNSequence with R = 1.5 x an orthogonal matrix and tanh, 1000 steps: a change of its state
    grows step after step until tanh bounds it; f32 rounding alone parts device and reference."""
    model, inputs = AMPLIFYING
    code = main(["run", str(model), "-d", "CPU", "--precision", "f32", "--inputs", str(inputs), "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    (node,) = result["nodes"]
    assert code == 0 and node["verdict"] == "pass"
    (note,) = node["notes"]
    step = int(note.split("-fold by step ")[1].split(":")[0])
    assert 10 < step < 500 and f"so {step} of 1000 steps were judged" in note
    y, ho = node["outputs"]
    assert y["unjudged"] == 2 * 64 * (1000 - step) and ho["unjudged"] == ho["total"]
    # the device and the reference part where the note says: far apart after the step, close before it
    steps = y["step_max_abs"]
    assert max(steps[:step // 2]) < 1e-4
    main(["run", str(model), "-d", "CPU", "--precision", "f32", "--inputs", str(inputs)])
    text = capsys.readouterr().out
    assert "Ho [2, 1, 64] NOT JUDGED" in text and f"so {step} of 1000 steps were judged" in text
    assert text.strip().splitlines()[-1].startswith("PASS: 1 of 1 outputs within tolerance at the steps that can be")


def test_a_fault_at_the_steps_that_can_be_judged_still_fails(capsys):
    """The same recurrence held to no tolerance fails at its first steps: the bound widens only where
    rounding reaches it, and a tolerance the user sets is not widened."""
    model, inputs = AMPLIFYING
    code = main(["run", str(model), "-d", "CPU", "--precision", "f32", "--inputs", str(inputs), "--atol", "0",
                 "--rtol", "0", "--format", "json"])
    (node,) = json.loads(capsys.readouterr().out)["nodes"]
    assert code == 1 and node["verdict"] == "fail" and node["outputs"][0]["first_step_outside"] < 20


def test_weights_stored_as_f16_are_said_and_the_framework_outputs_judged_with_what_they_cost(capsys):
    """samples/models/lstm_f16w.xml (converted with compress_to_fp16) against onnxruntime's float32
    outputs of the model it came from: the f16 weights move the outputs past f32's tolerance."""
    model = MODELS / "lstm_f16w.xml"
    code = main(["run", str(model), "-d", "CPU", "--precision", "f32", "--inputs", str(MODELS / "lstm_f16w.inputs.npz"),
                 "--expected", str(MODELS / "lstm_f16w.expected.npz"), "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["verdict"] == "pass"
    assert result["nodes"][0]["weights"] == "W, R, B stored as f16 (decompressed by a Convert)"
    expected = result["expected"]
    assert "stored as f16" in expected["bound"]
    head = next(o for o in expected["outputs"] if o["name"] == "z")
    assert head["tolerance"]["source"].startswith("f16 default, plus 3 x "), head["tolerance"]
    assert "what moving the weights within their rounding moved it by" in head["tolerance"]["source"]
    off = abs(head["worst_actual"] - head["worst_expected"])
    assert off > 1e-5 + 1e-4 * abs(head["worst_expected"]), "f32's tolerance alone would fail it"


@pytest.mark.parametrize("kinds, split, cell_kernel, f16_model, linear_before_reset, expected", [
    (("RNNCell",), False, True, True, False, "cpu-native-f16-model-bf16"),
    (("RNNSeq",), True, True, True, False, "cpu-native-split-f16-model-bf16"),
    (("TensorIterator",), False, True, True, False, "cpu-loop-kernel-f16-model-bf16"),
    (("TensorIterator",), False, False, False, True, "cpu-loop-decomposed-lbr-bf16"),
    (("TensorIterator",), False, True, False, True, "cpu-loop-kernel-bf16"),
    (("Subgraph",), False, False, True, True, "cpu-decomposed-bf16"),
])
def test_an_f16_model_and_a_gru_with_linear_before_reset_take_their_own_paths(kinds, split, cell_kernel, f16_model,
                                                                             linear_before_reset, expected):
    path = path_for("CPU", kinds, "bf16", split, cell_kernel, False, f16_model, linear_before_reset)
    assert path.id == expected
    rounds = dict(path.round)
    assert (rounds.get("cell_output") == "f16") is ("f16-model" in expected)
    assert ("reset_gate_sum" in rounds) is (expected == "cpu-loop-decomposed-bf16")


def cancelling_model(folder: Path) -> tuple[Path, Path, Path]:
    """y = x·A - x·B, B within 0.1% of A (weights of magnitude 10, 256 of them per output): the
    difference is small, the products large, so rounding A and B to f16 (ov.save_model's default
    compress_to_fp16) moves y by some 0.05, past f16's tolerance of y (0.003), though OpenVINO computes
    the IR it was given right.  onnx.helper, converted by ov.convert_model; returns the IR, the inputs
    and onnxruntime's outputs of the f32 ONNX model."""
    import onnx
    import onnxruntime
    import openvino as ov
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    a = rng.uniform(5, 15, (256, 4)).astype(np.float32)
    b = (a * (1 + rng.uniform(-1e-3, 1e-3, a.shape))).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "A"], ["xa"]), helper.make_node("MatMul", ["x", "B"], ["xb"]),
             helper.make_node("Sub", ["xa", "xb"], ["y"])]
    graph = helper.make_graph(nodes, "cancelling", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 256])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
                              [numpy_helper.from_array(a, "A"), numpy_helper.from_array(b, "B")])
    onnx_path, xml = folder / "cancelling.onnx", folder / "cancelling.xml"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), onnx_path)
    ov.save_model(ov.convert_model(str(onnx_path)), xml)  # compress_to_fp16 by default
    x = rng.standard_normal((2, 256)).astype(np.float32)
    (y,) = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.savez(folder / "in.npz", x=x)
    np.savez(folder / "out.npz", y=y)
    return xml, folder / "in.npz", folder / "out.npz"


def test_what_rounding_the_weights_to_f16_costs_is_measured_not_assumed(capsys, tmp_path):
    """A model whose f16 weights move its output past f16's tolerance passes against its framework's
    f32 outputs: each output is allowed 3 times what moving the weights within their f16 rounding moved
    it by (copies compiled and run); the same outputs 0.5 off still fail."""
    xml, inputs, expected = cancelling_model(tmp_path)
    code = main(["run", str(xml), "-d", "CPU", "--inputs", str(inputs), "--expected", str(expected), "--format",
                 "json"])
    result = json.loads(capsys.readouterr().out)
    (y,) = result["expected"]["outputs"]
    assert y["max_abs"] > 0.01, y  # past f16's tolerance: f16 alone would fail it
    assert code == 0 and result["verdict"] == "pass", y
    assert "3 times what moving the weights within their f16 rounding" in result["expected"]["bound"]
    assert 0.01 < y["tolerance"]["atol"] < 1, y["tolerance"]
    off = dict(np.load(expected))
    off["y"] = off["y"] + np.float32(0.5)
    np.savez(tmp_path / "off.npz", **off)
    code = main(["run", str(xml), "-d", "CPU", "--inputs", str(inputs), "--expected", str(tmp_path / "off.npz")])
    assert code == 1, capsys.readouterr().out


def stored_as_bf16(onnx_path: Path, folder: Path) -> Path:
    """The model ``onnx_path`` converted, each f32 weight of more than one value stored as bf16 behind a
    Convert, as a framework's bf16 weights reach OpenVINO (openvino's opset API rounds them), saved uncompressed."""
    import openvino as ov
    from openvino import opset13 as ops

    model = ov.convert_model(str(onnx_path))
    for op in model.get_ordered_ops():
        if op.get_type_name() == "Constant" and op.get_output_element_type(0) == ov.Type.f32 and op.get_data().size > 1:
            stored = ops.convert(ops.constant(op.get_data(), ov.Type.bf16), ov.Type.f32)
            for target in op.output(0).get_target_inputs():
                target.replace_source_output(stored.output(0))
    out = folder / "bf16w.xml"
    ov.save_model(model, out, compress_to_fp16=False)
    return out


def test_what_rounding_the_weights_to_bf16_costs_is_measured_too(capsys, tmp_path):
    """The same model with its weights stored as bf16: against the framework's f32 outputs it is
    judged with bf16's tolerance plus what moving the weights within their bf16 rounding costs, which
    its output needs; the output moved by four times that allowance fails."""
    _, inputs, expected = cancelling_model(tmp_path)
    xml = stored_as_bf16(tmp_path / "cancelling.onnx", tmp_path)
    code = main(["run", str(xml), "-d", "CPU", "--precision", "f32", "--inputs", str(inputs), "--expected",
                 str(expected), "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    (y,) = result["expected"]["outputs"]
    assert "stored as bf16" in result["expected"]["bound"]
    source = y["tolerance"]["source"]
    assert source.startswith("bf16 default") and "plus 3 x " in source and "moving the weights" in source, source
    cost = float(re.search(r"plus 3 x ([0-9.e+-]+)", source).group(1))
    assert y["max_abs"] > y["tolerance"]["atol"] - 3 * cost + 0.01 * abs(y["worst_expected"]), y  # bf16's alone: fail
    assert code == 0 and result["verdict"] == "pass", y
    off = dict(np.load(expected))
    off["y"] = off["y"] + np.float32(4 * y["tolerance"]["atol"] + 1)
    np.savez(tmp_path / "off.npz", **off)
    code = main(["run", str(xml), "-d", "CPU", "--precision", "f32", "--inputs", str(inputs), "--expected",
                 str(tmp_path / "off.npz")])
    assert code == 1, capsys.readouterr().out


def test_the_harness_measures_what_rounding_the_weights_costs_as_run_does(tmp_path):
    """The same model as a suite's [[models]] entry with its expected outputs: its outputs' result
    passes, allowed what rounding the weights costs (the harness's workers go through the same stage)."""
    from irtool.harness.session import HarnessOptions, run_harness

    xml, inputs, expected = cancelling_model(tmp_path)
    suite = tmp_path / "s.toml"
    suite.write_text(f'[[models]]\nid = "cancelling"\npath = "{xml}"\ninputs = "{inputs}"\nexpected = "{expected}"\n')
    run = run_harness(HarnessOptions(suites=[suite], report_dir=tmp_path / "out")).run
    (result,) = [r for r in run.results if r.case.endswith("::outputs")]
    assert result.verdict == "pass", result.message
    (y,) = result.outputs
    assert "what moving the weights within their rounding moved it by" in y["tolerance_source"], y


RECORDED_CASE = ROOT / "tests" / "data" / "recordings" / "cpu-bf16-avx512-openvino-2026.4.1" / "single-op" / "cases"


@pytest.mark.parametrize("planted, outside", [("all", {"Y": 1280, "Ho": 128, "Co": 128}), ("one", {"Y": 1})])
def test_a_nan_the_device_gave_is_never_agreed_with_by_a_step_judged_from_it(planted, outside, capsys, tmp_path):
    """Each step of a sequence is judged from the device's own previous state: where that state is NaN,
    the emulation gives NaN too, and NaN agreed with NaN (Ho and Co of an all-NaN output PASSed, and a
    right Ho FAILed against a NaN).  A NaN carried in from the device's states is no value the model
    computes: the run from the node's inputs alone is expected there."""
    case = "069_lstm_sequence"  # LSTMSequence, (4, 10, 16, 32), forward, native: what the bf16 device gave
    recorded = dict(np.load(RECORDED_CASE / f"{case}.outputs-bf16.npz"))
    if planted == "all":
        recorded.update({key: np.full_like(recorded[key], np.nan) for key in ("Y", "Ho", "Co")})
    else:
        recorded["Y"][0, 0, 3, 5] = np.nan
    np.savez(tmp_path / "outputs.npz", **recorded)
    code = main(["run", str(RECORDED_CASE / f"{case}.xml"), "-d", "CPU", "--precision", "bf16", "--inputs",
                 str(RECORDED_CASE / f"{case}.inputs.npz"), "--device-outputs", str(tmp_path / "outputs.npz"),
                 "--format", "json"])
    [node] = json.loads(capsys.readouterr().out)["nodes"]
    assert code == 1 and node["verdict"] == "fail"
    found = {output["name"]: output["outside"] for output in node["outputs"] if output["outside"]}
    assert found == outside, node["outputs"]
    assert all(output["max_abs"] in ("inf", float("inf")) for output in node["outputs"] if output["outside"])
