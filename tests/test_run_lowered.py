"""``irtool run`` on recurrences a converter lowered to plain ops: the cell recognized by structure
and judged node by node, per step, on the tensors the device computed.

The models are other tools' (samples/make_tf_models.py, make_torch_models.py and make_models.py,
run once with tensorflow, torch and onnx; the files are committed): Keras LSTM, GRU and SimpleRNN
layers as .tflite (TFLite WHILE loops) and SavedModel (Keras loops), a tf2onnx-style ONNX Loop of
plain ops, an LSTM unrolled into per-step Gemms, and a PyTorch GRUCell traced in a Python loop.
Each faulty copy has a fault planted in its cell's arithmetic at one step (a bias changed in one
step's Gemm or cell, or in the body's bias at one iteration): it must fail at that cell and step,
where the clean model passes.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main

MODELS = Path(__file__).resolve().parent.parent / "samples" / "models"
LOWERED_NOTE = "other than the ones most of its steps compute with"


def run_json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["run", *args, "-d", "CPU", "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


# (model, its cell, where the cell sits, how many steps)
CLEAN = [
    ("tf/keras_lstm.tflite", "LSTMCell", "body of Loop", 6),
    ("tf/keras_gru.tflite", "GRUCell", "body of Loop", 6),
    ("tf/keras_simple_rnn.tflite", "RNNCell", "body of Loop", 6),
    ("tf/keras_lstm", "LSTMCell", "body of Loop", 6),  # SavedModel folders
    ("tf/keras_gru", "GRUCell", "body of Loop", 6),
    # recurrent_activation="hard_sigmoid": relu6(x + 3) / 6, a scaled Clamp read from the .tflite and the
    # SavedModel, an HSigmoid once OpenVINO's conversion fuses it (their _fault.xml)
    ("tf/keras_lstm_hard_sigmoid.tflite", "LSTMCell", "body of Loop", 6),
    ("tf/keras_gru_hard_sigmoid.tflite", "GRUCell", "body of Loop", 6),
    ("tf/keras_lstm_hard_sigmoid", "LSTMCell", "body of Loop", 6),
    ("tf/keras_gru_hard_sigmoid", "GRUCell", "body of Loop", 6),
    ("lowered/loop_lstm.onnx", "LSTMCell", "body of Loop", 6),
    ("lowered/unrolled_lstm.onnx", "LSTMCell", "top level", 6),
    ("torch/gru_cell_loop.xml", "GRUCell", "top level", 6),
    # unroll=True: six steps at the top level, the first one's zero states folded away (no forget product)
    ("tf/keras_lstm_unrolled.tflite", "LSTMCell", "top level", 6),
    ("tf/keras_gru_unrolled.tflite", "GRUCell", "top level", 6),  # its first step h_1 = (1-z)*n
    ("tf/keras_simple_rnn_unrolled.tflite", "RNNCell", "top level", 6),  # h_1 = tanh(x·W + b)
    # torch.export (dynamic batch: sized by their inputs): the input's product hoisted out of the steps
    ("torch/export_gru.xml", "GRUCell", "top level", 6),
    ("torch/export_lstm.xml", "LSTMCell", "top level", 6),
    ("torch/export_bilstm.xml", "LSTMCell", "top level", 6),  # two nodes: each direction
    ("torch/export_bigru2.xml", "GRUCell", "top level", 6),  # four: each direction of each layer
    ("torch/export_rnn_relu.xml", "RNNCell", "top level", 6),
    ("torch/export_gru_h0.xml", "GRUCell", "top level", 6),  # its initial state a model input; sized by irtool
    # cells written by hand through torch.export: each gate a Slice of the MatMuls' outputs, not a Split
    ("torch/sliced_lstm.xml", "LSTMCell", "top level", 6),
    ("torch/sliced_gru.xml", "GRUCell", "top level", 6),
]
NODES = {"torch/export_bilstm.xml": 2, "torch/export_bigru2.xml": 4}  # recurrences of a model, where not one
SIZED_BY = {"torch/export_gru.xml": "torch/export_gru.inputs.npz", "torch/export_lstm.xml": "torch/export_lstm.inputs.npz",
            "torch/export_bilstm.xml": "torch/export_bilstm.inputs.npz",
            "torch/export_bigru2.xml": "torch/export_bigru2.inputs.npz",
            "torch/export_rnn_relu.xml": "torch/export_rnn_relu.inputs.npz",
            "torch/sliced_lstm.xml": "torch/sliced_lstm.inputs.npz", "torch/sliced_gru.xml": "torch/sliced_gru.inputs.npz"}


@pytest.mark.parametrize("model, cell, where, steps", CLEAN)
def test_a_lowered_recurrence_gets_a_node_verdict_at_every_step_with_no_expected_outputs(capsys, model, cell, where,
                                                                                         steps):
    sized = ("--inputs", str(MODELS / SIZED_BY[model])) if model in SIZED_BY else ()
    code, result = run_json(capsys, str(MODELS / model), *sized)
    assert code == 0 and result["verdict"] == "pass", result["nodes"]
    assert len(result["nodes"]) == NODES.get(model, 1)
    # the second layer of a bidirectional stack reads both directions of the first: one input, joined
    assert sum("joined on their last axis" in node["lowered"] for node in result["nodes"]) == \
        (2 if "bigru2" in model else 0)
    for node in result["nodes"]:
        assert node["type"] == cell and node["verdict"] == "pass" and node["where"].startswith(where)
        assert node["iterations"] == steps and node["max_abs"] < 1e-5
        assert node["lowered"].startswith(f"{cell[:-4].upper()} cell lowered to plain ops")
        assert ("its input's product is computed for every step at once" in node["lowered"]) == ("export" in model)


def test_a_torch_export_whose_initial_state_is_an_input_agrees_with_torch(capsys):
    """The state a step reads is the model's h0 input [1, batch, hidden] (its dims dynamic once
    converted: its width is read from the steps), then each step's h_t."""
    code, result = run_json(capsys, str(MODELS / "torch/export_gru_h0.xml"), "--inputs",
                            str(MODELS / "torch/export_gru_h0.inputs.npz"), "--expected",
                            str(MODELS / "torch/export_gru_h0.outputs.npz"))
    assert code == 0 and result["expected"]["verdict"] == "pass", result
    (node,) = result["nodes"]
    assert node["verdict"] == "pass" and node["iterations"] == 6, node


