"""The precision model against a device that runs bf16: the emulation of the native path matches
the CPU's outputs bit for bit or within one bf16 unit in the last place, for all six ops, and so does
the emulation of a cell decomposed onto FullyConnected layers (clip), each step from the device's own
previous state; the weights an RNN kernel computes with are rounded as OpenVINO converts constants
(not to nearest).  tests/test_pipeline_recording.py checks the same on recorded outputs, on any CPU.

These need a CPU whose OPTIMIZATION_CAPABILITIES list BF16 (AVX512_BF16 or AMX); elsewhere each
is a skip saying so (OpenVINO then runs a bf16 request at f32: there is no bf16 rounding to check).
OpenVINO's conversion itself is checked on any CPU in tests/test_reference_rounding.py.
"""
from __future__ import annotations

import numpy as np
import pytest

from irtool.judge.precision import emulation
from irtool.reference import evaluate
from irtool.reference.rounding import round_bf16, round_bf16_openvino

BATCH, STEPS, SIZE, HIDDEN = 3, 5, 4, 8
GATES = {"GRU": 3, "LSTM": 4, "RNN": 1}


@pytest.fixture(scope="module")
def bf16_cpu(cpu_precisions):
    if "bf16" not in cpu_precisions:
        pytest.skip(f"this CPU lists no BF16 (its precisions: {', '.join(cpu_precisions)}): OpenVINO runs a bf16 "
                    f"request at f32 here, so there is no bf16 rounding of a device to check the emulation against")


def _model(op: str, cell: bool, rng: np.random.Generator, clip: float = 0.0):
    """A single op fed by Parameters X, H (C), with Const weights and full Const lengths: static
    shapes, so the CPU runs its native kernel (RNNSeq, RNNCell), or with ``clip`` a decomposed cell."""
    import openvino as ov
    import openvino.opset3 as ops3
    import openvino.opset4 as ops4
    import openvino.opset5 as ops5

    gates, f = GATES[op], np.float32
    prefix = (BATCH,) if cell else (BATCH, 1)
    x = ops5.parameter([BATCH, SIZE] if cell else [BATCH, STEPS, SIZE], f, name="X")
    states = [ops5.parameter([*prefix, HIDDEN], f, name=name) for name in ("H", "C")[:2 if op == "LSTM" else 1]]
    shape = (gates * HIDDEN,) if cell else (1, gates * HIDDEN)
    w = rng.uniform(-0.5, 0.5, (*shape, SIZE)).astype(f)
    r = rng.uniform(-0.5, 0.5, (*shape, HIDDEN)).astype(f)
    b = rng.uniform(-0.5, 0.5, shape).astype(f)
    consts = [ops5.constant(a) for a in (w, r, b)]
    if cell:
        if op == "RNN":  # its factory takes the activations it has no default for
            node = ops4.rnn_cell(x, *states, *consts, HIDDEN, ["tanh"], [], [], clip, name="node")
        else:
            activations = ["sigmoid", "tanh"] + (["tanh"] if op == "LSTM" else [])
            node = {"GRU": ops3.gru_cell, "LSTM": ops4.lstm_cell}[op](x, *states, *consts, HIDDEN, activations,
                                                                       [], [], clip, name="node")
    else:
        lengths = ops5.constant(np.full(BATCH, STEPS, np.int32))
        factory = {"GRU": ops5.gru_sequence, "LSTM": ops5.lstm_sequence, "RNN": ops5.rnn_sequence}[op]
        activations = {"GRU": ["sigmoid", "tanh"], "LSTM": ["sigmoid", "tanh", "tanh"], "RNN": ["tanh"]}[op]
        node = factory(x, *states, lengths, *consts, HIDDEN, "forward", activations, [], [], clip, name="node")
    inputs = {"X": rng.standard_normal(x.get_output_partial_shape(0).to_shape()).astype(f)}
    for state in states:
        inputs[state.get_friendly_name()] = (0.5 * rng.standard_normal(state.get_output_partial_shape(0).to_shape())
                                             ).astype(f)
    arrays = [inputs["X"], *(inputs[s.get_friendly_name()] for s in states)]
    arrays += [] if cell else [np.full(BATCH, STEPS, np.int32)]
    return ov.Model(node.outputs(), [x, *states]), inputs, [*arrays, w, r, b]


def _one_unit(values: np.ndarray) -> np.ndarray:
    """One bf16 unit in the last place at each value."""
    magnitude = np.maximum(np.abs(values.astype(np.float64)), 2.0 ** -126)
    return 2.0 ** (np.floor(np.log2(magnitude)) - 7)


