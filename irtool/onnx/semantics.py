"""Conversions between ONNX GRU/LSTM/RNN tensors and attributes and the OpenVINO layouts.

``evaluate_node`` runs one ONNX node in ONNX semantics (every attribute of every opset
version, ``layout`` 1, peepholes, ``input_forget``, an activation set per direction) on the
reference's one recurrence driver; the other functions convert tensors and attributes to
and from the OpenVINO *Sequence ops.  Only ``evaluate_node`` imports onnx (its schema
registry, lazily).  The differences handled:

- X is time-major in ONNX ([seq, batch, input], ``layout=0``), batch-major in OpenVINO (and
  in ONNX with ``layout=1``).
- States: ONNX [num_dir, batch, H] (``layout=1``: [batch, num_dir, H]), optional (zeros);
  OpenVINO [batch, num_dir, H], required.
- sequence_lens: optional in ONNX (full length), required in OpenVINO.
- B: ONNX keeps Wb and Rb apart ([nd, 2*gates*H], optional: zeros); OpenVINO sums them
  ([nd, gates*H]), except GRU with linear_before_reset, whose [nd, 4H] keeps Wbh and Rbh
  apart.  From ONNX to a GRU without linear_before_reset, Wbh and Rbh are summed, which is
  exact maths for that formula.  Going back, the sums become Wb and Rb is 0.
- LSTM gate order: ONNX i, o, f, c; OpenVINO f, i, c, o.  Peepholes (ONNX P) and
  ``input_forget`` have no OpenVINO LSTMSequence-5 counterpart: non-zero ones are refused.
- Y: ONNX [seq, nd, batch, H] (``layout=1``: [batch, seq, nd, H]); OpenVINO [batch, nd, seq, H].
- Activations: ONNX may list one set per direction and consumes ``activation_alpha`` /
  ``activation_beta`` in order, only for the functions that take them (onnxruntime's reading);
  OpenVINO lists one set for both directions and indexes ``activations_alpha`` / ``_beta`` by
  position.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from irtool.core.errors import InputError
from irtool.onnx.shapes import DEFAULT_ACTIVATIONS, GATES
from irtool.reference import checks, ops
from irtool.reference.activations import KINDS, Activation, resolve
from irtool.reference.cells import GRU, LSTM, RNN
from irtool.reference.checks import flag

# The equations' defaults (f, g[, h]); the schema registry says only "see the equations".
ONNX_SPELLING = {
    "relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid", "affine": "Affine", "leakyrelu": "LeakyRelu",
    "thresholdedrelu": "ThresholdedRelu", "scaledtanh": "ScaledTanh", "hardsigmoid": "HardSigmoid",
    "elu": "Elu", "softsign": "Softsign", "softplus": "Softplus",
}
LSTM_FROM_ONNX = (2, 0, 3, 1)  # OpenVINO f, i, c, o taken from ONNX i, o, f, c
LSTM_TO_ONNX = (1, 3, 0, 2)    # ONNX i, o, f, c taken from OpenVINO f, i, c, o


def _kind(op: str) -> str:
    if op not in GATES:
        raise InputError(f"op is {op!r}; expected one of {', '.join(GATES)}")
    return op


def _reorder(array: np.ndarray, op: str, order: Sequence[int], axis: int) -> np.ndarray:
    """Permute the gate blocks of ``array`` along ``axis`` (identity except for LSTM)."""
    if op != "LSTM":
        return array
    blocks = np.split(array, 4, axis=axis)
    return np.concatenate([blocks[k] for k in order], axis=axis)


def _num_directions(direction: str) -> int:
    return 2 if str(direction).lower() == "bidirectional" else 1


def _batch_major(state: np.ndarray, layout: int = 0) -> np.ndarray:
    """[a, b, H] -> [b, a, H]; the same swap converts states both ways (layout 1: already batch-major)."""
    return np.ascontiguousarray(state if layout else np.swapaxes(state, 0, 1))


# --- tensors --------------------------------------------------------------------------

def inputs_from_onnx(op: str, X: np.ndarray, W: np.ndarray, R: np.ndarray, B: np.ndarray | None = None,
                     sequence_lens: np.ndarray | None = None, initial_h: np.ndarray | None = None,
                     initial_c: np.ndarray | None = None, P: np.ndarray | None = None, *,
                     linear_before_reset: Any = 0, layout: int = 0) -> tuple[np.ndarray, ...]:
    """ONNX inputs (their order and names) -> the OpenVINO *Sequence op's inputs, in port order.

    Non-zero peepholes are refused: the OpenVINO op has no P (``evaluate_node`` takes them).
    """
    op = _kind(op)
    if P is not None and np.any(P):
        raise InputError("P (peepholes) is non-zero; OpenVINO LSTMSequence-5 has no peephole input")
    seq, batch, _ = X.shape if layout == 0 else (X.shape[1], X.shape[0], X.shape[2])
    directions, rows, hidden = R.shape
    zeros = np.zeros((batch, directions, hidden), dtype=X.dtype)
    h0 = zeros if initial_h is None else _batch_major(initial_h, layout)
    lengths = np.full(batch, seq, dtype=np.int32) if sequence_lens is None else np.asarray(sequence_lens)
    w, r = _reorder(W, op, LSTM_FROM_ONNX, 1), _reorder(R, op, LSTM_FROM_ONNX, 1)
    b = bias_from_onnx(op, np.zeros((directions, 2 * rows), dtype=X.dtype) if B is None else B,
                       linear_before_reset=linear_before_reset)
    x = np.ascontiguousarray(X if layout else X.transpose(1, 0, 2))
    if op == "LSTM":
        c0 = zeros if initial_c is None else _batch_major(initial_c, layout)
        return x, h0, c0, lengths, w, r, b
    return x, h0, lengths, w, r, b


def bias_from_onnx(op: str, B: np.ndarray, *, linear_before_reset: Any = 0) -> np.ndarray:
    """ONNX B [nd, 2*gates*H] (Wb then Rb) -> OpenVINO B."""
    wb, rb = np.split(B, 2, axis=1)
    if _kind(op) == "GRU" and flag("linear_before_reset", linear_before_reset):
        hidden = wb.shape[1] // 3
        return np.concatenate([wb[:, :2 * hidden] + rb[:, :2 * hidden], wb[:, 2 * hidden:], rb[:, 2 * hidden:]], axis=1)
    return _reorder(wb + rb, op, LSTM_FROM_ONNX, 1)


def bias_to_onnx(op: str, B: np.ndarray, *, linear_before_reset: Any = False) -> np.ndarray:
    """OpenVINO B -> ONNX B [nd, 2*gates*H]: the sums go to Wb, Rb is 0 (but Rbh stays Rbh)."""
    if _kind(op) == "GRU" and flag("linear_before_reset", linear_before_reset):
        hidden = B.shape[1] // 4
        zero = np.zeros_like(B[:, :2 * hidden])
        return np.concatenate([B[:, :3 * hidden], zero, B[:, 3 * hidden:]], axis=1)
    summed = _reorder(B, op, LSTM_TO_ONNX, 1)
    return np.concatenate([summed, np.zeros_like(summed)], axis=1)


def inputs_to_onnx(op: str, *inputs: np.ndarray, linear_before_reset: Any = False) -> dict[str, np.ndarray]:
    """OpenVINO *Sequence inputs (port order) -> ONNX inputs by name.

    The names are X, W, R, B, sequence_lens, initial_h and, for LSTM, initial_c.
    """
    op = _kind(op)
    expected = 7 if op == "LSTM" else 6
    if len(inputs) != expected:
        raise InputError(f"{op} takes {expected} OpenVINO inputs; got {len(inputs)}")
    if op == "LSTM":
        x, h0, c0, lengths, w, r, b = inputs
    else:
        (x, h0, lengths, w, r, b), c0 = inputs, None
    converted = {
        "X": np.ascontiguousarray(np.asarray(x).transpose(1, 0, 2)),
        "W": _reorder(w, op, LSTM_TO_ONNX, 1),
        "R": _reorder(r, op, LSTM_TO_ONNX, 1),
        "B": bias_to_onnx(op, b, linear_before_reset=linear_before_reset),
        "sequence_lens": np.asarray(lengths).astype(np.int32),
        "initial_h": _batch_major(h0),
    }
    if c0 is not None:
        converted["initial_c"] = _batch_major(c0)
    return converted


# Y's axes: OpenVINO [batch, nd, seq, H] <-> ONNX layout 0 [seq, nd, batch, H] or layout 1 [batch, seq, nd, H];
# each permutation is its own inverse, so it converts both ways
_Y_AXES = {0: (2, 1, 0, 3), 1: (0, 2, 1, 3)}


def outputs_from_onnx(Y: np.ndarray, *states: np.ndarray, layout: int = 0) -> tuple[np.ndarray, ...]:
    """ONNX Y, Y_h[, Y_c] (in ``layout``) -> OpenVINO Y [batch, nd, seq, H], Ho[, Co]."""
    return (np.ascontiguousarray(Y.transpose(_Y_AXES[layout])), *(_batch_major(s, layout) for s in states))


def outputs_to_onnx(Y: np.ndarray, *states: np.ndarray, layout: int = 0) -> tuple[np.ndarray, ...]:
    """OpenVINO Y [batch, nd, seq, H], Ho[, Co] -> ONNX Y, Y_h[, Y_c] in ``layout``."""
    return (np.ascontiguousarray(Y.transpose(_Y_AXES[layout])), *(_batch_major(s, layout) for s in states))


# --- attributes -----------------------------------------------------------------------

def _one_set(op: str, names: Sequence[str], directions: int) -> int:
    """How many of ``names`` belong to one direction: ONNX may give a set per direction."""
    count = len(DEFAULT_ACTIVATIONS[op])
    if len(names) == count:
        return count
    if directions == 2 and len(names) == 2 * count:
        return count
    raise InputError(f"activations has {len(names)} values {list(names)}; expected {count}"
                     + (f" or {2 * count} (one set per direction)" if directions == 2 else ""))


def _takes(kind: Any, which: str) -> tuple[bool, float | None]:
    """Whether an activation kind takes alpha (or beta), and its default."""
    return (kind.takes_alpha, kind.default_alpha) if which == "alpha" else (kind.takes_beta, kind.default_beta)


def _parameters_by_position(names: Sequence[str], values: Sequence[float], which: str) -> list[float]:
    """ONNX's in-order consumption -> one value per activation (defaults where not consumed)."""
    pending, positional = list(values), []
    for name in names:
        kind = KINDS.get(str(name).lower())
        if kind is None:
            raise InputError(f"activations has {name!r}; expected one of {', '.join(ONNX_SPELLING.values())}")
        takes, default = _takes(kind, which)
        if takes and pending:
            positional.append(float(pending.pop(0)))
        elif takes and default is None:
            raise InputError(f"activation_{which} has no value for {name!r}, which has no default")
        else:
            positional.append(0.0 if default is None else float(default))
    if pending:
        raise InputError(f"activation_{which} has {len(values)} values; the activations {list(names)} take fewer")
    return positional


