"""The one recurrence driver shared by every RNN, GRU and LSTM op, cells included.

A run, in the OpenVINO sequence layouts (X [batch, seq, input], states [batch, dirs, H]):

1. Each direction reads its own time order: forward reads t = 0, 1, ...; reverse reads, per
   batch element, t = len-1 down to 0 (only the first ``len`` steps, as OpenVINO's
   reverse_sequence does).  A gather puts X in that order, time-major.
2. One GEMM per direction computes the input part of every gate, bias included, for a chunk
   of steps wide enough for the GEMM and small enough to be read back from cache.
3. The time loop runs both directions together: per step, one batched matmul with R and
   the cell's element-wise formula, in preallocated buffers; no loop over batch elements.
   Scratch memory comes from this thread's workspace (workspace.py), mapped once.
4. From given hidden states (a device's Y), no step waits for the one before but through LSTM's
   cell state: a chunk of steps runs as one wide step, its columns the steps (``_run_given``).
5. A batch element past its length keeps its states (so Ho is its last valid step), its Y
   is 0, and a length of 0 gives states of 0, as OpenVINO's reference and CPU plugin do.
"""
from __future__ import annotations

from typing import Callable, Protocol, Sequence

import numpy as np

from irtool.reference.cells import Alloc, Stepper
from irtool.reference.rounding import EXACT, Rounding
from irtool.reference.workspace import scratch


class Cell(Protocol):
    """A cell formula (cells.GRU, LSTM, RNN): W and R have ``gates`` blocks, B ``bias_gates``."""

    gates: int
    bias_gates: int

    def stepper(self, w: np.ndarray, r: np.ndarray, b: np.ndarray, batch: int, alloc: Alloc,
                rounding: Rounding = EXACT) -> Stepper: ...


def reverse_order(lengths: np.ndarray, steps: int) -> np.ndarray:
    """[batch, steps]: the time index a reverse direction reads at each step.

    Step s reads len-1-s inside an element's length; later steps stay in place.  The map is
    its own inverse, so it also puts reverse outputs back in time order.  (A forward
    direction reads step s at time s: its order is None below.)
    """
    step = np.arange(steps)
    flipped = lengths[:, None] - 1 - step[None, :]
    return np.where(step[None, :] < lengths[:, None], flipped, step[None, :])


def _x_rows(order: np.ndarray | None, batch: int, seq: int) -> np.ndarray:
    """[seq, batch]: the row of X, flattened to [batch*seq, input], that each step reads per element."""
    starts = np.arange(batch) * seq
    if order is None:
        return np.arange(seq)[:, None] + starts[None, :]
    return np.ascontiguousarray((order + starts[:, None]).T)


# A chunk of steps gets its input gates from one GEMM.  Where CHUNK_BYTES (the per-core
# cache) holds at least MIN_COLUMNS columns (steps * batch), the chunk is that size and the
# steps read their gates back from cache; where it holds fewer, the gates cannot stay in
# cache anyway and the chunk spans WIDE_COLUMNS, where the GEMM runs at full speed.
# Measured (reference worker of bench_reference.py, alternating): 1 MB chunks beat 512
# columns by 2-4 points at (16,100,256,256); 512 columns beat 1 MB (128 columns) by 4-12
# points and 256 columns by 2-11 at (64,200,512,512).
CHUNK_BYTES = 1 << 20
MIN_COLUMNS = 256
WIDE_COLUMNS = 512


