"""The bound a model output is judged within against a framework's values (``--expected``, a
framework's runtime through ``--compare-with``): the tolerance, scaled to the output's magnitude,
never below what rounding at the run's precision through the model could move it by.

The default tolerances (irtool.judge.compare.DEFAULT_TOLERANCES) were measured on recurrent
nodes' outputs, hidden states of magnitude up to about 1, where an absolute error of atol is a
last-digits difference.  A model's own output can be far smaller: a wake-word probability of
1.17e-05 judged with the f32 atol of 1e-05 would pass with an error of 85%.  So the default atol
is scaled by the output's largest finite magnitude m where that is below 1 (``atol * m``).

But a small output need not be computed from small values: the framework and the device each
compute it through the model from its inputs, weights and intermediate values, of magnitude up
to M (the largest flowing through it), and a rounding there moves a value by up to u * M (u: the
precision's unit roundoff, 2^-24 at f32), which a difference of two such values (a logit's sum
of large terms of both signs, a subtraction) carries into the output whatever its own magnitude.
So the scaled atol never goes below ``FLOOR_ROUNDINGS * u * M``: one rounding at that magnitude
on each side (the framework's and the device's).  Measured (tests/test_run_model_verdicts.py): a
wake-word-like model's sigmoid of 1.24e-05, computed from values up to 14.8, differs from
onnxruntime's by 4.7e-09 (onnxruntime's sigmoid and sums differ from OpenVINO's in their last
digits); the atol scaled to 1.24e-10 failed it, the floor of 1.77e-06 passes it, and an output off by
half of itself still fails.  The price: an error below the floor passes on such an output (10% of
1.24e-05 here): the floor holds for any graph (an output that is a difference of values of that
magnitude too), and does not know that a sigmoid shrinks its input's error.
The floor never raises the atol above the measured default (at f32, a model whose values reach
84 and more keeps it); an output of magnitude 1 and more keeps the measured atol; an output of
zeros only keeps the atol.  An atol the user gives (``--atol``, a suite's tolerances) is taken as
given: it says what difference they accept.  One function, so that a precision-aware bound can
replace the rule in one place.
"""
from __future__ import annotations

import numpy as np

from irtool.core.precisions import UNIT_ROUNDOFF, largest_magnitude
from irtool.judge.compare import Tolerance

FLOOR_ROUNDINGS = 2  # roundings at the largest magnitude through the model: one on each side of the comparison


def magnitude_bound(tolerance: Tolerance, expected: np.ndarray, atol_given: bool = False, flowing: float = 0.0,
                    precision: str = "f32") -> Tolerance:
    """``tolerance`` for an output whose expected values are ``expected``: its atol scaled by the
    output's largest finite magnitude where that is below 1, but never below FLOOR_ROUNDINGS
    roundings at ``precision`` of the largest magnitude flowing through the model (``flowing``:
    its inputs, weights and the intermediate values read; the output's own at least), unless the
    atol was given (``atol_given``); the source says which when it is scaled."""
    if atol_given or expected.size == 0 or np.dtype(expected.dtype).kind not in "fc":
        return tolerance
    magnitude = largest_magnitude(expected)
    if not 0.0 < magnitude < 1.0 or tolerance.atol == 0.0:  # all zeros: nothing to scale by
        return tolerance
    scaled = tolerance.atol * magnitude
    through = max(flowing, magnitude)
    floor = min(tolerance.atol, FLOOR_ROUNDINGS * UNIT_ROUNDOFF.get(precision, UNIT_ROUNDOFF["f32"]) * through)
    if floor > scaled:
        return Tolerance(floor, tolerance.rtol,
                         f"{tolerance.source}, atol x {magnitude:.3g} (the output's largest magnitude), but not "
                         f"below {FLOOR_ROUNDINGS} {precision} roundings of {through:.3g} (the largest magnitude "
                         f"through the model)")
    return Tolerance(scaled, tolerance.rtol,
                     f"{tolerance.source}, atol x {magnitude:.3g} (the output's largest magnitude)")
