"""irtool.runtime.sizes sizes dynamic dims that reach a recurrent node through ops OpenVINO's
symbols do not cross (Conv, MaxPool, TopK/Gather), by asking OpenVINO's shape inference.

The models are ONNX graphs built with onnx.helper and converted by ov.convert_model
(tests/real_models.py): a Conv1d speech front end, a Conv/MaxPool OCR front end with a
bidirectional LSTM, and lengths sorted by TopK with x gathered by the order (PyTorch's
pack_padded_sequence).

A dim that reaches no recurrent op takes --batch (a Keras model.export's batch, which reaches only
a lowered cell: samples/models/tf/keras_lstm_export.xml), and sizes OpenVINO's shape inference
refuses fall back to batch 1 (a streaming model's Loop that concatenates each step with a state of
batch 1, built with onnx.helper), or are named with what refuses them.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from real_models import FRONT_ENDS, front_end_model, streaming_gru_model

from irtool.cli.program import main

DIRECTIONS = {"speech": 1, "ocr": 2, "packed": 1}


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("front-ends")
    return {kind: front_end_model(kind, folder) for kind in FRONT_ENDS}


def run_json(capsys, *argv: str) -> tuple[int, dict, str]:
    code = main(["run", *argv, "--format", "json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out else {}, captured.err


@pytest.mark.parametrize("kind", FRONT_ENDS)
@pytest.mark.parametrize("sizes, batch, seq", [([], 2, 4), (["--seq-length", "9", "--batch", "3"], 3, 9),
                                               (["--seq-length", "1"], 2, 1)])
def test_dims_through_conv_pool_and_topk_are_sized_for_the_node(kind, sizes, batch, seq, models, capsys):
    code, result, err = run_json(capsys, str(models[kind]), "-d", "CPU", *sizes)
    assert result, err
    (node,) = result["nodes"]
    assert node["type"] == "LSTMSequence" and node["verdict"] in ("pass", "fail"), node
    y = next(o for o in node["outputs"] if o["name"] == "Y")
    assert y["shape"] == [batch, DIRECTIONS[kind], seq, 4]  # the node got its batch and time sizes
    inputs = {i["name"]: i["shape"] for i in result["inputs"]}
    if kind == "speech":  # Conv1d k=3, stride 2, pads 1: the smallest T giving seq steps
        assert inputs["x"] == [batch, 3, 2 * seq - 1]
    elif kind == "ocr":  # MaxPool 2x2 halves the width
        assert inputs["x"] == [batch, 1, 8, 2 * seq]
    else:  # x's batch is gathered by the lengths' TopK order: the lengths' size
        assert inputs == {"x": [seq, batch, 3], "lengths": [batch]}
    if kind != "packed" or seq == 1:
        assert code == 0 and node["verdict"] == "pass", node


def test_sorted_ragged_lengths_meet_the_cpu_lengths_bug_and_full_ones_pass(models, capsys, tmp_path):
    """Generated lengths are valid lengths though TopK sorts them before the node: ragged ones
    reach the CPU plugin's dynamic-path sequence_lengths fault (docs/run.md), full ones pass."""
    code, result, _ = run_json(capsys, str(models["packed"]), "-d", "CPU", "--seq-length", "5", "--batch", "3")
    (node,) = result["nodes"]
    assert code == 1 and node["verdict"] == "fail" and "ignores sequence_lengths" in node["reason"], node
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "full.npz", x=rng.uniform(-1, 1, (5, 3, 3)).astype(np.float32),
             lengths=np.full(3, 5, np.int64))
    code, result, _ = run_json(capsys, str(models["packed"]), "-d", "CPU", "--inputs", str(tmp_path / "full.npz"))
    assert code == 0 and result["nodes"][0]["verdict"] == "pass", result["nodes"]


def test_a_given_shape_still_wins_over_probing(models, capsys):
    code, result, _ = run_json(capsys, str(models["speech"]), "-d", "CPU", "--shape", "x=[1,3,20]")
    assert code == 0
    y = next(o for o in result["nodes"][0]["outputs"] if o["name"] == "Y")
    assert y["shape"] == [1, 1, 10, 4]


