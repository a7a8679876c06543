"""Measure how far OpenVINO CPU is from the numpy reference at f32 and bf16, on a grid of cases.

These numbers set the default tolerances in irtool/judge/compare.py (docs/run.md shows them).
For each precision it prints the worst max-abs error over the grid, and the smallest atol
that passes every case for a few rtol values, with the case that needs it.

    python benchmarks/measure_tolerance.py [--quick]

Not run by the tests: the full grid takes about a minute on 2 cores.
"""
from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from irtool.judge.nodes import evaluate_node
from irtool.pipeline.build import build_model
from irtool.pipeline.inputs import seeded_inputs
from irtool.pipeline.prepare import prepare
from irtool.runtime.captured import input_arrays
from irtool.runtime.compile import compile_on, infer
from irtool.specs.cases import OpCase

RTOLS = (0.0, 1e-4, 1e-3, 1e-2, 5e-2)


@dataclass
class Sample:
    case: str
    precision: str
    diffs: list  # (abs diff array, |expected| array) per output


def grid(quick: bool) -> list[OpCase]:
    hidden = (4, 16) if quick else (4, 16, 64)
    seq = (4,) if quick else (4, 16, 32)
    seeds = (0,) if quick else (0, 1, 2)
    cases = []
    for h, t, seed in itertools.product(hidden, seq, seeds):
        sizes = {"batch_size": 3, "seq_length": t, "input_size": 16}
        for direction in ("forward", "reverse", "bidirectional"):
            cases.append(OpCase("GRUSequence", {"hidden_size": h, "direction": direction}, sizes, seed=seed))
            cases.append(OpCase("GRUSequence", {"hidden_size": h, "direction": direction, "linear_before_reset": True},
                                sizes, seed=seed))
            cases.append(OpCase("LSTMSequence", {"hidden_size": h, "direction": direction}, sizes, seed=seed))
            cases.append(OpCase("RNNSequence", {"hidden_size": h, "direction": direction}, sizes, seed=seed))
        cases.append(OpCase("GRUSequence", {"hidden_size": h, "direction": "forward", "clip": 0.5,
                                            "activations": ["tanh", "relu"]}, sizes, seed=seed))
        cell = {"batch_size": 3, "input_size": 16}
        for op in ("GRUCell", "LSTMCell", "RNNCell"):
            cases.append(OpCase(op, {"hidden_size": h}, cell, seed=seed))
    return cases


def measure(case: OpCase, precision: str) -> Sample:
    model = build_model(case)
    node = prepare(model, case.op_type).single
    inputs = seeded_inputs(model, case.seed)
    compiled, device_run = compile_on(model, "CPU", precision, {}, Path(case.op_type))
    assert device_run.precision == precision, device_run
    actual = infer(compiled, inputs, "CPU")
    expected = evaluate_node(node, input_arrays(node, inputs))
    diffs = []
    for k, got in enumerate(actual):
        want = expected[{index: port for port, index in node.model_outputs.items()}[k]]
        diffs.append((np.abs(got.astype(np.float64) - want), np.abs(want.astype(np.float64))))
    label = f"{case.op_type} {case.filled_attributes.get('direction', '')} h={case.symbols['hidden_size']} " \
            f"T={case.symbols.get('seq_length', 1)} lbr={case.filled_attributes.get('linear_before_reset', '-')} " \
            f"clip={case.filled_attributes['clip']} act={','.join(case.filled_attributes['activations'])} seed={case.seed}"
    return Sample(label, precision, diffs)


def needed_atol(sample: Sample, rtol: float) -> float:
    return max(float(np.max(np.maximum(d - rtol * e, 0.0))) for d, e in sample.diffs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small grid")
    args = parser.parse_args(argv)
    cases = grid(args.quick)
    print(f"{len(cases)} cases per precision (openvino CPU against irtool.reference)")
    for precision in ("f32", "bf16"):
        samples = [measure(case, precision) for case in cases]
        worst = max(samples, key=lambda s: needed_atol(s, 0.0))
        abs_errors = np.array([needed_atol(s, 0.0) for s in samples])
        print(f"\n{precision}: max abs error median {np.median(abs_errors):.3g}, p95 {np.percentile(abs_errors, 95):.3g}, "
              f"max {abs_errors.max():.3g} ({worst.case})")
        for rtol in RTOLS:
            need = [needed_atol(s, rtol) for s in samples]
            k = int(np.argmax(need))
            print(f"  rtol {rtol:<7g} needs atol {need[k]:.3g}  ({samples[k].case})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
