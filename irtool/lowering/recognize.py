"""The cells of one graph: each pattern's candidates (LSTMs and GRUs first, then the RNNs among the
activations no other cell uses), each one's state told from its input (by a loop's back edge, a
GRU's update, or the widths), and its weights joined in OpenVINO's layout and gate order."""
from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any, Mapping

import numpy as np

from irtool.lowering.cells import GATES, Candidate, Cell, Context, Refusal, function, named, varies_per_iteration
from irtool.lowering.gate_sums import Reader
from irtool.lowering.graph import Key, key, label, last_dim, root
from irtool.lowering.gru import gru
from irtool.lowering.lstm import lstm
from irtool.lowering.rnn import rnn


def find_candidates(graph: Any, reader: Reader, in_body: bool = False) -> list[Candidate | Refusal]:
    """The cell patterns of one graph (not of its bodies), LSTMs and GRUs first, then the RNNs among
    the activations no other cell uses."""
    found: list[Candidate | Refusal] = []
    used: set[str] = set()
    varying = (lambda value: varies_per_iteration(value)) if in_body else (lambda value: False)
    ops = list(graph.get_ordered_ops())
    for op in ops:
        if op.get_type_name() != "Add":
            continue
        match = lstm(op, reader, varying) or gru(op, reader, varying)
        if match is not None:
            found.append(match)
            used.update(match.parts)
    for op in ops:
        if function(op) is not None and label(op) not in used:
            match = rnn(op, reader)
            if match is not None:
                found.append(match)
    order = {label(op): k for k, op in enumerate(ops)}
    return [replace(match, parts=tuple(sorted(match.parts, key=lambda part: order.get(part, len(order)))))
            for match in found]


def find_cells(graph: Any, context: Context) -> list[Cell | Refusal]:
    """The cells of a body (or a graph whose cells each stand alone): each candidate's state told
    from its input by the loop's back edge, a GRU's update, or the widths."""
    reader = Reader(context.fixed)
    joined: dict[tuple, np.ndarray] = {}
    cells: list[Cell | Refusal] = []
    for found in find_candidates(graph, reader, context.in_body):
        if isinstance(found, Refusal):
            cells.append(found)
            continue
        state = state_by_carry(found, context.carried)
        if state is None and found.kind == "RNN":
            continue  # a Dense layer and its activation, not a recurrence: its output is carried nowhere
        if state is None:  # no loop carries it (an If's branch, a loop's cell of one iteration)
            state = state_by_width(found) or state_by_stream(found)
        cells.append(resolve(found, state, joined=joined))
    return cells


def state_by_carry(found: Candidate, carried: Mapping[Key, Key]) -> Key | None:
    """The variable a loop's back edge feeds with this cell's h_t (a GRU's from its update)."""
    if found.state is not None:
        return key(found.state)
    matches = [k for k in found.variables if carried.get(k) == found.out_key]
    return matches[0] if len(matches) == 1 else None


def state_by_width(found: Candidate) -> Key | None:
    """The one variable of hidden_size columns, where the other is not (the input's width differs)."""
    matches = [k for k, value in found.variables.items() if last_dim(value) == found.hidden_size]
    return matches[0] if len(matches) == 1 and len(found.variables) == 2 else None


MOVES = ("Reshape", "Squeeze", "Unsqueeze", "Convert", "StridedSlice", "Slice", "Split", "VariadicSplit", "Gather",
         "Transpose", "Concat", "Identity")  # ops that move data without computing on it


def state_by_stream(found: Candidate) -> Key | None:
    """The variable a streaming model passes in as its state: the one that model input's data reaches
    through data moves alone (a slice of it, reshaped) where the cell's h_t reaches, through data moves
    alone, a model output of that input's shape (the state in/out pair a streaming model returns to be
    fed back at its next call); None unless exactly one variable is so (an input would be the other
    cell's h_t or a layer's output, computed).  In a body (an If's branch, as Silero VAD's exports put
    their whole model in one) the body's Parameters and Results stand for the container's.  Shapes are
    compared as OpenVINO declares them, dynamic dims too (``[2,?,128]``: a dynamic batch)."""
    returned = _returned_shapes(found.outputs[0])
    matches = [k for k, value in found.variables.items()
               if last_dim(value) == found.hidden_size and (source := _moved_from(value)) is not None
               and source.get_type_name() == "Parameter" and _shape(source.output(0)) in returned]
    return matches[0] if len(matches) == 1 and len(found.variables) == 2 else None


def _moved_from(value: Any) -> Any | None:
    """The node whose data ``value`` is through data moves (each one's data its first input; a Concat's,
    its only one), or None."""
    node = value.get_node()
    for _ in range(32):
        if node.get_type_name() not in MOVES:
            return node
        if node.get_type_name() == "Concat" and node.get_input_size() != 1:
            return None
        node = node.input_value(0).get_node()
    return None


def _shape(value: Any) -> tuple[str, ...] | None:
    """A tensor's shape as OpenVINO declares it, each dim in words (``?`` for a dynamic one); None for
    a dynamic rank."""
    shape = value.get_partial_shape()
    return tuple(str(dim) for dim in shape) if shape.rank.is_static else None


def _returned_shapes(value: Any) -> set[tuple[str, ...]]:
    """The shapes (:func:`_shape`) of the model outputs ``value`` reaches through data moves alone."""
    shapes, pending, seen = set(), [value], 0
    while pending and seen < 256:
        current = pending.pop()
        seen += 1
        for target in current.get_target_inputs():
            node = target.get_node()
            if node.get_type_name() == "Result" and (shape := _shape(node.input_value(0))) is not None:
                shapes.add(shape)
            elif node.get_type_name() in MOVES:
                pending += list(node.outputs())
    return shapes


