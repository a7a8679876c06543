"""What OpenVINO's frontends say: a file read by one frontend alone (read_model would try every
frontend and let them print to stderr), with the process's stderr quiet meanwhile, and their
messages read for what matters: the first op that failed, an op or opset a release lacks."""
from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from irtool.core.activity import doing
from irtool.core.errors import NotConvertible, Unsupported
from irtool.runtime.core import openvino_release

# What a frontend says when an op's conversion needs a shape the model does not give
WANTS_SHAPES = re.compile(r"rank|static|dynamic", re.IGNORECASE)

_FAILED_OP = re.compile(r"--\s*(\S+) with a message:\s*(.*?)(?=\s--\s|\s*Summary:|$)")
_NOISE = re.compile(r"While validating (?:ONNX )?node '[^']*':\s*|"
                    r"(?:Check '[^']*' failed at|Exception from) \S+:\d+:\s*|"
                    r"FrontEnd API failed with \w+:\s*|\[[\w ]+\] Conversion failed for \S+\s*")


def first_failure(message: str) -> str:
    """The first op a frontend could not convert and why ('Conv-14: The input data tensor's rank
    has to be known (static)'), from its detailed log; else the message as it is."""
    match = _FAILED_OP.search(message)
    return f"{match.group(1)}: {_NOISE.sub('', match.group(2)).strip()}" if match else message