@pytest.mark.parametrize("stride", [3, 8, 30])
@pytest.mark.parametrize("seq", [1, 4, 9])
def test_a_strided_conv_gets_the_smallest_input_that_gives_the_node_its_steps(stride, seq, tmp_path):
    import openvino as ov

    from irtool.runtime.sizes import plan_inputs

    model = ov.Core().read_model(str(front_end_model("speech", tmp_path, stride=stride)))
    plan = plan_inputs(model, {}, {"seq_length": seq, "batch_size": 1}, "speech")
    # Conv1d kernel 3, pads 1: floor((T - 1) / stride) + 1 steps
    assert plan.shapes == {"x": (1, 3, stride * (seq - 1) + 1)}


SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "models"


@pytest.mark.parametrize("argv, batch", [([], 2), (["--batch", "3"], 3)])
def test_a_keras_export_runs_at_the_batch_its_lowered_lstm_cannot_say(argv, batch, capsys):
    """Keras's model.export writes a dynamic batch, which reaches only the LSTM cell the
    converter lowered to plain ops (no recurrent op): it takes --batch, and the header says so
    (samples/models/tf/keras_lstm_export.xml, made by samples/make_tf_models.py)."""
    code, result, err = run_json(capsys, str(SAMPLES / "tf" / "keras_lstm_export.xml"), "-d", "CPU", *argv)
    assert code == 0 and result["verdict"] == "pass", err
    assert result["inputs"][0]["shape"] == [batch, 6, 3]
    assert result["shapes_chosen"] == {"keras_tensor": "dim 0 = %d (--batch; it reaches no recurrent op's dims)" % batch}
    (node,) = result["nodes"]
    assert node["type"] == "LSTMCell" and node["verdict"] == "pass" and node["iterations"] == 6


def test_a_batch_openvino_refuses_falls_back_to_batch_1_and_says_why(tmp_path, capsys):
    path = streaming_gru_model(tmp_path / "streaming.onnx")
    code, result, err = run_json(capsys, str(path), "-d", "CPU")
    assert code == 0 and result["verdict"] == "pass", err
    assert result["inputs"][0]["shape"] == [1, 5, 3]
    assert result["shapes_chosen"]["x"] == (
        "from the recurrent nodes; batch 1: OpenVINO's shape inference refuses batch 2 "
        "(Concat 'cat' of input shapes {[2,3],[1,4]}: Argument shapes are inconsistent)")
    (node,) = result["nodes"]
    assert node["type"] == "GRU" and node["verdict"] == "pass"


def test_a_batch_given_that_openvino_refuses_is_not_changed(tmp_path, capsys):
    path = streaming_gru_model(tmp_path / "streaming.onnx")
    code = main(["run", str(path), "-d", "CPU", "--batch", "2"])
    err = capsys.readouterr().err
    assert code == 2 and err == (
        "irtool: error: streaming.onnx: OpenVINO's shape inference refuses the sizes irtool chose for its inputs' "
        "dynamic dims (x[2, 5, 3] (from the recurrent nodes): Concat 'cat' of input shapes {[2,3],[1,4]}: Argument "
        "shapes are inconsistent): give them with --shape NAME=[...] (or every input with --inputs IN.npz)\n"), err


