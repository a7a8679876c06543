"""Every IR that openvino.save_model writes for these ops validates with no error."""
from __future__ import annotations

import itertools

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset3, opset4, opset5

from irtool.validate import validate_file

B, T, I, H = 2, 3, 5, 4
GATES = {"GRU": 3, "LSTM": 4, "RNN": 1}
ALT_ACTIVATIONS = {"GRU": ["tanh", "relu"], "LSTM": ["tanh", "sigmoid", "relu"], "RNN": ["relu"]}


def _weights(kind, lbr, nd, cell, dtype, as_parameter, rng):
    gates = GATES[kind]
    bias = (4 if lbr else 3) * H if kind == "GRU" else gates * H
    shapes = {"W": [gates * H, I], "R": [gates * H, H], "B": [bias]}
    nodes, params = [], []
    for name, shape in shapes.items():
        shape = shape if cell else [nd, *shape]
        if as_parameter:
            p = opset1.parameter(shape, dtype, name=name)
            nodes.append(p)
            params.append(p)
        else:
            nodes.append(opset1.constant(rng.uniform(-1, 1, shape).astype(dtype)))
    return nodes, params


def build(kind, form, direction, lbr, clip, alt_act, dynamic, dtype, as_parameter):
    rng = np.random.default_rng(0)
    cell = form == "cell"
    nd = 2 if direction == "bidirectional" else 1
    b, t = (-1, -1) if dynamic else (B, T)
    x = opset1.parameter([b, I] if cell else [b, t, I], dtype, name="X")
    h = opset1.parameter([b, H] if cell else [b, nd, H], dtype, name="H")
    params = [x, h]
    states = [h]
    if kind == "LSTM":
        c = opset1.parameter([b, H] if cell else [b, nd, H], dtype, name="C")
        params.append(c)
        states.append(c)
    (w, r, bias), weight_params = _weights(kind, lbr, nd, cell, dtype, as_parameter, rng)
    params += weight_params
    acts = ALT_ACTIVATIONS[kind] if alt_act else {"GRU": ["sigmoid", "tanh"], "LSTM": ["sigmoid", "tanh", "tanh"],
                                                   "RNN": ["tanh"]}[kind]
    common = dict(activations=acts, activations_alpha=[], activations_beta=[], clip=clip)
    if cell:
        if kind == "GRU":
            node = opset3.gru_cell(x, h, w, r, bias, H, linear_before_reset=lbr, **common)
        elif kind == "LSTM":
            node = opset4.lstm_cell(x, *states, w, r, bias, H, **common)
        else:
            node = opset4.rnn_cell(x, h, w, r, bias, H, acts, [], [], clip)
    else:
        lengths = opset1.parameter([b], np.int32, name="lengths")
        params.append(lengths)
        if kind == "GRU":
            node = opset5.gru_sequence(x, h, lengths, w, r, bias, H, direction, linear_before_reset=lbr, **common)
        elif kind == "LSTM":
            node = opset5.lstm_sequence(x, *states, lengths, w, r, bias, H, direction, **common)
        else:
            node = opset5.rnn_sequence(x, h, lengths, w, r, bias, H, direction, **common)
    return ov.Model(node.outputs(), params, f"{kind}{form}")


def _cases():
    for kind, form in itertools.product(("GRU", "LSTM", "RNN"), ("sequence", "cell")):
        directions = ("forward", "reverse", "bidirectional") if form == "sequence" else ("forward",)
        lbrs = (False, True) if kind == "GRU" else (False,)
        for direction, lbr, clip, alt, dyn, dtype, as_param in itertools.product(
                directions, lbrs, (0.0, 1.5), (False, True), (False, True), (np.float32, np.float16), (False, True)):
            yield pytest.param(kind, form, direction, lbr, clip, alt, dyn, dtype, as_param,
                               id=f"{kind}{form}-{direction}-lbr{int(lbr)}-clip{clip}-alt{int(alt)}-dyn{int(dyn)}-"
                                  f"{np.dtype(dtype).name}-{'param' if as_param else 'const'}")


@pytest.mark.parametrize("kind, form, direction, lbr, clip, alt, dyn, dtype, as_param", list(_cases()))
def test_saved_model_validates_clean(tmp_path, kind, form, direction, lbr, clip, alt, dyn, dtype, as_param):
    model = build(kind, form, direction, lbr, clip, alt, dyn, dtype, as_param)
    path = tmp_path / "m.xml"
    # f32 constants: also the default save, which compresses them to f16 behind Convert layers
    compress = dtype == np.float32 and not as_param and clip == 0.0
    ov.save_model(model, str(path), compress_to_fp16=compress)
    report = validate_file(path)
    assert report.diagnostics == [], "\n".join(d.message for d in report.diagnostics)
