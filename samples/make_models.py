"""Writes samples/models: real converted models, as a user has them.

Each is an ONNX graph built with onnx.helper, saved as .onnx, and converted by OpenVINO's own
``ov.convert_model`` with its default (dynamic) dims, saved as IR by ``ov.save_model``:

- lstm2_bidirectional.xml: a two-layer bidirectional LSTM (hidden 8) with a MatMul/Add head;
  OpenVINO's CPU plugin gets it right.
- gru_lengths.xml: one GRU with its weights as initializers and a sequence_lens input; the CPU
  plugin of openvino 2026.4.1 ignores the lengths of such a model (samples/suites/full.xfail.toml).

And erfinv_gru.xml, built with openvino's opset API: a GRUSequence fed through ErfInv, an op of
opset17 (openvino 2026): ``irtool run --openvino 2025.4.1,current`` skips it on 2025.4.1, whose
opsets end at opset16.

And loop_peepholes.onnx with its inputs loop_peepholes.npz: an ONNX Loop whose body runs an
LSTM with peepholes once per iteration; OpenVINO's ONNX frontend drops the peepholes, which
irtool sees from iteration 1 on (docs/onnx.md).

And two LSTMs that reach OpenVINO with no recurrent op, written out in plain ops as converters
write them (irtool recognizes the cell in them: docs/lowered.md), each beside a copy with a fault
planted in its cell's arithmetic at step FAULT_STEP:

- lowered/loop_lstm.onnx: a Loop of plain ops in the shape tf2onnx writes a Keras LSTM it does not
  rewrite to an LSTM op: the body reads x_t = Gather(X, t) from the outer graph, computes
  x_t·kernel + h·recurrent_kernel + bias, splits the gates in Keras's order (i, f, c, o), and
  carries t, h and c to the next iteration; every h_t is a scan output.  loop_lstm_fault.onnx adds
  to the bias, at iteration FAULT_STEP only, a vector made from the iteration number.
- lowered/unrolled_lstm.onnx: an LSTM unrolled into per-step Gemms as ONNX exporters of unrolled
  models write it: X split into its steps, two Gemms per step (x_t·W^T + Wb, h·R^T + Rb), ONNX's gate
  order (i, o, f, c), a zero initial state (which OpenVINO folds into step 0's bias).
  unrolled_lstm_fault.onnx gives step FAULT_STEP's Gemm a bias of its own, one value changed.

And lstm_f16w.xml: an LSTM (hidden 64) with a MatMul/Add head, converted from ONNX and saved with
``compress_to_fp16=True`` (its weights stored as f16 behind Convert ops, as ``ovc`` writes by
default), with its inputs lstm_f16w.inputs.npz and onnxruntime's outputs of the ONNX model on them,
lstm_f16w.expected.npz: ``irtool run ... --expected`` judges the f16-stored weights against the
framework's float32 outputs (docs/run.md).

And streaming_gru.onnx: a GRU over x [N, 5, 3] of dynamic batch N and, beside it, a Loop over x's
steps that concatenates each step with a state of fixed batch 1, as a streaming model carries its
state: its dynamic shapes take any batch, but the CPU fails on any but 1 when it runs (irtool's
shape check falls back to batch 1: docs/run.md, "Sizes for dynamic dims").

And amplifying_rnn.xml with its inputs amplifying_rnn.npz, built with openvino's opset API: an
RNNSequence (tanh, hidden 64, 1000 steps) whose R is 1.5 x an orthogonal matrix, so that a change of
its state grows step after step until tanh bounds it: irtool judges it up to the step from which no
reference can (docs/run.md, "Judging at bf16 and f16").

And broken_gru.onnx, for ``irtool validate``: a bidirectional GRU with one activation set, a
negative clip, R of hidden size 5 and a declared Y of batch 3 (not converted: OpenVINO refuses it).

Run it from the repository root (python samples/make_models.py); the files it writes are
committed.  The graphs are the tests' own (tests/real_models.py), so tests and samples agree.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from real_models import (OnnxCase, convert_onnx, newest_opset_model, onnx_inputs, onnx_loop_lstm_model,  # noqa: E402
                         streaming_gru_model)

HERE = ROOT / "samples" / "models"
MODELS = {
    "lstm2_bidirectional": OnnxCase("LSTM", layers=2, bidirectional=True, hidden=8),
    "gru_lengths": OnnxCase("GRU", lengths=True, hidden=8),
}


def broken_gru():
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node("GRU", ["X", "W", "R"], ["Y", "Y_h"], name="gru1", hidden_size=4, clip=-1.0,
                            direction="bidirectional", activations=["Sigmoid", "Tanh"])
    weights = [numpy_helper.from_array(np.zeros((2, 12, 3), np.float32), "W"),
               numpy_helper.from_array(np.zeros((2, 12, 5), np.float32), "R")]
    graph = helper.make_graph([node], "broken", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [5, 2, 3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [5, 2, 3, 4]),
                               helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [2, 2, 4])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


LOWERED = HERE / "lowered"
FAULT_STEP = 3
STEPS, BATCH, SIZE, HIDDEN = 6, 2, 3, 8


def _uniform(rng, *shape: int, scale: float = 0.5):
    import numpy as np

    return rng.uniform(-scale, scale, shape).astype(np.float32)


def loop_lstm(fault: bool = False):
    """A tf2onnx-style Loop of plain ops running a Keras LSTM cell once per step."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(21)
    info, node = helper.make_tensor_value_info, helper.make_node
    inits = [numpy_helper.from_array(array, name) for name, array in (
        ("kernel", _uniform(rng, SIZE, 4 * HIDDEN)), ("recurrent_kernel", _uniform(rng, HIDDEN, 4 * HIDDEN)),
        ("bias", _uniform(rng, 4 * HIDDEN)), ("zeros", np.zeros((BATCH, HIDDEN), np.float32)),
        ("zero", np.array(0, np.int64)), ("one", np.array(1, np.int64)), ("true", np.array(True)),
        ("split", np.array([HIDDEN] * 4, np.int64)), ("first", np.array([0], np.int64)),
        ("fault_step", np.array(FAULT_STEP, np.int64)), ("fault", np.eye(1, 4 * HIDDEN, 5, dtype=np.float32)[0]))]
    body = [node("Gather", ["X", "t"], ["x_t"], name="while/TensorArrayReadV3", axis=0),
            node("MatMul", ["x_t", "kernel"], ["xw"], name="while/lstm_cell/MatMul"),
            node("MatMul", ["h", "recurrent_kernel"], ["hr"], name="while/lstm_cell/MatMul_1"),
            node("Add", ["xw", "hr"], ["sum"], name="while/lstm_cell/add")]
    if fault:  # the bias, plus a vector at iteration FAULT_STEP only
        body += [node("Equal", ["iteration", "fault_step"], ["at_fault"], name="while/fault/Equal"),
                 node("Cast", ["at_fault"], ["at_fault_f"], name="while/fault/Cast", to=TensorProto.FLOAT),
                 node("Mul", ["at_fault_f", "fault"], ["shift"], name="while/fault/Mul"),
                 node("Add", ["bias", "shift"], ["bias_t"], name="while/fault/Add")]
    body += [node("Add", ["sum", "bias_t" if fault else "bias"], ["gates"], name="while/lstm_cell/BiasAdd"),
             node("Split", ["gates", "split"], ["i", "f", "cc", "o"], name="while/lstm_cell/split", axis=1),
             node("Sigmoid", ["i"], ["si"], name="while/lstm_cell/Sigmoid"),
             node("Sigmoid", ["f"], ["sf"], name="while/lstm_cell/Sigmoid_1"),
             node("Tanh", ["cc"], ["tc"], name="while/lstm_cell/Tanh"),
             node("Mul", ["sf", "c"], ["fc"], name="while/lstm_cell/mul"),
             node("Mul", ["si", "tc"], ["ic"], name="while/lstm_cell/mul_1"),
             node("Add", ["fc", "ic"], ["c_out"], name="while/lstm_cell/add_1"),
             node("Sigmoid", ["o"], ["so"], name="while/lstm_cell/Sigmoid_2"),
             node("Tanh", ["c_out"], ["th"], name="while/lstm_cell/Tanh_1"),
             node("Mul", ["so", "th"], ["h_out"], name="while/lstm_cell/mul_2"),
             node("Identity", ["h_out"], ["h_scan"], name="while/TensorArrayWrite"),
             node("Add", ["t", "one"], ["t_out"], name="while/add"),
             node("Less", ["t_out", "trip"], ["cond_out"], name="while/Less")]
    state = [BATCH, HIDDEN]
    graph = helper.make_graph(body, "while_body",
                              [info("iteration", TensorProto.INT64, []), info("cond", TensorProto.BOOL, []),
                               info("t", TensorProto.INT64, []), info("h", TensorProto.FLOAT, state),
                               info("c", TensorProto.FLOAT, state)],
                              [info("cond_out", TensorProto.BOOL, []), info("t_out", TensorProto.INT64, []),
                               info("h_out", TensorProto.FLOAT, state), info("c_out", TensorProto.FLOAT, state),
                               info("h_scan", TensorProto.FLOAT, state)])
    main = [node("Shape", ["X"], ["shape"], name="Shape"),
            node("Gather", ["shape", "first"], ["trips"], name="Gather", axis=0),
            node("Squeeze", ["trips"], ["trip"], name="Squeeze"),
            node("Loop", ["trip", "true", "zero", "zeros", "zeros"], ["t_last", "h_last", "c_last", "Y"], body=graph,
                 name="while")]
    model = helper.make_graph(main, "tf2onnx_lstm", [info("X", TensorProto.FLOAT, [STEPS, BATCH, SIZE])],
                              [info("Y", TensorProto.FLOAT, [STEPS] + state), info("h_last", TensorProto.FLOAT, state),
                               info("c_last", TensorProto.FLOAT, state)], inits)
    return helper.make_model(model, opset_imports=[helper.make_opsetid("", 13)], producer_name="tf2onnx-style")


