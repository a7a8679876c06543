"""Judging at the precision a node ran at: which rounding its implementation path does, the bound
a comparison allows, and the steps a comparison can judge at all.

- :func:`node_emulation`: per node, the path of the precision model (irtool.specs.precision) that what
  ran took, and the :class:`Rounding` that makes the reference round where the device does.  A
  node run at bf16 or f16 is judged against that emulated reference, so that rounding is compared
  with rounding and what is left is the device's own; it is also compared with the ideal one, for
  the report.
- :func:`step_bounds`: a recurrence carries every difference to the steps after it, amplified or
  damped.  How much is measured on the node's own inputs: the growth of a tiny change of its
  initial states, step by step, through two float64 runs of the reference.  The differences a
  correct device may show at step t are then about ``unit * (1 + the growth summed over the steps
  up to t)`` (one unit made at every step, carried to t); where that reaches a sixteenth of the
  values themselves, no reference can judge the step, and the comparison stops there, saying so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from irtool.core.precisions import UNIT_ROUNDOFF
from irtool.reference.rounding import Rounding
from irtool.specs.precision import PrecisionPath, cell_kernel_takes, path_for

# The unit of the differences between a device and the reference per step where the reference
# computes as the device does (the ideal reference at f32: another summation order, another tanh):
# a few units in the last place of f32.
F32_STEP_UNITS = 8
# A step is judged while the differences a correct device may show there stay below this share of
# the step's magnitude (its largest reference value, and at least 1).
JUDGEABLE_SHARE = 1 / 16
# The change of the initial states whose growth is measured: small enough to stay linear through a
# growth of 1e9, large enough to stand far above float64's roundoff.
PERTURBATION = 2.0 ** -32


@dataclass(frozen=True)
class Emulation:
    """A node's implementation path at a reduced precision, and the rounding that emulates it."""

    path: PrecisionPath
    rounding: Rounding
    alternative: Rounding | None = None  # a second rounding the device is as likely to follow (the path's "or")
    # the path describes how such nodes run, not how this one rounds (a cell a converter lowered to plain
    # ops: its layers may round elsewhere): the node is judged against the ideal reference, allowed what
    # the emulation's rounding moves its outputs by
    bound_only: bool = False

    @property
    def unit(self) -> float:
        """The unit roundoff of what the path rounds its state (or outputs) to."""
        kind = self.rounding.state or self.rounding.outputs or self.path.precision
        return UNIT_ROUNDOFF["bf16" if kind.startswith("bf16") else kind]

    def describe(self) -> str:
        if self.bound_only:
            return (f"the ideal reference, allowed twice what the {self.path.precision} emulation of "
                    f"{self.path.describe()} moves each output by on these inputs, plus its bound: "
                    f"{self.rounding.describe()}")
        return f"the {self.path.precision} emulation of {self.path.describe()}: {self.rounding.describe()}"

    def bound(self) -> tuple[float, float, str]:
        """The path's bound against its emulation (schemas/precision.json): atol, rtol and what they are."""
        bound = self.path.bound
        atol, rtol = bound["atol_units"] * self.unit, bound["rtol_units"] * self.unit
        return atol, rtol, f"derived: {self.path.id}'s bound against its emulation ({bound['basis']})"


@dataclass(frozen=True)
class Ran:
    """What a node ran as, as far as the precision model asks: where, at what precision, as which
    runtime layers, and whether as one kernel per direction."""

    device: str
    precision: str
    kinds: tuple[str, ...]
    split: bool = False


def emulation(device: str, layer_types: Sequence[str], precision: str, split: bool = False,
              cell_kernel: bool = True, dynamic: bool = False, f16_model: bool = False,
              linear_before_reset: bool = False) -> Emulation | None:
    """The emulation of what ran as ``layer_types`` on ``device`` at ``precision``; None at f32 and
    where the precision model has no path for it."""
    path = path_for(device, layer_types, precision, split, cell_kernel, dynamic, f16_model, linear_before_reset)
    if path is None:
        return None
    alternative = Rounding(**{**path.round, **path.alternative}) if path.alternative else None
    return Emulation(path, Rounding(**path.round), alternative)


