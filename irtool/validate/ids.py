"""Ids written in a form the IR format does not write but OpenVINO's reader takes (`` 5``, ``+5``,
``05``, ``-0``): read as OpenVINO reads them, each with a warning (IR018), so that one such id
does not cascade into missing layers, ports and edges.  Ids OpenVINO refuses are left as written
for the layer and graph checks (IR017, IR031, IR059)."""
from __future__ import annotations

from irtool.core.jsonable import quoted
from irtool.ir import Edge, Layer
from irtool.validate.context import Context
from irtool.validate.readers import is_canonical, read_id

_EDGE_ENDS = (("from-layer", "from_layer"), ("from-port", "from_port"), ("to-layer", "to_layer"),
              ("to-port", "to_port"))


def normalize_ids(ctx: Context, layers: list[Layer], edges: list[Edge]) -> None:
    for layer in layers:
        if layer.id is not None and not is_canonical(layer.id):
            value = read_id(layer.id)
            if value is not None:  # the layer named by the id OpenVINO reads (its label quoted no space)
                written, layer.id = layer.id, str(value)
                _warn(ctx, "layer id", written, value, layer=layer, attribute="id", on_layer=True)
        for port in layer.inputs + layer.outputs:
            if port.id is not None and not is_canonical(port.id):
                value = read_id(port.id)
                if value is not None:
                    _warn(ctx, "port id", port.id, value, layer=layer, port=port)
                    port.id = str(value)
    for edge in edges:
        for name, field in _EDGE_ENDS:
            written = getattr(edge, field)
            if written is not None and not is_canonical(written):
                value = read_id(written)
                if value is not None:
                    _warn(ctx, f"the edge's {name}", written, value, line=edge.line, token=f"{name}=",
                          attribute=name, edge=edge, layer_id=edge.to_layer, port_id=edge.to_port)
                    setattr(edge, field, str(value))


def _warn(ctx: Context, what: str, written: str, value: int, **where) -> None:
    ctx.report("IR018", f"{what} {quoted(written, 40)} is not written as the IR format writes an id; OpenVINO "
                        f"reads it as {value}, and so does irtool", expected=str(value), found=written, **where)
