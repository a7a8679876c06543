"""onnxruntime as a second opinion on an ONNX model (``irtool run model.onnx --compare-with onnxruntime``).

The one place irtool imports onnxruntime, and only when asked (it is optional).  Also here:
where onnxruntime is known to depart from the ONNX pages (measured with onnxruntime 1.32.0,
each departure tested in tests/test_reference_onnx_node.py; docs/onnx.md), so that a
disagreement between onnxruntime and irtool's reference can be explained by the node's
attributes.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import onnx

from irtool.core.errors import RunError
from irtool.onnx.graph import OnnxNode
from irtool.reference.activations import KINDS

# onnxruntime's value for a parameter the node leaves out, where it is not the page's
MISSING_PARAMETERS = {"affine": ("alpha", "0", "1 (Affine's default)"),
                      "thresholdedrelu": ("alpha", "0", "1 (ThresholdedRelu's default)"),
                      "scaledtanh": ("alpha and beta", "0, 0 (output 0)", "none: the node is invalid without them")}


class OnnxruntimeRefused(Exception):
    """onnxruntime would not load or run the model; the message is its reason, on one line."""


def available() -> str | None:
    """onnxruntime's version, or None where it is not installed."""
    try:
        import onnxruntime
    except ImportError:
        return None
    return onnxruntime.__version__


def run_onnxruntime(model: onnx.ModelProto, feeds: Mapping[str, np.ndarray],
                    tensors: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """The model's outputs, and the values of ``tensors`` (intermediate tensors exposed as extra
    graph outputs), by name, run by onnxruntime on CPU.  RunError if onnxruntime is not installed;
    OnnxruntimeRefused with its reason if it will not load or run the model."""
    try:
        import onnxruntime
    except ImportError:
        raise RunError("--compare-with onnxruntime: onnxruntime is not installed (pip install onnxruntime)") from None
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    present = {o.name for o in copy.graph.output}
    for name in tensors:
        if name not in present:
            copy.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    onnxruntime.set_default_logger_severity(4)  # its log lines would reach the user's terminal; its
    options = onnxruntime.SessionOptions()     # errors come back as exceptions
    options.log_severity_level = 4
    try:
        session = onnxruntime.InferenceSession(copy.SerializeToString(), options, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        return dict(zip(names, session.run(names, dict(feeds))))
    except Exception as error:  # onnxruntime's Fail, InvalidGraph, RuntimeException...: its reason is the message
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        last = lines[-1] if lines else type(error).__name__
        raise OnnxruntimeRefused(last.rpartition(" was false. ")[2]) from None  # after its C++ check's text


def departures(node: OnnxNode) -> list[str]:
    """Where onnxruntime departs from the ONNX page for this node (what it does, what the page says)."""
    found = []
    attributes = node.attributes
    if "hidden_size" not in attributes:
        found.append("onnxruntime refuses a node without hidden_size, which the page makes optional (R gives it)")
    if node.layout == 1:
        found.append("onnxruntime refuses layout=1 (batch-major), which the page defines")
    for which in ("alpha", "beta"):
        given = list(attributes.get(f"activation_{which}", []))
        takers = [a for a in node.activations if getattr(KINDS[a.lower()], f"takes_{which}", False)]
        for k, name in enumerate(takers):
            kind = name.lower()
            if k >= len(given) and kind in MISSING_PARAMETERS and which in MISSING_PARAMETERS[kind][0]:
                what, theirs, page = MISSING_PARAMETERS[kind]
                found.append(f"{name} without {what}: onnxruntime uses {theirs}, the page {page}")
    return list(dict.fromkeys(found))


def refusal_reason(nodes: Sequence[OnnxNode]) -> str:
    """The known reasons onnxruntime refuses these nodes, or that none is known."""
    known = [d for node in nodes for d in departures(node) if "refuses" in d]
    return "; ".join(known) if known else "no departure irtool knows of explains it"
