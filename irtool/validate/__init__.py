"""The validators: every place where an IR file (or an ONNX model's recurrent nodes) breaks an op
spec, as diagnostics.

``validate_file`` never raises for a bad file: malformed XML, hostile XML and every
spec violation become diagnostics.  Only an unreadable path raises (OSError), which the
CLI turns into exit code 2.  :mod:`.onnx_models` checks an .onnx file's GRU/LSTM/RNN nodes;
:mod:`.openvino_check` adds what OpenVINO's own reader says (``--with-openvino``).

May import onnx, runtime (for ``--with-openvino`` only), reference, ir, specs and core; never
judge (a sibling) or a layer above.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping

from irtool.core.diagnostics import CODES, Diagnostic, FileReport, sorted_diagnostics
from irtool.core.numbers import NumberSyntaxError, parse_int
from irtool.ir import DEFAULT_MAX_BYTES, IRModel, IRParseError, parse_ir
from irtool.specs import SpecRegistry, registry
from irtool.validate.bodies import check_bodies
from irtool.validate.context import Context
from irtool.validate.graph import check_graph
from irtool.validate.ids import normalize_ids
from irtool.validate.layers import check_layer
from irtool.validate.weights import check_weights

_PARSE_CODES = {"syntax": "IR001", "binary": "IR001", "encoding": "IR001", "dtd": "IR002", "too-large": "IR003",
                "root": "IR004", "limit": "IR008"}


def validate_model(model: IRModel, specs: SpecRegistry | None = None) -> FileReport:
    """Check a parsed model against the specs."""
    ctx = Context(model, specs or registry())
    for code, message, line, column in model.notices:
        ctx.diagnostics.append(Diagnostic(code, CODES[code].severity, message, model.path, line, column))
    if model.is_net:
        _check_ir_version(ctx, model.ir_version)
        for tag, line, layer_id in model.strays:
            ctx.report("IR016", f"a <{tag}> outside <{tag}s>: OpenVINO ignores it", line=line, token=f"<{tag}",
                       layer_id=layer_id)
        normalize_ids(ctx, model.layers, model.edges)
    facts = [check_layer(ctx, layer) for layer in model.layers]
    if model.is_net:
        check_graph(ctx, facts)
    body_facts = check_bodies(ctx, facts)
    ctx.report_unspecified()
    if model.is_net:
        check_weights(ctx, facts + body_facts)
    return FileReport(model.path, sorted_diagnostics(ctx.diagnostics))


def _check_ir_version(ctx: Context, version: str | None) -> None:
    """OpenVINO 2026 reads IR versions 10 and 11 and refuses the rest, and a <net> without one."""
    if version is None:
        ctx.report("IR005", "the <net> has no version attribute; OpenVINO reads IR versions 10 and 11 only",
                   expected="10 or 11")
        return
    try:
        number = parse_int(version, 0, 2**63 - 1, "a version number")
    except NumberSyntaxError as error:
        problem = str(error)
    else:
        if number in (10, 11):
            return
        problem = f"IR version {number} is not one OpenVINO reads"
    ctx.report("IR005", f"net version: {problem}; OpenVINO reads IR versions 10 and 11 only",
               expected="10 or 11", found=version)


def validate_file(path: str | Path, specs: SpecRegistry | None = None,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> FileReport:
    """Parse and check one file; OSError only if the path cannot be read."""
    try:
        model = parse_ir(path, max_bytes)
    except IRParseError as error:
        return FileReport(str(path), [_parse_diagnostic(str(path), error)], unchecked=error.message)
    return validate_model(model, specs)


def _parse_diagnostic(path: str, error: IRParseError) -> Diagnostic:

    code = _PARSE_CODES[error.kind]
    return Diagnostic(code, CODES[code].severity, error.message, path=path, line=error.line, column=error.column)


@dataclass(frozen=True)
class Unreadable:
    """A path that cannot be validated, and why (one line): a folder that cannot be listed, or
    (``entry``) a *.xml or *.onnx found in a folder that is no regular file to read."""

    path: Path
    problem: str
    entry: bool = False


def collect_paths(paths: list[str | Path]) -> tuple[list[Path], list[Unreadable]]:
    """Expand directories to every *.xml and *.onnx under them (sorted); files are kept as given.  A
    directory that cannot be listed, at the top or below, is returned as unreadable, not
    skipped; so is each *.xml and *.onnx under one that is no regular file (a FIFO, a device, a
    dangling link), with why."""
    found: list[Path] = []
    unreadable: list[Unreadable] = []
    for path in map(Path, paths):
        if not path.is_dir():
            found.append(path)
            continue
        below: list[Path] = []
        for folder, dirs, files in os.walk(path, onerror=lambda error: unreadable.append(
                Unreadable(Path(error.filename or path), error.strerror or str(error)))):
            try:
                for name in files:
                    if name.endswith((".xml", ".onnx")):
                        entry = Path(folder, name)
                        problem = not_a_file(entry)
                        if problem is None:
                            below.append(entry)
                        else:
                            unreadable.append(Unreadable(entry, problem, entry=True))
            except PermissionError as error:  # listed, but no search permission: its files cannot be opened
                unreadable.append(Unreadable(Path(folder), error.strerror or str(error)))
        found.extend(sorted(below))
    return found, unreadable


def not_a_file(path: Path) -> str | None:
    """Why ``path`` is no regular file to read (without opening it: a FIFO would block), or None;
    PermissionError where it cannot be reached."""
    if path.is_file():
        return None
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return f"a symbolic link to {os.readlink(path)!r}, which does not exist" if path.is_symlink() else "no such file"
    except PermissionError:
        raise
    except OSError as error:  # a link loop, a name too long
        return error.strerror or str(error)
    if stat.S_ISREG(mode):
        return None
    kind = ("a FIFO" if stat.S_ISFIFO(mode) else "a character device" if stat.S_ISCHR(mode) else
            "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else
            "a directory" if stat.S_ISDIR(mode) else "not a regular file")
    target = f" (a symbolic link to {os.readlink(path)!r})" if path.is_symlink() else ""
    return f"{kind}{target}, not a regular file" if kind != "not a regular file" else kind + target


def with_severities(report: FileReport, severities: Mapping[str, str | None]) -> FileReport:
    """A report with some codes' severities changed (``validate --severity IR021=warning``);
    a code mapped to None is left out."""
    kept = [d if d.code not in severities else replace(d, severity=severities[d.code])
            for d in report.diagnostics if severities.get(d.code, d.severity) is not None]
    return replace(report, diagnostics=kept)


__all__ = ["FileReport", "Unreadable", "collect_paths", "not_a_file", "validate_file", "validate_model", "with_severities"]
