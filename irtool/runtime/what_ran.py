"""What a device really ran for each recurrent node: read from the compiled model's runtime graph.

A plugin may run a sequence op as its own kernel or decompose it into a TensorIterator or
Loop over a cell (measured with openvino 2026.4.1 on the CPU: a GRUSequence with a static
time axis becomes an RNNSeq kernel only when its sequence_lengths is a Const of full
lengths, a TensorIterator otherwise; one with a dynamic time axis an RNNSeq).  Such a change
gives the same numbers and another speed, so it is recorded with every run: the runtime
layers whose ``originalLayersNames`` name the node, with their ``layerType``, ``execType``
(where the plugin reports one) and ``runtimePrecision``.

A node the plugin splits (the CPU runs a bidirectional sequence as one kernel per
direction, under new names, and joins their outputs with a Concatenation named after the
node's outputs, ``NAME.0``) is read by what it became: from each output's join, each input
(one per direction, in direction order) is followed upstream through the layers that only
move data (Reshape, Reorder, ReverseSequence, ...) to the kernel that computed it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

DECOMPOSED = ("TensorIterator", "Loop")
KERNELS = ("RNNSeq", "RNNCell", "TensorIterator", "Loop")  # layer types that compute a recurrence
# The runtime layer types the CPU plugin reports a recurrent node as: a kernel, or a cell's plain
# ops fused into a Subgraph (its snippets).  Other devices name theirs otherwise.
CPU_LAYER_TYPES = (*KERNELS, "Subgraph")
_DIRECTIONS = ("forward", "reverse")
_UPSTREAM_LIMIT = 16  # layers walked back from a join before giving up on a direction


@dataclass(frozen=True)
class Implementation:
    """The runtime layers one node became; for a node split per direction, each direction's."""

    layer_types: tuple[str, ...]
    exec_types: tuple[str, ...] = ()
    precisions: tuple[str, ...] = ()
    directions: tuple["Implementation", ...] = ()  # forward, reverse: a bidirectional node run as two kernels

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every runtime layer type it became, its directions' included."""
        return tuple(dict.fromkeys(self.layer_types + tuple(k for d in self.directions for k in d.kinds)))

    @property
    def decomposed(self) -> bool:
        return any(kind in DECOMPOSED for kind in self.layer_types) or any(d.decomposed for d in self.directions)

    def describe(self) -> str:
        """``RNNSeq (f32)``, ``TensorIterator (f32; decomposed)``, ``forward: RNNSeq (f32); reverse:
        TensorIterator (f32; decomposed)`` or ``not reported``."""
        if self.directions:
            return "; ".join(f"{name}: {part.describe()}" for name, part in zip(_DIRECTIONS, self.directions))
        if not self.layer_types:
            return "not reported"
        kinds = "+".join(dict.fromkeys(self.layer_types))
        if self.exec_types:
            kinds += f" [{'+'.join(dict.fromkeys(self.exec_types))}]"
        details = list(dict.fromkeys(self.precisions)) + (["decomposed"] if self.decomposed else [])
        return f"{kinds} ({'; '.join(details)})" if details else kinds


def from_description(description: str) -> Implementation:
    """What :meth:`Implementation.describe` said, read back (a result's or a reproducer's ``implementation``
    text), as far as it tells: layer types, exec types, precisions, each direction of a split node."""
    parts = direction_parts(description)
    if len(parts) > 1:
        return Implementation((), directions=tuple(from_description(part) for part in parts))
    found = _DESCRIBED.match(description.strip())
    if description == "not reported" or found is None:
        return Implementation(())
    kinds, execs, details = found.group(1), found.group(2), found.group(3)
    precisions = tuple(d for d in (details or "").split("; ") if d and d != "decomposed")
    return Implementation(tuple(kinds.split("+")), tuple(execs.split("+")) if execs else (), precisions)


_DESCRIBED = re.compile(r"^([^\s\[(]+)(?: \[([^\]]*)\])?(?: \(([^)]*)\))?$")


