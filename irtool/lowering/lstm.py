"""An LSTM cell written out in plain ops: ``c_t = f(F)*c_{t-1} + f(I)*g(C)`` (an Add of two
Multiplies, one of them of two activations) and ``h_t = f(O)*h(c_t)`` among c_t's readers, as
Keras, TFLite, tf2onnx, TensorFlow 1 and ONNX exporters write it (and OpenVINO's own LSTMCell
decomposition)."""
from __future__ import annotations

from typing import Any, Callable

from irtool.lowering.cells import (
    ACTIVATION_OPS,
    Candidate,
    Refusal,
    activation_of,
    argument,
    checked,
    function,
    same_function,
)
from irtool.lowering.gate_sums import Reader, merged
from irtool.lowering.graph import label, last_dim, op_of, operands, root


def lstm(add: Any, reader: Reader, varying: Callable[[Any], bool]) -> Candidate | Refusal | None:
    """An LSTM whose c_t is ``add``: f(F)*c_{t-1} + f(I)*g(C)."""
    products = [op_of(value, "Multiply") for value in operands(add)]
    if None in products:
        return None
    acts = [[_gate_activation(value) for value in operands(m)] for m in products]
    both = [k for k in (0, 1) if None not in acts[k]]
    one = [k for k in (0, 1) if acts[k].count(None) == 1]
    if len(both) != 1 or len(one) != 1:
        return None
    forget, update = products[one[0]], products[both[0]]
    f_act = next(a for a in acts[one[0]] if a is not None)
    c_prev = next(v for v, a in zip(operands(forget), acts[one[0]]) if a is None)
    first, second = acts[both[0]]
    i_act, g_act = (first, second) if same_function(first, f_act) else (second, first)
    parts = (label(forget), label(update), label(add))
    c_out = add.output(0)
    found = output_gates(c_out, f_act)
    if not found:
        weighted = any(target.get_node().get_type_name() == "MatMul"  # (an LSTM's c is never: its h is)
                       for value in (c_out, c_prev) for target in value.get_target_inputs())
        return Refusal("LSTM", f"its c_t ({label(add)}) is not read by an activation that an output gate "
                               f"{f_act.get_type_name()} multiplies" + (
                                   ": it is a state that weights multiply (a GRU's h_t = z*h + "
                                   "(1-z)*n with 1-z a gate of its own, sigmoid(-a), has this form; a GRU is "
                                   "matched where 1-z is written as such)" if weighted else ""), parts, c_out)
    if len(found) > 1:
        return Refusal("LSTM", f"its c_t ({label(add)}) is read by {len(found)} products that each could be its "
                               f"h_t = o(O) * h(c_t) ({', '.join(sorted(label(match[2]) for match in found))}): "
                               f"cannot tell which one is", parts, c_out)
    h_act, o_act, h_op = found[0]
    parts += (label(h_act), label(h_op))
    if not same_function(i_act, f_act):
        return Refusal("LSTM", f"its input gate's activation ({label(i_act)}) is not its forget gate's "
                               f"({label(f_act)})", parts, h_op.output(0))
    kinds = [f_act, g_act, h_act]
    unsupported = [a for a in kinds if function(a) is None]
    if unsupported:
        return Refusal("LSTM", f"{label(unsupported[0])} is not an activation irtool's reference computes "
                               f"(sigmoid, tanh, relu, hardsigmoid)", parts, h_op.output(0))
    hidden = last_dim(c_out)
    gates = {}
    for name, act in (("f", f_act), ("i", i_act), ("c", g_act), ("o", o_act)):
        gates[name] = reader.sum(argument(act))
        parts = merged(parts, (label(act),) + gates[name].ops)
    return checked(Candidate("LSTM", hidden, tuple(function(a) for a in kinds), gates,
                              (h_op.output(0), c_out), parts, c=c_prev), varying, {"c_{t-1}": c_prev})


def _gate_activation(value: Any) -> Any | None:
    """The activation computing ``value`` where it is a gate's; None where it is of a cell state (an Add of
    two products: c_{t-1} passed through a function on its way in, as a model clamping it between steps)."""
    act = activation_of(value)
    if act is None or act.get_input_size() == 0:
        return act
    argument = root(act.input_value(0)).get_node()
    products = [op_of(v, "Multiply") for v in operands(argument)] if argument.get_type_name() == "Add" else [None]
    if all(product is not None and any(activation_of(v) is not None for v in operands(product))
           for product in products):  # f*c + i*g, not a gate's sum (elementwise weights: a*x + b*h)
        return None
    return act


def output_gates(c_out: Any, like: Any) -> list[tuple[Any, Any, Any]]:
    """Each (h(c_t), the output gate's activation (the function of ``like``, the forget gate's), h_t's
    Multiply) among the readers of c_t, but for the next step's forget product f(F)*g(c_t) (an operand
    of a sum with a product of two activations: the next step's c_t, as where a model clamps its cell
    state between steps).  All of them, whatever order OpenVINO lists c_t's readers in: more than one
    is a cell that cannot be told, never the first one found."""
    found = []
    for target in c_out.get_target_inputs():
        act = target.get_node()
        if act.get_type_name() not in ACTIVATION_OPS:
            continue
        for reader in act.output(0).get_target_inputs():
            product = reader.get_node()
            if product.get_type_name() != "Multiply" or _forget_product(product):
                continue
            other = [activation_of(v) for v in operands(product) if root(v).get_node() is not act and
                     activation_of(v) is not None and same_function(activation_of(v), like)]
            if other and all(match[2] is not product for match in found):
                found.append((act, other[0], product))
    return found


def _forget_product(product: Any) -> bool:
    """Whether ``product`` is added to a product of two gates' activations: the f(F)*c_{t-1} of a next step's
    c_t (not h_t added to a sum, whose other product's h(c_t) is of a cell state)."""
    for target in product.output(0).get_target_inputs():
        add = target.get_node()
        if add.get_type_name() != "Add":
            continue
        others = [op_of(value, "Multiply") for value in operands(add) if value.get_node() is not product]
        if any(other is not None and all(_gate_activation(v) is not None for v in operands(other)) for other in others):
            return True
    return False
