"""What judging every recurrent node costs over a plain OpenVINO compile + infer of the same model.

Models: single-op IRs that ``irtool build`` writes, a real converted model: a two-layer
bidirectional LSTM (batch 16, 100 steps, hidden 256, input 256) with a Linear head, as an
onnx.helper graph converted by ``ov.convert_model`` with its default dynamic dims, and an
LSTMCell inside a Loop body (100 iterations, batch 16, hidden 256), judged at every iteration;
and, with expected outputs (``irtool run --expected``: the model's outputs judged against given
values, here the plain run's), the converted LSTM and a model with no recurrent op: a tanh RNN
unrolled into 100 MatMul/Add/Tanh steps (batch 16, hidden 256), whose cells irtool recognizes
(docs/lowered.md) and judges as one chain of 100 steps; and a Keras LSTM (hidden 128, input 32,
batch 16, 100 steps) converted to .tflite by TFLiteConverter (samples/make_tf_models.py), which
OpenVINO reads as a Loop of plain ops: the lowered LSTM cell judged at each of its 100
iterations.

The peer is what a user would write by hand, in one process: ``Core.read_model``,
``compile_model(CPU, {INFERENCE_PRECISION_HINT: f32})``, one inference.  irtool's side is the
pipeline's stages on the same model and inputs: the device side (compile the model and its
probed copy, infer both: the probed outputs give every node's inputs and outputs, the plain
ones check that probing changed nothing) and the whole judged run (also reading the model,
finding the nodes, sizing and making the inputs, the numpy reference of every node and the
diffs).  Rounds interleave the two and the best median is kept (these machines have 2 cores
and other work on them).

    python benchmarks/bench_run_overhead.py [--rounds 5] [--repeats 3] [--settle 0.2] [--only TEXT]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from irtool.judge.compare import TolerancePolicy
from irtool.judge.expected import ExpectedOutputs
from irtool.pipeline.build import build_and_save
from irtool.pipeline.device_run import compile_prepared, execute
from irtool.pipeline.inputs import case_inputs
from irtool.pipeline.judging import judge
from irtool.pipeline.prepare import read_and_prepare
from irtool.runtime.core import core
from irtool.specs.cases import OpCase

SINGLE = {
    "GRUSequence h16 T4 b2 (built)": OpCase("GRUSequence", {"hidden_size": 16, "direction": "forward"},
                                            {"batch_size": 2, "seq_length": 4, "input_size": 16}),
    "LSTMSequence bidi h128 T32 b4 (built)": OpCase("LSTMSequence", {"hidden_size": 128, "direction": "bidirectional"},
                                                    {"batch_size": 4, "seq_length": 32, "input_size": 64}),
}
CONVERTED = "2-layer bidi LSTM h256 T100 b16 + Linear (ONNX, ov.convert_model)"
LOOP = "LSTMCell h256 b16 in a Loop body, 100 iterations (opset API)"
UNROLLED = "tanh RNN h256 b16 unrolled, 100 steps, no recurrent op: a lowered chain (opset API), --expected"
LOWERED = "Keras LSTM h128 b16 as TFLite, 100 steps: a Loop of plain ops, the lowered cell judged"
LOWERED_MODEL = Path(__file__).resolve().parent.parent / "samples" / "models" / "tf" / "keras_lstm_t100_h128.tflite"
BATCH, STEPS, HIDDEN = 16, 100, 256


def loop_lstm_cell(folder: Path) -> Path:
    """An LSTMCell inside a Loop body run once per step over X [T, batch, hidden], as TensorFlow's
    BlockLSTM in a while loop converts: its tensors are probed through the Loop's concatenated
    outputs, and it is judged at each of the 100 iterations."""
    import openvino as ov
    import openvino.opset4 as ops4
    import openvino.opset8 as ops

    rng = np.random.default_rng(0)
    scale = 1 / np.sqrt(HIDDEN)
    x = ops.parameter([STEPS, BATCH, HIDDEN], np.float32, name="x")
    iteration = ops.parameter([], np.int64)
    xs = ops.parameter([STEPS, BATCH, HIDDEN], np.float32)
    h, c = ops.parameter([BATCH, HIDDEN], np.float32), ops.parameter([BATCH, HIDDEN], np.float32)
    weights = [ops.constant(rng.uniform(-scale, scale, shape).astype(np.float32))
               for shape in ((4 * HIDDEN, HIDDEN), (4 * HIDDEN, HIDDEN), (4 * HIDDEN,))]
    cell = ops4.lstm_cell(ops.gather(xs, iteration, ops.constant(np.int64(0))), h, c, *weights, HIDDEN, name="cell")
    loop = ops.loop(ops.constant(np.int64(STEPS)), ops.constant(True))
    loop.set_function(ov.Model([ops.result(ops.constant(True)), ops.result(cell.output(0)), ops.result(cell.output(1))],
                               [iteration, xs, h, c], "body"))
    loop.set_special_body_ports([0, 0])
    loop.set_invariant_input(xs, x.output(0))
    zeros = ops.constant(np.zeros((BATCH, HIDDEN), np.float32))
    loop.set_merged_input(h, zeros.output(0), cell.output(0))
    loop.set_merged_input(c, zeros.output(0), cell.output(1))
    xml = folder / "loop.xml"
    ov.save_model(ov.Model([loop.get_iter_value(cell.output(0), -1)], [x], "loop"), str(xml), compress_to_fp16=False)
    return xml


def unrolled_rnn(folder: Path) -> Path:
    """h_t = tanh(x_t W + h_{t-1} R + b) unrolled over 100 steps, all of them an output [T, batch,
    hidden]: no recurrent op, an RNN cell per step that irtool recognizes and judges as one chain."""
    import openvino as ov
    import openvino.opset8 as ops

    rng = np.random.default_rng(0)
    scale = 1 / np.sqrt(HIDDEN)
    w, r = (ops.constant(rng.uniform(-scale, scale, (HIDDEN, HIDDEN)).astype(np.float32)) for _ in range(2))
    b = ops.constant(rng.uniform(-scale, scale, (HIDDEN,)).astype(np.float32))
    x = ops.parameter([STEPS, BATCH, HIDDEN], np.float32, name="x")
    steps = ops.split(x, ops.constant(np.int64(0)), STEPS)
    h, ys = ops.constant(np.zeros((BATCH, HIDDEN), np.float32)), []
    for t in range(STEPS):
        x_t = ops.squeeze(steps.output(t), ops.constant(np.int64(0)))
        h = ops.tanh(ops.add(ops.add(ops.matmul(x_t, w, False, False), ops.matmul(h, r, False, False)), b))
        ys.append(ops.unsqueeze(h, ops.constant(np.int64(0))))
    xml = folder / "unrolled.xml"
    ov.save_model(ov.Model([ops.result(ops.concat(ys, 0))], [x], "unrolled"), str(xml), compress_to_fp16=False)
    return xml


def converted_lstm(folder: Path) -> Path:
    """A two-layer bidirectional LSTM with a head, from onnx.helper through ov.convert_model."""
    import onnx
    import openvino as ov
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    scale = 1 / np.sqrt(HIDDEN)
    nodes, inits = [], [numpy_helper.from_array(np.array([0, 0, -1], np.int64), "flat")]
    source, width = "x", HIDDEN
    for layer in range(2):
        for name, shape in ((f"W{layer}", (2, 4 * HIDDEN, width)), (f"R{layer}", (2, 4 * HIDDEN, HIDDEN)),
                            (f"B{layer}", (2, 8 * HIDDEN))):
            inits.append(numpy_helper.from_array(rng.uniform(-scale, scale, shape).astype(np.float32), name))
        nodes += [helper.make_node("LSTM", [source, f"W{layer}", f"R{layer}", f"B{layer}"], [f"Y{layer}"],
                                   hidden_size=HIDDEN, direction="bidirectional"),
                  helper.make_node("Transpose", [f"Y{layer}"], [f"T{layer}"], perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", [f"T{layer}", "flat"], [f"y{layer}"])]
        source, width = f"y{layer}", 2 * HIDDEN
    inits.append(numpy_helper.from_array(rng.uniform(-0.1, 0.1, (width, 10)).astype(np.float32), "head"))
    nodes.append(helper.make_node("MatMul", [source, "head"], ["z"]))
    graph = helper.make_graph(nodes, "lstm2", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                             ["seq", "batch", HIDDEN])],
                              [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), folder / "lstm2.onnx")
    xml = folder / "lstm2.xml"
    ov.save_model(ov.convert_model(str(folder / "lstm2.onnx")), str(xml), compress_to_fp16=False)
    return xml


def plain(xml: Path, inputs: dict) -> Callable[[], None]:
    def step() -> None:
        model = core().read_model(str(xml))
        compiled = core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        compiled(inputs)
    return step


def device_side(prepared, inputs: dict) -> Callable[[], None]:
    def step() -> None:
        execute(compile_prepared(prepared, "CPU", "f32", {}), inputs, "CPU")
    return step


def judged(xml: Path, sizes: dict, expected: ExpectedOutputs | None = None) -> Callable[[], None]:
    def step() -> None:
        prepared = read_and_prepare(xml)
        inputs, _, _ = case_inputs(prepared, sizes=sizes)
        compiled = compile_prepared(prepared, "CPU", "f32", {})
        executed = execute(compiled, inputs, "CPU")
        judgment = judge(prepared, inputs, executed, TolerancePolicy(), compiled.run.precision, expected=expected)
        assert judgment.verdict == "pass", judgment
        assert expected is None or judgment.expected.passed, judgment.expected
    return step


def plain_outputs(prepared, inputs: dict) -> ExpectedOutputs:
    """The model's outputs from a plain compile, keyed as --save-outputs writes them: what a
    framework's outputs would be for a model that converted right."""
    compiled = core().compile_model(prepared.model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    values = compiled(inputs)
    return ExpectedOutputs("plain run", {names[0]: np.asarray(values[k]) for k, names in enumerate(prepared.labels)})


def best_median(steps: dict[str, Callable[[], None]], rounds: int, repeats: int,
                settle: float = 0.0) -> dict[str, float]:
    """``settle``: seconds to wait before each timed step, so that it does not run beside what the
    step before left running (numpy's OpenBLAS keeps a worker thread spinning ~0.1 s after a
    matrix product: after a judged run, it takes a core from whatever runs next)."""
    medians: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            times = []
            for _ in range(repeats):
                time.sleep(settle)
                start = time.perf_counter()
                step()
                times.append(time.perf_counter() - start)
            medians[name].append(statistics.median(times))
    return {name: min(values) for name, values in medians.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--settle", type=float, default=0.0, metavar="SECONDS",
                        help="wait this long before each timed step (0.2 lets numpy's BLAS threads go idle)")
    parser.add_argument("--only", metavar="TEXT", help="only the models whose label contains TEXT")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        models = [(label, build_and_save(case, Path(folder) / f"{label.split()[0]}.xml")[0], {})
                  for label, case in SINGLE.items()]
        models.append((CONVERTED, converted_lstm(Path(folder)), {"batch_size": BATCH, "seq_length": STEPS}))
        models.append((LOOP, loop_lstm_cell(Path(folder)), {}))
        models.append((f"{CONVERTED}, --expected", models[2][1], models[2][2]))
        models.append((UNROLLED, unrolled_rnn(Path(folder)), {}))
        models.append((LOWERED, LOWERED_MODEL, {}))
        for label, xml, sizes in models:
            if args.only and args.only not in label:
                continue
            prepared = read_and_prepare(xml)
            inputs, _, _ = case_inputs(prepared, sizes=sizes)
            expected = plain_outputs(prepared, inputs) if label.endswith("--expected") else None
            steps = {"plain": plain(xml, inputs), "device": device_side(prepared, inputs),
                     "judged": judged(xml, sizes, expected)}
            for step in steps.values():  # warm up
                step()
            times = best_median(steps, args.rounds, args.repeats, args.settle)
            rows.append((label, len(prepared.nodes), prepared.probed.needs_probe, times))
    print(f"CPU f32, best median of {args.rounds} rounds x {args.repeats}"
          + (f", {args.settle:g} s settle before each step" if args.settle else ""))
    print("| model | nodes | probed copy | plain compile+infer (ms) | irtool device side (ms) | ratio | "
          "irtool judged run (ms) | ratio |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for label, count, probed, t in rows:
        print(f"| {label} | {count} | {'yes' if probed else 'no'} | {t['plain'] * 1e3:.1f} | {t['device'] * 1e3:.1f} | "
              f"{t['device'] / t['plain']:.2f}x | {t['judged'] * 1e3:.1f} | {t['judged'] / t['plain']:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
