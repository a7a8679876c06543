"""TensorIterator and Loop layers: their bodies, checked as a net is (each layer against its spec,
the body's edges, its Consts against the same .bin), at any depth; and the port map and back edges
that tie a body to its layer, as OpenVINO's reader reads them (measured with openvino 2026.4 in
tests/test_validate_bodies.py):

* the layer needs a ``<body>`` (``TensorIterator has no body.``) holding ``<layers>``;
* each ``<port_map>`` entry's ``external_port_id`` is read as a signed 64-bit integer, its
  ``internal_layer_id`` as an unsigned one, an input's ``axis`` as an unsigned one and an output's
  as a signed one, ``start``, ``end``, ``stride`` and ``part_size`` as signed ones (a value it
  cannot read refuses the file);
* an input names a Parameter of the body, an output a Result; an input without ``axis`` takes the
  first back edge whose ``to-layer`` is its Parameter, whose ``from-layer`` must be a Result
  (back edges after that one are not read; one that no input uses is ignored);
* entries are keyed by ``external_port_id``: a second entry with the same id is dropped, and the
  layer's inputs (a Loop's from its third) and outputs must each have exactly one entry;
* a Loop needs an output with ``purpose="execution_condition"``.
"""
from __future__ import annotations

from irtool.core.jsonable import quoted
from irtool.ir import Layer, MapEntry
from irtool.validate.context import Context, LayerFacts
from irtool.validate.readers import INT64_MIN, read_id, stoll

SUBGRAPH_TYPES = ("tensoriterator", "loop")
_SIGNED = {"external_port_id", "start", "end", "stride", "part_size"}


def is_subgraph(layer: Layer) -> bool:
    return layer.type is not None and layer.type.lower() in SUBGRAPH_TYPES


def check_bodies(ctx: Context, facts: list[LayerFacts]) -> list[LayerFacts]:
    """Check every TensorIterator's and Loop's body, bodies in bodies too; the facts of every body
    layer (for the weights check).  Each layer is checked once: the work is linear in the file."""
    from irtool.validate.graph import check_graph
    from irtool.validate.ids import normalize_ids
    from irtool.validate.layers import check_layer

    found: list[LayerFacts] = []
    pending = [fact.layer for fact in facts if is_subgraph(fact.layer)]
    while pending:
        layer = pending.pop()
        body = layer.body
        if body is None:
            ctx.report("IR090", f"a {layer.type} with no <body>: OpenVINO refuses the file ({layer.type} has no "
                                f"body)", layer=layer, expected="<body>")
            continue
        if body.layers is None:
            ctx.report("IR090", "its <body> has no <layers>: OpenVINO refuses the file", layer=layer,
                       line=body.line, token="<body", expected="<layers>")
            continue
        normalize_ids(ctx, body.layers, body.edges)
        body_facts = [check_layer(ctx, each) for each in body.layers]
        check_graph(ctx, body_facts, body.edges, body=True)
        _check_port_map(ctx, layer)
        found.extend(body_facts)
        pending.extend(each.layer for each in body_facts if is_subgraph(each.layer))
    return found


def _read(ctx: Context, layer: Layer, entry: MapEntry, name: str, required: bool = True,
          signed: bool | None = None) -> int | None:
    """An attribute of a port map entry as OpenVINO reads it; a finding where it cannot."""
    text = entry.attributes.get(name)
    if text is None:
        if required:
            ctx.report("IR091", f"a port_map <{entry.kind}> without {name}: OpenVINO refuses the file", layer=layer,
                       line=entry.line, token=f"<{entry.kind}", attribute=name, expected=name)
        return None
    signed = name in _SIGNED if signed is None else signed
    value = stoll(text, INT64_MIN if signed else 0)
    if value is None:
        kind = "a signed" if signed else "an unsigned"
        ctx.report("IR091", f"port_map <{entry.kind}> {name}={quoted(text, 40)} is not {kind} 64-bit integer as "
                            f"OpenVINO reads one: it refuses the file", layer=layer, line=entry.line,
                   token=f"{name}=", attribute=name, expected=f"{kind} 64-bit integer", found=text)
    return value


