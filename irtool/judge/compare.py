"""Error statistics of one output against its expected values, and the tolerance policy.

An element passes when ``|actual - expected| <= atol + rtol * |expected|`` (numpy's
``isclose`` rule).  NaN and Inf are compared as values: a NaN or Inf matches only the
same thing in the expected output, and any other non-finite element fails whatever the
tolerance.  The default tolerances per effective precision are measured (docs/run.md
gives the grid and the numbers).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from irtool.core.precisions import loosest_precision


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float
    source: str = ""  # where it came from: "f32 default", "--atol", "--atol Y", ...


# Measured with benchmarks/measure_tolerance.py (432 cases: GRU/LSTM/RNN sequences and cells,
# hidden 4..64, 4..32 steps, all directions; docs/run.md has the table).  Worst max abs error
# of OpenVINO CPU against the reference: f32 2.7e-7, bf16 8.9e-3 (5.7e-3 with rtol 1e-2).
# f32 keeps a 37x margin and still fails any bf16 run (median bf16 error 2.9e-3); bf16 keeps
# a 2x margin and still fails real bugs (errors of 0.1 and more); measured on an AMD EPYC with
# AVX512_BF16.  f16 did not run on the CPUs measured (one without FP16 in its capabilities runs an
# f16 request as bf16 where it has bf16, else as f32), so its values are bf16's scaled by their unit roundoffs
# (2^-11 / 2^-8 = 1/8) and rounded up; they also apply to f16 outputs at any precision
# (diff_outputs), where f16 models at f32 measured up to 3.1e-5.
DEFAULT_TOLERANCES: Mapping[str, Tolerance] = {  # one per irtool.core.precisions.PRECISIONS, in order
    "f32": Tolerance(atol=1e-5, rtol=1e-4, source="f32 default"),
    "f16": Tolerance(atol=3e-3, rtol=2e-3, source="f16 default"),
    "bf16": Tolerance(atol=2e-2, rtol=1e-2, source="bf16 default"),
}


@dataclass(frozen=True)
class TolerancePolicy:
    """Overrides of the per-precision defaults: for every output, and per output name."""

    atol: float | None = None
    rtol: float | None = None
    output_atol: Mapping[str, float] | None = None
    output_rtol: Mapping[str, float] | None = None

    def for_output(self, names: tuple[str, ...], precision: str, default: Tolerance | None = None) -> Tolerance:
        """The tolerance of an output (known by any of ``names``) run at ``precision``.

        A per-output value beats a global one, which beats ``default`` (where a bound was derived
        for the output), which beats the precision's default.
        """
        default = default or DEFAULT_TOLERANCES.get(precision, DEFAULT_TOLERANCES["f32"])
        atol, atol_from = _pick(self.output_atol, names, self.atol, default.atol, "--atol")
        rtol, rtol_from = _pick(self.output_rtol, names, self.rtol, default.rtol, "--rtol")
        sources = [s for s in (atol_from, rtol_from) if s]
        if len(sources) < 2:
            sources.append(default.source)
        return Tolerance(atol, rtol, ", ".join(sources))

    def given(self, names: tuple[str, ...]) -> bool:
        """Whether the policy sets the tolerance of an output known by any of ``names`` (a bound derived
        for it then does not widen it)."""
        per_output = set(self.output_atol or {}) | set(self.output_rtol or {})
        return self.atol is not None or self.rtol is not None or any(name in per_output for name in names)

    def atol_given(self, names: tuple[str, ...]) -> bool:
        """Whether the atol of an output known by ``names`` is the user's (overall or its own), not a default."""
        return self.atol is not None or any(name in (self.output_atol or {}) for name in names)

    def unknown_outputs(self, names: set[str]) -> list[str]:
        """Per-output overrides that name no output (a typo would otherwise pass silently)."""
        given = set(self.output_atol or {}) | set(self.output_rtol or {})
        return sorted(given - names)


def _pick(per_output: Mapping[str, float] | None, names: tuple[str, ...], overall: float | None,
          default: float, option: str) -> tuple[float, str]:
    for name in names:
        if per_output and name in per_output:
            return per_output[name], f"{option} {name}"
    if overall is not None:
        return overall, option
    return default, ""


def output_tolerance(policy: TolerancePolicy, names: tuple[str, ...], precision: str, dtype: Any,
                     default: Tolerance | None = None) -> Tolerance:
    """The tolerance of one output: the policy's, else ``default`` (a derived bound), else the one of
    ``precision`` or of the output's own element type when that is coarser."""
    return policy.for_output(names, loosest_precision([precision, dtype_precision(dtype)]), default)


