"""``irtool run MODEL.xml -d DEVICE``: run on a device and diff against the reference or a second device.

Exit 0 when every output is within tolerance, 1 on a mismatch, 2 when the model could not be
run, 3 when nothing was judged (no reference applies, or the device is absent here or lacks the
precision: a skip with OpenVINO's reason; a device name OpenVINO does not know is a usage error, 2).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from irtool.cli.common import NOTHING_JUDGED, UsageError, stopped, stopped_report
from irtool.cli.options import add_judging_options, add_release_options, parse_config, parse_tolerances, seconds, seed
from irtool.cli.run_text import render_text
from irtool.core.errors import did_you_mean
from irtool.core.formats import ORACLES
from irtool.core.jsonable import json_text, plain
from irtool.core.numbers import NumberSyntaxError, parse_int
from irtool.core.precisions import PRECISION_CHOICES
from irtool.core.text import cut, shown

FORMATS = ("text", "json")
DEFAULT_TIMEOUT = 600.0  # seconds per step: a big model's compile takes minutes, a hung inference forever


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run", help="run any model on a device and judge each recurrent node in it against the reference",
        description="Run a model (IR .xml from any converter, or .onnx) on an OpenVINO device at an explicit "
                    "precision (or the one it picks itself: --precision default), and judge every GRU, LSTM and "
                    "RNN node in it: irtool's reference on the inputs the device gave the node, against the outputs the device computed for it.  Exit 0: every "
                    "judged node within tolerance; 1: a mismatch; 2: could not run (or a device name OpenVINO does "
                    "not know); 3: nothing was judged (no recurrent node and no --expected, a node the inputs reached that "
                    "could not be judged, or a skip: a device absent here or a precision it lacks, with OpenVINO's "
                    "reason).  --expected OUT.npz also judges the model's outputs against given values (the "
                    "framework's): where that judges every output, the verdict is its own (a failing node still "
                    "fails it; a node not judged on its own is listed with why).")
    parser.add_argument("model", type=Path, metavar="MODEL", help="the model: IR .xml (its .bin beside it), .onnx, or "
                        "what else OpenVINO reads: .tflite, .pb, .pdmodel, a SavedModel folder")
    parser.add_argument("-d", "--device", required=True,
                        help="OpenVINO device: CPU, GPU, AUTO:CPU, HETERO:GPU+CPU (a virtual device's list joins "
                             "with +)")
    parser.add_argument("--precision", choices=PRECISION_CHOICES, default=None,
                        help="INFERENCE_PRECISION_HINT to compile with (default f32; in a replay, the record's); "
                             "'default' sets none and judges the precision the device picks for itself, read back "
                             "from the compiled model (irtool devices shows each device's)")
    parser.add_argument("--inputs", type=Path, metavar="IN.npz", help="inputs by model input name (default: seeded)")
    parser.add_argument("--seed", type=seed, default=None, help="seed of the generated inputs (default 0)")
    parser.add_argument("--save-outputs", type=Path, metavar="OUT.npz", help="write the device's outputs here")
    parser.add_argument("--device-outputs", type=Path, metavar="OUT.npz",
                        help="judge outputs the device gave elsewhere instead of running it here (a replay): as "
                             "irtool run --save-outputs wrote them there, with its record of what each node ran as "
                             "and at what precision, on the same --inputs; -d names that device")
    parser.add_argument("--expected", type=Path, metavar="OUT.npz",
                        help="judge the model's outputs against these values too (e.g. what the framework computed "
                             "on the --inputs), keyed by output name as --save-outputs writes them; gives any model "
                             "a verdict, recurrent node or not")
    add_judging_options(parser)
    parser.add_argument("--compare-with", metavar="DEVICE2[:PRECISION]|RUNTIME",
                        help="diff against a second device instead of the reference; or judge the model's outputs "
                             "against its framework's own runtime, beside the reference: onnxruntime (.onnx), "
                             "tflite (.tflite), tensorflow (SavedModel, .pb), paddle (.pdmodel), each an extra "
                             "(pip install 'irtool[tflite]'); onnxruntime also gives its opinion of each ONNX node")
    parser.add_argument("--fill-defaults", action="store_true",
                        help="write the spec's defaults for omitted attributes before OpenVINO reads the model")
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=[D,...]",
                        help="the shape of a model input with dynamic dims, e.g. --shape x=[2,5,8] (repeatable); "
                             "by default dynamic dims are sized from the recurrent nodes they reach")
    parser.add_argument("--batch", type=int, default=None, metavar="N",
                        help="batch size for dynamic batch dims and for dims that reach no recurrent op (default 2, "
                             "else 1 where OpenVINO's shape inference refuses 2)")
    parser.add_argument("--seq-length", type=int, default=None, metavar="N",
                        help="sequence length for dynamic time dims (default 4)")
    parser.add_argument("--reproducers", type=Path, metavar="DIR",
                        help="write a reproducer folder for each failing node into DIR: a single-op IR of the node "
                             "with the inputs the device gave it; irtool reduce takes it")
    parser.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="S",
                        help=f"seconds each step OpenVINO takes on the model may last: reading or converting it, "
                             f"compiling it, each inference (default {DEFAULT_TIMEOUT:g}); past it the run is stopped "
                             f"and reported as a timeout (exit 2, JSON verdict timeout)")
    add_release_options(parser, "run the model")
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from irtool.cli.run_releases import release_process
    from irtool.core import activity

    args.precision_given = args.precision is not None  # a replay takes the record's where it is not
    args.precision = args.precision or "f32"
    release_process(args)  # one release's run of --openvino: its own args
    activity.set_step_limit(args.timeout)  # what the supervisor holds each step to (irtool.cli.supervisor)
    if args.format == "json":
        activity.set_report(stopped_report(args, "error", ""))
    with activity.doing(args.model, "running it", bounded=False):
        return _handle(args)


def _handle(args: argparse.Namespace) -> int:
    from irtool.core.device_names import parse_device
    from irtool.core.errors import IrtoolBug, IrtoolError, RunSkipped, Unsupported
    from irtool.pipeline.options import RunOptions

    options = RunOptions(
        model=args.model, device=parse_device(args.device, "-d"), precision=args.precision,
        precision_given=args.precision_given, inputs=args.inputs, seed=args.seed,
        save_outputs=args.save_outputs, tolerance=parse_tolerances(args.atol, args.rtol),
        config=parse_config(args.config), compare_with=parse_compare_with(args.compare_with),
        oracle=args.compare_with.lower() if args.compare_with and args.compare_with.lower() in ORACLES else None,
        fill_defaults=args.fill_defaults, shapes=parse_shapes(args.shape), reproducers=args.reproducers,
        expected=args.expected, device_outputs=args.device_outputs,
        sizes={name: value for name, value in (("batch_size", args.batch), ("seq_length", args.seq_length))
               if value is not None})
    if args.model.is_dir() and (args.model / "case.json").is_file():  # a reproducer folder
        model = next((args.model / name for name in ("model.xml", "model.onnx") if (args.model / name).is_file()),
                     args.model / "model.xml")
        raise UsageError(f"{args.model}: is a reproducer folder (it holds case.json), not a model: irtool report "
                         f"rejudge {args.model} -o OUTDIR judges its actual.npz again; irtool run {model} -d DEVICE "
                         f"--inputs {args.model / 'inputs.npz'} runs its model")
    if args.seed is not None and args.inputs is not None and args.device_outputs is None:  # (a replay's says more)
        raise UsageError(f"--seed does not apply beside --inputs {args.inputs}: it seeds the inputs irtool generates, "
                         f"and the run takes the file's")
    if args.openvino is not None and args.device_outputs is not None:
        raise UsageError(f"--openvino does not apply to a replay (--device-outputs {args.device_outputs}): a replay "
                         f"runs no release; the record says which one gave the outputs")
    if args.openvino is not None:  # the options are checked above, before any release is made
        from irtool.cli.run_releases import run_releases

        return run_releases(args, lambda line: print(shown(line), file=sys.stderr, flush=True))
    from irtool.pipeline.run import run  # not before: a run of several releases runs each in its own process

    try:
        result = run(options)
    except RunSkipped as error:
        return stopped(args, "unjudged", f"skipped: {error.message}", NOTHING_JUDGED)
    except Unsupported as error:  # OpenVINO lacks what the model needs: said so (the harness skips it, or
        # says error where a frontend cannot convert the file: NotConvertible)
        return stopped(args, "error", error.message, 2, unsupported=True, lacks=error.ops)
    except (IrtoolError, IrtoolBug) as error:
        return stopped(args, "error", error.message, 2)
    print(json_text(to_json(result), indent=2) if args.format == "json" else render_text(result))
    return exit_code(result)


def exit_code(result: Any) -> int:
    """The verdict's exit code; but a PASS whose files (--save-outputs) could not be written is 2: the
    command did not do all it was asked.  Any other verdict keeps its code (a FAIL stays 1 however
    its reproducer fared), and the files not written are listed above the verdict line."""
    code = {"pass": 0, "fail": 1, "error": 2, "unjudged": NOTHING_JUDGED}[result.verdict]
    return 2 if code == 0 and result.unwritten else code



def parse_shapes(items: list[str]) -> dict[str, tuple[int, ...]]:
    """``x=[2,5,8]`` (or ``x=2,5,8``) -> {"x": (2, 5, 8)}; benchmark_app's -shape idiom."""
    shapes = {}
    for item in items:
        name, sep, text = item.partition("=")
        dims = text.strip().strip("[]")
        try:
            sizes = tuple(parse_int(d, 0, 2**63 - 1) for d in dims.split(",")) if sep and name.strip() else None
        except NumberSyntaxError:
            sizes = None
        if sizes is None:
            raise UsageError(f"--shape {cut(item, 200)}: expected NAME=[D,D,...] with whole numbers, e.g. x=[2,5,8]")
        shapes[name.strip()] = sizes
    return shapes


