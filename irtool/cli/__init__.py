"""The ``irtool`` command: argparse sub-commands that parse, call the library and render.

Each sub-command lives in its own module with ``register(subparsers)``, which adds its
parser and sets ``handler``; a handler returns the exit code.  Modules import the
library lazily inside their handlers, so ``irtool validate`` never loads openvino.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

from irtool import __version__
from irtool.cli.common import UsageError, fail

COMMANDS = ("validate", "build", "run", "devices", "harness", "report", "reduce")


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line, as the contracts require for usage errors."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        fail(f"{self.prog}: {message}")
        raise SystemExit(2)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; or, given a known sub-command, a parser with that one only.

    A sub-command module may import heavy things to build its options (``build`` imports
    numpy through irtool.cases): ``irtool validate`` does not pay for them.
    """
    parser = _Parser(prog="irtool", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"irtool {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in (command,) if command in COMMANDS else COMMANDS:
        try:
            module = importlib.import_module(f"irtool.cli.{name}_cmd")
        except ModuleNotFoundError as error:
            if error.name != f"irtool.cli.{name}_cmd":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(next((w for w in words if not w.startswith("-")), None))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version and usage errors: argparse has printed them
        return exit_.code if isinstance(exit_.code, int) else 2
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.handler(args)
    except UsageError as error:
        fail(str(error))
        return 2
    except KeyboardInterrupt:
        fail("interrupted")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as error:  # anything else is irtool's own fault, and said to be
        if os.environ.get("IRTOOL_DEBUG"):
            raise
        fail(f"internal error (an irtool bug, please report it): {type(error).__name__}: {error}; "
             f"set IRTOOL_DEBUG=1 for the traceback")
        return 2
