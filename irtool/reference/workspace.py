"""Scratch memory that one thread's runs reuse, so the pages are mapped once, not per run.

A run needs a few megabytes of scratch (the weights reordered and scaled, a chunk of input
gates, the state history).  Taken fresh from numpy each run, memory blocks of that size come
from the C allocator's mmap or a trimmed heap: every 4 KB page is then zeroed by the kernel
on first touch, a page fault each.  Measured on the development machines: about 150 faults
(0.3-0.5 ms of system time) per GRU run at (batch, seq, input, hidden) = (1, 100, 128, 128),
about 1,000 (2-4 ms, 15-20% of the run) at (16, 100, 256, 256).  Views into an arena that
stays mapped between runs cost none.

Nothing returned to a caller may be a view into the arena: the next run overwrites it.
"""
from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from typing import Iterator

import numpy as np

ALIGN = 64                # bytes: a cache line, and enough for any SIMD loads
KEEP_BYTES = 64 << 20     # an arena larger than this is dropped after the run instead of kept


class Workspace:
    """A bump allocator over one byte arena; ``take`` hands out aligned, uninitialised views.

    A run that needs more than the arena holds gets fresh arrays for the rest and the arena
    grows to the run's total for the next run (up to KEEP_BYTES), so a thread that repeats
    a shape pays the faults once.
    """

    def __init__(self) -> None:
        self._arena = np.empty(0, dtype=np.uint8)
        self._offset = 0
        self._needed = 0

    def take(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An uninitialised array of ``shape`` and ``dtype``, valid until the run ends."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(shape) * dtype.itemsize
        start = self._offset
        self._offset = end = start + -(-nbytes // ALIGN) * ALIGN
        if end > self._needed:
            self._needed = end
        if end > self._arena.size:
            return np.empty(shape, dtype=dtype)
        return np.ndarray(shape, dtype, self._arena, start)

    def reset(self) -> None:
        if KEEP_BYTES >= self._needed > self._arena.size:
            raw = np.empty(self._needed + ALIGN, dtype=np.uint8)
            start = -raw.ctypes.data % ALIGN  # offsets are multiples of ALIGN from the arena's start
            self._arena = raw[start:start + self._needed]
        elif self._needed > KEEP_BYTES:
            self._arena = np.empty(0, dtype=np.uint8)
        self._offset = 0
        self._needed = 0


_local = threading.local()


@contextmanager
def scratch() -> Iterator[Workspace]:
    """This thread's workspace for one run; a private one if the thread's is already in use."""
    if getattr(_local, "busy", False):
        yield Workspace()
        return
    workspace = getattr(_local, "workspace", None)
    if workspace is None:
        workspace = _local.workspace = Workspace()
    _local.busy = True
    try:
        yield workspace
    finally:
        _local.busy = False
        workspace.reset()
