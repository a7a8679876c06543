"""``irtool validate PATH... [--format text|json|sarif] [--with-openvino]``."""
from __future__ import annotations

import argparse
import gc
import stat
import sys
from pathlib import Path

from irtool.cli.common import UsageError
from irtool.cli.options import byte_count


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "validate", help="check IR XML against the op specs (and .onnx files against ONNX's)",
        description="Check IR files against the op specs, and ONNX files with onnx.checker plus irtool's checks "
                    "of their GRU, LSTM and RNN nodes against the ONNX schema. Exit 0 when no file has an error "
                    "(warnings allowed), 1 when any has, 2 on a usage error or an unreadable path.")
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="an .xml or .onnx file, or a directory: every *.xml and *.onnx under it")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text")
    parser.add_argument("--with-openvino", action="store_true",
                        help="also read each file with OpenVINO and report its verdict beside irtool's")
    parser.add_argument("--max-size", type=byte_count, default=None, metavar="BYTES",
                        help="refuse files larger than this many bytes (default 256 MiB)")
    parser.add_argument("--quiet-notes", action="store_true",
                        help="leave notes out (what irtool does not check, what OpenVINO reads differently); "
                             "they never make a file invalid")
    parser.add_argument("--severity", action="append", default=[], metavar="CODE=LEVEL",
                        help="report a code as error, warning or note, or not at all (off); e.g. "
                             "--severity IR021=warning to allow attributes the spec does not know. Repeatable")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from irtool import __version__
    from irtool.core.activity import doing
    from irtool.core.diagnostics import FileReport, render_json, render_sarif, render_text
    from irtool.ir import DEFAULT_MAX_BYTES
    from irtool.validate import collect_paths, validate_file, with_severities

    severities = _severities(args.severity, args.quiet_notes)
    paths, unlisted = collect_paths(args.paths)
    _refuse_other_formats(paths)
    # a *.xml or *.onnx found in a folder that is no regular file is listed as not checked, with why
    entries = [FileReport(str(u.path), unchecked=u.problem) for u in unlisted if u.entry]
    unreadable = [(u.path, u.problem) for u in unlisted if not u.entry] + [(path, problem) for path in paths
                                                                          if (problem := _problem(path))]
    if unreadable:
        path, problem = unreadable[0]
        raise UsageError(f"cannot read {path}: {problem}" + (
            f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""))
    if not paths and not entries:
        raise UsageError(f"no *.xml or *.onnx file under {', '.join(args.paths)}")
    reports = []
    for path in paths:
        onnx_file = path.suffix.lower() == ".onnx"
        if onnx_file:  # imported here: onnx stays out of validating .xml files
            from irtool.validate.onnx_models import check_onnx_with_openvino as check_with_openvino
            from irtool.validate.onnx_models import validate_onnx_file as validate
        else:
            from irtool.validate.openvino_check import check_with_openvino
            validate = validate_file
        with doing(path, "checking it"):  # onnx.checker and OpenVINO's readers are C++: a crash names the file
            try:
                report = _without_gc(validate, path,
                                     max_bytes=DEFAULT_MAX_BYTES if args.max_size is None else args.max_size)
            except OSError as error:
                raise UsageError(f"cannot read {path}: {error.strerror or error}") from None
            if args.with_openvino:
                report = check_with_openvino(report, path)
        reports.append(with_severities(report, severities) if severities else report)
    reports = sorted(reports + entries, key=lambda r: r.path) if entries else reports
    if args.format == "json":
        sys.stdout.write(render_json(reports))
    elif args.format == "sarif":
        sys.stdout.write(render_sarif(reports, __version__))
    else:
        sys.stdout.write(render_text(reports))
    return exit_code(reports)


def exit_code(reports) -> int:
    """0 when every file was checked and none has an error (warnings allowed), else 1: a file that
    could not be read is never a clean check, whatever severities its diagnostics were given."""
    return 0 if all(r.valid for r in reports) else 1


def _refuse_other_formats(paths: list[Path]) -> None:
    """A model of a format validate does not check (.tflite, .pb, .pdmodel) is named as such, not read
    as IR XML and reported as binary data."""
    from irtool.core.formats import model_format

    for path in paths:
        found = model_format(path)
        if found is not None and found.frontend not in ("ir", "onnx"):
            raise UsageError(f"{path}: a {found.label} model; validate checks IR .xml and .onnx files "
                             f"(irtool run {path} reads it with OpenVINO)")


def _severities(options: list[str], quiet_notes: bool) -> dict[str, str | None]:
    """--severity CODE=LEVEL options (and --quiet-notes) as code -> severity, None for off."""
    from irtool.core.diagnostics import CODES, NOTE, SEVERITIES

    severities: dict[str, str | None] = {}
    for option in options:
        code, _, level = option.partition("=")
        code, level = code.strip().upper(), level.strip().lower()
        if code not in CODES:
            raise UsageError(f"--severity {option}: no code {code!r} (codes: docs/validate.md)")
        if level not in (*SEVERITIES, "off"):
            raise UsageError(f"--severity {option}: level must be error, warning, note or off")
        severities[code] = None if level == "off" else level
    if quiet_notes:
        severities.update({c.code: None for c in CODES.values()
                           if severities.get(c.code, c.severity) == NOTE})
    return severities




def _problem(path: Path) -> str | None:
    """Why a path cannot be validated, if it cannot: missing, or a FIFO, device or the like."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "no such file"
    except OSError as error:
        return error.strerror or str(error)
    return None if stat.S_ISREG(mode) else "not a regular file"


def _without_gc(function, *args, **kwargs):
    """Call with the cyclic garbage collector paused.

    A parsed net is hundreds of thousands of objects and holds no reference cycles; the
    collector would only walk them again and again as the checks allocate (a third of the
    time on a 10,000-layer net).  Reference counting still frees everything.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return function(*args, **kwargs)
    finally:
        if enabled:
            gc.enable()