@pytest.mark.parametrize("cell", [False, True], ids=["sequence", "cell"])
@pytest.mark.parametrize("op", ["GRU", "LSTM", "RNN"])
def test_the_emulation_of_the_native_bf16_path_matches_the_cpu_within_one_unit(bf16_cpu, op, cell):
    import openvino as ov

    from irtool.runtime.what_ran import what_ran

    model, inputs, arrays = _model(op, cell, np.random.default_rng(sum(map(ord, op)) + cell))
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    device = [np.asarray(a, np.float32) for a in compiled(inputs).values()]
    kinds = what_ran(compiled, ["node"])["node"].kinds
    path = emulation("CPU", kinds, "bf16")
    assert path is not None and path.path.id == "cpu-native-bf16", kinds
    op_type = f"{op}{'Cell' if cell else 'Sequence'}"
    attributes = {"hidden_size": HIDDEN} | ({} if cell else {"direction": "forward"})
    emulated = evaluate(op_type, arrays, attributes, rounding=path.rounding)
    for got, want in zip(device, emulated):
        assert (np.abs(got - want) <= _one_unit(want)).all(), (op_type, np.abs(got - want).max())
    exact = evaluate(op_type, arrays, attributes)
    assert any(not np.array_equal(got, want) for got, want in zip(device, exact)), "the device rounds at bf16"


@pytest.mark.parametrize("cell", [False, True], ids=["sequence", "cell"])
@pytest.mark.parametrize("op", ["GRU", "LSTM", "RNN"])
def test_the_emulation_of_a_decomposed_cell_matches_the_cpu_step_by_step(bf16_cpu, op, cell):
    """With clip the CPU decomposes the cell (FullyConnected at bf16, element-wise f32): a cell runs as
    a Subgraph, a sequence as a TensorIterator over the decomposed cell."""
    import openvino as ov

    from irtool.judge.precision import Ran, node_emulation
    from irtool.runtime.what_ran import what_ran

    model, inputs, arrays = _model(op, cell, np.random.default_rng(7 + sum(map(ord, op)) + cell), clip=1.0)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    device = [np.asarray(a, np.float32) for a in compiled(inputs).values()]
    op_type = f"{op}{'Cell' if cell else 'Sequence'}"
    attributes = {"hidden_size": HIDDEN, "clip": 1.0} | ({} if cell else {"direction": "forward"})
    found = node_emulation(Ran("CPU", "bf16", what_ran(compiled, ["node"])["node"].kinds), op_type, attributes)
    assert found is not None and found.path.id == ("cpu-decomposed-bf16" if cell else "cpu-loop-decomposed-bf16")
    given = {} if cell else {"given_states": device[0]}
    emulated = evaluate(op_type, arrays, attributes, rounding=found.rounding, **given)
    atol, rtol, _ = found.bound()
    for got, want in zip(device, emulated):
        assert (np.abs(got - want) <= atol + rtol * np.abs(want)).all(), (op_type, np.abs(got - want).max())


def test_the_cpu_computes_with_weights_rounded_as_openvino_converts_them(bf16_cpu):
    """An RNNCell with relu fed a one-hot X and a zero state gives the first column of W as the
    kernel holds it: rounded the OpenVINO way where that differs from the nearest value."""
    import openvino as ov
    import openvino.opset4 as ops

    bits = np.array([0x3F80C000, 0x3F81C000, 0x3F80FFFF, 0x3F817FFF, 0x3FA0C000, 0x3F90E000, 0x3FC0A000, 0x40004000],
                    np.uint32)
    column = bits.view(np.float32)
    hidden, size = column.size, 2
    w = np.zeros((hidden, size), np.float32)
    w[:, 0] = column
    x = ops.parameter([1, size], np.float32, name="X")
    h = ops.parameter([1, hidden], np.float32, name="H")
    node = ops.rnn_cell(x, h, ops.constant(w), ops.constant(np.zeros((hidden, hidden), np.float32)),
                        ops.constant(np.zeros(hidden, np.float32)), hidden, ["relu"], [], [], name="node")
    compiled = ov.Core().compile_model(ov.Model([node.output(0)], [x, h]), "CPU", {"INFERENCE_PRECISION_HINT": "bf16"})
    (got,) = compiled({"X": np.array([[1.0, 0.0]], np.float32), "H": np.zeros((1, hidden), np.float32)}).values()
    assert np.array_equal(np.asarray(got, np.float32)[0], round_bf16_openvino(column))
    assert not np.array_equal(round_bf16_openvino(column), round_bf16(column))
