"""irtool.reference against OpenVINO's CPU plugin at f32, on a seeded grid of cases.

Oracle: each case is built as a one-op ov.Model (opset5 sequences, opset3 GRUCell/RNNCell,
opset4 LSTMCell), compiled on CPU with INFERENCE_PRECISION_HINT f32 set explicitly (the CPU
default on these machines is bf16) and read back; outputs must agree within 1e-5 (absolute
up to 1, relative above).  OpenVINO accepts relu, sigmoid and tanh, in any case.
"""
from __future__ import annotations

import itertools

import numpy as np
import openvino as ov
import pytest
from conftest_reference import Case, assert_close
from openvino import opset1, opset3, opset4, opset5

FACTORIES = {
    ("GRU", "sequence"): opset5.gru_sequence, ("LSTM", "sequence"): opset5.lstm_sequence,
    ("RNN", "sequence"): opset5.rnn_sequence, ("GRU", "cell"): opset3.gru_cell,
    ("LSTM", "cell"): opset4.lstm_cell, ("RNN", "cell"): opset3.rnn_cell,
}
DEFAULT_ACTIVATIONS = {"GRU": ["sigmoid", "tanh"], "LSTM": ["sigmoid", "tanh", "tanh"], "RNN": ["tanh"]}
ACTIVATIONS = {
    "GRU": [None, ("tanh", "relu"), ("Sigmoid", "TANH")],
    "LSTM": [None, ("tanh", "sigmoid", "relu"), ("SIGMOID", "Tanh", "tanh")],
    "RNN": [None, ("relu",), ("Sigmoid",)],
}
# (batch, hidden, lengths for seq 5): batch 1 and >1, hidden 1 and >1, ragged with 0 and full
SIZES = [(1, 1, None), (3, 4, (5, 0, 2)), (2, 3, (3, 5)), (1, 2, (0,))]


def grid() -> list[Case]:
    cases = []
    counter = itertools.count()
    for family in ("GRU", "LSTM", "RNN"):
        for direction in ("forward", "reverse", "bidirectional"):
            for lbr, clip, activations in itertools.product((False, True) if family == "GRU" else (False,),
                                                            (0.0, 0.75), ACTIVATIONS[family]):
                k = next(counter)
                batch, hidden, lengths = SIZES[k % len(SIZES)]
                cases.append(Case(family, "sequence", batch=batch, seq=5, input_size=3, hidden=hidden,
                                  direction=direction, lengths=lengths, linear_before_reset=lbr, clip=clip,
                                  activations=activations, seed=k, scale=1.5))
        for lbr in ((False, True) if family == "GRU" else (False,)):
            for clip, activations in zip((0.0, 0.5, 0.0), ACTIVATIONS[family]):
                k = next(counter)
                batch, hidden, _ = SIZES[k % len(SIZES)]
                cases.append(Case(family, "cell", batch=batch, input_size=2, hidden=hidden, linear_before_reset=lbr,
                                  clip=clip, activations=activations, seed=k, scale=1.5))
    return cases


def openvino_outputs(case: Case, inputs: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    *data, w, r, b = inputs
    parameters = [opset1.parameter(a.shape, a.dtype) for a in data]
    attributes = case.attributes()
    if "activations" not in attributes:  # the Python factory of RNNCell needs the list
        attributes["activations"] = DEFAULT_ACTIVATIONS[case.family]
    attributes.setdefault("activations_alpha", [])
    attributes.setdefault("activations_beta", [])
    node = FACTORIES[(case.family, case.form)](*parameters, opset1.constant(w), opset1.constant(r), opset1.constant(b),
                                               **attributes)
    compiled = ov.Core().compile_model(ov.Model(node.outputs(), parameters), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    assert "32" in str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    results = compiled(list(data))
    return [results[output] for output in compiled.outputs]


@pytest.mark.parametrize("case", grid(), ids=str)
def test_matches_openvino_cpu_f32(case: Case) -> None:
    inputs = case.inputs()
    expected = openvino_outputs(case, inputs)
    actual = case.reference(inputs)
    assert len(actual) == len(expected)
    for index, (mine, theirs) in enumerate(zip(actual, expected)):
        assert mine.dtype == np.float32
        assert_close(mine, theirs, f"{case} output {index}")


def test_grid_covers_what_it_claims() -> None:
    cases = grid()
    sequences = [c for c in cases if c.form == "sequence"]
    assert {c.direction for c in sequences} == {"forward", "reverse", "bidirectional"}
    assert any(c.lengths and 0 in c.lengths for c in sequences) and any(c.lengths is None for c in sequences)
    assert {c.batch for c in cases} >= {1, 3} and {c.hidden for c in cases} >= {1, 4}
    assert any(c.linear_before_reset for c in cases) and any(c.clip for c in cases)
    assert {(c.family, c.form) for c in cases} == set(FACTORIES)
