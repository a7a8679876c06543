"""The ``irtool`` program: its parser, and the one place that turns what a command did into
an exit code.

Each sub-command lives in its own module with ``register(subparsers)``, which adds its
parser and sets ``handler``; a handler returns the exit code.  Modules import the
library lazily inside their handlers, so ``irtool validate`` never loads openvino.
:func:`main` is the one place that turns an :class:`IrtoolError` into its line and exit
code, an unexpected exception into "internal error", and a closed pipe on stdout
(``irtool report diff a b | head -1``) into silence that keeps the handler's exit code.  Ctrl-C
is left to :mod:`irtool.cli.console`, the program's entry, which turns it into "interrupted" and
130 at any moment, while this module loads too.
"""
from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
from typing import Any, Sequence

from irtool.cli.common import fail
from irtool.core.errors import IrtoolBug, IrtoolError, did_you_mean

COMMANDS = ("validate", "build", "run", "devices", "harness", "report", "reduce", "worker", "scheduler")
DESCRIPTION = """\
Check, build, run and regression-test OpenVINO IR of the recurrent ops (GRUSequence,
LSTMSequence, RNNSequence and their cells): validate IR files against the op specs, build
single-op models, run any model on a device and diff it against irtool's reference, and
run suites of cases across devices and precisions.

exit codes: 0 passed, 1 a mismatch, regression or invalid file, 2 could not run (usage
error, unreadable file, a device name OpenVINO does not know), 3 ran but nothing was judged
(every job skipped, a device absent here).
"""
EPILOG = "'irtool COMMAND --help' describes a command. Documentation: README.md and docs/ of the repository."


class _Version(argparse.Action):
    """--version: irtool's version and where it runs from, and openvino's (imported only now; a
    missing or broken openvino is said, not raised)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        import platform

        import irtool
        from irtool.runtime.core import installed_openvino

        openvino, problem = installed_openvino()
        where = os.path.dirname(os.path.abspath(irtool.__file__))
        print(f"irtool {irtool.version()} from {where} (python {platform.python_version()})")
        print(f"openvino {openvino}" if openvino else
              f"openvino: cannot be imported ({problem}); validate works without it, build, run, harness and "
              f"reduce need it")
        parser.exit(0)


class _Parser(argparse.ArgumentParser):
    """argparse that exits 2 with one line, as the contracts require for usage errors."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        command = self.prog.removeprefix("irtool").strip()
        fail(f"{command}: {message}" if command else message)  # cut there: argparse quotes what it refused
        raise SystemExit(2)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's check of a closed list of values, with a suggestion for a misspelt one."""
        if action.choices is not None and value not in action.choices and isinstance(value, str):
            choices = [str(choice) for choice in action.choices]
            raise argparse.ArgumentError(action, f"invalid choice: {value!r}{did_you_mean(value, choices)} "
                                                 f"(choose from {', '.join(choices)})")
        super()._check_value(action, value)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; or, given a known sub-command, a parser with that one only.

    A sub-command module may import heavy things to build its options (``build`` imports
    numpy through irtool.specs.cases): ``irtool validate`` does not pay for them.
    """
    parser = _Parser(prog="irtool", description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version, help="show irtool's and openvino's versions and exit")
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
    """Run one command line (default ``sys.argv``); its exit code.  Ctrl-C (KeyboardInterrupt)
    propagates: the console entry says it and exits 130."""
    words = list(sys.argv[1:] if argv is None else argv)
    command = next((w for w in words if not w.startswith("-")), None)
    if command == "harness" and any(word.startswith(("--cluster", "--scheduler-file")) for word in words):
        from irtool.cli.cluster_early import start_from_words

        start_from_words(words)
    parser = build_parser(command)
    if command is not None and command not in COMMANDS:
        parser.print_usage(sys.stderr)
        fail(f"no command {command!r}{did_you_mean(command, COMMANDS)}; commands: {', '.join(COMMANDS)}")
        return 2
    try:
        args, extra = parser.parse_known_args(words)
        if extra:  # said by the sub-command's parser, with its usage
            inner = _innermost(parser, args)
            options = [o for a in inner._actions for o in a.option_strings if o.startswith("--")]
            hint = did_you_mean(extra[0], options) if extra[0].startswith("--") else ""
            inner.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    except SystemExit as exit_:  # --help, --version and usage errors: argparse has printed them
        return exit_.code if isinstance(exit_.code, int) else 2
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    args.argv = tuple(words)  # the command line as given (run --openvino passes it on word for word)
    stdout = sys.stdout
    sys.stdout = _PipeSafe(stdout)
    try:
        return args.handler(args)
    except IrtoolBug as error:  # an IrtoolError too: said first, as irtool's own fault
        fail(f"{error.message} (please report it)")
        return 2
    except IrtoolError as error:
        fail(error.message)
        return error.exit_code
    except MemoryError:  # past what the estimates foresaw (RLIMIT_AS, another process taking memory)
        fail(_out_of_memory())
        return 2
    except Exception as error:  # anything else is irtool's own fault, and said to be
        if os.environ.get("IRTOOL_DEBUG"):
            raise
        fail(f"internal error (an irtool bug, please report it): {type(error).__name__}: {error}; "
             f"set IRTOOL_DEBUG=1 for the traceback")
        return 2
    finally:
        sys.stdout.flush()
        sys.stdout = stdout


def _out_of_memory() -> str:
    """The one line of an allocation that failed: where (the step noted for the supervisor), and
    the last estimate irtool checked against what it may use here."""
    from irtool.core.activity import failed_at
    from irtool.core.memory import out_of_memory

    note = failed_at()
    where = " ".join(filter(None, [note.what, f"({note.subject})" if note.subject else None])) or None
    return out_of_memory(where)


def _innermost(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub-)sub-command the arguments reached: its usage is the one to show."""
    while True:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, actions[0].dest, None) if actions else None
        if chosen not in (actions[0].choices if actions else {}):
            return parser
        parser = actions[0].choices[chosen]


class _PipeSafe:
    """stdout that, once its reader has gone (``| head -1``), drops what is written instead of
    raising: the handler goes on and its exit code survives."""

    def __init__(self, stream: Any):
        self._stream = stream
        self.broken = False

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._break()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._break()

    def _break(self) -> None:
        """Point the file descriptor at /dev/null, so that the flush at exit does not fail again."""
        self.broken = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, io.UnsupportedOperation):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
