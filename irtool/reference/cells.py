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

A gate's activation is given per direction (``Activations``): one entry serves every
direction (OpenVINO's ops), two give a bidirectional run a set per direction (ONNX allows
it).  Directions that agree share one kernel call over both; only where they differ does a
kernel run per direction, and then the input scale is per direction too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from irtool.core.errors import IrtoolBug
from irtool.reference.activations import Activation, Kernel
from irtool.reference.rounding import EXACT, Rounding

Step = Callable[[np.ndarray, Sequence[np.ndarray], Sequence[np.ndarray]], None]
Carry = Callable[[int, np.ndarray, np.ndarray], np.ndarray]  # (step k, its new cell state, the one before) -> what step k+1 reads
Wide = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, Carry], np.ndarray | None]
Product = Callable[[np.ndarray], None]
Alloc = Callable[[tuple[int, ...], np.dtype], np.ndarray]  # uninitialised scratch (workspace.Workspace.take)
Activations = tuple[Activation, ...]  # a gate's activation: one for all directions, or one per direction
Scale = float | np.ndarray  # a gate's input scale: one number, or [D] where the directions' differ


def _keep(array: np.ndarray) -> None:
    """A rounding point that rounds nothing."""


def _operand(rounding: Rounding, shape: tuple[int, ...], dtype: np.dtype, alloc: Alloc) -> Callable[[np.ndarray], np.ndarray]:
    """h -> h as a product reads it: rounded into scratch where ``product_inputs`` rounds (the state
    itself kept as it is), else h itself."""
    rounded = rounding.per_step_of("product_inputs", shape)
    if rounded is None:
        return lambda h: h
    copy = alloc(shape, dtype)

    def operand(h: np.ndarray) -> np.ndarray:
        rounded(h, copy)
        return copy
    return operand


@dataclass(frozen=True)
class Stepper:
    """What the driver needs from a cell for one run.

    ``input_weights`` [D, G*H, input] and ``input_bias`` [D, G*H] give the gates' input part
    for all steps in one GEMM; ``step(xw, states_in, states_out)`` adds the recurrent part
    (xw is [D, G*H, batch]) and writes the new states ([D, H, batch] each, h first).  A cell
    decomposed into FullyConnected layers (Rounding.products) rounds X W^T before any bias
    (``input_rounding``) and adds the bias per step, where its layers do.

    ``wide(xw, h, h_out, c, carry)``, for a stepper made with ``batch`` = steps x the run's batch:
    every step of a chunk from the hidden state given for it (xw, h and h_out [D, rows, steps*batch],
    column k*batch + b step k of element b), so nothing waits on the step before but LSTM's cell
    state: from ``c`` (the chunk's first, [D, H, batch]), each step's is computed in turn and passed
    to ``carry``, which gives what the next step reads (rounded, frozen past a length); the last step's
    is returned (None for a cell without one).
    """

    input_weights: np.ndarray
    input_bias: np.ndarray | None  # None: the cell adds the bias at every step (after a rounded product)
    step: Step
    input_rounding: Callable[[np.ndarray], None] | None = None  # X W^T rounded as a FullyConnected gives it
    wide: Wide | None = None  # the steps of a chunk at once, each from a given hidden state (below); None: not so


def _one_state(step: Step) -> Wide:
    """:attr:`Stepper.wide` of a cell whose only state is h: its step itself, over columns of all the steps."""
    return lambda xw, h, h_out, c, carry: step(xw, (h,), (h_out,))


def _distinct(activations: Activations) -> Activations:
    """One entry if every direction has the same function and parameters, else all of them."""
    first = activations[0]
    same = all((a.name, a.alpha, a.beta) == (first.name, first.alpha, first.beta) for a in activations[1:])
    return (first,) if same else activations


def _scale(activations: Activations) -> Scale:
    scales = [a.input_scale for a in activations]
    return scales[0] if len(set(scales)) == 1 else np.array(scales)


