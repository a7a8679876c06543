"""The cell formulas of GRU, LSTM and RNN; the recurrence driver does everything else.

A cell turns the op's weights into a ``Stepper``: the input weights and bias that the driver
applies to every time step at once, and a ``step`` that adds the recurrent part of one time
step and updates the states.  Layouts inside a step are hidden-major: a state is
[num_directions, hidden, batch] and the gates are [num_directions, gates*hidden, batch], so
the GEMM per step is R @ h (two for GRU without linear_before_reset), each gate is a
contiguous block of rows, and both directions go through one batched matmul.

Gates may be reordered (LSTM's f, i, c, o becomes f, i, o, c, so the three gates of
activation f form one block) and the rows of a gate are pre-multiplied by its activation's
``input_scale`` (0.5 for sigmoid; exact in binary floating point), clip bound included.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from irtool.reference.activations import Activation

Step = Callable[[np.ndarray, Sequence[np.ndarray], Sequence[np.ndarray]], None]


@dataclass(frozen=True)
class Stepper:
    """What the driver needs from a cell for one run.

    ``input_weights`` [D, G*H, input] and ``input_bias`` [D, G*H] give the gates' input part
    for all steps in one GEMM; ``step(xw, states_in, states_out)`` adds the recurrent part
    (xw is [D, G*H, batch]) and writes the new states ([D, H, batch] each, h first).
    """

    input_weights: np.ndarray
    input_bias: np.ndarray
    step: Step


def _gate_rows(array: np.ndarray, hidden: int, order: Sequence[int], scales: Sequence[float]) -> np.ndarray:
    """Rows of ``array`` (gate-major on axis 1: [D, G*H, ...]) reordered and scaled per gate, in one pass."""
    rest = array.shape[2:]
    blocks = array.reshape(array.shape[0], array.shape[1] // hidden, hidden, *rest)
    result = np.empty((array.shape[0], len(order), hidden, *rest), dtype=array.dtype)
    for k, (gate, scale) in enumerate(zip(order, scales)):
        np.multiply(blocks[:, gate], scale, result[:, k])
    return result.reshape(array.shape[0], len(order) * hidden, *rest)


def _weights(w: np.ndarray, r: np.ndarray, b: np.ndarray, order: Sequence[int],
             scales: Sequence[float]) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """hidden_size, then W, R and B with their gates reordered and scaled (see _gate_rows)."""
    hidden = r.shape[2]
    return (hidden, *(_gate_rows(a, hidden, order, scales) for a in (w, r, b)))


def _clipper(clip: float | None, scale: float, dtype: np.dtype) -> Callable[[np.ndarray], None]:
    """Clamp gate pre-activations to [-clip, clip] (times the gate's input scale), in place."""
    if clip is None:
        return lambda gates: None
    low, high = np.array(-clip * scale, dtype=dtype), np.array(clip * scale, dtype=dtype)

    def clip_in_place(gates: np.ndarray) -> None:  # two ufuncs: cheaper than np.clip per call
        np.minimum(gates, high, out=gates)
        np.maximum(gates, low, out=gates)
    return clip_in_place


def _product(r: np.ndarray, out: np.ndarray) -> Callable[[np.ndarray], None]:
    """A function h -> (out = r @ h) for all directions: [D, rows, H] @ [D, H, batch].

    With one direction and a batch of one it is a vector-matrix product, which np.dot does
    with less call overhead than a stacked matmul (measured ~1 us less per step at hidden 128).
    """
    directions, rows, hidden = r.shape
    if directions == 1 and out.shape[2] == 1:
        if not out.flags.c_contiguous:
            raise RuntimeError("internal error: a recurrent product needs a contiguous output")
        rt, out_row = np.ascontiguousarray(r[0].T), out.reshape(1, rows)
        return lambda h: np.dot(h.reshape(1, hidden), rt, out_row)
    return lambda h: np.matmul(r, h, out)


def _new(directions: int, rows: int, batch: int, dtype: np.dtype) -> np.ndarray:
    return np.empty((directions, rows, batch), dtype=dtype)


@dataclass(frozen=True)
class GRU:
    """zt = f(Xt Wz + Ht-1 Rz + bz), rt = f(... r ...), ht = g(...), Ht = (1-zt) ht + zt Ht-1."""

    f: Activation
    g: Activation
    clip: float | None
    linear_before_reset: bool
    gates = 3

    @property
    def bias_gates(self) -> int:
        """B holds Wbh and Rbh apart with linear_before_reset: 4 blocks instead of 3."""
        return 4 if self.linear_before_reset else 3

    def stepper(self, w: np.ndarray, r: np.ndarray, b: np.ndarray, batch: int) -> Stepper:
        scales = (self.f.input_scale, self.f.input_scale, self.g.input_scale)
        hidden, w_in, r_in, bias = _weights(w, r, b[:, :3 * r.shape[2]], (0, 1, 2), scales)
        d, dtype = r.shape[0], r.dtype
        gates, scratch = _new(d, 3 * hidden, batch, dtype), _new(d, hidden, batch, dtype)
        zr, reset, candidate = gates[:, :2 * hidden], gates[:, hidden:2 * hidden], gates[:, 2 * hidden:]

        if self.linear_before_reset:  # one GEMM per step: rt (.) (Ht-1 Rh + Rbh)
            all_gates = _product(r_in, gates)
            hidden_bias = (b[:, 3 * hidden:] * self.g.input_scale)[:, :, None]

            def update_and_reset(h: np.ndarray) -> None:
                all_gates(h)

            def recurrent_candidate(h: np.ndarray) -> None:
                np.add(candidate, hidden_bias, candidate)
                np.multiply(candidate, reset, candidate)
        else:  # two GEMMs per step: (rt (.) Ht-1) Rh
            update_and_reset = _product(np.ascontiguousarray(r_in[:, :2 * hidden]), zr)
            reset_product = _product(np.ascontiguousarray(r_in[:, 2 * hidden:]), candidate)

            def recurrent_candidate(h: np.ndarray) -> None:
                np.multiply(reset, h, scratch)
                reset_product(scratch)

        return Stepper(w_in, bias, self._step(gates, scratch, hidden, update_and_reset, recurrent_candidate))

    def _step(self, gates: np.ndarray, scratch: np.ndarray, hidden: int, update_and_reset: Callable[[np.ndarray], None],
              recurrent_candidate: Callable[[np.ndarray], None]) -> Step:
        """The GRU step around its two variants: they differ only in the recurrent part of ht."""
        zr, update, candidate = gates[:, :2 * hidden], gates[:, :hidden], gates[:, 2 * hidden:]
        clip_f = _clipper(self.clip, self.f.input_scale, gates.dtype)
        clip_g = _clipper(self.clip, self.g.input_scale, gates.dtype)
        f, g = self.f.scaled, self.g.scaled

        def step(xw: np.ndarray, states_in: Sequence[np.ndarray], states_out: Sequence[np.ndarray]) -> None:
            h = states_in[0]
            update_and_reset(h)
            np.add(zr, xw[:, :2 * hidden], zr)
            clip_f(zr)
            f(zr, zr)
            recurrent_candidate(h)
            np.add(candidate, xw[:, 2 * hidden:], candidate)
            clip_g(candidate)
            g(candidate, candidate)
            np.subtract(h, candidate, scratch)  # Ht = (1 - zt) ht + zt Ht-1 = ht + zt (Ht-1 - ht)
            np.multiply(scratch, update, scratch)
            np.add(candidate, scratch, states_out[0])

        return step


@dataclass(frozen=True)
class LSTM:
    """Gates f, i, c, o: Ct = ft Ct-1 + it ct, Ht = ot h(Ct); clip applies to gates, not Ct."""

    f: Activation
    g: Activation
    h: Activation
    clip: float | None
    gates = bias_gates = 4

    def stepper(self, w: np.ndarray, r: np.ndarray, b: np.ndarray, batch: int) -> Stepper:
        order = (0, 1, 3, 2)  # f, i, o (activation f) then c (activation g)
        hidden, w_in, r_in, bias = _weights(w, r, b, order, (self.f.input_scale,) * 3 + (self.g.input_scale,))
        d, dtype = r.shape[0], r_in.dtype
        gates, squashed = _new(d, 4 * hidden, batch, dtype), _new(d, hidden, batch, dtype)
        product = _product(r_in, gates)
        sigmoid_part, cell_part = gates[:, :3 * hidden], gates[:, 3 * hidden:]
        forget, input_, output = (gates[:, k * hidden:(k + 1) * hidden] for k in range(3))
        clip_f, clip_g = _clipper(self.clip, self.f.input_scale, dtype), _clipper(self.clip, self.g.input_scale, dtype)
        f, g, h_of_c = self.f.scaled, self.g.scaled, self.h.apply

        def step(xw: np.ndarray, states_in: Sequence[np.ndarray], states_out: Sequence[np.ndarray]) -> None:
            (h, c), (h_out, c_out) = states_in, states_out
            product(h)
            np.add(gates, xw, gates)
            clip_f(sigmoid_part)
            clip_g(cell_part)
            f(sigmoid_part, sigmoid_part)
            g(cell_part, cell_part)
            np.multiply(forget, c, c_out)
            np.multiply(input_, cell_part, input_)
            np.add(c_out, input_, c_out)
            h_of_c(c_out, squashed)
            np.multiply(output, squashed, h_out)

        return Stepper(w_in, bias, step)


@dataclass(frozen=True)
class RNN:
    """Ht = f(Xt Wi + Ht-1 Ri + Wbi + Rbi)."""

    f: Activation
    clip: float | None
    gates = bias_gates = 1

    def stepper(self, w: np.ndarray, r: np.ndarray, b: np.ndarray, batch: int) -> Stepper:
        hidden, w_in, r_in, bias = _weights(w, r, b, (0,), (self.f.input_scale,))
        gates = _new(r.shape[0], hidden, batch, r_in.dtype)
        product = _product(r_in, gates)
        clip_f = _clipper(self.clip, self.f.input_scale, r_in.dtype)
        f = self.f.scaled

        def step(xw: np.ndarray, states_in: Sequence[np.ndarray], states_out: Sequence[np.ndarray]) -> None:
            product(states_in[0])
            np.add(gates, xw, gates)
            clip_f(gates)
            f(gates, states_out[0])

        return Stepper(w_in, bias, step)
