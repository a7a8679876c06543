"""Record what a device computes at its reduced precisions, so that verdicts at those precisions are
checked on any machine afterwards (benchmarks/replay_recordings.py, tests/test_pipeline_recording.py).

On the device given (default CPU), at f32 and at every reduced precision it lists (bf16 on a CPU with
AVX512_BF16 or AMX, f16 on one with AVX512_FP16 or AMX-FP16, f16 on a GPU), it runs single-op models
of the six ops along each path OpenVINO's CPU plugin takes (sequences forward, reverse and
bidirectional with Const and Parameter lengths, ragged in odd batch rows; clip; GRU
linear_before_reset; RNN relu; LSTM sigmoid,tanh,relu; cells with and without clip), at (batch,
steps, input, hidden) (1, 1, 8, 16) and (4, 10, 16, 32), and planted faults of the forward,
default-activation sequences and cells at (4, 10, 16, 32) (each gate's bias + e, R and W x (1 + e),
e in 1e-3, 1e-2, 1e-1: the faulty model's outputs, judged later against the clean one).  It writes
OUT/single-op/manifest.json (the machine: CPU model and flags, OpenVINO, the device's capabilities;
each case) and OUT/single-op/cases/ID.{xml,bin,inputs.npz,outputs-PRECISION.npz}, the format of
../shared/recordings/ and tests/data/recordings/, each model run twice per precision to check the
device is deterministic.  A device that lists no reduced precision has nothing to record: said, exit 3.

    python benchmarks/record_device.py recordings/cpu-f16-amx-openvino-2026.4.1
    python benchmarks/record_device.py recordings/gpu-f16 -d GPU
"""
from __future__ import annotations

import argparse
import itertools
import json
import platform
import sys
from pathlib import Path

import numpy as np

SHAPES = [(1, 1, 8, 16), (4, 10, 16, 32)]
FAULT_SHAPE = (4, 10, 16, 32)
FAULT_SIZES = (1e-3, 1e-2, 1e-1)
OPS = {"GRUSequence": 3, "LSTMSequence": 4, "RNNSequence": 1, "GRUCell": 3, "LSTMCell": 4, "RNNCell": 1}


def variants(op: str) -> list[dict]:
    """The attribute sets of ``op`` that reach each path: the cell kernel, clip (decomposed), and the
    op's own options."""
    sequence = op.endswith("Sequence")
    found = [{"clip": 0.0}, {"clip": 1.0}]
    if op.startswith("GRU"):
        found += [{"clip": 0.0, "linear_before_reset": True}, {"clip": 1.5, "linear_before_reset": True}]
    if op == "RNNSequence":
        found.append({"clip": 0.0, "activations": ["relu"]})
    if op == "LSTMSequence":
        found.append({"clip": 0.0, "activations": ["sigmoid", "tanh", "relu"]})
    if not sequence:
        return found
    directed = [dict(v, direction="forward") for v in found]
    directed += [{"clip": 0.0, "direction": d} for d in ("reverse", "bidirectional")]
    return directed