def _per_direction(scale: Scale, ndim: int, dtype: np.dtype) -> Scale:
    """``scale`` ready to multiply an array [D, ...] of ``ndim`` dims (a number stays a number)."""
    if isinstance(scale, float):
        return scale
    return scale.astype(dtype).reshape(-1, *([1] * (ndim - 1)))


def _gate_rows(array: np.ndarray, hidden: int, order: Sequence[int], scales: Sequence[Scale],
               alloc: Alloc) -> np.ndarray:
    """The rows of gates ``order`` of ``array`` ([D, G*H, ...], gate-major), each gate scaled, in one pass."""
    directions, rest = array.shape[0], array.shape[2:]
    blocks = array.reshape(directions, array.shape[1] // hidden, hidden, *rest)
    result = alloc((directions, len(order), hidden, *rest), array.dtype)
    for k, (gate, scale) in enumerate(zip(order, scales)):
        np.multiply(blocks[:, gate], _per_direction(scale, 2 + len(rest), array.dtype), result[:, k])
    return result.reshape(directions, len(order) * hidden, *rest)


def _by_direction(kernels: Sequence[Kernel]) -> Kernel:
    """One kernel per direction over arrays [D, ...]."""
    def kernel(x: np.ndarray, out: np.ndarray) -> None:
        for d, one in enumerate(kernels):
            one(x[d], out[d])
    return kernel


def _clipped(activation: Activation, clip: float | None, dtype: np.dtype) -> Kernel:
    """The activation's kernel (x, out) on scaled arguments, after clamping them to [-clip, clip] (scaled alike).

    Without clip it is the kernel itself: no call per step for a no-op.  Two ufuncs clamp:
    cheaper per call than np.clip.
    """
    kernel = activation.scaled
    if clip is None:
        return kernel
    bound = clip * activation.input_scale
    low, high = np.array(-bound, dtype=dtype), np.array(bound, dtype=dtype)

    def clipped(x: np.ndarray, out: np.ndarray) -> None:
        np.minimum(x, high, out=out)
        np.maximum(out, low, out=out)
        kernel(out, out)
    return clipped


def _activation(activations: Activations, clip: float | None, dtype: np.dtype) -> Kernel:
    """The kernel (x, out) of a gate's activation on its scaled arguments ([D, rows, batch]), clip included."""
    kernels = [_clipped(a, clip, dtype) for a in _distinct(activations)]
    return kernels[0] if len(kernels) == 1 else _by_direction(kernels)


def _plain(activations: Activations) -> Kernel:
    """The kernel (x, out) of an activation on plain (unscaled) arguments [D, rows, batch]."""
    kernels = [a.apply for a in _distinct(activations)]
    return kernels[0] if len(kernels) == 1 else _by_direction(kernels)


def _check_directions(cell: object, activations: Sequence[Activations], directions: int) -> None:
    if any(len(a) not in (1, directions) for a in activations):
        raise RuntimeError(f"internal error: {type(cell).__name__} has activations for "
                           f"{[len(a) for a in activations]} directions; the run has {directions}")


def _recurrent(r: np.ndarray, hidden: int, order: Sequence[int], scales: Sequence[Scale],
               out: np.ndarray, alloc: Alloc) -> Product:
    """A function h -> (out = R' @ h) for all directions, R' the gates ``order`` of R, scaled (_gate_rows).

    With one direction and a batch of one it is a vector-matrix product, which np.dot does
    with less call overhead than a stacked matmul (measured ~1 us less per step at hidden 128).
    """
    directions, rows, batch = out.shape
    if directions == 1 and batch == 1:
        if not out.flags.c_contiguous:  # reshape would silently write to a copy
            raise IrtoolBug("a recurrent product needs a contiguous output")
        rt = alloc((hidden, rows), r.dtype)
        np.copyto(rt, _gate_rows(r, hidden, order, scales, alloc)[0].T)  # faster than a transposing ufunc
        out_vector = out.reshape(rows)
        return lambda h: np.dot(h.reshape(hidden), rt, out_vector)
    matrix = _gate_rows(r, hidden, order, scales, alloc)
    return lambda h: np.matmul(matrix, h, out)


def _decomposable(product: Product, gates: np.ndarray, bias: np.ndarray, rounding: Rounding,
                  state_shape: tuple[int, ...], alloc: Alloc) -> tuple[Product, np.ndarray | None, Callable | None]:
    """The recurrent product of an RNN or LSTM cell, the bias of its input product and the rounding
    of its products: as they are; or, decomposed (Rounding.products), as OpenVINO's
    RNN/LSTMCellDecomposition runs on FullyConnected layers: H R^T with the bias it absorbs,
    from the state as the product reads it, rounded, and X W^T rounded without bias."""
    round_fc, round_gates = rounding.per_step("products"), rounding.per_step_of("products", gates.shape)
    operand = _operand(rounding, state_shape, gates.dtype, alloc)
    if round_fc is None:
        return (product if rounding.product_inputs is None else lambda h: product(operand(h))), bias, None
    column = rounding.once("products")(bias)[:, :, None]  # the bias a FullyConnected layer absorbs: rounded as its inputs

    def fully_connected(h: np.ndarray) -> None:
        product(operand(h))
        np.add(gates, column, gates)
        round_gates(gates)
    return fully_connected, None, round_fc


@dataclass(frozen=True)
class GRU:
    """zt = f(Xt Wz + Ht-1 Rz + bz), rt = f(... r ...), ht = g(...), Ht = (1-zt) ht + zt Ht-1."""

    f: Activations
    g: Activations
    clip: float | None
    linear_before_reset: bool
    gates = 3

    @property
    def bias_gates(self) -> int:
        """B holds Wbh and Rbh apart with linear_before_reset: 4 blocks instead of 3."""
        return 4 if self.linear_before_reset else 3

    def stepper(self, w: np.ndarray, r: np.ndarray, b: np.ndarray, batch: int, alloc: Alloc,
                rounding: Rounding = EXACT) -> Stepper:
        """Decomposed (Rounding.products), as OpenVINO's GRUCellDecomposition: z and r from the
        rounded H R_zr^T plus their f32 bias (for r rounded again where ``reset_gate_sum`` says) plus
        the rounded X W^T; without linear_before_reset, the candidate from the rounded (r H) R_h^T +
        Wb_h (the bias rounded too: the layer absorbs it); with it, r times (the rounded H R_h^T +
        Rb_h), plus Wb_h; each plus its rounded X W^T."""
        hidden, d, dtype = r.shape[2], r.shape[0], r.dtype
        _check_directions(self, (self.f, self.g), d)
        round_product = rounding.per_step_of("reset_product", (d, hidden, batch)) or _keep
        round_fc = rounding.per_step("products")  # X W^T's, over chunks of steps
        round_candidate_fc = rounding.per_step_of("products", (d, hidden, batch))
        round_recurrent_fc = rounding.per_step_of("products", (d, (3 if self.linear_before_reset else 2) * hidden,
                                                               batch))
        order, scales = (0, 1, 2), (_scale(self.f), _scale(self.f), _scale(self.g))
        gates, scratch = alloc((d, 3 * hidden, batch), dtype), alloc((d, hidden, batch), dtype)
        zr, reset, candidate = gates[:, :2 * hidden], gates[:, hidden:2 * hidden], gates[:, 2 * hidden:]
        operand = _operand(rounding, (d, hidden, batch), dtype, alloc)
        input_bias = _gate_rows(b[:, :3 * hidden], hidden, order, scales, alloc)
        if round_fc is not None:  # z's and r's bias stay f32; Wb_h is absorbed by a layer without linear_before_reset
            bias_zr, bias_h = input_bias[:, :2 * hidden, None], input_bias[:, 2 * hidden:, None]
            if not self.linear_before_reset:
                bias_h = rounding.once("products")(bias_h)
            input_bias = None
        round_reset_sum = rounding.per_step_of("reset_gate_sum", (d, hidden, batch))

        if self.linear_before_reset:  # one GEMM per step: rt (.) (Ht-1 Rh + Rbh)
            update_and_reset = _recurrent(r, hidden, order, scales, gates, alloc)
            hidden_bias = (b[:, 3 * hidden:] * _per_direction(scales[2], 2, dtype))[:, :, None]

            def recurrent_candidate(h: np.ndarray) -> None:
                np.add(candidate, hidden_bias, candidate)
                np.multiply(candidate, reset, candidate)
                if round_fc is not None:
                    np.add(candidate, bias_h, candidate)
        else:  # two GEMMs per step: (rt (.) Ht-1) Rh
            update_and_reset = _recurrent(r, hidden, order[:2], scales[:2], zr, alloc)
            reset_product = _recurrent(r, hidden, order[2:], scales[2:], candidate, alloc)

            def recurrent_candidate(h: np.ndarray) -> None:
                np.multiply(reset, h, scratch)
                round_product(scratch)
                reset_product(scratch)
                if round_fc is not None:
                    np.add(candidate, bias_h, candidate)
                    round_candidate_fc(candidate)

        if round_fc is not None:
            recurrent = update_and_reset

            def update_and_reset(h: np.ndarray) -> None:
                recurrent(h)
                round_recurrent_fc(gates if self.linear_before_reset else zr)
                np.add(zr, bias_zr, zr)
                if round_reset_sum is not None:
                    round_reset_sum(reset)

        step = self._step(gates, scratch, hidden, update_and_reset, recurrent_candidate, operand,
                          rounding.per_step_of("gates", (d, 2 * hidden, batch)) or _keep,
                          rounding.per_step_of("gates", (d, hidden, batch)) or _keep)
        return Stepper(_gate_rows(w, hidden, order, scales, alloc), input_bias, step, round_fc, _one_state(step))

    def _step(self, gates: np.ndarray, scratch: np.ndarray, hidden: int, update_and_reset: Product,
              recurrent_candidate: Product, operand: Callable[[np.ndarray], np.ndarray],
              round_zr: Callable[[np.ndarray], None], round_candidate: Callable[[np.ndarray], None]) -> Step:
        """The GRU step around its two variants: they differ only in the recurrent part of ht."""
        zr, update, candidate = gates[:, :2 * hidden], gates[:, :hidden], gates[:, 2 * hidden:]
        f, g = _activation(self.f, self.clip, gates.dtype), _activation(self.g, self.clip, gates.dtype)

        def step(xw: np.ndarray, states_in: Sequence[np.ndarray], states_out: Sequence[np.ndarray]) -> None:
            h = states_in[0]
            update_and_reset(operand(h))
            np.add(zr, xw[:, :2 * hidden], zr)
            round_zr(zr)
            f(zr, zr)
            round_zr(zr)
            recurrent_candidate(h)
            np.add(candidate, xw[:, 2 * hidden:], candidate)
            round_candidate(candidate)
            g(candidate, candidate)
            round_candidate(candidate)
            np.subtract(h, candidate, scratch)  # Ht = (1 - zt) ht + zt Ht-1 = ht + zt (Ht-1 - ht)
            np.multiply(scratch, update, scratch)
            np.add(candidate, scratch, states_out[0])

        return step


@dataclass(frozen=True, eq=False)
class LSTM:
    """Gates f, i, c, o: Ct = ft Ct-1 + it ct, Ht = ot h(Ct); clip applies to gates, not Ct.

    ONNX's extras: ``peepholes`` ([D, 3H], ONNX's P: Pi, Po, Pf) add Pi (.) Ct-1 to i,
    Pf (.) Ct-1 to f and Po (.) Ct to o before their activation (and clip);
    ``input_forget`` couples the gates, ft = 1 - it (onnxruntime's reading of "couple the
    input and forget gates").  Without them the step is the plain one.
    """

    f: Activations
    g: Activations
    h: Activations
    clip: float | None
    peepholes: np.ndarray | None = None
    input_forget: bool = False
    gates = bias_gates = 4

    def stepper(self, w: np.ndarray, r: np.ndarray, b: np.ndarray, batch: int, alloc: Alloc,
                rounding: Rounding = EXACT) -> Stepper:
        hidden, d, dtype = r.shape[2], r.shape[0], r.dtype
        _check_directions(self, (self.f, self.g, self.h), d)
        order = (0, 1, 3, 2)  # f, i, o (activation f) then c (activation g)
        scales = (_scale(self.f),) * 3 + (_scale(self.g),)
        gates, squashed = alloc((d, 4 * hidden, batch), dtype), alloc((d, hidden, batch), dtype)
        product, input_bias, round_fc = _decomposable(_recurrent(r, hidden, order, scales, gates, alloc), gates,
                                                       _gate_rows(b, hidden, order, scales, alloc), rounding,
                                                       (d, hidden, batch), alloc)
        f, g = _activation(self.f, self.clip, dtype), _activation(self.g, self.clip, dtype)
        round_gates = rounding.per_step_of("gates", gates.shape)
        wide = None
        if self.peepholes is None and not self.input_forget:
            activated = self._activated(gates, hidden, product, f, g, round_gates or _keep)
            step = self._step(gates, squashed, hidden, activated)
            wide = self._wide(gates, squashed, hidden, activated, alloc)
        elif round_gates is not None or round_fc is not None:
            raise IrtoolBug("rounding the gates is emulated for OpenVINO's LSTM, without peepholes or coupled gates")
        else:  # (peepholes read Ct-1 into the gates: no step goes before the one it follows)
            step = self._extended_step(gates, squashed, hidden, product, f, g, scales[0], alloc)
        return Stepper(_gate_rows(w, hidden, order, scales, alloc), input_bias, step, round_fc, wide)

    @staticmethod
    def _activated(gates: np.ndarray, hidden: int, product: Product, f: Kernel, g: Kernel,
                   round_gates: Callable[[np.ndarray], None]) -> Callable[[np.ndarray, np.ndarray], None]:
        """(xw, h) -> the gates activated, in ``gates``: f, i, o by f and c by g."""
        sigmoid_part, cell_part = gates[:, :3 * hidden], gates[:, 3 * hidden:]

        def activated(xw: np.ndarray, h: np.ndarray) -> None:
            product(h)
            np.add(gates, xw, gates)
            round_gates(gates)
            f(sigmoid_part, sigmoid_part)
            g(cell_part, cell_part)
            round_gates(gates)
        return activated

    def _step(self, gates: np.ndarray, squashed: np.ndarray, hidden: int,
              activated: Callable[[np.ndarray, np.ndarray], None]) -> Step:
        forget, input_, output, cell_part = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
        h_of_c = _plain(self.h)

        def step(xw: np.ndarray, states_in: Sequence[np.ndarray], states_out: Sequence[np.ndarray]) -> None:
            (h, c), (h_out, c_out) = states_in, states_out
            activated(xw, h)
            np.multiply(forget, c, c_out)
            np.multiply(input_, cell_part, input_)
            np.add(c_out, input_, c_out)
            h_of_c(c_out, squashed)
            np.multiply(output, squashed, h_out)

        return step

    def _wide(self, gates: np.ndarray, squashed: np.ndarray, hidden: int,
              activated: Callable[[np.ndarray, np.ndarray], None], alloc: Alloc) -> Wide:
        """:attr:`Stepper.wide`: the gates and h of every step at once; Ct = ft Ct-1 + it ct step by
        step in between, as :meth:`_step` computes it (h from Ct as computed, before ``carry`` rounds)."""
        forget, input_, output, cell_part = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
        h_of_c = _plain(self.h)
        cells = alloc(squashed.shape, squashed.dtype)  # Ct of each step, [D, H, steps*batch]
        views: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}  # per batch: each step's columns

        def wide(xw: np.ndarray, h: np.ndarray, h_out: np.ndarray, c: np.ndarray | None,
                 carry: Carry) -> np.ndarray:
            batch = c.shape[2]
            steps = views.get(batch)
            if steps is None:
                columns = [slice(k * batch, (k + 1) * batch) for k in range(cells.shape[2] // batch)]
                steps = views[batch] = [(forget[:, :, s], input_[:, :, s], cells[:, :, s]) for s in columns]
            activated(xw, h)
            np.multiply(input_, cell_part, input_)
            for k, (forget_k, input_k, c_k) in enumerate(steps):
                np.multiply(forget_k, c, c_k)
                np.add(c_k, input_k, c_k)
                c = carry(k, c_k, c)
            h_of_c(cells, squashed)
            np.multiply(output, squashed, h_out)
            return c

        return wide

    def _extended_step(self, gates: np.ndarray, squashed: np.ndarray, hidden: int, product: Product, f: Kernel,
                       g: Kernel, f_scale: Scale, alloc: Alloc) -> Step:
        """The step with peepholes and/or coupled gates: o waits for Ct, so f runs in two calls."""
        d, _, batch = gates.shape
        dtype = gates.dtype
        cell_part = gates[:, 3 * hidden:]
        forget, input_, output = (gates[:, k * hidden:(k + 1) * hidden] for k in range(3))
        early = input_ if self.input_forget else gates[:, :2 * hidden]  # what f activates before Ct
        h_of_c, coupled = _plain(self.h), self.input_forget
        scratch = alloc((d, hidden, batch), dtype)
        peep = None
        if self.peepholes is not None:  # Pi, Po, Pf, scaled as their gates' rows are
            scaled = self.peepholes.astype(dtype).reshape(d, 3, hidden) * _per_direction(f_scale, 3, dtype)
            peep = tuple(np.ascontiguousarray(scaled[:, k, :, None]) for k in range(3))

        def step(xw: np.ndarray, states_in: Sequence[np.ndarray], states_out: Sequence[np.ndarray]) -> None:
            (h, c), (h_out, c_out) = states_in, states_out
            product(h)
            np.add(gates, xw, gates)
            if peep is not None:
                np.multiply(c, peep[0], scratch)
                np.add(input_, scratch, input_)
                if not coupled:
                    np.multiply(c, peep[2], scratch)
                    np.add(forget, scratch, forget)
            f(early, early)
            if coupled:
                np.subtract(1, input_, forget)
            g(cell_part, cell_part)
            np.multiply(forget, c, c_out)
            np.multiply(input_, cell_part, input_)
            np.add(c_out, input_, c_out)
            if peep is not None:
                np.multiply(c_out, peep[1], scratch)
                np.add(output, scratch, output)
            f(output, output)
            h_of_c(c_out, squashed)
            np.multiply(output, squashed, h_out)

        return step


@dataclass(frozen=True)
class RNN:
    """Ht = f(Xt Wi + Ht-1 Ri + Wbi + Rbi)."""

    f: Activations
    clip: float | None
    gates = bias_gates = 1

    def stepper(self, w: np.ndarray, r: np.ndarray, b: np.ndarray, batch: int, alloc: Alloc,
                rounding: Rounding = EXACT) -> Stepper:
        _check_directions(self, (self.f,), r.shape[0])
        hidden, scales = r.shape[2], (_scale(self.f),)
        gates = alloc((r.shape[0], hidden, batch), r.dtype)
        product, input_bias, round_fc = _decomposable(_recurrent(r, hidden, (0,), scales, gates, alloc), gates,
                                                       _gate_rows(b, hidden, (0,), scales, alloc), rounding,
                                                       (r.shape[0], hidden, batch), alloc)
        f = _activation(self.f, self.clip, r.dtype)
        round_gates = rounding.per_step_of("gates", gates.shape) or _keep

        def step(xw: np.ndarray, states_in: Sequence[np.ndarray], states_out: Sequence[np.ndarray]) -> None:
            product(states_in[0])
            np.add(gates, xw, gates)
            round_gates(gates)
            f(gates, states_out[0])

        return Stepper(_gate_rows(w, hidden, (0,), scales, alloc), input_bias, step, round_fc, _one_state(step))
