"""The bound a model output is judged within against a framework's values (``--expected``, a
framework's runtime through ``--compare-with``): the tolerance, scaled to the output's magnitude.

The default tolerances (irtool.judge.compare.DEFAULT_TOLERANCES) were measured on recurrent
nodes' outputs, hidden states of magnitude up to about 1, where an absolute error of atol is a
last-digits difference.  A model's own output can be far smaller: a wake-word probability of
1.17e-05 judged with the f32 atol of 1e-05 would pass with an error of 85%.  So the default atol
is scaled by the output's largest finite magnitude where that is below 1 (``atol * min(1, m)``):
an output of magnitude 1 and more keeps the measured atol, and one of 1e-05 is held to about the
relative error (rtol) that a larger output is; an output of zeros only keeps the atol.  An atol the user gives (``--atol``, a suite's
tolerances) is taken as given: it says what difference they accept.  One function, so that a
precision-aware bound can replace the rule in one place.
"""
from __future__ import annotations

import numpy as np

from irtool.judge.compare import Tolerance


def magnitude_bound(tolerance: Tolerance, expected: np.ndarray, atol_given: bool = False) -> Tolerance:
    """``tolerance`` for an output whose expected values are ``expected``: its atol scaled by the
    output's largest finite magnitude where that is below 1, unless the atol was given
    (``atol_given``); the source says so when it is scaled."""
    if atol_given or expected.size == 0 or np.dtype(expected.dtype).kind not in "fc":
        return tolerance
    values = np.abs(np.asarray(expected, dtype=np.float64))
    finite = values[np.isfinite(values)]
    magnitude = float(finite.max()) if finite.size else 0.0
    if not 0.0 < magnitude < 1.0 or tolerance.atol == 0.0:  # all zeros: nothing to scale by
        return tolerance
    return Tolerance(tolerance.atol * magnitude, tolerance.rtol,
                     f"{tolerance.source}, atol x {magnitude:.3g} (the output's largest magnitude)")