def dtype_precision(dtype: np.dtype) -> str:
    """The precision an array's element type holds: f16 and bf16 for theirs, f32 for the rest."""
    return {"float16": "f16", "bfloat16": "bf16"}.get(np.dtype(dtype).name, "f32")


@dataclass(frozen=True)
class OutputDiff:
    """How far one output is from its expected values.

    ``needed_atol`` is the smallest atol that passes every finite element with the rtol in
    force, ``needed_rtol`` the smallest rtol with the atol in force (inf: none does, an
    expected 0 is off by more than atol).  ``step_max_abs`` is the max abs error at each
    step of the time axis, for outputs that have one.
    """

    name: str
    shape: tuple[int, ...]
    tolerance: Tolerance
    passed: bool
    problem: str | None = None
    max_abs: float = 0.0
    max_rel: float = 0.0
    mean_abs: float = 0.0
    outside: int = 0
    total: int = 0
    worst_index: tuple[int, ...] | None = None
    worst_actual: float | None = None
    worst_expected: float | None = None
    needed_atol: float = 0.0
    needed_rtol: float = 0.0
    step_max_abs: tuple[float, ...] | None = None
    first_step_outside: int | None = None  # the first time step with an element outside tolerance
    actual_nan: int = 0
    actual_inf: int = 0
    expected_nan: int = 0
    expected_inf: int = 0
    nonfinite_mismatch: int = 0
    overflow: int = 0  # elements beyond the range of the type the device computed in, infinite on the device
    unjudged: int = 0  # elements left out: steps no reference can judge (irtool.judge.precision)
    allowance: float = 0.0  # the most a derived bound added to atol at any element (what rounding carries there)

    @property
    def outside_share(self) -> float:
        return self.outside / self.total if self.total else 0.0


def shown_pair(actual: float | None, expected: float | None, digits: int = 7) -> tuple[str, str]:
    """A device value and its expected value as text, with the digits that show where they differ:
    up to ``digits`` significant digits, more while the two read the same, up to what tells any
    two values of their type apart (9 for values an f32 holds, 17 for f64); each value never
    longer than the shortest text that reads back as it (0.3, not 0.29999999999999999).  Values
    that read the same then are equal; None is "-", non-finite values are "inf", "-inf", "nan"."""
    both = [float(v) for v in (actual, expected) if v is not None and np.isfinite(v)]
    f32 = all(float(np.float32(v)) == v for v in both)

    def text(value: float | None, places: int) -> str:
        if value is None:
            return "-"
        if not np.isfinite(value):
            return str(float(value))
        for shorter in range(1, places):
            said = f"{value:.{shorter}g}"
            if (np.float32(said) == np.float32(value)) if f32 else float(said) == value:
                return said
        return f"{value:.{places}g}"

    places, limit = digits, 9 if f32 else 17
    while places < limit and len(both) == 2 and text(actual, places) == text(expected, places):
        places += 1
    return text(actual, places), text(expected, places)


