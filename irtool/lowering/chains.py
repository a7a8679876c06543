"""A recurrence a converter unrolled at a model's top level: one cell per step, each step's h_t
(and c_t) the next one's state, linked into a chain by that dataflow (irtool.runtime.lowered_nodes
judges a chain as one node whose steps are its iterations).  A first step whose state OpenVINO
folded into its bias (one product, of the input) or whose zero states a converter folded away
(:mod:`.folded_states`) is the cell from zero states."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from irtool.lowering.cells import GATES, Candidate, Cell, Refusal
from irtool.lowering.folded_states import zero_state_step
from irtool.lowering.gate_sums import Reader
from irtool.lowering.graph import Key, key, label, last_dim, root, rounding, roundings, zeros
from irtool.lowering.recognize import find_candidates, resolve, state_by_stream, state_by_width


@dataclass(frozen=True)
class Chain:
    """The cells of an unrolled recurrence, in step order; ``around``: what the model does to the state
    between steps besides handing it on (a rounding, a projection, a residual), said."""

    steps: tuple[Cell, ...]
    around: tuple[str, ...] = ()


def find_chains(model: Any) -> list[Chain | Refusal]:
    """The top level's cells linked into chains by their state (each step's h_t, and c_t, the next
    one's state); a lone RNN pattern (a Dense layer and its activation) is no recurrence."""
    reader = Reader()
    found = find_candidates(model, reader)
    candidates = [c for c in found if isinstance(c, Candidate)]
    result: list[Chain | Refusal] = [c for c in found if isinstance(c, Refusal)]
    joined: dict[tuple, np.ndarray] = {}  # weights the steps share, joined once
    previous: dict[int, tuple[Candidate, Key]] = {}  # id of a candidate -> (its step before, its state key)
    between: dict[int, list[tuple[Any, str]]] = {}  # id of a candidate -> the ops between the step before's states and its
    for candidate in candidates:
        link = _link(candidate, candidates, reader)
        if link is not None:
            previous[id(candidate)], between[id(candidate)] = link[:2], link[2]
    following = {id(before): candidate for candidate in candidates if id(candidate) in previous
                 for before, _ in [previous[id(candidate)]]}
    placed: set[int] = set()
    for head in candidates:
        if id(head) in previous:
            continue
        steps = [head]
        while id(steps[-1]) in following and len(steps) <= len(candidates):
            steps.append(following[id(steps[-1])])
        placed.update(id(step) for step in steps)
        if len(steps) == 1 and head.kind == "RNN":
            continue
        zero = zero_state_step(head, reader)
        if zero is not None:  # a first step from zero states that a converter folded away: the head's before it
            first = resolve(zero[0], None, folded=True)
            cells = [first, resolve(head, zero[1], joined=joined)]
            if isinstance(first, Cell) and isinstance(cells[1], Cell):
                cells[0] = _from_zero_states(first, cells[1].weights[1])
        else:
            cells = [_first_step(head, (steps[1], previous[id(steps[1])][1]) if len(steps) > 1 else None)]
        cells += [resolve(step, previous[id(step)][1], joined=joined) for step in steps[1:]]
        refused = next((cell for cell in cells if isinstance(cell, Refusal)), None)
        result.append(refused if refused is not None else
                      Chain(tuple(cells), around_words([between[id(step)] for step in steps[1:]])))
    for lost in (c for c in candidates if id(c) not in placed):  # its step before is another step's too
        before = previous[id(lost)][0]
        result.append(Refusal(lost.kind, f"the step whose states it reads ({label(before.outputs[0].get_node())}) is "
                                         f"read as the state of another step too: not one recurrence", lost.parts,
                              lost.outputs[0]))
    return result


def _link(candidate: Candidate, candidates: list[Candidate], reader: Reader) \
        -> tuple[Candidate, Key, list[tuple[Any, str]]] | None:
    """The step before ``candidate`` (the cell whose h_t, and c_t, it reads as its states), its state's key,
    and the ops between what that step made and what this one reads (narrowing Converts, or the ops of a
    projection or a residual around the cell); None where no cell makes its states."""
    by_output = {c.out_key: c for c in candidates if c is not candidate and _same_cell(c, candidate)}
    for walk in (0, WALK if candidate.kind != "RNN" else 0):  # a state handed on as it is first (RNN: only)
        for state in _state_keys(candidate):
            value = candidate.state if candidate.state is not None else candidate.variables[state]
            found = made_from(value, by_output, reader, walk)
            if found is None:
                continue
            before, ops = by_output[found[0]], [(op, "h_t") for op in found[1]]
            if candidate.kind == "LSTM":
                c_found = made_from(candidate.c, {key(before.outputs[1]): before}, reader, walk)
                if c_found is None:
                    continue
                ops += [(op, "c_t") for op in c_found[1]]
            return before, state, ops
    return None


