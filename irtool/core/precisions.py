"""The precisions irtool runs and judges at, by the names its commands use."""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np

# Each precision's unit roundoff: half the distance from 1 to the next value of its type.
UNIT_ROUNDOFF = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}
PRECISIONS = tuple(UNIT_ROUNDOFF)
# Each precision's largest finite value: past it a result is infinite.
LARGEST = {"f32": float(2 - 2.0 ** -23) * 2.0 ** 127, "f16": 65504.0, "bf16": float(2 - 2.0 ** -7) * 2.0 ** 127}
# What --precision takes: a precision to set as INFERENCE_PRECISION_HINT, or "default": no hint,
# the precision the device picks for itself (read back from the compiled model, and judged with
# that precision's tolerance), which is what an application gets.
DEVICE_DEFAULT = "default"
PRECISION_CHOICES = (*PRECISIONS, DEVICE_DEFAULT)


def loosest_precision(precisions: Iterable[str]) -> str:
    """The coarsest of ``precisions`` (for a run whose devices differ); f32 when none is known."""
    known = [p for p in precisions if p in UNIT_ROUNDOFF] or ["f32"]
    return max(known, key=UNIT_ROUNDOFF.__getitem__)


def largest_magnitude(values: Any) -> float:
    """The largest finite magnitude of an array of floats (what a rounding at a precision scales
    with: UNIT_ROUNDOFF times it); 0 for an empty array, one of no finite value, or one of whole
    numbers (indices, lengths and counts are no magnitude a computation rounds at)."""
    array = np.asarray(values)
    if array.size == 0 or array.dtype.kind != "f":
        return 0.0
    magnitudes = np.abs(array)
    return float(np.max(magnitudes, where=np.isfinite(magnitudes), initial=0.0))
