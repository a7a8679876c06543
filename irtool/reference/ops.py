"""The public reference ops: inputs positional in port order (OpenVINO layouts), attributes
keyword-only with the spec's names, outputs a tuple in port order.

Each function checks its inputs, binds the cell formula and hands both to the one driver.
``accumulate="float64"`` computes in float64 (a golden result); outputs keep the inputs' dtype.
``rounding`` (irtool.reference.rounding.Rounding) rounds values where a device running at a
reduced precision does, computing in float32 between its points.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from irtool.core.errors import InputError
from irtool.reference import checks, recurrence
from irtool.reference.activations import Activation, resolve
from irtool.reference.cells import GRU, LSTM, RNN
from irtool.reference.checks import REQUIRED
from irtool.reference.precision import compute_dtype, to_output
from irtool.reference.registry import register
from irtool.reference.rounding import Rounding

Arrays = tuple[np.ndarray, ...]
GRU_ACTIVATIONS = ("sigmoid", "tanh")
LSTM_ACTIVATIONS = ("sigmoid", "tanh", "tanh")
RNN_ACTIVATIONS = ("tanh",)


def _solve(cell: recurrence.Cell, problem: checks.Problem, reverse: Sequence[bool], accumulate: Any,
           rounding: Any = None, given: Any = None) -> Arrays:
    rounding = checks.rounding(rounding)
    dtype = compute_dtype(problem.dtype, accumulate)
    if not rounding.exact and dtype != np.float32:
        raise InputError("rounding emulates a device that computes in float32 between its rounding points; "
                                "it does not apply with accumulate='float64' or float64 inputs")
    cast = [a.astype(dtype, copy=False) for a in (problem.x, *problem.states, problem.w, problem.r, problem.b)]
    x, states, (w, r, b) = cast[0], cast[1:1 + len(problem.states)], cast[-3:]
    x_point = "x_input" if rounding.x_input else "inputs" if rounding.inputs else "product_inputs"
    (x,) = _rounded(rounding, x_point, x)  # (X enters nothing but its product)
    states = _rounded(rounding, "inputs", states[0]) + _rounded(
        rounding, "cell_state" if rounding.cell_state else "initial_cell_state", *states[1:])
    w, r = _rounded(rounding, "weights", w, r)
    (b,) = _rounded(rounding, "bias", b)
    if given is not None:
        given = checks.given_states(given, problem.x.shape[0], len(reverse), problem.x.shape[1], r.shape[2])
    outputs = recurrence.run(cell, x, states, problem.lengths, w, r, b, reverse, rounding, given)
    outputs = _rounded(rounding, "outputs", *outputs[:2]) + _rounded(rounding, "cell_output", *outputs[2:])
    return tuple(to_output(o, problem.dtype) for o in outputs)


def _rounded(rounding: Rounding, point: str, *arrays: np.ndarray) -> list[np.ndarray]:
    """``arrays`` rounded as ``rounding`` rounds the values of ``point`` (new arrays; as they are where it does not)."""
    function = rounding.once(point)
    return [function(array) if function is not None else array for array in arrays]


def sequence(cell: recurrence.Cell, hidden: int, direction: Any, X: Any, states: Sequence[tuple[str, Any]],
              sequence_lengths: Any, W: Any, R: Any, B: Any, accumulate: Any, rounding: Any = None,
              given_states: Any = None) -> Arrays:
    """Any cell over a *Sequence op's inputs (OpenVINO layouts; ``states`` as (name, array)):
    the public sequence ops, and irtool.onnx.semantics.evaluate_node with the cells only ONNX can ask for.
    ``given_states`` (a device's Y): each step from that run's previous hidden state
    (irtool.reference.recurrence.run)."""
    reverse = checks.direction(direction)
    problem = checks.sequence_problem(X, states, sequence_lengths, W, R, B)
    return _solve(cell, problem, reverse, accumulate, rounding, given_states)


def _cell(cell: recurrence.Cell, hidden: int, X: Any, states: Sequence[tuple[str, Any]], W: Any, R: Any, B: Any,
          accumulate: Any, rounding: Any) -> Arrays:
    """A cell is a one-step forward sequence; its outputs are the final states [batch, H]."""
    problem = checks.cell_problem(X, states, W, R, B, hidden=hidden, bias_gates=cell.bias_gates)
    return tuple(state[:, 0] for state in _solve(cell, problem, (False,), accumulate, rounding)[1:])


def _activations(value: Any, count: int, alpha: Any, beta: Any) -> list[Activation]:
    return resolve(checks.names("activations", value, count),
                   checks.floats("activations_alpha", alpha), checks.floats("activations_beta", beta))


def _gru(hidden_size: Any, activations: Any, alpha: Any, beta: Any, clip: Any,
         linear_before_reset: Any) -> tuple[GRU, int]:
    f, g = _activations(activations, 2, alpha, beta)
    linear = checks.flag("linear_before_reset", linear_before_reset)
    return GRU((f,), (g,), checks.clip(clip), linear), checks.hidden_size(hidden_size)


def _lstm(hidden_size: Any, activations: Any, alpha: Any, beta: Any, clip: Any) -> tuple[LSTM, int]:
    f, g, h = _activations(activations, 3, alpha, beta)
    return LSTM((f,), (g,), (h,), checks.clip(clip)), checks.hidden_size(hidden_size)


def _rnn(hidden_size: Any, activations: Any, alpha: Any, beta: Any, clip: Any) -> tuple[RNN, int]:
    (f,) = _activations(activations, 1, alpha, beta)
    return RNN((f,), checks.clip(clip)), checks.hidden_size(hidden_size)


# Ports and required attributes default to REQUIRED so that leaving one out is a ValueError
# naming it (a plain missing argument would be Python's TypeError).
@register("GRUSequence", 5)
def gru_sequence(X: Any = REQUIRED, initial_hidden_state: Any = REQUIRED, sequence_lengths: Any = REQUIRED,
                 W: Any = REQUIRED, R: Any = REQUIRED, B: Any = REQUIRED, *,
                 hidden_size: int = REQUIRED, direction: str = REQUIRED, activations: Sequence[str] = GRU_ACTIVATIONS,
                 activations_alpha: Sequence[float] = (), activations_beta: Sequence[float] = (),
                 clip: float = 0.0, linear_before_reset: bool = False, accumulate: Any = None,
                 rounding: Any = None, given_states: Any = None) -> Arrays:
    """GRUSequence-5 -> (Y [batch, dirs, seq, H], Ho [batch, dirs, H])."""
    cell, hidden = _gru(hidden_size, activations, activations_alpha, activations_beta, clip, linear_before_reset)
    return sequence(cell, hidden, direction, X, [("initial_hidden_state", initial_hidden_state)], sequence_lengths,
                     W, R, B, accumulate, rounding, given_states)


@register("LSTMSequence", 5)
@register("LSTMSequence", 1)
def lstm_sequence(X: Any = REQUIRED, initial_hidden_state: Any = REQUIRED, initial_cell_state: Any = REQUIRED,
                  sequence_lengths: Any = REQUIRED, W: Any = REQUIRED, R: Any = REQUIRED, B: Any = REQUIRED, *,
                  hidden_size: int = REQUIRED, direction: str = REQUIRED,
                  activations: Sequence[str] = LSTM_ACTIVATIONS, activations_alpha: Sequence[float] = (),
                  activations_beta: Sequence[float] = (), clip: float = 0.0, accumulate: Any = None,
                  rounding: Any = None, given_states: Any = None) -> Arrays:
    """LSTMSequence-5 (and -1, same maths), gates f, i, c, o -> (Y, Ho, Co)."""
    cell, hidden = _lstm(hidden_size, activations, activations_alpha, activations_beta, clip)
    states = [("initial_hidden_state", initial_hidden_state), ("initial_cell_state", initial_cell_state)]
    return sequence(cell, hidden, direction, X, states, sequence_lengths, W, R, B, accumulate, rounding,
                    given_states)


@register("RNNSequence", 5)
def rnn_sequence(X: Any = REQUIRED, initial_hidden_state: Any = REQUIRED, sequence_lengths: Any = REQUIRED,
                 W: Any = REQUIRED, R: Any = REQUIRED, B: Any = REQUIRED, *,
                 hidden_size: int = REQUIRED, direction: str = REQUIRED, activations: Sequence[str] = RNN_ACTIVATIONS,
                 activations_alpha: Sequence[float] = (), activations_beta: Sequence[float] = (),
                 clip: float = 0.0, accumulate: Any = None, rounding: Any = None,
                 given_states: Any = None) -> Arrays:
    """RNNSequence-5 -> (Y, Ho)."""
    cell, hidden = _rnn(hidden_size, activations, activations_alpha, activations_beta, clip)
    return sequence(cell, hidden, direction, X, [("initial_hidden_state", initial_hidden_state)], sequence_lengths,
                     W, R, B, accumulate, rounding, given_states)


@register("GRUCell", 3)
def gru_cell(X: Any = REQUIRED, initial_hidden_state: Any = REQUIRED, W: Any = REQUIRED, R: Any = REQUIRED,
             B: Any = None, *, hidden_size: int = REQUIRED, activations: Sequence[str] = GRU_ACTIVATIONS,
             activations_alpha: Sequence[float] = (), activations_beta: Sequence[float] = (), clip: float = 0.0,
             linear_before_reset: bool = False, accumulate: Any = None, rounding: Any = None) -> Arrays:
    """GRUCell-3 -> (Ho [batch, H],); B is optional (None: zeros)."""
    cell, hidden = _gru(hidden_size, activations, activations_alpha, activations_beta, clip, linear_before_reset)
    return _cell(cell, hidden, X, [("initial_hidden_state", initial_hidden_state)], W, R, B, accumulate, rounding)


@register("LSTMCell", 4)
def lstm_cell(X: Any = REQUIRED, initial_hidden_state: Any = REQUIRED, initial_cell_state: Any = REQUIRED,
              W: Any = REQUIRED, R: Any = REQUIRED, B: Any = REQUIRED, *, hidden_size: int = REQUIRED,
              activations: Sequence[str] = LSTM_ACTIVATIONS, activations_alpha: Sequence[float] = (),
              activations_beta: Sequence[float] = (), clip: float = 0.0, accumulate: Any = None,
              rounding: Any = None) -> Arrays:
    """LSTMCell-4, gates f, i, c, o -> (Ho, Co)."""
    cell, hidden = _lstm(hidden_size, activations, activations_alpha, activations_beta, clip)
    states = [("initial_hidden_state", initial_hidden_state), ("initial_cell_state", initial_cell_state)]
    return _cell(cell, hidden, X, states, W, R, checks.as_array("B", B), accumulate, rounding)


@register("RNNCell", 0)
def rnn_cell(X: Any = REQUIRED, initial_hidden_state: Any = REQUIRED, W: Any = REQUIRED, R: Any = REQUIRED,
             B: Any = REQUIRED, *, hidden_size: int = REQUIRED, activations: Sequence[str] = RNN_ACTIVATIONS,
             activations_alpha: Sequence[float] = (), activations_beta: Sequence[float] = (), clip: float = 0.0,
             accumulate: Any = None, rounding: Any = None) -> Arrays:
    """RNNCell-0 (opset1) -> (Ho,)."""
    cell, hidden = _rnn(hidden_size, activations, activations_alpha, activations_beta, clip)
    return _cell(cell, hidden, X, [("initial_hidden_state", initial_hidden_state)], W, R, checks.as_array("B", B),
                 accumulate, rounding)
