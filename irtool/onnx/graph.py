"""The GRU, LSTM and RNN nodes of an ONNX model, as ``irtool run`` judges them.

For each such node of the main graph and of its subgraphs (If branches, Loop and Scan bodies,
at any depth): its op version at the model's opset, its attributes,
where each of its input tensors comes from (an initializer, a graph input, or a tensor
computed on the way), and what OpenVINO's ONNX frontend is known to do wrong with it
(measured with openvino 2026.4.1; docs/onnx.md):

- ``layout = 1`` is ignored (openvinotoolkit/openvino#37820);
- LSTM peepholes ``P`` are dropped;
- LSTM ``input_forget = 1`` is ignored (the outputs are those of ``input_forget = 0``);
- a bidirectional node whose activations differ per direction runs the forward set in
  both directions (the backward half is wrong);
- activations beyond Relu, Sigmoid and Tanh do not convert or compile.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import onnx

from irtool.core.errors import RunError
from irtool.onnx import schema
from irtool.onnx.shapes import DEFAULT_ACTIVATIONS, OUTPUT_ORDER
from irtool.onnx.subgraphs import Scope, graphs, placed_nodes

# The activations OpenVINO's ONNX frontend converts and its CPU plugin compiles.
OPENVINO_ACTIVATIONS = frozenset({"relu", "sigmoid", "tanh"})


@dataclass(frozen=True)
class OnnxNode:
    """One GRU, LSTM or RNN node of the main graph or of a subgraph."""

    index: int  # in its graph's node list
    proto: onnx.NodeProto
    version: int  # the op's since-version at the model's opset
    attributes: Mapping[str, Any]
    path: str = ""  # a node in a subgraph: its path from the main graph ("3/then_branch/0")
    scope: tuple[Scope, ...] = ()  # a node in a subgraph: the containers around it, outermost first
    label: str | None = None  # its name made unique in the model (a later node of a name: ``name#2``)

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    @property
    def name(self) -> str:
        """The node's name, or (ONNX allows none) its first output's; unique in the model (``label``)."""
        return self.label or self.proto.name or f"{self.op_type} -> {next(n for n in self.proto.output if n)}"

    @property
    def key(self) -> str:
        return f"{self.op_type}-{self.version}"

    @property
    def in_body(self) -> bool:
        return bool(self.scope)

    @property
    def where(self) -> str:
        """``ONNX graph node 3``; in a subgraph ``ONNX graph node 1/then_branch/0 (then_branch of If 'outer')``."""
        if not self.scope:
            return f"ONNX graph node {self.index}"
        return f"ONNX graph node {self.path} ({' in the '.join(s.describe() for s in reversed(self.scope))})"

    @property
    def loops(self) -> tuple[str, ...]:
        """The Loops and Scans around it, outermost first (``Loop 'steps'``): one iteration index each."""
        return tuple(s.label for s in self.scope if s.loops)

    @property
    def branches(self) -> tuple[str, ...]:
        """The If branches around it, outermost first (``then_branch of If 'outer'``)."""
        return tuple(s.describe() for s in self.scope if not s.loops)

    @property
    def bidirectional(self) -> bool:
        return self.attributes.get("direction") == "bidirectional"

    @property
    def layout(self) -> int:
        return int(self.attributes.get("layout", 0))

    @property
    def activations(self) -> tuple[str, ...]:
        given = self.attributes.get("activations")
        return tuple(given) if given else DEFAULT_ACTIVATIONS[self.op_type] * (2 if self.bidirectional else 1)

    def unsupported_activations(self) -> list[str]:
        """The activations OpenVINO cannot convert or compile, as the node spells them."""
        return list(dict.fromkeys(a for a in self.activations if a.lower() not in OPENVINO_ACTIVATIONS))

    def frontend_properties(self, tensors: Mapping[str, np.ndarray]) -> dict[str, Any]:
        """What this node is that a known fault of OpenVINO's ONNX frontend acts on, by the fault's id
        in irtool.judge.known_faults (a string: what the node shows of it)."""
        properties: dict[str, Any] = {}
        if self.layout == 1:
            properties["onnx-layout"] = True
        inputs = list(self.proto.input)
        if self.op_type == "LSTM" and len(inputs) > 7 and inputs[7]:
            peepholes = tensors.get(inputs[7])
            if peepholes is None or np.any(peepholes != 0):
                properties["onnx-peepholes"] = True
        if self.op_type == "LSTM" and int(self.attributes.get("input_forget", 0)):
            properties["onnx-input-forget"] = True
        # One set per direction (GRU f, g; LSTM f, g, h; RNN f): only two whole sets that differ are
        # the fault; a GRU's [Sigmoid, Tanh] is one set, not Sigmoid forward and Tanh backward.
        half = len(DEFAULT_ACTIVATIONS[self.op_type])
        if self.bidirectional and len(self.activations) == 2 * half and \
                [a.lower() for a in self.activations[:half]] != [a.lower() for a in self.activations[half:]]:
            properties["per-direction-activations"] = (f"{', '.join(self.activations[:half])} forward, "
                                                       f"{', '.join(self.activations[half:])} backward")
        return properties


@dataclass(frozen=True)
class OnnxGraph:
    """An ONNX model's recurrent nodes and the tensors they read."""

    path: Path
    model: onnx.ModelProto
    opset: int
    nodes: tuple[OnnxNode, ...]  # the main graph's
    body_nodes: tuple[OnnxNode, ...] = ()  # those in subgraphs, at any depth

    @property
    def all_nodes(self) -> tuple[OnnxNode, ...]:
        return self.nodes + self.body_nodes

    @property
    def initializers(self) -> dict[str, onnx.TensorProto]:
        """The main graph's and every subgraph's (ONNX names each tensor once across them)."""
        return {t.name: t for graph in graphs(self.model.graph) for t in graph.initializer}

    @property
    def graph_inputs(self) -> tuple[str, ...]:
        init = {t.name for t in self.model.graph.initializer}
        return tuple(i.name for i in self.model.graph.input if i.name not in init)

    def initializer_values(self, names: Any) -> dict[str, np.ndarray]:
        """The values of those of ``names`` that are initializers or Constant nodes' outputs, in the
        main graph or a subgraph (constant at every iteration of a body)."""
        return {name: self._array(tensor) for name, tensor in self._constants(names).items()}

    def _constants(self, names: Any) -> dict[str, onnx.TensorProto]:
        """Those of ``names`` that are initializers or Constant nodes' outputs, with their tensors (not
        yet decoded: a caller that needs the names alone reads no data)."""
        wanted = set(names)
        found = {name: tensor for name, tensor in self.initializers.items() if name in wanted}
        for graph in graphs(self.model.graph):
            for node in graph.node:
                if node.op_type == "Constant" and node.output[0] in wanted and node.attribute \
                        and node.attribute[0].name == "value":
                    found[node.output[0]] = node.attribute[0].t
        return found

    def self_contained(self) -> onnx.ModelProto:
        """The model with every external tensor's data held in it (read from the model's own folder),
        for a runtime given the model as bytes (onnxruntime), which would look in the working directory."""
        from irtool.core.memory import memory_limit
        from irtool.core.model_files import ModelFileError
        from irtool.onnx.external import inlined

        try:
            return inlined(self.model, self.path, memory_limit())
        except ModelFileError as error:
            raise RunError(error.message) from None

    def _array(self, tensor: onnx.TensorProto) -> np.ndarray:
        """A tensor's value; external data only from the model's own folder (irtool.onnx.external)."""
        from irtool.core.memory import memory_limit
        from irtool.core.model_files import ModelFileError
        from irtool.onnx.external import tensor_array

        try:
            return tensor_array(tensor, self.path, memory_limit())
        except ModelFileError as error:
            raise RunError(error.message) from None

    def computed_tensors(self, bodies: bool = True) -> list[str]:
        """The tensors the recurrent nodes (with ``bodies``, also those in subgraphs) read or write that
        are neither initializers, Constants nor graph inputs: the converted model must expose them
        under these names."""
        nodes = self.all_nodes if bodies else self.nodes
        known = set(self._constants(n for node in nodes for n in node.proto.input)) | set(self.graph_inputs)
        names = [n for node in nodes for n in list(node.proto.input) + list(node.proto.output) if n]
        return [n for n in dict.fromkeys(names) if n not in known]

    def declared_shapes(self) -> dict[str, tuple[int | None, ...]]:
        """The shapes the model's graph outputs are declared with, by name (None: a dim without a fixed
        size); an output declared without a shape is left out."""
        shapes = {}
        for output in self.model.graph.output:
            tensor = output.type.tensor_type
            if tensor.HasField("shape"):
                shapes[output.name] = tuple(dim.dim_value if dim.HasField("dim_value") else None
                                            for dim in tensor.shape.dim)
        return shapes

    def tolerance_names(self) -> set[str]:
        """What --atol/--rtol and a case's tolerances may name in this model: its outputs, and each
        recurrent node's output tensors and roles (Y, Y_h, Y_c), alone or as NODE:NAME."""
        names = {output.name for output in self.model.graph.output}
        for node in self.all_nodes:
            for name in [n for n in node.proto.output if n] + list(OUTPUT_ORDER):
                names |= {name, f"{node.name}:{name}"}
        return names

    def unsupported(self) -> str | None:
        """One line naming the activations OpenVINO cannot run, node by node, or None."""
        found = [f"{node.key} node '{node.name}' uses {', '.join(node.unsupported_activations())} (its ONNX "
                 f"frontend and CPU plugin implement only the activations Relu, Sigmoid and Tanh)"
                 for node in self.all_nodes if node.unsupported_activations()]
        found += [f"{node.key} node '{node.name}' has no hidden_size (optional by the ONNX page; OpenVINO's ONNX "
                  f"frontend requires it)" for node in self.all_nodes if "hidden_size" not in node.attributes]
        return f"unsupported by OpenVINO: {'; '.join(found)}; not judged" if found else None