def unrolled_lstm(fault: bool = False):
    """An LSTM unrolled into two Gemms per step, ONNX's gate order, a zero initial state."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(22)
    info, node = helper.make_tensor_value_info, helper.make_node
    bias = _uniform(rng, 4 * HIDDEN)
    changed = bias.copy()
    changed[2 * HIDDEN + 1] += 0.5  # a forget gate's bias
    inits = [numpy_helper.from_array(array, name) for name, array in (
        ("W", _uniform(rng, 4 * HIDDEN, SIZE)), ("R", _uniform(rng, 4 * HIDDEN, HIDDEN)), ("Wb", bias),
        ("Wb_changed", changed), ("Rb", _uniform(rng, 4 * HIDDEN)), ("h0", np.zeros((BATCH, HIDDEN), np.float32)),
        ("c0", np.zeros((BATCH, HIDDEN), np.float32)), ("axis0", np.array([0], np.int64)),
        ("gate_split", np.array([HIDDEN] * 4, np.int64)))]
    nodes = [node("Split", ["X"], [f"x{t}_" for t in range(STEPS)], name="split_steps", axis=0,
                  num_outputs=STEPS)]
    h, c, ys = "h0", "c0", []
    for t in range(STEPS):
        s = f"lstm/step{t}/"
        wb = "Wb_changed" if fault and t == FAULT_STEP else "Wb"
        nodes += [node("Squeeze", [f"x{t}_", "axis0"], [f"x{t}"], name=s + "squeeze"),
                  node("Gemm", [f"x{t}", "W", wb], [s + "xw"], name=s + "gemm_x", transB=1),
                  node("Gemm", [h, "R", "Rb"], [s + "hr"], name=s + "gemm_h", transB=1),
                  node("Add", [s + "xw", s + "hr"], [s + "gates"], name=s + "add"),
                  node("Split", [s + "gates", "gate_split"], [s + g for g in "iofc"], name=s + "split", axis=1),
                  node("Sigmoid", [s + "i"], [s + "si"], name=s + "sigmoid_i"),
                  node("Sigmoid", [s + "o"], [s + "so"], name=s + "sigmoid_o"),
                  node("Sigmoid", [s + "f"], [s + "sf"], name=s + "sigmoid_f"),
                  node("Tanh", [s + "c"], [s + "tc"], name=s + "tanh_c"),
                  node("Mul", [s + "sf", c], [s + "fc"], name=s + "mul_f"),
                  node("Mul", [s + "si", s + "tc"], [s + "ic"], name=s + "mul_i"),
                  node("Add", [s + "fc", s + "ic"], [s + "c_t"], name=s + "c_t"),
                  node("Tanh", [s + "c_t"], [s + "th"], name=s + "tanh_h"),
                  node("Mul", [s + "so", s + "th"], [s + "h_t"], name=s + "h_t"),
                  node("Unsqueeze", [s + "h_t", "axis0"], [s + "y"], name=s + "unsqueeze")]
        h, c = s + "h_t", s + "c_t"
        ys.append(s + "y")
    nodes.append(node("Concat", ys, ["Y"], name="concat_steps", axis=0))
    graph = helper.make_graph(nodes, "unrolled_lstm", [info("X", TensorProto.FLOAT, [STEPS, BATCH, SIZE])],
                              [info("Y", TensorProto.FLOAT, [STEPS, BATCH, HIDDEN])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], producer_name="unrolled-style")


def lowered_models() -> None:
    import numpy as np
    import onnx

    LOWERED.mkdir(exist_ok=True)
    for name, make in (("loop_lstm", loop_lstm), ("unrolled_lstm", unrolled_lstm)):
        for suffix, fault in (("", False), ("_fault", True)):
            model = make(fault)
            onnx.checker.check_model(model, full_check=True)
            onnx.save(model, LOWERED / f"{name}{suffix}.onnx")
            print(f"wrote samples/models/lowered/{name}{suffix}.onnx")
    x = np.random.default_rng(23).standard_normal((STEPS, BATCH, SIZE)).astype(np.float32)
    np.savez(LOWERED / "lstm.inputs.npz", X=x)
    print("wrote samples/models/lowered/lstm.inputs.npz")


def f16_weights() -> None:
    """lstm_f16w: converted with compress_to_fp16, with onnxruntime's float32 outputs as expected ones."""
    import tempfile

    import numpy as np
    import onnxruntime

    case = OnnxCase("LSTM", hidden=64, seq=20, batch=2)
    with tempfile.TemporaryDirectory() as folder:
        xml = convert_onnx(case, Path(folder), compress=True)
        for suffix in (".xml", ".bin"):
            xml.with_suffix(suffix).replace(HERE / f"lstm_f16w{suffix}")
        inputs = onnx_inputs(case, seed=3)
        session = onnxruntime.InferenceSession(str(Path(folder) / f"{case.name}.onnx"))
        outputs = session.run(None, inputs)
    np.savez(HERE / "lstm_f16w.inputs.npz", **inputs)
    np.savez(HERE / "lstm_f16w.expected.npz", **{o.name: a for o, a in zip(session.get_outputs(), outputs)})
    print("wrote samples/models/lstm_f16w.xml, .bin, .inputs.npz, .expected.npz")


