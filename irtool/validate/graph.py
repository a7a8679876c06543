"""Graph checks of a <net>: layer ids, edges, port agreement, cycles, connectivity."""
from __future__ import annotations

from collections import defaultdict, deque

from irtool import element_types
from irtool.ir import Edge
from irtool.shapes import dims_compatible, format_shape
from irtool.validate.context import Context, LayerFacts


def check_graph(ctx: Context, facts: list[LayerFacts]) -> None:
    by_id = _unique_layers(ctx, facts)
    fed: dict[tuple[str, str], Edge] = {}
    # layer id -> the layers it feeds, and that feed it (a pair repeats for each edge between them)
    successors: dict[str, list[str]] = defaultdict(list)
    predecessors: dict[str, list[str]] = defaultdict(list)
    find = by_id.get
    for edge in ctx.model.edges:
        # resolve the edge to (producer facts, output index), (consumer facts, input index)
        producer = find(edge.from_layer) if edge.from_layer is not None else None
        consumer = find(edge.to_layer) if edge.to_layer is not None else None
        out_index = _port_index(producer.layer.outputs, edge.from_port) if producer is not None else None
        in_index = _port_index(consumer.layer.inputs, edge.to_port) if consumer is not None else None
        if out_index is None or in_index is None:
            ends = _edge_ends_reported(ctx, edge, by_id)
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
        successors[edge.from_layer].append(edge.to_layer)
        predecessors[edge.to_layer].append(edge.from_layer)
        source, target = producer.layer.outputs[out_index], consumer.layer.inputs[in_index]
        if (source.precision != target.precision
                or producer.output_dims[out_index] != consumer.input_dims[in_index]):  # else they agree
            _check_agreement(ctx, edge, producer, out_index, consumer, in_index)
    _check_unconnected(ctx, facts, fed)
    _check_cycles(ctx, by_id, successors)
    _check_reachability(ctx, by_id, predecessors)


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


def _edge_ends_reported(ctx: Context, edge: Edge, by_id: dict[str, LayerFacts]):
    """Resolve an edge with a bad end: report the first one, in from, to order."""
    ends = []
    for role, layer_id, port_id, side in (("from", edge.from_layer, edge.from_port, "output"),
                                          ("to", edge.to_layer, edge.to_port, "input")):
        fact = by_id.get(layer_id) if layer_id is not None else None
        if fact is None:
            ctx.report("IR061", f"edge {role}-layer={layer_id!r}: no layer has this id", line=edge.line,
                       token="<edge", found=layer_id)
            return None
        ports = fact.layer.outputs if side == "output" else fact.layer.inputs
        index = _port_index(ports, port_id)
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


def _check_cycles(ctx: Context, by_id: dict[str, LayerFacts], successors: dict[str, list[str]]) -> None:
    indegree = dict.fromkeys(by_id, 0)
    for targets in successors.values():  # an edge repeated between two layers counts each time, both ways
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
        tails = {n for n in stuck if stuck.isdisjoint(successors.get(n, ()))}
        if not tails:
            break
        stuck -= tails
    stuck = sorted(stuck, key=lambda n: (len(n), n))
    if stuck:
        first = by_id[stuck[0]].layer
        ctx.report("IR065", f"is on a cycle through layers {', '.join(stuck)}", layer=first,
                   found=",".join(stuck))


def _check_reachability(ctx: Context, by_id: dict[str, LayerFacts], predecessors: dict[str, list[str]]) -> None:
    results = [layer_id for layer_id, fact in by_id.items() if fact.layer.type == "Result"]
    if not results:
        if by_id:
            ctx.report("IR069", "the net has no Result layer; OpenVINO has no output to keep")
        return
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
