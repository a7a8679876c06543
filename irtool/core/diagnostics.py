"""Diagnostics: findings as records with stable codes, and their renderers.

JSON consumers match ``code``, never message text.  Every code is listed once in
:data:`CODES` with its default severity and a one-line summary (docs/validate.md shows
the table).
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Sequence
from urllib.parse import quote

from irtool.core.errors import IrtoolBug
from irtool.core.jsonable import json_text
from irtool.core.text import counted, escaped_lines

ERROR, WARNING, NOTE = "error", "warning", "note"
SEVERITIES = (ERROR, WARNING, NOTE)  # most severe first


@dataclass(frozen=True)
class Code:
    code: str
    severity: str
    summary: str


CODES: dict[str, Code] = {c.code: c for c in [
    Code("IR001", ERROR, "the file is not well-formed XML (truncated, binary, empty)"),
    Code("IR002", ERROR, "the file declares a DTD or entities; refused unread"),
    Code("IR003", ERROR, "the file is larger than the size limit"),
    Code("IR004", ERROR, "the root element is neither <net> nor a single <layer>"),
    Code("IR005", ERROR, "the net's IR version is missing or not 10 or 11 (OpenVINO refuses the file)"),
    Code("IR006", ERROR, "the file declares an encoding OpenVINO's reader does not decode, and holds bytes past ASCII "
                         "(OpenVINO reads them as UTF-8: names and values differ)"),
    Code("IR007", WARNING, "a default XML namespace (xmlns=...), which the IR format does not write and OpenVINO ignores"),
    Code("IR008", ERROR, "well-formed XML past what irtool reads (nesting deeper than 256 levels, a text run of "
                         "megabytes): not checked"),
    Code("IR010", NOTE, "an op OpenVINO has but irtool has no spec for: not checked (once per op type)"),
    Code("IR011", NOTE, "a version of an op that irtool has no spec for: not checked (once per op type)"),
    Code("IR012", ERROR, "the layer's opset has no op of this type (OpenVINO refuses the file)"),
    Code("IR013", ERROR, "a layer lacks its id, type or version"),
    Code("IR014", ERROR, "the layer's version is not one of OpenVINO's opsets (OpenVINO refuses the file)"),
    Code("IR015", ERROR, "no OpenVINO opset has an op of this type (OpenVINO refuses the file where a Result depends on the layer, and drops the layer where none does)"),
    Code("IR016", WARNING, "a <layer> outside <layers> or an <edge> outside <edges> (OpenVINO ignores it)"),
    Code("IR017", ERROR, "a layer id that is not an unsigned 64-bit integer (OpenVINO refuses the file)"),
    Code("IR018", WARNING, "an id written as the IR format does not (' 5', '+5', '05') that OpenVINO reads as a number"),
    Code("IR020", ERROR, "a required attribute is missing"),
    Code("IR021", ERROR, "an attribute the spec does not know (OpenVINO ignores it: a typo changes the model)"),
    Code("IR022", ERROR, "an attribute value of the wrong type"),
    Code("IR023", ERROR, "an attribute value outside its allowed values"),
    Code("IR024", ERROR, "an attribute value out of range"),
    Code("IR025", ERROR, "an attribute list of the wrong length"),
    Code("IR026", WARNING, "the file relies on a spec default that OpenVINO does not apply"),
    Code("IR027", WARNING, "activations_alpha/beta given, but no activation takes parameters"),
    Code("IR028", NOTE, "activations written once per direction, both halves equal (OpenVINO reads the first)"),
    Code("IR029", ERROR, "activations per direction that differ (OpenVINO applies the first half to both)"),
    Code("IR030", ERROR, "wrong number of input or output ports"),
    Code("IR031", ERROR, "a port id is missing, repeated or not an integer"),
    Code("IR032", WARNING, "an optional input that OpenVINO nevertheless requires is absent"),
    Code("IR040", ERROR, "a port has the wrong rank"),
    Code("IR041", ERROR, "an input dim disagrees with the spec or with the other ports"),
    Code("IR042", ERROR, "an output dim disagrees with the dims the spec infers"),
    Code("IR043", ERROR, "a <dim> that is not a size, -1, ? or an interval"),
    Code("IR044", ERROR, "port dims disagree with the layer's shape attribute"),
    Code("IR045", ERROR, "a Const's shape has a dynamic dim (-1, ? or an interval; OpenVINO refuses or misreads it)"),
    Code("IR046", WARNING, "a <dim> written as the IR format does not (4.0, +4) that OpenVINO reads as the same number"),
    Code("IR050", ERROR, "a port's element type is of the wrong class (floating, integer)"),
    Code("IR051", ERROR, "ports that the spec gives one element type disagree"),
    Code("IR052", ERROR, "an unknown port precision"),
    Code("IR053", ERROR, "a port precision disagrees with the layer's element type attribute"),
    Code("IR054", WARNING, "an element type written in another case than the IR format writes (F32, Boolean) that "
                           "OpenVINO reads as the same type"),
    Code("IR059", ERROR, "an edge's layer or port id is not an unsigned 64-bit integer (OpenVINO refuses the file)"),
    Code("IR060", ERROR, "two layers share an id (OpenVINO keeps the later one)"),
    Code("IR061", ERROR, "an edge names a layer that does not exist"),
    Code("IR062", ERROR, "an edge names a port that does not exist, or of the wrong side"),
    Code("IR063", ERROR, "producer and consumer ports of an edge disagree on dims"),
    Code("IR064", ERROR, "producer and consumer ports of an edge disagree on precision"),
    Code("IR065", ERROR, "the graph has a cycle"),
    Code("IR066", ERROR, "a required input port is not connected"),
    Code("IR067", WARNING, "no Result can be reached from this layer (OpenVINO drops it; a Parameter stays an input)"),
    Code("IR068", ERROR, "an input port is fed by more than one edge"),
    Code("IR069", ERROR, "the net has no Result layer (OpenVINO reads a model with no outputs; irtool run refuses it)"),
    Code("IR070", ERROR, "the weights file (.bin) beside the .xml is missing, unreadable or not a file"),
    Code("IR071", ERROR, "a Const reaches past the end of the weights file"),
    Code("IR072", ERROR, "a Const's size is not its element count times the item size"),
    Code("IR090", ERROR, "a TensorIterator or Loop with no <body>, or a body with no <layers> (OpenVINO refuses the file)"),
    Code("IR091", ERROR, "a port_map or back edge attribute OpenVINO cannot read: missing, not an integer, out of range "
                         "(OpenVINO refuses the file)"),
    Code("IR092", ERROR, "a port_map entry or back edge naming no Parameter (inputs) or Result (outputs, back edges' "
                         "from-layer) of the body (OpenVINO refuses the file)"),
    Code("IR093", ERROR, "a port_map that does not describe each input and output of its layer once, or a Loop's "
                         "without execution_condition (OpenVINO refuses the file)"),
    Code("IR073", ERROR, "a string Const's packed bytes that OpenVINO cannot read (count, offsets) or reads otherwise "
                         "(more strings than its shape)"),
    Code("IR080", ERROR, "OpenVINO rejected the file"),
    Code("IR081", NOTE, "OpenVINO read the file"),
    Code("IR082", ERROR, "a declared port dim disagrees with the shape OpenVINO infers"),
    Code("IR083", NOTE, "OpenVINO was not asked: a lone <layer> is not a model, or the .bin is not a regular file"),
    # ONNX files (irtool/validate/onnx_models.py)
    Code("ONNX000", NOTE, "what was checked: onnx.checker and irtool's checks of the GRU/LSTM/RNN nodes"),
    Code("ONNX001", ERROR, "the file is not an ONNX model (not protobuf, truncated, empty)"),
    Code("ONNX002", ERROR, "the file is larger than the size limit"),
    Code("ONNX003", ERROR, "onnx.checker rejects the model"),
    Code("ONNX004", WARNING, "the model imports no opset of the default domain that onnx knows: nodes not checked"),
    Code("ONNX005", ERROR, "a tensor's external data is outside the model's folder, not a regular file, or too short"),
    Code("ONNX010", ERROR, "an attribute the op's schema does not have"),
    Code("ONNX011", ERROR, "a required attribute is missing"),
    Code("ONNX012", ERROR, "an attribute of the wrong type"),
    Code("ONNX013", ERROR, "an attribute value the op's page does not allow"),
    Code("ONNX014", ERROR, "activations: unknown function, wrong count per direction, or alpha/beta that do not fit"),
    Code("ONNX020", ERROR, "too many inputs or outputs, or a required input missing"),
    Code("ONNX030", ERROR, "an input or output of the wrong rank"),
    Code("ONNX031", ERROR, "an input dim disagrees with the op's page or with the other inputs"),
    Code("ONNX032", ERROR, "a declared output dim disagrees with the dims the op's page gives"),
    Code("ONNX040", ERROR, "an element type the op's type constraint does not allow, or T differing between inputs"),
    Code("ONNX050", ERROR, "sequence_lens (an initializer) holds a value outside [0, seq_length]"),

]}

JSON_FIELDS = ("code", "severity", "message", "line", "column", "layer_id", "layer_name", "port_id",
               "attribute", "expected", "found")


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: str
    message: str
    path: str | None = None
    line: int | None = None
    column: int | None = None
    layer_id: str | None = None
    layer_name: str | None = None
    port_id: str | None = None
    attribute: str | None = None
    expected: str | None = None
    found: str | None = None

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise IrtoolBug(f"diagnostic code {self.code} is not in the catalogue")
        if self.severity not in SEVERITIES:
            raise IrtoolBug(f"diagnostic severity {self.severity!r} is not one of {SEVERITIES}")

    def to_json(self) -> dict:
        record = asdict(self)
        return {key: record[key] for key in JSON_FIELDS}


@dataclass
class FileReport:
    """All diagnostics for one file."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # why the file could not be checked (not XML, too large, unreadable), None for a checked file: such
    # a file is never valid, whatever severities its diagnostics are given or whether they are shown
    unchecked: str | None = None

    @property
    def valid(self) -> bool:
        return self.unchecked is None and not any(d.severity == ERROR for d in self.diagnostics)

    def count(self, severity: str) -> int:
        return sum(1 for d in self.diagnostics if d.severity == severity)