def test_when_no_size_fits_the_error_names_each_size_tried_and_what_refuses_it(tmp_path, capsys):
    path = streaming_gru_model(tmp_path / "streaming.onnx", fixed=5)  # the state's batch is 5: neither 2 nor 1 fits
    code = main(["run", str(path), "-d", "CPU"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert "x[2, 5, 3] (from the recurrent nodes): Concat 'cat' of input shapes {[2,3],[5,4]}" in err
    assert "x[1, 5, 3] (from the recurrent nodes): Concat 'cat' of input shapes {[1,3],[5,4]}" in err
    assert err.endswith("give them with --shape NAME=[...] or --batch N (or every input with --inputs IN.npz)\n")
    code, result, _ = run_json(capsys, str(path), "-d", "CPU", "--batch", "5")
    assert code == 0 and result["inputs"][0]["shape"] == [5, 5, 3]


def test_a_bounded_dim_that_reaches_no_node_takes_the_batch_within_its_bounds(tmp_path, capsys):
    import openvino as ov
    import openvino.opset1 as ops

    x = ops.parameter(ov.PartialShape([ov.Dimension(3, 6), ov.Dimension(1, 8)]), np.float32, name="x")
    ov.save_model(ov.Model([ops.relu(x)], [x], "bounded"), str(tmp_path / "bounded.xml"))
    code, result, err = run_json(capsys, str(tmp_path / "bounded.xml"), "-d", "CPU")
    assert code == 3 and result["inputs"][0]["shape"] == [3, 2], err  # 2 is below 3..6: its lower bound
    code, result, err = run_json(capsys, str(tmp_path / "bounded.xml"), "-d", "CPU", "--batch", "9")
    assert code == 3 and result["inputs"][0]["shape"] == [6, 8], err  # 9 is above both: their upper bounds


EXPORTED = ("export_gru", "export_lstm", "export_bilstm", "export_rnn_relu")


@pytest.mark.parametrize("name", EXPORTED)
@pytest.mark.parametrize("argv, batch", [([], 2), (["--batch", "4"], 4)])
def test_a_torch_export_with_a_dynamic_batch_runs_without_shapes(name, argv, batch, capsys):
    """torch.export of nn.GRU/LSTM/RNN (dynamic batch; samples/make_torch_models.py) makes x
    [?,?,?] and lowers the layer to plain ops: the feature dim is the width of the first
    MatMul's constant weight, the time dim the steps of the recurrence irtool recognizes as
    unrolled (the graph fixes them), and the batch --batch; the header says which is which."""
    code, result, err = run_json(capsys, str(SAMPLES / "torch" / f"{name}.xml"), "-d", "CPU", *argv)
    assert code == 0 and result["verdict"] == "pass", err
    assert result["inputs"][0]["shape"] == [batch, 6, 3]
    how = result["shapes_chosen"]["x"]
    assert how.startswith("dim 1 = 6, the steps of the ") and " recurrence a converter unrolled (" in how, how
    assert "dim 2 = 3, the input width of the constant weight of MatMul '" in how, how
    assert how.endswith(f"dim 0 = {batch} (--batch; the batch of the unrolled recurrence's steps)"), how
    assert all(node["verdict"] == "pass" and node["iterations"] == 6 for node in result["nodes"])


@pytest.mark.parametrize("name", EXPORTED)
def test_a_torch_export_fault_still_fails_at_the_sizes_chosen(name, capsys):
    code, result, err = run_json(capsys, str(SAMPLES / "torch" / f"{name}_fault.xml"), "-d", "CPU")
    assert code == 1 and result["verdict"] == "fail", err
    assert result["inputs"][0]["shape"] == [2, 6, 3]


def test_a_torch_export_with_default_settings_gets_the_batch_its_graph_fixes(capsys):
    """torch.export's defaults (samples/models/torch/export_static_gru.xml): the IR's x is still
    [?,?,?], but the graph's constants hold batch 3, which OpenVINO's shape inference alone
    tells: the nearest batch it accepts is taken (not batch 1, which a broadcast would let
    through), and the run agrees with torch's own outputs at the inputs irtool drew."""
    path = SAMPLES / "torch" / "export_static_gru.xml"
    code, result, err = run_json(capsys, str(path), "-d", "CPU")
    assert code == 0 and result["verdict"] == "pass", err
    assert result["inputs"][0]["shape"] == [3, 6, 3]
    assert result["shapes_chosen"]["x"].endswith(
        "dim 0 = 3 (the size nearest --batch OpenVINO's shape inference accepts: the graph fixes it)")
    code, result, err = run_json(capsys, str(path), "-d", "CPU", "--inputs", str(path.with_suffix(".inputs.npz")),
                                 "--expected", str(path.with_suffix(".outputs.npz")))
    assert code == 0 and result["verdict"] == "pass", err


def test_a_batch_given_that_the_graph_refuses_is_named_with_what_fixes_each_dim(capsys):
    code = main(["run", str(SAMPLES / "torch" / "export_static_gru.xml"), "-d", "CPU", "--batch", "2"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert ("x[2, 6, 3] (dim 1 = 6, the steps of the GRU recurrence a converter unrolled (MatMul "
            "'linear/aten.linear.default/MatMul' first): the graph fixes them; dim 2 = 3, the input width of the "
            "constant weight of MatMul 'linear/aten.linear.default/MatMul'; dim 0 = 2 (--batch; the batch of the "
            "unrolled recurrence's steps)): Add 'add/aten.add.Tensor/Add': Argument shapes are inconsistent") in err


def dense_model(path: Path, weight: np.ndarray, sliced: int | None = None, transposed: bool = False) -> Path:
    """x [?, ?, ?] -> (Slice of step ``sliced`` along dim 1) -> MatMul by ``weight`` (or by its
    transpose, behind a Transpose OpenVINO folds into the MatMul) -> Tanh: onnx.helper, converted
    by ov.convert_model."""
    import onnx
    import openvino as ov
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, first = [], [numpy_helper.from_array(weight, "w")], "x"
    if sliced is not None:
        inits += [numpy_helper.from_array(np.array([value], dtype=np.int64), name)
                  for name, value in (("starts", sliced), ("ends", sliced + 1), ("axes", 1))]
        nodes.append(helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["xs"]))
        first = "xs"
    if transposed:
        nodes.append(helper.make_node("Transpose", ["w"], ["wt"], perm=[1, 0]))
    nodes += [helper.make_node("MatMul", [first, "wt" if transposed else "w"], ["m"]),
              helper.make_node("Tanh", ["m"], ["y"])]
    graph = helper.make_graph(nodes, "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None] * 3)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 3)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path.with_suffix(".onnx"))
    ov.save_model(ov.convert_model(str(path.with_suffix(".onnx"))), path)
    return path


@pytest.mark.parametrize("argv, steps", [([], 4), (["--seq-length", "2"], 3), (["--seq-length", "6"], 6)])
def test_a_dim_the_graph_takes_a_fixed_step_of_is_at_least_that_long(argv, steps, tmp_path, capsys):
    """A converter that unrolls a recurrence over a traced example slices each step at its index
    (torch.export of an LSTM with proj_size, which irtool cannot read as a cell, and whose
    shapes OpenVINO's shape inference does not check against the steps): the dim takes
    --seq-length, but at least the entries the graph takes (here step 2 of x, by an onnx.helper
    Slice converted by ov.convert_model)."""
    weight = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
    code, result, err = run_json(capsys, str(dense_model(tmp_path / "sliced.xml", weight, sliced=2)), "-d", "CPU",
                                 *argv)
    assert code == 3 and result["inputs"][0]["shape"] == [2, steps, 5], err
    assert result["shapes_chosen"]["x"].startswith(
        f"dim 1 = {steps}, the steps the graph takes: at least the 3 entries Slice '")


@pytest.mark.parametrize("transposed", [False, True])
def test_a_matmul_by_a_constant_weight_sizes_the_dim_it_contracts(transposed, tmp_path, capsys):
    """An onnx.helper graph x [?, ?, ?] -> MatMul by a constant [5, 7] (Gemm-style transposed:
    [7, 5] behind a Transpose that OpenVINO folds into the MatMul) -> Tanh, converted by
    ov.convert_model: no recurrent op, so the batch and steps take --batch, but the feature dim
    must be 5, the weight's input width."""
    weight = np.random.default_rng(0).standard_normal((7, 5) if transposed else (5, 7)).astype(np.float32)
    code, result, err = run_json(capsys, str(dense_model(tmp_path / "dense.xml", weight, transposed=transposed)),
                                 "-d", "CPU")
    assert code == 3 and result["inputs"][0]["shape"] == [2, 2, 5], err  # nothing to judge: exit 3
    assert result["shapes_chosen"]["x"].startswith("dim 2 = 5, the input width of the constant weight of MatMul '")


def padded_model(path: Path, pad: int = 40) -> Path:
    """x [?, ?] (a batch of audio samples) -> a reflect Pad of ``pad`` samples each side (Silero VAD's
    STFT front end; a reflect pad needs more samples than it pads) -> Tanh: onnx.helper, converted by
    ov.convert_model."""
    import onnx
    import openvino as ov
    from onnx import TensorProto, helper, numpy_helper

    pads = numpy_helper.from_array(np.array([0, pad, 0, pad], np.int64), "pads")
    nodes = [helper.make_node("Pad", ["x", "pads"], ["padded"], mode="reflect"),
             helper.make_node("Tanh", ["padded"], ["y"])]
    graph = helper.make_graph(nodes, "padded", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, None])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])], [pads])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path.with_suffix(".onnx"))
    ov.save_model(ov.convert_model(str(path.with_suffix(".onnx"))), path)
    return path