WALK = 3  # ops between one step's state and the next one's read, at most (a projection, a residual, a rounding)


def made_from(value: Any, outputs: Mapping[Key, Any], reader: Reader, walk: int) -> tuple[Key, list[Any]] | None:
    """The key among ``outputs`` that ``value`` is computed from, through layout ops (narrowing Converts
    named) and up to ``walk`` other ops (named, nearest first); None where none is."""
    pending: list[tuple[Any, list[Any], int]] = [(value, [], 0)]
    while pending:  # breadth first: the nearest output
        current, ops, depth = pending.pop(0)
        ops = ops + roundings(current)
        if key(current) in outputs:
            return key(current), ops
        node = root(current).get_node()
        if depth < walk and node.get_type_name() != "Parameter" and reader.constant(root(current)) is None:
            pending += [(source, ops + [node], depth + 1) for source in node.input_values()
                        if reader.constant(source) is None]
    return None


def around_words(links: list[list[tuple[Any, str]]]) -> tuple[str, ...]:
    """What the model does to the states between steps (:func:`made_from`'s ops, each with the state it is
    on: ``h_t`` or ``c_t``), in words."""
    if not links or not any(links):
        return ()
    first = next(ops for ops in links if ops)
    where = "between every two steps" if all(links) else "between some steps"
    words = []
    for state in dict.fromkeys(which for _, which in first):
        ops = [op for op, which in first if which == state]
        rounded = [op for op in ops if op.get_type_name() == "Convert"]
        other = [op for op in ops if op.get_type_name() != "Convert"]
        if rounded:
            words.append(f"its {state} is rounded {where} ({', '.join(rounding(op) for op in rounded)} first): each "
                         f"step is judged on the state it read")
        if other:
            words.append(f"its state is not the step before's {state} but computed from it {where} ("
                         f"{', '.join(label(op) for op in other)} first: a projection, a residual or a function "
                         f"around the cell): each step is judged on the state it read")
    return tuple(words)


def _state_keys(candidate: Candidate) -> list[Key]:
    return [key(candidate.state)] if candidate.state is not None else list(candidate.variables)


def _same_cell(first: Candidate, second: Candidate) -> bool:
    return (first.kind, first.hidden_size, first.activations, "hr" in first.gates) == \
        (second.kind, second.hidden_size, second.activations, "hr" in second.gates)


def _first_step(head: Candidate, after: tuple[Candidate, Key] | None) -> Cell | Refusal:
    """The first cell of a chain, whose state no cell before it makes: a GRU's update says it; else
    the widths (the input's differs from hidden_size), else the weights the step after it gives its
    state; its one variable, when OpenVINO folded a constant state's product into its bias, is its
    input."""
    if head.state is not None:
        return resolve(head, key(head.state))
    variables = head.variables
    if len(variables) == 1:
        return _folded_state(head, after)
    state = state_by_width(head) or state_by_stream(head)
    if state is None and after is not None:
        following, after_state = after
        r = {g: following.gates[g].terms[after_state].weight for g in GATES[following.kind]
             if after_state in following.gates[g].terms}
        same = [k for k in variables if all(k in head.gates[g].terms and
                                            np.array_equal(head.gates[g].terms[k].weight, weight)
                                            for g, weight in r.items())]
        state = same[0] if len(same) == 1 else None
    return resolve(head, state)


def _from_zero_states(cell: Cell, r: np.ndarray) -> Cell:
    """A first step from zero states: judged with zero h_0 (and c_0) and the next step's R."""
    return dataclasses.replace(cell, weights=(cell.weights[0], r, cell.weights[2]),
                               c=zeros(cell.x, cell.hidden_size) if cell.kind == "LSTM" else None)


def _folded_state(head: Candidate, after: tuple[Candidate, Key] | None) -> Cell | Refusal:
    """A first step with one variable, its input: OpenVINO folded its constant state's product into its
    bias (b + R·h_0), so it computes x·W + that bias, what a cell with a zero state computes; it is
    judged so, with the next step's R (any R gives the same with a zero state)."""
    resolved = resolve(*after) if after else None
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
