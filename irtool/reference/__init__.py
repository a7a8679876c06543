"""numpy reference implementations of OpenVINO's RNN op family.

``gru_cell``, ``gru_sequence``, ``lstm_cell``, ``lstm_sequence``, ``rnn_cell`` and
``rnn_sequence`` take the op's inputs positionally, in port order and OpenVINO layouts, and
its attributes keyword-only with the spec's names; they return a tuple of arrays in output
port order.  ``evaluate(op_type, inputs, attributes, version=None)`` runs one by op type.
ONNX layouts are converted by ``irtool.onnx.semantics``.

May import specs and core (and numpy); never ir (a sibling) or a layer above.
"""
from __future__ import annotations

from irtool.reference.ops import gru_cell, gru_sequence, lstm_cell, lstm_sequence, rnn_cell, rnn_sequence
from irtool.reference.registry import evaluate, lookup, register, registered

__all__ = [
    "evaluate", "gru_cell", "gru_sequence", "lookup", "lstm_cell", "lstm_sequence", "register", "registered",
    "rnn_cell", "rnn_sequence",
]
