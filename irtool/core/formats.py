"""The model formats irtool runs: what OpenVINO reads directly (``ov.convert_model``'s inputs).

One table says, per format, how a path is recognised, which OpenVINO frontend reads it and which
runtime of its framework does (``--compare-with``);
``irtool run``, the harness's ``[[models]]`` and ``reduce`` check paths against it, and
irtool.runtime.model reads through the named frontend alone (``Core.read_model`` would try
every frontend, each printing to stderr).  No openvino import here.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SAVED_MODEL_FILE = "saved_model.pb"


@dataclass(frozen=True)
class ModelFormat:
    label: str  # what messages call it
    frontend: str  # OpenVINO's frontend name (FrontEndManager.load_by_framework)
    suffix: str | None  # the file suffix; None for a folder format
    oracle: str | None = None  # the framework's runtime that reads it (``--compare-with``), where there is one


FORMATS = (
    ModelFormat("IR", "ir", ".xml"),
    ModelFormat("ONNX", "onnx", ".onnx", "onnxruntime"),
    ModelFormat("TensorFlow Lite", "tflite", ".tflite", "tflite"),
    ModelFormat("TensorFlow frozen graph", "tf", ".pb", "tensorflow"),
    ModelFormat("PaddlePaddle", "paddle", ".pdmodel", "paddle"),
    ModelFormat("TensorFlow SavedModel", "tf", None, "tensorflow"),  # a folder holding saved_model.pb
)
ORACLES = ("onnxruntime", "tflite", "tensorflow", "paddle")  # --compare-with NAME: a runtime, not a device
SAVED_MODEL = FORMATS[-1]
SUFFIXES = tuple(f.suffix for f in FORMATS if f.suffix)
WEIGHTS_BESIDE = {".xml": ".bin", ".pdmodel": ".pdiparams"}  # the weights file a model file reads beside it


def model_format(path: str | Path) -> ModelFormat | None:
    """The format of a model path: by its suffix, or a SavedModel folder (one holding
    saved_model.pb); None for anything else."""
    path = Path(path)
    if path.is_dir():
        return SAVED_MODEL if (path / SAVED_MODEL_FILE).is_file() else None
    return next((f for f in FORMATS if f.suffix and path.suffix.lower() == f.suffix), None)


def formats_text() -> str:
    """'IR .xml, ONNX .onnx, ... and TensorFlow SavedModel folders': for messages and help."""
    parts = [f"{f.label} {f.suffix}" for f in FORMATS if f.suffix] + [f"{SAVED_MODEL.label} folders"]
    return ", ".join(parts[:-1]) + " and " + parts[-1]