# (faulty model, its clean model's inputs, the step the fault is planted at)
FAULTS = [
    ("tf/keras_lstm_fault.xml", "tf/keras_lstm.inputs.npz", 3),  # from the .tflite
    ("tf/keras_gru_fault.xml", "tf/keras_gru.inputs.npz", 3),
    ("tf/keras_lstm.saved_model_fault.xml", "tf/keras_lstm.saved_model.inputs.npz", 3),
    ("tf/keras_gru.saved_model_fault.xml", "tf/keras_gru.saved_model.inputs.npz", 3),
    ("tf/keras_lstm_hard_sigmoid_fault.xml", "tf/keras_lstm_hard_sigmoid.inputs.npz", 3),  # hard_sigmoid gates
    ("tf/keras_gru_hard_sigmoid_fault.xml", "tf/keras_gru_hard_sigmoid.inputs.npz", 3),
    ("tf/keras_lstm_hard_sigmoid.saved_model_fault.xml", "tf/keras_lstm_hard_sigmoid.saved_model.inputs.npz", 3),
    ("tf/keras_gru_hard_sigmoid.saved_model_fault.xml", "tf/keras_gru_hard_sigmoid.saved_model.inputs.npz", 3),
    ("lowered/loop_lstm_fault.onnx", "lowered/lstm.inputs.npz", 3),
    ("lowered/unrolled_lstm_fault.onnx", "lowered/lstm.inputs.npz", 3),
    ("torch/gru_cell_loop_fault.xml", "torch/gru_cell_loop.inputs.npz", 2),
    ("torch/export_gru_fault.xml", "torch/export_gru.inputs.npz", 2),  # the recurrent bias of step 2
    ("torch/export_lstm_fault.xml", "torch/export_lstm.inputs.npz", 2),
    ("torch/export_bilstm_fault.xml", "torch/export_bilstm.inputs.npz", 2),  # the forward direction's
    ("torch/export_bigru2_fault.xml", "torch/export_bigru2.inputs.npz", 2),  # the second layer's forward direction's
    ("torch/export_rnn_relu_fault.xml", "torch/export_rnn_relu.inputs.npz", 2),
    ("torch/sliced_lstm_fault.xml", "torch/sliced_lstm.inputs.npz", 2),  # the state bias of step 2's forget gate
    ("torch/sliced_gru_fault.xml", "torch/sliced_gru.inputs.npz", 2),  # of its update gate
]


