"""Where findings go: the context turns a check's message into a located Diagnostic.

A check says what is wrong with the values (``dim 0 is 768, expected 4*hidden_size =
512``); the context adds where (file, line, column, layer, port, attribute), as ONNX's
checker context and OpenVINO's NODE_SHAPE_INFER_CHECK do.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from irtool.core.diagnostics import CODES, Diagnostic, clipped
from irtool.core.jsonable import quoted
from irtool.ir import Edge, IRModel, Layer, Port
from irtool.specs import OpSpec, SpecRegistry
from irtool.specs.opsets import OpenVINOOpsets, openvino_opsets

_MESSAGE_LIMIT = 2000  # a message quotes names and values from the file, which may be megabytes long


@dataclass(slots=True)
class LayerFacts:
    """What the layer checks learned and the graph checks reuse."""

    layer: Layer
    spec: OpSpec | None = None
    attributes: dict = field(default_factory=dict)  # typed, valid values only, defaults filled; shared, read-only
    input_dims: tuple = ()  # per IR input port: tuple of dims, or None if unreadable
    output_dims: tuple = ()


@dataclass
class Context:
    model: IRModel
    registry: SpecRegistry
    diagnostics: list[Diagnostic] = field(default_factory=list)
    memo: dict = field(default_factory=dict)  # results that layers of one file share (see layers.py)
    opsets: OpenVINOOpsets = field(default_factory=openvino_opsets)
    # op type -> (first layer, layer count, specs of other versions) of the layers with no spec here
    _unspecified: dict = field(default_factory=dict)
    _nths: dict = field(default_factory=dict)  # see _nth

    def unspecified(self, layer: Layer, known: list[str]) -> None:
        """Count a layer of an op that OpenVINO has and irtool has no spec for (one note per type)."""
        key = (layer.type, tuple(known))
        first = self._unspecified.get(key)
        self._unspecified[key] = (layer, 1, known) if first is None else (first[0], first[1] + 1, known)

    def report_unspecified(self) -> None:
        for (op_type, _), (layer, count, known) in self._unspecified.items():
            layers = f"{count} layer{'s' if count != 1 else ''} of {quoted(op_type)} (the first here)"
            if known:
                self.report("IR011", f"{layers}: OpenVINO has this version ({quoted(layer.version)}), irtool "
                                     f"has specs of {', '.join(known)} only; not checked", layer=layer,
                            found=layer.version, expected=", ".join(known), attribute="version", on_layer=True)
            else:
                self.report("IR010", f"{layers}: an op OpenVINO has, with no spec here; attributes and shapes "
                                     f"not checked", layer=layer, found=op_type)

    def report(self, code: str, message: str, *, layer: Layer | None = None, port: Port | None = None,
               port_name: str | None = None, attribute: str | None = None, line: int | None = None,
               token: str | None = None, expected: object = None, found: object = None,
               port_id: str | None = None, layer_id: str | None = None, dim: int | None = None,
               edge: Edge | None = None, on_layer: bool = False) -> None:
        """Add a diagnostic, located.  ``port_id`` names a port that is not there (a missing
        one); ``layer_id`` a layer by the id an edge writes (which may name no layer); ``dim``
        the index of the port's <dim> the finding is about; ``edge`` the edge it is about;
        ``on_layer``: ``attribute`` is one of the <layer> element's own (id, type, version), not of its <data>."""
        where = layer.label if layer is not None else ""
        if port is not None:
            where += f" {port.label} ({port_name})" if port_name else f" {port.label}"
        if attribute is not None and edge is None:  # a finding about an edge names its attribute itself
            where += f" attribute {clipped(attribute)}"
        text = f"{where.lstrip()}: {message}" if where else message
        if len(text) > _MESSAGE_LIMIT:
            text = clipped(text, _MESSAGE_LIMIT)
        line, column = self._position(layer, port, attribute, line, token, dim, edge, on_layer)
        # positional: this runs once per finding, 30,000 times on a hostile file
        self.diagnostics.append(Diagnostic(
            code, CODES[code].severity, text, self.model.path, line, column,
            layer.id if layer else layer_id, layer.name if layer else None, port.id if port else port_id,
            None if attribute is None else clipped(attribute), None if expected is None else clipped(str(expected)),
            None if found is None else clipped(str(found))))

    def _position(self, layer: Layer | None, port: Port | None, attribute: str | None,
                  line: int | None, token: str | None, dim: int | None,
                  edge: Edge | None, on_layer: bool = False) -> tuple[int | None, int | None]:
        """Where a finding points: each element at its own column, when several share a line (a
        one-line port's dims, a one-line net's layers), by counting the elements of its kind
        written before it on that line, from its parent's column."""
        locate = self.model.locate
        if port is not None and dim is not None and dim < len(port.dim_lines) and port.dim_lines[dim] is not None:
            dim_line = port.dim_lines[dim]
            port_line, port_column = self._port_position(layer, port)
            after = port_column if port_line == dim_line and port_column is not None else 1
            nth = sum(1 for other in port.dim_lines[:dim] if other == dim_line)
            return locate(dim_line, "<dim", after, nth)
        if edge is not None and line is not None:
            return locate(line, token or "<edge", 1, self._nth("edges", lambda: self.model.edges, edge))
        if line is not None:
            return locate(line, token or "<")
        if on_layer and attribute is not None and layer is not None:
            layer_line, layer_column = self._layer_position(layer)
            if getattr(layer, attribute, None) is None:  # missing (IR013): the layer is where it is not
                return layer_line, layer_column
            found_line, column = locate(layer.line, f"{attribute}=", layer_column or 1)  # an attribute name, whole
            return (found_line, column) if column is not None else (layer_line, layer_column)
        if attribute is not None and layer is not None and layer.data_line is not None:
            layer_line, layer_column = self._layer_position(layer)
            after = layer_column if layer_line == layer.data_line and layer_column is not None else 1
            data_line, data_column = locate(layer.data_line, "<data", after)
            if attribute in layer.data:
                after = data_column if data_line == layer.data_line and data_column is not None else 1
                return locate(layer.data_line, f"{attribute}=", after)
            return data_line, data_column
        if port is not None:
            return self._port_position(layer, port)
        if layer is not None:
            return self._layer_position(layer)
        return locate(self.model.line, "<")

    def _layer_position(self, layer: Layer) -> tuple[int | None, int | None]:
        return self.model.locate(layer.line, "<layer", 1, self._nth("layers", lambda: self.model.layers, layer))

    def _port_position(self, layer: Layer | None, port: Port) -> tuple[int | None, int | None]:
        if layer is None:
            return self.model.locate(port.line, "<port")
        layer_line, layer_column = self._layer_position(layer)
        after = layer_column if layer_line == port.line and layer_column is not None else 1
        nth = self._nth(id(layer), lambda: layer.inputs + layer.outputs, port)
        return self.model.locate(port.line, "<port", after, nth)

    def _nth(self, key: object, items: Callable[[], list], item: object) -> int:
        """How many of ``items`` before ``item`` have its line: counted once per list (a layer of
        100,000 ports, each with a finding, is counted once, not 100,000 times)."""
        counts = self._nths.get(key)
        if counts is None:
            if len(self._nths) > 4096:
                self._nths.clear()
            counts, per_line = {}, {}
            for each in items():
                counts[id(each)] = per_line.get(each.line, 0)
                per_line[each.line] = counts[id(each)] + 1
            self._nths[key] = counts
        return counts.get(id(item), 0)
