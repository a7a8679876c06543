"""The one recurrence driver shared by every RNN, GRU and LSTM op, cells included.

A run, in the OpenVINO sequence layouts (X [batch, seq, input], states [batch, dirs, H]):

1. Each direction reads its own time order: forward reads t = 0, 1, ...; reverse reads, per
   batch element, t = len-1 down to 0 (only the first ``len`` steps, as OpenVINO's
   reverse_sequence does).  A gather puts X in that order, time-major.
2. One GEMM per direction computes the input part of every gate, bias included, for a chunk
   of steps small enough to be read back from cache (1 MB: measured best).
3. The time loop runs both directions together: per step, one batched matmul with R and
   the cell's element-wise formula, in preallocated buffers; no loop over batch elements.
4. A batch element past its length keeps its states (so Ho is its last valid step), its Y
   is 0, and a length of 0 gives states of 0, as OpenVINO's reference and CPU plugin do.
"""
from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

from irtool.reference.cells import Stepper


class Cell(Protocol):
    """A cell formula (cells.GRU, LSTM, RNN): W and R have ``gates`` blocks, B ``bias_gates``."""

    gates: int
    bias_gates: int

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


CHUNK_BYTES = 1 << 20  # input gates per chunk of steps, read back from cache (measured best at 1 MB)


def _chunk_steps(stepper: Stepper, batch: int) -> int:
    directions, rows, _ = stepper.input_weights.shape
    per_step = directions * rows * batch * stepper.input_weights.dtype.itemsize
    return max(1, CHUNK_BYTES // max(per_step, 1))


def _gate_buffer(stepper: Stepper, batch: int, steps: int) -> np.ndarray:
    """[D, G*H, steps*batch] for the input gates of a chunk of steps.

    The columns of one step must be cheap to read: with batch > 1 the buffer is row-major
    (a step is a block of ``batch`` adjacent columns); with batch 1 a step is a single column,
    so the buffer is the transpose of a row-major [D, steps, G*H] and the column is contiguous.
    """
    directions, rows, _ = stepper.input_weights.shape
    dtype = stepper.input_weights.dtype
    if batch == 1:
        return np.empty((directions, steps, rows), dtype=dtype).transpose(0, 2, 1)
    return np.empty((directions, rows, steps * batch), dtype=dtype)


def _input_gates(x: np.ndarray, stepper: Stepper, orders: Sequence[np.ndarray], first: int, last: int,
                 out: np.ndarray) -> None:
    """X W^T + bias for steps [first, last) into ``out`` [D, G*H, >= (last-first)*batch].

    Column (s - first)*batch + b holds step s of batch element b, in each direction's order.
    """
    batch = x.shape[0]
    columns = (last - first) * batch
    elements = np.arange(batch)[None, :]
    gates = out[:, :, :columns]
    for d, order in enumerate(orders):
        ordered = x[elements, order[:, first:last].T].reshape(columns, -1)
        if batch == 1:  # the GEMM is faster in this orientation; the transposing copy is cheap
            np.copyto(gates[d], np.matmul(stepper.input_weights[d], ordered.T))
        else:
            np.matmul(stepper.input_weights[d], ordered.T, gates[d])
        np.add(gates[d], stepper.input_bias[d][:, None], out=gates[d])


def run(cell: Cell, x: np.ndarray, states: Sequence[np.ndarray], lengths: np.ndarray,
        w: np.ndarray, r: np.ndarray, b: np.ndarray, reverse: Sequence[bool]) -> tuple[np.ndarray, ...]:
    """Run ``cell`` over ``x``; returns Y [batch, dirs, seq, H] then the final states [batch, dirs, H].

    All arrays are already checked and in the compute dtype; ``lengths`` is an int array
    with values in [0, seq]; ``reverse`` gives, per direction, whether it runs backwards.
    The steps run in chunks: per chunk, one GEMM gives the input part of the gates, the
    steps write h into a chunk history, and the history goes to Y while still in cache.
    """
    batch, seq, _ = x.shape
    directions, hidden = len(reverse), r.shape[2]
    steps = int(lengths.max(initial=0))
    orders = [time_order(lengths, seq, flag) for flag in reverse]
    stepper = cell.stepper(w, r, b, batch)
    chunk = min(_chunk_steps(stepper, batch), max(steps, 1))

    history = np.empty((chunk + 1, directions, hidden, batch), dtype=x.dtype)  # h before and after each step
    history[0] = states[0].transpose(1, 2, 0)
    others = [np.empty((2, directions, hidden, batch), dtype=x.dtype) for _ in states[1:]]  # ping-pong
    for buffer, initial in zip(others, states[1:]):
        buffer[0] = initial.transpose(1, 2, 0)
    y = np.empty((batch, directions, seq, hidden), dtype=x.dtype)  # every element is written below
    finished = np.arange(steps)[:, None] >= lengths[None, :]
    freeze = finished.any(axis=1).tolist()
    gate_buffer = _gate_buffer(stepper, batch, chunk)

    hs = list(history)
    by_parity = [[buffer[0] for buffer in others], [buffer[1] for buffer in others]]
    for first in range(0, steps, chunk):
        last = min(first + chunk, steps)
        _input_gates(x, stepper, orders, first, last, gate_buffer)
        for k, s in enumerate(range(first, last)):
            ins, outs = [hs[k], *by_parity[s & 1]], [hs[k + 1], *by_parity[~s & 1]]
            stepper.step(gate_buffer[:, :, k * batch:(k + 1) * batch], ins, outs)
            if freeze[s]:
                for new, old in zip(outs, ins):
                    np.copyto(new, old, where=finished[s])
        _to_outputs(y, history[1:last - first + 1], orders, first, last)
        history[0] = history[last - first]

    past_end = np.arange(seq)[None, :] >= lengths[:, None]
    if past_end.any():
        np.copyto(y, 0, where=past_end[:, None, :, None])
    final = [history[0], *(buffer[steps % 2] for buffer in others)]
    return (y, *(_final_state(state, lengths) for state in final))


def _to_outputs(y: np.ndarray, history: np.ndarray, orders: Sequence[np.ndarray], first: int, last: int) -> None:
    """Write h of steps [first, last) (``history`` [steps, D, H, batch]) to Y [batch, D, seq, H]."""
    elements = np.arange(y.shape[0])[:, None]
    for d, order in enumerate(orders):
        y[elements, d, order[:, first:last], :] = history[:, d].transpose(2, 0, 1)


def _final_state(state: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """[D, H, batch] -> [batch, D, H], zero for elements of length 0."""
    result = np.ascontiguousarray(state.transpose(2, 0, 1))
    result[lengths == 0] = 0
    return result
