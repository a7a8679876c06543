"""Options that several commands share and mean the same in each: tolerances (``--atol``/``--rtol``,
global or per output) and compile properties (``--config``) of ``run``, ``harness`` and ``reduce``;
the spelling of a spec's names as options, for ``build`` of an op and of an ONNX node."""
from __future__ import annotations

import argparse
import math
from pathlib import Path

from irtool.cli.common import UsageError
from irtool.judge.compare import TolerancePolicy

# Shorter spellings of dim symbols on the command line, beside --batch-size etc.
SYMBOL_ALIASES = {"batch_size": "batch"}


def option(name: str) -> str:
    """A spec's name as an option: hidden_size -> --hidden-size."""
    return "--" + name.replace("_", "-")


def dynamic_symbols(text: str, symbols: list[str]) -> tuple[str, ...]:
    """``batch,seq_length`` (or seq-length, batch_size) -> symbol names; UsageError for others."""
    by_name = {name: name for name in symbols}
    by_name.update({alias: name for name, alias in SYMBOL_ALIASES.items() if name in symbols})
    chosen = []
    for item in filter(None, (part.strip().replace("-", "_") for part in text.split(","))):
        if item not in by_name:
            raise UsageError(f"--dynamic {item}: expected some of {', '.join(by_name)}")
        chosen.append(by_name[item])
    return tuple(chosen)


def add_tolerance_options(parser: argparse.ArgumentParser, given: str = "") -> None:
    """--atol and --rtol (``given``: what they replace, said in their help)."""
    parser.add_argument("--atol", action="append", default=[], metavar="[OUTPUT:]A",
                        help=f"absolute tolerance{given}, for all outputs or one (repeatable: --atol Y:1e-4)")
    parser.add_argument("--rtol", action="append", default=[], metavar="[OUTPUT:]R",
                        help=f"relative tolerance{given}, for all outputs or one (repeatable)")


def add_judging_options(parser: argparse.ArgumentParser) -> None:
    add_tolerance_options(parser)
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                        help="extra compile property (repeatable), e.g. NUM_STREAMS=1")


def add_release_options(parser: argparse.ArgumentParser, what: str, then: str = ", and they are compared with "
                        "each other") -> None:
    """--openvino and --openvino-cache, for run, harness and worker; ``what`` says what is done under
    each release (``run the suites``), ``then`` what follows for the releases of one run."""
    parser.add_argument("--openvino", metavar="RELEASES",
                        help=f"{what} under each of these OpenVINO releases side by side, e.g. 2025.4.1,current "
                             "(current: the one installed here); each is a version pip resolves (a release, or a "
                             "nightly such as 2026.5.0.dev20261120), a wheel file (openvino-VERSION-....whl) or "
                             "env:PATH (an existing environment that has openvino, used as it is); each version and "
                             "wheel gets its own environment, made with venv and pip on first use; each is recorded "
                             f"with its exact version{then}")
    parser.add_argument("--openvino-cache", type=Path, metavar="DIR",
                        help="where the releases' environments are kept (default $IRTOOL_OPENVINO_CACHE, else "
                             "~/.cache/irtool/openvino)")


def parse_tolerances(atols: list[str], rtols: list[str]) -> TolerancePolicy:
    atol, per_atol = _split_tolerances(atols, "--atol")
    rtol, per_rtol = _split_tolerances(rtols, "--rtol")
    return TolerancePolicy(atol, rtol, per_atol, per_rtol)


def _split_tolerances(values: list[str], option: str) -> tuple[float | None, dict[str, float]]:
    overall, per_output = None, {}
    for text in values:
        name, _, number = text.rpartition(":")
        try:
            value = float(number)
        except ValueError:
            raise UsageError(f"{option} {text}: expected a number or OUTPUT:number") from None
        if not value >= 0 or math.isinf(value):
            raise UsageError(f"{option} {text}: a tolerance is a finite number >= 0")
        if name:
            per_output[name] = value
        else:
            overall = value
    return overall, per_output


def seconds(text: str) -> float:
    """argparse type of an option in seconds: finite, > 0, at most a week (as a suite's timeout)."""
    from irtool.jobs.suite import check_seconds

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    return check_seconds(value, "", argparse.ArgumentTypeError)


def byte_count(text: str) -> int:
    """argparse type of a size limit in bytes: a whole number >= 1 (0 or less would mean nothing)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of bytes") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: a size limit is a number of bytes >= 1")
    return value


def seed(text: str) -> int:
    """argparse type of a seed: an integer from 0 to 2**63-1 (what numpy's generators take)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= value < 2 ** 63:
        raise argparse.ArgumentTypeError(f"{text}: a seed is an integer from 0 to 2**63-1")
    return value


def parse_config(items: list[str]) -> dict[str, str]:
    config = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--config {item}: expected KEY=VALUE")
        if key.strip() == "INFERENCE_PRECISION_HINT":
            raise UsageError("set the inference precision with --precision, not --config")
        config[key.strip()] = value.strip()
    return config
