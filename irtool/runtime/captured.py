"""A node's arrays read out of what one inference of the probed copy captured: its inputs and
outputs in port order, at each iteration it ran in a body, and why it was not reached where it
did not run.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from irtool.runtime.nodes import Condition, Placement, RecurrentNode


def input_arrays(node: RecurrentNode, inputs: Mapping[str, np.ndarray],
                 captured: Sequence[np.ndarray] = ()) -> list[np.ndarray]:
    """A node's input arrays in port order: constant data, the model's inputs, and the probed
    copy's outputs (none needed for a node fed by the model's inputs alone)."""
    arrays = []
    for feed in node.feeds:
        if feed.constant is not None:
            arrays.append(feed.constant)
        elif feed.parameter is not None:
            arrays.append(inputs[feed.parameter])
        else:
            arrays.append(captured[feed.probe])
    return arrays


def probed_arrays(node: RecurrentNode, inputs: Mapping[str, np.ndarray],
                  captured: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """A node's input arrays (port order) and output arrays, from the model's inputs and the
    probed copy's outputs."""
    return input_arrays(node, inputs, captured), [captured[index] for index in node.outputs]


def reached_iterations(node: RecurrentNode, captured: Sequence[np.ndarray]) -> list[tuple[int, ...]]:
    """The iterations (one index per loop around it) at which a body node ran: every index of its
    probed tensors' leading axes whose If flags say its branches were taken; ``[()]`` for a
    top-level node."""
    if not node.in_body and not node.depth:  # an unrolled chain is at the top level, its steps its iterations
        return [()]
    first = next((feed.probe for feed in node.feeds if feed.probe is not None), node.outputs[0] if node.outputs else None)
    return _reached(first, node.depth, node.conditions, captured)


def placement_iterations(placement: Placement, captured: Sequence[np.ndarray]) -> list[tuple[int, ...]]:
    """The iterations (one index per loop around it) at which a named tensor in a body was computed."""
    return _reached(placement.probe, placement.depth, placement.conditions, captured)


def _reached(first: int | None, depth: int, conditions: Sequence[Condition],
             captured: Sequence[np.ndarray]) -> list[tuple[int, ...]]:
    if first is None:
        return []
    leading = captured[first].shape[:depth]
    return [index for index in np.ndindex(*leading)
            if all(bool(np.asarray(captured[c.probe][index[:c.depth]]).reshape(-1)[0]) == c.then for c in conditions)]


def why_not_reached(conditions: Sequence[Condition], loops: Sequence[str], captured: Sequence[np.ndarray],
                    branches: Sequence[str] | None = None) -> str:
    """Which container kept a body node from running: an If branch not taken, a loop with no
    iteration; ``branches`` names the If branches in place of the conditions' own labels, and
    ``loops`` the loops."""
    ifs = [c for c in conditions if not c.loop]
    guards = [c for c in conditions if c.loop]
    names = {id(c): name for c, name in zip(ifs, branches)} if branches is not None and len(branches) == len(ifs) \
        else {}
    if len(loops) == len(guards):
        names.update((id(c), name) for c, name in zip(guards, loops))
    for condition in conditions:
        flags = np.asarray(captured[condition.probe]).reshape(-1)
        if flags.size and not (flags.astype(bool) == condition.then).any():
            return dataclasses.replace(condition, label=names.get(id(condition), condition.label)).says()
    return f"{' or '.join(loops) or 'its container'} ran no iteration where it is"


def iteration_arrays(node: RecurrentNode, inputs: Mapping[str, np.ndarray], captured: Sequence[np.ndarray],
                     index: tuple[int, ...]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """A node's input arrays (port order) and output arrays at one iteration (``()`` at the top level);
    a shared feed's (Feed.shared) as that iteration computes with it, not the recurrence's."""
    arrays, actual = probed_arrays(node, inputs, captured)
    if not index:
        return arrays, actual
    return ([array if feed.probe is None and not feed.shared else array[index]
             for feed, array in zip(node.feeds, arrays)], [array[index] for array in actual])


@dataclass(frozen=True)
class Iterations:
    """A node's arrays at every iteration it ran, its shared feeds (Feed.shared) made the value most
    iterations share, and at each iteration the shared ports whose own value is another.  A shared
    feed no value of which more than half the iterations share is no recurrence's weight: each
    iteration keeps its own (``own``: those ports)."""

    indices: list[tuple[int, ...]]
    arrays: list[tuple[list[np.ndarray], list[np.ndarray]]]  # (inputs in port order, outputs) per iteration
    departures: dict[int, tuple[str, ...]]  # position among ``indices`` -> its ports whose value is not shared
    own: tuple[str, ...] = ()  # the shared ports judged at each iteration with its own value


def node_iterations(node: RecurrentNode, inputs: Mapping[str, np.ndarray],
                    captured: Sequence[np.ndarray]) -> Iterations:
    """:class:`Iterations` of a node, from the model's inputs and what the probed copy captured."""
    indices = reached_iterations(node, captured)
    arrays = [iteration_arrays(node, inputs, captured, index) for index in indices]
    departures: dict[int, tuple[str, ...]] = {}
    own: tuple[str, ...] = ()
    for port, feed in enumerate(node.feeds):
        if not feed.shared or len(arrays) < 2:
            continue
        values = [ins[port] for ins, _ in arrays]
        common, count = most_common(values)
        if 2 * count <= len(values):  # no value most iterations share: weights per iteration, not a fault
            own += (feed.port.name,)
            continue
        for k, (ins, _) in enumerate(arrays):
            if ins[port] is not common and not np.array_equal(ins[port], common):
                departures[k] = departures.get(k, ()) + (feed.port.name,)
            ins[port] = common
    return Iterations(indices, arrays, departures, own)


def most_common(values: Sequence[np.ndarray]) -> tuple[np.ndarray, int]:
    """The value most of ``values`` are equal to (the first such one; of a tie, the earliest), and how
    many are."""
    groups: dict[bytes, list[int]] = {}
    for k, value in enumerate(values):
        array = np.ascontiguousarray(value)
        groups.setdefault(f"{array.dtype}{array.shape}".encode() + array.tobytes(), []).append(k)
    best = max(groups.values(), key=lambda members: (len(members), -members[0]))
    return values[best[0]], len(best)
