"""``--compare-with onnxruntime|tflite|tensorflow|paddle``: the runtime of the model's own framework
as an oracle.  It runs the model file on the inputs OpenVINO got, and its outputs judge OpenVINO's
as an ``--expected`` file's would (irtool.judge.expected): a model-level verdict with per-output
statistics, whether or not the model holds a recurrent node.  onnxruntime runs in this process
(it also gives its opinion of each ONNX node: irtool.judge.onnx_nodes.second_opinion); the
others each in a process of their own (irtool.oracles.process)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from irtool.core.errors import RunError
from irtool.core.formats import FORMATS, ORACLES, model_format
from irtool.judge.expected import ExpectedOutputs


@dataclass(frozen=True)
class OracleOutputs:
    """What a runtime computed: its outputs as expected ones (``expected.source`` names the runtime),
    or why it refused the model; and, for onnxruntime, its opinion of each ONNX node."""

    tool: str
    expected: ExpectedOutputs | None
    refused: str | None = None  # "tflite ... refuses the model: why"
    second_opinion: Any = None  # irtool.judge.onnx_nodes.SecondOpinion (onnxruntime only)


def check_oracle(oracle: str, model: str | Path) -> None:
    """RunError unless ``oracle`` reads the model's format and is installed (the extra to install named)."""
    found = model_format(model)
    if oracle not in ORACLES:
        raise RunError(f"--compare-with {oracle}: not a runtime irtool knows ({', '.join(ORACLES)})")
    if found is None or found.oracle != oracle:
        reads = " and ".join(f"{f.label} {f.suffix or '(a folder)'}" for f in FORMATS if f.oracle == oracle)
        what = f"this is a{'n' if found is not None and found.label[0] in 'AEIOU' else ''} " \
               f"{found.label if found is not None else 'unknown'} model"
        theirs = (f"its framework's runtime is --compare-with {found.oracle}" if found is not None and found.oracle
                  else "compare it with a second device (--compare-with DEVICE) or with its framework's outputs "
                       "(--expected OUT.npz)")
        raise RunError(f"{model}: --compare-with {oracle} runs {reads} models, and {what}: {theirs}")
    if oracle == "onnxruntime":
        from irtool.onnx.onnxruntime_run import available

        if available() is None:
            raise RunError("--compare-with onnxruntime: onnxruntime is not installed (pip install "
                           "'irtool[onnxruntime]')")
        return
    from irtool.oracles.process import check_installed

    check_installed(oracle)


def oracle_outputs(oracle: str, model: str | Path, prepared: Any, inputs: Mapping[str, np.ndarray],
                   policy: Any = None) -> OracleOutputs:
    """``oracle`` run on the model file with the run's inputs (fed by the names OpenVINO gives them)."""
    if oracle == "onnxruntime":
        from irtool.judge.onnx_nodes import second_opinion

        opinion, outputs = second_opinion(prepared.onnx, inputs, policy)
        if opinion.refused:
            return OracleOutputs(opinion.tool, None, f"{opinion.tool} refuses the model: {opinion.refused}", opinion)
        return OracleOutputs(opinion.tool, ExpectedOutputs(opinion.tool, outputs), None, opinion)
    from irtool.oracles.process import run_oracle

    done = run_oracle(oracle, model, inputs, prepared.labels)
    if done.refused is not None:
        return OracleOutputs(done.tool, None, f"{done.tool} refuses the model: {done.refused}")
    return OracleOutputs(done.tool, ExpectedOutputs(done.tool, done.outputs, done.note))
