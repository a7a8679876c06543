"""Cost of ONNX semantics in the reference: evaluate_node's extra paths against the plain ones.

At (batch, seq, input, hidden) = (16, 100, 256, 256) and (1, 100, 128, 128), f32, it times in
one numpy-only process (rounds interleaved, best median kept):

- ov-layout:    lstm_sequence / gru_sequence (the OpenVINO-layout ops), the baseline
- onnx:         evaluate_node on the same node in ONNX layout (layout 0): the conversions
- onnx+P:       LSTM with peepholes (the extended step: f in two calls, three more products)
- onnx+P+if:    LSTM with peepholes and input_forget
- bidir:        bidirectional GRU, one activation set for both directions (ONNX lists it twice)
- bidir+per-dir: bidirectional GRU, Sigmoid/Tanh forward and HardSigmoid/Tanh backward
                 (activation kernels per direction, input scale per direction)

and prints each as a ratio of its row's baseline (ov-layout for the forward rows, bidir for
per-dir).  Times are this process's CPU time with BLAS on one thread (set before numpy loads):
the machines have 2 cores and other work on them, which wall-clock medians cannot hide, and
every peer here is the same numpy code in the same process.

    python benchmarks/bench_onnx_node.py            # 5 rounds
    python benchmarks/bench_onnx_node.py --rounds 1 --repeats 1   # runs once each: that it works
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads its BLAS
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from irtool.onnx.semantics import evaluate_node, inputs_to_onnx  # noqa: E402
from irtool.reference import lstm_sequence  # noqa: E402

SHAPES = [(16, 100, 256, 256), (1, 100, 128, 128)]


def cpu_time(run: Callable[[], object], repeats: int) -> float:
    """Median CPU time of ``run`` after one warm-up call."""
    run()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return statistics.median(times)


def runners(shape: tuple[int, int, int, int]) -> dict[str, Callable[[], object]]:
    batch, seq, size, hidden = shape
    rng = np.random.default_rng(sum(shape))

    def uniform(*dims: int, bound: float = 1.0) -> np.ndarray:
        return rng.uniform(-bound, bound, dims).astype(np.float32)

    lengths = np.full(batch, seq, np.int32)
    lstm = (uniform(batch, seq, size), uniform(batch, 1, hidden), uniform(batch, 1, hidden), lengths,
            uniform(1, 4 * hidden, size, bound=hidden ** -0.5), uniform(1, 4 * hidden, hidden, bound=hidden ** -0.5),
            uniform(1, 4 * hidden, bound=0.1))
    onnx_lstm = inputs_to_onnx("LSTM", *lstm)
    lstm_list = [onnx_lstm[n] for n in ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c")]
    peepholes = uniform(1, 3 * hidden, bound=0.5)
    gru = (uniform(batch, seq, size), uniform(batch, 2, hidden), lengths,
           uniform(2, 3 * hidden, size, bound=hidden ** -0.5), uniform(2, 3 * hidden, hidden, bound=hidden ** -0.5),
           uniform(2, 3 * hidden, bound=0.1))
    onnx_gru = inputs_to_onnx("GRU", *gru)
    gru_list = [onnx_gru[n] for n in ("X", "W", "R", "B", "sequence_lens", "initial_h")]
    bidirectional = {"hidden_size": hidden, "direction": "bidirectional"}
    return {
        "ov-layout": lambda: lstm_sequence(*lstm, hidden_size=hidden, direction="forward"),
        "onnx": lambda: evaluate_node("LSTM", 22, {"hidden_size": hidden}, lstm_list),
        "onnx+P": lambda: evaluate_node("LSTM", 22, {"hidden_size": hidden}, [*lstm_list, peepholes]),
        "onnx+P+if": lambda: evaluate_node("LSTM", 22, {"hidden_size": hidden, "input_forget": 1},
                                           [*lstm_list, peepholes]),
        "bidir": lambda: evaluate_node("GRU", 22, dict(bidirectional, activations=["Sigmoid", "Tanh"] * 2), gru_list),
        "bidir+per-dir": lambda: evaluate_node(
            "GRU", 22, dict(bidirectional, activations=["Sigmoid", "Tanh", "HardSigmoid", "Tanh"]), gru_list),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed calls per peer and round, each median's (default: 5 at batch 16, 15 at batch 1)")
    args = parser.parse_args()
    best: dict[tuple, float] = {}
    prepared = {shape: runners(shape) for shape in SHAPES}
    for _ in range(args.rounds):
        for shape, named in prepared.items():
            for name, run in named.items():
                seconds = cpu_time(run, args.repeats or (5 if shape[0] > 1 else 15))
                best[shape, name] = min(best.get((shape, name), seconds), seconds)
    names = list(prepared[SHAPES[0]])
    print(f"{'batch,seq,in,hid':17} " + " ".join(f"{n:>16}" for n in names))
    for shape in SHAPES:
        base = {n: best[shape, "bidir" if n.startswith("bidir") else "ov-layout"] for n in names}
        cells = [f"{best[shape, n] * 1e3:7.2f}ms x{best[shape, n] / base[n]:4.2f}" for n in names]
        print(f"{','.join(map(str, shape)):17} " + " ".join(f"{c:>16}" for c in cells))
    print("CPU time, best median over rounds; xN = ratio to ov-layout (LSTM columns) or to bidir (GRU columns)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
