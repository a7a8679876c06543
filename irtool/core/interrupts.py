"""Interrupts held off across steps that must happen together.

The harness records each result twice, a line in results.jsonl and an entry in the list its
reports are written from; an interrupt (Ctrl-C, SIGTERM: irtool.cli.common.interrupt_once)
between the two would leave the reports one result short of the file ``--resume`` reads.  Inside
:func:`held` the handler only notes the interrupt; it is raised as the block ends.  Python runs
signal handlers in the main thread: a held block belongs there too (the harness records results there).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

_state = {"depth": 0, "pending": False}


@contextmanager
def held() -> Iterator[None]:
    """Run the block whole: an interrupt that comes during it is raised (KeyboardInterrupt) when it
    ends, unless it ends with an exception of its own, which then stops the work instead."""
    _state["depth"] += 1
    try:
        yield
    except BaseException:
        _state["depth"] -= 1
        if not _state["depth"]:
            _state["pending"] = False
        raise
    _state["depth"] -= 1
    if not _state["depth"] and _state["pending"]:
        _state["pending"] = False
        raise KeyboardInterrupt


def put_off() -> bool:
    """For an interrupt handler: True where a :func:`held` block is running, the interrupt kept
    for its end; False where the handler should raise it now."""
    if _state["depth"]:
        _state["pending"] = True
    return bool(_state["depth"])
