"""Hand-computed cases, hidden_size 1 and input_size 1: the expected numbers come from the
formulas written out with math, not from the reference."""
from __future__ import annotations

import math

import numpy as np
import pytest

from irtool.reference import gru_cell, gru_sequence, lstm_cell, lstm_sequence, rnn_cell, rnn_sequence


def sigmoid(v: float) -> float:
    return 1.0 / (1.0 + math.exp(-v))


def f32(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def col(*values: float) -> np.ndarray:
    """A [rows, 1] weight (input or hidden size 1)."""
    return f32(*values).reshape(-1, 1)


X, H, C = 0.5, -0.3, 0.8


def expected_gru(x: float, h: float, w: tuple, r: tuple, b: tuple, linear: bool) -> float:
    z = sigmoid(x * w[0] + h * r[0] + b[0])
    reset = sigmoid(x * w[1] + h * r[1] + b[1])
    if linear:  # b = (Wbz+Rbz, Wbr+Rbr, Wbh, Rbh)
        candidate = math.tanh(x * w[2] + reset * (h * r[2] + b[3]) + b[2])
    else:
        candidate = math.tanh(x * w[2] + (reset * h) * r[2] + b[2])
    return (1 - z) * candidate + z * h


@pytest.mark.parametrize("linear", [False, True], ids=["default", "linear_before_reset"])
def test_gru_cell(linear: bool) -> None:
    w, r = (0.2, -0.4, 0.7), (0.1, 0.6, -0.5)
    b = (0.05, -0.1, 0.2, 0.3) if linear else (0.05, -0.1, 0.2)
    (ho,) = gru_cell(f32(X)[None], f32(H)[None], col(*w), col(*r), f32(*b), hidden_size=1, linear_before_reset=linear)
    assert ho.shape == (1, 1)
    assert ho[0, 0] == pytest.approx(expected_gru(X, H, w, r, b, linear), abs=1e-6)


def test_gru_cell_without_bias_is_zero_bias() -> None:
    w, r = (0.2, -0.4, 0.7), (0.1, 0.6, -0.5)
    (ho,) = gru_cell(f32(X)[None], f32(H)[None], col(*w), col(*r), hidden_size=1)
    assert ho[0, 0] == pytest.approx(expected_gru(X, H, w, r, (0, 0, 0), False), abs=1e-6)


def test_lstm_cell_gate_order_f_i_c_o() -> None:
    w, r, b = (0.3, -0.2, 0.9, 0.4), (-0.6, 0.5, 0.1, 0.2), (0.1, 0.0, -0.2, 0.3)  # f, i, c, o
    f, i = sigmoid(X * w[0] + H * r[0] + b[0]), sigmoid(X * w[1] + H * r[1] + b[1])
    c_new = f * C + i * math.tanh(X * w[2] + H * r[2] + b[2])
    h_new = sigmoid(X * w[3] + H * r[3] + b[3]) * math.tanh(c_new)
    ho, co = lstm_cell(f32(X)[None], f32(H)[None], f32(C)[None], col(*w), col(*r), f32(*b), hidden_size=1)
    assert (ho[0, 0], co[0, 0]) == pytest.approx((h_new, c_new), abs=1e-6)


def test_lstm_clip_applies_to_gates_not_to_the_cell_state() -> None:
    w, r, b = (2.0, 3.0, 4.0, 5.0), (0.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0)
    x, c = 1.0, 5.0  # every pre-activation is above the clip of 1.5; C grows past it
    f = i = o = sigmoid(1.5)
    c_new = f * c + i * math.tanh(1.5)
    ho, co = lstm_cell(f32(x)[None], f32(0)[None], f32(c)[None], col(*w), col(*r), f32(*b), hidden_size=1, clip=1.5)
    assert c_new > 1.5
    assert (ho[0, 0], co[0, 0]) == pytest.approx((o * math.tanh(c_new), c_new), abs=1e-6)


def test_rnn_cell_default_tanh_and_clip() -> None:
    (ho,) = rnn_cell(f32(X)[None], f32(H)[None], col(1.2), col(-0.7), f32(0.4), hidden_size=1)
    assert ho[0, 0] == pytest.approx(math.tanh(X * 1.2 + H * -0.7 + 0.4), abs=1e-6)
    (clipped,) = rnn_cell(f32(X)[None], f32(H)[None], col(1.2), col(-0.7), f32(0.4), hidden_size=1, clip=0.25)
    assert clipped[0, 0] == pytest.approx(math.tanh(0.25), abs=1e-6)


ALPHA, BETA = 0.3, 0.8
ACTIVATIONS = {  # name: (value at -2, value at 1.5) with alpha 0.3 and beta 0.8 where they apply
    "relu": (0.0, 1.5),
    "Sigmoid": (sigmoid(-2), sigmoid(1.5)),
    "TANH": (math.tanh(-2), math.tanh(1.5)),
    "affine": (ALPHA * -2 + BETA, ALPHA * 1.5 + BETA),
    "LeakyRelu": (ALPHA * -2, 1.5),
    "thresholdedrelu": (0.0, 1.5),
    "scaledtanh": (ALPHA * math.tanh(BETA * -2), ALPHA * math.tanh(BETA * 1.5)),
    "hardsigmoid": (max(0.0, ALPHA * -2 + BETA), min(1.0, ALPHA * 1.5 + BETA)),
    "elu": (ALPHA * (math.exp(-2) - 1), 1.5),
    "softsign": (-2 / 3, 1.5 / 2.5),
    "softplus": (math.log(1 + math.exp(-2)), math.log(1 + math.exp(1.5))),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_every_activation_through_an_rnn_cell(name: str) -> None:
    """W = 1, R = 0, B = 0: Ho = f(X), so Ho shows the activation itself."""
    x = f32(-2.0, 1.5)[:, None]
    (ho,) = rnn_cell(x, f32(0, 0)[:, None], col(1), col(0), f32(0), hidden_size=1, activations=[name],
                     activations_alpha=[ALPHA], activations_beta=[BETA])
    assert ho[:, 0] == pytest.approx(ACTIVATIONS[name], abs=1e-6)


def test_onnx_defaults_of_alpha_and_beta() -> None:
    x = f32(-2.0, 1.5)[:, None]
    expected = {"leakyrelu": (-0.02, 1.5), "hardsigmoid": (0.1, 0.8), "elu": (math.exp(-2) - 1, 1.5),
                "affine": (-2.0, 1.5), "thresholdedrelu": (0.0, 1.5)}
    for name, values in expected.items():
        (ho,) = rnn_cell(x, f32(0, 0)[:, None], col(1), col(0), f32(0), hidden_size=1, activations=[name])
        assert ho[:, 0] == pytest.approx(values, abs=1e-6), name


def test_alpha_is_positional_per_activation() -> None:
    """activations_alpha[k] belongs to activations[k] (OpenVINO), whatever the others take."""
    x = f32(-2.0)[:, None]
    (ho,) = gru_cell(x, f32(0)[:, None], col(0, 0, 1), col(0, 0, 0), f32(0, 0, 0), hidden_size=1,
                     activations=["sigmoid", "leakyrelu"], activations_alpha=[9.0, 0.25])
    # z = r = sigmoid(0) = 0.5; h~ = leakyrelu(-2; 0.25) = -0.5; Ho = 0.5 * h~ + 0.5 * 0
    assert ho[0, 0] == pytest.approx(-0.25, abs=1e-6)


def test_gru_sequence_reverse_walks_only_the_first_len_steps() -> None:
    xs, w, r, b = (0.4, -0.9, 0.7), (0.2, -0.4, 0.7), (0.1, 0.6, -0.5), (0.05, -0.1, 0.2)
    h1 = expected_gru(xs[1], H, w, r, b, False)  # length 2: steps t=1 then t=0; t=2 is past the end
    h0 = expected_gru(xs[0], h1, w, r, b, False)
    y, ho = gru_sequence(f32(*xs).reshape(1, 3, 1), f32(H).reshape(1, 1, 1), np.array([2]), col(*w)[None],
                         col(*r)[None], f32(*b)[None], hidden_size=1, direction="reverse")
    assert y[0, 0, :, 0] == pytest.approx([h0, h1, 0.0], abs=1e-6)
    assert ho[0, 0, 0] == pytest.approx(h0, abs=1e-6)


def test_forward_ragged_and_zero_lengths() -> None:
    """Ho holds the last valid step; Y is 0 past the length; a length of 0 gives Ho = Co = 0."""
    xs, w, r, b = (0.4, -0.9, 0.7), (1.1, -0.6, 0.3, 0.8), (0.5, 0.2, -0.4, 0.1), (0.0, 0.1, 0.2, -0.3)

    def step(x: float, h: float, c: float) -> tuple[float, float]:
        f, i = sigmoid(x * w[0] + h * r[0] + b[0]), sigmoid(x * w[1] + h * r[1] + b[1])
        c = f * c + i * math.tanh(x * w[2] + h * r[2] + b[2])
        return sigmoid(x * w[3] + h * r[3] + b[3]) * math.tanh(c), c

    ha, ca = step(xs[0], H, C)
    hb, cb = step(xs[1], ha, ca)
    x = np.stack([f32(*xs), f32(*xs)]).reshape(2, 3, 1)
    y, ho, co = lstm_sequence(x, f32(H, H).reshape(2, 1, 1), f32(C, C).reshape(2, 1, 1), np.array([2, 0]),
                              col(*w)[None], col(*r)[None], f32(*b)[None], hidden_size=1, direction="forward")
    assert y[0, 0, :, 0] == pytest.approx([ha, hb, 0.0], abs=1e-6)
    assert (ho[0, 0, 0], co[0, 0, 0]) == pytest.approx((hb, cb), abs=1e-6)
    assert not y[1].any() and ho[1, 0, 0] == 0 and co[1, 0, 0] == 0


def test_rnn_bidirectional_directions_use_their_own_weights() -> None:
    xs = (0.4, -0.9)
    forward_1 = math.tanh(xs[0] * 1.0 + 0.0)
    forward_2 = math.tanh(xs[1] * 1.0 + forward_1 * 0.5)
    backward_2 = math.tanh(xs[1] * -2.0)
    backward_1 = math.tanh(xs[0] * -2.0 + backward_2 * 0.25)
    y, ho = rnn_sequence(f32(*xs).reshape(1, 2, 1), np.zeros((1, 2, 1), np.float32), np.array([2]),
                         f32(1.0, -2.0).reshape(2, 1, 1), f32(0.5, 0.25).reshape(2, 1, 1), np.zeros((2, 1), np.float32),
                         hidden_size=1, direction="bidirectional")
    assert y[0, :, :, 0] == pytest.approx(np.array([[forward_1, forward_2], [backward_1, backward_2]]), abs=1e-6)
    assert ho[0, :, 0] == pytest.approx([forward_2, backward_1], abs=1e-6)


@pytest.mark.parametrize("batch, seq", [(0, 3), (2, 0), (0, 0)])
def test_empty_batch_or_sequence(batch: int, seq: int) -> None:
    """Nothing to compute: the outputs have their shapes, and lengths of 0 give states of 0."""
    y, ho, co = lstm_sequence(np.ones((batch, seq, 1), np.float32), np.ones((batch, 2, 1), np.float32),
                              np.ones((batch, 2, 1), np.float32), np.full(batch, seq, np.int32),
                              np.ones((2, 4, 1), np.float32), np.ones((2, 4, 1), np.float32),
                              np.ones((2, 4), np.float32), hidden_size=1, direction="bidirectional")
    assert (y.shape, ho.shape, co.shape) == ((batch, 2, seq, 1), (batch, 2, 1), (batch, 2, 1))
    assert not ho.any() and not co.any()