def resolve(found: Candidate, state: Key | None, folded: bool = False,
            joined: dict[tuple, np.ndarray] | None = None) -> Cell | Refusal:
    """The cell of a candidate whose state is ``state`` (a key among its variables; a GRU's is known),
    with its weights in OpenVINO's layout and gate order; a Refusal where it cannot be told.
    ``folded``: its state is no variable (OpenVINO folded a constant state's product into its bias):
    its one variable is its input, its R zeros (the caller knows it from the steps after it).
    ``joined``: the weights already joined for other cells, by the content of their parts (the steps
    of an unrolled chain share one constant: joined once, not per step)."""
    variables = found.variables
    if state is None and not folded:
        why = f"cannot tell its input from its state: {named(variables)} are both {found.hidden_size} wide, no " \
              f"loop or next step carries either, nor is one alone a model input the cell returns updated" \
            if len(variables) == 2 else \
            f"its gates multiply {named(variables)} by weights, which no loop or next step carries as its state"
        return Refusal(found.kind, why, found.parts, found.outputs[0])
    inputs = [k for k in variables if k != state]
    if not inputs:
        return Refusal(found.kind, "its gates multiply no tensor besides its state, expected an input",
                       found.parts, found.outputs[0])
    widths = [next(g.terms[k].weight.shape[0] for g in found.gates.values() if k in g.terms) for k in inputs]
    x, joined_from = _input(variables, inputs, widths)
    if x is None:
        return Refusal(found.kind, f"its gates multiply {named({k: variables[k] for k in inputs})} besides its "
                                   f"state, of shapes that do not join into one input", found.parts, found.outputs[0])
    width = sum(widths)
    hidden = found.hidden_size
    ws, rs, bs = [], [], []
    for name in GATES[found.kind]:
        gate = found.gates[name]
        sign = np.float32(-1 if name in found.negated else 1)
        w = np.concatenate([gate.terms[k].weight.T if k in gate.terms else np.zeros((hidden, size), np.float32)
                            for k, size in zip(inputs, widths)], axis=1)
        r_key = found.reset if name == "h" and found.reset is not None else state
        source = found.gates["hr"] if name == "h" and "hr" in found.gates else gate
        r = source.terms[r_key].weight.T if r_key in source.terms else np.zeros((hidden, hidden), np.float32)
        if w.shape != (hidden, width) or r.shape != (hidden, hidden):
            return Refusal(found.kind, f"gate {name}'s weights are {list(w.shape)} and {list(r.shape)}, expected "
                                       f"[{hidden}, {width}] and [{hidden}, {hidden}]", found.parts, found.outputs[0])
        ws.append(-w if name in found.negated else w)
        rs.append(-r if name in found.negated else r)
        bs.append(sign * gate.bias_or_zeros())
    if "hr" in found.gates:
        bs.append(found.gates["hr"].bias_or_zeros())
    dtype = ws[0].dtype if np.issubdtype(ws[0].dtype, np.floating) else np.float32
    weights = tuple(_joined(parts, dtype, joined if k < 2 else None) for k, parts in enumerate((ws, rs, bs)))
    h = None if folded else variables.get(state, found.state)
    order = GATES[found.kind] + (("hr",) if "hr" in found.gates else ())
    varying = tuple((order.index(name), value, cols, -1.0 if name in found.negated else 1.0)
                    for name, value, cols in found.varying)
    stored = tuple(next((g.terms[k].stored for k in keys for g in found.gates.values()
                         if k in g.terms and g.terms[k].stored), None) for keys in (inputs, [state]))
    rounded = tuple(dict.fromkeys(text for gate in found.gates.values() for text in gate.rounded))
    hoisted = tuple(dict.fromkeys(text for gate in found.gates.values() for text in gate.hoisted))
    return Cell(found.kind, hidden, found.activations, x, h, found.c, weights, found.outputs,
                found.parts, "hr" in found.gates, varying, stored, rounded, hoisted, joined_from)


def _input(variables: Mapping[Key, Any], inputs: list[Key], widths: list[int]) -> tuple[Any | None, tuple[str, ...]]:
    """The cell's input x_t: its one tensor besides the state, or the tensors its gates multiply besides the
    state joined on their last axis (a step's rows of hoisted products, irtool.lowering.cells.checked: the
    second layer of a bidirectional stack reads both directions of the first, its W theirs side by side)
    and what it was joined from; None where their shapes differ but in that axis."""
    if len(inputs) == 1:
        return variables[inputs[0]], ()
    values = [variables[k] for k in inputs]
    shapes = [value.get_partial_shape() for value in values]
    if any(shape.rank.is_dynamic or shape.rank.get_length() != shapes[0].rank.get_length() for shape in shapes) or \
            any(str(shape[-1]) not in (str(width), "?") for shape, width in zip(shapes, widths)) or \
            len({tuple(str(dim) for dim in list(shape)[:-1]) for shape in shapes}) != 1:
        return None, ()
    import openvino.opset8 as ops

    return ops.concat(values, -1).output(0), tuple(label(root(value).get_node()) for value in values)


def _joined(parts: list[np.ndarray], dtype: Any, joined: dict[tuple, np.ndarray] | None) -> np.ndarray:
    """The gates' parts as one array, taken from ``joined`` where the same content was joined before (by
    content: a memory address is no identity, a freed temporary's is handed to the next one)."""
    memo = tuple((p.shape, p.dtype.str, hashlib.blake2b(np.ascontiguousarray(p).tobytes(), digest_size=16).digest())
                 for p in parts)
    if joined is not None and memo in joined:
        return joined[memo]
    array = np.ascontiguousarray(np.concatenate(parts).astype(dtype, copy=False))
    if joined is not None:
        joined[memo] = array
    return array
