"""The ``irtool`` program (its console script and ``python -m irtool``): Ctrl-C at any moment
is a clean exit 130 with one line, never a traceback.

From irtool's first line (``irtool/__init__.py``, which Python imports before this module) an
interrupt is the one line and 130 already; :func:`main` takes over first thing, and only ``sys``
and ``signal`` are imported before its interrupt is caught: the command line
(:mod:`irtool.cli.program`) is imported inside the ``try``, so an interrupt while its modules load
(numpy, openvino, argparse) is caught as one while a command runs, even where the module it stops
raises an error of its own in its place.  ``run``, ``reduce`` and
``validate`` run in a forked child this process waits for (:mod:`irtool.cli.supervisor`): a
crash of the child is one line, not a silent death.  Once the interrupt is
caught, or once the command has returned, a further Ctrl-C is ignored: the process is only
exiting.  (Before the interpreter has started irtool at all, while Python imports ``site``,
an interrupt is Python's own to report; so is one inside the few bytecodes that find and
start ``irtool/__init__.py``.)
"""
from __future__ import annotations

import signal
import sys

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
_LOST = [False]  # an interrupt whose KeyboardInterrupt Python dropped (see _unraisable)
_RAISED = [False]  # an interrupt this module's handler raised (see _interrupt)


def main() -> int:
    """Run the command line of this process (``sys.argv``); its exit code."""
    try:
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:  # irtool/__init__.py's until here
            signal.signal(signal.SIGINT, _interrupt)
        sys.unraisablehook = _unraisable
        _tolerant_streams()
        from irtool.cli.supervisor import supervise

        code = supervise(sys.argv[1:])  # run, reduce, validate: this process waits, a child runs them
        if code is None:
            from irtool.cli.program import main as command_line

            code = command_line()
    except KeyboardInterrupt:
        return interrupted()
    except Exception:
        if _RAISED[0]:  # an import the interrupt broke, which said so otherwise (numpy: an ImportError)
            return interrupted()
        raise
    if _LOST[0] and code != EXIT_INTERRUPTED:  # the command went on after an interrupt: it still was one
        return interrupted()
    _ignore_interrupts()
    return code


def _interrupt(signum: int, frame: object) -> None:
    """Python's own answer to Ctrl-C (KeyboardInterrupt), remembered: an extension module whose import
    it stops may raise an error of its own in its place (numpy's ImportError "PyCapsule_Import
    could not import module 'datetime'"), which is then the interrupt too."""
    _RAISED[0] = True
    raise KeyboardInterrupt


def _unraisable(unraisable: "sys.UnraisableHookArgs") -> None:
    """Python's hook for an exception it cannot raise, but for a KeyboardInterrupt: one that a
    Ctrl-C raised while Python ran a callback of its own (a module lock's, deep in an import) is
    dropped, and printed as "Exception ignored in" with a traceback; here it is remembered
    instead, and the command, which went on, ends as interrupted."""
    if unraisable.exc_type is KeyboardInterrupt:
        _LOST[0] = True
    else:
        sys.__unraisablehook__(unraisable)


def interrupted() -> int:
    """Say so in one line (a second Ctrl-C while saying it is ignored); exit 130."""
    _ignore_interrupts()
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    try:
        print("irtool: error: interrupted", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    return EXIT_INTERRUPTED


def _tolerant_streams() -> None:
    """stdout and stderr write what their encoding cannot hold as backslash escapes instead of
    raising: under LC_ALL=C without UTF-8 mode, or PYTHONIOENCODING=ascii, a node named
    ``grü_节点`` is printed as ``gr\\xfc_\\u8282\\u70b9`` and the verdict stays the verdict.  A UTF-8
    stream that passes a file name's stray bytes through (surrogateescape) is left as it is."""
    import codecs

    for stream in (sys.stdout, sys.stderr):
        encoding, errors = getattr(stream, "encoding", None), getattr(stream, "errors", None)
        utf8 = encoding is not None and codecs.lookup(encoding).name == "utf-8"
        if errors not in ("backslashreplace", "surrogateescape" if utf8 else None):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (AttributeError, ValueError, OSError):
                pass


def _ignore_interrupts() -> None:
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: nothing more to guard
        pass
