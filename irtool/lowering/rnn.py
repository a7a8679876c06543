"""An RNN cell written out in plain ops: ``h_t = f(X·W + h·R + b)``, any dense layer's shape until
something carries its output to the next step as h (a loop's back edge, the next step of an
unrolled chain), which :mod:`.recognize` and :mod:`.chains` look for."""
from __future__ import annotations

from typing import Any

from irtool.lowering.cells import Candidate, argument, function
from irtool.lowering.gate_sums import SLICES, SPLITS, Reader
from irtool.lowering.graph import label, last_dim, root


def rnn(act: Any, reader: Reader) -> Candidate | None:
    """An activation of x·W + h·R + b: an RNN cell if something carries its output to the next step."""
    if products_added(argument(act)) < 2:  # a dense layer's activation (most are): not read further
        return None
    gate = reader.sum(argument(act))
    if gate.others or len(gate.terms) != 2 or gate.width != last_dim(act.output(0)):
        return None
    parts = (label(act),) + gate.ops
    return Candidate("RNN", gate.width, (function(act),), {"h": gate}, (act.output(0),), parts)


def products_added(value: Any, depth: int = 4) -> int:
    """How many MatMuls a tensor adds up, through Adds and layout ops, up to ``depth`` Adds deep."""
    node = root(value).get_node()
    kind = node.get_type_name()
    if kind == "MatMul":
        return 1
    if kind in SLICES + SPLITS:  # a step's rows of a product hoisted out of the steps (torch.export)
        return products_added(node.input_value(0), depth)
    if kind != "Add" or depth == 0:
        return 0
    return sum(products_added(source, depth - 1) for source in node.input_values())
