"""Real models for the tests, made with tools no one here wrote (imported by tests; not a conftest).

ONNX graphs built with onnx.helper (GRU, LSTM and RNN nodes; one or two layers; uni- or
bidirectional; with a MatMul/Add head; weights as initializers or graph inputs; static or
dynamic dims; sequence lengths as an input or not) are converted by OpenVINO's own
``ov.convert_model`` and saved by ``ov.save_model``, with or without f16 compression.
Models built with openvino's opset API put the op between Transposes, a Broadcast of
ShapeOf and a head.  PyTorch modules are converted where torch is installed.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

GATES = {"GRU": 3, "LSTM": 4, "RNN": 1}
OUTPUTS = {"GRU": ["Y", "Y_h"], "LSTM": ["Y", "Y_h", "Y_c"], "RNN": ["Y", "Y_h"]}


@dataclass(frozen=True)
class OnnxCase:
    op: str = "GRU"
    layers: int = 1
    bidirectional: bool = False
    head: bool = True
    weights: str = "initializer"  # or "input"
    dynamic: bool = True
    lengths: bool = False  # sequence_lens as a graph input
    hidden: int = 6
    input_size: int = 5
    seq: int = 4
    batch: int = 3

    @property
    def name(self) -> str:
        return (f"{self.op.lower()}-{self.layers}l-{'bi' if self.bidirectional else 'fw'}-{self.weights}-"
                f"{'dyn' if self.dynamic else 'static'}{'-lens' if self.lengths else ''}{'-head' if self.head else ''}")

    @property
    def directions(self) -> int:
        return 2 if self.bidirectional else 1


def onnx_model(case: OnnxCase):
    """The ONNX model of ``case``: layer k reads layer k-1's Y, transposed and reshaped to
    [seq, batch, directions*hidden]; outputs: the last layer's Y_h (and a head on its Y)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)
    seq = "seq" if case.dynamic else case.seq
    batch = "batch" if case.dynamic else case.batch
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, case.input_size])]
    if case.lengths:
        inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [batch]))
    initializers, nodes, outputs = [], [], []
    source, width = "x", case.input_size
    gates, hidden, d = GATES[case.op], case.hidden, case.directions
    for layer in range(case.layers):
        scale = 1 / np.sqrt(hidden)
        arrays = {f"W{layer}": rng.uniform(-scale, scale, (d, gates * hidden, width)),
                  f"R{layer}": rng.uniform(-scale, scale, (d, gates * hidden, hidden)),
                  f"B{layer}": rng.uniform(-scale, scale, (d, 2 * gates * hidden))}
        for name, array in arrays.items():
            if case.weights == "input":
                inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(array.shape)))
            else:
                initializers.append(numpy_helper.from_array(array.astype(np.float32), name))
        names = [f"{out}{layer}" for out in OUTPUTS[case.op]]
        nodes.append(helper.make_node(case.op, [source, *arrays, "lens" if case.lengths else ""], names,
                                      hidden_size=hidden, direction="bidirectional" if case.bidirectional else "forward",
                                      name=f"{case.op.lower()}{layer}"))
        nodes.append(helper.make_node("Transpose", [names[0]], [f"t{layer}"], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Reshape", [f"t{layer}", "flat"], [f"y{layer}"]))
        source, width = f"y{layer}", d * hidden
    initializers.append(numpy_helper.from_array(np.array([0, 0, -1], np.int64), "flat"))
    last = case.layers - 1
    # every graph output with its shape: onnx.checker requires the field (irtool validate, ONNX003)
    outputs.append(helper.make_tensor_value_info(f"Y_h{last}", TensorProto.FLOAT, [d, batch, hidden]))
    if case.head:
        initializers += [numpy_helper.from_array(rng.uniform(-1, 1, (width, 2)).astype(np.float32), "head_w"),
                         numpy_helper.from_array(rng.uniform(-1, 1, (2,)).astype(np.float32), "head_b")]
        nodes += [helper.make_node("MatMul", [source, "head_w"], ["mm"]),
                  helper.make_node("Add", ["mm", "head_b"], ["z"])]
        outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [seq, batch, 2]))
    graph = helper.make_graph(nodes, case.name, inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model


def convert_onnx(case: OnnxCase, folder: Path, compress: bool = False) -> Path:
    """``case`` as ONNX, converted by ov.convert_model and saved as IR (f16-compressed if asked)."""
    import onnx
    import openvino as ov

    onnx_path = folder / f"{case.name}.onnx"
    onnx.save(onnx_model(case), onnx_path)
    xml = folder / f"{case.name}{'-f16' if compress else ''}.xml"
    ov.save_model(ov.convert_model(str(onnx_path)), str(xml), compress_to_fp16=compress)
    return xml


def onnx_inputs(case: OnnxCase, seed: int = 0, seq: int | None = None, batch: int | None = None,
                lengths: list[int] | None = None) -> dict[str, np.ndarray]:
    """Inputs by ONNX input name (which the converted model keeps)."""
    rng = np.random.default_rng(seed)
    seq, batch = seq or case.seq, batch or case.batch
    arrays = {"x": rng.uniform(-1, 1, (seq, batch, case.input_size)).astype(np.float32)}
    if case.lengths:
        arrays["lens"] = np.array(lengths or [seq] * batch, np.int32)
    if case.weights == "input":
        gates, d, width = GATES[case.op], case.directions, case.input_size
        for layer in range(case.layers):
            scale = 1 / np.sqrt(case.hidden)
            arrays[f"W{layer}"] = rng.uniform(-scale, scale, (d, gates * case.hidden, width)).astype(np.float32)
            arrays[f"R{layer}"] = rng.uniform(-scale, scale, (d, gates * case.hidden, case.hidden)).astype(np.float32)
            arrays[f"B{layer}"] = rng.uniform(-scale, scale, (d, 2 * gates * case.hidden)).astype(np.float32)
            width = d * case.hidden
    return arrays


def opset_model(op: str, folder: Path) -> Path:
    """A recurrent op among other ops, built with openvino's opset API: x [seq, batch, input] ->
    Transpose -> the op (initial state broadcast from ShapeOf(x)) -> Squeeze/MatMul head; or a
    cell between a MatMul and a head."""
    import openvino as ov
    import openvino.opset1 as o1
    import openvino.opset3 as o3
    import openvino.opset4 as o4
    import openvino.opset5 as o5

    rng = np.random.default_rng(3)
    hidden, size = 6, 5

    def const(*shape):
        return o1.constant(rng.uniform(-0.4, 0.4, shape).astype(np.float32))

    if op in ("GRUSequence", "LSTMSequence", "RNNSequence"):
        gates = {"GRUSequence": 3, "LSTMSequence": 4, "RNNSequence": 1}[op]
        x = o1.parameter([-1, -1, size], np.float32, name="x")
        batch_first = o1.transpose(x, o1.constant(np.array([1, 0, 2], np.int64)))
        shape = o3.shape_of(batch_first, "i64")
        batch = o1.gather(shape, o1.constant(np.array([0], np.int64)), o1.constant(np.array(0, np.int64)))
        state_shape = o1.concat([batch, o1.constant(np.array([1, hidden], np.int64))], 0)
        state = o3.broadcast(o1.constant(np.float32(0)), state_shape)
        seq = o1.gather(shape, o1.constant(np.array([1], np.int64)), o1.constant(np.array(0, np.int64)))
        lengths = o3.broadcast(o1.convert(seq, "i32"), batch)
        weights = (const(1, gates * hidden, size), const(1, gates * hidden, hidden), const(1, gates * hidden))
        if op == "GRUSequence":
            node = o5.gru_sequence(batch_first, state, lengths, *weights, hidden, "forward")
        elif op == "RNNSequence":
            node = o5.rnn_sequence(batch_first, state, lengths, *weights, hidden, "forward")
        else:
            node = o5.lstm_sequence(batch_first, state, state, lengths, *weights, hidden, "forward")
        last = o1.squeeze(node.output(1), o1.constant(np.array([1], np.int64)))
    else:
        x = o1.parameter([-1, size + 1], np.float32, name="x")
        inner = o1.matmul(x, const(size + 1, size), False, False)
        h = o1.parameter([-1, hidden], np.float32, name="h")
        gates = {"GRUCell": 3, "LSTMCell": 4, "RNNCell": 1}[op]
        weights = (const(gates * hidden, size), const(gates * hidden, hidden), const(gates * hidden))
        if op == "GRUCell":
            node = o3.gru_cell(inner, h, *weights, hidden)
        elif op == "LSTMCell":
            c = o1.parameter([-1, hidden], np.float32, name="c")
            node = o4.lstm_cell(inner, h, c, *weights, hidden)
        else:
            node = o3.rnn_cell(inner, h, *weights, hidden, ["tanh"], [], [], 0.0)
        last = node.output(0)
    head = o1.add(o1.matmul(last, const(hidden, 2), False, False), const(2))
    parameters = [p for p in (locals().get("x"), locals().get("h"), locals().get("c")) if p is not None]
    path = folder / f"opset-{op}.xml"
    ov.save_model(ov.Model([head], parameters, f"opset-{op}"), str(path), compress_to_fp16=False)
    return path



def newest_opset_model(folder: Path) -> Path:
    """A GRUSequence fed through ErfInv, an op of opset17 (openvino 2026.x) that no earlier opset
    has: a model that openvino 2026 reads and 2025.4.1 cannot (its opsets end at opset16)."""
    import openvino as ov
    import openvino.opset1 as o1
    import openvino.opset5 as o5
    import openvino.opset17 as o17

    rng = np.random.default_rng(5)
    x = o1.parameter([2, 4, 3], np.float32, name="x")
    h = o1.parameter([2, 1, 5], np.float32, name="h")
    fed = o17.erfinv(o1.multiply(x, o1.constant(np.float32(0.5))), name="erfinv")  # inside ErfInv's (-1, 1)
    weights = [o1.constant(rng.uniform(-0.4, 0.4, shape).astype(np.float32))
               for shape in ((1, 15, 3), (1, 15, 5), (1, 15))]
    node = o5.gru_sequence(fed, h, o1.constant(np.array([4, 4], np.int32)), *weights, 5, "forward", name="gru")
    path = folder / "newest-opset-gru.xml"
    ov.save_model(ov.Model([node.output(0), node.output(1)], [x, h], "newest-opset-gru"), str(path))
    return path


# ----------------------------------------------------------------------------- recurrent nodes in bodies

def _uniform(rng, shape, scale=0.5):
    return rng.uniform(-scale, scale, shape).astype(np.float32)


def ti_lstm_cell_model(path: Path, batch: int = 2, seq: int = 5, size: int = 3, hidden: int = 4) -> Path:
    """A TensorIterator built through openvino's opset API, as OpenVINO's own CPU tests make them:
    X [batch, seq, size] sliced along axis 1, an LSTMCell (named 'cell') in the body, its
    states carried from step to step; output: the last H."""
    import openvino as ov
    import openvino.opset4 as ops4
    import openvino.opset8 as ops

    rng = np.random.default_rng(3)
    x = ops.parameter([batch, seq, size], np.float32, name="X")
    h0 = ops.parameter([batch, hidden], np.float32, name="H0")
    c0 = ops.parameter([batch, hidden], np.float32, name="C0")
    xt = ops.parameter([batch, 1, size], np.float32)
    ht, ct = ops.parameter([batch, hidden], np.float32), ops.parameter([batch, hidden], np.float32)
    cell = ops4.lstm_cell(ops.squeeze(xt, ops.constant(np.array([1], np.int64))), ht, ct,
                          ops.constant(_uniform(rng, (4 * hidden, size))), ops.constant(_uniform(rng, (4 * hidden, hidden))),
                          ops.constant(_uniform(rng, (4 * hidden,))), hidden, name="cell")
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([ops.result(cell.output(0)), ops.result(cell.output(1))], [xt, ht, ct], "body"))
    ti.set_sliced_input(xt, x.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(ht, h0.output(0), cell.output(0))
    ti.set_merged_input(ct, c0.output(0), cell.output(1))
    ti.set_friendly_name("ti")
    ov.save_model(ov.Model([ti.get_iter_value(cell.output(0), -1)], [x, h0, c0], "ti_lstm_cell"), str(path),
                  compress_to_fp16=False)
    return path


def loop_gru_cell_model(path: Path, top_cells: int = 2, batch: int = 2, seq: int = 4, size: int = 3,
                        hidden: int = 4, weights_outside: bool = False) -> Path:
    """``top_cells`` GRUCells at the top level (named 'top0'...) and a Loop ('loop') whose body
    holds a GRUCell ('inner') run once per step for ``steps`` (an input) steps over X [seq,
    batch, size], as TensorFlow's GRUBlockCell in a while loop converts; outputs: the top cells'
    H and the loop's last H.  ``weights_outside``: the inner cell's W, R, B are Consts of the
    outer graph passed into the body as invariant inputs."""
    import openvino as ov
    import openvino.opset3 as ops3
    import openvino.opset8 as ops

    rng = np.random.default_rng(4)
    x = ops.parameter([seq, batch, size], np.float32, name="X")
    h0 = ops.parameter([batch, hidden], np.float32, name="H0")
    steps = ops.parameter([], np.int64, name="steps")
    outputs, h = [], h0
    for k in range(top_cells):
        h = ops3.gru_cell(ops.gather(x, ops.constant(np.int64(k % seq)), ops.constant(np.int64(0))), h,
                          ops.constant(_uniform(rng, (3 * hidden, size))), ops.constant(_uniform(rng, (3 * hidden, hidden))),
                          ops.constant(_uniform(rng, (3 * hidden,))), hidden, name=f"top{k}")
        outputs.append(h.output(0))
    iteration = ops.parameter([], np.int64)
    xs, ht = ops.parameter([seq, batch, size], np.float32), ops.parameter([batch, hidden], np.float32)
    xt = ops.gather(xs, ops.floor_mod(iteration, ops.constant(np.int64(seq))), ops.constant(np.int64(0)))
    arrays = [_uniform(rng, shape) for shape in ((3 * hidden, size), (3 * hidden, hidden), (3 * hidden,))]
    weights = [ops.parameter(list(a.shape), np.float32) for a in arrays] if weights_outside else \
        [ops.constant(a) for a in arrays]
    inner = ops3.gru_cell(xt, ht, *weights, hidden, name="inner")
    body = ov.Model([ops.result(ops.constant(True)), ops.result(inner.output(0))],
                    [iteration, xs, ht] + (weights if weights_outside else []), "body")
    loop = ops.loop(steps, ops.constant(True))
    loop.set_function(body)
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(xs, x.output(0))
    if weights_outside:
        for parameter, array in zip(weights, arrays):
            loop.set_invariant_input(parameter, ops.constant(array).output(0))
    loop.set_merged_input(ht, h.output(0), inner.output(0))
    loop.set_friendly_name("loop")
    outputs.append(loop.get_iter_value(inner.output(0), -1))
    ov.save_model(ov.Model(outputs, [x, h0, steps], "loop_gru_cell"), str(path), compress_to_fp16=False)
    return path


def onnx_if_lstm_model(path: Path, batch: int = 2, seq: int = 3, size: int = 3, hidden: int = 4,
                       dynamic: bool = False) -> Path:
    """An ONNX model built with onnx.helper, as silero-vad holds its LSTMs: If(first) runs LSTM
    'lstm_a' in its then branch; its else branch holds If(second), an LSTM in each branch
    ('lstm_b', 'lstm_c'); every branch outputs an LSTM's Y_h [1, batch, hidden] of X [seq,
    batch, size] (seq and batch named dims with ``dynamic``)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)

    def branch(name: str) -> Any:
        weights = [numpy_helper.from_array(_uniform(rng, shape), f"{name}_{w}")
                   for w, shape in (("W", (1, 4 * hidden, size)), ("R", (1, 4 * hidden, hidden)), ("B", (1, 8 * hidden)))]
        node = helper.make_node("LSTM", ["X", *(w.name for w in weights)], ["", f"{name}_h"], hidden_size=hidden,
                                name=name)
        return helper.make_graph([node], f"{name}_graph", [], [helper.make_tensor_value_info(
            f"{name}_h", TensorProto.FLOAT, [1, batch, hidden])], weights)

    inner = helper.make_node("If", ["second"], ["inner_h"], then_branch=branch("lstm_b"), else_branch=branch("lstm_c"),
                             name="inner_if")
    outer_else = helper.make_graph([inner], "outer_else", [], [helper.make_tensor_value_info(
        "inner_h", TensorProto.FLOAT, [1, batch, hidden])])
    outer = helper.make_node("If", ["first"], ["Y_h"], then_branch=branch("lstm_a"), else_branch=outer_else,
                             name="outer_if")
    x_dims = ["seq", "batch", size] if dynamic else [seq, batch, size]
    graph = helper.make_graph([outer], "if_lstm",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_dims),
                               helper.make_tensor_value_info("first", TensorProto.BOOL, []),
                               helper.make_tensor_value_info("second", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT,
                                                             [1, x_dims[1], hidden])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def onnx_loop_lstm_model(path: Path, steps: int = 3, batch: int = 2, size: int = 3, hidden: int = 4,
                         peepholes: bool = False, scan: bool = False, seq: int = 1, scan_axis: int = 0,
                         constant_trip: int | None = None) -> Path:
    """An ONNX model built with onnx.helper whose Loop ('steps') runs LSTM 'cell' once per iteration
    on ``seq`` steps of X [steps, seq, batch, size], carrying its state (h, c) from each iteration to
    the next; outputs the last state and every iteration's Y_h.  ``peepholes``: the LSTM has P with
    the input and forget gates' peepholes (which read the previous cell state, zero at iteration
    0) and none on the output gate, so the LSTM computes what it would without P at iteration 0
    only.  ``scan``: the same as a Scan over X's axis ``scan_axis`` (X [seq, steps, batch, size] for
    axis 1) in place of the Loop.  ``constant_trip``: the Loop's trip count a Constant node of that
    value (the graph then has no 'trip' input), and no per-iteration output (measured with openvino
    2026.4.1: a Loop of constant trip count 0 with one makes its CPU plugin kill the process, SIGFPE,
    compiling the model itself)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(9)
    weights = [numpy_helper.from_array(_uniform(rng, shape), name)
               for name, shape in (("W", (1, 4 * hidden, size)), ("R", (1, 4 * hidden, hidden)), ("B", (1, 8 * hidden)))]
    if peepholes:
        p = np.concatenate([_uniform(rng, (1, hidden), 1.0), np.zeros((1, hidden)), _uniform(rng, (1, hidden), 1.0)],
                           axis=1)  # ONNX orders P as i, o, f
        weights.append(numpy_helper.from_array(p.astype(np.float32), "P"))
    state = [1, batch, hidden]
    lstm_inputs = ["x_t", "W", "R", "B", "", "h_in", "c_in"] + (["P"] if peepholes else [])
    lstm = helper.make_node("LSTM", lstm_inputs, ["", "h_out", "c_out"], hidden_size=hidden, name="cell")
    copy = helper.make_node("Identity", ["h_out"], ["h_scan"])
    info = helper.make_tensor_value_info
    outputs = [info("h_out", TensorProto.FLOAT, state), info("c_out", TensorProto.FLOAT, state)]
    outputs += [info("h_scan", TensorProto.FLOAT, state)] if constant_trip is None else []
    if scan:
        body = helper.make_graph([lstm, copy], "scan_body",
                                 [info("h_in", TensorProto.FLOAT, state), info("c_in", TensorProto.FLOAT, state),
                                  info("x_t", TensorProto.FLOAT, [seq, batch, size])], outputs)
        container = helper.make_node("Scan", ["h0", "c0", "X"], ["h_last", "c_last", "hs"], body=body,
                                     num_scan_inputs=1, scan_input_axes=[scan_axis], name="steps")
        x_dims = [steps, seq, batch, size] if scan_axis == 0 else [seq, steps, batch, size]
        inputs = [info("X", TensorProto.FLOAT, x_dims)]
    else:
        pick = helper.make_node("Gather", ["X", "iter"], ["x_t"], axis=0)
        keep = helper.make_node("Identity", ["cond_in"], ["cond_out"])
        body = helper.make_graph([pick, lstm, keep] + ([copy] if constant_trip is None else []), "loop_body",
                                 [info("iter", TensorProto.INT64, []), info("cond_in", TensorProto.BOOL, []),
                                  info("h_in", TensorProto.FLOAT, state), info("c_in", TensorProto.FLOAT, state)],
                                 [info("cond_out", TensorProto.BOOL, [])] + outputs)
        container = helper.make_node("Loop", ["trip", "", "h0", "c0"],
                                     ["h_last", "c_last"] + (["hs"] if constant_trip is None else []), body=body,
                                     name="steps")
        inputs = [info("X", TensorProto.FLOAT, [steps, seq, batch, size])]
        if constant_trip is None:
            inputs.append(info("trip", TensorProto.INT64, []))
        else:
            trip = helper.make_node("Constant", [], ["trip"], value=numpy_helper.from_array(np.array(constant_trip)))
            container = [trip, container]
    graph = helper.make_graph(container if isinstance(container, list) else [container], "loop_lstm",
                              inputs + [info("h0", TensorProto.FLOAT, state), info("c0", TensorProto.FLOAT, state)],
                              [info("h_last", TensorProto.FLOAT, state), info("c_last", TensorProto.FLOAT, state),
                               info("hs", TensorProto.FLOAT, [steps] + state)][:None if constant_trip is None else 2],
                              weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def onnx_nested_loop_model(path: Path, ragged: bool, outer: int = 3, inner: int = 2, batch: int = 2, size: int = 3,
                           hidden: int = 4) -> Path:
    """An ONNX Loop ('outer') whose body runs a Loop ('inner') whose body runs RNN 'deep' on one step of
    X [inner, 1, batch, size] (a graph input, read from the outer scope), carrying h through both
    loops.  The inner trip count is the graph input 'trip' (the same at every outer iteration), or
    with ``ragged`` the outer iteration number (0, 1, 2: a different count at each)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)
    weights = [numpy_helper.from_array(_uniform(rng, (1, hidden, size)), "W"),
               numpy_helper.from_array(_uniform(rng, (1, hidden, hidden)), "R")]
    info = helper.make_tensor_value_info
    state = [1, batch, hidden]
    inner_body = helper.make_graph(
        [helper.make_node("Gather", ["X", "it_i"], ["x_i"], axis=0),
         helper.make_node("RNN", ["x_i", "W", "R", "", "", "h_i"], ["", "h_i_out"], hidden_size=hidden, name="deep"),
         helper.make_node("Identity", ["cond_i"], ["cond_i_out"])],
        "inner_body", [info("it_i", TensorProto.INT64, []), info("cond_i", TensorProto.BOOL, []),
                       info("h_i", TensorProto.FLOAT, state)],
        [info("cond_i_out", TensorProto.BOOL, []), info("h_i_out", TensorProto.FLOAT, state)])
    outer_body = helper.make_graph(
        [helper.make_node("Loop", ["it_o" if ragged else "trip", "", "h_o"], ["h_o_out"], body=inner_body,
                          name="inner"),
         helper.make_node("Identity", ["cond_o"], ["cond_o_out"])],
        "outer_body", [info("it_o", TensorProto.INT64, []), info("cond_o", TensorProto.BOOL, []),
                       info("h_o", TensorProto.FLOAT, state)],
        [info("cond_o_out", TensorProto.BOOL, []), info("h_o_out", TensorProto.FLOAT, state)])
    graph = helper.make_graph(
        [helper.make_node("Loop", ["steps", "", "h0"], ["h_last"], body=outer_body, name="outer")], "nested",
        [info("X", TensorProto.FLOAT, [inner, 1, batch, size]), info("steps", TensorProto.INT64, []),
         info("trip", TensorProto.INT64, []), info("h0", TensorProto.FLOAT, state)],
        [info("h_last", TensorProto.FLOAT, state)], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def ti_lengths_model(path: Path, iterations: int = 4, batch: int = 3, seq: int = 4, size: int = 3,
                     hidden: int = 4) -> Path:
    """A TensorIterator whose body holds an LSTMSequence ('seq') with dynamic batch, fed per
    iteration a slice of X [iterations, batch, seq, size] and of sequence lengths L
    [iterations, batch]: ragged lengths in a dynamic-shape body reach OpenVINO's CPU
    sequence_lengths bug (samples/suites/full.xfail.toml) at that iteration only."""
    import openvino as ov
    import openvino.opset5 as ops5
    import openvino.opset8 as ops

    rng = np.random.default_rng(6)
    x = ops.parameter([iterations, -1, seq, size], np.float32, name="X")
    lengths = ops.parameter([iterations, -1], np.int32, name="L")
    h0, c0 = (ops.parameter([-1, 1, hidden], np.float32, name=name) for name in ("H0", "C0"))
    xt, lt = ops.parameter([1, -1, seq, size], np.float32), ops.parameter([1, -1], np.int32)
    ht, ct = ops.parameter([-1, 1, hidden], np.float32), ops.parameter([-1, 1, hidden], np.float32)
    axis = ops.constant(np.array([0], np.int64))
    node = ops5.lstm_sequence(ops.squeeze(xt, axis), ht, ct, ops.squeeze(lt, axis),
                              ops.constant(_uniform(rng, (1, 4 * hidden, size))),
                              ops.constant(_uniform(rng, (1, 4 * hidden, hidden))),
                              ops.constant(_uniform(rng, (1, 4 * hidden))), hidden, "forward", name="seq")
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([ops.result(node.output(1)), ops.result(node.output(2))], [xt, lt, ht, ct], "body"))
    ti.set_sliced_input(xt, x.output(0), 0, 1, 1, -1, 0)
    ti.set_sliced_input(lt, lengths.output(0), 0, 1, 1, -1, 0)
    ti.set_merged_input(ht, h0.output(0), node.output(1))
    ti.set_merged_input(ct, c0.output(0), node.output(2))
    ti.set_friendly_name("ti")
    ov.save_model(ov.Model([ti.get_iter_value(node.output(1), -1)], [x, lengths, h0, c0], "ti_lengths"), str(path),
                  compress_to_fp16=False)
    return path


def loop_if_gru_cell_model(path: Path, seq: int = 5, batch: int = 2, size: int = 3, hidden: int = 4) -> Path:
    """A Loop ('loop') over X [seq, batch, size] whose body holds an If ('pick'): at even
    iterations its then branch runs a GRUCell ('even_cell'), at odd ones its else branch halves H."""
    import openvino as ov
    import openvino.opset3 as ops3
    import openvino.opset8 as ops

    rng = np.random.default_rng(8)
    x, h0 = ops.parameter([seq, batch, size], np.float32, name="X"), ops.parameter([batch, hidden], np.float32, name="H0")
    iteration = ops.parameter([], np.int64)
    xs, ht = ops.parameter([seq, batch, size], np.float32), ops.parameter([batch, hidden], np.float32)
    xt = ops.gather(xs, iteration, ops.constant(np.int64(0)))
    even = ops.equal(ops.floor_mod(iteration, ops.constant(np.int64(2))), ops.constant(np.int64(0)))
    then_x, then_h = ops.parameter([batch, size], np.float32), ops.parameter([batch, hidden], np.float32)
    cell = ops3.gru_cell(then_x, then_h, ops.constant(_uniform(rng, (3 * hidden, size))),
                         ops.constant(_uniform(rng, (3 * hidden, hidden))), ops.constant(_uniform(rng, (3 * hidden,))),
                         hidden, name="even_cell")
    then_result = ops.result(cell)
    else_h = ops.parameter([batch, hidden], np.float32)
    else_result = ops.result(ops.multiply(else_h, ops.constant(np.float32(0.5))))
    pick = ops.if_op(even.output(0))
    pick.set_then_body(ov.Model([then_result], [then_x, then_h], "then"))
    pick.set_else_body(ov.Model([else_result], [else_h], "else"))
    pick.set_friendly_name("pick")
    pick.set_input(xt.output(0), then_x, None)
    pick.set_input(ht.output(0), then_h, else_h)
    h_next = pick.set_output(then_result, else_result)
    loop = ops.loop(ops.constant(np.int64(seq)), ops.constant(True))
    loop.set_function(ov.Model([ops.result(ops.constant(True)), ops.result(h_next)], [iteration, xs, ht], "body"))
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(xs, x.output(0))
    loop.set_merged_input(ht, h0.output(0), h_next)
    loop.set_friendly_name("loop")
    ov.save_model(ov.Model([loop.get_iter_value(h_next, -1)], [x, h0], "loop_if"), str(path), compress_to_fp16=False)
    return path


# ----------------------------------------------------------------------------- front ends before the node
# ONNX graphs whose dynamic dims reach an LSTM through ops OpenVINO's symbols do not cross
# (Conv, MaxPool, TopK), built with onnx.helper and converted by ov.convert_model.
FRONT_ENDS = ("speech", "ocr", "packed")


def front_end_onnx(kind: str, hidden: int = 4, declared: bool = True, stride: int = 2):
    """An ONNX model of ``kind``: "speech" (x [N, 3, T] -> Conv1d kernel 3, ``stride`` -> Relu -> Transpose ->
    LSTM), "ocr" (an image x [N, 1, 8, W] -> Conv2d -> MaxPool 2x2 -> Transpose -> Reshape ->
    bidirectional LSTM) or "packed" (x [T, N, 3] and lengths [N], sorted by TopK and x gathered
    by its indices, as PyTorch's pack_padded_sequence does, -> LSTM with sequence_lens).  With
    ``declared`` False the speech model's input has no shape at all (OpenVINO's ONNX frontend
    then converts it only with input shapes: its Conv needs the input's rank)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)

    def init(name: str, shape: tuple[int, ...], scale: float = 0.5) -> Any:
        return numpy_helper.from_array(rng.uniform(-scale, scale, shape).astype(np.float32), name)

    def lstm(source: str, width: int, directions: int = 1, lengths: str = "") -> list[Any]:
        initializers.extend([init("W", (directions, 4 * hidden, width)), init("R", (directions, 4 * hidden, hidden)),
                             init("B", (directions, 8 * hidden))])
        return [helper.make_node("LSTM", [source, "W", "R", "B", lengths], ["Y", "Y_h"], hidden_size=hidden,
                                 name="lstm", direction="bidirectional" if directions == 2 else "forward")]

    initializers: list[Any] = []
    lengths_input = []
    if kind == "speech":
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "T"] if declared else None)
        initializers.append(init("K", (6, 3, 3)))
        nodes = [helper.make_node("Conv", ["x", "K"], ["c"], strides=[stride], pads=[1, 1], name="conv"),
                 helper.make_node("Relu", ["c"], ["r"]),
                 helper.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 1])] + lstm("t", 6)
    elif kind == "ocr":
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, "W"])
        initializers += [init("K", (4, 1, 3, 3)), numpy_helper.from_array(np.array([0, 0, 16], np.int64), "flat")]
        nodes = [helper.make_node("Conv", ["x", "K"], ["c"], pads=[1, 1, 1, 1], name="conv"),
                 helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
                 helper.make_node("Transpose", ["p"], ["t"], perm=[3, 0, 1, 2]),
                 helper.make_node("Reshape", ["t", "flat"], ["s"])] + lstm("s", 16, directions=2)
    elif kind == "packed":
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["T", "N", 3])
        lengths_input = [helper.make_tensor_value_info("lengths", TensorProto.INT64, ["N"])]
        nodes = [helper.make_node("Shape", ["lengths"], ["k"]),
                 helper.make_node("TopK", ["lengths", "k"], ["sorted", "order"], axis=0, name="sort"),
                 helper.make_node("Gather", ["x", "order"], ["xs"], axis=1, name="gather"),
                 helper.make_node("Cast", ["sorted"], ["lens"], to=TensorProto.INT32)] + lstm("xs", 3, lengths="lens")
    else:
        raise ValueError(kind)
    graph = helper.make_graph(nodes, kind, [x, *lengths_input],
                              [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, None)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])


