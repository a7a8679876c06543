"""``irtool reduce CASE -d DEVICE``: shrink a failing case to the smallest case that still fails the same way.

CASE is a model file (an IR .xml of one op, or any model OpenVINO reads with --node NAME), a reproducer folder
(from the harness or irtool run --reproducers), or SUITE.toml::CASE-ID.  Exit 0 when a
reduced reproducer was written (OUTDIR/reproducer, with OUTDIR/reduce.log), 1 when the case
does not fail (nothing to reduce), 2 on bad input, 3 when nothing was run (the device is
absent here or lacks the precision: a skip with OpenVINO's reason), 130 when interrupted
(the best reproducer found so far is kept).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from irtool.cli.common import UsageError, fail, sigterm_as_interrupt
from irtool.cli.options import add_judging_options, parse_config, parse_tolerances, seconds, seed
from irtool.core.device_names import parse_device
from irtool.core.precisions import PRECISION_CHOICES
from irtool.core.text import shown

DEFAULT_OUT = Path("irtool-reduced")
DEFAULT_TIMEOUT = 60.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "reduce", help="shrink a failing case to its smallest reproducer",
        description="Shrink a failing case to the smallest case that still fails the same way. CASE is a model "
                    "(an IR .xml of one op, or with --node NAME any model OpenVINO reads but ONNX: .xml, .tflite, "
                    ".pb, .pdmodel, a SavedModel folder; convert an .onnx model to IR first), a reproducer folder "
                    "(from the "
                    "harness or irtool run --reproducers), or SUITE.toml::CASE-ID. Exit 0 when a reduced "
                    "reproducer was written (OUTDIR/reproducer, with OUTDIR/reduce.log), 1 when the case does "
                    "not fail (nothing to reduce), 2 on bad input, 3 when nothing was run (the device is absent here or "
                    "lacks the precision: a skip, with OpenVINO's reason), 130 when interrupted (the best reproducer "
                    "found so far is kept).")
    parser.add_argument("case", metavar="CASE", help="MODEL (.xml, or any format with --node), a reproducer folder, "
                                                       "or SUITE.toml::CASE-ID")
    parser.add_argument("-d", "--device",
                        help="OpenVINO device, e.g. CPU or HETERO:GPU+CPU (default: a reproducer folder's own)")
    parser.add_argument("--precision", choices=PRECISION_CHOICES,
                        help="INFERENCE_PRECISION_HINT (default: a reproducer folder's own, else f32); 'default' sets "
                             "none and judges at the precision the device picks, read back from it")
    parser.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT, metavar="OUTDIR",
                        help=f"where the reduced reproducer and reduce.log go (default {DEFAULT_OUT})")
    parser.add_argument("--inputs", type=Path, metavar="IN.npz",
                        help="inputs of an IR file, by input name (default: seeded)")
    parser.add_argument("--seed", type=seed, default=0, help="seed of an IR file's generated inputs (default 0)")
    parser.add_argument("--node", metavar="NAME",
                        help="a recurrent node of a whole model (as irtool run lists them): the model runs on the "
                             "device and reduce starts from that node, with the inputs the device gave it")
    add_judging_options(parser)
    check = parser.add_mutually_exclusive_group()
    check.add_argument("--check", metavar="EXPR",
                       help='what "still fails" means instead of the original verdict, e.g. "max_abs>0.1" or '
                            '"Y.nonfinite_mismatch>0 and verdict==fail"')
    check.add_argument("--check-script", type=Path, metavar="FILE.py",
                       help="a Python file defining check(result: dict) -> bool")
    parser.add_argument("--timeout", type=seconds, metavar="S",
                        help=f"seconds per candidate run (default: the suite's, else {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--budget", type=seconds, metavar="S", help="seconds for the whole reduction (default: no limit)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import time

    from irtool.core import activity

    started = time.monotonic()  # --budget counts from here: the check script's import, the original's runs too

    # what reduce does in this process (reading the case, running a --node model once) is held to the
    # candidates' timeout by the supervisor (irtool.cli.supervisor); each candidate runs in a worker
    activity.set_step_limit(args.timeout if args.timeout is not None else DEFAULT_TIMEOUT)
    criterion = _criterion(args, started + args.budget if args.budget else None)
    try:
        with activity.doing(args.case, "reducing it", bounded=False):
            return _handle(args, criterion, started)
    finally:
        from irtool.reduce.check_script import CheckScript

        if isinstance(criterion, CheckScript):  # its process ends with the reduction
            criterion.close()


def _handle(args: argparse.Namespace, criterion: Any, started: float) -> int:
    from irtool.core.errors import RunSkipped
    from irtool.reduce import NothingToReduce, ReduceOptions, load_origin, reduce_case
    from irtool.reduce.origin import NodePasses

    tolerance = parse_tolerances(args.atol, args.rtol)
    config = parse_config(args.config)
    try:
        origin = _node_origin(args, tolerance, config) if args.node is not None else \
            load_origin(args.case, args.inputs, args.seed)
    except NodePasses as error:
        print(f"irtool reduce: {shown(error.message)}")
        return 1
    except RunSkipped as error:  # --node: the model could not run here as asked
        return _skipped(error)
    for note in origin.notes:
        print(f"irtool reduce: note: {shown(note)}", file=sys.stderr)
    device = parse_device(args.device, "-d") if args.device else origin.device
    if device is None:
        raise UsageError(f"{args.case}: name the device with -d DEVICE (e.g. -d CPU)")
    options = ReduceOptions(
        device=device, out_dir=args.out, precision=args.precision or origin.precision or "f32",
        config={**origin.config, **config},
        tolerance=tolerance if args.atol or args.rtol else origin.tolerance, criterion=criterion,
        timeout=args.timeout if args.timeout is not None else origin.timeout or DEFAULT_TIMEOUT,
        budget=args.budget, started=started)  # ReduceOptions checks them
    try:
        with sigterm_as_interrupt():
            outcome = reduce_case(origin, options, lambda line: print(line, flush=True))
    except NothingToReduce as error:
        print(f"irtool reduce: {shown(error.message)}")
        return 1
    except RunSkipped as error:
        return _skipped(error)
    if outcome.interrupted:
        fail(f"interrupted: the best reproducer so far is in {outcome.reproducer}")
        return 130
    for line in outcome.unmatched_faults:  # the reduction ran, but not as asked
        fail(line)
    return 2 if outcome.unmatched_faults else 0


def _skipped(error: Any) -> int:
    """A device absent here, or without the precision: a skip with OpenVINO's reason, exit 3 (as run's)."""
    print(f"irtool: skipped: {error.message}", file=sys.stderr)
    return 3


def _node_origin(args: argparse.Namespace, tolerance: Any, config: dict) -> Any:
    from irtool.reduce.origin import node_origin

    if args.device is None:
        raise UsageError(f"{args.case} --node {args.node}: name the device with -d DEVICE (e.g. -d CPU)")
    return node_origin(Path(args.case), args.node, parse_device(args.device, "-d"), args.precision or "f32",
                       tolerance, config, args.out / "node", args.inputs, args.seed)


def _criterion(args: argparse.Namespace, deadline: float | None) -> Any:
    from irtool.reduce import load_check_script, parse_check

    if args.check is not None:
        return parse_check(args.check)
    if args.check_script is not None:
        return load_check_script(args.check_script, args.timeout or DEFAULT_TIMEOUT, deadline)
    return None