@pytest.mark.parametrize("model, inputs, step", FAULTS)
def test_a_fault_planted_in_a_lowered_cell_fails_at_that_cell_and_step(capsys, model, inputs, step):
    code, result = run_json(capsys, str(MODELS / model), "--inputs", str(MODELS / inputs))
    assert code == 1 and result["verdict"] == "fail"
    (node,) = [node for node in result["nodes"] if node["verdict"] != "pass"]  # the other directions, layers: as they are
    assert node["verdict"] == "fail" and node["first_step_outside"] == step
    assert node["iteration"][-1] == step and node["reason"].startswith(f"at iteration {step} of ")
    assert any(LOWERED_NOTE in note for note in node["notes"]), node["notes"]
    # the probed copy computed what the model computes: the fault is the model's, seen in its cell
    assert result["probe_check"]["outputs"] and all(o["passed"] for o in result["probe_check"]["outputs"])


@pytest.mark.parametrize("model, inputs, step", FAULTS)
def test_a_failing_lowered_cell_gets_a_single_op_reproducer_with_the_recognized_weights(capsys, tmp_path, model,
                                                                                        inputs, step):
    import openvino as ov

    code, result = run_json(capsys, str(MODELS / model), "--inputs", str(MODELS / inputs),
                            "--reproducers", str(tmp_path))
    assert code == 1
    (folder,) = result["reproducers"].values()
    reproduced = ov.Core().read_model(Path(folder) / "model.xml")
    (cell,) = [op for op in reproduced.get_ordered_ops() if op.get_type_name() in ("LSTMCell", "GRUCell", "RNNCell")]
    assert cell.get_type_name() == next(node["type"] for node in result["nodes"] if node["verdict"] == "fail")
    expected, actual = np.load(Path(folder) / "expected.npz"), np.load(Path(folder) / "actual.npz")
    assert not np.allclose(expected["Ho"], actual["Ho"], atol=1e-3)  # what the step computed is not the cell's


def test_the_unrolled_chains_weights_are_the_onnx_initializers_in_openvinos_gate_order():
    """Recognition reads the weights from the graph: ONNX's W, R (gate order i, o, f, c) come out in
    OpenVINO's order f, i, c, o, and B is Wb + Rb; step 0, whose zero state OpenVINO folded into its
    bias, is the same cell."""
    import onnx
    from onnx import numpy_helper

    from irtool.lowering.chains import Chain, find_chains
    from irtool.runtime.model import read_model

    path = MODELS / "lowered" / "unrolled_lstm.onnx"
    weights = {init.name: numpy_helper.to_array(init) for init in onnx.load(path).graph.initializer}
    (chain,) = find_chains(read_model(path).model)
    assert isinstance(chain, Chain) and len(chain.steps) == 6
    hidden = 8
    order = [2, 0, 3, 1]  # f, i, c, o among ONNX's i, o, f, c

    def reordered(array: np.ndarray) -> np.ndarray:
        return np.concatenate([array[k * hidden:(k + 1) * hidden] for k in order])

    for cell in chain.steps:
        w, r, b = cell.weights
        np.testing.assert_array_equal(w, reordered(weights["W"]))
        np.testing.assert_array_equal(r, reordered(weights["R"]))
        np.testing.assert_allclose(b, reordered(weights["Wb"] + weights["Rb"]), rtol=1e-6)
    assert chain.steps[0].h is None and all(cell.h is not None for cell in chain.steps[1:])