def clipped(text: str, limit: int = 200) -> str:
    """Text from the file as a diagnostic field holds it: cut after ``limit`` characters, with its length."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def render_text(reports: Sequence[FileReport], summary: bool = True) -> str:
    """Compiler-style lines: ``path:line:col: severity[CODE] message``."""
    out = []
    for report in reports:
        if report.unchecked is not None and not report.diagnostics:
            out.append(f"{report.path}: not checked: {report.unchecked}")
        for d in report.diagnostics:
            where = report.path
            if d.line is not None:
                where += f":{d.line}"
                if d.column is not None:
                    where += f":{d.column}"
            out.append(f"{where}: {d.severity}[{d.code}] {d.message}")
    if summary:
        bad = sum(1 for r in reports if not r.valid and r.unchecked is None)
        counts = ", ".join(counted(sum(r.count(s) for r in reports), s) for s in SEVERITIES)
        invalid = f" in {counted(bad, 'invalid file')}" if bad else ""
        unchecked = sum(1 for r in reports if r.unchecked is not None)
        checked = f"{counted(len(reports) - unchecked, 'file')} checked" + (
            f", {counted(unchecked, 'file')} not checked" if unchecked else "")
        out.append(f"{checked}: {counts}{invalid}")
    return escaped_lines(out) + ("\n" if out else "")  # each record one line: names from the file are escaped


def render_json(reports: Sequence[FileReport]) -> str:
    return json_text({"files": [{"path": r.path, "valid": r.valid, "checked": r.unchecked is None,
                                  **({"unchecked": r.unchecked} if r.unchecked is not None else {}),
                                  "diagnostics": [d.to_json() for d in r.diagnostics]} for r in reports]},
                      indent=2) + "\n"


def sarif_uri(path: str) -> str:
    """A path as SARIF's ``artifactLocation.uri`` takes it: a relative URI reference with every
    character outside the unreserved set and ``/`` percent-encoded (a ``:`` too, which would read
    as a scheme), or a ``file://`` URI for an absolute path."""
    if os.path.isabs(path):
        return Path(path).as_uri()
    return quote(path.replace(os.sep, "/"), safe="/", errors="surrogateescape")


