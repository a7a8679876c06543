"""Reproducer folders: one failing job as files to attach to a bug report as they are.

A folder holds model.xml + model.bin (model.onnx for an ONNX node: the node alone), inputs.npz, expected.npz and actual.npz (absent when
there are none, e.g. after a compile error or a crash), case.json (the case, device,
precision, config, tolerances and result, which ``irtool reduce`` reads back) and
reproduce.py: a standalone script that needs only openvino and numpy.  It compiles the
model with the same INFERENCE_PRECISION_HINT and config, infers, and prints the error
statistics of each output against expected.npz; exit 0 when all are within tolerance
(or there is nothing to compare), 1 on a mismatch.  Arrays are paired with model inputs
and outputs by position; the .npz keys are names for people to read.

The script is a fixed template; the values of the job go into it only as JSON inside
Python string literals (``repr``), never as code.

A reproducer that cannot be written (a full disk, an I/O error) is a
:class:`ReproducerError`; the caller keeps the job's verdict and records the error beside it.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from irtool.core.errors import IrtoolBug, IrtoolError
from irtool.core.files import FileError, injected_write_fault
from irtool.core.jsonable import json_text, plain
from irtool.core.npz import write_npz
from irtool.judge.nodes import evaluate_node
from irtool.judge.verdicts import NodeResult
from irtool.pipeline.device_run import Executed
from irtool.pipeline.prepare import Prepared
from irtool.runtime.captured import iteration_arrays, node_iterations
from irtool.runtime.compile import DeviceRun
from irtool.runtime.model import model_inputs
from irtool.runtime.nodes import RecurrentNode

if TYPE_CHECKING:  # pragma: no cover
    import openvino as ov

SCRIPT_NAME = "reproduce.py"
ONNX_MODEL = "model.onnx"  # a reproducer of an ONNX node holds a single-node ONNX model in place of model.xml


class ReproducerError(FileError):
    """A reproducer folder that could not be written: one line naming it and why."""


# Compile properties a case.json from elsewhere may carry: they tune how a device computes and
# cannot make OpenVINO write a file or load code.  Anything else (CACHE_DIR, any *_DIR, *_PATH or
# *_FILE property, dumps, CONFIG_FILE, device extensions and plugin libraries, properties no
# release had when this list was made) is dropped with a note: an allow-list, not a deny-list.
SAFE_CONFIG = frozenset({
    "INFERENCE_PRECISION_HINT", "EXECUTION_MODE_HINT", "PERFORMANCE_HINT", "PERFORMANCE_HINT_NUM_REQUESTS",
    "NUM_STREAMS", "INFERENCE_NUM_THREADS", "ENABLE_CPU_PINNING", "ENABLE_HYPER_THREADING", "SCHEDULING_CORE_TYPE",
    "MODEL_PRIORITY", "DYNAMIC_QUANTIZATION_GROUP_SIZE", "KV_CACHE_PRECISION", "KEY_CACHE_PRECISION",
    "VALUE_CACHE_PRECISION", "CPU_DENORMALS_OPTIMIZATION", "CPU_SPARSE_WEIGHTS_DECOMPRESSION_RATE",
    "ACTIVATIONS_SCALE_FACTOR", "GPU_HOST_TASK_PRIORITY", "GPU_QUEUE_PRIORITY", "GPU_QUEUE_THROTTLE",
    "GPU_ENABLE_LOOP_UNROLLING", "GPU_DISABLE_WINOGRAD_CONVOLUTION", "ENABLE_PROFILING",
})


def safe_config(config: Mapping[str, Any], where: str) -> tuple[dict[str, str], list[str]]:
    """The properties of ``config`` (read from ``where``, a file irtool did not necessarily write)
    that are on SAFE_CONFIG, and a note per property dropped."""
    kept = {str(k): str(v) for k, v in config.items() if str(k) in SAFE_CONFIG}
    dropped = [str(k) for k in config if str(k) not in SAFE_CONFIG]
    notes = [f"{where}: config {name} dropped: only properties that cannot write files or load code are taken "
             f"from a reproducer (give it with --config to use it)" for name in dropped]
    return kept, notes

SCRIPT = Template('''\
#!/usr/bin/env python3
"""Reproduce one irtool job (CASE on DEVICE at PRECISION below: a harness job, or a node irtool run judged) with openvino and numpy only.