def unrolled_lstm_with_peepholes(path: Path, steps: int = 3, hidden: int = 4, size: int = 3) -> Path:
    """An LSTM written out step by step whose forget gate also adds c_{t-1} times a vector: a
    peephole, which OpenVINO's LSTMCell has not."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    node = helper.make_node
    inits = [numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name) for name, shape in
             (("W", (size, 4 * hidden)), ("R", (hidden, 4 * hidden)), ("P", (hidden,)))]
    inits.append(numpy_helper.from_array(np.zeros((2, hidden), np.float32), "zeros"))
    nodes, h, c = [], "x0", "zeros"
    nodes.append(node("Identity", ["zeros"], ["h_start"]))
    h = "h_start"
    for t in range(steps):
        s = f"s{t}_"
        nodes += [node("MatMul", ["x", "W"], [s + "xw"]), node("MatMul", [h, "R"], [s + "hr"]),
                  node("Add", [s + "xw", s + "hr"], [s + "g"]),
                  node("Split", [s + "g"], [s + k for k in "ifco"], axis=1, num_outputs=4),
                  node("Mul", [c, "P"], [s + "peep"]), node("Add", [s + "f", s + "peep"], [s + "fp"]),
                  node("Sigmoid", [s + "i"], [s + "si"]), node("Sigmoid", [s + "fp"], [s + "sf"]),
                  node("Tanh", [s + "c"], [s + "tc"]), node("Sigmoid", [s + "o"], [s + "so"]),
                  node("Mul", [s + "sf", c], [s + "fc"]), node("Mul", [s + "si", s + "tc"], [s + "ic"]),
                  node("Add", [s + "fc", s + "ic"], [s + "c_t"]), node("Tanh", [s + "c_t"], [s + "th"]),
                  node("Mul", [s + "so", s + "th"], [s + "h_t"])]
        h, c = s + "h_t", s + "c_t"
    graph = helper.make_graph(nodes, "peepholes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, size])],
                              [helper.make_tensor_value_info(h, TensorProto.FLOAT, [2, hidden])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    return path


def test_a_cell_with_peepholes_is_named_as_not_recognized_with_the_reason(capsys, tmp_path):
    """Steps 1 and 2 add c_{t-1}·P to their forget gate; step 0's c_{t-1} is a zero constant, whose
    product OpenVINO folds: step 0 alone is a plain cell, judged; the others are named, unjudged."""
    code, result = run_json(capsys, str(unrolled_lstm_with_peepholes(tmp_path / "peepholes.onnx")))
    assert code == 3 and result["verdict"] == "unjudged"
    refused = [node for node in result["nodes"] if node["verdict"] == "unjudged"]
    assert [node["name"] for node in refused] == result["not_judged"] == ["LSTM@s1_h_t", "LSTM@s2_h_t"]
    for step, node in enumerate(refused, 1):
        assert node["reason"] == (f"not recognized as a lowered LSTMCell: gate f adds c_{{t-1}} times weights "
                                  f"(Multiply 's{step}_peep'): a peephole, which OpenVINO's LSTMCell does not have")
        assert node["lowered"].startswith("looks like a lowered LSTM cell: MatMul")
    assert [node["verdict"] for node in result["nodes"] if node not in refused] == ["pass"]


def test_a_gated_layer_that_carries_no_state_is_no_cell(capsys, tmp_path):
    """A highway layer (y = T*H(x) + (1-T)*x, T = sigmoid(x·W)) has a GRU's interpolation but no
    state: nothing is recognized, and nothing is named as not recognized either."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(4)
    node = helper.make_node
    inits = [numpy_helper.from_array(rng.uniform(-1, 1, (4, 4)).astype(np.float32), name) for name in ("Wt", "Wh")]
    inits.append(numpy_helper.from_array(np.ones(4, np.float32), "one"))
    nodes = [node("MatMul", ["x", "Wt"], ["a"]), node("Sigmoid", ["a"], ["t"]), node("MatMul", ["x", "Wh"], ["b"]),
             node("Tanh", ["b"], ["hx"]), node("Mul", ["t", "hx"], ["p"]), node("Sub", ["one", "t"], ["carry"]),
             node("Mul", ["carry", "x"], ["q"]), node("Add", ["p", "q"], ["y"])]
    graph = helper.make_graph(nodes, "highway", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "highway.onnx")
    code, result = run_json(capsys, str(tmp_path / "highway.onnx"))
    assert code == 3 and result["nodes"] == []


