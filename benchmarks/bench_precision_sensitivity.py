"""How small a fault irtool's verdicts catch at each precision the CPU runs, and that clean runs pass.

A fault is the device computing something other than the model: the model the device compiles
is changed (a gate's bias moved by e, W or R scaled by 1+e, clip 1.0 made 1.0(1-e), clip ignored,
sequence_lengths one short) or its outputs are (skewed by e), while the verdict judges it as the
clean model.  For GRU, LSTM and RNN sequences (full Const lengths: the native kernel; lengths a
Parameter: a TensorIterator) and cells, each without clip (the CPU's cell kernel) and with clip 1.0
(a decomposed cell; the clip faults), hidden 64, batch 8, 10 steps, seed 0, each fault is swept
over e = 1e-6 ... 1, and the smallest e that fails is printed for:

- node:      irtool's node verdict (the reference on the node's inputs; at bf16/f16 the emulation
             of the path the device ran, with its derived bound)
- expected:  the device's outputs against the clean model's f32 outputs (--expected)
- openvino:  OpenVINO's own CPU test thresholds against the ideal reference (an element fails where
             both abs > 2^-7 and rel > 1e-2 at bf16, abs > 2^-10 and rel > 1e-3 at f16; none at f32)

"-" is a fault no e up to 1 makes fail.  Then, unless --no-suites, the false FAILs of
samples/suites/full.toml (with its known failures) and samples/suites/openvino-cpu.toml at each
precision (a harness run each: minutes).  Precisions the CPU does not list are said and skipped;
what a device computed at them elsewhere is replayed from recordings (--recordings DIR, a folder of
benchmarks/replay_recordings.py: its clean cases, planted faults and the suites' jobs, judged here).

    python benchmarks/bench_precision_sensitivity.py                # every precision the CPU has, suites too
    python benchmarks/bench_precision_sensitivity.py --no-suites --precision f32
    python benchmarks/bench_precision_sensitivity.py --no-suites --precision f32 --recordings tests/data/recordings/cpu-bf16-avx512-openvino-2026.4.1
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from irtool.core.precisions import PRECISIONS
from irtool.judge.compare import TolerancePolicy
from irtool.judge.expected import ExpectedOutputs
from irtool.pipeline.build import build_model
from irtool.pipeline.concrete import ConcreteCase
from irtool.pipeline.device_run import compile_prepared, execute
from irtool.pipeline.judging import judge
from irtool.pipeline.prepare import prepare
from irtool.reference import evaluate
from irtool.runtime.captured import input_arrays
from irtool.runtime.devices import list_devices
from irtool.specs.cases import OpCase

ROOT = Path(__file__).resolve().parent.parent
SIZES = {"batch_size": 8, "seq_length": 10, "input_size": 16}
HIDDEN = 64
SWEEP = [1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0]
OPENVINO_THRESHOLDS = {"bf16": (2.0 ** -7, 1e-2), "f16": (2.0 ** -10, 1e-3)}
# the gate a bias fault moves: GRU's candidate (z, r, h), LSTM's forget (f, i, c, o), RNN's one
BIAS_GATE = {"GRU": 2, "LSTM": 0, "RNN": 0}
GATES = {"GRU": 3, "LSTM": 4, "RNN": 1}


@dataclasses.dataclass
class Fault:
    name: str
    change: Callable[[ConcreteCase, float], ConcreteCase] | None  # the model the device runs
    skew: bool = False  # the device's outputs moved by e instead
    swept: bool = True  # False: one fault, no e (an ignored clip)


def _array(case: ConcreteCase, port: str, function: Callable[[np.ndarray], np.ndarray]) -> ConcreteCase:
    arrays = dict(case.arrays)
    arrays[port] = function(arrays[port].copy()).astype(arrays[port].dtype)
    return case.replace(arrays=arrays)


def _bias(family: str) -> Callable[[ConcreteCase, float], ConcreteCase]:
    def change(case: ConcreteCase, e: float) -> ConcreteCase:
        gate = BIAS_GATE[family]

        def moved(b: np.ndarray) -> np.ndarray:
            b[..., gate * HIDDEN:(gate + 1) * HIDDEN] += e
            return b
        return _array(case, "B", moved)
    return change


def faults(family: str, sequence: bool, clip: float) -> list[Fault]:
    found = [Fault(f"bias of gate {BIAS_GATE[family]} +e", _bias(family)),
             Fault("W x(1+e)", lambda c, e: _array(c, "W", lambda w: w * (1 + e))),
             Fault("R x(1+e)", lambda c, e: _array(c, "R", lambda r: r * (1 + e))),
             Fault("output skew +e", None, skew=True)]
    if clip:
        found += [Fault("clip 1.0 -> 1.0(1-e)", lambda c, e: c.replace(attributes={**c.attributes, "clip": 1.0 - e})),
                  Fault("clip 1.0 ignored", lambda c, e: c.replace(attributes={**c.attributes, "clip": 0.0}),
                        swept=False)]
    if sequence:
        found.append(Fault("sequence_lengths one short", lambda c, e: _array(c, "sequence_lengths", lambda s: s - 1),
                           swept=False))
    return found


def clean_case(op: str, ti: bool, clip: float) -> tuple[ConcreteCase, dict[str, np.ndarray]]:
    """The clean op (with clip 1.0: a decomposed cell, and a clip for the clip faults to change), as arrays."""
    sequence = op.endswith("Sequence")
    attributes = {"hidden_size": HIDDEN, "clip": clip} | ({"direction": "forward"} if sequence else {})
    sources = {"sequence_lengths": "parameter" if ti else "const"} if sequence else {}
    sizes = SIZES if sequence else {k: v for k, v in SIZES.items() if k != "seq_length"}
    model = build_model(OpCase(op, attributes, sizes, lengths="full", sources=sources))
    prepared = prepare(model, op)
    node = prepared.nodes[0]
    rng = np.random.default_rng(0)
    inputs = {info.name: rng.uniform(-1, 1, info.dims).astype(info.dtype) if info.dtype.kind == "f" else
              np.full(info.dims, SIZES["seq_length"], info.dtype) for info in prepared.infos}
    arrays = input_arrays(node, inputs)
    ports = [port.name for port in node.spec.inputs[:len(arrays)]]
    constants = frozenset(feed.port.name for feed in node.feeds if feed.constant is not None)
    return ConcreteCase(node.spec, dict(node.attributes), dict(zip(ports, arrays)), constants), inputs


def verdicts(clean: ConcreteCase, faulty: ConcreteCase | None, skew: float, inputs: dict[str, np.ndarray],
             precision: str, expected: dict[str, np.ndarray]) -> tuple[bool, bool, bool]:
    """(node fails, --expected fails, OpenVINO's thresholds fail) for the device running ``faulty``."""
    clean_prepared = prepare(clean.to_model(), "clean")
    run = prepare((faulty or clean).to_model(), "faulty")
    compiled = compile_prepared(run, "CPU", precision, {}, probe=False)
    executed = execute(compiled, inputs, "CPU")
    if skew:
        executed = dataclasses.replace(executed, outputs=[o + np.float32(skew) for o in executed.outputs],
                                       captured=[o + np.float32(skew) for o in executed.captured])
    runs = {clean_prepared.nodes[0].name: ran for ran in compiled.runs.values()}  # what the faulty node ran as
    judgment = judge(clean_prepared, inputs, executed, TolerancePolicy(), compiled.run.precision,
                     expected=ExpectedOutputs("clean f32 outputs", expected), runs=runs)
    ideal = evaluate(clean.spec.type, [clean.arrays[p.name] for p in clean.ports], clean.attributes)
    threshold = OPENVINO_THRESHOLDS.get(compiled.run.precision)
    openvino = False
    if threshold is not None:
        for got, want in zip(executed.outputs, ideal):
            gap = np.abs(got.astype(np.float64) - want)
            openvino |= bool(((gap > threshold[0]) & (gap > threshold[1] * np.abs(want))).any())
    return judgment.node_verdict == "fail", judgment.expected.verdict == "fail", openvino


def smallest(fault: Fault, clean: ConcreteCase, inputs: dict[str, np.ndarray], precision: str,
             expected: dict[str, np.ndarray]) -> list[str]:
    """The smallest e each judge fails on, as text ("-": none up to 1; for an unswept fault, caught or not)."""
    found: list[float | None] = [None, None, None]
    for e in SWEEP if fault.swept else [1.0]:
        faulty = fault.change(clean, e) if fault.change else None
        for k, failed in enumerate(verdicts(clean, faulty, e if fault.skew else 0.0, inputs, precision, expected)):
            if failed and found[k] is None:
                found[k] = e
        if all(value is not None for value in found[:2]) and (found[2] is not None or precision == "f32"):
            break
    if not fault.swept:
        return ["caught" if value is not None else "MISSED" for value in found]
    return [f"{value:g}" if value is not None else "-" for value in found]


def clean_outputs(clean: ConcreteCase, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    prepared = prepare(clean.to_model(), "clean")
    compiled = compile_prepared(prepared, "CPU", "f32", {}, probe=False)
    outputs = execute(compiled, inputs, "CPU").outputs
    return {names[0]: array for names, array in zip(prepared.labels, outputs)}


def suites(precision: str) -> str:
    """The false FAILs of the two suites at ``precision``, from a harness run each."""
    said = []
    for suite, xfail in (("full.toml", "full.xfail.toml"), ("openvino-cpu.toml", None)):
        with tempfile.TemporaryDirectory() as folder:
            command = [sys.executable, "-m", "irtool", "harness", str(ROOT / "samples" / "suites" / suite), "-d", "CPU",
                       "--precision", precision, "--report-dir", folder, "--no-progress", "-j", "2"]
            if xfail:
                command += ["--xfail", str(ROOT / "samples" / "suites" / xfail)]
            subprocess.run(command, capture_output=True, text=True)
            results = json.loads((Path(folder) / "results.json").read_text())["results"]
            fails = sum(1 for r in results if r["verdict"] == "fail")
            said.append(f"{suite}: {fails} FAIL of {len(results)} jobs")
    return "; ".join(said)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--precision", default=",".join(PRECISIONS), help="precisions to try (default: all)")
    parser.add_argument("--no-suites", action="store_true", help="skip the suites' false-FAIL counts")
    parser.add_argument("--recordings", type=Path, metavar="DIR",
                        help="replay a recordings folder too (benchmarks/replay_recordings.py)")
    args = parser.parse_args()
    if args.recordings is not None:
        from replay_recordings import main as replay

        print(f"replayed: {args.recordings}", flush=True)
        replay([str(args.recordings)] + ([] if args.no_suites else ["--suites"]))
    listed = next(d.precisions for d in list_devices().available if d.name == "CPU")
    for precision in args.precision.split(","):
        if precision not in listed:
            print(f"\n{precision}: skipped: this CPU lists no {precision} (its precisions: {', '.join(listed)})")
            continue
        print(f"\n{precision}: the smallest e caught (node | --expected | OpenVINO's thresholds)")
        print("| op | lengths | clip | fault | node | expected | openvino |")
        print("|---|---|---|---|---|---|---|")
        for op in ("GRUSequence", "LSTMSequence", "RNNSequence", "GRUCell", "LSTMCell", "RNNCell"):
            family = op.replace("Sequence", "").replace("Cell", "")
            for ti in ((False, True) if op.endswith("Sequence") else (False,)):
                for clip in (0.0, 1.0):
                    clean, inputs = clean_case(op, ti, clip)
                    expected = clean_outputs(clean, inputs)
                    for fault in faults(family, op.endswith("Sequence"), clip):
                        node, outputs, openvino = smallest(fault, clean, inputs, precision, expected)
                        lengths = ("Parameter" if ti else "Const") if op.endswith("Sequence") else "-"
                        print(f"| {op} | {lengths} | {clip:g} | {fault.name} | {node} | {outputs} | "
                              f"{openvino if precision != 'f32' else 'n/a'} |", flush=True)
        if not args.no_suites:
            print(f"false FAILs at {precision}: {suites(precision)}", flush=True)


if __name__ == "__main__":
    main()