Runs $model_file on the device with inputs.npz and compares each output with
expected.npz: an element passes when |actual - expected| <= atol + rtol * |expected|,
and NaN/Inf match only the same value.  Needs only openvino and numpy.
Exit 0: every output within tolerance (or no expected.npz: the run itself is the test);
exit 1: a mismatch; exit 2: could not run (the device is absent, the model does not compile).
Usage: python reproduce.py [--device DEVICE]
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
import openvino as ov

HERE = Path(__file__).resolve().parent
MODEL_FILE = json.loads($model_file)
CASE = json.loads($case)
DEVICE = json.loads($device)
PRECISION = json.loads($precision)
OPENVINO = json.loads($openvino)  # the release the job ran under
CONFIG = json.loads($config)
TOLERANCES = json.loads($tolerances)  # [[output name, atol, rtol], ...] in model output order


def load(name):
    """The arrays of an .npz next to this script, in stored order; None if there is none."""
    path = HERE / name
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as data:
        return [data[key] for key in data.files]


def compare(name, actual, expected, atol, rtol):
    """Print one output's error statistics; True when every element is within tolerance."""
    if actual.shape != expected.shape:
        print(f"{name}: FAIL shape {list(actual.shape)}, expected {list(expected.shape)}")
        return False
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    finite = np.isfinite(a) & np.isfinite(e)
    same = (np.isnan(a) & np.isnan(e)) | (np.isinf(a) & (a == e))
    with np.errstate(invalid="ignore"):
        diff = np.where(finite, np.abs(a - e), 0.0)
    scale = np.where(finite, np.abs(e), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, diff / scale)
    outside = (diff > atol + rtol * scale) | (~finite & ~same)
    ranked = np.where(~finite & ~same, np.inf, diff)
    passed = not outside.any()
    print(f"{name} {list(a.shape)}: {'PASS' if passed else 'FAIL'}  max abs {diff.max(initial=0.0):.3g}  "
          f"max rel {rel.max(initial=0.0):.3g}  outside {int(outside.sum())}/{a.size} "
          f"(|a-e| <= {atol:g} + {rtol:g}*|e|)")
    if a.size:
        worst = np.unravel_index(int(np.argmax(ranked)), a.shape)
        print(f"    worst at {[int(i) for i in worst]}: actual {float(a[worst])!r}, expected {float(e[worst])!r}")
    print(f"    NaN: actual {int(np.isnan(a).sum())}, expected {int(np.isnan(e).sum())}; "
          f"Inf: actual {int(np.isinf(a).sum())}, expected {int(np.isinf(e).sum())}")
    return passed


