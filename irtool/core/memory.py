"""How much memory irtool may use, and the check made before allocating what a case needs.

The limit is the least of what the process may really use now:

- the machine's available memory (MemAvailable in /proc/meminfo);
- its cgroup's limit less what the cgroup uses (cgroup v2 ``memory.max`` and ``memory.current``,
  v1 ``memory.limit_in_bytes`` and ``memory.usage_in_bytes``; the file cache it could drop,
  ``inactive_file``, counted as free), for the process's cgroup and each above it: a container
  or a CI job of 2 GiB is killed by the kernel (SIGKILL, no word) past its limit, whatever
  MemAvailable says of the machine;
- the address space ``RLIMIT_AS`` (``ulimit -v``) leaves it: past it an allocation fails
  (MemoryError).

``IRTOOL_MEMORY_LIMIT`` (bytes, with an optional K, M, G or T suffix, e.g. ``64G``; ``none``
turns the check off) replaces them.  Where none can be read, there is no limit.  The workers of
the harness inherit the variable.  The last estimate checked is kept, so that an allocation
that fails all the same (MemoryError) is said with it (:func:`out_of_memory`).
"""
from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from irtool.core.errors import IrtoolError
from irtool.core.files import size_text

ENV = "IRTOOL_MEMORY_LIMIT"
_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"\s*([0-9]{1,15}(?:\.[0-9]{1,15})?)\s*([KMGT]?)(?:I?B)?\s*", re.IGNORECASE | re.ASCII)
_UNLIMITED = 1 << 62  # cgroup v1 writes "no limit" as 9223372036854771712
_last_estimate: list[tuple[int, str]] = []  # (bytes, what) of the last check_memory


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


def cgroup_available(proc: Path = Path("/proc/self")) -> int | None:
    """What the process's memory cgroups (v2 and v1, its own and each above it) still allow, the
    least of them; None where no limit is set or none can be read.  ``proc`` is /proc/self (a
    test gives a tree of its own, whose mountinfo names the cgroup mounts)."""
    found = []
    for folder, version in _cgroup_folders(str(proc)):
        limit, used = (_read_number(folder / "memory.max"), _read_number(folder / "memory.current")) if version == 2 \
            else (_read_number(folder / "memory.limit_in_bytes"), _read_number(folder / "memory.usage_in_bytes"))
        if limit is None or used is None or limit >= _UNLIMITED:
            continue
        cache = _stat_value(folder / "memory.stat", "inactive_file" if version == 2 else "total_inactive_file")
        found.append(max(limit - max(used - cache, 0), 0))
    return min(found) if found else None


