"""The TFLite interpreter as an oracle of a .tflite model: ai-edge-litert's (LiteRT, TFLite's
successor), else tflite-runtime's.  The one module that imports either."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from irtool.oracles.common import not_installed, refused


def _interpreter_class() -> tuple[Any, str] | None:
    try:
        from ai_edge_litert import __version__ as version  # noqa: N811
        from ai_edge_litert import interpreter
        return interpreter.Interpreter, f"ai-edge-litert {version}"
    except ImportError:
        pass
    try:
        from tflite_runtime import __version__ as version  # noqa: N811
        from tflite_runtime import interpreter
        return interpreter.Interpreter, f"tflite-runtime {version}"
    except ImportError:
        return None


def available() -> str | None:
    """The interpreter and its version ("ai-edge-litert 2.3.0"), or None where neither is installed."""
    found = _interpreter_class()
    return found[1] if found else None


def run_tflite(path: str | Path, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The model's outputs by tensor name (the names OpenVINO's TFLite frontend gives them), run by the
    interpreter on ``feeds`` (by input tensor name; a dynamic input is resized to its array)."""
    found = _interpreter_class()
    if found is None:
        raise not_installed("tflite", "the TFLite interpreter (ai-edge-litert)")
    try:
        interpreter = found[0](model_path=str(path), num_threads=1)
        inputs = interpreter.get_input_details()
        for detail in inputs:
            if detail["name"] in feeds and list(detail["shape"]) != list(feeds[detail["name"]].shape):
                interpreter.resize_tensor_input(detail["index"], list(feeds[detail["name"]].shape))
        interpreter.allocate_tensors()
        for detail in inputs:
            array = feeds.get(detail["name"])
            if array is None:
                raise ValueError(f"no value for its input {detail['name']}")
            interpreter.set_tensor(detail["index"], np.ascontiguousarray(array, dtype=detail["dtype"]))
        interpreter.invoke()
        return {detail["name"]: np.array(interpreter.get_tensor(detail["index"]))
                for detail in interpreter.get_output_details()}
    except (RuntimeError, ValueError) as error:
        raise refused(error) from None
