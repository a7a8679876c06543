"""compare.py: the error statistics of one output and the tolerance policy (pure numpy)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from irtool.core.precisions import loosest_precision
from irtool.judge.compare import DEFAULT_TOLERANCES, Tolerance, TolerancePolicy, compare_output

TOL = Tolerance(atol=1e-3, rtol=1e-2)


def test_identical_outputs_pass_with_zero_error():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    diff = compare_output("Y", a, a.copy(), TOL)
    assert diff.passed and diff.max_abs == 0 and diff.max_rel == 0 and diff.outside == 0
    assert diff.needed_atol == 0 and diff.needed_rtol == 0 and diff.total == 12


def test_worst_element_index_values_and_counts():
    expected = np.zeros((2, 3), np.float32) + 1.0
    actual = expected.copy()
    actual[1, 2] = 1.5
    actual[0, 0] = 1.0005  # inside atol
    diff = compare_output("Y", actual, expected, TOL)
    assert not diff.passed
    assert diff.worst_index == (1, 2)
    assert diff.worst_actual == 1.5 and diff.worst_expected == 1.0
    assert diff.outside == 1 and diff.outside_share == pytest.approx(1 / 6)
    assert diff.max_abs == pytest.approx(0.5) and diff.max_rel == pytest.approx(0.5)
    assert diff.mean_abs == pytest.approx((0.5 + 0.0005) / 6, rel=1e-3)


def test_needed_tolerances_are_the_smallest_that_pass():
    rng = np.random.default_rng(1)
    expected = rng.uniform(-1, 1, size=(4, 5))
    actual = expected + rng.uniform(-0.01, 0.01, size=expected.shape)
    diff = compare_output("Y", actual, expected, TOL)
    assert compare_output("Y", actual, expected, Tolerance(diff.needed_atol * (1 + 1e-9), TOL.rtol)).passed
    assert not compare_output("Y", actual, expected, Tolerance(diff.needed_atol * 0.99, TOL.rtol)).passed
    assert compare_output("Y", actual, expected, Tolerance(TOL.atol, diff.needed_rtol * (1 + 1e-9))).passed
    assert not compare_output("Y", actual, expected, Tolerance(TOL.atol, diff.needed_rtol * 0.99)).passed


def test_error_where_reference_is_zero_needs_an_infinite_rtol():
    diff = compare_output("Y", np.array([0.5]), np.array([0.0]), TOL)
    assert diff.max_rel == math.inf and diff.needed_rtol == math.inf and diff.needed_atol == pytest.approx(0.5)


def test_nan_where_reference_has_a_number_fails_whatever_the_tolerance():
    diff = compare_output("Y", np.array([1.0, np.nan]), np.array([1.0, 2.0]), Tolerance(1e9, 1e9))
    assert not diff.passed and diff.nonfinite_mismatch == 1 and diff.actual_nan == 1
    assert diff.worst_index == (1,) and diff.max_abs == np.inf  # (it said 0: the finite elements' alone)
    assert diff.max_rel == diff.needed_atol == diff.needed_rtol == np.inf  # no tolerance passes it


def test_matching_nan_and_inf_pass_and_are_counted():
    values = np.array([np.nan, np.inf, -np.inf, 1.0])
    diff = compare_output("Y", values, values.copy(), TOL)
    assert diff.passed and diff.actual_nan == 1 and diff.actual_inf == 2 and diff.expected_inf == 2
    flipped = compare_output("Y", np.array([np.inf]), np.array([-np.inf]), Tolerance(1e9, 1e9))
    assert not flipped.passed and flipped.nonfinite_mismatch == 1


def test_per_step_error_follows_the_time_axis():
    expected = np.zeros((2, 1, 4, 3))
    actual = expected.copy()
    actual[1, 0, 2, 1] = 0.25
    actual[0, 0, 3, 0] = 0.5
    diff = compare_output("Y", actual, expected, TOL, time_axis=2)
    assert diff.step_max_abs == (0.0, 0.0, 0.25, 0.5)
    assert compare_output("Ho", actual[:, :, 0], expected[:, :, 0], TOL).step_max_abs is None


def test_shape_mismatch_is_a_failure_with_a_reason():
    diff = compare_output("Y", np.zeros((2, 3)), np.zeros((2, 4)), TOL)
    assert not diff.passed and "shape [2, 3] differs from expected [2, 4]" in diff.problem


def test_policy_per_output_beats_global_beats_default():
    policy = TolerancePolicy(atol=1e-2, output_atol={"Y": 1e-4}, output_rtol={"Ho": 0.5})
    y = policy.for_output(("Y", "Result_1"), "bf16")
    assert (y.atol, y.rtol) == (1e-4, DEFAULT_TOLERANCES["bf16"].rtol)
    assert y.source == "--atol Y, bf16 default"
    ho = policy.for_output(("Ho",), "f32")
    assert (ho.atol, ho.rtol, ho.source) == (1e-2, 0.5, "--atol, --rtol Ho")
    default = TolerancePolicy().for_output(("Co",), "f16")
    assert default == DEFAULT_TOLERANCES["f16"]
    assert policy.unknown_outputs({"Y", "Co"}) == ["Ho"]


def test_defaults_order_and_loosest_precision():
    assert DEFAULT_TOLERANCES["f32"].atol < DEFAULT_TOLERANCES["f16"].atol < DEFAULT_TOLERANCES["bf16"].atol
    assert loosest_precision(["f32", "bf16"]) == "bf16"
    assert loosest_precision(["unknown"]) == "f32"


@pytest.mark.parametrize("actual, passed", [(1.0, True), (1.5, False), (0.0, False)])
def test_a_scalar_output_is_compared_like_any_other(actual, passed):
    """A 0-d output (a Loop's scalar accumulator) raised a TypeError: the relative error was a scalar."""
    diff = compare_output("total", np.array(actual, np.float32), np.array(1.0, np.float32), Tolerance(1e-5, 1e-4))
    assert diff.passed is passed and diff.shape == () and diff.total == 1
    assert diff.max_abs == pytest.approx(abs(actual - 1.0))