def direction_parts(description: str) -> list[str]:
    """What each direction of a node split per direction ran as (``forward: X; reverse: Y`` -> X, Y),
    or the description itself for a node run as one."""
    if not description.startswith(f"{_DIRECTIONS[0]}: "):
        return [description]
    parts = re.split(rf"; (?=(?:{'|'.join(_DIRECTIONS)}): )", description)
    return [part.partition(": ")[2] for part in parts]


def meets(description: str, expected: str) -> bool:
    """Whether a node described by :meth:`Implementation.describe` ran as ``expected`` (a text such
    as ``RNNSeq``): a node split per direction must have run so in every direction."""
    return all(expected in part for part in direction_parts(description))


def in_plain_words(described: str, device: str) -> tuple[str, str | None]:
    """What :meth:`Implementation.describe` said, for people: a short form for a table's column,
    and the explanation it needs, if any (None).  The stored text stays as it is: results and
    baselines compare it."""
    parts = direction_parts(described)
    if len(parts) > 1:
        kinds = [re.split(r" [(\[]", part, maxsplit=1)[0] for part in parts]
        short = f"{kinds[0]} x2" if len(set(kinds)) == 1 else " | ".join(kinds)
        return short, (f"{device} ran the bidirectional node as one kernel per direction: "
                       + "; ".join(f"{name} {part}" for name, part in zip(_DIRECTIONS, parts)))
    if described == "not reported":
        return "not reported", f"{device} reports no runtime layer that carries the node's name"
    if "decomposed" in described:
        return described, ("decomposed: the node runs as a loop over a cell (TensorIterator or Loop), "
                           "not as one sequence kernel")
    return described, None


# The device families that run a bidirectional sequence as one kernel per direction, always: measured
# with openvino 2026.4.1, every runtime graph of the CPU plugin recorded of a bidirectional sequence
# (36 of 36: RNNSeq and TensorIterator, at f32 and bf16, recordings cpu-bf16-avx512-openvino-2026.4.1)
# holds one kernel per direction, neither keeping the node's name.
SPLIT_PER_DIRECTION = ("CPU",)


def contradicts(ran: Implementation, direction: str, family: str) -> bool:
    """Whether what a record says a node ran as cannot be what a ``family`` device ran for a node of
    ``direction``: a bidirectional sequence read as one layer on a device that splits every one (an
    earlier reading of the runtime graph took a direction's kernel, or the Concatenation joining the
    directions, for the whole node)."""
    return (direction == "bidirectional" and family in SPLIT_PER_DIRECTION and not ran.directions
            and bool(ran.layer_types))


def what_ran(compiled: Any, names: Sequence[str], body_precision: str | None = None) -> Mapping[str, Implementation]:
    """For each node name, the runtime layers that carry it (empty where the device reports no
    runtime graph: a virtual device may not).  ``body_precision``: the precision the device compiled
    the model at, which a TensorIterator's or Loop's body runs at (see :func:`with_body_precision`)."""
    found = _what_ran(compiled, names)
    return found if body_precision is None else {
        name: with_body_precision(ran, body_precision) for name, ran in found.items()}


def with_body_precision(ran: Implementation, precision: str) -> Implementation:
    """What ran, with a TensorIterator or Loop said at the precision its body ran at.  The CPU plugin
    reports a TensorIterator's own runtimePrecision, that of the ports it copies its iterations'
    tensors through: f32 at every inference precision (recorded runtime graphs of openvino 2026.4.1 at
    f32 and bf16 alike), and its runtime graph holds no body.  The body is compiled with the model's
    own configuration, so at bf16 it runs the cell kernel at bf16 (its Y and Ho bf16 numbers, as
    RNNSeq's), or the decomposed cell's FullyConnected layers at bf16 (recordings
    cpu-bf16-avx512-openvino-2026.4.1): the body's precision is the compiled model's."""
    if ran.directions:
        return Implementation(ran.layer_types, ran.exec_types, ran.precisions,
                              tuple(with_body_precision(d, precision) for d in ran.directions))
    if not any(kind in DECOMPOSED for kind in ran.layer_types):
        return ran
    return Implementation(ran.layer_types, ran.exec_types, (precision,))


