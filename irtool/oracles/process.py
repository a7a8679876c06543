"""A framework runtime run on a model in a process of its own (irtool.oracles.child), from the
process that runs OpenVINO: its outputs by name, or its refusal.

The runtime runs the model's own graph, and a SavedModel's or a Paddle program's graph can hold
file operations (TensorFlow's ReadFile, WriteFile, MatchingFiles) that run with the user's
rights: trusted models only (docs/run.md says so).  What the runtime allows is limited here:
the child starts in an empty scratch folder (its working directory and HOME, removed after it:
a relative path in the graph reaches nothing of the user's), its environment holds only what
a Python and the frameworks need (:func:`oracle_environment`: no tokens, keys or passwords of
this process), its stdin is closed, and it is stopped past the step limit (``run --timeout``).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from irtool.core import activity
from irtool.core.errors import RunError
from irtool.core.npz import read_npz, write_npz
from irtool.oracles.common import not_installed

# the modules each runtime is found by (without importing them), and what a message calls it
MODULES = {"tflite": (("ai_edge_litert", "tflite_runtime"), "the TFLite interpreter (ai-edge-litert)"),
           "tensorflow": (("tensorflow",), "TensorFlow"), "paddle": (("paddle",), "Paddle Inference (paddlepaddle)")}
TIMEOUT = 600.0  # seconds a runtime may take to load and run one model, where no step limit is set
# What the child's environment keeps of this process's: a Python's and the C runtime's own
# variables, and the frameworks' settings (threads, logging, devices) by their prefixes.
KEPT = ("PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LD_LIBRARY_PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR",
        "SYSTEMROOT", "CI")
KEPT_PREFIXES = ("LC_", "TF_", "XLA_", "FLAGS_", "CUDA_", "OMP_", "KMP_", "MKL_", "OPENBLAS_", "GLOG_")


@dataclass(frozen=True)
class OracleRun:
    tool: str  # "tensorflow 2.21.0"
    outputs: Mapping[str, np.ndarray] = field(default_factory=dict)
    refused: str | None = None  # the runtime would not run the model: why
    note: str | None = None  # how it ran the model, where not as the file is (tflite_run: int8 weights)


def check_installed(oracle: str) -> None:
    """RunError naming the extra to install, where the runtime is not installed (found, not imported)."""
    modules, what = MODULES[oracle]
    if not any(importlib.util.find_spec(module) is not None for module in modules):
        raise not_installed(oracle, what)


def run_oracle(oracle: str, model: str | Path, feeds: Mapping[str, np.ndarray],
               outputs: Sequence[tuple[str, ...]]) -> OracleRun:
    """``oracle``'s outputs of ``model`` on ``feeds`` (by input name); ``outputs``: each model output's
    names as OpenVINO gives them (what a frozen graph's tensors are fetched by)."""
    check_installed(oracle)
    timeout = activity.step_limit() or TIMEOUT
    with tempfile.TemporaryDirectory(prefix="irtool-oracle-") as folder:
        inputs, target, scratch = Path(folder) / "inputs.npz", Path(folder) / "outputs.npz", Path(folder) / "work"
        scratch.mkdir()
        write_npz(inputs, feeds, "the runtime's inputs")
        command = [sys.executable, "-m", "irtool.oracles.child", oracle, str(Path(model).resolve()), str(inputs),
                   str(target), json.dumps([list(names) for names in outputs])]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                                  cwd=scratch, env=oracle_environment(os.environ, scratch))
        except subprocess.TimeoutExpired:
            raise RunError(f"--compare-with {oracle}: it ran past {timeout:g} s on {model}") from None
        said = next((line for line in reversed(done.stdout.splitlines()) if line.startswith("{")), None)
        if done.returncode != 0 or said is None:
            last = next((line.strip() for line in reversed(done.stderr.splitlines()) if line.strip()), "")
            how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
            raise RunError(f"--compare-with {oracle}: it stopped ({how}) on {model}" + (f": {last}" if last else ""))
        record = json.loads(said)
        if record["refused"] is not None:
            return OracleRun(record["tool"], refused=record["refused"])
        return OracleRun(record["tool"], read_npz(target, "the runtime's outputs"), note=record.get("note"))


def oracle_environment(environ: Mapping[str, str], scratch: Path) -> dict[str, str]:
    """The child's environment: of ``environ``, only :data:`KEPT` and :data:`KEPT_PREFIXES`; HOME
    the scratch folder (what a framework caches there goes with it); irtool importable from it."""
    import irtool

    env = {name: value for name, value in environ.items() if name in KEPT or name.startswith(KEPT_PREFIXES)}
    package_parent = str(Path(irtool.__file__).resolve().parent.parent)  # irtool as this process imports it
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
    env["HOME"] = str(scratch)
    return env
