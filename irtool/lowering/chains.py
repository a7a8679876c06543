"""A recurrence a converter unrolled at a model's top level: one cell per step, each step's h_t
(and c_t) the next one's state, linked into a chain by that dataflow (irtool.runtime.lowered_nodes
judges a chain as one node whose steps are its iterations).  A first step whose state OpenVINO
folded into its bias (one product, of the input) or whose zero states a converter folded away
(:mod:`.folded_states`) is the cell from zero states."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from irtool.lowering.cells import GATES, Candidate, Cell, Refusal
from irtool.lowering.folded_states import zero_state_step
from irtool.lowering.gate_sums import Reader
from irtool.lowering.graph import Key, key, label, last_dim, zeros
from irtool.lowering.recognize import find_candidates, resolve, state_by_width


@dataclass(frozen=True)
class Chain:
    """The cells of an unrolled recurrence, in step order."""

    steps: tuple[Cell, ...]


def find_chains(model: Any) -> list[Chain | Refusal]:
    """The top level's cells linked into chains by their state (each step's h_t, and c_t, the next
    one's state); a lone RNN pattern (a Dense layer and its activation) is no recurrence."""
    reader = Reader()
    found = find_candidates(model, reader)
    candidates = [c for c in found if isinstance(c, Candidate)]
    result: list[Chain | Refusal] = [c for c in found if isinstance(c, Refusal)]
    by_output = {c.out_key: c for c in candidates}
    joined: dict[tuple, np.ndarray] = {}  # weights the steps share, joined once
    previous: dict[int, tuple[Candidate, Key]] = {}  # id of a candidate -> (its step before, its state key)
    for candidate in candidates:
        for state in _state_keys(candidate):
            before = by_output.get(state)
            if before is not None and before is not candidate and _same_cell(before, candidate) and \
                    (candidate.kind != "LSTM" or key(candidate.c) == key(before.outputs[1])):
                previous[id(candidate)] = (before, state)
                break
    following = {id(before): candidate for candidate in candidates if id(candidate) in previous
                 for before, _ in [previous[id(candidate)]]}
    for head in candidates:
        if id(head) in previous:
            continue
        steps = [head]
        while id(steps[-1]) in following and len(steps) <= len(candidates):
            steps.append(following[id(steps[-1])])
        if len(steps) == 1 and head.kind == "RNN":
            continue
        zero = zero_state_step(head, reader)
        if zero is not None:  # a first step from zero states that a converter folded away: the head's before it
            first = resolve(zero[0], None, folded=True)
            cells = [first, resolve(head, zero[1], joined=joined)]
            if isinstance(first, Cell) and isinstance(cells[1], Cell):
                cells[0] = _from_zero_states(first, cells[1].weights[1])
        else:
            cells = [_first_step(head, steps[1] if len(steps) > 1 else None)]
        cells += [resolve(step, previous[id(step)][1], joined=joined) for step in steps[1:]]
        refused = next((cell for cell in cells if isinstance(cell, Refusal)), None)
        result.append(refused if refused is not None else Chain(tuple(cells)))
    return result


def _state_keys(candidate: Candidate) -> list[Key]:
    return [key(candidate.state)] if candidate.state is not None else list(candidate.variables)


def _same_cell(first: Candidate, second: Candidate) -> bool:
    return (first.kind, first.hidden_size, first.activations, "hr" in first.gates) == \
        (second.kind, second.hidden_size, second.activations, "hr" in second.gates)


def _first_step(head: Candidate, after: Candidate | None) -> Cell | Refusal:
    """The first cell of a chain, whose state no cell before it makes: a GRU's update says it; else
    the widths (the input's differs from hidden_size), else the weights the step after it gives its
    state; its one variable, when OpenVINO folded a constant state's product into its bias, is its
    input."""
    if head.state is not None:
        return resolve(head, key(head.state))
    variables = head.variables
    if len(variables) == 1:
        return _folded_state(head, after)
    state = state_by_width(head)
    if state is None and after is not None:
        after_state = next(k for k in _state_keys(after) if k == head.out_key)
        r = {k: after.gates[g].terms[after_state].weight for g in GATES[after.kind] if after_state in after.gates[g].terms
             for k in [g]}
        same = [k for k in variables if all(k in head.gates[g].terms and
                                            np.array_equal(head.gates[g].terms[k].weight, weight)
                                            for g, weight in r.items())]
        state = same[0] if len(same) == 1 else None
    return resolve(head, state)


def _from_zero_states(cell: Cell, r: np.ndarray) -> Cell:
    """A first step from zero states: judged with zero h_0 (and c_0) and the next step's R."""
    return dataclasses.replace(cell, weights=(cell.weights[0], r, cell.weights[2]),
                               c=zeros(cell.x, cell.hidden_size) if cell.kind == "LSTM" else None)


def _folded_state(head: Candidate, after: Candidate | None) -> Cell | Refusal:
    """A first step with one variable, its input: OpenVINO folded its constant state's product into its
    bias (b + R·h_0), so it computes x·W + that bias, what a cell with a zero state computes; it is
    judged so, with the next step's R (any R gives the same with a zero state)."""
    resolved = resolve(after, next(k for k in _state_keys(after) if k == head.out_key)) if after else None
    if isinstance(resolved, Refusal):
        return resolved
    only = next(iter(head.variables))
    if resolved is not None and last_dim(head.variables[only]) != last_dim(resolved.x):
        return Refusal(head.kind, f"its one product, of {label(head.variables[only].get_node())}, is not of an "
                                  f"input as wide as the next step's", head.parts, head.outputs[0])
    cell = resolve(head, None, folded=True)
    if isinstance(cell, Refusal) or resolved is None:
        return cell
    weights = (cell.weights[0], resolved.weights[1], cell.weights[2])
    return dataclasses.replace(cell, weights=weights, varying=(), stored=(cell.stored[0], resolved.stored[1]))