def _parameters_in_order(names: Sequence[str], positional: Sequence[float], which: str) -> list[float]:
    """One value per activation (OpenVINO) -> ONNX's in-order list for the functions that take one."""
    ordered = []
    for index, name in enumerate(names):
        kind = KINDS[str(name).lower()]
        takes, default = _takes(kind, which)
        if takes:
            if index >= len(positional) and default is None:
                raise InputError(f"activations_{which} has no value for activations[{index}] = {name!r}")
            ordered.append(float(positional[index]) if index < len(positional) else float(default))
    return ordered


def attributes_from_onnx(op: str, attributes: Mapping[str, Any]) -> dict[str, Any]:
    """ONNX GRU/LSTM/RNN attributes -> the OpenVINO *Sequence attributes (spec names)."""
    op = _kind(op)
    if int(attributes.get("layout", 0)):
        raise InputError("layout is 1 (batch-major); the OpenVINO op's attributes cannot say it "
                         "(convert the tensors with layout=1, or use evaluate_node)")
    if int(attributes.get("input_forget", 0)):
        raise InputError("input_forget is 1; OpenVINO LSTMSequence-5 has no input_forget")
    direction = str(attributes.get("direction", "forward"))
    names = [str(n) for n in attributes.get("activations", DEFAULT_ACTIVATIONS[op])]
    alphas = _parameters_by_position(names, attributes.get("activation_alpha", ()), "alpha")
    betas = _parameters_by_position(names, attributes.get("activation_beta", ()), "beta")
    count = _one_set(op, names, _num_directions(direction))
    one_set = ([n.lower() for n in names[:count]], alphas[:count], betas[:count])
    if len(names) > count and one_set != ([n.lower() for n in names[count:]], alphas[count:], betas[count:]):
        raise InputError(f"activations differ between directions ({names}); OpenVINO uses one set for both")
    converted: dict[str, Any] = {
        "hidden_size": int(attributes["hidden_size"]) if "hidden_size" in attributes else None,
        "direction": direction,
        "activations": one_set[0],
        "activations_alpha": one_set[1],
        "activations_beta": one_set[2],
        "clip": float(attributes.get("clip", 0.0)),
    }
    if op == "GRU":
        converted["linear_before_reset"] = flag("linear_before_reset", attributes.get("linear_before_reset", 0))
    return {k: v for k, v in converted.items() if v is not None}


