"""Dtype policy: what the reference computes in and what it returns.

Inputs may be float16, bfloat16, float32 or float64.  The computation runs in at least
float32 (float16 and bfloat16 are never accumulated in their own type) and in float64 for
float64 inputs; ``accumulate="float64"`` asks for a float64 golden result from any input.
Outputs come back in the inputs' dtype.

numpy has no bfloat16.  An array whose dtype is named ``bfloat16`` (ml_dtypes registers one;
openvino depends on ml_dtypes) is accepted and returned as such, without this module
importing ml_dtypes.  Rounding to bfloat16 or float16 where a device does, on float32 arrays,
is irtool.reference.rounding's.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from irtool.core.errors import InputError

FLOAT_NAMES = ("float16", "bfloat16", "float32", "float64")
ACCUMULATE_NAMES = ("float32", "float64")


def is_supported_float(dtype: np.dtype) -> bool:
    return np.dtype(dtype).name in FLOAT_NAMES


def compute_dtype(input_dtype: np.dtype, accumulate: str | np.dtype | None = None) -> np.dtype:
    """float64 if asked (``accumulate``) or if the inputs are float64, else float32.

    ``accumulate`` is a floor, never a demotion: float64 inputs are computed in float64.
    """
    wide = np.dtype(input_dtype) == np.float64
    if accumulate is not None:
        try:
            name = np.dtype(accumulate).name
        except TypeError:
            name = str(accumulate)
        if name not in ACCUMULATE_NAMES:
            raise InputError(f"accumulate is {accumulate!r}; expected one of {', '.join(ACCUMULATE_NAMES)}")
        wide = wide or name == "float64"
    return np.dtype(np.float64 if wide else np.float32)


def common_float_dtype(named: Sequence[tuple[str, np.ndarray | None]]) -> np.dtype:
    """The one floating dtype shared by the named inputs (None entries are absent inputs)."""
    present = [(name, array) for name, array in named if array is not None]
    first_name, first = present[0]
    if not is_supported_float(first.dtype):
        raise InputError(f"{first_name} has dtype {first.dtype}; expected one of {', '.join(FLOAT_NAMES)}")
    for name, array in present[1:]:
        if array.dtype != first.dtype:
            raise InputError(f"{name} has dtype {array.dtype}; expected {first.dtype}, the dtype of {first_name}")
    return first.dtype


def to_output(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Cast a computed array to the inputs' dtype (rounding to nearest, ties to even)."""
    if array.dtype == dtype:
        return array
    return array.astype(dtype)
