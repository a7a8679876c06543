"""The model's own outputs against expected values the user gives: a judge beside the reference.

The expected values are an .npz keyed as ``irtool run --save-outputs`` writes the outputs (the
first name of each output; any of its names is taken), typically what the framework the model
came from computed on the same inputs.  Each output is compared with the statistics and
tolerances of a node's outputs (irtool.judge.compare), the default atol scaled to the output's
magnitude (irtool.judge.bounds), with a per-step series where the output is a
recurrent node's output that has a time axis.  An output the file lacks, or an array of another
shape than the model computed, is a usage error (nothing was computed wrong: the file does not
match the model); an array the model has no output for, and an element kind that differs are
failures that say so (and, for a framework runtime's outputs, a lacking output or another shape
too).  This judges any model, whether or not it holds a recurrent node.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from irtool.core.errors import RunError
from irtool.core.npz import RECORD_PREFIX, describe_dtype, read_npz
from irtool.core.precisions import loosest_precision
from irtool.judge.bounds import magnitude_bound
from irtool.judge.compare import OutputDiff, Tolerance, TolerancePolicy, compare_output, output_tolerance

WEIGHTS_COST_FACTOR = 3  # times what moving the f16 weights moved an output, added to its atol

PASS, FAIL = "pass", "fail"
NUMERIC_KINDS = "biuf"  # bool, signed and unsigned ints, floats


@dataclass(frozen=True)
class ExpectedOutputs:
    """The arrays of an expected-outputs file, by name, and the file (what messages call it)."""

    source: str
    arrays: Mapping[str, np.ndarray]
    note: str | None = None  # how a runtime computed them, where not from the model file as it is


@dataclass(frozen=True)
class ExpectedJudgment:
    """Every model output against its expected values; ``outputs`` holds one diff per model output
    (in model order), then one per array of the file that names no output."""

    source: str
    outputs: tuple[OutputDiff, ...]
    missing: tuple[str, ...] = ()  # model outputs the file has no array for
    extra: tuple[str, ...] = ()  # arrays of the file that name no model output
    bound: str | None = None  # how the bound was chosen, where not the precision's default alone
    mismatch: str | None = None  # the file does not match the model (a usage error): nothing was compared
    note: str | None = None  # how the expected values were computed, where it matters (ExpectedOutputs.note)

    @property
    def passed(self) -> bool:
        return self.mismatch is None and all(diff.passed for diff in self.outputs)

    @property
    def verdict(self) -> str:
        return PASS if self.passed else FAIL

    @property
    def failed(self) -> tuple[str, ...]:
        return tuple(diff.name for diff in self.outputs if not diff.passed)

    def summary(self) -> str:
        """"2 of 3 outputs outside tolerance of out.npz (y, h)" or "3 of 3 outputs within tolerance of out.npz"."""
        count = len(self.outputs)
        if self.failed:
            return (f"{len(self.failed)} of {count} outputs outside tolerance of {self.source} "
                    f"({', '.join(self.failed)})")
        return f"{count} of {count} outputs within tolerance of {self.source}"


def load_expected(path: str | Path, what: str = "--expected file") -> ExpectedOutputs:
    """The expected outputs from an .npz, read with irtool's bounded reader; an empty file or an
    array that is not numbers (strings, complex, records) is refused in one line."""
    path = Path(path)
    # irtool run --save-outputs keeps its record of the run beside the outputs, under keys of its own
    arrays = {key: array for key, array in read_npz(path, what).items() if not key.startswith(RECORD_PREFIX)}
    if not arrays:
        raise RunError(f"{path}: holds no arrays; expected the model's outputs by name "
                       f"(numpy.savez(path, OUTPUT=array, ...); irtool run --save-outputs shows the names)")
    for name, array in arrays.items():
        if array.dtype.kind not in NUMERIC_KINDS:
            raise RunError(f"{path}: array {name!r} has dtype {describe_dtype(array.dtype)}; expected outputs are "
                           f"numbers (float, int or bool arrays)")
    return ExpectedOutputs(str(path), arrays)


def check_expected_names(labels: Sequence[tuple[str, ...]], expected: ExpectedOutputs) -> None:
    """RunError (a usage error: nothing was computed wrong) where the file has no array for one of
    the model's outputs (by any of its names, ``labels[k]``): one line naming the file, the output
    and the arrays the file has."""
    for names in labels:
        if not any(name in expected.arrays for name in names):
            also = f" (or {', '.join(names[1:])})" if len(names) > 1 else ""
            raise RunError(f"{expected.source}: has no array for the model's output {names[0]}{also}; it has "
                           f"{', '.join(expected.arrays)} (irtool run --save-outputs shows the outputs' names)")


def shape_mismatch(labels: Sequence[tuple[str, ...]], actual: Sequence[np.ndarray],
                   expected: ExpectedOutputs, declared: Mapping[str, tuple[int | None, ...]] | None = None) \
        -> str | None:
    """Where an array of the file has another shape than the output the model computed on these
    inputs, that in words (the file does not match the model, or was computed on other inputs,
    which says nothing of the device: a usage error), else None.  ``declared``: the shapes the
    source model (an .onnx file) declares its outputs with, by name: an array of the shape declared
    where OpenVINO's output is not is no mismatch of the file, but a conversion that changed the
    output (ONNX's layout 1, which OpenVINO's frontend ignores), a failure judge_expected says."""
    for names, got in zip(labels, actual):
        key = names[0] if names[0] in expected.arrays else next((n for n in names if n in expected.arrays), None)
        if key is None or expected.arrays[key].shape == got.shape:
            continue
        said = next((declared[n] for n in names if n in (declared or {})), None)
        if said is not None and _fits(expected.arrays[key].shape, said) and not _fits(got.shape, said):
            continue  # the conversion shaped the output otherwise: judge_expected fails it
        return (f"{expected.source}: array {key} has shape {list(expected.arrays[key].shape)}, but the "
                f"model's output {names[0]} is {list(got.shape)} on these inputs: the file does not "
                f"match the model (or its inputs)")
    return None


def _fits(shape: tuple[int, ...], declared: tuple[int | None, ...]) -> bool:
    return len(shape) == len(declared) and all(want is None or want == size for size, want in zip(shape, declared))


def judge_expected(labels: Sequence[tuple[str, ...]], actual: Sequence[np.ndarray], expected: ExpectedOutputs,
                   policy: TolerancePolicy, precision: str, time_axes: Mapping[int, int] | None = None,
                   weights: str | None = None, allowances: Mapping[int, tuple[np.ndarray, str]] | None = None,
                   flowing: float = 0.0, weights_cost: Mapping[int, float] | None = None) -> ExpectedJudgment:
    """Each model output (known by ``labels[k]``, its names, the first as --save-outputs writes it)
    against the array of the file that bears one of its names; ``time_axes``: model output index ->
    its time axis, for the outputs that have one.

    The expected values are a framework's, in float32 from the weights it holds: where the model
    stores its weights coarser (``weights``: f16 of compress_to_fp16, or bf16), the outputs are judged with
    that type's tolerance, since the rounding of the weights moves them; ``allowances``: per model
    output, what the device's rounding moves it by on these inputs (elementwise) and how that was
    found, added to the tolerance; ``flowing``: the largest magnitude flowing through the model (its
    inputs, weights, the intermediate values read), below which rounding sets the atol's floor
    (irtool.judge.bounds); ``weights_cost``: per model output, what moving the coarser weights within
    their rounding moved it by on these inputs (irtool.pipeline.device_run.weights_rounding_cost),
    WEIGHTS_COST_FACTOR times which is added to its atol (a deep model's outputs move by more than the
    type's tolerance; the framework's own rounding moved outputs by up to 1.6 times the most of two
    random draws, measured on three models)."""
    said = None
    if weights is not None and loosest_precision([precision, weights]) != precision:
        precision = loosest_precision([precision, weights])
        said = (f"the model's weights are stored as {weights} (decompressed by Convert ops"
                + (", as compress_to_fp16 writes them" if weights == "f16" else "")
                + f"): the outputs are judged with {weights}'s tolerance" +
                (f" plus {WEIGHTS_COST_FACTOR} times what moving the weights within their {weights} rounding (as the "
                 f"framework's f32 weights may lie) moved each output on these inputs (measured on copies so moved): "
                 f"what rounding the weights costs" if weights_cost else ", what rounding the weights costs"))
    stored = expected.arrays
    file = Path(expected.source).name  # the report names the whole path once, above the outputs
    used: set[str] = set()
    diffs, missing = [], []
    for k, (names, got) in enumerate(zip(labels, actual)):
        tolerance = output_tolerance(policy, names, precision, got.dtype)
        key = names[0] if names[0] in stored else next((name for name in names if name in stored), None)
        if key is None:
            missing.append(names[0])
            diffs.append(OutputDiff(names[0], tuple(got.shape), tolerance, passed=False,
                                    problem=f"{file} has no array for it (by any of its names: "
                                            f"{', '.join(names)})"))
            continue
        used.add(key)
        want = stored[key]
        if _family(want.dtype) != _family(got.dtype):
            diffs.append(OutputDiff(names[0], tuple(got.shape), tolerance, passed=False,
                                    problem=f"dtype {got.dtype.name} differs from expected "
                                            f"{describe_dtype(want.dtype)} in {file}"))
            continue
        allowance, how = (allowances or {}).get(k, (None, None))
        if how is not None:
            said = "; ".join(filter(None, [said, how]))
        bounded = allowance is not None and allowance.shape == got.shape
        if bounded and not policy.given(names):  # the allowance is the whole bound, derived for this output
            tolerance = Tolerance(0.0, 0.0, "derived: what the device's rounding moves it by (allowance)")
        else:
            tolerance = magnitude_bound(tolerance, want, policy.atol_given(names), flowing, precision)
            moved = (weights_cost or {}).get(k)
            if moved and not policy.atol_given(names):
                tolerance = Tolerance(tolerance.atol + WEIGHTS_COST_FACTOR * moved, tolerance.rtol,
                                      f"{tolerance.source}, plus {WEIGHTS_COST_FACTOR} x {moved:.3g} (what moving the "
                                      f"weights within their rounding moved it by)")
        diffs.append(compare_output(names[0], got, want, tolerance, (time_axes or {}).get(k),
                                    allowance if bounded else None))
    extra = [key for key in stored if key not in used]
    outputs = ", ".join(names[0] for names in labels)
    for key in extra:
        array = stored[key]
        diffs.append(OutputDiff(key, tuple(array.shape), output_tolerance(policy, (key,), precision, array.dtype),
                                passed=False, problem=f"in {file}, but the model has no output of that "
                                                      f"name (its outputs: {outputs})"))
    return ExpectedJudgment(expected.source, tuple(diffs), tuple(missing), tuple(extra), said, note=expected.note)


def _family(dtype: np.dtype) -> str:
    """Floats compare with floats (any width: float64 from numpy for an f32 output), whole numbers
    (and bools) with whole numbers."""
    return "float" if np.dtype(dtype).kind == "f" else "whole"
