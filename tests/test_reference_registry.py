"""Explicit registration by (op type, version) and the one version rule."""
from __future__ import annotations

import numpy as np
import pytest
from conftest_reference import Case

from irtool.reference import evaluate, gru_cell, lookup, lstm_sequence, register, registered
from irtool.reference.registry import _REGISTRY


def test_every_op_of_the_contract_is_registered() -> None:
    assert set(registered()) >= {"GRUSequence-5", "LSTMSequence-5", "LSTMSequence-1", "RNNSequence-5",
                                 "GRUCell-3", "LSTMCell-4", "RNNCell-0"}


def test_duplicates_are_refused() -> None:
    with pytest.raises(RuntimeError, match="GRUCell-3 is registered twice"):
        register("GRUCell", 3)(gru_cell)


def test_highest_registered_version_not_above_the_one_asked() -> None:
    assert lookup("LSTMSequence").version == 5
    assert lookup("LSTMSequence", 4).version == 1
    assert lookup("LSTMSequence", 5).version == 5
    assert lookup("LSTMSequence", 13).version == 5
    assert lookup("RNNCell", 1).version == 0
    assert lookup("LSTMSequence", 1).function is lstm_sequence


def test_a_new_version_is_picked_by_the_same_rule() -> None:
    def future_gru_cell(X, initial_hidden_state, *, hidden_size):  # noqa: N803 - port names
        return (np.zeros((1, 1)),)

    register("GRUCell", 20)(future_gru_cell)
    try:
        assert lookup("GRUCell", 19).version == 3
        assert lookup("GRUCell").core is future_gru_cell
    finally:
        del _REGISTRY["GRUCell"][20]


def test_evaluate_equals_the_function_and_fills_optional_inputs() -> None:
    case = Case("GRU", "cell", batch=2, hidden=3)
    x, h, w, r, b = case.inputs()
    by_type = evaluate("GRUCell", [x, h, w, r], {"hidden_size": 3})
    np.testing.assert_array_equal(by_type[0], gru_cell(x, h, w, r, np.zeros_like(b), hidden_size=3)[0])
    lstm = Case("LSTM", direction="bidirectional", lengths=(2, 4))
    for a, b_ in zip(evaluate("LSTMSequence", lstm.inputs(), lstm.attributes(), version=1), lstm.reference()):
        np.testing.assert_array_equal(a, b_)


def test_evaluate_takes_spec_defaults_and_ir_style_values() -> None:
    case = Case("GRU", direction="reverse", linear_before_reset=True, clip=0.5)
    attributes = {"hidden_size": "4", "direction": "REVERSE", "linear_before_reset": "true", "clip": "0.5",
                  "activations": "Sigmoid,Tanh"}
    for a, b in zip(evaluate("GRUSequence", case.inputs(), attributes), case.reference()):
        np.testing.assert_array_equal(a, b)
