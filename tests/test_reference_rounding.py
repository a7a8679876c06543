"""Rounding as a device does it (irtool.reference.rounding), checked against implementations no one
here wrote: ml_dtypes' and numpy's casts, and OpenVINO's own conversion of constants.

The weight-rounding question of issue 28 is settled here: OpenVINO converts float32 constants to
bfloat16 not to the nearest value (ties to even) but by adding half a unit only where the kept
last bit is odd, so it truncates where that bit is even.  The test runs on any CPU (the
conversion is OpenVINO's core, not a device's); a CPU with bf16 also shows it in the weights an
RNN kernel computes with (tests/test_precision_device.py).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from irtool.reference import gru_sequence, lstm_sequence, rnn_sequence
from irtool.reference.rounding import (EXACT, ROUNDINGS, Rounding, for_shape, in_place, round_bf16, round_bf16_openvino,
                                      round_f16)


def _values(count: int = 100_000, seed: int = 0) -> np.ndarray:
    """float32 values across magnitudes, with the ties and near-ties that tell roundings apart."""
    rng = np.random.default_rng(seed)
    spread = rng.standard_normal(count) * rng.choice([1e-6, 1e-3, 1.0, 100.0, 1e4, 1e30], count)
    ties = (rng.integers(0x3F800000, 0x40000000, 2000, dtype=np.uint32) & np.uint32(0xFFFF0000)) | np.uint32(0x8000)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 7e4, 65504.0, 65520.0], np.float32)
    return np.concatenate([spread.astype(np.float32), ties.view(np.float32), special])


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b, equal_nan=True))


def test_bf16_is_ml_dtypes_cast_and_f16_is_numpys():
    values = _values()
    assert _same(round_bf16(values), values.astype(ml_dtypes.bfloat16).astype(np.float32))
    with np.errstate(over="ignore"):
        assert _same(round_f16(values), values.astype(np.float16).astype(np.float32))


def test_openvinos_bf16_conversion_of_constants_is_the_openvino_rounding_not_the_nearest():
    """OpenVINO's Constant of element type bf16 made from float32 values: the values it holds are
    round_bf16_openvino's in every case, and differ from the nearest bfloat16 in about a quarter."""
    import openvino as ov

    values = _values(50_000)[:-10]  # finite values: a Constant from a list refuses none, but NaN is no test
    constant = ov.op.Constant(ov.Type.bf16, ov.Shape([values.size]), values.tolist())
    held = (constant.get_data().view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    assert _same(held, round_bf16_openvino(values))
    differ = held != round_bf16(values)
    assert 0.15 < differ.mean() < 0.35
    bits = values.view(np.uint32)[differ]
    assert not (bits & 0x10000).any(), "it differs only where the kept last bit is even"
    assert (np.abs(held[differ]) < np.abs(round_bf16(values)[differ])).all(), "and there it truncates"


def test_the_openvino_rounding_on_the_example_of_its_name():
    bits = np.array([0x3F80C000, 0x3F81C000, 0x3F80FFFF, 0x3F817FFF, 0x3F818000, 0x3F808000], np.uint32)
    assert (round_bf16_openvino(bits.view(np.float32)).view(np.uint32) >> 16).tolist() == \
        [0x3F80, 0x3F82, 0x3F80, 0x3F81, 0x3F82, 0x3F80]
    assert (round_bf16(bits.view(np.float32)).view(np.uint32) >> 16).tolist() == \
        [0x3F81, 0x3F82, 0x3F81, 0x3F81, 0x3F82, 0x3F80]


@pytest.mark.parametrize("name", sorted(ROUNDINGS))
def test_in_place_rounding_of_computed_values_is_the_rounding(name):
    values = _values()
    values = values[np.isfinite(values) | np.isinf(values)]  # computed values: NaN only as arithmetic makes it
    array = values.copy()
    with np.errstate(over="ignore"):
        in_place(name)(array)
        assert _same(array, ROUNDINGS[name](values))


@pytest.mark.parametrize("size", [1000, 100_000], ids=["small arrays (a cast)", "large arrays (arithmetic)"])
def test_f16_in_place_is_numpys_cast_for_every_kind_of_value(size):
    """Every 997th float32 bit pattern, so every exponent: f16's normals and subnormals, ties,
    values past its range, infinities and NaNs; rounded in arrays of ``size`` values."""
    values = np.arange(0, 2 ** 32, 997, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):  # invalid: signalling NaNs, which arithmetic never makes
        want = values.astype(np.float16).astype(np.float32)
        rounded = in_place("f16")
        for start in range(0, values.size - size + 1, size):
            array = values[start:start + size].copy()
            rounded(array)
            assert _same(array, want[start:start + size])


@pytest.mark.parametrize("name", [*sorted(ROUNDINGS), "bf16 without ml_dtypes"])
@pytest.mark.parametrize("rows", [40, 4000], ids=["small arrays", "large arrays"])
def test_a_rounding_bound_to_a_shape_rounds_in_place_and_into_another_array(name, rows, monkeypatch):
    """The per-step roundings of a run (for_shape): on strided views of [2, 3 * rows, 5] blocks as the
    cells' gates are sliced, in place and as a rounded copy that leaves its source as it was."""
    import irtool.reference.rounding as rounding

    if name == "bf16 without ml_dtypes":
        monkeypatch.setattr(rounding, "_bfloat16", lambda: None)
        name = "bf16"
    values = _values(2 * 3 * rows * 5 * 4, seed=rows)
    values = values[np.isfinite(values) | np.isinf(values)][:2 * 3 * rows * 5].reshape(2, 3 * rows, 5)
    source, into = values[:, rows:2 * rows], np.empty((2, rows, 5), np.float32)
    kept = source.copy()
    with np.errstate(over="ignore"):
        want = ROUNDINGS[name](kept)
        function = for_shape(name, (2, rows, 5))
        function(source, into)
        assert _same(into, want) and _same(source, kept)
        function(source)
        assert _same(source, want)


def test_a_rounding_names_its_points_and_refuses_an_unknown_function():
    plan = Rounding(inputs="bf16", weights="bf16-openvino", state="bf16")
    assert plan.describe() == "inputs bf16, weights bf16-openvino, state bf16" and not plan.exact
    assert EXACT.exact and EXACT.describe() == "nothing rounded"
    with pytest.raises(ValueError, match="rounding of state is 'bf8'; expected one of bf16, bf16-openvino, f16"):
        Rounding(state="bf8")


def _gru_inputs(seed: int = 1, batch: int = 3, seq: int = 6, inputs: int = 5, hidden: int = 8):
    rng = np.random.default_rng(seed)
    f = np.float32
    return (rng.standard_normal((batch, seq, inputs)).astype(f), rng.standard_normal((batch, 1, hidden)).astype(f),
            np.full(batch, seq, np.int32), rng.standard_normal((1, 3 * hidden, inputs)).astype(f) * f(0.5),
            rng.standard_normal((1, 3 * hidden, hidden)).astype(f) * f(0.5),
            rng.standard_normal((1, 3 * hidden)).astype(f))


def test_rounding_once_is_the_exact_reference_on_rounded_values():
    """Inputs and weights rounded once give what the ideal reference gives on those values rounded
    beforehand; outputs rounded give the ideal outputs rounded."""
    x, h, lengths, w, r, b = _gru_inputs()
    attributes = dict(hidden_size=8, direction="forward")
    rounded = gru_sequence(x, h, lengths, w, r, b, **attributes,
                           rounding=Rounding(inputs="bf16", weights="bf16-openvino", outputs="f16"))
    exact = gru_sequence(round_bf16(x), round_bf16(h), lengths, round_bf16_openvino(w), round_bf16_openvino(r), b,
                         **attributes)
    for got, want in zip(rounded, exact):
        assert _same(got, round_f16(want))


@pytest.mark.parametrize("op, gates", [(gru_sequence, 3), (lstm_sequence, 4), (rnn_sequence, 1)])
def test_a_rounded_state_makes_every_step_of_y_a_value_of_the_type(op, gates):
    rng = np.random.default_rng(2)
    batch, seq, inputs, hidden = 2, 5, 3, 4
    f = np.float32
    states = [rng.standard_normal((batch, 1, hidden)).astype(f) for _ in range(2 if gates == 4 else 1)]
    arrays = [rng.standard_normal((batch, seq, inputs)).astype(f), *states, np.full(batch, seq, np.int32),
              rng.standard_normal((1, gates * hidden, inputs)).astype(f),
              rng.standard_normal((1, gates * hidden, hidden)).astype(f), rng.standard_normal((1, gates * hidden)).astype(f)]
    y, *_ = op(*arrays, hidden_size=hidden, direction="forward", rounding=Rounding(state="bf16"))
    exact_y, *_ = op(*arrays, hidden_size=hidden, direction="forward")
    assert _same(y, round_bf16(y)) and not _same(exact_y, round_bf16(exact_y))
    assert 0 < np.abs(y - exact_y).max() < 0.1  # rounding, not another computation


def test_rounding_refuses_float64_computation():
    x, h, lengths, w, r, b = _gru_inputs()
    with pytest.raises(ValueError, match="rounding emulates a device that computes in float32"):
        gru_sequence(x, h, lengths, w, r, b, hidden_size=8, direction="forward", accumulate="float64",
                     rounding=Rounding(state="bf16"))
    with pytest.raises(ValueError, match="rounding is str; expected an irtool.reference.rounding.Rounding or None"):
        gru_sequence(x, h, lengths, w, r, b, hidden_size=8, direction="forward", rounding="bf16")


def test_bf16_in_place_without_ml_dtypes_is_the_rounding(monkeypatch):
    import irtool.reference.rounding as rounding

    monkeypatch.setattr(rounding, "_bfloat16", lambda: None)
    values = _values()
    values = values[~np.isnan(values)]
    array = values.copy()
    rounding.in_place("bf16")(array)
    assert _same(array, round_bf16(values))
