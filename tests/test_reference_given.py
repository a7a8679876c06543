"""A sequence run from given hidden states (``given_states``: a device's Y, as a node at reduced
precision is judged) is, step for step, the op's cell run on that step's input from the given
state of the step before, LSTM's cell state carried from the run's own previous step.

The sequence computes a chunk of steps at a time (recurrence._run_given); the cell ops run one
step through the sequential driver, so each side checks the other.  In float64 they agree to
rounding; at bf16 (the native path's rounding) to one bf16 unit where a product's summation
order differs.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from irtool.reference import gru_cell, gru_sequence, lstm_cell, lstm_sequence, rnn_cell, rnn_sequence
from irtool.reference import recurrence
from irtool.reference.rounding import ROUNDINGS, Rounding

GATES = {"GRU": 3, "LSTM": 4, "RNN": 1}
SEQUENCE = {"GRU": gru_sequence, "LSTM": lstm_sequence, "RNN": rnn_sequence}
CELL = {"GRU": gru_cell, "LSTM": lstm_cell, "RNN": rnn_cell}
NATIVE_BF16 = Rounding(inputs="bf16", weights="bf16-openvino", state="bf16", reset_product="bf16", outputs="bf16")


def _case(op: str, direction: str, batch: int, seq: int, size: int, hidden: int, dtype, lbr: bool = False):
    rng = np.random.default_rng([GATES[op], batch, seq, hidden, len(direction), lbr])
    d = 2 if direction == "bidirectional" else 1
    x = rng.uniform(-2, 2, (batch, seq, size)).astype(dtype)
    states = [rng.uniform(-1, 1, (batch, d, hidden)).astype(dtype) for _ in range(2 if op == "LSTM" else 1)]
    lengths = np.full(batch, seq, np.int32)
    lengths[0], lengths[-1] = seq - 3, 0  # one short element, one of length 0
    w = rng.uniform(-1, 1, (d, GATES[op] * hidden, size)).astype(dtype)
    r = (rng.uniform(-1, 1, (d, GATES[op] * hidden, hidden)) / np.sqrt(hidden)).astype(dtype)
    b = rng.uniform(-0.5, 0.5, (d, (4 if lbr else GATES[op]) * hidden)).astype(dtype)
    given = rng.uniform(-1, 1, (batch, d, seq, hidden)).astype(dtype)
    attributes = {"hidden_size": hidden, "clip": 0.9, **({"linear_before_reset": True} if lbr else {})}
    return x, states, lengths, w, r, b, given, attributes


def _step_by_cells(op, direction, x, states, lengths, w, r, b, given, attributes, rounding):
    """Y, Ho (and Co) in time order, each step by the cell op from the given state before it."""
    batch, seq, _ = x.shape
    d, hidden = w.shape[0], attributes["hidden_size"]
    y = np.zeros((batch, d, seq, hidden), x.dtype)
    finals = [np.zeros((batch, d, hidden), x.dtype) for _ in states]
    for n, k in itertools.product(range(batch), range(d)):
        backwards = direction == "reverse" or (direction == "bidirectional" and k == 1)
        times = list(range(lengths[n]))[::-1] if backwards else list(range(lengths[n]))
        c = states[1][n:n + 1, k] if op == "LSTM" else None
        for step, t in enumerate(times):
            h = states[0][n:n + 1, k] if step == 0 else given[n:n + 1, k, times[step - 1]]
            inputs = [x[n:n + 1, t], h] + ([c] if c is not None else []) + [w[k], r[k], b[k]]
            out = CELL[op](*inputs, rounding=rounding, **attributes)
            y[n, k, t] = out[0][0]
            if c is not None:
                c = out[1]
        if times:
            finals[0][n, k] = y[n, k, times[-1]]
            if c is not None:
                finals[1][n, k] = c[0]
    return (y, *finals)


def _sequence(op, direction, x, states, lengths, w, r, b, given, attributes, rounding):
    return SEQUENCE[op](x, *states, lengths, w, r, b, direction=direction, given_states=given, rounding=rounding,
                        **attributes)


@pytest.mark.parametrize("op,lbr", [("GRU", False), ("GRU", True), ("LSTM", False), ("RNN", False)])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("chunked", [False, True], ids=["one-chunk", "chunks"])
def test_each_step_is_the_cell_from_the_given_state_before_it(op, lbr, direction, chunked, monkeypatch):
    case = _case(op, direction, 3, 9, 4, 5, np.float64, lbr)
    if chunked:  # chunks of 4 steps of the 9 (the last one shorter), as a large run has
        monkeypatch.setattr(recurrence, "CHUNK_BYTES", 1)
        monkeypatch.setattr(recurrence, "WIDE_COLUMNS", 12)
        assert recurrence.chunk_steps(GATES[op] * 5, 3, 8) == 4
    got = _sequence(op, direction, *case, None)
    want = _step_by_cells(op, direction, *case, None)
    assert len(got) == len(want)
    for a, e in zip(got, want):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", ["GRU", "LSTM", "RNN"])
def test_each_step_is_the_cell_at_bf16_to_one_unit_where_a_sum_is_ordered_otherwise(op):
    x, states, lengths, w, r, b, given, attributes = _case(op, "bidirectional", 3, 9, 4, 16, np.float32)
    given = ROUNDINGS["bf16"](given)  # a bf16 device's Y: values of the type
    case = (x, states, lengths, w, r, b, given, attributes)
    got = _sequence(op, "bidirectional", *case, NATIVE_BF16)
    want = _step_by_cells(op, "bidirectional", *case, NATIVE_BF16)
    for a, e in zip(got[:2], want[:2]):
        unit = np.spacing(np.abs(e).astype(np.float32)) * 2 ** 16  # one bf16 unit at each value
        assert np.all(np.abs(a - e) <= unit)
        assert np.mean(a == e) > 0.95
    if op == "LSTM":  # Co stays f32 on this path
        np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-6)