def compare_output(name: str, actual: np.ndarray, expected: np.ndarray, tolerance: Tolerance,
                   time_axis: int | None = None, allowance: np.ndarray | None = None,
                   judged: np.ndarray | None = None, range_limit: float | None = None) -> OutputDiff:
    """Compare one output element by element; see OutputDiff for what is measured.

    ``allowance`` (broadcast to the output) adds to atol where a bound was derived per step;
    ``judged`` (broadcast too) leaves out the elements no comparison can judge, counted apart;
    ``range_limit``: the largest value of the type the device computed in, past which an expected
    value is infinite on the device (an overflow, counted apart, not a mismatch).
    """
    if actual.shape != expected.shape:
        return OutputDiff(name, tuple(actual.shape), tolerance, passed=False,
                          problem=f"shape {list(actual.shape)} differs from expected {list(expected.shape)}")
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf: masked out by finite
        diff = np.abs(a - e)
    scale = np.abs(e)
    finite = np.isfinite(diff) & np.isfinite(scale)  # a - e is finite where both are
    all_finite = bool(finite.all())
    if all_finite:  # the usual case: no element needs masking, and there are no NaN or Inf to count
        mismatch = np.zeros(a.shape, dtype=bool)
        ranked = diff
    else:
        same_nonfinite = (np.isnan(a) & np.isnan(e)) | (np.isinf(a) & (a == e))
        overflowed = _overflowed(a, e, range_limit)
        mismatch = ~finite & ~same_nonfinite & ~overflowed
        diff[~finite] = 0.0
        scale[~finite] = 0.0
        ranked = np.where(mismatch, np.inf, diff)
    limit = tolerance.atol + tolerance.rtol * scale if allowance is None else \
        tolerance.atol + tolerance.rtol * scale + allowance
    outside = (diff > limit) | mismatch
    left_out = 0
    every_step = _per_step(ranked, time_axis)  # the series shows every step, judged or not: the note says which
    if judged is not None:
        judged = np.broadcast_to(judged, a.shape)
        left_out = int(a.size - judged.sum())
        outside &= judged
        diff = np.where(judged, diff, 0.0)
        ranked = np.where(judged, ranked, 0.0)
    worst = np.unravel_index(int(np.argmax(ranked)), a.shape) if a.size and left_out < a.size else None
    max_abs = _max(ranked)  # inf where a NaN or Inf the other side lacks is judged: then no tolerance passes it
    hopeless = not np.isfinite(max_abs)
    return OutputDiff(
        name=name, shape=tuple(a.shape), tolerance=tolerance, passed=not bool(outside.any()),
        max_abs=max_abs, max_rel=np.inf if hopeless else _max(_relative(diff, scale)),
        mean_abs=float(diff.mean()) if all_finite and a.size else float(diff[finite].mean()) if finite.any() else 0.0,
        outside=int(outside.sum()), total=int(a.size),
        worst_index=tuple(int(i) for i in worst) if worst is not None else None,
        worst_actual=float(a[worst]) if worst is not None else None,
        worst_expected=float(e[worst]) if worst is not None else None,
        needed_atol=np.inf if hopeless else _max(np.maximum(diff - tolerance.rtol * scale, 0.0)),
        needed_rtol=np.inf if hopeless else _max(_relative(np.maximum(diff - tolerance.atol, 0.0), scale)),
        step_max_abs=every_step, first_step_outside=_first_step(outside, time_axis),
        unjudged=left_out, allowance=_largest_allowance(allowance, judged, a.shape),
        **({} if all_finite else _nonfinite_counts(a, e, mismatch, range_limit)))


def _largest_allowance(allowance: np.ndarray | None, judged: np.ndarray | None, shape: tuple[int, ...]) -> float:
    if allowance is None:
        return 0.0
    given = np.broadcast_to(allowance, shape)
    return _max(given[judged] if judged is not None else given)


def _overflowed(a: np.ndarray, e: np.ndarray, range_limit: float | None) -> np.ndarray:
    """Where the device is infinite and the expected value lies past ``range_limit`` with the same sign."""
    if range_limit is None:
        return np.zeros(a.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        return np.isinf(a) & np.isfinite(e) & (np.abs(e) > range_limit) & (np.sign(a) == np.sign(e))


def _nonfinite_counts(a: np.ndarray, e: np.ndarray, mismatch: np.ndarray,
                      range_limit: float | None) -> dict[str, int]:
    return dict(actual_nan=int(np.isnan(a).sum()), actual_inf=int(np.isinf(a).sum()),
                expected_nan=int(np.isnan(e).sum()), expected_inf=int(np.isinf(e).sum()),
                nonfinite_mismatch=int(mismatch.sum()), overflow=int(_overflowed(a, e, range_limit).sum()))


def _relative(diff: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """diff / scale (both >= 0), with 0/0 = 0 and x/0 = inf: one division, then the zeros."""
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.asarray(diff / scale)  # an array for 0-d operands too (a scalar output)
    relative[diff == 0] = 0.0
    return relative


def _max(values: np.ndarray) -> float:
    return float(values.max()) if values.size else 0.0


def _first_step(outside: np.ndarray, axis: int | None) -> int | None:
    if axis is None or outside.ndim <= axis or not outside.any():
        return None
    other = tuple(i for i in range(outside.ndim) if i != axis)
    return int(np.argmax(outside.any(axis=other)))


def _per_step(ranked: np.ndarray, axis: int | None) -> tuple[float, ...] | None:
    if axis is None or ranked.ndim <= axis:
        return None
    other = tuple(i for i in range(ranked.ndim) if i != axis)
    return tuple(float(v) for v in ranked.max(axis=other)) if ranked.size else ()


def diff_outputs(labels: Sequence[tuple[str, ...]], actual: Sequence[np.ndarray], expected: Sequence[np.ndarray],
                 policy: TolerancePolicy, precision: str) -> tuple[OutputDiff, ...]:
    """Each model output against its expected values, with the tolerance of ``precision`` (or of
    the output's own element type when that is coarser: an f16 output holds f16 roundings
    whatever the device computes in) and the policy."""
    return tuple(compare_output(names[0], got, want, output_tolerance(policy, names, precision, got.dtype), None)
                 for names, got, want in zip(labels, actual, expected))
