"""Faults of OpenVINO that irtool's docs describe, each recognised by what its failure looks like.

A node that fails is compared with the signature of each fault here; a match becomes a hint in
the node's result ("this matches a known OpenVINO fault: ..., see docs/..."), never a verdict:
the node fails either way.  Signatures read the failure itself (where the errors are, what the
device's outputs hold), never a model's or a case's name, so a model irtool has never seen that
meets the fault gets the hint, and a failure of another kind does not.

:class:`Failure` holds a failing node in OpenVINO's layouts (an ONNX node's tensors are moved
into them by :func:`from_onnx`); :data:`KNOWN_FAULTS` is the one list of faults.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

SEQUENCE_OPS = ("GRUSequence", "LSTMSequence", "RNNSequence", "GRU", "LSTM", "RNN")


@dataclass(frozen=True)
class Failure:
    """A failing recurrent node, in OpenVINO's layouts: Y [batch, directions, steps, hidden],
    Ho (and Co) [batch, directions, hidden], lengths [batch]."""

    op: str  # "GRUSequence", or the ONNX "GRU"
    direction: str  # forward, reverse or bidirectional
    lengths: np.ndarray | None  # each batch element's sequence length, where the node has the input
    actual: Mapping[str, np.ndarray]  # Y, Ho (Co): what the device computed
    expected: Mapping[str, np.ndarray]  # the same from the reference
    atol: float  # the tolerance the node was judged with (of Y)
    rtol: float
    properties: Mapping[str, Any] | None = None  # what the node is, for faults of a frontend (layout, peepholes, ...)


@dataclass(frozen=True)
class KnownFault:
    id: str
    says: str  # what the fault does, in a sentence
    where: str  # the page and section of irtool's docs that describe it
    matches: Callable[[Failure], bool]

    def hint(self, failure: Failure | None = None) -> str:
        return f"this matches a known OpenVINO fault: {self.text(failure)} (see {self.where})"

    def text(self, failure: Failure | None = None) -> str:
        """What the fault does, with what the node shows of it (a node property's own words)."""
        detail = (failure.properties or {}).get(self.id) if failure is not None else None
        return f"{self.says} ({detail})" if isinstance(detail, str) and detail else self.says


def _close(a: np.ndarray, b: np.ndarray, atol: float, rtol: float) -> np.ndarray:
    return np.abs(a.astype(np.float64) - b.astype(np.float64)) <= atol + rtol * np.abs(b.astype(np.float64))


def _ignores_lengths(failure: Failure) -> bool:
    """The CPU plugin's sequence_lengths fault on its dynamic path: each forward direction is right
    up to every batch element's length and wrong only past it, where Y holds values (not 0), and
    Ho is Y at the last step: the state after every step, as if no length had been given."""
    y, ho = failure.actual.get("Y"), failure.actual.get("Ho")
    want_y = failure.expected.get("Y")
    lengths = failure.lengths
    if failure.op not in SEQUENCE_OPS or y is None or ho is None or want_y is None or lengths is None:
        return False
    if y.ndim != 4 or ho.ndim != 3 or lengths.ndim != 1 or y.shape != want_y.shape or y.shape[0] != lengths.shape[0]:
        return False
    forward = {"forward": [0], "bidirectional": [0]}.get(failure.direction, [])
    steps = y.shape[2]
    lengths = np.clip(lengths.astype(np.int64), 0, steps)
    short = np.flatnonzero(lengths < steps)
    if not forward or short.size == 0 or steps == 0:
        return False
    atol, rtol = failure.atol, failure.rtol
    past_any = False
    for d in forward:
        for b in range(y.shape[0]):
            valid = int(lengths[b])
            if not _close(y[b, d, :valid], want_y[b, d, :valid], atol, rtol).all():
                return False  # wrong within the sequence: another fault
        for b in short:
            valid = int(lengths[b])
            past = y[b, d, valid:]
            if np.any(np.abs(past) > atol):
                past_any = True
            if not _close(ho[b, d], y[b, d, steps - 1], atol, rtol).all():
                return False  # Ho is not the state after every step
    return past_any


def _property(name: str) -> Callable[[Failure], bool]:
    """A fault of a frontend that shows in what the node is (layout=1, peepholes): its failure then
    has no further signature to read, the node's property is the signature."""
    return lambda failure: bool((failure.properties or {}).get(name))


KNOWN_FAULTS: Sequence[KnownFault] = (
    KnownFault("cpu-sequence-lengths",
               "the CPU plugin ignores sequence_lengths on its dynamic path (a sequence op with Const weights and "
               "a dynamic dim): Y is not 0 past a sequence's end and Ho is the state after every step",
               'docs/run.md, "A CPU bug this found"', _ignores_lengths),
    KnownFault("onnx-layout",
               "OpenVINO's ONNX frontend ignores layout=1 (batch-major tensors are read as sequence-major; "
               "https://github.com/openvinotoolkit/openvino/issues/37820)",
               'docs/onnx.md, "irtool run model.onnx"', _property("onnx-layout")),
    KnownFault("onnx-peepholes",
               "OpenVINO's ONNX frontend drops the peepholes P (it converts to LSTMSequence, which has none)",
               'docs/onnx.md, "irtool run model.onnx"', _property("onnx-peepholes")),
    KnownFault("onnx-input-forget",
               "OpenVINO's ONNX frontend ignores input_forget=1 (it computes what input_forget=0 gives)",
               'docs/onnx.md, "irtool run model.onnx"', _property("onnx-input-forget")),
    KnownFault("per-direction-activations",
               "a bidirectional node's activations differ per direction, and OpenVINO applies the forward set to "
               "both directions", 'docs/onnx.md, "irtool run model.onnx"', _property("per-direction-activations")),
)


def hints(failure: Failure) -> tuple[str, ...]:
    """The hint of every known fault whose signature the failure has."""
    return tuple(fault.hint(failure) for fault in KNOWN_FAULTS if fault.matches(failure))


def by_properties(properties: Mapping[str, Any]) -> list[str]:
    """What the known faults a node's properties show would do to it (for a model that did not even
    compile, where there is no failure to read)."""
    failure = Failure("", "", None, {}, {}, 0.0, 0.0, properties)
    return [fault.text(failure) for fault in KNOWN_FAULTS if fault.matches(failure)]


def from_onnx(op: str, attributes: Mapping[str, Any], layout: int, lengths: np.ndarray | None,
              actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], atol: float, rtol: float,
              properties: Mapping[str, Any]) -> Failure:
    """A failing ONNX node's tensors (Y, Y_h, Y_c by role) moved into OpenVINO's layouts."""
    def moved(tensors: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = {}
        for role, name in (("Y", "Y"), ("Y_h", "Ho"), ("Y_c", "Co")):
            array = tensors.get(role)
            if array is None:
                continue
            if role == "Y" and array.ndim == 4:
                array = array.transpose((0, 2, 1, 3) if layout else (2, 1, 0, 3))
            elif role != "Y" and array.ndim == 3 and not layout:
                array = array.transpose(1, 0, 2)
            out[name] = array
        return out
    return Failure(op, str(attributes.get("direction", "forward")), lengths, moved(actual), moved(expected),
                   atol, rtol, properties)