def render_sarif(reports: Sequence[FileReport], tool_version: str) -> str:
    """SARIF 2.1.0, one run, the code catalogue as rules."""
    level = {ERROR: "error", WARNING: "warning", NOTE: "note"}
    used = sorted({d.code for r in reports for d in r.diagnostics})
    results = []
    for report in reports:
        for d in report.diagnostics:
            region = {k: v for k, v in (("startLine", d.line), ("startColumn", d.column)) if v is not None}
            location = {"physicalLocation": {"artifactLocation": {"uri": sarif_uri(report.path)},
                                             **({"region": region} if region else {})}}
            results.append({"ruleId": d.code, "level": level[d.severity], "message": {"text": d.message},
                            "locations": [location]})
    # a file not checked is the tool's own failure on it, said even where --severity switched its finding off
    unread = [{"level": "error", "message": {"text": f"not checked: {report.unchecked}"},
               "locations": [{"physicalLocation": {"artifactLocation": {"uri": sarif_uri(report.path)}}}]}
              for report in reports if report.unchecked is not None]
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "irtool", "version": tool_version,
                                      "rules": [{"id": c, "shortDescription": {"text": CODES[c].summary},
                                                 "defaultConfiguration": {"level": level[CODES[c].severity]}}
                                                for c in used]}},
                  "results": results,
                  **({"invocations": [{"executionSuccessful": False, "toolExecutionNotifications": unread}]}
                     if unread else {})}],
    }
    return json_text(sarif, indent=2) + "\n"


def sort_key(d: Diagnostic) -> tuple:
    return (d.line if d.line is not None else 0, d.column or 0, d.code)


def sorted_diagnostics(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    return sorted(diagnostics, key=sort_key)
