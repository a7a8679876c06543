"""The one recurrence driver shared by every RNN, GRU and LSTM op, cells included.

A run, in the OpenVINO sequence layouts (X [batch, seq, input], states [batch, dirs, H]):

1. Each direction reads its own time order: forward reads t = 0, 1, ...; reverse reads, per
   batch element, t = len-1 down to 0 (only the first ``len`` steps, as OpenVINO's
   reverse_sequence does).  One gather per direction puts X in that order, time-major.
2. One GEMM per direction computes the input part of every gate for every step, plus bias.
3. The time loop runs both directions together: per step, one batched matmul with R and
   the cell's element-wise formula, in preallocated buffers.
4. A batch element past its length keeps its states (so Ho is its last valid step), its Y
   is 0, and a length of 0 gives states of 0, as OpenVINO's reference and CPU plugin do.
"""
from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from irtool.reference.cells import Stepper


class Cell(Protocol):
    gates: int
    states: int

    def stepper(self, w: np.ndarray, r: np.ndarray, b: np.ndarray, batch: int) -> Stepper: ...


def time_order(lengths: np.ndarray, steps: int, reverse: bool) -> np.ndarray:
    """[batch, steps]: the time index each direction reads at each step.

    Reverse maps step s to len-1-s inside an element's length and leaves later steps in
    place; the map is its own inverse, so it also puts reverse outputs back in time order.
    """
    step = np.arange(steps)
    if not reverse:
        return np.broadcast_to(step, (lengths.size, steps))
    flipped = lengths[:, None] - 1 - step[None, :]
    return np.where(step[None, :] < lengths[:, None], flipped, step[None, :])


def _input_gates(x: np.ndarray, stepper: Stepper, orders: Sequence[np.ndarray], steps: int) -> np.ndarray:
    """[D, G*H, steps*batch]: X W^T + bias for every step; column s*batch + b is step s of element b."""
    batch = x.shape[0]
    directions, rows, _ = stepper.input_weights.shape
    gates = np.empty((directions, rows, steps * batch), dtype=stepper.input_weights.dtype)
    elements = np.arange(batch)[None, :]
    for d, order in enumerate(orders):
        ordered = x[elements, order[:, :steps].T].reshape(steps * batch, -1)
        np.matmul(stepper.input_weights[d], ordered.T, out=gates[d])
        gates[d] += stepper.input_bias[d][:, None]
    return gates


def run(cell: Cell, x: np.ndarray, states: Sequence[np.ndarray], lengths: np.ndarray,
        w: np.ndarray, r: np.ndarray, b: np.ndarray, reverse: Sequence[bool]) -> tuple[np.ndarray, ...]:
    """Run ``cell`` over ``x``; returns Y [batch, dirs, seq, H] then the final states [batch, dirs, H].

    All arrays are already checked and in the compute dtype; ``lengths`` is an int array
    with values in [0, seq]; ``reverse`` gives, per direction, whether it runs backwards.
    """
    batch, seq, _ = x.shape
    directions, hidden = len(reverse), r.shape[2]
    steps = int(lengths.max(initial=0))
    orders = [time_order(lengths, seq, flag) for flag in reverse]
    stepper = cell.stepper(w, r, b, batch)
    input_gates = _input_gates(x, stepper, orders, steps)

    history = np.empty((steps + 1, directions, hidden, batch), dtype=x.dtype)
    history[0] = states[0].transpose(1, 2, 0)
    extra = [np.empty((2, directions, hidden, batch), dtype=x.dtype) for _ in states[1:]]
    for buffer, initial in zip(extra, states[1:]):
        buffer[0] = initial.transpose(1, 2, 0)

    finished = np.arange(steps)[:, None] >= lengths[None, :]
    for s in range(steps):
        ins = [history[s], *(buffer[s % 2] for buffer in extra)]
        outs = [history[s + 1], *(buffer[(s + 1) % 2] for buffer in extra)]
        stepper.step(input_gates[:, :, s * batch:(s + 1) * batch], ins, outs)
        if finished[s].any():
            for new, old in zip(outs, ins):
                np.copyto(new, old, where=finished[s])

    final = [history[steps], *(buffer[steps % 2] for buffer in extra)]
    return (_outputs_in_time_order(history, orders, lengths, seq),
            *(_final_state(state, lengths) for state in final))


def _final_state(state: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """[D, H, batch] -> [batch, D, H], zero for elements of length 0."""
    result = np.ascontiguousarray(state.transpose(2, 0, 1))
    result[lengths == 0] = 0
    return result


def _outputs_in_time_order(history: np.ndarray, orders: Sequence[np.ndarray], lengths: np.ndarray,
                           seq: int) -> np.ndarray:
    """Y [batch, D, seq, H] from the per-step states, 0 past each element's length."""
    steps, directions, hidden, batch = history.shape[0] - 1, history.shape[1], history.shape[2], history.shape[3]
    y = np.zeros((batch, directions, seq, hidden), dtype=history.dtype)
    elements = np.arange(batch)[:, None]
    for d, order in enumerate(orders):
        per_step = history[1:, d]  # [steps, H, batch]
        if np.array_equal(order[:, :steps], np.broadcast_to(np.arange(steps), (batch, steps))):
            y[:, d, :steps] = per_step.transpose(2, 0, 1)
        else:
            y[:, d, :steps] = per_step[order[:, :steps], :, elements]
    past_end = np.arange(seq)[None, :] >= lengths[:, None]
    np.copyto(y, 0, where=past_end[:, None, :, None])
    return y
