"""Speed of the numpy reference (irtool.reference) against its peers, on the same inputs.

For GRU and LSTM (forward, full sequence lengths, f32) at (batch, seq, input, hidden) =
(64,200,512,512), (16,100,256,256) and (1,100,128,128), it times:

- reference:     irtool.reference.gru_sequence / lstm_sequence
- openvino:      the OpenVINO GRUSequence-5 / LSTMSequence-5 on CPU, compiled with
                 INFERENCE_PRECISION_HINT f32 set explicitly (the CPU default here is bf16)
- onnxruntime:   the ONNX GRU / LSTM node on the CPU execution provider
- onnx.ref:      onnx.reference.ReferenceEvaluator on the same node

and prints GFLOP/s (flops = 2*batch*seq*dirs*gates*hidden*(input+hidden)) next to the
GFLOP/s of a numpy float32 2048x2048 matmul measured right beside the reference, in the same
numpy-only process, and next to the reference's GEMMs alone ("GEMMs only": the same input
and recurrent GEMMs, chunks and loop, without the element-wise work; the most this design
could reach with numpy on the machine).  Each peer runs in its own subprocess (idle thread pools of openvino or
onnxruntime slow numpy's BLAS badly); rounds interleave the peers and the best median of
the rounds is kept (these machines have 2 cores and other work on them).  All peers build
the same inputs from the same seed; ONNX layouts come from irtool.onnx.semantics.

    python benchmarks/bench_reference.py            # 5 rounds, about 3 minutes
    python benchmarks/bench_reference.py --quick    # 1 round, fewer repeats
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Callable

import numpy as np

SHAPES = [(64, 200, 512, 512), (16, 100, 256, 256), (1, 100, 128, 128)]
OPS = {"GRU": 3, "LSTM": 4}
PEERS = ("reference", "openvino", "onnxruntime", "onnx.ref")
MATMUL_N = 2048


def flops(op: str, shape: tuple[int, int, int, int]) -> float:
    batch, seq, inputs, hidden = shape
    return 2.0 * batch * seq * 1 * OPS[op] * hidden * (inputs + hidden)


def case_key(op: str, shape: tuple[int, ...]) -> str:
    return f"{op} {','.join(map(str, shape))}"


def make_inputs(op: str, shape: tuple[int, int, int, int]) -> tuple[np.ndarray, ...]:
    """OpenVINO-layout inputs (port order), identical in every process: seeded per case."""
    batch, seq, inputs, hidden = shape
    rng = np.random.default_rng(sum(shape) * OPS[op])
    rows = OPS[op] * hidden
    x = rng.uniform(-1, 1, (batch, seq, inputs)).astype(np.float32)
    h0 = rng.uniform(-1, 1, (batch, 1, hidden)).astype(np.float32)
    w = (rng.uniform(-1, 1, (1, rows, inputs)) / np.sqrt(inputs)).astype(np.float32)
    r = (rng.uniform(-1, 1, (1, rows, hidden)) / np.sqrt(hidden)).astype(np.float32)
    b = rng.uniform(-0.1, 0.1, (1, rows)).astype(np.float32)
    lengths = np.full(batch, seq, dtype=np.int32)
    if op == "LSTM":
        return x, h0, h0.copy(), lengths, w, r, b
    return x, h0, lengths, w, r, b


def median_time(run: Callable[[], object], min_seconds: float, min_repeats: int, max_repeats: int) -> float:
    """Median wall time of ``run`` after one warm-up call (which also sizes the repeats)."""
    start = time.perf_counter()
    run()
    warm = time.perf_counter() - start
    repeats = int(min(max_repeats, max(min_repeats, min_seconds / max(warm, 1e-9))))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# --- the peers, each built in its own process -------------------------------------------

def reference_runner(op: str, shape: tuple[int, int, int, int]) -> Callable[[], object]:
    from irtool.reference import gru_sequence, lstm_sequence

    inputs = make_inputs(op, shape)
    function = gru_sequence if op == "GRU" else lstm_sequence
    return lambda: function(*inputs, hidden_size=shape[3], direction="forward")


def openvino_runner(op: str, shape: tuple[int, int, int, int]) -> Callable[[], object]:
    import openvino as ov
    from openvino import opset1, opset5

    inputs = make_inputs(op, shape)
    hidden = shape[3]
    *activations, w, r, b = inputs
    parameters = [opset1.parameter(a.shape, a.dtype) for a in activations]
    weights = [opset1.constant(a) for a in (w, r, b)]
    factory = opset5.gru_sequence if op == "GRU" else opset5.lstm_sequence
    node = factory(*parameters, *weights, hidden, "forward")
    compiled = ov.Core().compile_model(ov.Model(node.outputs(), parameters), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    effective = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    if "32" not in effective:
        raise RuntimeError(f"OpenVINO compiled at {effective}, not f32")
    request = compiled.create_infer_request()
    feed = list(activations)
    return lambda: request.infer(feed)


def _onnx_model(op: str, shape: tuple[int, int, int, int]) -> tuple[bytes, dict[str, np.ndarray]]:
    from onnx import TensorProto, helper, numpy_helper

    from irtool.onnx.semantics import attributes_to_onnx, inputs_to_onnx

    tensors = inputs_to_onnx(op, *make_inputs(op, shape))
    weights = ("W", "R", "B")
    feeds = {name: array for name, array in tensors.items() if name not in weights}
    names = ["X", "W", "R", "B", "sequence_lens", "initial_h"] + (["initial_c"] if op == "LSTM" else [])
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    attributes = attributes_to_onnx(op, {"hidden_size": shape[3], "direction": "forward"})
    node = helper.make_node(op, names, outputs, **attributes)
    graph = helper.make_graph(
        [node], "bench",
        [helper.make_tensor_value_info(n, TensorProto.INT32 if n == "sequence_lens" else TensorProto.FLOAT,
                                       feeds[n].shape) for n in feeds],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        initializer=[numpy_helper.from_array(tensors[n], n) for n in weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model.SerializeToString(), feeds


def onnxruntime_runner(op: str, shape: tuple[int, int, int, int]) -> Callable[[], object]:
    import onnxruntime

    model, feeds = _onnx_model(op, shape)
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    return lambda: session.run(None, feeds)


def onnx_reference_runner(op: str, shape: tuple[int, int, int, int]) -> Callable[[], object]:
    from onnx import load_from_string
    from onnx.reference import ReferenceEvaluator

    model, feeds = _onnx_model(op, shape)
    evaluator = ReferenceEvaluator(load_from_string(model))  # it ignores sequence_lens: full lengths anyway
    return lambda: evaluator.run(None, feeds)


RUNNERS = {"reference": reference_runner, "openvino": openvino_runner, "onnxruntime": onnxruntime_runner,
           "onnx.ref": onnx_reference_runner}


def matmul_gflops(min_seconds: float) -> float:
    rng = np.random.default_rng(0)
    a = rng.random((MATMUL_N, MATMUL_N), dtype=np.float32)
    b = rng.random((MATMUL_N, MATMUL_N), dtype=np.float32)
    out = np.empty_like(a)
    seconds = median_time(lambda: np.matmul(a, b, out=out), min_seconds, 5, 20)
    return 2.0 * MATMUL_N ** 3 / seconds / 1e9


def gemms_only_runner(op: str, shape: tuple[int, int, int, int]) -> Callable[[], object]:
    """The reference's GEMMs alone, same shapes, chunks and loop: its design's own ceiling.

    Per chunk of steps (irtool.reference.recurrence.chunk_steps), the input GEMM W X^T; per
    step, R @ h (GRU without linear_before_reset: [Rz; Rr] @ h, then Rh @ (r . h)).  No
    gather, bias, element-wise work or output.
    """
    from irtool.reference.recurrence import chunk_steps

    batch, seq, inputs, hidden = shape
    x, _, *_, w, r, _ = make_inputs(op, shape)
    w, r = w[0], r[0]
    chunk = min(chunk_steps(w.shape[0], batch), seq)
    ordered = np.ascontiguousarray(x.transpose(1, 0, 2)).reshape(seq * batch, inputs)
    gates = np.empty((w.shape[0], chunk * batch), dtype=np.float32)
    state = np.zeros((hidden, batch), dtype=np.float32)
    products = ([(r[:2 * hidden], state, np.empty((2 * hidden, batch), np.float32)),
                 (r[2 * hidden:], state, np.empty((hidden, batch), np.float32))] if op == "GRU"
                else [(r, state, np.empty((r.shape[0], batch), np.float32))])

    def run() -> None:
        for first in range(0, seq, chunk):
            count = min(chunk, seq - first)
            np.matmul(w, ordered[first * batch:(first + count) * batch].T, gates[:, :count * batch])
            for _ in range(count):
                for matrix, vector, out in products:
                    np.matmul(matrix, vector, out)
    return run


def worker(peer: str, cases: list[tuple[str, tuple[int, int, int, int]]], quick: bool) -> dict[str, dict[str, float]]:
    """Time one peer on every case; the reference process also times the matmul beside each case."""
    min_seconds, min_repeats = (0.3, 2) if quick else (1.0, 3)
    results: dict[str, dict[str, float]] = {}
    for op, shape in cases:
        run = RUNNERS[peer](op, shape)
        entry = {}
        if peer == "reference":
            entry["matmul_before"] = matmul_gflops(min_seconds / 2)
        entry["seconds"] = median_time(run, min_seconds, min_repeats, 50)
        if peer == "reference":
            entry["matmul_after"] = matmul_gflops(min_seconds / 2)
            entry["gemms_only"] = median_time(gemms_only_runner(op, shape), min_seconds / 2, min_repeats, 50)
        results[case_key(op, shape)] = entry
    return results


# --- the parent: interleaved rounds, best medians, the table ------------------------------

def run_round(peers: list[str], cases: list, quick: bool) -> dict[str, dict]:
    measured = {}
    for peer in peers:
        command = [sys.executable, __file__, "--worker", peer, "--cases", json.dumps(cases)]
        command += ["--quick"] if quick else []
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"the {peer} worker failed:\n{done.stderr}")
        measured[peer] = json.loads(done.stdout)
    return measured


def table(rounds: list[dict[str, dict]], cases: list) -> str:
    header = (f"{'op':5} {'batch,seq,in,hid':17} {'numpy mm':>9} {'reference':>10} {'% of mm':>8} "
              f"{'GEMMs only':>11} {'openvino':>9} {'onnxrt':>9} {'onnx.ref':>9} {'ref/onnx.ref':>12}")
    lines = [header, "-" * len(header)]
    for op, shape in cases:
        key = case_key(op, shape)
        best = {peer: min(r[peer][key]["seconds"] for r in rounds) for peer in PEERS}
        matmul = max(max(r["reference"][key]["matmul_before"], r["reference"][key]["matmul_after"]) for r in rounds)
        gemms = flops(op, shape) / min(r["reference"][key]["gemms_only"] for r in rounds) / 1e9
        gflops = {peer: flops(op, shape) / seconds / 1e9 for peer, seconds in best.items()}
        lines.append(f"{op:5} {','.join(map(str, shape)):17} {matmul:9.1f} {gflops['reference']:10.1f} "
                     f"{100 * gflops['reference'] / matmul:7.0f}% {100 * gemms / matmul:10.0f}% "
                     f"{gflops['openvino']:9.1f} {gflops['onnxruntime']:9.1f} {gflops['onnx.ref']:9.1f} "
                     f"{best['onnx.ref'] / best['reference']:11.1f}x")
    lines.append("GFLOP/s, best median over rounds; flops = 2*batch*seq*dirs*gates*hidden*(input+hidden); "
                 "'numpy mm' = float32 2048x2048 matmul beside the reference; 'GEMMs only' = the reference's "
                 "GEMMs alone (same shapes, chunks and loop), % of numpy mm")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round and fewer repeats")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 5, --quick 1)")
    parser.add_argument("--worker", choices=PEERS, help=argparse.SUPPRESS)
    parser.add_argument("--cases", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        cases = [(op, tuple(shape)) for op, shape in json.loads(args.cases)]
        print(json.dumps(worker(args.worker, cases, args.quick)))
        return 0
    cases = [(op, shape) for shape in SHAPES for op in OPS]
    rounds = []
    for number in range(args.rounds or (1 if args.quick else 5)):
        peers = list(PEERS[number % len(PEERS):] + PEERS[:number % len(PEERS)])  # rotate who goes first
        rounds.append(run_round(peers, cases, args.quick))
        print(f"round {number + 1} done", file=sys.stderr)
    print(table(rounds, cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