def load_graph(path: str | Path, max_bytes: int) -> OnnxGraph:
    """The ONNX model at ``path`` (at most ``max_bytes``) and its GRU, LSTM and RNN nodes; RunError
    naming the file if it is not an ONNX model."""
    from irtool.core.files import FileError, read_bytes

    path = Path(path)
    try:
        data = read_bytes(path, "model file", max_bytes)
    except FileError as error:
        raise RunError(error.message) from None
    try:
        model = onnx.load_model_from_string(data)
    except Exception as error:  # protobuf's DecodeError and friends
        raise RunError(f"{path}: not an ONNX model ({type(error).__name__}); "
                       f"irtool validate {path} says more") from None
    from irtool.onnx.external import check_external

    refused = check_external(model, path)
    if refused:
        more = f" (and {len(refused) - 1} more tensor{'s' if len(refused) > 2 else ''})" if len(refused) > 1 else ""
        raise RunError(f"{path}: {refused[0].message}{more}")
    return graph_of(model, path)


def graph_of(model: onnx.ModelProto, path: Path) -> OnnxGraph:
    """The recurrent nodes of ``model``, in its main graph and its subgraphs; ``path`` is what
    messages call it."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        raise RunError(f"{path}: the model imports no opset of the default ONNX domain")
    nodes = []
    for placed in placed_nodes(model.graph):
        node = placed.node
        if node.op_type not in schema.OPS or node.domain not in ("", "ai.onnx"):
            continue
        try:
            version = schema.get(node.op_type, opset).version
        except schema.SchemaError as error:
            raise RunError(f"{path}: node {placed.path} ({node.op_type}): {error}") from None
        nodes.append(OnnxNode(placed.index, node, version, schema.node_attributes(node), placed.path, placed.scope))
    nodes = _unique_names(nodes)
    return OnnxGraph(path, model, opset, tuple(n for n in nodes if not n.in_body), tuple(n for n in nodes if n.in_body))


def _unique_names(nodes: list[OnnxNode]) -> list[OnnxNode]:
    """The nodes, each under a name of its own (irtool.core.names.unique_names), as results, reports and
    --atol NODE:OUTPUT name them."""
    from irtool.core.names import unique_names

    return [node if name == node.name else dataclasses.replace(node, label=name)
            for node, name in zip(nodes, unique_names([node.name for node in nodes]))]
