"""The recurrent nodes of an ov.Model, as records: what feeds each input port of a node
(constant data read from the model, a model input, or a tensor the probed copy exposes), where
its outputs are among the probed copy's, the loops and If branches around it; and the small
reads of an OpenVINO graph the finding and probing share (a node's spec, attributes, constant
data, neighbours, a container's body).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from irtool.core.precisions import largest_magnitude
from irtool.specs import OpSpec, PortSpec, registry

BODY_OPS = ("TensorIterator", "Loop")  # containers that iterate their body


CONTAINERS = BODY_OPS + ("If",)


TOP_LEVEL = "top level"


@dataclass(frozen=True)
class Feed:
    """What feeds one input port of a node: constant data, a model input, or a probed tensor."""

    port: PortSpec
    constant: np.ndarray | None = None
    parameter: str | None = None  # the model input's name
    probe: int | None = None  # index among the probed copy's outputs
    dynamic: tuple[int, ...] = ()  # the axes the model leaves dynamic at this port
    # a constant stored in another type and converted: f16 of compress_to_fp16, or a lowered cell's
    # weights stored as i8 (u8, i4, u4) and decompressed (irtool.lowering.graph.integer_storage)
    stored: str | None = None
    # a recurrence's weight that the graph computes per iteration (a probe, or a constant stacked per
    # step): its value is the one most iterations share, and an iteration computing with another fails
    shared: bool = False

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.constant, self.parameter, self.probe)) != 1:
            raise ValueError(f"port {self.port.name}: a feed is exactly one of constant, parameter, probe")


@dataclass(frozen=True)
class Condition:
    """What must hold for a body node to run, read from a probed flag output (with one leading axis
    per loop around it): an If around the node took the node's branch (the flag is 1 when the then
    branch ran, 0 when the else branch did), or a Loop around it ran at least one iteration (1:
    its trip count is not 0 and its execution condition holds).  A Loop that ran none leaves its
    concatenated outputs as the previous inference's (measured: OpenVINO 2026.4.1's CPU plugin,
    a compiled model inferred again), so they cannot say it."""

    probe: int
    then: bool
    depth: int  # the flag's leading iteration axes
    label: str  # "then branch of If 'name'", "Loop 'name'"
    loop: bool = False  # a Loop's flag, not a branch's

    def says(self) -> str:
        """Why the node did not run where the flag is not ``then``."""
        return f"{self.label} ran no iteration" if self.loop else f"in the {self.label}, not taken"


@dataclass(frozen=True)
class Lowered:
    """A recurrent cell recognized in plain ops (irtool.lowering), or a structure that looks like
    one and is not recognized."""

    description: str  # the pattern and the ops it is made of
    steps: int | None = None  # unrolled at the top level: its step count (its one iteration axis)
    refused: str | None = None  # why a cell-like structure is not recognized


@dataclass(frozen=True)
class RecurrentNode:
    """One node of the family in a model: what it is, where it is, and how to see its tensors."""

    index: int  # among the model's recurrent nodes, in topological order
    name: str  # the friendly name
    spec: OpSpec
    attributes: Mapping[str, Any]
    where: str  # "top level" or "body of TensorIterator 'ti'"
    feeds: tuple[Feed, ...] = ()  # one per connected input port; empty for a node in a body
    outputs: tuple[int, ...] = ()  # for each output port, the probed copy's output index
    model_outputs: Mapping[int, int] | None = None  # output port -> model output index, where one is
    tensors: tuple[str, ...] = ()  # its output tensors' names (a converted model's own), or what feeds and reads it
    loops: tuple[str, ...] = ()  # a body node: the TensorIterators/Loops around it, outermost first (one axis each)
    conditions: tuple[Condition, ...] = ()  # a node in If branches: the branch each If must take to reach it
    unprobed: str | None = None  # why a body node's tensors could not be exposed
    container: str | None = None  # a body node: the friendly name of the top-level container it sits in
    stable: str | None = None  # the key of a node whose name OpenVINO made by its counter (see generated_name)
    never: str | None = None  # why a body node never runs (a Loop around it of constant trip count 0)
    lowered: Lowered | None = None  # a cell recognized in plain ops, judged as the op ``spec`` says

    @property
    def key(self) -> str:
        """What results are keyed by (CASE::NODE, --atol NODE:PORT, reproducer folders): the node's name,
        or for a name OpenVINO generated its stable place, ``LSTMCell@1``."""
        return self.stable or self.name

    @property
    def in_body(self) -> bool:
        return self.where != TOP_LEVEL

    @property
    def depth(self) -> int:
        """How many leading iteration axes its probed tensors have."""
        return len(self.loops)

    @property
    def label(self) -> str:
        return f"{self.spec.type}-{self.spec.version} '{self.name}'"

    @property
    def fed_by_model_inputs(self) -> bool:
        """Every input is a model input or constant data (a single-op model's node)."""
        return not self.in_body and all(feed.probe is None for feed in self.feeds)


@dataclass(frozen=True)
class Placement:
    """A named tensor inside a body, as the probed copy exposes it: its probed output, with one
    leading axis per loop around it, and the If branches that must be taken for it to exist."""

    probe: int | None  # None when it could not be exposed (``unprobed`` says why) or is ``constant``
    where: str  # "then branch of If 'y'"
    loops: tuple[str, ...] = ()
    conditions: tuple[Condition, ...] = ()
    container: str | None = None  # the friendly name of the top-level container it sits in
    source: str | None = None  # the recurrent node computing it (through layout ops), where one does
    unprobed: str | None = None
    constant: np.ndarray | None = None  # the same data at every iteration (a body input fed by a Constant)
    never: str | None = None  # why it is never computed (a Loop around it of constant trip count 0)

    @property
    def depth(self) -> int:
        return len(self.loops)


@dataclass(frozen=True)
class ProbedModel:
    """The recurrent nodes of a model and the copy of it that exposes their tensors."""

    model: Any  # the ov.Model as read
    probed: Any  # the copy with extra outputs (the model itself when it needs none)
    nodes: tuple[RecurrentNode, ...]
    model_output_count: int
    tensors: Mapping[str, int] = field(default_factory=dict)  # a named tensor -> index among the probed outputs
    sources: Mapping[str, str] = field(default_factory=dict)  # a named tensor -> the recurrent node computing it
    placed: Mapping[str, Placement] = field(default_factory=dict)  # a named tensor found inside a body

    @property
    def needs_probe(self) -> bool:
        return self.probed is not self.model

    @property
    def judgeable(self) -> tuple[RecurrentNode, ...]:
        return tuple(node for node in self.nodes if node.unprobed is None and node.never is None and
                     (node.lowered is None or node.lowered.refused is None))

    @property
    def run_as(self) -> tuple[str, ...]:
        """The nodes whose implementation says what ran for the judged nodes: each top-level node's
        own, and the containers of those in bodies and of the named tensors there; and the recurrent
        nodes in bodies themselves, which run at the top level where the device folds their container
        (an If whose condition static shapes decide: OpenVINO's CPU keeps its branch's ops alone)."""
        names = [node.container if node.in_body else node.name for node in self.judgeable
                 if node.in_body or node.lowered is None]  # an unrolled chain is no node OpenVINO has
        names += [placement.container for placement in self.placed.values() if placement.container]
        names += [node.name for node in self.judgeable if node.in_body and node.lowered is None]
        names += [placement.source for placement in self.placed.values() if placement.container and placement.source]
        return tuple(dict.fromkeys(names))


def node_spec(node: Any) -> OpSpec | None:
    """The spec of an ov node if it is of the recurrent family irtool knows, else None."""
    spec = registry().for_ir(node.get_type_name(), node.get_type_info().version_id)
    return spec if spec is not None and spec.family else None


def stored_type(node: Any) -> str | None:
    """The element type a Constant behind a Convert is stored as (``f16`` for weights compressed by
    compress_to_fp16), where it differs from what the Convert gives; None for anything else."""
    if node.get_type_name() != "Convert" or node.input_value(0).get_node().get_type_name() != "Constant":
        return None
    stored, given = node.get_input_element_type(0), node.get_output_element_type(0)
    return stored.get_type_name() if stored != given and stored.is_real() else None


def stored_precision(model: Any) -> str | None:
    """The coarsest floating type any constant of ``model`` is stored as behind a Convert (its
    bodies' too): f16 or bf16 where weights were compressed, else None."""
    found = {kind for op in model.get_ordered_ops() for kind in [stored_type(op)] if kind in ("f16", "bf16")}
    for op in model.get_ordered_ops():
        found.update(kind for body in _bodies(op) for kind in [stored_precision(body)] if kind)
    return "bf16" if "bf16" in found else "f16" if found else None


def constant_magnitude(model: Any) -> float:
    """The largest finite magnitude of the model's floating-point constants (its weights; its bodies'
    too): a scale of the values that flow through it, for the bound its outputs are judged within
    (irtool.judge.bounds); 0 where it has none."""
    largest = 0.0
    for op in model.get_ordered_ops():
        kind = op.get_type_name()
        if kind == "Constant" and op.get_output_element_type(0).is_real():
            largest = max(largest, largest_magnitude(op.get_data()))
        largest = max([largest] + [constant_magnitude(body) for body in _bodies(op)])
    return largest


def _bodies(op: Any) -> list[Any]:
    """The bodies of a TensorIterator, Loop or If (its two branches); none for another op."""
    kind = op.get_type_name()
    if kind not in CONTAINERS:
        return []
    return [body for body in ([op.get_then_body(), op.get_else_body()] if kind == "If" else [body_of(op)])
            if body is not None]


def plain(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value


def node_attributes(node: Any, spec: OpSpec) -> dict[str, Any]:
    return {name: plain(value) for name, value in node.get_attributes().items() if name in spec.attributes}


def generated_name(name: str, op_type: str) -> bool:
    """Whether a node's name is one OpenVINO made for a node its frontend gave no name:
    ``<type>_<n>`` with n from a counter of every node the process has made (a TensorFlow cell in a
    Loop body is LSTMCell_77 in one process and LSTMCell_11647 after another model's conversion)."""
    return re.fullmatch(rf"{re.escape(op_type)}_[0-9]+", name) is not None


def stable_keys(nodes: Sequence[RecurrentNode]) -> tuple[RecurrentNode, ...]:
    """The nodes, each one whose name OpenVINO generated keyed by its place instead: its type and its
    count among the model's recurrent nodes of that type, in their order (top level in topological
    order, then the bodies'): ``LSTMCell@1``; a lowered cell named after such an op (``LSTM@Multiply_12``),
    by its kind and count: ``LSTM@1``.  Other names are the model's own and stay the keys."""
    counts: dict[str, int] = {}
    keyed = []
    for node in nodes:
        kind, _, op = node.name.rpartition("@") if node.lowered is not None else (node.spec.type, "", node.name)
        counts[kind] = counts.get(kind, 0) + 1
        if re.fullmatch(r"[A-Za-z]+_[0-9]+", op) and generated_name(op, op.rpartition("_")[0]) and \
                (node.lowered is not None or op.rpartition("_")[0] == node.spec.type):
            node = dataclasses.replace(node, stable=f"{kind}@{counts[kind]}")
        keyed.append(node)
    return tuple(keyed)


def dynamic_axes(value: Any) -> tuple[int, ...]:
    shape = value.get_partial_shape()
    return tuple(k for k, dim in enumerate(shape) if dim.is_dynamic) if shape.rank.is_static else ()


def recurrent_source(output: Any, hops: int = 8) -> str | None:
    """The friendly name of the recurrent node an output comes from through the layout ops a
    frontend puts after it (Transpose, Squeeze, Reshape: each op's first input), if within ``hops``."""
    node = output.get_node()
    for _ in range(hops):
        if node_spec(node) is not None:
            return node.get_friendly_name()
        if node.get_input_size() == 0:
            return None
        node = node.input_value(0).get_node()
    return None


def named_outputs(model: Any, names: Sequence[str]) -> dict[str, Any]:
    """The output of an op of ``model`` (not a Result: it shares its source's names) that carries
    each of ``names``, where one does."""
    wanted, found = set(names), {}
    if not wanted:
        return found
    for op in model.get_ordered_ops():
        if op.get_type_name() == "Result":
            continue
        for output in op.outputs():
            for name in output.get_names() & wanted:
                found.setdefault(name, output)
    return found


def neighbours(op: Any) -> tuple[str, ...]:
    """Where a node without tensor names sits: what feeds its data input and what reads its outputs."""
    def label(node: Any) -> str:
        names = node.output(0).get_names() if node.get_output_size() else set()
        name = sorted(names)[0] if names else node.get_friendly_name()
        return f"{node.get_type_name()} '{name}'"

    source = op.input_value(0).get_node()
    readers = {label(target.get_node()) for output in op.outputs() for target in output.get_target_inputs()}
    return (f"from {label(source)}",) + tuple(f"to {reader}" for reader in sorted(readers))


def body_of(op: Any) -> Any:
    for getter in ("get_function", "get_body"):
        if hasattr(op, getter):
            try:
                return getattr(op, getter)()
            except (RuntimeError, TypeError):
                continue
    return None