def one_line(error):
    """What an OpenVINO exception says, on one line, without its source locations."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Exception from", "Check '"))]
    return " ".join(useful or lines[-1:]) or type(error).__name__


def main():
    for stream in (sys.stdout, sys.stderr):  # a node's name in any locale: escaped, never an encoding error
        stream.reconfigure(errors="backslashreplace")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=DEVICE, help=f"OpenVINO device (default {DEVICE})")
    args = parser.parse_args()
    # "default": no hint, the precision the device picks for itself (as the job ran)
    config = {**({} if PRECISION == "default" else {"INFERENCE_PRECISION_HINT": PRECISION}), **CONFIG}
    recorded = "" if args.device == DEVICE else f" (recorded on {DEVICE})"
    release = "" if ov.get_version().split("-")[0] == OPENVINO.split("-")[0] else f" (recorded with {OPENVINO})"
    print(f"{CASE} on {args.device} at {PRECISION}{recorded}: OpenVINO {ov.get_version()}{release}, config {config}")
    try:
        core = ov.Core()
        model = core.read_model(str(HERE / MODEL_FILE))
        compiled = core.compile_model(model, args.device, config)
        request = compiled.create_infer_request()
        request.infer(dict(enumerate(load("inputs.npz"))))
    except RuntimeError as error:
        print(f"reproduce.py: error: cannot run on {args.device}: {one_line(error)}", file=sys.stderr)
        return 2
    actual = [np.array(request.get_output_tensor(i).data) for i in range(len(compiled.outputs))]
    expected = load("expected.npz")
    if expected is None:
        for (name, _, _), array in zip(TOLERANCES, actual):
            print(f"{name}: {list(array.shape)} {array.dtype}")
        print("ran; no expected.npz to compare with")
        return 0
    results = [compare(name, got, want, atol, rtol)
               for (name, atol, rtol), got, want in zip(TOLERANCES, actual, expected)]
    failed = [name for (name, _, _), ok in zip(TOLERANCES, results) if not ok]
    print(f"MISMATCH in {', '.join(failed)}" if failed else "all outputs within tolerance")
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # its reader has gone (| head): no traceback, the exit code of a broken pipe
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
''')


def write_reproducer(folder: Path, *, model: "ov.Model", inputs: Mapping[str, np.ndarray],
                     expected: Mapping[str, np.ndarray] | None, actual: Mapping[str, np.ndarray] | None,
                     device: str, precision: str, config: Mapping[str, str],
                     tolerances: Mapping[str, tuple[float, float]], case: Mapping[str, Any],
                     result: Mapping[str, Any] | None) -> Path:
    """Write a reproducer folder whole, replacing an old one; see the module docstring.

    ``inputs`` are keyed by model input name (any of its names); ``tolerances``,
    ``expected`` and ``actual`` by output name, one entry per model output in model output
    order.  ``case`` is the SuiteCase as JSON and ``result`` the CaseResult as JSON, if any.
    """
    import onnx

    from irtool.pipeline.build import save_model
    from irtool.runtime.core import openvino_version

    folder = Path(folder)
    single_onnx = isinstance(model, onnx.ModelProto)  # a single-node ONNX model: model.onnx
    outputs = len(model.graph.output) if single_onnx else len(model.outputs)
    for what, arrays in (("tolerances", tolerances), ("expected", expected), ("actual", actual)):
        if arrays is not None and len(arrays) != outputs:
            raise IrtoolBug(f"reproducer: {len(arrays)} {what} for a model with {outputs} outputs")
    ordered_inputs = {}
    for name, names in ([(i.name, (i.name,)) for i in model.graph.input] if single_onnx else
                        [(info.name, info.names) for info in model_inputs(model)]):
        key = next((k for k in inputs if k in names), None)
        if key is None:
            raise IrtoolBug(f"reproducer: no input array for model input {name}")
        ordered_inputs[name] = inputs[key]
    scratch = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        injected_write_fault(folder)
        scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        if single_onnx:
            (scratch / ONNX_MODEL).write_bytes(model.SerializeToString())
        else:
            save_model(model, scratch / "model.xml")
        write_npz(scratch / "inputs.npz", ordered_inputs)
        for name, arrays in (("expected.npz", expected), ("actual.npz", actual)):
            if arrays is not None:
                write_npz(scratch / name, arrays)
        record = {"case": case, "device": device, "precision": precision, "config": dict(config),
                  "tolerances": {name: list(pair) for name, pair in tolerances.items()}, "result": result,
                  "openvino": openvino_version()}
        (scratch / "case.json").write_text(json_text(plain(record), indent=1, allow_nan=False) + "\n",
                                           encoding="utf-8")
        (scratch / SCRIPT_NAME).write_text(reproduce_script(case, device, precision, config, tolerances,
                                                            ONNX_MODEL if single_onnx else "model.xml"),
                                           encoding="utf-8")
        _replace_folder(scratch, folder)
    except (OSError, IrtoolError) as error:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        if isinstance(error, IrtoolBug):
            raise
        raise ReproducerError(f"{folder}: the reproducer could not be written ({_why(error, folder)})") from None
    except BaseException:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        raise
    return folder


def _why(error: OSError | IrtoolError, folder: Path) -> str:
    """What stopped a reproducer's write, in words: a full disk is named even where the writer
    (openvino's save_model) only says its stream failed."""
    if isinstance(error, OSError):
        if error.errno == errno.ENOSPC:
            return "no space left on device"
        if error.errno in (errno.EEXIST, errno.ENOTDIR):  # a file where a folder of the path belongs
            blocking = next((p for p in reversed(folder.parents) if p.exists() and not p.is_dir()), None)
            if blocking is not None:
                return f"{blocking} is a file, not a folder"
        return error.strerror or str(error)
    try:
        full = shutil.disk_usage(next(p for p in (folder, *folder.parents) if p.exists())).free < 64 * 1024
    except (OSError, StopIteration):
        full = False
    return "no space left on device" if full else error.message


def reproduce_script(case: Mapping[str, Any], device: str, precision: str, config: Mapping[str, str],
                     tolerances: Mapping[str, tuple[float, float]], model_file: str = "model.xml") -> str:
    from irtool.runtime.core import openvino_version

    values = {"model_file": model_file, "case": str(case.get("id", "?")), "device": device,
              "openvino": openvino_version(),
              "precision": precision, "config": dict(config),
              "tolerances": [[name, float(atol), float(rtol)] for name, (atol, rtol) in tolerances.items()]}
    # json.dumps keeps "inf" as Infinity, which json.loads in the script reads back.
    text = {name: repr(json.dumps(value)) for name, value in values.items()}
    return SCRIPT.substitute(text)


def _replace_folder(new: Path, target: Path) -> None:
    """Rename ``new`` to ``target``; an old ``target`` is moved aside first and removed after,
    so ``target`` is always either the old folder or the new one, whole."""
    os.chmod(new, 0o755)  # mkdtemp made it private; a reproducer is for sharing
    if not target.exists():
        os.replace(new, target)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old.", dir=target.parent))
    os.replace(target, aside / target.name)
    try:
        os.replace(new, target)
    except BaseException:
        os.replace(aside / target.name, target)
        raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def node_folder_name(name: str) -> str:
    """A folder name for a node: readable, filesystem-safe, unique by a short hash."""
    import re

    slug = re.sub(r"[^A-Za-z0-9_.=+-]+", "_", name).strip("_")[:60] or "node"
    return f"{slug}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"


def write_node_reproducer(folder: Path, prepared: Prepared, node: RecurrentNode, result: NodeResult,
                          inputs: Mapping[str, np.ndarray], executed: Executed, device_run: DeviceRun,
                          config: Mapping[str, str]) -> None:
    """A reproducer folder of one node: a single-op IR of it (Consts where the model had constant
    data, inputs dynamic where the model's were), its captured inputs as inputs.npz, the
    reference's outputs as expected.npz and the device's as actual.npz; ``irtool reduce`` takes it."""
    from irtool.pipeline.concrete import from_node

    if any(feed.shared for feed in node.feeds):  # the recurrence's weights, not the iteration's own
        iterations = node_iterations(node, inputs, executed.captured)
        arrays, actual = iterations.arrays[iterations.indices.index(result.iteration or ())]
    else:
        arrays, actual = iteration_arrays(node, inputs, executed.captured, result.iteration or ())
    concrete = from_node(node, arrays)
    expected = evaluate_node(node, arrays)
    ports = [port.name for port in node.spec.outputs]
    write_reproducer(folder, model=concrete.to_model(), inputs=concrete.inputs, expected=dict(zip(ports, expected)),
                     actual=dict(zip(ports, actual)), device=device_run.device,
                     precision=device_run.requested_precision, config=config,
                     tolerances={d.name: (d.tolerance.atol, d.tolerance.rtol) for d in result.outputs},
                     case={"id": f"{Path(prepared.name).stem}::{result.name}", "suite": "run"},
                     result=_run_result(prepared, result, device_run, node.spec.type))


def judged_ir_nodes(prepared: Prepared, judged: Sequence[NodeResult]) -> dict[str, RecurrentNode]:
    """The OpenVINO node behind each judged node that has one, by the judged node's name: an IR
    model's judged nodes are its recurrent nodes in order; an ONNX model's, its ONNX nodes (judged in
    ONNX semantics: no OpenVINO node of their own) and then the cells lowered to plain ops that
    OpenVINO's graph holds."""
    ir_nodes = [node for node in prepared.nodes if prepared.onnx is None or node.lowered is not None]
    return dict(zip((r.name for r in judged[len(judged) - len(ir_nodes):]), ir_nodes))


def write_judged_node_reproducer(folder: Path, prepared: Prepared, node: RecurrentNode | None, result: NodeResult,
                                 inputs: Mapping[str, np.ndarray], executed: Executed, device_run: DeviceRun,
                                 config: Mapping[str, str]) -> None:
    """The reproducer of a failing judged node: a single-op IR of its OpenVINO node (``node``, from
    judged_ir_nodes), or for an ONNX node (None) the node alone as an ONNX model."""
    if node is None:
        write_onnx_node_reproducer(folder, prepared, result, inputs, executed, device_run, config)
    else:
        write_node_reproducer(folder, prepared, node, result, inputs, executed, device_run, config)


def write_onnx_node_reproducer(folder: Path, prepared: Prepared, result: NodeResult, inputs: Mapping[str, np.ndarray],
                               executed: Executed, device_run: DeviceRun, config: Mapping[str, str]) -> None:
    """A reproducer folder of one ONNX node: the node alone as model.onnx (its initializers kept as
    initializers, its other inputs as graph inputs, at the iteration judged for a node in a body),
    the values OpenVINO gave it as inputs.npz, the reference's outputs in ONNX semantics as
    expected.npz and OpenVINO's as actual.npz; reproduce.py runs model.onnx through OpenVINO's
    ONNX frontend, as ``irtool run model.onnx --inputs inputs.npz --expected expected.npz`` does."""
    from irtool.judge.onnx_nodes import node_values
    from irtool.onnx.evaluate import evaluate_model_node
    from irtool.onnx.model import lone_node_model

    graph = prepared.onnx
    node = next(n for n in graph.all_nodes if n.name == result.name)
    values = node_values(graph, node, prepared.probed, inputs, executed.captured, result.iteration)
    constants = set(graph.initializer_values(set(node.proto.input)))
    model = lone_node_model(node.proto, graph.opset, values, constants)
    expected = evaluate_model_node(node.proto, graph.opset, values)
    outputs = [o.name for o in model.graph.output]
    tolerances = {d.name: (d.tolerance.atol, d.tolerance.rtol) for d in result.outputs}
    write_reproducer(folder, model=model, inputs={i.name: values[i.name] for i in model.graph.input},
                     expected={name: expected[name] for name in outputs}, actual={name: values[name] for name in outputs},
                     device=device_run.device, precision=device_run.requested_precision, config=config,
                     tolerances={name: tolerances.get(name, (0.0, 0.0)) for name in outputs},
                     case={"id": f"{Path(prepared.name).stem}::{result.name}", "suite": "run"},
                     result=_run_result(prepared, result, device_run, None))


def _run_result(prepared: Prepared, result: NodeResult, device_run: DeviceRun, op_type: str | None) -> dict[str, Any]:
    """The result a reproducer folder of ``irtool run`` keeps of its node: the job beside it, the
    precision it ran at and what it ran as (by op type: the folder's model holds the one node), as
    a harness result says them, so ``irtool report rejudge`` judges its actual.npz as it ran."""
    ran = {op_type: result.implementation} if op_type and result.implementation else {}
    return {"case": f"{Path(prepared.name).stem}::{result.name}", "suite": "run", "device": device_run.device,
            "precision": device_run.requested_precision, "verdict": result.verdict, "message": result.reason or "",
            "node": result.name, "model": prepared.name, "effective_precision": dict(device_run.effective_precision),
            "execution_devices": list(device_run.execution_devices), "implementations": ran}
