"""What ``irtool reduce`` starts from: an IR file (seeded inputs or an .npz), a reproducer
folder (with its device, precision, config and tolerances), a suite case; and bad input,
each refused with one line naming the path."""
from __future__ import annotations

import json

import numpy as np
import pytest

from irtool.core.errors import IrtoolError
from irtool.jobs.records import SuiteCase, case_to_json
from irtool.judge.compare import TolerancePolicy
from irtool.pipeline.build import build_model
from irtool.pipeline.inputs import seeded_inputs
from irtool.pipeline.reproducer import write_reproducer
from irtool.reduce import ReduceError, load_origin
from irtool.reduce.origin import concrete_case
from irtool.specs.cases import OpCase

GRU_CONST = "valid/gru_sequence_const.xml"
SUITE = """
[suite]
name = "mine"
timeout = 7
[[grid]]
id = "lstm"
op = "LSTMSequence"
attributes = { hidden_size = 3, direction = ["forward", "bidirectional"] }
sizes = { batch_size = 2, seq_length = 4, input_size = 5 }
atol = 1e-3
"""


def test_an_ir_file_with_seeded_inputs(samples_dir):
    origin = load_origin(str(samples_dir / GRU_CONST), seed=3)
    assert origin.case.file == str((samples_dir / GRU_CONST).resolve()) and origin.case.seed == 3
    assert origin.device is None and origin.precision is None
    case = concrete_case(origin.case)
    assert case.spec.key == "GRUSequence-5" and case.constants == {"W", "R", "B"}
    assert set(case.inputs) == {"X", "initial_hidden_state", "sequence_lengths"}


def test_an_ir_file_with_inputs_from_an_npz(samples_dir, tmp_path):
    first = concrete_case(load_origin(str(samples_dir / GRU_CONST)).case)
    names = {"X": "X", "initial_hidden_state": "H0", "sequence_lengths": "seq_lengths"}
    inputs = {names[port]: np.ones_like(array) if port == "X" else array for port, array in first.inputs.items()}
    np.savez(tmp_path / "in.npz", **inputs)
    case = concrete_case(load_origin(str(samples_dir / GRU_CONST), tmp_path / "in.npz").case)
    np.testing.assert_array_equal(case.arrays["X"], np.ones_like(first.arrays["X"]))


def test_a_reproducer_folder_brings_its_run(tmp_path):
    model = build_model(OpCase("GRUSequence", {"hidden_size": 2, "direction": "forward"},
                               {"batch_size": 2, "seq_length": 3, "input_size": 2}))
    inputs = seeded_inputs(model, seed=5)
    original = SuiteCase(id="gru[seed=5]", suite="smoke", op="GRUSequence", version=5, atol=2e-3)
    write_reproducer(tmp_path / "repro", model=model, inputs=inputs, expected=None, actual=None, device="AUTO:CPU",
                     precision="bf16", config={"NUM_STREAMS": "1"}, tolerances={"Y": (1e-4, 0.0), "Ho": (2e-4, 1e-3)},
                     case=case_to_json(original), result=None)
    origin = load_origin(str(tmp_path / "repro"))
    assert (origin.device, origin.precision, dict(origin.config)) == ("AUTO:CPU", "bf16", {"NUM_STREAMS": "1"})
    assert origin.tolerance == TolerancePolicy(output_atol={"Y": 1e-4, "Ho": 2e-4}, output_rtol={"Y": 0.0, "Ho": 1e-3})
    assert (origin.case.id, origin.case.suite, origin.case.atol) == ("gru[seed=5]", "smoke", 2e-3)
    case = concrete_case(origin.case)
    for name, array in inputs.items():
        np.testing.assert_array_equal(case.arrays[name], array)


def test_a_suite_case(tmp_path):
    (tmp_path / "mine.toml").write_text(SUITE)
    origin = load_origin(f"{tmp_path / 'mine.toml'}::lstm[direction=bidirectional,seed=0]")
    assert origin.case.op == "LSTMSequence" and origin.case.atol == 1e-3 and origin.timeout == 7
    case = concrete_case(origin.case)
    assert case.symbols == {"batch_size": 2, "seq_length": 4, "input_size": 5, "hidden_size": 3, "num_directions": 2}


def _not_a_reproducer(tmp_path):
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "model.xml").write_text("<net/>")
    return str(tmp_path / "folder")


def _bad_case_json(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    for name in ("model.xml", "inputs.npz"):
        (folder / name).write_text("")
    (folder / "case.json").write_text(json.dumps({"case": {"id": "x", "suite": "s"}, "device": "CPU"}))
    return str(folder)


def _onnx_file(tmp_path):
    (tmp_path / "x.onnx").write_text("")
    return str(tmp_path / "x.onnx")


def _suite_without_the_case(tmp_path):
    (tmp_path / "mine.toml").write_text(SUITE)
    return f"{tmp_path / 'mine.toml'}::lstm"


@pytest.mark.parametrize("make, says", [
    (lambda tmp: str(tmp / "gone.xml"), "gone.xml: no such model file"),
    (lambda tmp: str(tmp / "gone"), "gone: no such file or folder; expected an IR .xml file, a reproducer folder "
                                     "or SUITE.toml::CASE-ID"),
    (_onnx_file, "x.onnx: expected an IR .xml file"),
    (_not_a_reproducer, "folder: not a reproducer folder (no case.json, inputs.npz)"),
    (_bad_case_json, "case.json: not a reproducer's case.json: no 'precision'"),
    (_suite_without_the_case, "mine.toml: no case 'lstm'; its cases are lstm[direction=forward,seed=0], "
                              "lstm[direction=bidirectional,seed=0]"),
    (lambda tmp: f"{tmp / 'none.toml'}::x", "none.toml: no such suite file"),
], ids=["missing-xml", "missing", "not-xml", "not-reproducer", "bad-case-json", "no-such-case", "no-suite"])
def test_bad_input_is_one_line_naming_the_path(tmp_path, make, says):
    text = make(tmp_path)
    with pytest.raises(IrtoolError) as caught:
        load_origin(text)
    assert says in caught.value.message and "\n" not in caught.value.message


def test_inputs_apply_to_an_ir_file_only(tmp_path):
    (tmp_path / "mine.toml").write_text(SUITE)
    with pytest.raises(ReduceError, match="--inputs applies to an IR file; this case brings its own inputs"):
        load_origin(f"{tmp_path / 'mine.toml'}::lstm[direction=forward,seed=0]", tmp_path / "in.npz")


def test_a_model_that_is_not_one_rnn_op_cannot_be_reduced(tmp_path):
    import openvino as ov
    import openvino.opset1 as ops

    parameter = ops.parameter([2, 3], np.float32, name="x")
    ov.save_model(ov.Model([ops.relu(parameter)], [parameter]), str(tmp_path / "relu.xml"))
    with pytest.raises(ReduceError) as caught:
        concrete_case(load_origin(str(tmp_path / "relu.xml")).case)
    assert caught.value.message.startswith(f"{tmp_path / 'relu.xml'}: cannot reduce it: the model is not a single "
                                           "recurrent op fed by Parameters and Consts (its recurrent nodes: none); reduce one node with irtool reduce MODEL --node NAME")