def attributes_to_onnx(op: str, attributes: Mapping[str, Any]) -> dict[str, Any]:
    """OpenVINO *Sequence attributes -> ONNX attributes (one activation set per direction)."""
    op = _kind(op)
    names = [str(n).lower() for n in attributes.get("activations", DEFAULT_ACTIVATIONS[op])]
    alphas = _parameters_in_order(names, attributes.get("activations_alpha", ()) or (), "alpha")
    betas = _parameters_in_order(names, attributes.get("activations_beta", ()) or (), "beta")
    copies = _num_directions(attributes.get("direction", "forward"))
    converted: dict[str, Any] = {
        "hidden_size": int(attributes["hidden_size"]),
        "direction": str(attributes.get("direction", "forward")).lower(),
        "activations": [ONNX_SPELLING[n] for n in names] * copies,
    }
    if alphas:
        converted["activation_alpha"] = alphas * copies
    if betas:
        converted["activation_beta"] = betas * copies
    clip = float(attributes.get("clip", 0.0) or 0.0)
    if clip and np.isfinite(clip):
        converted["clip"] = clip
    if op == "GRU":
        linear = attributes.get("linear_before_reset", False)
        converted["linear_before_reset"] = int(flag("linear_before_reset", linear))
    return converted


# --- one ONNX node, in ONNX semantics ---------------------------------------------------

