"""Globs where only ``*`` (any text, empty too) and ``?`` (any one character) are wildcards,
matched without backtracking.

Known-failure patterns, ``IRTOOL_FAULT`` and ``IRTOOL_WRITE_FAULT`` match case ids, devices and
paths with such globs; case ids hold ``[`` and ``]`` literally, so there are no character
classes.  ``fnmatch`` (and any glob turned into a regex) backtracks: ``*?*?*?*?*?*?*?*?*?*?*?*?*?Z``
against one case id of 60 characters takes minutes.  Here the pattern is cut at its stars: the
part before the first star must start the text, the part after the last must end it, and each
part between is found at its leftmost place after the previous one (leftmost is always as
good as any later place, so no choice is ever revisited).  The time is at most the text's
length times the pattern's, whatever they hold.
"""
from __future__ import annotations


def glob_matches(pattern: str, text: str) -> bool:
    """Whether ``text`` matches ``pattern`` whole (see the module docstring)."""
    parts = pattern.split("*")
    if len(parts) == 1:
        return len(pattern) == len(text) and _fits(pattern, text, 0)
    first, *middle, last = parts
    end = len(text) - len(last)
    if end < len(first) or not _fits(first, text, 0) or not _fits(last, text, end):
        return False
    at = len(first)
    for part in middle:
        found = _find(part, text, at, end)
        if found < 0:
            return False
        at = found + len(part)
    return True


def _fits(part: str, text: str, at: int) -> bool:
    """Whether ``part`` (no stars; ``?`` any character) matches ``text`` at ``at`` (it fits there)."""
    if "?" not in part:
        return text.startswith(part, at)
    return all(want in ("?", have) for want, have in zip(part, text[at:at + len(part)]))


def _find(part: str, text: str, start: int, end: int) -> int:
    """The leftmost place in ``text[start:end]`` where ``part`` matches, or -1."""
    if "?" not in part:
        return text.find(part, start, end)
    # the longest run without ? anchors the search: only the places where it is found are tried
    anchor = max(part.split("?"), key=len)
    offset = part.index(anchor) if anchor else 0
    place = start
    while place + len(part) <= end:
        if anchor:
            hit = text.find(anchor, place + offset, end - (len(part) - offset - len(anchor)))
            if hit < 0:
                return -1
            place = hit - offset
        if _fits(part, text, place):
            return place
        place += 1
    return -1