def amplifying_rnn() -> None:
    import numpy as np
    import openvino as ov
    import openvino.opset5 as ops

    rng = np.random.default_rng(0)
    hidden, size, steps, batch = 64, 8, 1000, 2
    orthogonal, _ = np.linalg.qr(rng.standard_normal((hidden, hidden)))
    x = ops.parameter([batch, steps, size], np.float32, name="X")
    h = ops.parameter([batch, 1, hidden], np.float32, name="H")
    node = ops.rnn_sequence(x, h, ops.constant(np.full(batch, steps, np.int32)),
                            ops.constant((rng.standard_normal((1, hidden, size)) * 0.5).astype(np.float32)),
                            ops.constant((1.5 * orthogonal)[None].astype(np.float32)),
                            ops.constant(np.zeros((1, hidden), np.float32)), hidden, "forward", name="rnn")
    ov.save_model(ov.Model(node.outputs(), [x, h]), str(HERE / "amplifying_rnn.xml"), compress_to_fp16=False)
    np.savez_compressed(HERE / "amplifying_rnn.npz", X=np.zeros((batch, steps, size), np.float32),
                        H=(0.5 * rng.standard_normal((batch, 1, hidden))).astype(np.float32))
    print("wrote samples/models/amplifying_rnn.xml, .bin, .npz")


