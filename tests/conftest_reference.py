"""Helpers shared by the tests of irtool.reference (imported by them; not a pytest conftest).

``Case`` describes one op invocation and builds its inputs in OpenVINO layouts from a seed;
``assert_close`` applies the tolerance every oracle test uses: at most 1e-5 absolute for
values up to 1 and relative above.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from irtool import reference

GATES = {"GRU": 3, "LSTM": 4, "RNN": 1}
FUNCTIONS = {
    ("GRU", "sequence"): reference.gru_sequence, ("LSTM", "sequence"): reference.lstm_sequence,
    ("RNN", "sequence"): reference.rnn_sequence, ("GRU", "cell"): reference.gru_cell,
    ("LSTM", "cell"): reference.lstm_cell, ("RNN", "cell"): reference.rnn_cell,
}
TOLERANCE = 1e-5


def assert_close(actual: np.ndarray, expected: np.ndarray, what: str, tolerance: float = TOLERANCE) -> None:
    """|actual - expected| <= tolerance * max(1, |expected|), elementwise."""
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape}, expected {expected.shape}"
    error = np.abs(actual - expected) / np.maximum(1.0, np.abs(expected))
    worst = np.unravel_index(int(np.argmax(error)), error.shape) if error.size else ()
    assert error.size == 0 or error[worst] <= tolerance, (
        f"{what}: scaled error {error[worst]:.3g} > {tolerance:g} at {worst}: "
        f"got {actual[worst]!r}, expected {expected[worst]!r}")


@dataclass(frozen=True)
class Case:
    """One op call: family (GRU/LSTM/RNN), form (sequence/cell), sizes and attributes."""

    family: str
    form: str = "sequence"
    batch: int = 2
    seq: int = 4
    input_size: int = 3
    hidden: int = 4
    direction: str = "forward"
    lengths: tuple[int, ...] | None = None  # None: full length
    linear_before_reset: bool = False
    clip: float = 0.0
    activations: tuple[str, ...] | None = None
    alpha: tuple[float, ...] = ()
    beta: tuple[float, ...] = ()
    seed: int = 0
    scale: float = 1.0  # of weights, relative to 1/sqrt(fan-in)

    @property
    def directions(self) -> int:
        return 2 if self.direction == "bidirectional" else 1

    @property
    def bias_rows(self) -> int:
        return (GATES[self.family] + int(self.linear_before_reset)) * self.hidden

    def attributes(self) -> dict[str, Any]:
        attrs: dict[str, Any] = {"hidden_size": self.hidden, "clip": self.clip}
        if self.form == "sequence":
            attrs["direction"] = self.direction
        if self.family == "GRU":
            attrs["linear_before_reset"] = self.linear_before_reset
        if self.activations is not None:
            attrs["activations"] = list(self.activations)
        if self.alpha:
            attrs["activations_alpha"] = list(self.alpha)
        if self.beta:
            attrs["activations_beta"] = list(self.beta)
        return attrs

    def inputs(self, dtype: Any = np.float32) -> tuple[np.ndarray, ...]:
        """Inputs in port order and OpenVINO layouts."""
        rng = np.random.default_rng(self.seed)
        rows, nd, h = GATES[self.family] * self.hidden, self.directions, self.hidden

        def uniform(shape: tuple[int, ...], bound: float = 1.0) -> np.ndarray:
            return rng.uniform(-bound, bound, shape).astype(dtype)

        w_bound, r_bound = self.scale / np.sqrt(self.input_size), self.scale / np.sqrt(h)
        if self.form == "cell":
            states = [uniform((self.batch, h)) for _ in range(2 if self.family == "LSTM" else 1)]
            return (uniform((self.batch, self.input_size)), *states, uniform((rows, self.input_size), w_bound),
                    uniform((rows, h), r_bound), uniform((self.bias_rows,), 0.5))
        states = [uniform((self.batch, nd, h)) for _ in range(2 if self.family == "LSTM" else 1)]
        lengths = np.array(self.lengths if self.lengths is not None else [self.seq] * self.batch, dtype=np.int32)
        return (uniform((self.batch, self.seq, self.input_size)), *states, lengths,
                uniform((nd, rows, self.input_size), w_bound), uniform((nd, rows, h), r_bound),
                uniform((nd, self.bias_rows), 0.5))

    def reference(self, inputs: tuple[np.ndarray, ...] | None = None, **options: Any) -> tuple[np.ndarray, ...]:
        function = FUNCTIONS[(self.family, self.form)]
        return function(*(self.inputs() if inputs is None else inputs), **self.attributes(), **options)

    def __str__(self) -> str:
        parts = [self.family, self.form, f"b{self.batch}", f"h{self.hidden}"]
        if self.form == "sequence":
            parts += [self.direction, f"len{list(self.lengths) if self.lengths else 'full'}"]
        if self.linear_before_reset:
            parts.append("lbr")
        if self.clip:
            parts.append(f"clip{self.clip}")
        if self.activations:
            parts.append("/".join(self.activations))
        return "-".join(parts)
