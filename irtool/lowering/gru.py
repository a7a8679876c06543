"""A GRU cell written out in plain ops: ``h_t = z*a + (1-z)*b`` (or ``(a-b)*z + b``) between
h_{t-1} and the candidate n = g(N), with z = f(Z) and the reset gate r = f(R) either in
``N = X·Wn + r*(h·Rn + bn)`` (linear_before_reset: Keras's reset_after, PyTorch) or on the
state, ``N = X·Wn + (r*h)·Rn``; ``h_t = z*n + (1-z)*h_{t-1}`` (the other convention) is the same
cell with z's weights negated."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import numpy as np

from irtool.lowering.cells import Candidate, Refusal, activation_of, argument, checked, function, same_function
from irtool.lowering.gate_sums import Reader, Sum, merged
from irtool.lowering.graph import is_one, key, label, op_of, operands, root


def gru(add: Any, reader: Reader, varying: Callable[[Any], bool]) -> Candidate | Refusal | None:
    """A GRU whose h_t is ``add``: an interpolation z*a + (1-z)*b between h_{t-1} and n = g(N) whose z
    reads the input and the state (one gate alone over the state is a highway layer's, not a cell's)."""
    found = interpolation(add)
    if found is None:
        return None
    z_act, a, b, parts = found
    a_act, b_act = activation_of(a), activation_of(b)
    if (a_act is None) == (b_act is None):
        return None
    flipped = a_act is not None  # h_t = z*n + (1-z)*h_{t-1}
    n_act, state = (a_act, b) if flipped else (b_act, a)
    state_key = key(state)
    z_sum = reader.sum(argument(z_act))
    h_out = add.output(0)
    if not z_sum.terms:  # a gate whose products an op no sum reads hides (a gather across the batch): named
        broken = [node for value, _ in z_sum.others for node in [root(value).get_node()]
                  if node.get_input_size() and reader.sum(node.input_value(0)).terms]
        if broken:
            return Refusal("GRU", f"its update gate z reads its products through {label(broken[0])}, which is none "
                                  f"of a sum, a split or a slice of the last axis", (label(z_act), label(add)), h_out)
    if set(z_sum.terms) == {state_key} or not z_sum.terms:
        return None
    n_sum = reader.sum(argument(n_act))
    parts = merged(parts, (label(z_act),) + z_sum.ops + (label(n_act),) + n_sum.ops)
    if flipped and not symmetric(z_act):
        return Refusal("GRU", f"its update weighs the candidate by z ({label(z_act)}), which only a sigmoid z (or a "
                              f"hardsigmoid of beta 0.5) turns into OpenVINO's convention (1 - sigmoid(a) = "
                              f"sigmoid(-a))", parts, h_out)
    gates: dict[str, Sum] = {"z": z_sum}
    r_act, reset, others = None, None, []
    for value, cols in n_sum.others:  # linear_before_reset: r*(h·Rn + bn) added whole
        product = op_of(value, "Multiply")
        acts = [activation_of(v) for v in operands(product)] if product is not None else []
        same = [j for j, act in enumerate(acts) if act is not None and same_function(act, z_act)]
        if r_act is None and same and (cols == np.arange(n_sum.width)).all():
            r_act = acts[same[0]]
            gates["hr"] = reader.sum(operands(product)[1 - same[0]])
            parts = merged(parts, (label(product),) + gates["hr"].ops)
        else:
            others.append((value, cols))
    for k, term in n_sum.terms.items() if r_act is None else ():  # or (r*h)·Rn
        product = op_of(term.value, "Multiply")
        acts = [activation_of(v) for v in operands(product)] if product is not None else []
        if product is not None and state_key in [key(v) for v in operands(product)] and any(acts):
            r_act, reset = next(act for act in acts if act is not None), k
            parts = merged(parts, (label(product),))
            break
    if r_act is None:
        return Refusal("GRU", f"its candidate {label(n_act)} has no reset gate: neither r*(h·R + b) is added to its "
                              f"pre-activation nor r*h multiplied by weights", parts, h_out)
    gates["h"] = replace(n_sum, others=tuple(others))
    gates["r"] = reader.sum(argument(r_act))
    parts = merged(parts, (label(r_act),) + gates["r"].ops)
    odd = [act for act in (z_act, r_act, n_act) if function(act) is None]
    if odd or not same_function(r_act, z_act):
        return Refusal("GRU", f"{label((odd or [r_act])[0])} is not an activation irtool's reference computes here "
                              f"(z and r share one of sigmoid, tanh, relu, hardsigmoid)", parts, h_out)
    if "hr" in gates and set(gates["hr"].terms) - {state_key}:
        return Refusal("GRU", "its reset gate multiplies a product of something other than its state", parts, h_out)
    also = [name for name in ("z", "r") if reset is not None and reset in gates[name].terms]
    if also:  # OpenVINO's GRUCell multiplies r*h by Rn in the candidate alone
        return Refusal("GRU", f"its gate {also[0]} also multiplies the reset product r*h "
                              f"({label(gates['h'].terms[reset].value.get_node())}) by weights, which OpenVINO's "
                              f"GRUCell multiplies in its candidate alone", parts, h_out)
    if state_key in gates["h"].terms:
        return Refusal("GRU", f"its candidate {label(n_act)} adds h·R outside its reset gate", parts, h_out)
    activations = (function(z_act), function(n_act))
    return checked(Candidate("GRU", n_sum.width, activations, gates, (h_out,), parts, state=state,
                              negated=frozenset({"z"}) if flipped else frozenset(), reset=reset), varying, {})


def interpolation(add: Any) -> tuple[Any, Any, Any, tuple[str, ...]] | None:
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


def symmetric(z_act: Any) -> bool:
    """Whether 1 - f(a) = f(-a) for z's activation f: a sigmoid, or a hardsigmoid of beta 0.5."""
    found = function(z_act)
    return found is not None and (found.name == "sigmoid" or (found.name == "hardsigmoid" and found.beta == 0.5))
