"""Recurrences written out step by step in plain ONNX ops (onnx.helper), standard cells written
unusually and lookalikes of them, for tests/test_lowered_soundness.py.

Each model is an unrolled LSTM or GRU over STEPS steps with its initial states as model inputs
(so nothing folds them), X [STEPS, BATCH, SIZE] read one step at a time by Gather.  ``variant``
changes one thing:

- ``concat_twice``: each step multiplies Concat(x, h, h) by one weight, R split across the two
  blocks of h (a standard cell);
- ``sliced``: the gates cut from their joined pre-activation by a Slice each, not a Split;
- ``state_rounded``: h_t (and c_t) rounded through Cast to f16 and back before the next step;
- ``gates_rounded``: the gate pre-activations rounded through Cast to f16 and back;
- ``per_step``: every step multiplies by weights of its own (no recurrence of one set);
- ``projection``: the next step's state is h_t times a matrix P (an LSTM with a projection);
- ``residual``: the next step's state is h_t + x_t;
- ``batch_gather``: the forget (GRU: update) gate's pre-activation gathered across the batch
  axis, its rows swapped;
- ``z_reads_reset`` (GRU): z also adds (r*h)·Rz2, a term of the reset product;
- ``coupled`` (LSTM): the input gate is 1 - f (coupled input-forget gates);
- ``c_matrix`` (LSTM): every gate also adds c_{t-1}·P (a peephole of full matrix, no cell's);
- ``cell_clipped`` (LSTM): c_t clipped to [-0.3, 0.3] before the next step reads it;
- ``fork`` (LSTM): a second cell, the last step's weights on the first step's input, also reads the step
  before's states (the model returns the sum of both h_t): two steps of one step before, not one recurrence;
- ``readout`` (LSTM): each step also computes sigmoid(x_t·V) * relu(c_t), added to the model output: a
  second product of a sigmoid and a function of c_t beside h_t = sigmoid(O) * tanh(c_t);
- ``hard_sigmoid``: the gates' sigmoids HardSigmoid (alpha 0.2, beta 0.5), Keras's old default;
- ``clipped``: that written out as Keras 2 lowers it, Clip(0.2x + 0.5, 0, 1);
- ``relu6``: the gates' sigmoids as Keras 3's hard_sigmoid, Clip(x + 3, 0, 6) / 6;
- ``relu6_wide``: Clip(x + 3, 0, 6) / 5, which reaches 1.2: no hardsigmoid;
- ``shared`` : two recurrences side by side (X and X2) sharing their W, their R apart; the GRU
  of the other convention (h_t = z*n + (1-z)*h), whose z weights the recognizer negates.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

STEPS, BATCH, SIZE, HIDDEN = 4, 2, 3, 4


def _rng_weights(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.uniform(-0.6, 0.6, shape).astype(np.float32)


class _Graph:
    def __init__(self, seed: int) -> None:
        from onnx import helper

        self.helper = helper
        self.rng = np.random.default_rng(seed)
        self.nodes: list = []
        self.inits: list = []
        self.count = 0

    def init(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, kind: str, inputs: list[str], name: str, **attributes) -> str:
        self.nodes.append(self.helper.make_node(kind, inputs, [name], name=name, **attributes))
        return name

    def split(self, value: str, names: list[str], sliced: bool = False) -> list[str]:
        """``value`` cut into equal parts on its last axis: one Split, or (``sliced``) a Slice per part."""
        if sliced:
            width = HIDDEN
            return [self.op("Slice", [value, self.init(name + "_from", np.array([k * width], np.int64)),
                                      self.init(name + "_to", np.array([(k + 1) * width], np.int64)),
                                      self.init(name + "_axis", np.array([-1], np.int64))], name)
                    for k, name in enumerate(names)]
        self.nodes.append(self.helper.make_node("Split", [value], names, axis=1, num_outputs=len(names),
                                                name=names[0] + "_split"))
        return names

    def gate(self, value: str, name: str, variant: str) -> str:
        """A gate's activation: a sigmoid, or as ``variant`` writes it: ONNX's HardSigmoid (Keras's
        hard_sigmoid, alpha 0.2, beta 0.5), or that written out as Keras 2 lowers it, clip(0.2x + 0.5, 0, 1)."""
        if variant == "hard_sigmoid":
            return self.op("HardSigmoid", [value], name, alpha=0.2, beta=0.5)
        if variant == "clipped":
            scaled = self.op("Mul", [value, self.init(name + "_a", np.array(0.2, np.float32))], name + "_ax")
            shifted = self.op("Add", [scaled, self.init(name + "_b", np.array(0.5, np.float32))], name + "_axb")
            return self.op("Clip", [shifted, self.init(name + "_lo", np.array(0, np.float32)),
                                    self.init(name + "_hi", np.array(1, np.float32))], name)
        if variant in ("relu6", "relu6_wide"):
            shifted = self.op("Add", [value, self.init(name + "_b", np.array(3, np.float32))], name + "_x3")
            clipped = self.op("Clip", [shifted, self.init(name + "_lo", np.array(0, np.float32)),
                                       self.init(name + "_hi", np.array(6, np.float32))], name + "_relu6")
            divisor = 6 if variant == "relu6" else 5
            return self.op("Div", [clipped, self.init(name + "_d", np.array(divisor, np.float32))], name)
        return self.op("Sigmoid", [value], name)

    def rounded(self, value: str, name: str) -> str:
        from onnx import TensorProto

        half = self.op("Cast", [value], name + "_f16", to=TensorProto.FLOAT16)
        return self.op("Cast", [half], name + "_f32", to=TensorProto.FLOAT)


def lstm_steps(g: _Graph, x_name: str, prefix: str, variant: str, w: np.ndarray, r: np.ndarray) -> None:
    """One unrolled LSTM reading ``x_name`` [STEPS, BATCH, SIZE], its initial states ``<prefix>h0``,
    ``<prefix>c0``; its last h_t is ``<prefix>out``."""
    b = g.init(prefix + "B", _rng_weights(g.rng, 4 * HIDDEN))
    ws = [g.init(f"{prefix}W{t}", _rng_weights(g.rng, SIZE, 4 * HIDDEN)) for t in range(STEPS)] \
        if variant == "per_step" else [g.init(prefix + "W", w)] * STEPS
    rs = [g.init(f"{prefix}R{t}", _rng_weights(g.rng, HIDDEN, 4 * HIDDEN)) for t in range(STEPS)] \
        if variant == "per_step" else [g.init(prefix + "R", r)] * STEPS
    if variant == "concat_twice":
        r1 = _rng_weights(g.rng, HIDDEN, 4 * HIDDEN)
        joined = g.init(prefix + "WRR", np.concatenate([w, r1, r - r1]))
    if variant == "projection":
        p = g.init(prefix + "P", _rng_weights(g.rng, HIDDEN, HIDDEN))
    if variant == "batch_gather":
        swap = g.init(prefix + "swap", np.array([1, 0], np.int64))
    if variant == "readout":
        v = g.init(prefix + "V", _rng_weights(g.rng, SIZE, HIDDEN))
    if variant == "c_matrix":
        peep = g.init(prefix + "P", _rng_weights(g.rng, HIDDEN, 4 * HIDDEN))
    one = g.init(prefix + "one", np.ones(HIDDEN, np.float32))
    h, c = prefix + "h0", prefix + "c0"
    read = []
    for t in range(STEPS):
        s = f"{prefix}s{t}_"
        x = g.op("Gather", [x_name, g.init(s + "t", np.array(t, np.int64))], s + "x", axis=0)
        if variant == "concat_twice":
            gates = g.op("MatMul", [g.op("Concat", [x, h, h], s + "xhh", axis=1), joined], s + "xw")
        else:
            gates = g.op("Add", [g.op("MatMul", [x, ws[t]], s + "xw"), g.op("MatMul", [h, rs[t]], s + "hr")], s + "sum")
        gates = g.op("Add", [gates, b], s + "g")
        if variant == "c_matrix":
            gates = g.op("Add", [gates, g.op("MatMul", [c, peep], s + "cp")], s + "gc")
        if variant == "gates_rounded":
            gates = g.rounded(gates, s + "g")
        i, f, cc, o = g.split(gates, [s + k for k in "ifco"], sliced=variant == "sliced")
        if variant == "batch_gather":
            f = g.op("Gather", [f, swap], s + "f_rows", axis=0)
        sf = g.gate(f, s + "sf", variant)
        si = g.op("Sub", [one, sf], s + "si") if variant == "coupled" else g.gate(i, s + "si", variant)
        c_t = g.op("Add", [g.op("Mul", [sf, c], s + "fc"), g.op("Mul", [si, g.op("Tanh", [cc], s + "tc")], s + "ic")],
                   s + "c_t")
        h_t = g.op("Mul", [g.gate(o, s + "so", variant), g.op("Tanh", [c_t], s + "th")], s + "h_t")
        if variant == "state_rounded":
            h_t, c_t = g.rounded(h_t, s + "h"), g.rounded(c_t, s + "c")
        elif variant == "projection":
            h_t = g.op("MatMul", [h_t, p], s + "proj")
        elif variant == "residual":
            h_t = g.op("Add", [h_t, x], s + "res")
        elif variant == "cell_clipped":
            c_t = g.op("Clip", [c_t, g.init(s + "c_lo", np.array(-0.3, np.float32)),
                                g.init(s + "c_hi", np.array(0.3, np.float32))], s + "c_clip")
        elif variant == "fork" and t == STEPS - 1:
            k = s + "fork_"
            first_x = f"{prefix}s0_x"  # not x_t: the same cell of the same tensors is merged by OpenVINO
            sums = g.op("Add", [g.op("MatMul", [first_x, ws[t]], k + "xw"), g.op("MatMul", [h, rs[t]], k + "hr")],
                        k + "sum")
            i2, f2, cc2, o2 = g.split(g.op("Add", [sums, b], k + "g"), [k + n for n in "ifco"])
            c2 = g.op("Add", [g.op("Mul", [g.gate(f2, k + "sf", variant), c], k + "fc"),
                              g.op("Mul", [g.gate(i2, k + "si", variant), g.op("Tanh", [cc2], k + "tc")], k + "ic")],
                      k + "c_t")
            read.append(g.op("Mul", [g.gate(o2, k + "so", variant), g.op("Tanh", [c2], k + "th")], k + "h_t"))
        elif variant == "readout":
            read.append(g.op("Mul", [g.op("Sigmoid", [g.op("MatMul", [x, v], s + "xv")], s + "sv"),
                                     g.op("Relu", [c_t], s + "rc")], s + "read"))
        h, c = h_t, c_t
    g.op("Sum", [h, *read], prefix + "out") if read else g.op("Identity", [h], prefix + "out")


def gru_steps(g: _Graph, x_name: str, prefix: str, variant: str, w: np.ndarray, r: np.ndarray,
              flipped: bool = False) -> None:
    """One unrolled GRU (reset on the state: n = tanh(x·Wn + (r*h)·Rn + bn)) reading ``x_name``, its
    initial state ``<prefix>h0``; its last h_t is ``<prefix>out``.  ``flipped``: h_t = z*n + (1-z)*h."""
    wzr = g.init(prefix + "Wzr", w[:, :2 * HIDDEN].copy())
    wn = g.init(prefix + "Wn", w[:, 2 * HIDDEN:].copy())
    rzr = g.init(prefix + "Rzr", r[:, :2 * HIDDEN].copy())
    rn = g.init(prefix + "Rn", r[:, 2 * HIDDEN:].copy())
    if variant == "z_reads_reset":
        rz2 = g.init(prefix + "Rz2", _rng_weights(g.rng, HIDDEN, HIDDEN))
    if variant == "batch_gather":
        swap = g.init(prefix + "swap", np.array([1, 0], np.int64))
    one = g.init(prefix + "one", np.ones(HIDDEN, np.float32))
    bias = _rng_weights(g.rng, 3 * HIDDEN)
    bzr = g.init(prefix + "bzr", bias[:2 * HIDDEN])
    bn = g.init(prefix + "bn", bias[2 * HIDDEN:])
    h = prefix + "h0"
    for t in range(STEPS):
        s = f"{prefix}s{t}_"
        x = g.op("Gather", [x_name, g.init(s + "t", np.array(t, np.int64))], s + "x", axis=0)
        zr = g.op("Add", [g.op("Add", [g.op("MatMul", [x, wzr], s + "xzr"), g.op("MatMul", [h, rzr], s + "hzr")],
                               s + "zr_sum"), bzr], s + "zr")
        z_pre, r_pre = g.split(zr, [s + "z_pre", s + "r_pre"], sliced=variant == "sliced")
        r_t = g.gate(r_pre, s + "r", variant)
        rh = g.op("Mul", [r_t, h], s + "rh")
        if variant == "z_reads_reset":
            z_pre = g.op("Add", [z_pre, g.op("MatMul", [rh, rz2], s + "rhz")], s + "z_pre2")
        if variant == "batch_gather":
            z_pre = g.op("Gather", [z_pre, swap], s + "z_rows", axis=0)
        z = g.gate(z_pre, s + "z", variant)
        n_pre = g.op("Add", [g.op("Add", [g.op("MatMul", [x, wn], s + "xn"), g.op("MatMul", [rh, rn], s + "rhn")],
                                  s + "n_sum"), bn], s + "n_pre")
        n = g.op("Tanh", [n_pre], s + "n")
        carry = g.op("Sub", [one, z], s + "1mz") if variant != "complement" else \
            g.gate(g.op("Neg", [z_pre], s + "neg_z"), s + "1mz", variant)  # 1 - z as sigmoid(-a): a gate of its own
        first, second = (n, h) if flipped else (h, n)
        h_t = g.op("Add", [g.op("Mul", [z, first], s + "za"), g.op("Mul", [carry, second], s + "zb")], s + "h_t")
        if variant == "state_rounded":
            h_t = g.rounded(h_t, s + "h")
        elif variant == "residual":
            h_t = g.op("Add", [h_t, x], s + "res")
        h = h_t
    g.op("Identity", [h], prefix + "out")


def model(kind: str, variant: str = "standard", seed: int = 0):
    """The onnx.ModelProto of one recurrence (two, ``shared``) of ``kind`` (LSTM or GRU) written so."""
    from onnx import TensorProto, helper

    g = _Graph(seed)
    size = HIDDEN if variant == "residual" else SIZE
    gates = 4 if kind == "LSTM" else 3
    prefixes = ["a_", "b_"] if variant == "shared" else [""]
    w = _rng_weights(g.rng, size, gates * HIDDEN)
    inputs, outputs = [], []
    for k, prefix in enumerate(prefixes):
        x_name = f"X{k or ''}"
        r = _rng_weights(g.rng, HIDDEN, gates * HIDDEN)
        inputs.append(helper.make_tensor_value_info(x_name, TensorProto.FLOAT, [STEPS, BATCH, size]))
        inputs.append(helper.make_tensor_value_info(prefix + "h0", TensorProto.FLOAT, [BATCH, HIDDEN]))
        if kind == "LSTM":
            inputs.append(helper.make_tensor_value_info(prefix + "c0", TensorProto.FLOAT, [BATCH, HIDDEN]))
        shared_w = w if variant == "shared" else _rng_weights(g.rng, size, gates * HIDDEN) if k else w
        if kind == "LSTM":
            lstm_steps(g, x_name, prefix, variant, shared_w, r)
        else:
            gru_steps(g, x_name, prefix, variant, shared_w, r, flipped=variant == "shared")
        outputs.append(helper.make_tensor_value_info(prefix + "out", TensorProto.FLOAT, [BATCH, HIDDEN]))
    graph = helper.make_graph(g.nodes, f"{kind}_{variant}", inputs, outputs, g.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def save(kind: str, variant: str, folder: Path, form: str = "onnx", repeat_names: bool = False) -> Path:
    """The model as .onnx, or (``form`` "ir") converted by ov.convert_model and saved as IR by
    ov.save_model; ``repeat_names``: the IR's ops renamed so that every step repeats the first one's
    friendly names (as an IR written step by step from one template may)."""
    import onnx

    path = folder / f"{kind}_{variant}.onnx"
    onnx.save(model(kind, variant), path)
    if form == "onnx":
        return path
    import openvino as ov

    converted = ov.convert_model(path)
    if repeat_names:
        for op in converted.get_ordered_ops():
            name = op.get_friendly_name()
            for t in range(STEPS):
                name = name.replace(f"s{t}_", "s_")
            if op.get_type_name() not in ("Parameter", "Result"):
                op.set_friendly_name(name)
    target = folder / f"{kind}_{variant}{'_repeated' if repeat_names else ''}.xml"
    ov.save_model(converted, target, compress_to_fp16=False)
    return target


def streaming(seed: int = 0):
    """A streaming two-layer LSTM of one step, as DTLN's exports write it: its states a model input
    S [layers, (h, c), BATCH, HIDDEN] that each layer slices its h and c from, and the model output
    S_out of the same shape stacking each layer's h_t and c_t (fed back as S at the next call); X
    [BATCH, HIDDEN] is as wide as the states, so the widths tell no cell's input from its state;
    Y is the second layer's h_t."""
    from onnx import TensorProto, helper

    g = _Graph(seed)
    layers, x, stacked = 2, "X", []
    for layer in range(layers):
        p = f"l{layer}_"
        state = []
        for k, name in enumerate(("h", "c")):
            cut = g.op("Slice", ["S", g.init(p + name + "_from", np.array([layer, k], np.int64)),
                                 g.init(p + name + "_to", np.array([layer + 1, k + 1], np.int64)),
                                 g.init(p + name + "_axes", np.array([0, 1], np.int64))], p + name + "_slice")
            state.append(g.op("Squeeze", [cut, g.init(p + name + "_sq", np.array([0, 1], np.int64))], p + name))
        h, c = state
        w, r = (g.init(p + n, _rng_weights(g.rng, HIDDEN, 4 * HIDDEN)) for n in ("W", "R"))
        gates = g.op("Add", [g.op("MatMul", [x, w], p + "xw"), g.op("MatMul", [h, r], p + "hr")], p + "sum")
        gates = g.op("Add", [gates, g.init(p + "B", _rng_weights(g.rng, 4 * HIDDEN))], p + "g")
        i, f, cc, o = g.split(gates, [p + k for k in "ifco"])
        c_t = g.op("Add", [g.op("Mul", [g.op("Sigmoid", [f], p + "sf"), c], p + "fc"),
                           g.op("Mul", [g.op("Sigmoid", [i], p + "si"), g.op("Tanh", [cc], p + "tc")], p + "ic")],
                   p + "c_t")
        h_t = g.op("Mul", [g.op("Sigmoid", [o], p + "so"), g.op("Tanh", [c_t], p + "th")], p + "h_t")
        zero = g.init(p + "axis", np.array([0], np.int64))
        pair = [g.op("Unsqueeze", [t, zero], t + "_1") for t in (h_t, c_t)]
        stacked.append(g.op("Unsqueeze", [g.op("Concat", pair, p + "hc", axis=0), zero], p + "hc_1"))
        x = h_t
    g.op("Concat", stacked, "S_out", axis=0)
    g.op("Identity", [x], "Y")
    shape = [layers, 2, BATCH, HIDDEN]
    graph = helper.make_graph(g.nodes, "streaming_lstm", [
        helper.make_tensor_value_info("X", TensorProto.FLOAT, [BATCH, HIDDEN]),
        helper.make_tensor_value_info("S", TensorProto.FLOAT, shape)], [
        helper.make_tensor_value_info("Y", TensorProto.FLOAT, [BATCH, HIDDEN]),
        helper.make_tensor_value_info("S_out", TensorProto.FLOAT, shape)], g.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def save_streaming(folder: Path, form: str = "onnx") -> Path:
    """:func:`streaming` as .onnx, or (``form`` "ir") as the IR ov.convert_model and ov.save_model make."""
    import onnx

    path = folder / "streaming_lstm.onnx"
    onnx.save(streaming(), path)
    if form == "onnx":
        return path
    import openvino as ov

    target = folder / "streaming_lstm.xml"
    ov.save_model(ov.convert_model(path), target, compress_to_fp16=False)
    return target


def _vad_branch(prefix: str, seed: int, features: int):
    """One branch of :func:`vad`: the encoder x = Relu(X·E), an LSTM cell of Gemms whose h and c are
    Gathers of the state input S, S_out stacking its h_t and c_t, Y a sigmoid of h_t·D."""
    from onnx import TensorProto, helper

    g, p = _Graph(seed), prefix
    x = g.op("Relu", [g.op("MatMul", ["X", g.init(p + "E", _rng_weights(g.rng, features, HIDDEN))], p + "enc")],
             p + "x")
    h, c = (g.op("Gather", ["S", g.init(p + name + "_k", np.array(k, np.int64))], p + name, axis=0)
            for k, name in enumerate(("h", "c")))
    gemms = [g.op("Gemm", [v, g.init(p + n, _rng_weights(g.rng, 4 * HIDDEN, HIDDEN)),
                          g.init(p + n + "b", _rng_weights(g.rng, 4 * HIDDEN))], p + n + "_gemm", transB=1)
             for v, n in ((x, "W"), (h, "R"))]
    i, f, cc, o = g.split(g.op("Add", gemms, p + "g"), [p + "gate_" + k for k in "ifco"])
    c_t = g.op("Add", [g.op("Mul", [g.op("Sigmoid", [f], p + "sf"), c], p + "fc"),
                       g.op("Mul", [g.op("Sigmoid", [i], p + "si"), g.op("Tanh", [cc], p + "tc")], p + "ic")],
               p + "c_t")
    h_t = g.op("Mul", [g.op("Sigmoid", [o], p + "so"), g.op("Tanh", [c_t], p + "th")], p + "h_t")
    zero = g.init(p + "axis", np.array([0], np.int64))
    g.op("Concat", [g.op("Unsqueeze", [t, zero], t + "_1") for t in (h_t, c_t)], p + "S_out", axis=0)
    g.op("Sigmoid", [g.op("MatMul", [h_t, g.init(p + "D", _rng_weights(g.rng, HIDDEN, 1))], p + "dec")], p + "Y")
    return helper.make_graph(g.nodes, prefix + "branch", [], [
        helper.make_tensor_value_info(p + "Y", TensorProto.FLOAT, None),
        helper.make_tensor_value_info(p + "S_out", TensorProto.FLOAT, None)], g.inits)


def vad(in_if: bool = True, features: int = 5):
    """A voice-activity model as Silero VAD's op18 'ifless' export writes it: one step of an LSTM cell
    (Gemms, a Split, sigmoids and tanhs) between an encoder and a decoder, its state a model input S
    [2, batch, HIDDEN] (h and c taken by Gather) returned updated as S_out, the batch dynamic; x is as
    wide as the state, so the widths tell the cell's input from its state nowhere.  ``in_if``: the
    whole model sits in the branches of an If on the sample rate ``sr`` (16000: the then branch; else
    another model, as Silero's 8 kHz one), as that export puts it."""
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", features]),
              helper.make_tensor_value_info("S", TensorProto.FLOAT, [2, "batch", HIDDEN])]
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 1]),
               helper.make_tensor_value_info("S_out", TensorProto.FLOAT, [2, "batch", HIDDEN])]
    if not in_if:
        branch = _vad_branch("", 0, features)
        graph = helper.make_graph(list(branch.node), "vad", inputs, outputs, list(branch.initializer))
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    rate = helper.make_tensor("rate", TensorProto.INT64, [], [16000])
    nodes = [helper.make_node("Constant", [], ["rate"], value=rate, name="rate"),
             helper.make_node("Equal", ["sr", "rate"], ["is16k"], name="is16k"),
             helper.make_node("If", ["is16k"], ["Y", "S_out"], name="by_rate",
                              then_branch=_vad_branch("k16_", 0, features),
                              else_branch=_vad_branch("k8_", 1, features))]
    graph = helper.make_graph(nodes, "vad", inputs[:1] + [helper.make_tensor_value_info("sr", TensorProto.INT64, [])]
                              + inputs[1:], outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def save_vad(folder: Path, form: str = "onnx", in_if: bool = True) -> Path:
    """:func:`vad` as .onnx, or (``form`` "ir") as the IR ov.convert_model and ov.save_model make."""
    import onnx

    path = folder / f"vad{'_if' if in_if else ''}.onnx"
    onnx.save(vad(in_if), path)
    if form == "onnx":
        return path
    import openvino as ov

    target = path.with_suffix(".xml")
    ov.save_model(ov.convert_model(path), target, compress_to_fp16=False)
    return target
