"""Recognized lowered cells (irtool.lowering) as the nodes irtool judges.

In a body, each cell is a node of the body, judged at every iteration like a recurrent op
there (irtool.runtime.bodies).  At a model's top level a converter unrolls the recurrence: one
cell per step, each step's h_t (and c_t) the next one's state.  Those cells are linked into a
chain by that dataflow and judged as one node whose steps are its iterations: each of its
tensors (x_t, h_{t-1}, c_{t-1}, h_t, c_t) is stacked over the steps into one probed output, so
the judge sees a loop of as many iterations as steps.  A chain is one recurrence: its weights are
the ones most of its steps compute with; a step whose own differ (a weight changed in one step's
arithmetic) is judged against the chain's, fails there, and is told so.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from irtool.lowering.cells import CELL_TYPES, FUNCTION_OPS, Cell, Refusal
from irtool.lowering.chains import Chain
from irtool.lowering.graph import id_of, label, last_dim, zeros
from irtool.runtime.nodes import TOP_LEVEL, Feed, Lowered, RecurrentNode, dynamic_axes, generated_name
from irtool.specs import OpSpec, registry


def cell_spec(kind: str) -> OpSpec:
    spec = registry().get(*CELL_TYPES[kind])
    if spec is None:  # pragma: no cover - the specs ship with irtool
        from irtool.core.errors import IrtoolBug

        raise IrtoolBug(f"no spec for {CELL_TYPES[kind]}")
    return spec


def might_hold_cells(graph: Any) -> bool:
    """Whether a graph (or a body in it, at any depth) has an activation a cell could be built on."""
    from irtool.runtime.nodes import body_of

    for op in graph.get_ordered_ops():
        kind = op.get_type_name()
        if kind in FUNCTION_OPS:
            return True
        if kind == "If" and (might_hold_cells(op.get_then_body()) or might_hold_cells(op.get_else_body())):
            return True
        if kind in ("Loop", "TensorIterator") and body_of(op) is not None and might_hold_cells(body_of(op)):
            return True
    return False


def cell_name(kind: str, parts: Sequence[str], anchor: Any) -> str:
    """What a lowered cell is called: the longest ``/``-path its parts' names share (a Keras layer's
    ``sequential/lstm/while/lstm_cell``), else its kind and the name of the op making its h_t."""
    names = [name for part in parts if " '" in part
             for kind, name in [(part.split(" '", 1)[0], part.split(" '", 1)[1][:-1])]
             if not generated_name(name, kind)]  # an op OpenVINO added on the way (a Gemm's Multiply) says nothing
    shared = []
    for segments in zip(*(name.split("/") for name in names)):
        if len(set(segments)) != 1:
            break
        shared.append(segments[0])
    if shared and len(shared) < min(len(name.split("/")) for name in names):
        return "/".join(shared)
    return f"{kind}@{anchor.get_node().get_friendly_name()}"


def description(cell: Cell | Refusal, steps: Sequence[Cell] = (), around: Sequence[str] = ()) -> str:
    if isinstance(cell, Refusal):
        return f"looks like a lowered {cell.kind} cell: {', '.join(cell.parts)}"
    text = cell.describe()
    if len(steps) > 1:
        text += f"; unrolled over {len(steps)} steps, the last one's h_t {label(steps[-1].outputs[0].get_node())}"
    return "; ".join((text,) + tuple(around))


# ----------------------------------------------------------------------------- chains at the top level

def chain_node(chain: Chain, index: int, probe: Callable[[Any], int]) -> RecurrentNode:
    """One chain as one node of the probed copy (which this changes): its tensors stacked over the steps
    (a chain of one cell: as they are) and probed, its weights constant, or per step where steps differ."""
    first = chain.steps[0]
    spec = cell_spec(first.kind)
    count = len(chain.steps)
    hidden, width = first.hidden_size, first.weights[0].shape[1]
    outputs = [_stacked([cell.outputs[k] for cell in chain.steps], hidden) for k in range(len(spec.outputs))]
    # where each step reads the step before's output as it is (that is how most steps are linked), the
    # states read are the first step's, then the outputs but the last; where the model does something to
    # it on the way (a rounding, a projection: Chain.around), what each step read
    state = _state(first)
    tensors = [(_stacked([cell.x for cell in chain.steps], width), first.x),
               (_states_read(chain, state, outputs[0], lambda cell: cell.h, 0), state)]
    if first.kind == "LSTM":
        tensors.append((_states_read(chain, first.c, outputs[1], lambda cell: cell.c, 1), first.c))
    feeds = [Feed(port, probe=probe(value), dynamic=dynamic_axes(one)) for port, (value, one) in zip(spec.inputs, tensors)]
    for k, port in enumerate(spec.inputs[len(tensors):len(tensors) + 3]):
        arrays = [cell.weights[k] for cell in chain.steps]
        same = all(array.shape == arrays[0].shape and np.array_equal(array, arrays[0]) for array in arrays[1:])
        stored = first.stored[k] if k < 2 else None
        feeds.append(Feed(port, constant=arrays[0], stored=stored) if same else
                     Feed(port, constant=np.stack(arrays), stored=stored, shared=True))
    outputs = tuple(probe(value) for value in outputs)
    loops = (f"{count} unrolled steps",) if count > 1 else ()
    name = cell_name(first.kind, [part for cell in chain.steps for part in cell.parts], first.outputs[0])
    return RecurrentNode(index, name, spec, first.attributes, TOP_LEVEL, tuple(feeds), outputs, None, (), loops,
                         lowered=Lowered(description(first, chain.steps, chain.around), count if count > 1 else None))


def _states_read(chain: Chain, first: Any, stacked: Any, read: Callable[[Cell], Any], output: int) -> Any:
    """A state as each step of a chain read it (stacked): the first step's, then each step's output but
    the last where every step reads the one before's output itself, else each step's own read."""
    steps = chain.steps
    if len(steps) == 1:
        return _stacked([first], steps[0].hidden_size)
    if all(id_of(read(cell)) == id_of(before.outputs[output]) for before, cell in zip(steps, steps[1:])):
        return after(first, stacked)
    return _stacked([first] + [read(cell) for cell in steps[1:]], chain.steps[0].hidden_size)


def refusal_node(refusal: Refusal, index: int, where: str = TOP_LEVEL) -> RecurrentNode:
    """A structure that looks like a cell and is not recognized, as a node no one can judge (why, said)."""
    return RecurrentNode(index, cell_name(refusal.kind, refusal.parts, refusal.anchor), cell_spec(refusal.kind), {},
                         where, lowered=Lowered(description(refusal), refused=refusal.reason))


def _state(cell: Cell) -> Any:
    """h_{t-1} as the cell reads it; zeros where OpenVINO folded a constant state into the bias."""
    return cell.h if cell.h is not None else zeros(cell.x, cell.hidden_size)


def _stacked(values: Sequence[Any], width: int) -> Any:
    """Per-step tensors [batch, width] on a new leading axis: joined along the batch axis and reshaped,
    two ops whatever the step count (an Unsqueeze per step made compiling the probed copy of 100 steps
    take twice as long); one tensor as it is."""
    import openvino.opset8 as ops

    if len(values) == 1:  # as it is, but [batch, width] where a converter gave it [1, batch, width]
        rank = values[0].get_partial_shape().rank
        return values[0] if rank.is_static and rank.get_length() == 2 else \
            ops.reshape(values[0], ops.constant(np.array([-1, width], np.int64)), False).output(0)

    shape = ops.constant(np.array([len(values), -1, width], np.int64))
    return ops.reshape(ops.concat(values, 0), shape, False).output(0)


def after(first: Any, stacked: Any) -> Any:
    """``first`` [batch, width] then every step of ``stacked`` [steps, batch, width] but the last: what a
    state read at each step held where each step's is the output of the step before (a chain's, or a
    loop's Parameter it feeds back: OpenVINO's Loop hands each iteration what the one before left in
    its Result)."""
    import openvino.opset8 as ops

    zero, one = ops.constant(np.array([0], np.int64)), ops.constant(np.array([1], np.int64))
    before_last = ops.slice(stacked, zero, ops.constant(np.array([-1], np.int64)), one, zero)
    # the state's width from the steps where the first is given as a model input of dynamic dims
    width, rank = last_dim(first) or last_dim(stacked), first.get_partial_shape().rank
    # [batch, width] (PyTorch's states: [1, batch, width]) as one step of [steps, batch, width]
    leading = ops.unsqueeze(first, zero) if width is None or (rank.is_static and rank.get_length() == 2) else \
        ops.reshape(first, ops.constant(np.array([1, -1, width], np.int64)), False)
    return ops.concat([leading, before_last], 0).output(0)


# ----------------------------------------------------------------------------- cells in bodies

def cell_ports(cell: Cell) -> tuple[list[Any], tuple[int, ...], dict[int, str]]:
    """A body cell's input values in its op's port order (tensors of the body, weight arrays; a bias
    computed per iteration as a tensor built in the body), the ports whose value is the one most
    iterations share, and the integer type W and R are stored as, by port (Feed.stored)."""
    values: list[Any] = [cell.x, cell.h] + ([cell.c] if cell.kind == "LSTM" else []) + list(cell.weights)
    stored = {len(values) - 3 + k: kind for k, kind in enumerate(cell.stored) if kind}
    if not cell.varying:
        return values, (), stored
    values[-1] = _varying_bias(cell)
    return values, (len(values) - 1,), stored


def _varying_bias(cell: Cell) -> Any:
    """B at each iteration: the constant bias plus the per-iteration terms in their slots (each from a
    tensor's first row, the columns the gate takes of it)."""
    import openvino.opset8 as ops

    hidden = cell.hidden_size
    bias = cell.weights[2]
    slots: list[Any] = [None] * (len(bias) // hidden)
    for slot, value, cols, sign in cell.varying:
        rows = ops.reshape(value, ops.constant(np.array([-1, last_dim(value) or -1], np.int64)), False)
        row = ops.gather(rows, ops.constant(np.int64(0)), ops.constant(np.int64(0)))
        part = ops.gather(row, ops.constant(np.asarray(cols, np.int64)), ops.constant(np.int64(0)))
        part = ops.multiply(part, ops.constant(np.asarray(sign, bias.dtype))) if sign != 1 else part
        slots[slot] = part if slots[slot] is None else ops.add(slots[slot], part)
    pieces = [ops.constant(bias[k * hidden:(k + 1) * hidden]) if part is None else
              ops.add(ops.constant(bias[k * hidden:(k + 1) * hidden]), ops.convert(part, bias.dtype))
              for k, part in enumerate(slots)]
    return ops.concat(pieces, 0).output(0)