def _what_ran(compiled: Any, names: Sequence[str]) -> Mapping[str, Implementation]:
    try:
        runtime = compiled.get_runtime_model()
    except RuntimeError:
        return {name: Implementation(()) for name in names}
    own: dict[str, list[Any]] = {name: [] for name in names}
    joins: dict[str, list[tuple[int, Any]]] = {name: [] for name in names}  # layers named after an output
    for op in runtime.get_ordered_ops():
        for original in _text(op.get_rt_info(), "originalLayersNames").split(","):
            base, dot, index = original.rpartition(".")
            if original in own:
                own[original].append(op)
            elif dot and index.isdigit() and base in joins:
                joins[base].append((int(index), op))
    return {name: _read(own[name], joins[name]) for name in names}


def _read(own: list[Any], joins: list[tuple[int, Any]]) -> Implementation:
    """What one node ran as, from the layers that carry its name and those named after its outputs.

    A node split per direction is read as that first: each direction's kernel upstream of its
    outputs' joins (one of the kernels may keep the node's name, or a layer the plugin put between
    may take it: at bf16 the CPU plugin's runtime graph was read as one RNNSeq, or as the
    Concatenation joining the directions, in some compiles of a bidirectional sequence).  Else the
    kernel is what says it: a kernel among its own layers; else, where none of its own layers
    computes (a plugin may give a node's name to a layer it put after the kernel: a Concatenation
    joining the directions, which hid the kernel in some runs), the kernel feeding them; else its
    own layers as they are (a cell run as a fused Subgraph)."""
    kinds = [_text(op.get_rt_info(), "layerType") for op in own]
    kernels = [op for op, kind in zip(own, kinds) if kind in KERNELS]
    split = _split(joins) if joins else None
    if split is not None and split.directions:  # even where one direction's kernel kept the node's name
        return split
    if kernels:
        return _implementation(kernels)
    if split is not None and any(kind in KERNELS for kind in split.layer_types):
        return split
    computing = any(kind in CPU_LAYER_TYPES for kind in kinds)
    upstream = [] if computing else [op for layer in own for op in _kernels_upstream(layer)]
    if upstream:
        return _implementation(list({id(op): op for op in upstream}.values()))
    return _implementation(own) if own else _split(joins)


def _split(joins: list[tuple[int, Any]]) -> Implementation:
    """A node known only by the layers named after its outputs: each direction's kernel, found
    upstream of the first output's join."""
    if not joins:
        return Implementation(())
    _, join = min(joins, key=lambda pair: pair[0])
    per_input = [_kernels_upstream(value.get_node()) for value in join.input_values()]
    if len(per_input) == len(_DIRECTIONS) and all(per_input):
        return Implementation((), directions=tuple(_implementation(kernels) for kernels in per_input))
    kernels = [op for found in per_input for op in found]
    return _implementation(kernels or [op for _, op in joins])


def _kernels_upstream(start: Any) -> list[Any]:
    """The kernel layers that feed ``start``, walking back through layers that only move data."""
    found, frontier, seen = [], [start], set()
    for _ in range(_UPSTREAM_LIMIT):
        following = []
        for op in frontier:
            if id(op) in seen:
                continue
            seen.add(id(op))
            if _text(op.get_rt_info(), "layerType") in KERNELS:
                found.append(op)
            else:
                following += [value.get_node() for value in op.input_values()]
        if found or not following:
            return found
        frontier = following
    return found


def _implementation(layers: list[Any]) -> Implementation:
    infos = [op.get_rt_info() for op in layers]
    values = [tuple(_text(info, key) for info in infos) for key in ("layerType", "execType", "runtimePrecision")]
    return Implementation(*(tuple(v for v in each if v) for each in values))


def _text(info: Any, key: str) -> str:
    if key not in info:
        return ""
    value = info[key]
    return value.astype(str) if hasattr(value, "astype") else str(value)
