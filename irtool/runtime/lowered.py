"""LSTM, GRU and RNN cells that a converter lowered to plain ops, recognized by their dataflow.

Recognition is by the graph's structure alone, never by what the ops compute.  Each pattern is
anchored on a cell's state update and read back from there:

- LSTM: ``c_t = f(F)*c_{t-1} + f(I)*g(C)`` (an Add of two Multiplies, one of them two activations)
  and ``h_t = f(O)*h(c_t)``;
- GRU: ``h_t = z*h_{t-1} + (1-z)*n`` written as an Add of ``z*a`` and ``(1-z)*b``, or as
  ``(a-b)*z + b``, with ``z = f(Z)``, ``n = g(N)``, and a reset gate ``r = f(R)`` either inside
  ``N = X·Wn + r*(h·Rn + bn)`` (linear_before_reset) or on the state ``N = X·Wn + (r*h)·Rn``;
  ``h_t = z*n + (1-z)*h_{t-1}`` (the other convention) is the same cell with z's weights negated;
- RNN: ``h_t = f(X·W + h·R + b)`` whose h is the state carried to the next step (a body's back
  edge, or the next step of an unrolled chain: irtool.runtime.lowered_chains).

where each gate pre-activation (F, I, C, O, Z, R, N) is a sum of ``x·W``, ``h·R`` and constant
biases (irtool.runtime.gate_sums) and f, g, h are Sigmoid, Tanh or Relu.  A structure with an
LSTM's or a GRU's state update whose other parts do not fit (peepholes, another activation, a
term that is not a product by constant weights) is a :class:`Refusal`, with why.  A cell's
weights come out in OpenVINO's layout and gate order (LSTM f, i, c, o; GRU z, r, h), so it is
judged as an LSTMCell-4, GRUCell-3 or RNNCell-0 on the tensors the device computed: x_t, h_{t-1}
(and c_{t-1}) as the gate products and the update read them, h_t (and c_t) as the update makes them.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

import numpy as np

from irtool.runtime.gate_sums import Key, Reader, Sum, key, label, last_dim, root

SUPPORTED = {"Sigmoid": "sigmoid", "Tanh": "tanh", "Relu": "relu"}  # the activations OpenVINO's cells take
ACTIVATION_OPS = frozenset(SUPPORTED) | {"HardSigmoid", "Elu", "SoftSign", "Swish", "HSigmoid", "HSwish", "Gelu",
                                         "Clamp", "SoftPlus", "Mish", "Exp"}
CELL_TYPES = {"LSTM": ("LSTMCell", 4), "GRU": ("GRUCell", 3), "RNN": ("RNNCell", 0)}
GATES = {"LSTM": ("f", "i", "c", "o"), "GRU": ("z", "r", "h"), "RNN": ("h",)}  # OpenVINO's order


@dataclass(frozen=True)
class Candidate:
    """A cell's pattern matched, its input and state not told apart yet (at the top level that
    takes the steps around it)."""

    kind: str  # LSTM, GRU, RNN
    hidden_size: int
    activations: tuple[str, ...]
    gates: Mapping[str, Sum]  # by OpenVINO's gate letter; a GRU's "hr": h·Rn + bn of linear_before_reset
    outputs: tuple[Any, ...]  # h_t (and c_t)
    parts: tuple[str, ...]
    state: Any | None = None  # h_{t-1} where the update reads it (a GRU's interpolation)
    c: Any | None = None  # an LSTM's c_{t-1}, as its forget product reads it
    negated: frozenset[str] = frozenset()  # gates whose weights flip sign (a GRU's z of the other convention)
    reset: Key | None = None  # a GRU without linear_before_reset: the key of r*h, which Rn multiplies
    varying: tuple[tuple[str, Any, np.ndarray], ...] = ()  # (gate, tensor, columns): a bias computed per iteration

    @property
    def variables(self) -> dict[Key, Any]:
        """The tensors its gates multiply by weights (its input and state), by key."""
        found: dict[Key, Any] = {}
        for name, gate in self.gates.items():
            for k, term in gate.terms.items():
                if k != self.reset:
                    found.setdefault(k, term.value)
        return found

    @property
    def out_key(self) -> Key:
        return key(self.outputs[0])


@dataclass(frozen=True)
class Cell:
    """A recognized cell: what it is, its weights (OpenVINO's layout and gate order), and the tensors
    to capture."""

    kind: str
    hidden_size: int
    activations: tuple[str, ...]
    x: Any  # x_t as the gate product reads it
    h: Any | None  # h_{t-1} as the gate product reads it; None where OpenVINO folded a constant state's product
    c: Any | None  # an LSTM's c_{t-1}
    weights: tuple[np.ndarray, np.ndarray, np.ndarray]  # W, R, B
    outputs: tuple[Any, ...]  # h_t (and c_t)
    parts: tuple[str, ...]
    linear_before_reset: bool = False
    varying: tuple[tuple[int, Any, np.ndarray, float], ...] = ()  # (slot of B, tensor, its columns, sign): see Candidate
    stored: tuple[str | None, str | None] = (None, None)  # the integer type W and R are stored as, if one (Term.stored)

    @property
    def op(self) -> tuple[str, int]:
        return CELL_TYPES[self.kind]

    @property
    def attributes(self) -> dict[str, Any]:
        found: dict[str, Any] = {"hidden_size": self.hidden_size, "activations": list(self.activations), "clip": 0.0}
        if self.kind == "GRU":
            found["linear_before_reset"] = self.linear_before_reset
        return found

    def describe(self) -> str:
        """``LSTM cell lowered to plain ops (activations sigmoid, tanh, tanh): MatMul 'a', ...``."""
        extra = ", linear_before_reset" if self.linear_before_reset else ""
        return f"{self.kind} cell lowered to plain ops (activations {', '.join(self.activations)}{extra}): " \
               f"{', '.join(self.parts)}"


@dataclass(frozen=True)
class Refusal:
    """A structure with a cell's state update that does not fit the cell's pattern."""

    kind: str
    reason: str
    parts: tuple[str, ...]
    anchor: Any  # the output the update makes (what names it)


@dataclass(frozen=True)
class Context:
    """What a container tells recognition about its body: Parameters fed the same constant data at
    every iteration, and for each Parameter a loop feeds back, the key of the body tensor fed back."""

    fixed: Mapping[Key, np.ndarray] = field(default_factory=dict)
    carried: Mapping[Key, Key] = field(default_factory=dict)
    in_body: bool = False


def find_candidates(graph: Any, reader: Reader, in_body: bool = False) -> list[Candidate | Refusal]:
    """The cell patterns of one graph (not of its bodies), LSTMs and GRUs first, then the RNNs among
    the activations no other cell uses."""
    found: list[Candidate | Refusal] = []
    used: set[str] = set()
    varying = (lambda value: _varies_per_iteration(value)) if in_body else (lambda value: False)
    ops = list(graph.get_ordered_ops())
    for op in ops:
        if op.get_type_name() != "Add":
            continue
        match = _lstm(op, reader, varying) or _gru(op, reader, varying)
        if match is not None:
            found.append(match)
            used.update(match.parts)
    for op in ops:
        if op.get_type_name() in SUPPORTED and label(op) not in used:
            match = _rnn(op, reader)
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
        cells.append(resolve(found, state if state is not None else state_by_width(found), joined=joined))
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


def resolve(found: Candidate, state: Key | None, folded: bool = False,
            joined: dict[tuple, np.ndarray] | None = None) -> Cell | Refusal:
    """The cell of a candidate whose state is ``state`` (a key among its variables; a GRU's is known),
    with its weights in OpenVINO's layout and gate order; a Refusal where it cannot be told.
    ``folded``: its state is no variable (OpenVINO folded a constant state's product into its bias):
    its one variable is its input, its R zeros (the caller knows it from the steps after it).
    ``joined``: the weights already joined for other cells, by the memory of their parts (the steps
    of an unrolled chain share one constant: joined once, not per step)."""
    variables = found.variables
    if state is None and not folded:
        why = f"cannot tell its input from its state: {_named(variables)} are both {found.hidden_size} wide and " \
              f"no loop or next step carries either" if len(variables) == 2 else \
            f"its gates multiply {_named(variables)} by weights, which no loop or next step carries as its state"
        return Refusal(found.kind, why, found.parts, found.outputs[0])
    inputs = [k for k in variables if k != state]
    if len(inputs) != 1:
        return Refusal(found.kind, f"its gates multiply {len(inputs)} tensors besides its state, expected one input "
                                   f"({_named({k: variables[k] for k in inputs}) or 'none'})",
                       found.parts, found.outputs[0])
    x_key = inputs[0]
    width = next(g.terms[x_key].weight.shape[0] for g in found.gates.values() if x_key in g.terms)
    hidden = found.hidden_size
    ws, rs, bs = [], [], []
    for name in GATES[found.kind]:
        gate = found.gates[name]
        sign = np.float32(-1 if name in found.negated else 1)
        w = gate.terms[x_key].weight.T if x_key in gate.terms else np.zeros((hidden, width), np.float32)
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
    stored = tuple(next((g.terms[k].stored for g in found.gates.values() if k in g.terms and g.terms[k].stored), None)
                   for k in (x_key, state))
    return Cell(found.kind, hidden, found.activations, variables[x_key], h, found.c, weights, found.outputs,
                found.parts, "hr" in found.gates, varying, stored)


def _joined(parts: list[np.ndarray], dtype: Any, joined: dict[tuple, np.ndarray] | None) -> np.ndarray:
    """The gates' parts as one array, taken from ``joined`` where the same memory was joined before."""
    memo = tuple((p.__array_interface__["data"][0], p.shape, p.strides, p.dtype.str) for p in parts)
    if joined is not None and memo in joined:
        return joined[memo]
    array = np.ascontiguousarray(np.concatenate(parts).astype(dtype, copy=False))
    if joined is not None:
        joined[memo] = array
    return array


def _named(values: Mapping[Key, Any]) -> str:
    return " and ".join(label(root(value).get_node()) for value in values.values())


# ----------------------------------------------------------------------------- the patterns

def activation_of(value: Any) -> Any | None:
    """The activation op computing ``value`` (through layout ops), or None."""
    node = root(value).get_node()
    return node if node.get_type_name() in ACTIVATION_OPS else None


def operands(node: Any) -> list[Any]:
    return list(node.input_values())


def op_of(value: Any, kind: str) -> Any | None:
    node = root(value).get_node()
    return node if node.get_type_name() == kind else None


def _lstm(add: Any, reader: Reader, varying: Callable[[Any], bool]) -> Candidate | Refusal | None:
    """An LSTM whose c_t is ``add``: f(F)*c_{t-1} + f(I)*g(C)."""
    products = [op_of(value, "Multiply") for value in operands(add)]
    if None in products:
        return None
    acts = [[activation_of(value) for value in operands(m)] for m in products]
    both = [k for k in (0, 1) if None not in acts[k]]
    one = [k for k in (0, 1) if acts[k].count(None) == 1]
    if len(both) != 1 or len(one) != 1:
        return None
    forget, update = products[one[0]], products[both[0]]
    f_act = next(a for a in acts[one[0]] if a is not None)
    c_prev = next(v for v, a in zip(operands(forget), acts[one[0]]) if a is None)
    first, second = acts[both[0]]
    i_act, g_act = (first, second) if first.get_type_name() == f_act.get_type_name() else (second, first)
    parts = (label(forget), label(update), label(add))
    c_out = add.output(0)
    found = output_gate(c_out, f_act.get_type_name())
    if found is None:
        return Refusal("LSTM", f"its c_t ({label(add)}) is not read by an activation that an output gate "
                               f"{f_act.get_type_name()} multiplies", parts, c_out)
    h_act, o_act, h_op = found
    parts += (label(h_act), label(h_op))
    if i_act.get_type_name() != f_act.get_type_name():
        return Refusal("LSTM", f"its input gate's activation ({label(i_act)}) is not its forget gate's "
                               f"({label(f_act)})", parts, h_op.output(0))
    kinds = [f_act, g_act, h_act]
    unsupported = [a for a in kinds if a.get_type_name() not in SUPPORTED]
    if unsupported:
        return Refusal("LSTM", f"{label(unsupported[0])} is not an activation OpenVINO's LSTMCell takes "
                               f"(sigmoid, tanh, relu)", parts, h_op.output(0))
    hidden = last_dim(c_out)
    gates = {}
    for name, act in (("f", f_act), ("i", i_act), ("c", g_act), ("o", o_act)):
        gates[name] = reader.sum(act.input_value(0))
        parts = _with(parts, (label(act),) + gates[name].ops)
    return _checked(Candidate("LSTM", hidden, tuple(SUPPORTED[a.get_type_name()] for a in kinds), gates,
                              (h_op.output(0), c_out), parts, c=c_prev), varying, {"c_{t-1}": c_prev})


def op_type(activation: str) -> str:
    """The op computing an activation OpenVINO's cells name: sigmoid -> Sigmoid."""
    return next(op for op, name in SUPPORTED.items() if name == activation)


def output_gate(c_out: Any, kind: str) -> tuple[Any, Any, Any] | None:
    """(h(c_t), the output gate's activation, h_t's Multiply) among the readers of c_t."""
    for target in c_out.get_target_inputs():
        act = target.get_node()
        if act.get_type_name() not in ACTIVATION_OPS:
            continue
        for reader in act.output(0).get_target_inputs():
            product = reader.get_node()
            if product.get_type_name() != "Multiply":
                continue
            other = [activation_of(v) for v in operands(product) if root(v).get_node() is not act and
                     activation_of(v) is not None and activation_of(v).get_type_name() == kind]
            if other:
                return act, other[0], product
    return None


def _gru(add: Any, reader: Reader, varying: Callable[[Any], bool]) -> Candidate | Refusal | None:
    """A GRU whose h_t is ``add``: an interpolation z*a + (1-z)*b between h_{t-1} and n = g(N) whose z
    reads the input and the state (one gate alone over the state is a highway layer's, not a cell's)."""
    found = _interpolation(add)
    if found is None:
        return None
    z_act, a, b, parts = found
    a_act, b_act = activation_of(a), activation_of(b)
    if (a_act is None) == (b_act is None):
        return None
    flipped = a_act is not None  # h_t = z*n + (1-z)*h_{t-1}
    n_act, state = (a_act, b) if flipped else (b_act, a)
    state_key = key(state)
    z_sum = reader.sum(z_act.input_value(0))
    if set(z_sum.terms) == {state_key} or not z_sum.terms:
        return None
    h_out = add.output(0)
    n_sum = reader.sum(n_act.input_value(0))
    parts = _with(parts, (label(z_act),) + z_sum.ops + (label(n_act),) + n_sum.ops)
    if flipped and z_act.get_type_name() != "Sigmoid":
        return Refusal("GRU", f"its update weighs the candidate by z ({label(z_act)}), which only a sigmoid z turns "
                              f"into OpenVINO's convention (1 - sigmoid(a) = sigmoid(-a))", parts, h_out)
    gates: dict[str, Sum] = {"z": z_sum}
    r_act, reset, others = None, None, []
    for value, cols in n_sum.others:  # linear_before_reset: r*(h·Rn + bn) added whole
        product = op_of(value, "Multiply")
        acts = [activation_of(v) for v in operands(product)] if product is not None else []
        same = [j for j, act in enumerate(acts) if act is not None and act.get_type_name() == z_act.get_type_name()]
        if r_act is None and same and (cols == np.arange(n_sum.width)).all():
            r_act = acts[same[0]]
            gates["hr"] = reader.sum(operands(product)[1 - same[0]])
            parts = _with(parts, (label(product),) + gates["hr"].ops)
        else:
            others.append((value, cols))
    for k, term in n_sum.terms.items() if r_act is None else ():  # or (r*h)·Rn
        product = op_of(term.value, "Multiply")
        acts = [activation_of(v) for v in operands(product)] if product is not None else []
        if product is not None and state_key in [key(v) for v in operands(product)] and any(acts):
            r_act, reset = next(act for act in acts if act is not None), k
            parts = _with(parts, (label(product),))
            break
    if r_act is None:
        return Refusal("GRU", f"its candidate {label(n_act)} has no reset gate: neither r*(h·R + b) is added to its "
                              f"pre-activation nor r*h multiplied by weights", parts, h_out)
    gates["h"] = Sum(n_sum.width, n_sum.terms, n_sum.bias, tuple(others), n_sum.ops)
    gates["r"] = reader.sum(r_act.input_value(0))
    parts = _with(parts, (label(r_act),) + gates["r"].ops)
    odd = [act for act in (z_act, r_act, n_act) if act.get_type_name() not in SUPPORTED]
    if odd or r_act.get_type_name() != z_act.get_type_name():
        return Refusal("GRU", f"{label((odd or [r_act])[0])} is not an activation OpenVINO's GRUCell takes here "
                              f"(z and r share one of sigmoid, tanh, relu)", parts, h_out)
    if "hr" in gates and set(gates["hr"].terms) - {state_key}:
        return Refusal("GRU", "its reset gate multiplies a product of something other than its state", parts, h_out)
    if state_key in gates["h"].terms:
        return Refusal("GRU", f"its candidate {label(n_act)} adds h·R outside its reset gate", parts, h_out)
    activations = (SUPPORTED[z_act.get_type_name()], SUPPORTED[n_act.get_type_name()])
    return _checked(Candidate("GRU", n_sum.width, activations, gates, (h_out,), parts, state=state,
                              negated=frozenset({"z"}) if flipped else frozenset(), reset=reset), varying, {})


def _interpolation(add: Any) -> tuple[Any, Any, Any, tuple[str, ...]] | None:
    """(z's activation, a, b, the ops) where ``add`` computes z*a + (1-z)*b, written as
    ``z*a + (1-z)*b`` (any operand order) or ``(a-b)*z + b``; else None."""
    first, second = operands(add)
    for p, q in ((first, second), (second, first)):
        m1, m2 = op_of(p, "Multiply"), op_of(q, "Multiply")
        if m1 is not None and m2 is not None:
            for z, a in (operands(m1), operands(m1)[::-1]):
                z_act = activation_of(z)
                for minus, b in (operands(m2), operands(m2)[::-1]):
                    sub = op_of(minus, "Subtract")
                    if z_act is not None and sub is not None and is_one(sub.input_value(0)) and \
                            key(sub.input_value(1)) == key(z):
                        return z_act, a, b, (label(m1), label(sub), label(m2), label(add))
        if m1 is not None:
            for z, difference in (operands(m1), operands(m1)[::-1]):
                sub, z_act = op_of(difference, "Subtract"), activation_of(z)
                if z_act is not None and sub is not None and key(sub.input_value(1)) == key(q):
                    return z_act, sub.input_value(0), q, (label(sub), label(m1), label(add))
    return None


def is_one(value: Any) -> bool:
    from irtool.runtime.nodes import constant_data

    data = constant_data(root(value).get_node())
    return data is not None and data.size > 0 and bool((np.asarray(data) == 1).all())


def _rnn(act: Any, reader: Reader) -> Candidate | None:
    """An activation of x·W + h·R + b: an RNN cell if something carries its output to the next step."""
    if _products_added(act.input_value(0)) < 2:  # a dense layer's activation (most are): not read further
        return None
    gate = reader.sum(act.input_value(0))
    if gate.others or len(gate.terms) != 2 or gate.width != last_dim(act.output(0)):
        return None
    parts = (label(act),) + gate.ops
    return Candidate("RNN", gate.width, (SUPPORTED[act.get_type_name()],), {"h": gate}, (act.output(0),), parts)


def _products_added(value: Any, depth: int = 4) -> int:
    """How many MatMuls a tensor adds up, through Adds and layout ops, up to ``depth`` Adds deep."""
    node = root(value).get_node()
    kind = node.get_type_name()
    if kind == "MatMul":
        return 1
    if kind != "Add" or depth == 0:
        return 0
    return sum(_products_added(source, depth - 1) for source in node.input_values())


def _checked(found: Candidate, varying: Callable[[Any], bool], states: Mapping[str, Any]) -> Candidate | Refusal:
    """The candidate, or a Refusal naming the first term of a gate that is none of x·W, h·R, a bias (in a
    body, a bias may be computed per iteration from constants and the loop's counters)."""
    kept = []
    state_keys = {key(value): name for name, value in states.items()}
    for name, gate in found.gates.items():
        if gate.width != found.hidden_size:
            return Refusal(found.kind, f"gate {name} is {gate.width} wide, expected hidden_size {found.hidden_size}",
                           found.parts, found.outputs[0])
        for value, cols in gate.others:
            product = op_of(value, "Multiply")
            peephole = [state_keys[key(v)] for v in operands(product) if key(v) in state_keys] if product else []
            if peephole:
                return Refusal(found.kind, f"gate {name} adds {peephole[0]} times weights ({label(product)}): a "
                                           f"peephole, which OpenVINO's {CELL_TYPES[found.kind][0]} does not have",
                               found.parts, found.outputs[0])
            if not varying(value):
                return Refusal(found.kind, f"gate {name} adds {label(root(value).get_node())}, which is none of a "
                                           f"product of the input or state by constant weights, a constant bias, "
                                           f"or a bias computed per iteration", found.parts, found.outputs[0])
            kept.append((name, value, cols))
    if len(found.variables) > 2 or not found.variables:
        return Refusal(found.kind, f"its gates multiply {len(found.variables)} tensors by weights, expected its "
                                   f"input and its state", found.parts, found.outputs[0])
    if not kept:
        return found
    gates = {name: Sum(g.width, g.terms, g.bias, (), g.ops) for name, g in found.gates.items()}
    return Candidate(found.kind, found.hidden_size, found.activations, gates, found.outputs, found.parts, found.state,
                     found.c, found.negated, found.reset, tuple(kept))


def _varies_per_iteration(value: Any, limit: int = 32) -> bool:
    """Whether a body tensor is computed from constants and the loop's scalars alone (an iteration
    counter), so that it is a bias that may change per iteration: no tensor Parameter upstream."""
    pending, seen = [value.get_node()], 0
    while pending:
        node = pending.pop()
        seen += 1
        kind = node.get_type_name()
        if seen > limit or kind in ("Loop", "TensorIterator", "If"):
            return False
        if kind == "Parameter":
            shape = node.get_output_partial_shape(0)
            if shape.rank.is_dynamic or shape.rank.get_length() != 0:
                return False
        pending += [source.get_node() for source in node.input_values()]
    return True


def _with(parts: tuple[str, ...], more: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(parts + more))
