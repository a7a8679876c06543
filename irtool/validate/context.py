"""Where findings go: the context turns a check's message into a located Diagnostic.

A check says what is wrong with the values (``dim 0 is 768, expected 4*hidden_size =
512``); the context adds where (file, line, column, layer, port, attribute), as ONNX's
checker context and OpenVINO's NODE_SHAPE_INFER_CHECK do.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from irtool.diagnostics import CODES, Diagnostic, clipped, quoted
from irtool.ir import IRModel, Layer, Port
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
                            found=layer.version, expected=", ".join(known))
            else:
                self.report("IR010", f"{layers}: an op OpenVINO has, with no spec here; attributes and shapes "
                                     f"not checked", layer=layer, found=op_type)

    def report(self, code: str, message: str, *, layer: Layer | None = None, port: Port | None = None,
               port_name: str | None = None, attribute: str | None = None, line: int | None = None,
               token: str | None = None, expected: object = None, found: object = None,
               port_id: str | None = None, layer_id: str | None = None) -> None:
        """Add a diagnostic, located.  ``port_id`` names a port that is not there (a missing
        one); ``layer_id`` a layer by the id an edge writes (which may name no layer)."""
        where = layer.label if layer is not None else ""
        if port is not None:
            where += f" {port.label} ({port_name})" if port_name else f" {port.label}"
        if attribute is not None:
            where += f" attribute {clipped(attribute)}"
        text = f"{where.lstrip()}: {message}" if where else message
        if len(text) > _MESSAGE_LIMIT:
            text = clipped(text, _MESSAGE_LIMIT)
        line, column = self._position(layer, port, attribute, line, token)
        # positional: this runs once per finding, 30,000 times on a hostile file
        self.diagnostics.append(Diagnostic(
            code, CODES[code].severity, text, self.model.path, line, column,
            layer.id if layer else layer_id, layer.name if layer else None, port.id if port else port_id,
            None if attribute is None else clipped(attribute), None if expected is None else clipped(str(expected)),
            None if found is None else clipped(str(found))))

    def _position(self, layer: Layer | None, port: Port | None, attribute: str | None,
                  line: int | None, token: str | None) -> tuple[int | None, int | None]:
        if line is not None:
            return self.model.locate(line, token or "<")
        if attribute is not None and layer is not None and attribute in layer.data:
            return self.model.locate(layer.data_line, f"{attribute}=")
        if attribute is not None and layer is not None and layer.data_line is not None:
            return self.model.locate(layer.data_line, "<data")
        if port is not None:
            return self.model.locate(port.line, "<port")
        if layer is not None:
            return self.model.locate(layer.line, "<layer")
        return self.model.locate(self.model.line, "<")
