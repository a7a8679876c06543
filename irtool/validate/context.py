"""Where findings go: the context turns a check's message into a located Diagnostic.

A check says what is wrong with the values (``dim 0 is 768, expected 4*hidden_size =
512``); the context adds where (file, line, column, layer, port, attribute), as ONNX's
checker context and OpenVINO's NODE_SHAPE_INFER_CHECK do.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from irtool.diagnostics import CODES, Diagnostic
from irtool.ir import IRModel, Layer, Port
from irtool.specs import OpSpec, SpecRegistry


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

    def report(self, code: str, message: str, *, layer: Layer | None = None, port: Port | None = None,
               port_name: str | None = None, attribute: str | None = None, line: int | None = None,
               token: str | None = None, expected: object = None, found: object = None) -> None:
        where = []
        if layer is not None:
            where.append(layer.label)
        if port is not None:
            where.append(port.label + (f" ({port_name})" if port_name else ""))
        if attribute is not None:
            where.append(f"attribute {attribute}")
        text = (" ".join(where) + ": " if where else "") + message
        line, column = self._position(layer, port, attribute, line, token)
        self.diagnostics.append(Diagnostic(
            code=code, severity=CODES[code].severity, message=text, path=self.model.path, line=line,
            column=column, layer_id=layer.id if layer else None, layer_name=layer.name if layer else None,
            port_id=port.id if port else None, attribute=attribute,
            expected=None if expected is None else str(expected), found=None if found is None else str(found)))

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
