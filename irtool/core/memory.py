"""How much memory irtool may use, and the check made before allocating what a case needs.

The limit is the memory this machine has available now (MemAvailable in /proc/meminfo),
or ``IRTOOL_MEMORY_LIMIT`` (bytes, with an optional K, M, G or T suffix, e.g. ``64G``;
``none`` turns the check off).  Where the available memory cannot be read, there is no
limit.  The workers of the harness inherit the variable.
"""
from __future__ import annotations

import os
import re

from irtool.core.errors import IrtoolError
from irtool.core.files import size_text

ENV = "IRTOOL_MEMORY_LIMIT"
_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"\s*([0-9]{1,15}(?:\.[0-9]{1,15})?)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE | re.ASCII)


class MemoryLimitError(IrtoolError):
    """Work that needs more memory than the limit (or a limit that cannot be read)."""


def parse_size(text: str) -> int:
    """``64G``, ``512M``, ``1.5GiB``, ``1000000`` -> bytes; MemoryLimitError otherwise."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise MemoryLimitError(f"{ENV}={text[:40]}{'...' if len(text) > 40 else ''}: expected a size in bytes such "
                               "as 64G, 512M or 1000000 (at most 15 digits), or none")
    return int(float(match.group(1)) * _SUFFIXES[match.group(2).upper()])


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo, in bytes; None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def memory_limit() -> int | None:
    """The bytes irtool may use for one case's arrays; None for no limit."""
    text = os.environ.get(ENV, "").strip()
    if text.lower() in ("none", "off", "unlimited"):
        return None
    if text:
        return parse_size(text)
    return available_memory()


def check_memory(needed: int, what: str) -> None:
    """MemoryLimitError, with the figures and how to override, if ``needed`` bytes exceed the limit."""
    limit = memory_limit()
    if limit is not None and needed > limit:
        source = f"{ENV}={os.environ[ENV]}" if os.environ.get(ENV, "").strip() else "the memory available here"
        raise MemoryLimitError(f"{what}: about {size_text(needed)} needed, more than {size_text(limit)} ({source}); "
                               f"make it smaller, or set {ENV} (e.g. {ENV}=64G, or none) to allow it")
