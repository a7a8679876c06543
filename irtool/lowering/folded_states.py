"""The first step of an unrolled recurrence whose zero initial state a converter folded away.

TFLite's converter of a Keras layer with unroll=True computes the products of the zero states
itself and leaves the first step without them: an LSTM's without a forget product
(``c_1 = f(I)*g(C)``, ``h_1 = f(O)*h(c_1)``), a GRU's ``h_1 = (1-z)*n`` (its reset gate
multiplying only Rn's bias), an RNN's ``h_1 = f(X·W + b)``.  None of these is a cell's pattern
(:mod:`.lstm`, :mod:`.gru`, :mod:`.rnn`): each is read back from the second step, which reads its outputs as its
states, and is the cell from zero states (what the folded products multiplied is zeros).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from irtool.lowering.cells import Candidate, activation_of, argument, function
from irtool.lowering.gate_sums import Reader, Sum
from irtool.lowering.graph import Key, is_one, key, label, op_of, operands
from irtool.lowering.lstm import output_gates


def zero_state_step(after: Candidate, reader: Reader) -> tuple[Candidate, Key] | None:
    """The step before ``after`` from zero states a converter folded away (see the module), with the key of
    ``after``'s state; None where ``after``'s states are not made so."""
    if after.kind == "GRU":
        return _gru_step(after, reader)
    if after.kind == "RNN":  # h_1 = f(X·W + b): one product, of the input
        for k, value in after.variables.items():
            act = activation_of(value)
            gate = reader.sum(argument(act)) if act is not None else None
            if gate is not None and (function(act),) == after.activations and \
                    len(gate.terms) == 1 and not gate.others and gate.width == after.hidden_size:
                step = Candidate("RNN", after.hidden_size, after.activations, {"h": gate}, (act.output(0),),
                                 (label(act),) + gate.ops)
                return step, k
        return None
    if after.kind != "LSTM" or after.c is None:
        return None
    update = op_of(after.c, "Multiply")
    acts = [activation_of(value) for value in operands(update)] if update is not None else []
    if len(acts) != 2 or None in acts:
        return None
    i_act, g_act = acts if function(acts[0]) == after.activations[0] else acts[::-1]
    for k, value in after.variables.items():
        product = op_of(value, "Multiply")
        found = [match for match in output_gates(update.output(0), i_act) if match[2] is product] \
            if product is not None else []
        if len(found) != 1:  # the h_1 the step after reads as its state, among c_1's readers
            continue
        h_act, o_act, _ = found[0]
        if tuple(function(act) for act in (i_act, g_act, h_act)) != after.activations:
            return None
        gates = {name: reader.sum(argument(act)) for name, act in (("i", i_act), ("c", g_act), ("o", o_act))}
        gates["f"] = Sum(after.hidden_size, bias=np.zeros(after.hidden_size, np.float32))
        parts = tuple(dict.fromkeys(part for gate in gates.values() for part in gate.ops)) + \
            tuple(label(op) for op in (i_act, g_act, update, o_act, h_act, product))
        step = Candidate("LSTM", after.hidden_size, after.activations, gates, (product.output(0), update.output(0)),
                         parts)
        return (step, k) if not any(gate.others for gate in gates.values()) and len(step.variables) == 1 else None
    return None


def _gru_step(after: Candidate, reader: Reader) -> tuple[Candidate, Key] | None:
    update = op_of(after.state, "Multiply")
    if update is None or "hr" not in after.gates:
        return None
    for minus, n in (operands(update), operands(update)[::-1]):
        sub, n_act = op_of(minus, "Subtract"), activation_of(n)
        z_act = activation_of(sub.input_value(1)) if sub is not None and is_one(sub.input_value(0)) else None
        if z_act is None or n_act is None or (function(z_act), function(n_act)) != after.activations:
            continue
        n_sum = reader.sum(argument(n_act))
        resets = [(act, other) for value, cols in n_sum.others if (product := op_of(value, "Multiply")) is not None
                  and len(cols) == n_sum.width for act, other in (operands(product), operands(product)[::-1])
                  if activation_of(act) is not None and function(activation_of(act)) == after.activations[0]]
        if len(n_sum.others) != 1 or len(resets) != 1:
            return None
        r_act, rest = activation_of(resets[0][0]), reader.sum(resets[0][1])
        gates = {"z": reader.sum(argument(z_act)), "r": reader.sum(argument(r_act)),
                 "h": replace(n_sum, others=()), "hr": rest}
        parts = tuple(dict.fromkeys(part for gate in gates.values() for part in gate.ops)) + \
            tuple(label(op) for op in (z_act, r_act, n_act, sub, update))
        step = Candidate("GRU", after.hidden_size, after.activations, gates, (update.output(0),), parts)
        if rest.terms or any(gate.others for gate in gates.values()) or len(step.variables) != 1:
            return None
        return step, key(after.state)
    return None
