"""TensorFlow as an oracle of a SavedModel folder (its serving signature) or a frozen graph (.pb).
The one module that imports tensorflow."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from irtool.oracles.common import not_installed, refused

SIGNATURE = "serving_default"


def _tensorflow() -> Any | None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # its start-up log lines would reach the terminal
    try:
        import tensorflow
    except ImportError:
        return None
    return tensorflow


def available() -> str | None:
    """TensorFlow's version ("tensorflow 2.21.0"), or None where it is not installed."""
    tf = _tensorflow()
    return f"tensorflow {tf.__version__}" if tf is not None else None


def run_tensorflow(path: str | Path, feeds: Mapping[str, np.ndarray],
                   outputs: Sequence[tuple[str, ...]]) -> dict[str, np.ndarray]:
    """The model's outputs by name, run by TensorFlow on CPU: a SavedModel's serving signature
    (its outputs by their keys, which OpenVINO names them by), or a frozen graph's tensors that
    ``outputs`` (each model output's names, as OpenVINO gives them) name, fed by tensor name."""
    tf = _tensorflow()
    if tf is None:
        raise not_installed("tensorflow", "TensorFlow")
    try:
        with tf.device("/CPU:0"):
            if Path(path).is_dir():
                function = tf.saved_model.load(str(path)).signatures[SIGNATURE]
                return {key: value.numpy() for key, value in function(**{
                    name: tf.constant(array) for name, array in feeds.items()}).items()}
            return _frozen_graph(tf, Path(path), feeds, outputs)
    except (ValueError, KeyError, TypeError, tf.errors.OpError) as error:
        raise refused(error) from None


def _frozen_graph(tf: Any, path: Path, feeds: Mapping[str, np.ndarray],
                  outputs: Sequence[tuple[str, ...]]) -> dict[str, np.ndarray]:
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(path.read_bytes())
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.import_graph_def(graph_def, name="")
    tensors = {op.name for op in graph.get_operations()}
    fetches = {}
    for names in outputs:  # the first of each output's names that is a tensor of the graph
        name = next((n for n in names if ":" in n and n.rsplit(":", 1)[0] in tensors), None)
        if name is None:
            raise ValueError(f"the graph has no tensor named {' or '.join(names)}")
        fetches[name] = graph.get_tensor_by_name(name)
    with tf.compat.v1.Session(graph=graph) as session:
        values = session.run(fetches, {graph.get_tensor_by_name(_tensor(name)): array for name, array in feeds.items()})
    return {name: np.asarray(value) for name, value in values.items()}


def _tensor(name: str) -> str:
    return name if ":" in name else f"{name}:0"
