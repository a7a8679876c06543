"""reduce's summary names the values of the inputs that may decide the failure: sequence_lengths
and every input of few elements, in a bounded line whatever the case."""
from __future__ import annotations

import numpy as np

from irtool.pipeline.concrete import ConcreteCase
from irtool.reduce.reducer import decisive_inputs
from irtool.specs import get_spec


def _gru(batch: int, steps: int, hidden: int, lengths: np.ndarray) -> ConcreteCase:
    rng = np.random.default_rng(0)
    arrays = {"X": rng.standard_normal((batch, steps, 1), dtype=np.float32),
              "initial_hidden_state": np.full((batch, 1, hidden), 0.5, np.float32),
              "sequence_lengths": lengths.astype(np.int32),
              "W": np.zeros((1, 3 * hidden, 1), np.float32), "R": np.zeros((1, 3 * hidden, hidden), np.float32),
              "B": np.ones((1, 3 * hidden), np.float32)}
    return ConcreteCase(get_spec("GRUSequence"), {"hidden_size": hidden, "direction": "forward"}, arrays,
                        frozenset({"W", "R", "B"}))


def test_a_reduced_case_shows_its_small_inputs_and_lengths():
    text = decisive_inputs(_gru(1, 1, 1, np.array([0])))
    assert text == ("X [1, 1, 1] [1.118]; initial_hidden_state [1, 1, 1] [0.5]; sequence_lengths [0]; "
                    "W [1, 3, 1] [0, 0, 0]; R [1, 3, 1] [0, 0, 0]; B [1, 3] [1, 1, 1]")


def test_lengths_are_shown_at_any_batch_and_large_inputs_are_not():
    text = decisive_inputs(_gru(1000, 3, 4, np.arange(1000) % 4))
    assert text == "sequence_lengths [0, 1, 2, 3, 0, 1, 2, 3, ... (1000 values)]"


def test_the_line_is_bounded():
    case = _gru(1, 1, 1, np.array([0]))
    assert len(decisive_inputs(case)) < 400
    wide = _gru(3_000_000, 1, 1, np.zeros(3_000_000))
    assert decisive_inputs(wide).startswith("sequence_lengths [0, 0, 0, 0, 0, 0, 0, 0, ... (3000000 values)]; W ")