@lru_cache(maxsize=4)
def _cgroup_folders(proc: str) -> tuple[tuple[Path, int], ...]:
    """The folders of the process's memory cgroup and of each above it, with their version: found
    from /proc/self/cgroup (the cgroup's path in each hierarchy) and /proc/self/mountinfo (where
    each hierarchy is mounted, and from which of its folders: a container sees its own as /)."""
    try:
        cgroups = Path(proc, "cgroup").read_text(encoding="utf-8", errors="replace").splitlines()
        mounts = Path(proc, "mountinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ()
    paths = {}  # version -> the cgroup's path in that hierarchy
    for line in cgroups:
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if number == "0" and not controllers:
            paths[2] = path
        elif "memory" in controllers.split(","):
            paths[1] = path
    folders = []
    for line in mounts:
        fields, _, tail = line.partition(" - ")
        parts, kinds = fields.split(), tail.split()
        if len(parts) < 5 or len(kinds) < 3:
            continue
        version = 2 if kinds[0] == "cgroup2" else 1 if kinds[0] == "cgroup" and "memory" in kinds[2].split(",") else 0
        if version not in paths:
            continue
        root, mountpoint = _unescape(parts[3]), Path(_unescape(parts[4]))
        inside = os.path.relpath(paths[version], root) if paths[version].startswith(root) else "."
        folder = mountpoint / inside if not inside.startswith("..") else mountpoint
        while True:  # the cgroup, then each folder above it up to the mount
            folders.append((folder, version))
            if folder == mountpoint or mountpoint not in folder.parents:
                break
            folder = folder.parent
    return tuple(folders)


def _unescape(text: str) -> str:
    """mountinfo's octal escapes (``\\040`` for a space) undone."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), text)


def _read_number(path: Path) -> int | None:
    """A cgroup file holding one number (``max`` for no limit: None, as an unreadable file)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and len(text) <= 20 else None


def _stat_value(path: Path, key: str) -> int:
    try:
        for line in path.read_text(encoding="ascii").splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except (OSError, UnicodeDecodeError):
        pass
    return 0


def address_space_available() -> int | None:
    """What RLIMIT_AS (``ulimit -v``) leaves the process: the limit less its address space now
    (VmSize); None without such a limit."""
    try:
        import resource
    except ImportError:  # not a Unix
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            used = next((int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:")), 0)
    except (OSError, ValueError, IndexError):
        used = 0
    return max(soft - used, 0)


def memory_budget() -> tuple[int | None, str]:
    """The bytes irtool may use for one case's arrays (None for no limit), and where that comes from."""
    text = os.environ.get(ENV, "").strip()
    if text.lower() in ("none", "off", "unlimited"):
        return None, f"{ENV}={text}"
    if text:
        return parse_size(text), f"{ENV}={text}"
    found = [(value, source) for value, source in (
        (available_memory(), "the memory available here"),
        (cgroup_available(), "what this process's cgroup allows (memory.max) less what it uses"),
        (address_space_available(), "the address space RLIMIT_AS (ulimit -v) leaves")) if value is not None]
    return min(found) if found else (None, "no limit found")


def memory_limit() -> int | None:
    """The bytes irtool may use for one case's arrays; None for no limit."""
    return memory_budget()[0]


def limit_text() -> str:
    """What irtool may use here, in words: ``memory irtool may use here: 1.9 GiB (...)``."""
    try:
        limit, source = memory_budget()
    except MemoryLimitError as error:
        return error.message
    return f"memory irtool may use here: {size_text(limit)} ({source})" if limit is not None else \
        f"irtool sees no memory limit here ({source})"


def check_memory(needed: int, what: str) -> None:
    """MemoryLimitError, with the figures and how to override, if ``needed`` bytes exceed the limit."""
    _last_estimate[:] = [(needed, what)]
    limit, source = memory_budget()
    if limit is not None and needed > limit:
        raise MemoryLimitError(f"{what}: about {size_text(needed)} needed, more than {size_text(limit)} ({source}); "
                               f"make it smaller, or set {ENV} (e.g. {ENV}=64G, or none) to allow it")


def limits_in_force(proc: Path = Path("/proc/self")) -> str:
    """The memory limits this process runs under, in words: its memory cgroups' (each set one, the
    least first) and RLIMIT_AS, e.g. ``the memory cgroup's limit of 1.0 GiB (memory.max of
    /sys/fs/cgroup/job)``; where none is set, the machine's memory."""
    found = []
    for folder, version in _cgroup_folders(str(proc)):
        name = "memory.max" if version == 2 else "memory.limit_in_bytes"
        limit = _read_number(folder / name)
        if limit is not None and limit < _UNLIMITED:
            found.append((limit, f"the memory cgroup's limit of {size_text(limit)} ({name} of {folder})"))
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and soft >= 0:
            found.append((soft, f"the address space limit RLIMIT_AS (ulimit -v) of {size_text(soft)}"))
    except ImportError:  # not a Unix
        pass
    if not found:
        total = _total_memory()
        return "no memory limit but the machine's" + (f" ({size_text(total)})" if total else "")
    return " and ".join(text for _, text in sorted(found))


def _total_memory() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            return next((int(line.split()[1]) * 1024 for line in meminfo if line.startswith("MemTotal:")), None)
    except (OSError, ValueError, IndexError):
        return None


def oom_kills(proc: Path = Path("/proc/self")) -> int | None:
    """How many processes the kernel's out-of-memory killer has killed in this process's memory
    cgroups (``oom_kill`` of cgroup v2's memory.events, v1's memory.oom_control), summed; None
    where no counter can be read.  A child's death counted here (the count grew while it ran) was the
    OOM killer's."""
    counts = [_stat_value(folder / ("memory.events" if version == 2 else "memory.oom_control"), "oom_kill")
              for folder, version in _cgroup_folders(str(proc))
              if (folder / ("memory.events" if version == 2 else "memory.oom_control")).is_file()]
    return sum(counts) if counts else None


def out_of_memory(where: str | None = None) -> str:
    """The line for an allocation that failed (MemoryError) all the same: where, the last estimate
    checked, and what irtool may use here."""
    said = "out of memory: an allocation failed" + (f" while {where}" if where else "")
    if _last_estimate:
        needed, what = _last_estimate[0]
        said += f"; irtool estimated about {size_text(needed)} for {what}"
    return f"{said}; {limit_text()}; make the case smaller, or set {ENV} lower so that irtool refuses it up front"
