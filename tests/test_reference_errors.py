"""Bad input raises one ValueError that names the input or attribute and what was expected."""
from __future__ import annotations

import re

import numpy as np
import pytest
from conftest_reference import Case

from irtool.reference import evaluate, gru_cell, gru_sequence, lstm_sequence, rnn_sequence

GRU = Case("GRU", batch=2, seq=3, input_size=4, hidden=5)


def gru_inputs() -> list[np.ndarray]:
    return list(GRU.inputs())


def call(inputs: list, **attributes: object) -> None:
    gru_sequence(*inputs, **{"hidden_size": 5, "direction": "forward", **attributes})


@pytest.mark.parametrize("port, index, shape, message", [
    ("X", 0, (2, 3), "X has shape [2, 3]; expected 3 dims [batch_size, seq_length, input_size]"),
    ("initial_hidden_state", 1, (2, 2, 5),
     "initial_hidden_state has shape [2, 2, 5]; expected [batch_size=2, num_directions=1, hidden_size=5]"),
    ("sequence_lengths", 2, (3,), "sequence_lengths has shape [3]; expected [batch_size=2]"),
    ("W", 3, (1, 15, 3), "W has shape [1, 15, 3]; expected [num_directions=1, 3*hidden_size=15, input_size=4]"),
    ("R", 4, (1, 12, 5), "R has shape [1, 12, 5]; expected [num_directions=1, 3*hidden_size=15, hidden_size=5]"),
    ("B", 5, (1, 20), "B has shape [1, 20]; expected [num_directions=1, 3*hidden_size=15]"),
])
def test_wrong_shape_names_the_input_and_the_expected_shape(port: str, index: int, shape: tuple, message: str) -> None:
    inputs = gru_inputs()
    inputs[index] = np.zeros(shape, dtype=np.int32 if port == "sequence_lengths" else np.float32)
    with pytest.raises(ValueError, match=re.escape(message)):
        call(inputs)


def test_nothing_is_broadcast() -> None:
    inputs = gru_inputs()
    inputs[5] = inputs[5][0]  # B [15] instead of [1, 15]: numpy would broadcast it
    with pytest.raises(ValueError, match=re.escape("B has shape [15]; expected [num_directions=1, 3*hidden_size=15]")):
        call(inputs)


def test_linear_before_reset_wants_four_bias_blocks() -> None:
    message = "B has shape [1, 15]; expected [num_directions=1, 4*hidden_size=20]"
    with pytest.raises(ValueError, match=re.escape(message)):
        call(gru_inputs(), linear_before_reset=True)


def test_bidirectional_needs_two_directions() -> None:
    with pytest.raises(ValueError, match=re.escape("expected [batch_size=2, num_directions=2, hidden_size=5]")):
        call(gru_inputs(), direction="bidirectional")


@pytest.mark.parametrize("lengths, message", [
    ([3, 4], "sequence_lengths[1] is 4; expected a value in [0, seq_length=3]"),
    ([-1, 2], "sequence_lengths[0] is -1; expected a value in [0, seq_length=3]"),
])
def test_sequence_length_outside_its_range(lengths: list[int], message: str) -> None:
    inputs = gru_inputs()
    inputs[2] = np.array(lengths, dtype=np.int64)
    with pytest.raises(ValueError, match=re.escape(message)):
        call(inputs)


def test_sequence_lengths_must_be_integers() -> None:
    inputs = gru_inputs()
    inputs[2] = inputs[2].astype(np.float32)
    with pytest.raises(ValueError, match="sequence_lengths has dtype float32; expected an integer type"):
        call(inputs)