def case_arrays(op: str, attributes: dict, shape: tuple, lengths: str, seed: int):
    """The op as a ConcreteCase (its arrays, weights Constants) and its model inputs."""
    from irtool.pipeline.build import build_model
    from irtool.pipeline.concrete import ConcreteCase
    from irtool.pipeline.prepare import prepare
    from irtool.runtime.captured import input_arrays
    from irtool.specs.cases import OpCase

    batch, steps, size, hidden = shape
    sequence = op.endswith("Sequence")
    sizes = {"batch_size": batch, "input_size": size} | ({"seq_length": steps} if sequence else {})
    sources = {"sequence_lengths": lengths} if sequence else {}
    model = build_model(OpCase(op, {"hidden_size": hidden, **attributes}, sizes, seed=seed, lengths="full",
                               sources=sources))
    prepared = prepare(model, op)
    node = prepared.nodes[0]
    rng = np.random.default_rng(seed)
    inputs = {}
    for info in prepared.infos:
        if info.dtype.kind == "f":
            inputs[info.name] = rng.uniform(-1, 1, info.dims).astype(info.dtype)
        else:  # shorter lengths in odd batch rows where they are a Parameter
            inputs[info.name] = np.array([steps if b % 2 == 0 else max(1, steps // 2) for b in range(batch)],
                                         info.dtype)
    arrays = input_arrays(node, inputs)
    ports = [port.name for port in node.spec.inputs[:len(arrays)]]
    constants = frozenset(feed.port.name for feed in node.feeds if feed.constant is not None)
    return ConcreteCase(node.spec, dict(node.attributes), dict(zip(ports, arrays)), constants), inputs


def faulty(case, gates: int, hidden: int, what: str, gate: int, e: float):
    arrays = dict(case.arrays)
    if what == "bias":
        b = arrays["B"].copy()
        b[..., gate * hidden:(gate + 1) * hidden] += e
        arrays["B"] = b.astype(arrays["B"].dtype)
    else:
        arrays[what] = (arrays[what] * (1 + e)).astype(arrays[what].dtype)
    return case.replace(arrays=arrays)


def ran_as(compiled) -> list[dict]:
    layers = []
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        layers.append({key: str(info[key].astype(str)) if key in info else ""
                       for key in ("layerType", "runtimePrecision", "outputPrecisions", "originalLayersNames")})
    return layers


def run(model, inputs: dict, device: str, precision: str) -> tuple[list[np.ndarray], dict]:
    """The model's outputs at ``precision`` (twice: the device must be deterministic), what ran, the hint read back."""
    from irtool.runtime.compile import compile_on, infer

    compiled, device_run = compile_on(model, device, precision, {}, Path("model.xml"))
    first, second = (infer(compiled, inputs, device) for _ in range(2))
    same = all(np.array_equal(a, b, equal_nan=True) for a, b in zip(first, second))
    return first, {"ran_as": ran_as(compiled), "deterministic": same,
                   "hint_read_back": "/".join(sorted(set(device_run.effective_precision.values())))}


def machine() -> dict:
    flags, model = [], platform.processor()
    try:
        text = Path("/proc/cpuinfo").read_text()
        model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")),
                     model)
        flags = sorted({f for line in text.splitlines() if line.startswith("flags")
                        for f in line.split(":", 1)[1].split() if f.startswith(("avx", "amx", "f16c", "fma"))})
    except OSError:
        pass
    return {"cpu": platform.machine(), "cpu_model": model, "cpu_flags": flags}


def main(argv: list[str] | None = None) -> int:
    from irtool.runtime.core import openvino_version
    from irtool.runtime.devices import list_devices

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the recordings folder to write (OUT/single-op/...)")
    parser.add_argument("-d", "--device", default="CPU")
    parser.add_argument("--precision", help="the reduced precisions to record (default: every one the device lists)")
    args = parser.parse_args(argv)
    found = next((d for d in list_devices().available if d.name == args.device), None)
    if found is None:
        print(f"record_device: {args.device} is not here", file=sys.stderr)
        return 3
    reduced = args.precision.split(",") if args.precision else [p for p in found.precisions if p in ("bf16", "f16")]
    if not reduced:
        print(f"record_device: {args.device} lists no reduced precision (its precisions: "
              f"{', '.join(found.precisions)}): nothing to record", file=sys.stderr)
        return 3
    precisions = list(dict.fromkeys(["f32", *reduced]))
    folder = args.out / "single-op"
    (folder / "cases").mkdir(parents=True, exist_ok=True)
    cases = []
    for op, gates in OPS.items():
        sequence = op.endswith("Sequence")
        for attributes, shape, lengths in itertools.product(variants(op), SHAPES,
                                                            ("const", "parameter") if sequence else ("const",)):
            case_id = f"{len(cases):03d}_{op}"
            clean, inputs = case_arrays(op, attributes, shape, lengths, seed=len(cases))
            record = {"id": case_id, "fault_of": None, "fault": None, "op": op, "batch": shape[0],
                      "steps": shape[1] if sequence else None, "input_size": shape[2], "hidden_size": shape[3],
                      "sequence_lengths": lengths if sequence else None, **attributes, "files": {}, "runs": {}}
            model = clean.to_model()
            from openvino import save_model

            save_model(model, folder / "cases" / f"{case_id}.xml", compress_to_fp16=False)
            np.savez(folder / "cases" / f"{case_id}.inputs.npz", **inputs)
            record["files"] = {"xml": f"cases/{case_id}.xml", "bin": f"cases/{case_id}.bin",
                               "inputs": f"cases/{case_id}.inputs.npz"}
            names = [port.name for port in clean.spec.outputs]
            for precision in precisions:
                outputs, record["runs"][precision] = run(model, inputs, args.device, precision)
                np.savez(folder / "cases" / f"{case_id}.outputs-{precision}.npz", **dict(zip(names, outputs)))
                record["files"][f"outputs-{precision}"] = f"cases/{case_id}.outputs-{precision}.npz"
            cases.append(record)
            if shape != FAULT_SHAPE or attributes.get("direction", "forward") != "forward" or "activations" in \
                    attributes or attributes.get("linear_before_reset") or lengths != "const":
                continue
            for what, gate, e in [("bias", g, e) for g in range(gates) for e in FAULT_SIZES] + \
                    [(w, None, e) for w in ("R", "W") for e in FAULT_SIZES]:
                fault_id = f"{len(cases):03d}_{op}_fault"
                changed = faulty(clean, gates, shape[3], what, gate, e).to_model()
                fault = {"id": fault_id, "fault_of": case_id, "fault": {"what": what, "gate": gate, "e": e},
                         "op": op, "files": {"clean_xml": f"cases/{case_id}.xml", "inputs": f"cases/{case_id}.inputs.npz"},
                         "runs": {}}
                for precision in reduced:
                    outputs, fault["runs"][precision] = run(changed, inputs, args.device, precision)
                    np.savez(folder / "cases" / f"{fault_id}.outputs-{precision}.npz", **dict(zip(names, outputs)))
                    fault["files"][f"outputs-{precision}"] = f"cases/{fault_id}.outputs-{precision}.npz"
                cases.append(fault)
            print(f"{case_id}: {op} {attributes} {shape} lengths {lengths}", flush=True)
    manifest = {"what": f"outputs of OpenVINO's {args.device} plugin for single-op recurrent models, per inference "
                        f"precision", "openvino": openvino_version(), **machine(), "device": args.device,
                "optimization_capabilities": list(found.precisions), "precisions": precisions,
                "outputs_stored_as": "float32 (every bf16/f16 value is exact in float32)",
                "outputs_keyed_by": "the op's output port names (Y, Ho, Co), as irtool run --save-outputs writes them",
                "cases": cases}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"recorded {len(cases)} cases at {', '.join(precisions)} in {folder}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