@contextmanager
def quiet_stderr() -> Iterator[None]:
    """The process's stderr (file descriptor 2, where C++ libraries log) sent nowhere meanwhile:
    what OpenVINO's frontends print while failing is said by the exception, in one line."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


# OpenVINO's words for an op its opsets do not hold (the IR reader's two, the ONNX frontend's one)
_NO_SUCH_OPSET = re.compile(r"Cannot create (\S+) layer (.+?) id:\S+ from unsupported opset: (\S+)")
_NOT_IN_OPSET = re.compile(r"Opset (\S+) doesn't contain the operation with type: (\S+)")
# A frontend's words for an op or a feature it lacks, in the raw text of its exception (measured with
# openvino 2026.4.1).  Every frontend but TFLite's ends a failed conversion with its report of the ops
# left unconverted (common_translators/unconverted_ops_report.cpp): "No conversion rule found for
# operations: A, B" (no translator), "Conversion is failed for: A" (its translator threw: the reason is
# the detailed log's "-- A with a message: ..."); an op a frontend kept as a framework node fails its
# validation as 'util::A'; TFLite's frontend names the op it stopped at ("... while working with
# operation of type A and name N") and a tensor type it has no counterpart for ("Unexpected type: T").
_LACKS = (
    (re.compile(r"No conversion rule found for operations: ([^\n]+?)\s*(?:--|$)", re.M), "op"),
    (re.compile(r"Conversion is failed for: ([^\n]+?)\s*(?:--|$)", re.M), "op"),
    (re.compile(r"following ONNX operations: ([^\n]+?)\s*$", re.M), "op"),
    (re.compile(r"While validating node 'util::(\w+) "), "op"),
    (re.compile(r"while working with operation of type (\w+) and name"), "op"),
    (re.compile(r"Unexpected type: (\w+)"), "tensor type"),
)
_REASON = re.compile(r"-- (\S+) with a message:\s*(.*?)(?=\s--\s|\s*Summary:|$)", re.S)
_REASON_NOISE = re.compile(r"FrontEnd API failed with \w+:?\s*|\[[\w ]+\]\s*(?:internal error:\s*)?")
_TFLITE_REASON = re.compile(r"(?:^|\n)([^\n]*?)\s*Error is encountered while working with operation")


def unsupported_op(name: str, message: str, frontend: str = "ONNX") -> Unsupported | None:
    """OpenVINO refusing an op or a feature that this release lacks: an opset, as Unsupported naming
    it (a release that cannot run the model, skipped as an absent device is); an op its frontend
    cannot convert, as NotConvertible naming every op the frontend's report lists and why (an
    error: a skip could hide a conversion regression).  ``message``: the exception's
    whole text (the op is named in lines openvino_message drops).  An IR op that no opset of any
    release irtool knows holds (ErfInv claimed of opset5) is left to the reader's own error: the
    file is wrong, not the release."""
    from irtool.specs.opsets import openvino_opsets

    release = openvino_release()
    table = openvino_opsets()
    if match := _NO_SUCH_OPSET.search(message):
        op_type, layer, opset = match.groups()
        known = (f"; openvino {table.openvino} has it" if table.op_version(op_type, opset) else "")
        return Unsupported(f"{name}: openvino {release} cannot read it: layer '{layer}' is {op_type} of {opset}, "
                           f"an opset this release does not have{known}", (op_type,))
    if (match := _NOT_IN_OPSET.search(message)) and table.op_version(match.group(2), match.group(1)):
        opset, op_type = match.groups()
        return Unsupported(f"{name}: openvino {release} cannot read it: its {opset} has no {op_type} "
                           f"(openvino {table.openvino}'s has)", (op_type,))
    reasons = {op: _REASON_NOISE.sub("", _NOISE.sub("", " ".join(why.split()))).strip()
               for op, why in _REASON.findall(message)}
    if any(WANTS_SHAPES.search(why) for why in reasons.values()):  # a shape would let it convert
        return None
    found: dict[str, str] = {}  # op (or tensor type) -> how it is said; every report line, not the first alone
    for pattern, what in _LACKS:
        if match := pattern.search(message):
            ops = tuple(op.strip() for op in match.group(1).split(",") if op.strip())
            if tflite := _TFLITE_REASON.search(message):
                reasons[ops[0]] = tflite.group(1).strip()
            for op in ops:
                why = f" ({_bounded(reasons[op], MAX_REASON)})" if reasons.get(op) else ""
                found.setdefault(op, f"{'the tensor type ' if what != 'op' else ''}{op}{why}")
    if not found:
        return None
    said = _bounded(", ".join(found.values()), MAX_REASONS)
    return NotConvertible(f"{name}: the {frontend} frontend of openvino {release} cannot convert {said}", tuple(found))


MAX_REASON, MAX_REASONS = 160, 600  # characters of one op's reason, and of all ops said: one readable line


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


_READERS = {"ir": "IR reader", "onnx": "ONNX frontend", "tflite": "TensorFlow Lite frontend",
            "tf": "TensorFlow frontend", "paddle": "PaddlePaddle frontend"}  # frontend -> what messages call it


def read_ir_frontend(path: str | Path, framework: str = "ir") -> tuple[Any | None, str | None]:
    """OpenVINO's own verdict on a file, through one frontend alone ("ir", "onnx", "tflite", "tf",
    "paddle"; read_model would try every frontend and let them print to stderr): the ov.Model, or None and the reason
    on one line (where OpenVINO failed comes first in its text and what failed last)."""
    model, whole = convert_alone(path, framework)
    return model, None if model is not None else last_useful_line(whole)


def ir_reader_takes(path: str | Path) -> bool:
    """Whether OpenVINO's IR reader takes the file (an IR version it reads): read_model tries the other
    frontends on a file it does not take, which print to stderr as they fail."""
    from openvino.frontend import FrontEndManager

    try:
        return bool(FrontEndManager().load_by_framework("ir").supported(str(path)))
    except Exception:  # its verdict on a file it cannot even look at: read_model's error says why
        return False


def convert_alone(path: str | Path, framework: str) -> tuple[Any | None, str]:
    """The model read by one frontend, or None and the whole text of its exception."""
    from openvino.frontend import FrontEndManager

    try:
        frontend = FrontEndManager().load_by_framework(framework)
        if framework == "ir" and not frontend.supported(str(path)):  # read_model then finds no frontend
            return None, "its IR reader does not take it (read_model finds no frontend for it)"
        with doing(path, f"reading it with OpenVINO's {_READERS.get(framework, framework + ' frontend')}"):
            return frontend.convert(frontend.load(str(path))), ""
    except Exception as error:  # OpenVINO raises RuntimeError and friends; its verdict is the message
        return None, str(error) or type(error).__name__


def last_useful_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Exception from", "Check '", "While validating",
                                                             "To facilitate"))]
    return (useful or lines or ["?"])[-1]
