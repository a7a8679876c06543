"""Overhead of ``irtool run`` over a bare OpenVINO read + compile + infer of the same model, in one process.

The peer is what a user would write by hand: ``Core.read_model``, ``compile_model(CPU,
{INFERENCE_PRECISION_HINT: f32})``, one inference on the same inputs.  ``irtool run`` is
called through ``irtool.cli.main`` (output thrown away), so its time includes the device
list, query_model, the read-back of properties, input generation, the numpy reference,
the diff and the rendering.  Rounds interleave the two and the best median is kept (these
machines have 2 cores and other work on them).  A breakdown shows where irtool's extra time goes.

    python benchmarks/bench_run_overhead.py [--rounds 5] [--repeats 7]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from irtool.build import build_and_save
from irtool.cases import OpCase
from irtool.cli import main as irtool_main
from irtool.runtime.compile import check_support
from irtool.runtime.core import core
from irtool.execute import find_rnn_op, make_inputs, reference_outputs
from irtool.runtime.devices import list_devices
from irtool.runtime.model import model_inputs

CASES = {
    "GRUSequence h16 T4 b2": OpCase("GRUSequence", {"hidden_size": 16, "direction": "forward"},
                                    {"batch_size": 2, "seq_length": 4, "input_size": 16}),
    "LSTMSequence bidi h128 T32 b4": OpCase("LSTMSequence", {"hidden_size": 128, "direction": "bidirectional"},
                                            {"batch_size": 4, "seq_length": 32, "input_size": 64}),
}


def bare(xml: Path, inputs: dict) -> Callable[[], None]:
    def step() -> None:
        model = core().read_model(str(xml))
        compiled = core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        compiled(inputs)
    return step


def irtool_run(xml: Path) -> Callable[[], None]:
    def step() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            code = irtool_main(["run", str(xml), "-d", "CPU", "--precision", "f32"])
        assert code == 0, code
    return step


def best_median(steps: dict[str, Callable[[], None]], rounds: int, repeats: int) -> dict[str, float]:
    medians: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                step()
                times.append(time.perf_counter() - start)
            medians[name].append(statistics.median(times))
    return {name: min(values) for name, values in medians.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    rows, parts = [], []
    with tempfile.TemporaryDirectory() as folder:
        for label, case in CASES.items():
            xml, _ = build_and_save(case, Path(folder) / f"{label.split()[0]}.xml")
            model = core().read_model(str(xml))
            rnn, _ = find_rnn_op(model)
            inputs = make_inputs(model_inputs(model), rnn, seed=0)
            for step in (bare(xml, inputs), irtool_run(xml)):  # warm up both
                step()
            times = best_median({"bare": bare(xml, inputs), "irtool": irtool_run(xml)}, args.rounds, args.repeats)
            rows.append((label, times["bare"], times["irtool"]))
            parts.append((label, best_median({
                "devices": list_devices,
                "query_model": lambda: check_support(model, "CPU", xml),
                "reference": lambda: reference_outputs(rnn, inputs),
            }, args.rounds, args.repeats)))
    print(f"irtool run vs bare openvino read+compile+infer, CPU f32, best median of {args.rounds} rounds x "
          f"{args.repeats}")
    print("| model | bare openvino (ms) | irtool run (ms) | overhead (ms) | ratio |")
    print("|---|---:|---:|---:|---:|")
    for label, base, tool in rows:
        print(f"| {label} | {base * 1e3:.1f} | {tool * 1e3:.1f} | {(tool - base) * 1e3:.1f} | {tool / base:.2f}x |")
    print("\nwhere the extra time goes (ms):")
    print("| model | list devices | query_model | numpy reference |")
    print("|---|---:|---:|---:|")
    for label, part in parts:
        print(f"| {label} | {part['devices'] * 1e3:.2f} | {part['query_model'] * 1e3:.2f} | "
              f"{part['reference'] * 1e3:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