def activations_per_gate(op: str, values: Mapping[str, Any], directions: int,
                          given: bool) -> list[tuple[Activation, ...]]:
    """Per gate (f, g[, h]), its activation per direction.

    A node lists one set of activations per direction, as the pages say ("a list of 2, or 4
    if bidirectional"); onnxruntime refuses one set for a bidirectional node too.

    ``activation_alpha`` / ``activation_beta`` are consumed in order across the whole list,
    only by the functions that take them (onnxruntime's reading of "consumed in the order of
    activation functions"); a function left without a value takes its ONNX default.
    ``values`` are the attributes with the schema's defaults filled in; ``given`` says whether
    the node itself listed activations (RNN's schema default lists two, one per direction).
    """
    count = len(DEFAULT_ACTIVATIONS[op])
    names = [str(n) for n in values.get("activations", DEFAULT_ACTIVATIONS[op] * directions)]
    if not given:  # a schema default holds a set per direction (RNN's: Tanh, Tanh); the equations' otherwise
        names = names[:count * directions]
    if len(names) != count * directions:
        raise ValueError(f"activations has {len(names)} values {names}; expected {count * directions} "
                         f"({count} per direction, {directions} direction{'s' if directions > 1 else ''})")
    alphas = _parameters_by_position(names, values.get("activation_alpha", ()), "alpha")
    betas = _parameters_by_position(names, values.get("activation_beta", ()), "beta")
    sets = [resolve(names[k:k + count], alphas[k:k + count], betas[k:k + count])
            for k in range(0, len(names), count)]
    return [tuple(one_set[gate] for one_set in sets) for gate in range(count)]


def _cell(op: str, values: Mapping[str, Any], directions: int, peepholes: np.ndarray | None,
          given: bool) -> Any:
    gates = activations_per_gate(op, values, directions, given)
    clip = checks.clip(values.get("clip"))  # absent (the registry has no default) or infinite: none
    if op == "GRU":
        return GRU(*gates, clip, bool(values.get("linear_before_reset", 0)))
    if op == "LSTM":
        return LSTM(*gates, clip, peepholes, bool(values.get("input_forget", 0)))
    return RNN(*gates, clip)


