"""The shape and element type of each model output on given inputs, by OpenVINO's shape inference
alone (no compile): what outputs a device gave elsewhere are checked against before they are judged
(irtool.pipeline.recording)."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from irtool.runtime.model import clone_model


def output_shapes(model: Any, inputs: Mapping[str, np.ndarray]) -> list[tuple[tuple[int | None, ...] | None, str]]:
    """Per model output, in order: its shape on ``inputs`` (a dim None where it depends on the values,
    None where even the rank does) and its element type's kind ("float", "int", "bool", or "" where
    dynamic).  Shape inference that refuses the inputs gives every shape as unknown."""
    import openvino as ov

    copy = clone_model(model)
    for parameter in copy.get_parameters():
        names = set(parameter.output(0).get_names()) | {parameter.get_friendly_name()}
        key = next((name for name in names if name in inputs), None)
        if key is not None:
            parameter.set_partial_shape(ov.PartialShape(list(np.shape(inputs[key]))))
    try:
        copy.validate_nodes_and_infer_types()
        inferred = copy
    except RuntimeError:
        inferred = None
    found = []
    for k, output in enumerate(model.outputs):
        shape = (inferred.outputs[k] if inferred is not None else output).get_partial_shape()
        dims = None if shape.rank.is_dynamic or inferred is None else \
            tuple(dim.get_length() if dim.is_static else None for dim in shape)
        kind = output.get_element_type()
        found.append((dims, "" if kind.is_dynamic() else "float" if kind.is_real()
                      else "bool" if kind == ov.Type.boolean else "int"))
    return found
