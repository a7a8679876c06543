"""irtool: validate, build, run and regression-test OpenVINO IR for the RNN op family.

This is the first of irtool's code any process runs, the program (its console script,
``python -m irtool``) included: Python imports this package before ``irtool.cli.console``,
and an interrupt while the rest of that import chain loads would reach the user as
Python's traceback.  So when this process is the irtool program, and only then (a library
user's or pytest's Ctrl-C stays theirs), an interrupt from here until the console entry takes
over (:func:`irtool.cli.console.main` installs its own handler first thing) is the program's
one line and exit 130; nothing has been started or written yet that would need cleaning up.
"""
from __future__ import annotations

import functools as _functools
import os as _os
import signal as _signal
import sys as _sys

UNINSTALLED = "0+unknown"  # the version of an irtool run from a source tree that was never installed
PROGRAM = "irtool"


def _is_the_program() -> bool:
    """Whether this process runs the irtool program: its console script (``__main__`` is a file
    named irtool, irtool.exe or irtool-script.py) or ``python -m irtool``."""
    main_file = getattr(_sys.modules.get("__main__"), "__file__", None) or ""
    script = _os.path.basename(main_file).removesuffix(".exe").removesuffix("-script.py")
    argv = list(getattr(_sys, "orig_argv", ()))
    by_module = any(word == "-m" and argv[i + 1:i + 2] == [PROGRAM] for i, word in enumerate(argv))
    return script == PROGRAM or by_module


def _interrupted_while_starting(signum: int, frame: object) -> None:
    """The console entry's answer to an interrupt, given before it is imported: one line, 130."""
    try:
        _os.write(2, b"irtool: error: interrupted\n")
    finally:
        _os._exit(130)


if _is_the_program() and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _interrupted_while_starting)


@_functools.cache
def version() -> str:
    """irtool's version, as its installed metadata says (pyproject.toml is the one source); read
    once per process (a cluster run names it in each task's resource)."""
    from importlib import metadata

    try:
        return metadata.version("irtool")
    except metadata.PackageNotFoundError:
        return UNINSTALLED


def __getattr__(name: str) -> str:
    # __version__ is looked up when asked for: reading the metadata costs what ``irtool validate`` saves
    if name == "__version__":
        return version()
    raise AttributeError(f"module 'irtool' has no attribute {name!r}")