def front_end_model(kind: str, folder: Path, declared: bool = True, stride: int = 2) -> Path:
    """``front_end_onnx(kind)`` saved as .onnx (undeclared) or converted by ov.convert_model to IR."""
    import onnx

    model = front_end_onnx(kind, declared=declared, stride=stride)
    path = folder / f"{kind}{'' if declared else '-undeclared'}{'' if stride == 2 else f'-stride{stride}'}.onnx"
    onnx.save(model, str(path))
    if not declared:
        return path
    import openvino as ov

    xml = path.with_suffix(".xml")
    ov.save_model(ov.convert_model(str(path)), str(xml), compress_to_fp16=False)
    return xml


def streaming_gru_model(path: Path, fixed: int = 1) -> Path:
    """An ONNX model (onnx.helper) with a dynamic batch N: a GRU over x [N, 5, 3], and beside it a
    Loop over x's steps that concatenates each step with a state of fixed batch ``fixed`` (as a
    streaming model carries its state): any N but ``fixed`` breaks the Concat, which OpenVINO's
    CPU finds only when it runs."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = {name: numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)
               for name, shape in (("w", (7, 4)), ("W", (1, 12, 3)), ("R", (1, 12, 4)), ("B", (1, 24)))}
    matrix = [None, None]
    body = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["xt"], axis=1), helper.make_node("Concat", ["xt", "h_in"], ["cat"], axis=1),
         helper.make_node("MatMul", ["cat", "w"], ["m"]), helper.make_node("Tanh", ["m"], ["h_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("h_in", TensorProto.FLOAT, matrix)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, matrix)])
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["xs"], perm=[1, 0, 2]),
         helper.make_node("GRU", ["xs", "W", "R", "B"], ["y"], hidden_size=4),
         helper.make_node("Loop", ["steps", "", "h0"], ["hT"], body=body)],
        "streaming", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4),
         helper.make_tensor_value_info("hT", TensorProto.FLOAT, matrix)],
        [numpy_helper.from_array(np.int64(5), "steps"), numpy_helper.from_array(np.zeros((fixed, 4), np.float32), "h0"),
         *weights.values()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path