def _check_port_map(ctx: Context, layer: Layer) -> None:
    body_ids = {each.id: each.type for each in layer.body.layers}
    parameters = {i for i, t in body_ids.items() if t == "Parameter"}
    results = {i for i, t in body_ids.items() if t == "Result"}
    loop = layer.type.lower() == "loop"
    entries = layer.port_map or []
    readable = True
    seen: dict[tuple[str, int], MapEntry] = {}
    described = {"input": set(), "output": set()}
    condition = False
    for entry in entries:
        external = _read(ctx, layer, entry, "external_port_id")
        internal = _read(ctx, layer, entry, "internal_layer_id")
        purpose = entry.attributes.get("purpose", "")
        has_axis = "axis" in entry.attributes
        if has_axis and (entry.kind == "output" and external is not None and external >= 0 or entry.kind == "input"):
            axis = _read(ctx, layer, entry, "axis", signed=entry.kind == "output")
            values = [_read(ctx, layer, entry, name, required=False) for name in ("start", "end", "stride", "part_size")]
            if axis is None or None in [v for v, n in zip(values, ("start", "end", "stride", "part_size"))
                                        if n in entry.attributes]:
                readable = False
            elif entry.kind == "input" and external is not None and 0 <= external < len(layer.inputs):
                rank = len(layer.inputs[external].dims)
                if axis >= rank:
                    ctx.report("IR091", f"port_map <input> axis {axis} is past the rank {rank} of input "
                                        f"{external}: OpenVINO refuses the file", layer=layer, line=entry.line,
                               token="axis=", attribute="axis", expected=f"below {rank}", found=axis)
        if external is None or internal is None:
            readable = False
            continue
        key = (entry.kind, external)
        if key in seen:
            ctx.report("IR093", f"a second port_map <{entry.kind}> with external_port_id {external} (the first at "
                                f"line {seen[key].line}): OpenVINO reads only the first, and refuses the file "
                                f"when the layer's {entry.kind}s then lack one", layer=layer, line=entry.line,
                       token="external_port_id=", attribute="external_port_id", found=external)
            readable = False
            continue
        seen[key] = entry
        if entry.kind == "input":
            used = has_axis or external >= 0 or purpose == "current_iteration"
            if not has_axis:
                used = _check_back_edge(ctx, layer, entry, internal, results) or used
            if used and str(internal) not in parameters:
                _not_in_body(ctx, layer, entry, internal, "Parameter", body_ids)
            if external >= 0 and (has_axis or used):
                described["input"].add(external)
        else:
            condition = condition or purpose == "execution_condition"
            if (external >= 0 or purpose == "execution_condition") and str(internal) not in results:
                _not_in_body(ctx, layer, entry, internal, "Result", body_ids)
            if external >= 0:
                described["output"].add(external)
    if readable:
        _check_counts(ctx, layer, described, loop)
    if loop and readable and not condition:
        ctx.report("IR093", "a Loop whose port_map has no <output> with purpose=\"execution_condition\": OpenVINO "
                            "refuses the file", layer=layer, expected='purpose="execution_condition"')


def _not_in_body(ctx: Context, layer: Layer, entry: MapEntry, internal: int, kind: str, body_ids: dict) -> None:
    what = (f"layer {internal} of the body is a {quoted(body_ids[str(internal)])}" if str(internal) in body_ids
            else f"the body has no layer {internal}")
    ctx.report("IR092", f"port_map <{entry.kind}> internal_layer_id {internal} names no {kind} of the body ({what}): "
                        f"OpenVINO refuses the file", layer=layer, line=entry.line, token="internal_layer_id=",
               attribute="internal_layer_id", expected=f"the id of a {kind} in the body", found=internal)


def _check_back_edge(ctx: Context, layer: Layer, entry: MapEntry, internal: int, results: set) -> bool:
    """The back edge OpenVINO finds for an input without axis, as it looks: the first whose
    to-layer is the input's Parameter, each to-layer read on the way.  Whether there is one."""
    for edge in layer.back_edges or ():
        to_layer = read_id(edge.to_layer)
        if to_layer is None:
            ctx.report("IR091", f"back edge to-layer {quoted(edge.to_layer, 40)} is not an id OpenVINO reads (it "
                                f"reads the back edges to find the one of port_map <input> internal_layer_id "
                                f"{internal}): it refuses the file", layer=layer, line=edge.line,
                       token="to-layer=" if edge.to_layer is not None else "<edge", attribute="to-layer",
                       found=edge.to_layer)
            return True
        if to_layer != internal:
            continue
        from_layer = read_id(edge.from_layer)
        if from_layer is None or str(from_layer) not in results:
            ctx.report("IR092", f"back edge from-layer {quoted(edge.from_layer, 40)} into Parameter {internal} names "
                                f"no Result of the body: OpenVINO refuses the file", layer=layer, line=edge.line,
                       token="from-layer=" if edge.from_layer is not None else "<edge", attribute="from-layer",
                       expected="the id of a Result in the body", found=edge.from_layer)
        return True
    return False


def _check_counts(ctx: Context, layer: Layer, described: dict, loop: bool) -> None:
    """Each input (a Loop's from its third: the first two are its trip count and condition) and each
    output of the layer described once."""
    first = 2 if loop else 0
    for side, ports, low in (("input", layer.inputs, first), ("output", layer.outputs, 0)):
        have = described[side]
        count = len(ports) - low
        if side == "input":
            beyond = sorted(n for n in have if n >= len(ports) or n < low)
            if beyond:
                ctx.report("IR093", f"port_map <input> external_port_id {beyond[0]} names no input the layer "
                                    f"describes in its port map (it has {len(ports)} inputs"
                                    f"{', the first two its trip count and condition' if loop else ''}): OpenVINO "
                                    f"refuses the file", layer=layer, found=beyond[0])
                continue
        if len(have) != count:
            ctx.report("IR093", f"the port_map describes {len(have)} {side}s, and the layer has {count}"
                                f"{' (besides its trip count and condition)' if loop and side == 'input' else ''}: "
                                f"OpenVINO refuses the file", layer=layer, expected=count, found=len(have))
