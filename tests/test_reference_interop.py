"""irtool.onnx.semantics conversions, checked on labelled tensors (no oracle needed): layouts, LSTM
gate order, bias layouts, optional inputs, and activation parameter conventions."""
from __future__ import annotations

import numpy as np
import pytest
from conftest_reference import Case

from irtool.onnx import semantics as oi


def labelled_gates(gate_ids: list[int], hidden: int, width: int) -> np.ndarray:
    """[1, gates*hidden, width] whose rows of gate block k all hold the label gate_ids[k]."""
    return np.repeat(np.array(gate_ids, dtype=np.float32), hidden)[None, :, None].repeat(width, axis=2)


def test_lstm_gates_i_o_f_c_become_f_i_c_o() -> None:
    onnx_w = labelled_gates([0, 1, 2, 3], hidden=2, width=3)  # i, o, f, c
    seq, batch = 4, 1
    x, h0, c0, lengths, w, r, b = oi.inputs_from_onnx("LSTM", np.zeros((seq, batch, 3), np.float32), onnx_w,
                                                      labelled_gates([0, 1, 2, 3], 2, 2))
    assert w[0, ::2, 0].tolist() == [2, 0, 3, 1]  # f, i, c, o
    assert r[0, ::2, 0].tolist() == [2, 0, 3, 1]
    assert not b.any() and not h0.any() and not c0.any()  # omitted optional inputs are zeros
    assert lengths.tolist() == [seq] and x.shape == (batch, seq, 3)


def test_bias_layouts() -> None:
    hidden = 1
    wb, rb = np.array([[1, 2, 3]], np.float32), np.array([[10, 20, 30]], np.float32)
    onnx_b = np.concatenate([wb, rb], axis=1)
    assert oi.bias_from_onnx("GRU", onnx_b).tolist() == [[11, 22, 33]]  # Wbh + Rbh summed
    assert oi.bias_from_onnx("GRU", onnx_b, linear_before_reset=1).tolist() == [[11, 22, 3, 30]]
    assert oi.bias_to_onnx("GRU", np.array([[11, 22, 3, 30]], np.float32), linear_before_reset=True).tolist() == \
        [[11, 22, 3, 0, 0, 30]]
    lstm = np.arange(8, dtype=np.float32)[None] * (hidden + 1)  # Wb i o f c = 0 2 4 6, Rb = 8 10 12 14
    assert oi.bias_from_onnx("LSTM", lstm).tolist() == [[4 + 12, 0 + 8, 6 + 14, 2 + 10]]  # f, i, c, o


@pytest.mark.parametrize("case", [
    Case("GRU", direction="bidirectional", lengths=(4, 1)),
    Case("GRU", linear_before_reset=True, direction="reverse"),
    Case("LSTM", direction="bidirectional", lengths=(0, 3)),
    Case("RNN"),
], ids=str)
def test_openvino_to_onnx_and_back_is_the_identity(case: Case) -> None:
    inputs = case.inputs()
    onnx_side = oi.inputs_to_onnx(case.family, *inputs, linear_before_reset=case.linear_before_reset)
    seq, batch = case.seq, case.batch
    assert onnx_side["X"].shape == (seq, batch, case.input_size)
    assert onnx_side["initial_h"].shape == (case.directions, batch, case.hidden)
    assert onnx_side["B"].shape == (case.directions, 2 * {"GRU": 3, "LSTM": 4, "RNN": 1}[case.family] * case.hidden)
    back = oi.inputs_from_onnx(case.family, **onnx_side, linear_before_reset=case.linear_before_reset)
    for original, returned in zip(inputs, back):
        np.testing.assert_array_equal(original, returned)