def _checked_inputs(spec: Any, inputs: Sequence[Any]) -> dict[str, np.ndarray]:
    """The present inputs by ONNX name, each checked against its type constraint; T shared by all."""
    from irtool.onnx.schema import tensor_type

    if len(inputs) > len(spec.inputs):
        raise ValueError(f"{spec.key} takes at most {len(spec.inputs)} inputs "
                         f"({', '.join(p.name for p in spec.inputs)}); got {len(inputs)}")
    arrays: dict[str, np.ndarray] = {}
    shared: tuple[str, np.dtype] | None = None
    for port, value in zip(spec.inputs, [*inputs, *[None] * (len(spec.inputs) - len(inputs))]):
        if value is None:
            if not port.optional:
                raise ValueError(f"{port.name} is missing; it is a required input of {spec.key}")
            continue
        array = value if isinstance(value, np.ndarray) else np.asarray(value)
        if tensor_type(array.dtype) not in port.allowed:
            raise ValueError(f"{port.name} has dtype {array.dtype}; {spec.key} allows "
                             f"{', '.join(port.allowed)} ({port.type_param})")
        if port.type_param == "T":
            if shared is not None and array.dtype != shared[1]:
                raise ValueError(f"{port.name} has dtype {array.dtype}; expected {shared[1]}, "
                                 f"the dtype of {shared[0]} (both are T)")
            shared = shared or (port.name, array.dtype)
        arrays[port.name] = array
    return arrays


def evaluate_node(op_type: str, opset: int, attributes: Mapping[str, Any], inputs: Sequence[Any], *,
                  accumulate: Any = None, rounding: Any = None, given_y: Any = None) -> tuple[np.ndarray, ...]:
    """One ONNX GRU, LSTM or RNN node, as the ONNX page of its version defines it.

    ``attributes`` are as ONNX gives them (names and types of the op's schema in ``opset``,
    strings as str or bytes; absent: the schema's default); ``inputs`` in ONNX order, an
    absent optional input None (trailing ones may be left out).  Returns every output of
    the op (Y, Y_h[, Y_c]) in ONNX order and layout, in the inputs' dtype: a node that
    leaves an output out just does not use it (``output_sequence`` of version 1 says only
    that).  Bad or unsupported input raises one ValueError naming the input or attribute.
    ``accumulate="float64"`` computes in float64.  ``rounding`` (irtool.reference.rounding.Rounding): round
    where a device does (the emulation of a precision path); ``given_y``: a device's Y (ONNX layout),
    each step computed from that run's previous hidden state (irtool.reference.recurrence.run).
    """
    from irtool.onnx import schema, shapes

    spec = schema.get(op_type, opset)
    values, problems = schema.check_attributes(spec, attributes)
    if problems:
        raise ValueError(f"{spec.key}: {problems[0].message}")
    arrays = _checked_inputs(spec, inputs)
    layout, direction = values.get("layout", 0), values["direction"]
    directions = _num_directions(direction)
    known = {"num_directions": directions, **({"hidden_size": values["hidden_size"]} if "hidden_size" in values else {})}
    found = shapes.check(shapes.input_dims(op_type, layout), {name: a.shape for name, a in arrays.items()}, known)
    if found.problems:
        raise ValueError(f"{spec.key}: {found.problems[0].message}")
    sizes = found.sizes
    lengths = arrays.get("sequence_lens")
    if lengths is not None and lengths.size and (lengths.min() < 0 or lengths.max() > sizes["seq_length"]):
        k = int(np.flatnonzero((lengths < 0) | (lengths > sizes["seq_length"]))[0])
        raise ValueError(f"{spec.key}: sequence_lens[{k}] is {int(lengths[k])}; expected a value in "
                         f"[0, seq_length={sizes['seq_length']}]")
    try:
        cell = _cell(op_type, values, directions, arrays.get("P"), attributes.get("activations") is not None)
    except ValueError as error:
        raise ValueError(f"{spec.key}: {error}") from None
    x, *states, sequence_lengths, w, r, b = inputs_from_onnx(
        op_type, **{k: v for k, v in arrays.items() if k != "P"},
        linear_before_reset=values.get("linear_before_reset", 0), layout=layout)
    given = None
    if given_y is not None:  # ONNX's Y, [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]), as OpenVINO's
        given = np.transpose(np.asarray(given_y), (0, 2, 1, 3) if layout else (2, 1, 0, 3))
    outputs = ops.sequence(cell, sizes["hidden_size"], direction, x, list(zip(("initial_h", "initial_c"), states)),
                           sequence_lengths, w, r, b, accumulate, rounding, given)
    return outputs_to_onnx(*outputs, layout=layout)
