"""Dtype policy: f16 and bf16 are computed in float32 (never accumulated in their own type),
float64 in float64, ``accumulate="float64"`` gives a golden result, outputs keep the dtype."""
from __future__ import annotations

import numpy as np
import pytest
from conftest_reference import Case, assert_close

from irtool.reference import evaluate
from irtool.reference.precision import compute_dtype
from irtool.reference.rounding import round_bf16

CASES = [Case("GRU", direction="bidirectional", lengths=(4, 2), linear_before_reset=True, seed=1),
         Case("LSTM", direction="reverse", lengths=(3, 0), clip=0.8, seed=2),
         Case("RNN", "cell", seed=3)]


def narrowed(case: Case, dtype: object) -> tuple[np.ndarray, ...]:
    return tuple(a if a.dtype.kind == "i" else a.astype(dtype) for a in case.inputs())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_float16_is_computed_in_float32_and_returned_as_float16(case: Case) -> None:
    inputs = narrowed(case, np.float16)
    widened = tuple(a if a.dtype.kind == "i" else a.astype(np.float32) for a in inputs)
    for half, single in zip(case.reference(inputs), case.reference(widened)):
        assert half.dtype == np.float16
        np.testing.assert_array_equal(half, single.astype(np.float16))  # one rounding, at the end


@pytest.mark.parametrize("case", CASES, ids=str)
def test_bfloat16_in_and_out(case: Case) -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 arrays need ml_dtypes (installed with openvino)")
    inputs = narrowed(case, ml_dtypes.bfloat16)
    widened = tuple(a if a.dtype.kind == "i" else a.astype(np.float32) for a in inputs)
    for brain, single in zip(case.reference(inputs), case.reference(widened)):
        assert brain.dtype == ml_dtypes.bfloat16
        np.testing.assert_array_equal(brain.astype(np.float32), round_bf16(single))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_accumulate_float64_agrees_with_float32_and_keeps_the_dtype(case: Case) -> None:
    inputs = case.inputs()
    golden = case.reference(inputs, accumulate="float64")
    wide = case.reference(tuple(a if a.dtype.kind == "i" else a.astype(np.float64) for a in inputs))
    for gold, single, double in zip(golden, case.reference(inputs), wide):
        assert gold.dtype == np.float32
        assert_close(single, gold, "f32 against the f64 golden result")
        np.testing.assert_array_equal(gold, double.astype(np.float32))


def test_evaluate_passes_accumulate_through() -> None:
    case = CASES[0]
    inputs = case.inputs()
    by_type = evaluate("GRUSequence", inputs, case.attributes(), accumulate="float64")
    for a, b in zip(by_type, case.reference(inputs, accumulate="float64")):
        np.testing.assert_array_equal(a, b)


def test_float64_inputs_compute_in_float64() -> None:
    assert compute_dtype(np.dtype(np.float64)) == np.float64
    assert compute_dtype(np.dtype(np.float64), "float32") == np.float64  # a floor, never a demotion
    assert compute_dtype(np.dtype(np.float16)) == np.float32
    assert compute_dtype(np.dtype(np.float16), np.float64) == np.float64


def test_round_to_bfloat16_matches_a_bfloat16_cast() -> None:
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="the check compares with ml_dtypes' cast")
    special = np.array([0.0, -0.0, 1.0, 1.00390625, 1.01171875, 1.0078125, 3.4e38, -3.4e38, 1e-40,
                        np.inf, -np.inf, np.nan], dtype=np.float32)  # ties to even both ways, overflow, subnormal
    values = np.concatenate([special, np.random.default_rng(0).standard_normal(10000).astype(np.float32) * 100])
    expected = values.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(round_bf16(values), expected)
