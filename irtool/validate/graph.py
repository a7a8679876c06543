"""Graph checks of a <net>: layer ids, edges, port agreement, cycles, connectivity."""
from __future__ import annotations

from collections import defaultdict, deque

from irtool.core import element_types
from irtool.core.errors import IrtoolBug
from irtool.core.jsonable import quoted
from irtool.core.shapes import dims_compatible, format_shape
from irtool.ir import Edge
from irtool.validate.context import Context, LayerFacts
from irtool.validate.readers import read_id


def check_graph(ctx: Context, facts: list[LayerFacts], edges: list[Edge] | None = None, body: bool = False) -> None:
    """The net's graph, or with ``edges`` and ``body`` a TensorIterator's or Loop's body (whose
    Results the port map names: a body without one is the port map's finding)."""
    by_id = _unique_layers(ctx, facts)
    fed: dict[tuple[str, str], Edge] = {}
    # layer id -> the edges out of it; and the layers that feed it (repeated for each edge between them)
    successors: dict[str, list[Edge]] = defaultdict(list)
    predecessors: dict[str, list[str]] = defaultdict(list)
    find = by_id.get
    for edge in ctx.model.edges if edges is None else edges:
        # resolve the edge to (producer facts, output index), (consumer facts, input index)
        producer = find(edge.from_layer) if edge.from_layer is not None else None
        consumer = find(edge.to_layer) if edge.to_layer is not None else None
        ids_said = _check_edge_ids(ctx, edge, consumer)
        out_index = _port_index(producer.layer.outputs, edge.from_port) if producer is not None else None
        in_index = _port_index(consumer.layer.inputs, edge.to_port) if consumer is not None else None
        if out_index is None or in_index is None:
            ends = _edge_ends_reported(ctx, edge, by_id)
            if ends is None:
                if ids_said:  # the ends it does name are connected, so that the one finding is IR059's
                    if in_index is not None:
                        fed.setdefault((edge.to_layer, edge.to_port), edge)
                    if producer is not None and consumer is not None:
                        predecessors[edge.to_layer].append(edge.from_layer)
                continue
            (producer, out_index), (consumer, in_index) = ends
        key = (edge.to_layer, edge.to_port)
        if key in fed:
            first = fed[key]
            _report_edge(ctx, "IR068", edge, consumer, f"is fed twice: from {_end(edge, 'from')} here and from "
                                                       f"{_end(first, 'from')} by the edge at line {first.line}",
                         found=_end(edge, "from"))
        else:
            fed[key] = edge
        successors[edge.from_layer].append(edge)
        predecessors[edge.to_layer].append(edge.from_layer)
        source, target = producer.layer.outputs[out_index], consumer.layer.inputs[in_index]
        if (source.precision != target.precision
                or producer.output_dims[out_index] != consumer.input_dims[in_index]):  # else they agree
            _check_agreement(ctx, edge, producer, out_index, consumer, in_index)
    _check_unconnected(ctx, facts, fed)
    _check_cycles(ctx, by_id, successors)
    _check_reachability(ctx, by_id, predecessors, body)


def _unique_layers(ctx: Context, facts: list[LayerFacts]) -> dict[str, LayerFacts]:
    by_id: dict[str, LayerFacts] = {}
    for fact in facts:
        layer = fact.layer
        if layer.id is None:
            continue
        if layer.id in by_id:
            first = by_id[layer.id].layer
            ctx.report("IR060", f"id {layer.id} is also the id of {first.label} at line {first.line}; "
                                f"OpenVINO keeps only this later layer", layer=layer, found=layer.id)
        by_id[layer.id] = fact
    return by_id


def _port_index(ports: list, port_id: str | None) -> int | None:
    """Position of the port with this id, or None."""
    for index, port in enumerate(ports):
        if port.id == port_id:
            return index
    return None


def _end(edge: Edge, role: str) -> str:
    """One end of an edge as it is written: ``6:0``."""
    return f"{edge.from_layer}:{edge.from_port}" if role == "from" else f"{edge.to_layer}:{edge.to_port}"


