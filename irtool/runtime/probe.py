"""The recurrent nodes of any ov.Model found, and a probed copy that exposes their inputs and outputs.

A node of the family (any op type with a spec file whose ``family`` is set) is found wherever
it sits among other ops.  What feeds each of its input ports is either constant data read from
the model (a Constant, or a Constant through a Convert, as f16-compressed weights arrive), a
model input (by name), or a tensor computed on the way, which the probed copy adds as an extra
output.  Its outputs are added likewise, and those of nodes in bodies through their containers
(irtool.runtime.bodies).  One inference of the probed copy on the device under test then gives
every node's inputs and outputs as the device computes them inside the whole model.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from irtool.runtime.bodies import BodyTensor, Wanted, expose_bodies, has_body_nodes
from irtool.lowering.cells import Refusal
from irtool.lowering.chains import find_chains
from irtool.lowering.graph import constant_data, id_of
from irtool.runtime.lowered_nodes import chain_node, might_hold_cells, refusal_node
from irtool.runtime.model import clone_model, tensor_name
from irtool.runtime.nodes import (
    TOP_LEVEL,
    Condition,
    Feed,
    Placement,
    ProbedModel,
    RecurrentNode,
    dynamic_axes,
    named_outputs,
    neighbours,
    node_attributes,
    node_spec,
    recurrent_source,
    stable_keys,
    stored_type,
)


def probe_model(model: Any, tensor_names: Sequence[str] = (), generated_names: bool = False,
                body_nodes: bool = True, lowered: bool = True) -> ProbedModel:
    """Find the model's recurrent nodes (at the top level and, with ``body_nodes``, in bodies) and
    make the copy that exposes their tensors, and also the tensors that carry one of
    ``tensor_names`` (a converted ONNX model keeps ONNX's tensor names on the outputs that compute
    them), at the top level (``tensors``) or in a body at any depth (``placed``); a name no output
    carries is left out.  ``generated_names``: the model was converted in this process (not read
    from IR, whose names are the file's), so a ``<type>_<n>`` name is OpenVINO's counter and the
    node is keyed by its place (:func:`stable_keys`).  ``lowered``: also the cells a converter
    lowered to plain ops, at any depth (irtool.lowering), and what looks like one but is
    not recognized (a node judged as not recognized, saying why)."""
    probed = _probe_model(model, tensor_names, body_nodes, lowered)
    return dataclasses.replace(probed, nodes=stable_keys(probed.nodes)) if generated_names else probed


def _probe_model(model: Any, tensor_names: Sequence[str], body_nodes: bool, lowered: bool) -> ProbedModel:
    found = [op for op in model.get_ordered_ops() if node_spec(op) is not None]
    lowered = lowered and might_hold_cells(model)
    if not found and not tensor_names and not (body_nodes and has_body_nodes(model)) and not lowered:
        return ProbedModel(model, model, (), len(model.outputs))
    copy = clone_model(model)
    copied = [op for op in copy.get_ordered_ops() if node_spec(op) is not None]
    if [op.get_friendly_name() for op in copied] != [op.get_friendly_name() for op in found]:
        from irtool.core.errors import IrtoolBug

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
            if data is not None:
                feeds.append(Feed(port, constant=data, stored=stored_type(source)))
            elif source.get_type_name() == "Parameter":
                feeds.append(Feed(port, parameter=tensor_name(source.output(0)), dynamic=dynamic_axes(value)))
            else:
                feeds.append(Feed(port, probe=probe(value), dynamic=dynamic_axes(value)))
        outputs = tuple(probe(op.output(j)) for j in range(len(spec.outputs)))
        model_outputs = {j: index for j, index in enumerate(outputs) if index < len(copy.outputs)}
        tensors = tuple(sorted(name for output in op.outputs() for name in output.get_names())) or neighbours(op)
        nodes.append(RecurrentNode(k, op.get_friendly_name(), spec, node_attributes(op, spec), TOP_LEVEL,
                                   tuple(feeds), outputs, model_outputs, tensors))
    for chain in find_chains(copy) if lowered else ():
        nodes.append(refusal_node(chain, len(nodes)) if isinstance(chain, Refusal) else
                     chain_node(chain, len(nodes), probe))
    named = named_outputs(copy, tensor_names)
    placed = {}
    for item in expose_bodies(copy, wanted=Wanted(body_nodes, frozenset(tensor_names) - set(named), lowered)):
        if isinstance(item, BodyTensor):
            value = item.values[0]
            constant = value if isinstance(value, np.ndarray) else None
            placed[item.name] = Placement(
                None if item.skipped or constant is not None else probe(value), item.where, tuple(item.loops),
                () if item.skipped else tuple(Condition(probe(flag), *rest) for flag, *rest in item.conditions),
                item.container, item.source, item.unprobed, constant, item.never)
            continue
        inputs, outputs = item.values[:len(item.inputs)], item.values[len(item.inputs):]
        feeds = () if item.skipped else tuple(
            Feed(port, constant=value, stored=item.stored.get(k)) if isinstance(value, np.ndarray) else
            Feed(port, probe=probe(value), dynamic=dynamic, shared=k in item.shared)
            for k, (port, value, dynamic) in enumerate(zip(item.spec.inputs, inputs, item.dynamic)))
        probes = () if item.skipped else tuple(probe(value) for value in outputs)
        conditions = () if item.skipped else tuple(Condition(probe(flag), *rest) for flag, *rest in item.conditions)
        nodes.append(RecurrentNode(len(nodes), item.name, item.spec, item.attributes, item.where, feeds, probes, None,
                                   item.tensors, tuple(item.loops), conditions, item.unprobed, item.container,
                                   never=item.never, lowered=item.lowered))
    tensors = {name: probe(output) for name, output in named.items()}
    sources = {name: source for name, output in named.items() if (source := recurrent_source(output))}
    count = len(copy.outputs)
    if not wanted:
        return ProbedModel(model, model, tuple(nodes), count, tensors, sources, placed)
    copy.add_outputs(wanted)
    return ProbedModel(model, copy, tuple(nodes), count, tensors, sources, placed)


def loop_controls(model: Any) -> dict[str, str]:
    """The model inputs that decide whether a top-level Loop runs, by name: "trip" for one feeding its
    trip count, "condition" for one feeding its execution condition (directly or through ops that
    keep values: Convert, Reshape, Squeeze, Unsqueeze)."""
    found: dict[str, str] = {}
    for op in model.get_ordered_ops():
        if op.get_type_name() != "Loop":
            continue
        for port, role in ((0, "trip"), (1, "condition")):
            node = op.input_value(port).get_node()
            while node.get_type_name() in ("Convert", "Reshape", "Squeeze", "Unsqueeze"):
                node = node.input_value(0).get_node()
            if node.get_type_name() == "Parameter":
                found.setdefault(tensor_name(node.output(0)), role)
    return found