def node_emulation(ran: Ran | None, op_type: str, attributes: Mapping[str, Any], constant_weights: bool = True,
                   dynamic: bool = False, f16_model: bool = False) -> Emulation | None:
    """The emulation of a node of ``op_type`` with ``attributes`` (its W, R and B Constants or not, its X
    with dynamic dims or not, its inputs f16 model inputs or not) that ran as ``ran`` (None: unknown)."""
    if ran is None:
        return None
    return emulation(ran.device, ran.kinds, ran.precision, ran.split,
                     cell_kernel_takes(op_type, attributes, constant_weights), dynamic, f16_model,
                     bool(attributes.get("linear_before_reset")))


@dataclass(frozen=True)
class StepBounds:
    """Per step (in time order, per direction), the differences a correct device may show, and the
    first step no reference can judge (None: every step can be)."""

    noise: np.ndarray  # [directions, steps]
    unjudgeable_from: int | None  # in processing order, the earliest over the directions
    growth: np.ndarray  # [steps]: how much a change of the state has grown by each step (processing order)

    def says(self, steps: int) -> str:
        if self.unjudgeable_from is None:
            step = int(np.argmax(self.growth))
            return (f"a change of the state grows {self.growth[step]:.3g}-fold by step {step} of this recurrence: "
                    f"each step is allowed the differences of rounding it carries there")
        step = self.unjudgeable_from
        return (f"a change of one unit of rounding in the state grows {self.growth[step]:.3g}-fold by step {step}: "
                f"from there no reference can judge this recurrence, so {step} of {steps} steps were judged")


Evaluate = Callable[[Sequence[np.ndarray]], tuple[np.ndarray, ...]]


def step_bounds(evaluate: Evaluate, arrays: Sequence[np.ndarray], state_ports: Sequence[int], y: int,
                time_axis: int, reverse: Sequence[bool], unit: float) -> StepBounds | None:
    """The bounds of output ``y`` ([batch, dirs, seq, H], time on ``time_axis``) of a run of
    ``evaluate`` (the reference in float64) on ``arrays``, whose initial states are at
    ``state_ports``; ``unit``: the difference per step a correct device may show, relative to the
    values.  None where there is no state to change."""
    if not state_ports:
        return None
    wide = [np.asarray(a, dtype=np.float64) if np.issubdtype(np.asarray(a).dtype, np.floating) else a
            for a in arrays]
    changed = list(wide)
    rng = np.random.default_rng(0)
    for port in state_ports:
        state = wide[port]
        changed[port] = state + PERTURBATION * (1 + np.abs(state)) * rng.choice((-1.0, 1.0), state.shape)
    base, moved = evaluate(wide)[y], evaluate(changed)[y]
    other = tuple(a for a in range(base.ndim) if a not in (1, time_axis))
    growth = np.abs(moved - base).max(axis=other) / PERTURBATION  # [dirs, steps] in time order
    magnitude = np.maximum(np.abs(base).max(axis=other), 1.0)
    for d, backwards in enumerate(reverse):  # to processing order
        if backwards:
            growth[d], magnitude[d] = growth[d, ::-1].copy(), magnitude[d, ::-1].copy()
    # a difference made at step s and seen at step t is the change grown over t - s steps (the
    # state's change seen at step k is one made k + 1 steps before): they add up
    carried = unit * (1.0 + np.cumsum(growth, axis=1))
    noise = carried * magnitude
    beyond = carried > JUDGEABLE_SHARE
    firsts = [int(np.argmax(row)) for row in beyond if row.any()]
    for d, backwards in enumerate(reverse):  # back to time order
        if backwards:
            noise[d] = noise[d, ::-1].copy()
    return StepBounds(noise, min(firsts) if firsts else None, growth.max(axis=0))


def step_unit(precision: str, emulated: Emulation | None) -> float:
    """The difference per step a correct device may show, relative to the values: one unit of the
    emulated type where the reference rounds as the device does, a few units of f32 otherwise."""
    if emulated is not None:
        return emulated.unit
    return F32_STEP_UNITS * UNIT_ROUNDOFF["f32"] if precision == "f32" else UNIT_ROUNDOFF.get(precision, 2.0 ** -8)