def test_a_dim_no_small_size_fits_grows_alone_to_the_smallest_power_of_two_that_does(tmp_path, capsys):
    """A reflect Pad of 40 refuses every size of 1..16 for the samples: that dim alone takes 64, the
    smallest of 32, 64, ... shape inference accepts; the batch keeps --batch; the header says why."""
    code, result, err = run_json(capsys, str(padded_model(tmp_path / "padded.xml")), "-d", "CPU")
    assert code == 3 and result["inputs"][0]["shape"] == [2, 64], err  # nothing recurrent to judge: exit 3
    how = result["shapes_chosen"]["x"]
    assert how.startswith("dim 0 = 2 (--batch; it reaches no recurrent op's dims); dim 1 = 64 (the smallest of "
                          "2..16, 32, 64, ... 4096 OpenVINO's shape inference accepts, the other dims kept: it "
                          "refuses 2 (Pad '"), how
    code, result, err = run_json(capsys, str(tmp_path / "padded.xml"), "-d", "CPU", "--batch", "3")
    assert code == 2 and "x[3, 3]" in err and "Pad '" in err, err  # a batch given is not changed


@pytest.mark.parametrize("linear_before_reset", [False, True])
def test_weights_of_dynamic_shape_take_the_sizes_the_op_spec_gives_them(linear_before_reset, capsys, tmp_path):
    """W, R and B as model inputs of shape [?,?,?]: their dims are expressions of the node's attributes
    (R: [num_directions, 3 * hidden_size, hidden_size]; B: 4 * hidden_size with linear_before_reset),
    not symbols; irtool tried its batch sizes on them and refused the model ("OpenVINO accepts none of
    the sizes 16, 32, 64, 8, 128, 4, 256, 2, 1")."""
    import openvino as ov
    from openvino import opset5

    dynamic = [-1, -1, -1]
    x, h = opset5.parameter(dynamic, np.float32, name="X"), opset5.parameter(dynamic, np.float32, name="H")
    lengths = opset5.parameter([-1], np.int32, name="lengths")
    w, r = opset5.parameter(dynamic, np.float32, name="W"), opset5.parameter(dynamic, np.float32, name="R")
    b = opset5.parameter([-1, -1], np.float32, name="B")
    node = opset5.gru_sequence(x, h, lengths, w, r, b, 4, "forward", linear_before_reset=linear_before_reset)
    path = tmp_path / "gru.xml"
    ov.save_model(ov.Model(node.outputs(), [x, h, lengths, w, r, b]), path)
    code, report, err = run_json(capsys, str(path), "-d", "CPU")
    assert code == 0, err
    shapes = {item["name"]: item["shape"] for item in report["inputs"]}
    assert shapes["R"][1:] == [12, 4] and shapes["B"][1] == (16 if linear_before_reset else 12), shapes