@pytest.mark.parametrize("op, attributes", [
    ("LSTMCell", {"hidden_size": 5}),
    ("LSTMCell", {"hidden_size": 5, "activations": ["sigmoid", "relu", "tanh"]}),
    ("GRUCell", {"hidden_size": 5}),
    ("GRUCell", {"hidden_size": 5, "linear_before_reset": True}),
    ("GRUCell", {"hidden_size": 5, "activations": ["relu", "tanh"]}),
])
def test_a_cell_decomposed_into_its_equations_is_recognized_with_its_own_weights(op, attributes):
    """A cell written out in plain ops by irtool's own decomposition (what OpenVINO's cell
    decomposition passes make of it: Split of W and R by gate, the biases apart) is recognized as
    the op it was, with the op's own W, R, B, activations and linear_before_reset, exactly."""
    from irtool.pipeline.build import build_model
    from irtool.lowering.chains import Chain, find_chains
    from irtool.lowering.graph import constant_data
    from irtool.specs.cases import OpCase

    case = OpCase(op, attributes, {"batch_size": 2, "input_size": 3})
    original = [op_ for op_ in build_model(case).get_ordered_ops() if op_.get_type_name() == op][0]
    weights = [constant_data(original.input_value(k).get_node()) for k in range(original.get_input_size())][-3:]
    (chain,) = find_chains(build_model(OpCase(op, attributes, case.sizes, transform="decompose_cell")))
    assert isinstance(chain, Chain) and len(chain.steps) == 1
    (cell,) = chain.steps
    assert cell.op == (op, case.spec.version)
    for found, own in zip(cell.weights, weights):
        np.testing.assert_allclose(found, own, rtol=1e-6, atol=1e-7)
    filled = case.filled_attributes
    assert tuple(a.name for a in cell.activations) == tuple(a.lower() for a in filled["activations"])
    assert cell.linear_before_reset == bool(filled.get("linear_before_reset", False))


@pytest.mark.parametrize("model", ["lowered/loop_lstm_fault.onnx", "lowered/unrolled_lstm_fault.onnx"])
def test_the_harness_gives_a_lowered_cell_of_an_onnx_model_its_single_op_reproducer(tmp_path, model):
    """In a suite, a cell lowered to plain ops in an .onnx model fails as a node with a single-op IR
    reproducer of the cell (the ONNX-node reproducer was looked for there: an internal error).  It runs
    OpenVINO's own cell op, so the fault planted in the plain ops passes there (docs/lowered.md)."""
    import subprocess
    import sys

    (tmp_path / "s.toml").write_text(f'[[models]]\nid = "m"\npath = "{MODELS / model}"\n')
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(tmp_path / "s.toml"), "-d", "CPU",
                           "--report-dir", str(tmp_path / "out"), "--no-progress"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    [result] = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert result["case"].startswith("m[seed=0]::") and result["verdict"] == "fail" and result["reproducer"], result
    folder = tmp_path / "out" / result["reproducer"]
    assert (folder / "model.xml").is_file()
    alone = subprocess.run([sys.executable, "reproduce.py"], cwd=folder, capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0 and "Traceback" not in alone.stderr, alone.stdout + alone.stderr