def _report_edge(ctx: Context, code: str, edge: Edge, consumer: LayerFacts | None, message: str,
                 token: str = "<edge", **values) -> None:
    """A finding about an edge, placed at its consumer: the layer and input port it feeds (as the
    edge names them, even when no such layer or port exists), the edge's line (at ``token``: an
    attribute of it the finding is about), its producer in the message."""
    layer = consumer.layer.label if consumer is not None else f"layer {edge.to_layer}"
    ctx.report(code, f"{layer} input port {edge.to_port}: {message}", line=edge.line, token=token, edge=edge,
               layer_id=edge.to_layer, port_id=edge.to_port, **values)


def _check_edge_ids(ctx: Context, edge: Edge, consumer: LayerFacts | None) -> bool:
    """IR059 for each id an edge writes that is not one (OpenVINO's reader refuses the file); whether any."""
    said = False
    for name in ("from-layer", "from-port", "to-layer", "to-port"):
        written = getattr(edge, name.replace("-", "_"))
        if written is not None and read_id(written) is None:
            _report_edge(ctx, "IR059", edge, consumer, f"the edge {_end(edge, 'from')} -> {_end(edge, 'to')}: {name} "
                                                       f"{quoted(written, 40)} is not an id: OpenVINO's reader takes "
                                                       f"a decimal integer from 0 to 2**63-1 only, and refuses the "
                                                       f"file",
                         token=f"{name}=", attribute=name, expected="an integer from 0 to 2**63-1", found=written)
            said = True
    return said


def _edge_ends_reported(ctx: Context, edge: Edge, by_id: dict[str, LayerFacts]):
    """Resolve an edge with a bad end: report the first one, in from, to order."""
    ends = []
    consumer = by_id.get(edge.to_layer) if edge.to_layer is not None else None
    for role, layer_id, port_id, side in (("from", edge.from_layer, edge.from_port, "output"),
                                          ("to", edge.to_layer, edge.to_port, "input")):
        other = _end(edge, "to" if role == "from" else "from")
        if not all(read_id(written) is not None for written in (layer_id, port_id) if written is not None):
            return None  # IR059 said it, not again as a missing layer or port
        fact = by_id.get(layer_id) if layer_id is not None else None
        if fact is None:
            _report_edge(ctx, "IR061", edge, consumer, f"the edge {_end(edge, 'from')} -> {_end(edge, 'to')} "
                                                       f"names {role}-layer {layer_id!r}, and no layer has this id",
                         found=layer_id)
            return None
        ports = fact.layer.outputs if side == "output" else fact.layer.inputs
        index = _port_index(ports, port_id)
        if index is None:
            wrong = fact.layer.port(port_id) if port_id is not None else None
            hint = f" (port {port_id} is an {wrong[0]} port)" if wrong else ""
            _report_edge(ctx, "IR062", edge, consumer, f"the edge {_end(edge, 'from')} -> {_end(edge, 'to')} names "
                                                       f"{role}-port {port_id!r}, but {fact.layer.label} has no "
                                                       f"{side} port with this id{hint} (other end {other})",
                         expected=f"an {side} port of layer {layer_id}", found=port_id)
            return None
        ends.append((fact, index))
    return ends


def _check_agreement(ctx: Context, edge: Edge, producer: LayerFacts, out_index: int,
                     consumer: LayerFacts, in_index: int) -> None:
    source, target = producer.layer.outputs[out_index], consumer.layer.inputs[in_index]
    made, taken = producer.output_dims[out_index], consumer.input_dims[in_index]
    if made is not None and taken is not None and made != taken:  # equal dims agree: the usual case, quickly
        if len(made) != len(taken) or not all(dims_compatible(a, b) for a, b in zip(made, taken)):
            _report_edge(ctx, "IR063", edge, consumer, f"declares {format_shape(taken)}, its producer "
                                                       f"{producer.layer.label} port {source.id} declares "
                                                       f"{format_shape(made)}",
                         expected=format_shape(made), found=format_shape(taken))
    if source.precision == target.precision:
        return
    a, b = element_types.from_text(source.precision), element_types.from_text(target.precision)
    if a is not None and b is not None and a != b:
        _report_edge(ctx, "IR064", edge, consumer, f"precision is {target.precision}, its producer "
                                                   f"{producer.layer.label} port {source.id} gives {source.precision}",
                     expected=source.precision, found=target.precision)


