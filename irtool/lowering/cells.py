"""The records of lowered-cell recognition and what every pattern shares.

A pattern (:mod:`.lstm`, :mod:`.gru`, :mod:`.rnn`: one module per cell a converter writes out,
:mod:`.folded_states` for the first step a converter folds) matches a :class:`Candidate`, its
input and state not told apart yet, or a :class:`Refusal` saying why a structure with a cell's
state update is not that cell; :mod:`.recognize` tells the input from the state and makes a
:class:`Cell`, its weights in OpenVINO's layout and gate order (LSTM f, i, c, o; GRU z, r, h).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

import numpy as np

from irtool.lowering.gate_sums import Sum
from irtool.lowering.graph import Key, constant_data, key, label, op_of, operands, root

SUPPORTED = {"Sigmoid": "sigmoid", "Tanh": "tanh", "Relu": "relu"}  # the activations OpenVINO's cells take
# the ops :func:`function` reads (and a scaled clamp's Multiply or Divide, which :func:`activation_of` checks)
FUNCTION_OPS = frozenset(SUPPORTED) | {"HSigmoid", "HardSigmoid", "Clamp", "Minimum"}
ACTIVATION_OPS = FUNCTION_OPS | {"Elu", "SoftSign", "Swish", "HSwish", "Gelu", "SoftPlus", "Mish", "Exp"}
CELL_TYPES = {"LSTM": ("LSTMCell", 4), "GRU": ("GRUCell", 3), "RNN": ("RNNCell", 0)}
GATES = {"LSTM": ("f", "i", "c", "o"), "GRU": ("z", "r", "h"), "RNN": ("h",)}  # OpenVINO's order


@dataclass(frozen=True)
class Activation:
    """An activation as irtool's reference computes it: a name of the cells' ``activations`` and, for
    hardsigmoid (``max(0, min(1, alpha*x + beta))``), its alpha and beta."""

    name: str
    alpha: float | None = None
    beta: float | None = None

    def __str__(self) -> str:
        return self.name if self.alpha is None else f"{self.name} (alpha {self.alpha:.6g}, beta {self.beta:.6g})"


def function(node: Any) -> Activation | None:
    """The activation an op computes, where irtool's reference computes it too: Sigmoid, Tanh, Relu;
    HardSigmoid (its alpha and beta constant), HSigmoid (``min(max(x + 3, 0), 6) / 6``: alpha 1/6,
    beta 0.5), Clamp to [0, 1] (alpha 1, beta 0: Keras's ``clip(0.2x + 0.5)`` leaves its affine
    part to the gate's sum) and a scaled clamp (:func:`_scaled_clamp`) as hardsigmoid; else None."""
    kind = node.get_type_name()
    if kind in SUPPORTED:
        return Activation(SUPPORTED[kind])
    if kind == "HSigmoid":
        return Activation("hardsigmoid", float(np.float32(1 / 6)), 0.5)
    if kind == "HardSigmoid":
        alpha, beta = (constant_data(node.input_value(k).get_node()) for k in (1, 2))
        if alpha is None or beta is None or alpha.size != 1 or beta.size != 1:
            return None
        return Activation("hardsigmoid", float(alpha.reshape(-1)[0]), float(beta.reshape(-1)[0]))
    if kind in ("Clamp", "Minimum") and _clamped(node) is not None:  # ONNX's Clip: Minimum(1, Maximum(x, 0))
        return Activation("hardsigmoid", 1.0, 0.0)
    scaled = _scaled_clamp(node) if kind in ("Multiply", "Divide") else None
    return Activation("hardsigmoid", scaled[0], scaled[1]) if scaled is not None else None


def argument(node: Any) -> Any:
    """What an activation op applies its function to (its first input; a Minimum(1, Maximum(x, 0)): x;
    a scaled clamp: the x of its ``x + k``)."""
    kind = node.get_type_name()
    if kind in ("Multiply", "Divide"):
        scaled = _scaled_clamp(node)
        if scaled is not None:
            return scaled[2]
    clamped = _clamped(node) if kind == "Minimum" else None
    return clamped if clamped is not None else node.input_value(0)


def _scalar(value: Any) -> float | None:
    data = constant_data(value.get_node())
    return float(data.reshape(-1)[0]) if data is not None and data.size == 1 else None


def _scaled_clamp(node: Any) -> tuple[float, float, Any] | None:
    """(alpha, beta, x) where ``node`` computes ``clip(x + k, 0, m) * s`` (or ``/ d``, s = 1/d; the clip as
    :func:`_clip` reads it) with s·m = 1, which is hardsigmoid of alpha s and beta s·k: Keras 3's
    ``relu6(x + 3) / 6`` as its .tflite and SavedModel are read (ov.convert_model fuses it into an
    HSigmoid, read_model does not; a ``+ k`` absent: beta 0); else None."""
    kind = node.get_type_name()
    pairs = [node.input_values()] if kind == "Divide" else [node.input_values(), node.input_values()[::-1]]
    for clamp, factor in pairs:
        number, clip = _scalar(factor), _clip(clamp.get_node())
        if number is None or number <= 0 or clip is None:
            continue
        scale = float(np.float32(1 / number)) if kind == "Divide" else number
        if abs(scale * clip[1] - 1) > 1e-6:
            continue
        x, shift = clip[0], 0.0
        if x.get_node().get_type_name() == "Add":
            for operand, other in (x.get_node().input_values(), x.get_node().input_values()[::-1]):
                k = _scalar(other)
                if k is not None and constant_data(operand.get_node()) is None:
                    x, shift = operand, k
                    break
        return scale, float(np.float32(scale * shift)), x
    return None


def _clamped(node: Any) -> Any | None:
    """x, where ``node`` clips x to [0, 1] (:func:`_clip`), else None."""
    clip = _clip(node)
    return clip[0] if clip is not None and clip[1] == 1 else None


def _clip(node: Any) -> tuple[Any, float] | None:
    """(x, m) where ``node`` clips x to [0, m] of a constant m: a Clamp of min 0, or ONNX's Clip of constant
    bounds, Minimum(m, Maximum(x, 0)) in either operand order; else None."""
    if node.get_type_name() == "Clamp":
        bounds = node.get_attributes()
        return (node.input_value(0), float(bounds["max"])) if bounds.get("min") == 0 and "max" in bounds else None
    if node.get_type_name() != "Minimum":
        return None
    for bound, inner in (node.input_values(), node.input_values()[::-1]):
        top, maximum = _scalar(bound), inner.get_node()
        if top is None or maximum.get_type_name() != "Maximum":
            continue
        for low, x in (maximum.input_values(), maximum.input_values()[::-1]):
            if _scalar(low) == 0 and constant_data(x.get_node()) is None:
                return x, top
    return None


def same_function(first: Any, second: Any) -> bool:
    """Whether two activation ops compute the same function (of those irtool does not compute: the same op)."""
    one, other = function(first), function(second)
    return one == other if one is not None or other is not None else first.get_type_name() == second.get_type_name()


def named_functions(found: "Candidate | Cell") -> dict[str, Any]:
    """The ``activations`` attributes of a cell's functions (alpha and beta where one takes them)."""
    names: dict[str, Any] = {"activations": [a.name for a in found.activations]}
    if any(a.alpha is not None for a in found.activations):
        names["activations_alpha"] = [a.alpha or 0.0 for a in found.activations]
        names["activations_beta"] = [a.beta or 0.0 for a in found.activations]
    return names


@dataclass(frozen=True)
class Candidate:
    """A cell's pattern matched, its input and state not told apart yet (at the top level that
    takes the steps around it)."""

    kind: str  # LSTM, GRU, RNN
    hidden_size: int
    activations: tuple[Activation, ...]
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
    activations: tuple[Activation, ...]
    x: Any  # x_t as the gate product reads it
    h: Any | None  # h_{t-1} as the gate product reads it; None where OpenVINO folded a constant state's product
    c: Any | None  # an LSTM's c_{t-1}
    weights: tuple[np.ndarray, np.ndarray, np.ndarray]  # W, R, B
    outputs: tuple[Any, ...]  # h_t (and c_t)
    parts: tuple[str, ...]
    linear_before_reset: bool = False
    varying: tuple[tuple[int, Any, np.ndarray, float], ...] = ()  # (slot of B, tensor, its columns, sign): see Candidate
    stored: tuple[str | None, str | None] = (None, None)  # the integer type W and R are stored as, if one (Term.stored)
    rounded: tuple[str, ...] = ()  # narrowing Converts on its gate pre-activations (Sum.rounded), which no cell op has
    hoisted: tuple[str, ...] = ()  # its input's product computed for every step at once, and its rows taken (Sum.hoisted)
    joined_from: tuple[str, ...] = ()  # the tensors x_t joins (its gates multiply each by weights of its own)

    @property
    def op(self) -> tuple[str, int]:
        return CELL_TYPES[self.kind]

    @property
    def attributes(self) -> dict[str, Any]:
        found: dict[str, Any] = {"hidden_size": self.hidden_size, **named_functions(self), "clip": 0.0}
        if self.kind == "GRU":
            found["linear_before_reset"] = self.linear_before_reset
        return found

    def describe(self) -> str:
        """``LSTM cell lowered to plain ops (activations sigmoid, tanh, tanh): MatMul 'a', ...``."""
        extra = ", linear_before_reset" if self.linear_before_reset else ""
        text = f"{self.kind} cell lowered to plain ops (activations {', '.join(map(str, self.activations))}{extra}): " \
               f"{', '.join(self.parts)}"
        if self.hoisted:
            text += f"; its input's product is computed for every step at once and each step takes its rows " \
                    f"({', '.join(self.hoisted)}): x_t is those rows of that product's input"
        if self.joined_from:
            text += f"; its input x_t is {', '.join(self.joined_from)} joined on their last axis (its gates multiply " \
                    f"each by weights of its own: W is theirs side by side)"
        if self.rounded:  # OpenVINO runs f16 tensors at the inference precision: at f32 the rounding is gone
            text += f"; its gate pre-activations are rounded ({', '.join(self.rounded)}), which OpenVINO's " \
                    f"{self.op[0]} does not do: judged against the cell without the rounding"
        return text


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


def activation_of(value: Any) -> Any | None:
    """The activation op computing ``value`` (through layout ops), or None."""
    node = root(value).get_node()
    kind = node.get_type_name()
    if kind in ("Minimum", "Multiply", "Divide"):
        return node if function(node) is not None else None
    return node if kind in ACTIVATION_OPS else None


def checked(found: Candidate, varying: Callable[[Any], bool], states: Mapping[str, Any]) -> Candidate | Refusal:
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
    rows = {k for gate in found.gates.values() for k, term in gate.terms.items() if term.rows}
    if not found.variables or (len(found.variables) > 2 and len(set(found.variables) - rows) > 1):
        # several inputs are joined only where they are a step's rows of hoisted products (torch.export's
        # stacked layers): tensors of other steps read by one cell are no cell's
        return Refusal(found.kind, f"its gates multiply {len(found.variables)} tensors by weights, expected its "
                                   f"input and its state", found.parts, found.outputs[0])
    if not kept:
        return found
    gates = {name: replace(g, others=()) for name, g in found.gates.items()}
    return Candidate(found.kind, found.hidden_size, found.activations, gates, found.outputs, found.parts, found.state,
                     found.c, found.negated, found.reset, tuple(kept))


def varies_per_iteration(value: Any, limit: int = 32) -> bool:
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


def named(values: Mapping[Key, Any]) -> str:
    return " and ".join(label(root(value).get_node()) for value in values.values())
