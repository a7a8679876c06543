"""The subgraphs of an ONNX graph (If's branches, Loop's and Scan's bodies) and the nodes in them.

A node inside a subgraph is placed by its path from the main graph, ``3/then_branch/0`` (node
0 of the then_branch of main-graph node 3), and by the containers around it, outermost first,
each with the attribute that holds the node's graph.  The walks are iterative: a deep nesting
costs no stack.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import onnx

LOOPS = ("Loop", "Scan")  # containers that run their body once per iteration


@dataclass(frozen=True)
class Scope:
    """One container around a node: the container node and the attribute holding the node's graph."""

    node: onnx.NodeProto
    attribute: str  # "then_branch", "else_branch", "body"

    @property
    def label(self) -> str:
        """``If 'outer'`` (a container without a name by its first output: ``If -> y``)."""
        if self.node.name:
            return f"{self.node.op_type} '{self.node.name}'"
        return f"{self.node.op_type} -> {next((n for n in self.node.output if n), '')}"

    @property
    def loops(self) -> bool:
        return self.node.op_type in LOOPS

    def describe(self) -> str:
        return f"{self.attribute} of {self.label}"


@dataclass(frozen=True)
class Placed:
    """A node of a graph or of one of its subgraphs, at any depth."""

    index: int  # in its own graph's node list
    path: str  # "3/then_branch/0"; the index for a node of the main graph
    node: onnx.NodeProto
    scope: tuple[Scope, ...] = ()  # the containers around it, outermost first


def subgraphs(node: onnx.NodeProto) -> list[tuple[str, onnx.GraphProto]]:
    """The graphs a node holds in its attributes (If's branches, Loop's and Scan's body), named."""
    found = []
    for attribute in node.attribute:
        if attribute.type == onnx.AttributeProto.GRAPH:
            found.append((attribute.name, attribute.g))
        elif attribute.type == onnx.AttributeProto.GRAPHS:
            found += [(f"{attribute.name}[{k}]", graph) for k, graph in enumerate(attribute.graphs)]
    return found


def graphs(graph: onnx.GraphProto) -> list[onnx.GraphProto]:
    """A graph and every subgraph in it, at any depth."""
    found, pending = [], [graph]
    while pending:
        current = pending.pop()
        found.append(current)
        pending += [sub for node in current.node for _, sub in subgraphs(node)]
    return found


def placed_nodes(graph: onnx.GraphProto) -> list[Placed]:
    """Every node of a graph and of its subgraphs, with its place, the main graph's first, then
    each subgraph's in breadth-first order."""
    found: list[Placed] = []
    pending: deque[tuple[str, tuple[Scope, ...], onnx.GraphProto]] = deque([("", (), graph)])
    while pending:
        prefix, scope, current = pending.popleft()
        for index, node in enumerate(current.node):
            found.append(Placed(index, f"{prefix}{index}", node, scope))
            pending += [(f"{prefix}{index}/{name}/", scope + (Scope(node, name),), sub)
                        for name, sub in subgraphs(node)]
    return found