def main() -> None:
    import numpy as np
    import onnx

    HERE.mkdir(exist_ok=True)
    lowered_models()
    onnx.save(broken_gru(), HERE / "broken_gru.onnx")
    print("wrote samples/models/broken_gru.onnx")
    for name, case in MODELS.items():
        xml = convert_onnx(case, HERE)
        for suffix in (".onnx", ".xml", ".bin"):
            xml.with_suffix(suffix).replace(HERE / f"{name}{suffix}")
        print(f"wrote samples/models/{name}.onnx, .xml, .bin")
    onnx_loop_lstm_model(HERE / "loop_peepholes.onnx", peepholes=True)
    rng = np.random.default_rng(4)
    np.savez(HERE / "loop_peepholes.npz", X=rng.standard_normal((3, 1, 2, 3)).astype(np.float32),
             trip=np.array(3, np.int64), h0=np.zeros((1, 2, 4), np.float32), c0=np.zeros((1, 2, 4), np.float32))
    print("wrote samples/models/loop_peepholes.onnx, .npz")
    xml = newest_opset_model(HERE)
    for suffix in (".xml", ".bin"):
        xml.with_suffix(suffix).replace(HERE / f"erfinv_gru{suffix}")
    print("wrote samples/models/erfinv_gru.xml, .bin")
    f16_weights()
    amplifying_rnn()
    streaming_gru_model(HERE / "streaming_gru.onnx")
    print("wrote samples/models/streaming_gru.onnx")


if __name__ == "__main__":
    main()