def test_outputs_layouts() -> None:
    y = np.arange(2 * 1 * 3 * 4, dtype=np.float32).reshape(2, 1, 3, 4)  # OpenVINO [batch, nd, seq, H]
    ho = y[:, :, -1]
    onnx_y, onnx_h = oi.outputs_to_onnx(y, ho)
    assert onnx_y.shape == (3, 1, 2, 4) and onnx_h.shape == (1, 2, 4)
    assert onnx_y[2, 0, 1].tolist() == y[1, 0, 2].tolist()
    back_y, back_h = oi.outputs_from_onnx(onnx_y, onnx_h)
    np.testing.assert_array_equal(back_y, y)
    np.testing.assert_array_equal(back_h, ho)


def test_activation_parameters_in_order_and_by_position() -> None:
    onnx_attributes = {"hidden_size": 4, "activations": ["Sigmoid", "LeakyRelu", "HardSigmoid"],
                       "activation_alpha": [0.1, 0.3], "activation_beta": [0.6]}
    converted = oi.attributes_from_onnx("LSTM", onnx_attributes)
    assert converted["activations"] == ["sigmoid", "leakyrelu", "hardsigmoid"]
    assert converted["activations_alpha"] == [0.0, 0.1, 0.3]  # by position; sigmoid takes none
    assert converted["activations_beta"] == [0.0, 0.0, 0.6]
    back = oi.attributes_to_onnx("LSTM", converted)
    assert back["activations"] == ["Sigmoid", "LeakyRelu", "HardSigmoid"]
    assert back["activation_alpha"] == [0.1, 0.3] and back["activation_beta"] == pytest.approx([0.6])


def test_one_activation_set_per_direction() -> None:
    same = {"hidden_size": 2, "direction": "bidirectional", "activations": ["Sigmoid", "Tanh", "sigmoid", "tanh"]}
    assert oi.attributes_from_onnx("GRU", same)["activations"] == ["sigmoid", "tanh"]
    assert oi.attributes_to_onnx("GRU", {"hidden_size": 2, "direction": "bidirectional"})["activations"] == \
        ["Sigmoid", "Tanh", "Sigmoid", "Tanh"]
    with pytest.raises(ValueError, match="activations differ between directions"):
        oi.attributes_from_onnx("GRU", dict(same, activations=["Sigmoid", "Tanh", "Sigmoid", "Relu"]))


@pytest.mark.parametrize("attributes, message", [
    ({"layout": 1}, "layout is 1"),
    ({"input_forget": 1}, "input_forget is 1"),
    ({"activations": ["Sigmoid", "Tanh"]}, "activations has 2 values"),
    ({"activations": ["Sigmoid", "Tanh", "Swish"]}, "activations has 'Swish'"),
    ({"activations": ["ScaledTanh", "Tanh", "Tanh"]}, "activation_alpha has no value for 'ScaledTanh'"),
])
def test_unconvertible_attributes(attributes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        oi.attributes_from_onnx("LSTM", {"hidden_size": 2, **attributes})


def test_peepholes_are_refused_unless_zero() -> None:
    x, w, r = np.zeros((2, 1, 1), np.float32), np.zeros((1, 4, 1), np.float32), np.zeros((1, 4, 1), np.float32)
    assert len(oi.inputs_from_onnx("LSTM", x, w, r, P=np.zeros((1, 3), np.float32))) == 7
    with pytest.raises(ValueError, match="P \\(peepholes\\) is non-zero"):
        oi.inputs_from_onnx("LSTM", x, w, r, P=np.ones((1, 3), np.float32))


def test_clip_and_flags() -> None:
    assert "clip" not in oi.attributes_to_onnx("RNN", {"hidden_size": 1, "clip": 0.0})
    assert oi.attributes_to_onnx("GRU", {"hidden_size": 1, "clip": 2.5, "linear_before_reset": True}) == \
        {"hidden_size": 1, "direction": "forward", "activations": ["Sigmoid", "Tanh"], "clip": 2.5,
         "linear_before_reset": 1}
    assert oi.attributes_from_onnx("GRU", {"hidden_size": 1})["clip"] == 0.0
