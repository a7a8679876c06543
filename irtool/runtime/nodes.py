"""The recurrent nodes of any ov.Model, and a probed copy that exposes their inputs and outputs.

A node of the family (any op type with a spec file whose ``family`` is set) is found
wherever it sits among other ops.  What feeds each of its input ports is either constant
data read from the model (a Constant, or a Constant through a Convert, as f16-compressed
weights arrive), a model input (by name), or a tensor computed on the way, which the probed
copy adds as an extra output.  Its outputs are added likewise.  One inference of the probed
copy on the device under test then gives every node's inputs and outputs as the device
computes them inside the whole model.

Nodes inside the body of a TensorIterator or Loop are listed, with where they are, but
cannot be probed (a body's tensors are not outputs of the model).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from irtool.runtime.model import tensor_name
from irtool.specs import OpSpec, PortSpec, registry

BODY_OPS = ("TensorIterator", "Loop")
TOP_LEVEL = "top level"


@dataclass(frozen=True)
class Feed:
    """What feeds one input port of a node: constant data, a model input, or a probed tensor."""

    port: PortSpec
    constant: np.ndarray | None = None
    parameter: str | None = None  # the model input's name
    probe: int | None = None  # index among the probed copy's outputs
    dynamic: tuple[int, ...] = ()  # the axes the model leaves dynamic at this port

    def __post_init__(self) -> None:
        if sum(x is not None for x in (self.constant, self.parameter, self.probe)) != 1:
            raise ValueError(f"port {self.port.name}: a feed is exactly one of constant, parameter, probe")


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

    @property
    def in_body(self) -> bool:
        return self.where != TOP_LEVEL

    @property
    def label(self) -> str:
        return f"{self.spec.type}-{self.spec.version} '{self.name}'"

    @property
    def fed_by_model_inputs(self) -> bool:
        """Every input is a model input or constant data (a single-op model's node)."""
        return not self.in_body and all(feed.probe is None for feed in self.feeds)


@dataclass(frozen=True)
class ProbedModel:
    """The recurrent nodes of a model and the copy of it that exposes their tensors."""

    model: Any  # the ov.Model as read
    probed: Any  # the copy with extra outputs (the model itself when it needs none)
    nodes: tuple[RecurrentNode, ...]
    model_output_count: int
    tensors: Mapping[str, int] = field(default_factory=dict)  # a named tensor -> index among the probed outputs
    sources: Mapping[str, str] = field(default_factory=dict)  # a named tensor -> the recurrent node computing it

    @property
    def needs_probe(self) -> bool:
        return self.probed is not self.model

    @property
    def judgeable(self) -> tuple[RecurrentNode, ...]:
        return tuple(node for node in self.nodes if not node.in_body)


def node_spec(node: Any) -> OpSpec | None:
    """The spec of an ov node if it is of the recurrent family irtool knows, else None."""
    spec = registry().for_ir(node.get_type_name(), node.get_type_info().version_id)
    return spec if spec is not None and spec.family else None


def constant_data(node: Any) -> np.ndarray | None:
    """The data of a Constant, or of a Constant through a Convert (f16-compressed weights)."""
    kind = node.get_type_name()
    if kind == "Constant":
        return np.array(node.get_data())
    if kind == "Convert" and node.input_value(0).get_node().get_type_name() == "Constant":
        data = np.array(node.input_value(0).get_node().get_data())
        return data.astype(node.get_output_element_type(0).to_dtype())
    return None


def plain(value: Any) -> Any:
    return list(value) if isinstance(value, (list, tuple)) else value


def node_attributes(node: Any, spec: OpSpec) -> dict[str, Any]:
    return {name: plain(value) for name, value in node.get_attributes().items() if name in spec.attributes}


def probe_model(model: Any, tensor_names: Sequence[str] = ()) -> ProbedModel:
    """Find the model's recurrent nodes and make the copy that exposes their tensors, and also
    the tensors that carry one of ``tensor_names`` (a converted ONNX model keeps ONNX's tensor
    names on the outputs that compute them; a name no output carries is left out of ``tensors``)."""
    found = [op for op in model.get_ordered_ops() if node_spec(op) is not None]
    bodies = list(_body_nodes(model))
    if not found and not tensor_names:
        nodes = tuple(RecurrentNode(k, name, spec, attributes, where) for k, (name, spec, attributes, where)
                      in enumerate(bodies))
        return ProbedModel(model, model, nodes, len(model.outputs))
    copy = model.clone()
    copied = [op for op in copy.get_ordered_ops() if node_spec(op) is not None]
    if [op.get_friendly_name() for op in copied] != [op.get_friendly_name() for op in found]:
        from irtool.errors import IrtoolBug

        raise IrtoolBug("a clone of the model orders its recurrent nodes differently")
    existing = {(id_of(out.get_node().input_value(0))): k for k, out in enumerate(copy.outputs)}
    wanted: list[Any] = []
    index_of: dict[tuple[str, int], int] = {}

    def probe(output: Any) -> int:
        key = id_of(output)
        if key in existing:
            return existing[key]
        if key not in index_of:
            index_of[key] = len(copy.outputs) + len(wanted)
            wanted.append(output)
        return index_of[key]

    nodes = []
    for k, op in enumerate(copied):
        spec = node_spec(op)
        feeds = []
        for port, value in zip(spec.inputs, (i.get_source_output() for i in op.inputs())):
            source = value.get_node()
            data = constant_data(source)
            shape = value.get_partial_shape()
            dynamic = tuple(k for k, dim in enumerate(shape) if dim.is_dynamic) if shape.rank.is_static else ()
            if data is not None:
                feeds.append(Feed(port, constant=data))
            elif source.get_type_name() == "Parameter":
                feeds.append(Feed(port, parameter=tensor_name(source.output(0)), dynamic=dynamic))
            else:
                feeds.append(Feed(port, probe=probe(value), dynamic=dynamic))
        outputs = tuple(probe(op.output(j)) for j in range(len(spec.outputs)))
        model_outputs = {j: index for j, index in enumerate(outputs) if index < len(copy.outputs)}
        tensors = tuple(sorted(name for output in op.outputs() for name in output.get_names())) or _neighbours(op)
        nodes.append(RecurrentNode(k, op.get_friendly_name(), spec, node_attributes(op, spec), TOP_LEVEL,
                                   tuple(feeds), outputs, model_outputs, tensors))
    nodes += [RecurrentNode(len(nodes) + k, name, spec, attributes, where)
              for k, (name, spec, attributes, where) in enumerate(bodies)]
    named = _named_outputs(copy, tensor_names)
    tensors = {name: probe(output) for name, output in named.items()}
    sources = {name: source for name, output in named.items() if (source := _recurrent_source(output))}
    count = len(copy.outputs)
    if not wanted:
        return ProbedModel(model, model, tuple(nodes), count, tensors, sources)
    copy.add_outputs(wanted)
    return ProbedModel(model, copy, tuple(nodes), count, tensors, sources)


def _recurrent_source(output: Any, hops: int = 8) -> str | None:
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


def _named_outputs(model: Any, names: Sequence[str]) -> dict[str, Any]:
    """The output of an op of ``model`` (not a Result: it shares its source's names) that carries
    each of ``names``, where one does."""
    wanted, found = set(names), {}
    for op in model.get_ordered_ops():
        if op.get_type_name() == "Result":
            continue
        for output in op.outputs():
            for name in output.get_names() & wanted:
                found.setdefault(name, output)
    return found


def _neighbours(op: Any) -> tuple[str, ...]:
    """Where a node without tensor names sits: what feeds its data input and what reads its outputs."""
    def label(node: Any) -> str:
        names = node.output(0).get_names() if node.get_output_size() else set()
        name = sorted(names)[0] if names else node.get_friendly_name()
        return f"{node.get_type_name()} '{name}'"

    source = op.input_value(0).get_node()
    readers = {label(target.get_node()) for output in op.outputs() for target in output.get_target_inputs()}
    return (f"from {label(source)}",) + tuple(f"to {reader}" for reader in sorted(readers))


def id_of(output: Any) -> tuple[str, int]:
    """A key for one output of one node that survives wrapper objects: its node's name and index."""
    node = output.get_node()
    return (f"{node.get_type_name()}:{node.get_friendly_name()}", output.get_index())


def _body_nodes(model: Any, where: str = "") -> Sequence[tuple[str, OpSpec, dict, str]]:
    """Recurrent nodes inside TensorIterator and Loop bodies, at any depth."""
    found = []
    for op in model.get_ordered_ops():
        if op.get_type_name() not in BODY_OPS:
            continue
        body = _body(op)
        if body is None:
            continue
        here = f"body of {op.get_type_name()} '{op.get_friendly_name()}'" + (f" in the {where}" if where else "")
        for inner in body.get_ordered_ops():
            spec = node_spec(inner)
            if spec is not None:
                found.append((inner.get_friendly_name(), spec, node_attributes(inner, spec), here))
        found += _body_nodes(body, here)
    return found


def _body(op: Any) -> Any:
    for getter in ("get_function", "get_body"):
        if hasattr(op, getter):
            try:
                return getattr(op, getter)()
            except (RuntimeError, TypeError):
                continue
    return None


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