def _check_unconnected(ctx: Context, facts: list[LayerFacts], fed: dict) -> None:
    for fact in facts:
        layer = fact.layer
        for index, port in enumerate(layer.inputs):
            if layer.id is not None and (layer.id, port.id) not in fed:
                name = fact.spec.inputs[index].name if fact.spec and index < len(fact.spec.inputs) else None
                ctx.report("IR066", "no edge feeds this input", layer=layer, port=port, port_name=name)


def _check_cycles(ctx: Context, by_id: dict[str, LayerFacts], successors: dict[str, list[Edge]]) -> None:
    indegree = dict.fromkeys(by_id, 0)
    for edges in successors.values():  # an edge repeated between two layers counts each time, both ways
        for edge in edges:
            indegree[edge.to_layer] += 1
    queue = deque(layer_id for layer_id, degree in indegree.items() if degree == 0)
    while queue:
        for edge in successors.get(queue.popleft(), ()):
            indegree[edge.to_layer] -= 1
            if indegree[edge.to_layer] == 0:
                queue.append(edge.to_layer)
    stuck = {layer_id for layer_id, degree in indegree.items() if degree > 0}
    # what is left also holds layers downstream of a cycle: peel off those that feed nothing left
    while True:
        tails = {n for n in stuck if all(e.to_layer not in stuck for e in successors.get(n, ()))}
        if not tails:
            break
        stuck -= tails
    if not stuck:
        return
    order = sorted(stuck, key=lambda n: (len(n), n))
    closing = _closing_edge(order[0], stuck, successors)
    consumer = by_id[closing.to_layer].layer
    port = next((p for p in consumer.inputs if p.id == closing.to_port), None)
    ctx.report("IR065", f"is on a cycle through layers {', '.join(order)}; the edge from "
                        f"{_end(closing, 'from')} (line {closing.line}) into this port closes it",
               layer=consumer, port=port, port_id=closing.to_port, found=",".join(order))


def _closing_edge(start: str, stuck: set[str], successors: dict[str, list[Edge]]) -> Edge:
    """The edge that closes a cycle: the first that a depth-first walk from ``start``, through
    the layers on cycles, takes back to a layer on its current path."""
    on_path, done = {start}, set()
    stack = [(start, iter(successors.get(start, ())))]
    while stack:
        node, edges = stack[-1]
        for edge in edges:
            target = edge.to_layer
            if target in on_path:
                return edge
            if target in stuck and target not in done:
                on_path.add(target)
                stack.append((target, iter(successors.get(target, ()))))
                break
        else:
            stack.pop()
            on_path.discard(node)
            done.add(node)
    raise IrtoolBug("layers left by the topological sort hold no cycle")


def _check_reachability(ctx: Context, by_id: dict[str, LayerFacts], predecessors: dict[str, list[str]],
                        body: bool = False) -> None:
    results = [layer_id for layer_id, fact in by_id.items() if fact.layer.type == "Result"]
    if not results and body:
        return
    if not results:  # an empty net too: OpenVINO reads it as a model with no outputs, which computes nothing
        ctx.report("IR069", "the net has no Result layer; OpenVINO reads it as a model with no outputs, and "
                            "drops every layer but its Parameters: it computes nothing, and irtool run refuses it")
        return
    alive, queue = set(results), deque(results)
    while queue:
        for source in predecessors.get(queue.popleft(), ()):
            if source not in alive:
                alive.add(source)
                queue.append(source)
    for layer_id, fact in by_id.items():
        if layer_id not in alive:
            if fact.layer.type == "Parameter":
                ctx.report("IR067", "no Result can be reached from this Parameter; it stays an input of the "
                                    "model that nothing reads", layer=fact.layer)
            else:
                ctx.report("IR067", "no Result can be reached from this layer; OpenVINO drops it silently",
                           layer=fact.layer)