@pytest.mark.parametrize("attributes, message", [
    ({"activations": ["sigmoid", "swish"]}, "activations[1] is 'swish'; expected one of relu, tanh, sigmoid"),
    ({"activations": ["sigmoid"]}, "activations has 1 values ['sigmoid']; expected 2"),
    ({"direction": "sideways"}, "direction is 'sideways'; expected one of forward, reverse, bidirectional"),
    ({"hidden_size": 0}, "hidden_size is 0; expected a positive integer"),
    ({"clip": -1.0}, "clip is -1.0; expected a positive number"),
    ({"linear_before_reset": "maybe"}, "linear_before_reset is 'maybe'; expected true or false"),
    ({"activations": ["scaledtanh", "tanh"]}, "activations[0] is 'scaledtanh', which has no default for its parameter"),
    ({"activations_alpha": [1.0, 2.0, 3.0]}, "activations_alpha has 3 values for 2 activations"),
    ({"accumulate": "float16"}, "accumulate is 'float16'; expected one of float32, float64"),
])
def test_bad_attribute_values_name_the_attribute(attributes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        call(gru_inputs(), **attributes)


def test_missing_required_attribute_or_input_in_a_direct_call() -> None:
    inputs = gru_inputs()
    with pytest.raises(ValueError, match="direction is missing; it is a required attribute"):
        gru_sequence(*inputs, hidden_size=5)
    with pytest.raises(ValueError, match="hidden_size is missing; it is a required attribute"):
        gru_sequence(*inputs, direction="forward")
    with pytest.raises(ValueError, match="B is missing; it is a required input"):
        gru_sequence(*inputs[:5], hidden_size=5, direction="forward")


def test_mixed_float_types_are_refused() -> None:
    inputs = gru_inputs()
    inputs[3] = inputs[3].astype(np.float64)
    with pytest.raises(ValueError, match="W has dtype float64; expected float32, the dtype of X"):
        call(inputs)


def test_integer_data_is_refused() -> None:
    inputs = gru_inputs()
    inputs[0] = inputs[0].astype(np.int32)
    with pytest.raises(ValueError, match="X has dtype int32; expected one of float16, bfloat16, float32, float64"):
        call(inputs)


def test_cell_shapes() -> None:
    case = Case("GRU", "cell", batch=2, input_size=4, hidden=5)
    x, h, w, r, b = case.inputs()
    message = "initial_hidden_state has shape [2, 4]; expected [batch_size=2, hidden_size=5]"
    with pytest.raises(ValueError, match=re.escape(message)):
        gru_cell(x, h[:, :4], w, r, b, hidden_size=5)
    with pytest.raises(ValueError, match=re.escape("B has shape [15]; expected [4*hidden_size=20]")):
        gru_cell(x, h, w, r, b, hidden_size=5, linear_before_reset=True)


# --- through evaluate -------------------------------------------------------------------

def test_evaluate_wrong_input_count() -> None:
    with pytest.raises(ValueError, match=re.escape(
            "GRUSequence-5 takes 6 inputs (X, initial_hidden_state, sequence_lengths, W, R, B); got 5")):
        evaluate("GRUSequence", gru_inputs()[:5], {"hidden_size": 5, "direction": "forward"})
    case = Case("GRU", "cell", batch=2, input_size=4, hidden=5)
    with pytest.raises(ValueError, match=re.escape("GRUCell-3 takes 4 to 5 inputs")):
        evaluate("GRUCell", case.inputs()[:3], {"hidden_size": 5})


def test_evaluate_missing_and_unknown_attributes() -> None:
    with pytest.raises(ValueError, match="GRUSequence-5 requires attribute 'direction'"):
        evaluate("GRUSequence", gru_inputs(), {"hidden_size": 5})
    with pytest.raises(ValueError, match="LSTMSequence-5 has no attribute 'linear_before_reset'"):
        lstm = Case("LSTM", batch=2, seq=3, input_size=4, hidden=5)
        evaluate("LSTMSequence", lstm.inputs(), {"hidden_size": 5, "direction": "forward", "linear_before_reset": True})


def test_evaluate_shape_error_names_port_and_expected_dims() -> None:
    inputs = gru_inputs()
    inputs[3] = np.zeros((1, 14, 4), np.float32)
    message = ("GRUSequence-5: W has shape [1, 14, 4]; expected [num_directions=1, 3*hidden_size=15, input_size=4] "
               "(input 3; dim 1 is 14, expected 3*hidden_size = 15)")
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate("GRUSequence", inputs, {"hidden_size": 5, "direction": "forward"})


def test_evaluate_unknown_op_and_version() -> None:
    with pytest.raises(ValueError, match="no reference implementation for op type 'AUGRUSequence'"):
        evaluate("AUGRUSequence", [], {})
    with pytest.raises(ValueError, match="no reference implementation for GRUSequence at version 4 or below"):
        evaluate("GRUSequence", gru_inputs(), {"hidden_size": 5, "direction": "forward"}, version=4)


def test_other_ops_name_their_own_ports() -> None:
    lstm = list(Case("LSTM", batch=2, seq=3, input_size=4, hidden=5).inputs())
    lstm[2] = lstm[2][:, :, :4]
    with pytest.raises(ValueError, match=re.escape("initial_cell_state has shape [2, 1, 4]")):
        lstm_sequence(*lstm, hidden_size=5, direction="forward")
    rnn = list(Case("RNN", batch=2, seq=3, input_size=4, hidden=5).inputs())
    with pytest.raises(ValueError, match=re.escape("expected [num_directions=1, hidden_size=5, input_size=4]")):
        rnn_sequence(rnn[0], rnn[1], rnn[2], rnn[3][:, :, :3], *rnn[4:], hidden_size=5, direction="forward")


def test_direct_calls_and_evaluate_are_checked_by_the_one_spec_check() -> None:
    """The shapes are the spec's to check: a direct call and evaluate give the same message, from
    irtool.specs.check_shapes, naming the op version, the input, the evaluated dims and why."""
    inputs = gru_inputs()
    inputs[4] = np.zeros((1, 15, 4), np.float32)
    message = ("GRUSequence-5: R has shape [1, 15, 4]; expected [num_directions=1, 3*hidden_size=15, hidden_size=5] "
               "(input 4; dim 2 is 4, expected hidden_size = 5)")
    with pytest.raises(ValueError, match=re.escape(message)):
        call(inputs)
    with pytest.raises(ValueError, match=re.escape(message)):
        evaluate("GRUSequence", inputs, {"hidden_size": 5, "direction": "forward"})


def test_a_missing_direction_is_named_before_any_shape() -> None:
    inputs = gru_inputs()
    inputs[4] = np.zeros((1, 15, 4), np.float32)
    with pytest.raises(ValueError, match="direction is missing; it is a required attribute"):
        gru_sequence(*inputs, hidden_size=5)


def test_a_shape_error_is_the_reference_s_input_error() -> None:
    from irtool.core.errors import InputError

    inputs = gru_inputs()
    inputs[3] = inputs[3][:, :, :3]
    with pytest.raises(InputError, match=re.escape("GRUSequence-5: W has shape [1, 15, 3]")):
        call(inputs)
