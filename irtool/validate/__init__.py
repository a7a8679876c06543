"""The validator: every place where an IR file breaks an op spec, as diagnostics.

``validate_file`` never raises for a bad file: malformed XML, hostile XML and every
spec violation become diagnostics.  Only an unreadable path raises (OSError), which the
CLI turns into exit code 2.
"""
from __future__ import annotations

from pathlib import Path

from irtool.diagnostics import CODES, Diagnostic, FileReport, sorted_diagnostics
from irtool.ir import DEFAULT_MAX_BYTES, IRModel, IRParseError, parse_ir
from irtool.specs import SpecRegistry, registry
from irtool.validate.context import Context
from irtool.validate.graph import check_graph
from irtool.validate.layers import check_layer
from irtool.validate.weights import check_weights

_PARSE_CODES = {"syntax": "IR001", "binary": "IR001", "dtd": "IR002", "too-large": "IR003", "root": "IR004"}


def validate_model(model: IRModel, specs: SpecRegistry | None = None) -> FileReport:
    """Check a parsed model against the specs."""
    ctx = Context(model, specs or registry())
    if model.is_net and model.ir_version not in ("10", "11"):
        ctx.report("IR005", f"net version is {model.ir_version!r}; irtool reads IR versions 10 and 11",
                   expected="10 or 11", found=model.ir_version)
    facts = [check_layer(ctx, layer) for layer in model.layers]
    if model.is_net:
        check_graph(ctx, facts)
        check_weights(ctx, facts)
    return FileReport(model.path, sorted_diagnostics(ctx.diagnostics))


def validate_file(path: str | Path, specs: SpecRegistry | None = None,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> FileReport:
    """Parse and check one file; OSError only if the path cannot be read."""
    try:
        model = parse_ir(path, max_bytes)
    except IRParseError as error:
        return FileReport(str(path), [_parse_diagnostic(str(path), error)])
    return validate_model(model, specs)


def _parse_diagnostic(path: str, error: IRParseError) -> Diagnostic:

    code = _PARSE_CODES[error.kind]
    return Diagnostic(code, CODES[code].severity, error.message, path=path, line=error.line, column=error.column)


def collect_paths(paths: list[str | Path]) -> list[Path]:
    """Expand directories to every *.xml under them (sorted); files are kept as given."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.xml") if p.is_file()))
        else:
            found.append(path)
    return found


__all__ = ["FileReport", "collect_paths", "validate_file", "validate_model"]
