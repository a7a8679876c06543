"""Cost of the reference that rounds where a device does (irtool.reference.rounding) against the
exact reference, on the same inputs, in one numpy-only process.

For GRU, LSTM and RNN sequences (forward, full lengths, f32 inputs) at (batch, seq, input, hidden)
= (8, 100, 64, 64), (16, 100, 256, 256) and (1, 200, 128, 128), it times the exact reference and
the emulations of three paths of schemas/precision.json: cpu-native-bf16 (inputs, weights, the state
and GRU's reset product rounded to bf16), cpu-loop-decomposed-bf16 (a cell decomposed onto
FullyConnected layers: what enters each product and each product's result rounded) and
cpu-decomposed-f16 (every gate too, in f16).  Each emulation runs two ways: free-running (each
step from its own previous state: a cell, a node only bounded, a model-level bound) and as a
sequence node is judged, each step from a device's Y (``given_states``: here the exact run's Y),
which the driver computes a chunk of steps at a time.  Rounds interleave them; the best median of
the rounds is kept, and the ratio to the exact (free-running) reference is printed, one table per
way (the target: at most 1.5x).  Times are the process's CPU time (``--clock wall`` for wall-clock
time): on the 2 cores shared with other work (load 8 to 13) wall-clock ratios of the same code
swung from 0.9x to 5.5x.  Figures: docs/reference.md, "Cost of the emulated rounding".

    python benchmarks/bench_reference_emulation.py            # 5 rounds, about a minute
    python benchmarks/bench_reference_emulation.py --quick    # 1 round
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from irtool.judge.precision import emulation
from irtool.reference import gru_sequence, lstm_sequence, rnn_sequence

SHAPES = [(8, 100, 64, 64), (16, 100, 256, 256), (1, 200, 128, 128)]
OPS = {"GRU": (gru_sequence, 3, 1), "LSTM": (lstm_sequence, 4, 2), "RNN": (rnn_sequence, 1, 1)}
PATHS = {"exact": None, "bf16 native": ("CPU", ("RNNSeq",), "bf16"),
         "bf16 decomposed": ("CPU", ("TensorIterator",), "bf16", False, False),
         "f16 decomposed": ("CPU", ("Loop",), "f16", False, False)}
WAYS = ("free-running", "each step from a device's Y (as judged)")


def inputs(op: str, shape: tuple[int, int, int, int]) -> list[np.ndarray]:
    batch, seq, size, hidden = shape
    _, gates, states = OPS[op]
    rng = np.random.default_rng(sum(shape) + gates)
    f = np.float32
    return [rng.uniform(-1, 1, (batch, seq, size)).astype(f),
            *[rng.uniform(-1, 1, (batch, 1, hidden)).astype(f) for _ in range(states)],
            np.full(batch, seq, np.int32),
            (rng.uniform(-1, 1, (1, gates * hidden, size)) / np.sqrt(size)).astype(f),
            (rng.uniform(-1, 1, (1, gates * hidden, hidden)) / np.sqrt(hidden)).astype(f),
            rng.uniform(-0.1, 0.1, (1, gates * hidden)).astype(f)]


def timed(function, arrays, hidden: int, rounding, repeats: int, given=None, clock=time.process_time) -> float:
    extra = {"given_states": given} if given is not None else {}
    function(*arrays, hidden_size=hidden, direction="forward", rounding=rounding, **extra)  # warm
    times = []
    for _ in range(repeats):
        started = clock()
        function(*arrays, hidden_size=hidden, direction="forward", rounding=rounding, **extra)
        times.append(clock() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="1 round, fewer repeats")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    rounds, repeats = (1, 3) if args.quick else (args.rounds, 7)
    roundings = {name: (emulation(*key).rounding if key else None) for name, key in PATHS.items()}
    names = [name for name in PATHS if name != "exact"]
    rows = {way: [] for way in WAYS}
    for op, (function, _, _) in OPS.items():
        for shape in SHAPES:
            arrays = inputs(op, shape)
            given = function(*arrays, hidden_size=shape[3], direction="forward")[0]  # a device's Y, as it were
            best = {(name, way): [] for name in PATHS for way in WAYS}
            for _ in range(rounds):
                for name, rounding in roundings.items():
                    for way in WAYS[:1] if rounding is None else WAYS:
                        best[name, way].append(timed(function, arrays, shape[3], rounding, repeats,
                                                     given if way != WAYS[0] else None, clock))
            exact = 1000 * min(best["exact", WAYS[0]])
            for way in WAYS:
                ms = {name: 1000 * min(best[name, way]) for name in names}
                rows[way].append(f"| {op} | {','.join(map(str, shape))} | {exact:.2f} | "
                                 + " | ".join(f"{ms[name]:.2f} | {ms[name] / exact:.2f}x" for name in names) + " |")
            print(f"{op} {shape}: done", file=sys.stderr, flush=True)
    for way in WAYS:
        print(f"\nEmulated {way}:\n")
        print("| op | batch,seq,input,hidden | exact (ms) | " + " | ".join(f"{name} (ms) | ratio" for name in names) + " |")
        print("|---|---|---|" + "---|---|" * len(names))
        print("\n".join(rows[way]))

if __name__ == "__main__":
    main()
