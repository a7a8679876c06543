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

from typing import Callable, Protocol, Sequence

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


CHUNK_BYTES = 4 << 20  # input gates computed per chunk of steps, so a step reads them from cache


def _chunk_steps(stepper: Stepper, batch: int) -> int:
    directions, rows, _ = stepper.input_weights.shape
    per_step = directions * rows * batch * stepper.input_weights.dtype.itemsize
    return max(1, CHUNK_BYTES // max(per_step, 1))


def _input_gates(x: np.ndarray, stepper: Stepper, orders: Sequence[np.ndarray], first: int, last: int,
                 out: np.ndarray) -> np.ndarray:
    """X W^T + bias for steps [first, last) into ``out`` [D, G*H, >= (last-first)*batch].

    Column (s - first)*batch + b holds step s of batch element b, in each direction's order.
    """
    batch = x.shape[0]
    columns = (last - first) * batch
    elements = np.arange(batch)[None, :]
    gates = out[:, :, :columns]
    for d, order in enumerate(orders):
        ordered = x[elements, order[:, first:last].T].reshape(columns, -1)
        np.matmul(stepper.input_weights[d], ordered.T, out=gates[d])
        np.add(gates[d], stepper.input_bias[d][:, None], out=gates[d])
    return gates


def _recorders(y: np.ndarray, orders: Sequence[np.ndarray], steps: int) -> list[Callable[[np.ndarray], None]]:
    """Per step, a function writing the new h [D, H, batch] into Y [batch, D, seq, H] at its time."""
    batch = y.shape[0]
    elements = np.arange(batch)
    times = np.stack([order[:, :steps] for order in orders])  # [D, batch, steps]
    uniform = bool((times == times[:, :1]).all())

    def slices(s: int) -> Callable[[np.ndarray], None]:
        targets = [y[:, d, int(times[d, 0, s])] for d in range(len(orders))]  # each [batch, H]

        def record(h: np.ndarray) -> None:
            for d, target in enumerate(targets):
                np.copyto(target, h[d].T)
        return record

    def gathered(s: int) -> Callable[[np.ndarray], None]:
        def record(h: np.ndarray) -> None:
            for d in range(len(orders)):
                y[elements, d, times[d, :, s]] = h[d].T
        return record

    return [(slices if uniform else gathered)(s) for s in range(steps)]


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

    buffers = [np.empty((2, directions, hidden, batch), dtype=x.dtype) for _ in states]
    for buffer, initial in zip(buffers, states):
        buffer[0] = initial.transpose(1, 2, 0)
    ping_pong = [[buffer[k] for buffer in buffers] for k in (0, 1)]
    y = np.zeros((batch, directions, seq, hidden), dtype=x.dtype)
    record = _recorders(y, orders, steps)
    finished = np.arange(steps)[:, None] >= lengths[None, :]
    freeze = finished.any(axis=1).tolist()

    chunk = _chunk_steps(stepper, batch)
    chunk_gates = np.empty((directions, stepper.input_weights.shape[1], min(chunk, steps) * batch), dtype=x.dtype)
    for first in range(0, steps, chunk):
        gates = _input_gates(x, stepper, orders, first, min(first + chunk, steps), chunk_gates)
        for s in range(first, min(first + chunk, steps)):
            ins, outs = ping_pong[s % 2], ping_pong[(s + 1) % 2]
            column = (s - first) * batch
            stepper.step(gates[:, :, column:column + batch], ins, outs)
            if freeze[s]:
                for new, old in zip(outs, ins):
                    np.copyto(new, old, where=finished[s])
            record[s](outs[0])

    past_end = np.arange(seq)[None, :] >= lengths[:, None]
    if past_end.any():
        np.copyto(y, 0, where=past_end[:, None, :, None])
    return (y, *(_final_state(buffer[steps % 2], lengths) for buffer in buffers))


def _final_state(state: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """[D, H, batch] -> [batch, D, H], zero for elements of length 0."""
    result = np.ascontiguousarray(state.transpose(2, 0, 1))
    result[lengths == 0] = 0
    return result
