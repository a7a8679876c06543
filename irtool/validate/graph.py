"""Graph checks of a <net>: layer ids, edges, port agreement, cycles, connectivity."""
from __future__ import annotations

from collections import defaultdict, deque

from irtool import element_types
from irtool.ir import Edge, Layer
from irtool.shapes import dims_compatible, format_shape
from irtool.validate.context import Context, LayerFacts


def check_graph(ctx: Context, facts: list[LayerFacts]) -> None:
    by_id = _unique_layers(ctx, facts)
    fed: dict[tuple[str, str], Edge] = {}
    successors: dict[str, set[str]] = defaultdict(set)
    for edge in ctx.model.edges:
        ends = _edge_ends(ctx, edge, by_id)
        if ends is None:
            continue
        (producer, out_index), (consumer, in_index) = ends
        key = (edge.to_layer, edge.to_port)
        if key in fed:
            ctx.report("IR068", f"input port {edge.to_port} of layer {edge.to_layer} is already fed by "
                                f"the edge at line {fed[key].line}", line=edge.line, token="<edge",
                       found=f"{edge.from_layer}:{edge.from_port}")
        else:
            fed[key] = edge
        successors[edge.from_layer].add(edge.to_layer)
        source, target = producer.layer.outputs[out_index], consumer.layer.inputs[in_index]
        if (source.precision != target.precision
                or producer.output_dims[out_index] != consumer.input_dims[in_index]):  # else they agree
            _check_agreement(ctx, edge, producer, out_index, consumer, in_index)
    _check_unconnected(ctx, facts, fed)
    _check_cycles(ctx, by_id, successors)
    _check_reachability(ctx, by_id, successors)


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


def _edge_ends(ctx: Context, edge: Edge, by_id: dict[str, LayerFacts]):
    """Resolve an edge to ((producer facts, output index), (consumer facts, input index))."""
    producer = by_id.get(edge.from_layer) if edge.from_layer is not None else None
    if producer is not None:
        out_index = _port_index(producer.layer.outputs, edge.from_port)
        consumer = by_id.get(edge.to_layer) if edge.to_layer is not None else None
        if out_index is not None and consumer is not None:
            in_index = _port_index(consumer.layer.inputs, edge.to_port)
            if in_index is not None:
                return (producer, out_index), (consumer, in_index)
    return _edge_ends_reported(ctx, edge, by_id)


def _port_index(ports: list, port_id: str | None) -> int | None:
    for index, port in enumerate(ports):
        if port.id == port_id:
            return index
    return None


def _edge_ends_reported(ctx: Context, edge: Edge, by_id: dict[str, LayerFacts]):
    """_edge_ends for an edge with a bad end: reports the first one, in from, to order."""
    ends = []
    for role, layer_id, port_id, side in (("from", edge.from_layer, edge.from_port, "output"),
                                          ("to", edge.to_layer, edge.to_port, "input")):
        fact = by_id.get(layer_id) if layer_id is not None else None
        if fact is None:
            ctx.report("IR061", f"edge {role}-layer={layer_id!r}: no layer has this id", line=edge.line,
                       token="<edge", found=layer_id)
            return None
        ports = fact.layer.outputs if side == "output" else fact.layer.inputs
        index = next((i for i, p in enumerate(ports) if p.id == port_id), None)
        if index is None:
            other = fact.layer.port(port_id) if port_id is not None else None
            hint = f" (port {port_id} is an {other[0]} port)" if other else ""
            ctx.report("IR062", f"edge {role}-port={port_id!r}: {fact.layer.label} has no {side} port "
                                f"with this id{hint}", line=edge.line, token="<edge",
                       expected=f"an {side} port of layer {layer_id}", found=port_id)
            return None
        ends.append((fact, index))
    return ends


def _check_agreement(ctx: Context, edge: Edge, producer: LayerFacts, out_index: int,
                     consumer: LayerFacts, in_index: int) -> None:
    source, target = producer.layer.outputs[out_index], consumer.layer.inputs[in_index]
    where = f"edge {producer.layer.id}:{source.id} -> {consumer.layer.id}:{target.id}"
    made, taken = producer.output_dims[out_index], consumer.input_dims[in_index]
    if made is not None and taken is not None and made != taken:  # equal dims agree: the usual case, quickly
        if len(made) != len(taken) or not all(dims_compatible(a, b) for a, b in zip(made, taken)):
            ctx.report("IR063", f"{where}: the producer declares {format_shape(made)}, the consumer "
                                f"{format_shape(taken)}", line=edge.line, token="<edge",
                       expected=format_shape(made), found=format_shape(taken))
    if source.precision == target.precision:
        return
    a, b = element_types.from_text(source.precision), element_types.from_text(target.precision)
    if a is not None and b is not None and a != b:
        ctx.report("IR064", f"{where}: the producer's precision is {source.precision}, the consumer's "
                            f"{target.precision}", line=edge.line, token="<edge",
                   expected=source.precision, found=target.precision)


def _check_unconnected(ctx: Context, facts: list[LayerFacts], fed: dict) -> None:
    for fact in facts:
        layer = fact.layer
        for index, port in enumerate(layer.inputs):
            if layer.id is not None and (layer.id, port.id) not in fed:
                name = fact.spec.inputs[index].name if fact.spec and index < len(fact.spec.inputs) else None
                ctx.report("IR066", "no edge feeds this input", layer=layer, port=port, port_name=name)


def _check_cycles(ctx: Context, by_id: dict[str, LayerFacts], successors: dict[str, set[str]]) -> None:
    indegree = {layer_id: 0 for layer_id in by_id}
    for source, targets in successors.items():
        for target in targets:
            indegree[target] += 1
    queue = deque(layer_id for layer_id, degree in indegree.items() if degree == 0)
    while queue:
        for target in successors.get(queue.popleft(), ()):
            indegree[target] -= 1
            if indegree[target] == 0:
                queue.append(target)
    stuck = {layer_id for layer_id, degree in indegree.items() if degree > 0}
    # what is left also holds layers downstream of a cycle: peel off those that feed nothing left
    while True:
        tails = {n for n in stuck if not (successors.get(n, set()) & stuck)}
        if not tails:
            break
        stuck -= tails
    stuck = sorted(stuck, key=lambda n: (len(n), n))
    if stuck:
        first = by_id[stuck[0]].layer
        ctx.report("IR065", f"is on a cycle through layers {', '.join(stuck)}", layer=first,
                   found=",".join(stuck))


def _check_reachability(ctx: Context, by_id: dict[str, LayerFacts], successors: dict[str, set[str]]) -> None:
    results = [layer_id for layer_id, fact in by_id.items() if fact.layer.type == "Result"]
    if not results:
        if by_id:
            ctx.report("IR069", "the net has no Result layer; OpenVINO has no output to keep")
        return
    predecessors: dict[str, set[str]] = defaultdict(set)
    for source, targets in successors.items():
        for target in targets:
            predecessors[target].add(source)
    alive, queue = set(results), deque(results)
    while queue:
        for source in predecessors.get(queue.popleft(), ()):
            if source not in alive:
                alive.add(source)
                queue.append(source)
    for layer_id, fact in by_id.items():
        if layer_id not in alive:
            ctx.report("IR067", "no Result can be reached from this layer; OpenVINO drops it silently",
                       layer=fact.layer)