def chunk_steps(gate_rows: int, batch: int, itemsize: int = 4, directions: int = 1) -> int:
    """Steps per chunk for input gates of ``gate_rows`` rows per direction (the rule above)."""
    per_step = directions * gate_rows * max(batch, 1) * itemsize
    steps = CHUNK_BYTES // max(per_step, 1)
    if steps * batch >= MIN_COLUMNS:
        return max(1, steps)
    return max(1, WIDE_COLUMNS // max(batch, 1))


class _InputGates:
    """X W^T + bias for a chunk of steps at a time, in scratch taken once per run.

    ``fill(first, last)`` computes the gates of steps [first, last) as [D, G*H, columns],
    column (s - first)*batch + b holding step s of batch element b in each direction's order,
    and returns a [D, G*H, batch] view per step.  A step's columns must be cheap to read:
    with batch > 1 they are ``batch`` adjacent columns of a row-major array; with batch 1 the
    array is the transpose of a row-major [D, steps, G*H], so the step's column is
    contiguous.  Either way the array is contiguous for any number of steps (a short last
    chunk included), so the GEMM writes it directly.
    ``rows[d]`` [seq, batch] is the row of X (flattened to [batch*seq, input]) that
    direction d reads at each step.
    """

    def __init__(self, x: np.ndarray, stepper: Stepper, rows: Sequence[np.ndarray], chunk: int,
                 alloc: Alloc) -> None:
        batch, _, inputs = x.shape
        self.directions, self.gate_rows, _ = stepper.input_weights.shape
        self.flat, self.stepper, self.rows, self.batch = x.reshape(-1, inputs), stepper, rows, batch
        self.ordered = alloc((chunk * batch, inputs), x.dtype)
        self.storage = alloc((self.directions * self.gate_rows * chunk * batch,), x.dtype)
        if batch == 1:  # the GEMM is faster as W X^T; one transposing copy puts it in place
            self.product = alloc((self.gate_rows * chunk,), x.dtype)

    def fill(self, first: int, last: int) -> list[np.ndarray]:
        """A [D, G*H, batch] view per step, made in one call (a view in either layout)."""
        gates = self.chunk(first, last)
        return list(gates.reshape(self.directions, self.gate_rows, last - first, self.batch).transpose(2, 0, 1, 3))

    def chunk(self, first: int, last: int) -> np.ndarray:
        """The gates of steps [first, last), [D, G*H, (last - first) * batch]."""
        columns = (last - first) * self.batch
        size = self.directions * self.gate_rows * columns
        if self.batch == 1:
            gates = self.storage[:size].reshape(self.directions, columns, self.gate_rows).transpose(0, 2, 1)
        else:
            gates = self.storage[:size].reshape(self.directions, self.gate_rows, columns)
        ordered, weights, bias = self.ordered[:columns], self.stepper.input_weights, self.stepper.input_bias
        for d, index in enumerate(self.rows):
            np.take(self.flat, index[first:last].reshape(-1), axis=0, out=ordered, mode="clip")  # unbuffered
            if self.batch == 1:
                product = self.product[:self.gate_rows * columns].reshape(self.gate_rows, columns)
                np.matmul(weights[d], ordered.T, product)
                np.copyto(gates[d], product)
            else:
                np.matmul(weights[d], ordered.T, gates[d])
            if self.stepper.input_rounding is not None:
                self.stepper.input_rounding(gates[d])
            if bias is not None:
                np.add(gates[d], bias[d][:, None], out=gates[d])
        return gates


def run(cell: Cell, x: np.ndarray, states: Sequence[np.ndarray], lengths: np.ndarray,
        w: np.ndarray, r: np.ndarray, b: np.ndarray, reverse: Sequence[bool],
        rounding: Rounding = EXACT, given: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Run ``cell`` over ``x``; returns Y [batch, dirs, seq, H] then the final states [batch, dirs, H].

    All arrays are already checked and in the compute dtype; ``lengths`` is an int array
    with values in [0, seq]; ``reverse`` gives, per direction, whether it runs backwards.
    The steps run in chunks: per chunk, one GEMM gives the input part of the gates, the
    steps write h into a chunk history, and the history goes to Y while still in cache.
    ``rounding``'s points of every step (the states, GRU's reset product, the gates) are
    applied here and in the cell; its points applied once are the caller's.  Values past a
    rounding type's range become infinite, as on a device, without a warning.

    ``given`` (Y of another run, [batch, dirs, seq, H]): each step starts from the hidden state
    that run had after the step before (the first from the initial state), so each step is
    computed from a device's own previous state and judged alone; the hidden state after the
    last step (Ho) is then this run's own at each element's last step.  LSTM's cell state is this
    run's throughout.
    """
    with scratch() as workspace, np.errstate(over="ignore"):
        outputs = None if given is None else _run_given(cell, x, states, lengths, w, r, b, reverse, workspace.take,
                                                         rounding, given)
        return outputs or _run(cell, x, states, lengths, w, r, b, reverse, workspace.take, rounding, given)


def _forced(given: np.ndarray, orders: Sequence[np.ndarray | None], steps: int, initial: np.ndarray,
            finished: np.ndarray, freeze: Sequence[bool]) -> np.ndarray:
    """Y [batch, D, seq, H] in time order -> [steps + 1, D, H, batch]: the hidden state each step starts
    from, as each direction processes them: the initial state, then Y's after each step, where an element
    past its length keeps its last (as the run's own states are frozen)."""
    batch, directions, _, hidden = given.shape
    result = np.empty((steps + 1, directions, hidden, batch), given.dtype)
    result[0] = initial
    for d, order in enumerate(orders):
        if order is None:
            result[1:, d] = given[:, d, :steps].transpose(1, 2, 0)
        else:
            result[1:, d] = given[np.arange(batch)[:, None], d, order[:, :steps]].transpose(1, 2, 0)
    for s in range(steps):
        if freeze[s]:
            np.copyto(result[s + 1], result[s], where=finished[s])
    return result


def _run(cell: Cell, x: np.ndarray, states: Sequence[np.ndarray], lengths: np.ndarray, w: np.ndarray,
         r: np.ndarray, b: np.ndarray, reverse: Sequence[bool], alloc: Alloc,
         rounding: Rounding, given: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    batch, seq, _ = x.shape
    directions, hidden = len(reverse), r.shape[2]
    steps, shortest = int(lengths.max(initial=0)), int(lengths.min(initial=seq))
    orders = [reverse_order(lengths, seq) if flag else None for flag in reverse]
    rows = [_x_rows(order, batch, seq) for order in orders]
    stepper = cell.stepper(w, r, b, batch, alloc, rounding)
    weights = stepper.input_weights
    chunk = min(chunk_steps(weights.shape[1], batch, weights.dtype.itemsize, directions), max(steps, 1))

    # Each state before and after every step of a chunk, [chunk + 1, D, H, batch]: h's is
    # written to Y once per chunk; at_step[k] lists the states after step k of the chunk.
    histories = [alloc((chunk + 1, directions, hidden, batch), x.dtype) for _ in states]
    for history, initial in zip(histories, states):
        history[0] = initial.transpose(1, 2, 0)
    at_step = [list(views) for views in zip(*histories)]
    y = np.empty((batch, directions, seq, hidden), dtype=x.dtype)  # every element is written below
    finished = np.arange(steps)[:, None] >= lengths[None, :]
    freeze = finished.any(axis=1).tolist()
    input_gates = _InputGates(x, stepper, rows, chunk, alloc)

    step = stepper.step
    shape = (directions, hidden, batch)
    state_rounding = [(index, rounded) for index, rounded in
                      enumerate([rounding.per_step_of("state", shape), rounding.per_step_of("cell_state", shape)])
                      if rounded is not None and index < len(states)]
    computed, steps_in, steps_out, frozen = histories[0], at_step, at_step[1:], 0
    if given is not None:  # this run's h is Y's (``computed``); each step starts from the given run's (``forced``)
        forced = _forced(given.astype(x.dtype, copy=False), orders, steps, histories[0][0], finished, freeze)
        computed, frozen = alloc((chunk + 1, directions, hidden, batch), x.dtype), 1
    for first in range(0, steps, chunk):
        count = min(chunk, steps - first)
        if given is not None:
            steps_in = [[forced[first + k], *at_step[k][1:]] for k in range(count)]
            steps_out = [[computed[k + 1], *at_step[k + 1][1:]] for k in range(count)]
        for k, gates in enumerate(input_gates.fill(first, first + count)):
            states_out = steps_out[k]
            step(gates, steps_in[k], states_out)
            for index, rounded in state_rounding:
                rounded(states_out[index])
            if freeze[first + k]:  # (the forced h is frozen in advance)
                for new, old in zip(at_step[k + 1][frozen:], at_step[k][frozen:]):
                    np.copyto(new, old, where=finished[first + k])
        _to_outputs(y, computed[1:count + 1], orders, first, first + count)
        for history in histories:
            history[0] = history[count]

    _zero_past_end(y, lengths, shortest)
    finals = [_final_state(history[0], lengths, shortest) for history in histories]
    if given is not None:
        finals[0] = _last_step(y, lengths, reverse)
    return (y, *finals)


def _run_given(cell: Cell, x: np.ndarray, states: Sequence[np.ndarray], lengths: np.ndarray, w: np.ndarray,
               r: np.ndarray, b: np.ndarray, reverse: Sequence[bool], alloc: Alloc, rounding: Rounding,
               given: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """:func:`run` from given hidden states, a chunk of steps at a time (``Stepper.wide``): each step
    reads its h from ``given``, not from the step before, so a chunk's products are one GEMM and its
    element-wise formulas one call each, where the sequential run makes them once a step.  The
    formulas of :func:`_run`, a product's sums perhaps ordered otherwise (one GEMM over more columns);
    None where the cell has no such step (its gates read Ct-1)."""
    batch, seq, _ = x.shape
    directions, hidden = len(reverse), r.shape[2]
    steps, shortest = int(lengths.max(initial=0)), int(lengths.min(initial=seq))
    chunk = min(chunk_steps(cell.gates * hidden, batch, x.dtype.itemsize, directions), max(steps, 1))
    made: dict[int, tuple[Stepper, Callable[[np.ndarray], None] | None]] = {}

    def stepper(count: int) -> tuple[Stepper, Callable[[np.ndarray], None] | None]:
        """The stepper of ``count`` steps a call, and the rounding of its h."""
        if count not in made:
            made[count] = (cell.stepper(w, r, b, count * batch, alloc, rounding),
                           rounding.per_step_of("state", (directions, hidden, count * batch)))
        return made[count]

    if stepper(chunk)[0].wide is None:
        return None
    orders = [reverse_order(lengths, seq) if flag else None for flag in reverse]
    finished = np.arange(steps)[:, None] >= lengths[None, :]
    freeze = finished.any(axis=1).tolist()
    initial = states[0].transpose(1, 2, 0)
    forced = _forced(given.astype(x.dtype, copy=False), orders, steps, initial, finished, freeze)
    input_gates = _InputGates(x, stepper(chunk)[0], [_x_rows(order, batch, seq) for order in orders], chunk, alloc)
    y = np.empty((batch, directions, seq, hidden), dtype=x.dtype)
    h_in, h_out = (alloc((directions * hidden * chunk * batch,), x.dtype) for _ in range(2))
    c = None
    if len(states) > 1:  # LSTM's cell state, carried from step to step: its own, not a given one
        c = alloc((directions, hidden, batch), x.dtype)
        np.copyto(c, states[1].transpose(1, 2, 0))
    round_c = rounding.per_step_of("cell_state", (directions, hidden, batch))
    kept = [alloc((directions, hidden, batch), x.dtype) for _ in range(2 if round_c is not None else 0)]

    for first in range(0, steps, chunk):
        count = min(chunk, steps - first)
        wide, round_h = stepper(count)
        shape = (directions, hidden, count * batch)
        into, out = h_in[:int(np.prod(shape))].reshape(shape), h_out[:int(np.prod(shape))].reshape(shape)
        np.copyto(into.reshape(directions, hidden, count, batch), forced[first:first + count].transpose(1, 2, 0, 3))

        def carry(k: int, new: np.ndarray, old: np.ndarray, first: int = first) -> np.ndarray:
            """Ct of step k as step k+1 reads it: rounded where the run rounds it, frozen past a length."""
            if round_c is not None:
                round_c(new, kept[k % 2])
                new = kept[k % 2]
            if freeze[first + k]:
                np.copyto(new, old, where=finished[first + k])
            return new

        last = wide.wide(input_gates.chunk(first, first + count), into, out, c, carry)
        if round_h is not None:
            round_h(out)
        _to_outputs(y, out.reshape(directions, hidden, count, batch).transpose(2, 0, 1, 3), orders, first,
                    first + count)
        if c is not None:
            np.copyto(c, last)  # (``last`` may be scratch of the chunk's)

    _zero_past_end(y, lengths, shortest)
    finals = [_last_step(y, lengths, reverse)]
    if c is not None:
        finals.append(_final_state(c, lengths, shortest))
    return (y, *finals)


def _zero_past_end(y: np.ndarray, lengths: np.ndarray, shortest: int) -> None:
    """Y [batch, D, seq, H] set to 0 past each element's length."""
    seq = y.shape[2]
    if shortest < seq:
        past_end = np.arange(seq)[None, :] >= lengths[:, None]
        np.copyto(y, 0, where=past_end[:, None, :, None])


def _last_step(y: np.ndarray, lengths: np.ndarray, reverse: Sequence[bool]) -> np.ndarray:
    """[batch, D, H]: each direction's output at each element's last step (time 0 for reverse), 0 for
    an element of length 0."""
    batch = y.shape[0]
    result = np.zeros((batch, y.shape[1], y.shape[3]), y.dtype)
    valid = lengths > 0
    for d, backwards in enumerate(reverse):
        times = np.zeros(batch, dtype=np.intp) if backwards else np.maximum(lengths - 1, 0)
        result[valid, d] = y[np.arange(batch), d, times][valid]
    return result


def _to_outputs(y: np.ndarray, history: np.ndarray, orders: Sequence[np.ndarray | None], first: int,
                last: int) -> None:
    """Write h of steps [first, last) (``history`` [steps, D, H, batch]) to Y [batch, D, seq, H]."""
    for d, order in enumerate(orders):
        if order is None:
            y[:, d, first:last] = history[:, d].transpose(2, 0, 1)
        else:
            y[np.arange(y.shape[0])[:, None], d, order[:, first:last]] = history[:, d].transpose(2, 0, 1)


def _final_state(state: np.ndarray, lengths: np.ndarray, shortest: int) -> np.ndarray:
    """[D, H, batch] -> [batch, D, H], zero for elements of length 0: a copy, never a view of scratch."""
    result = state.transpose(2, 0, 1).copy()
    if shortest == 0:
        result[lengths == 0] = 0
    return result