def parse_compare_with(text: str | None) -> tuple[str, str] | None:
    """``GPU``, ``GPU:f16`` or ``HETERO:GPU+CPU:bf16`` -> (device, precision); f32 when none is given."""
    from irtool.core.device_names import PHYSICAL_FAMILIES, VIRTUAL_DEVICES, DeviceError, parse_device

    if text is None or text.lower() in ORACLES:
        return None
    device, _, last = text.rpartition(":")
    if last in PRECISION_CHOICES and device:
        return parse_device(device, "--compare-with"), last
    try:
        return parse_device(text, "--compare-with"), "f32"
    except DeviceError:
        if ":" in text or "," in text:  # written as a device: what is wrong with it is said as such
            raise
    frameworks = ("torch", "pytorch", "keras", "jax")  # no runtime irtool runs: no near name to suggest
    near = "" if text.lower() in frameworks else \
        did_you_mean(text.lower(), ORACLES + tuple(PHYSICAL_FAMILIES) + tuple(VIRTUAL_DEVICES))
    raise UsageError(f"--compare-with {text}: neither a device OpenVINO knows nor a runtime irtool runs{near}; "
                     f"runtimes: {', '.join(ORACLES)}; devices: {', '.join(PHYSICAL_FAMILIES)} and the virtual "
                     f"{', '.join(VIRTUAL_DEVICES)}, with a precision after a colon (GPU:f16). A framework without "
                     f"a runtime here (PyTorch, Keras in Python): save its outputs on the same inputs "
                     f"(numpy.savez(path, OUTPUT=array)) and give them with --expected")


# ----------------------------------------------------------------------------- rendering

def to_json(result: Any) -> dict:
    from irtool.judge.verdicts import not_judged, not_reached

    data = plain(result)
    data["passed"] = result.passed
    for node, record in zip(result.nodes, data["nodes"]):
        record["max_abs"] = node.max_abs
        record["first_step_outside"] = node.first_step_outside
    data["not_judged"] = [node.name for node in not_judged(result.nodes)]
    data["not_reached"] = [node.name for node in not_reached(result.nodes)]
    data["run"]["precision"] = result.run.precision
    for diff, out in zip(result.outputs, data["outputs"]):
        out["outside_share"] = diff.outside_share
    for key in ("expected", "oracle"):
        judgment = getattr(result, key)
        if judgment is not None:
            data[key].update(verdict=judgment.verdict, passed=judgment.passed, failed=list(judgment.failed))
            for diff, out in zip(judgment.outputs, data[key]["outputs"]):
                out["outside_share"] = diff.outside_share
    return data
