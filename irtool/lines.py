"""How long one line of irtool's output may be, and how a long list or series is cut to fit.

A model can have 3,000,000 time steps, 100,000 recurrent nodes or outputs, or a crashing
plugin can write a megabyte without a newline: printed as it is, any of these is one line
of megabytes that floods a terminal and a CI log.  Whatever irtool prints, stores as a
message or shows in a report is cut here, saying how much was left out:

- :func:`cut` a text to :data:`LINE_LIMIT` characters, with its full length;
- :func:`joined` the first items of a list, then how many more;
- :func:`series` a long numeric series as its first and last values around a count.
"""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

LINE_LIMIT = 2000  # characters of one line: a message, a stderr line, a list
LISTED = 20  # items of a list named in one line
SERIES_ENDS = 8  # values shown at each end of a long series


def cut(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` when it has at most ``limit`` characters; else its start and its full length."""
    if len(text) <= limit:
        return text
    return f"{text[:max(limit - 40, 0)]}... ({len(text):,} characters)"


def joined(items: Iterable[str], separator: str = ", ", listed: int = LISTED, limit: int = LINE_LIMIT) -> str:
    """The first ``listed`` items joined, then "and N more" (the items counted, never joined),
    the whole cut to ``limit`` characters."""
    shown: list[str] = []
    more = 0
    for item in items:
        if len(shown) < listed:
            shown.append(item)
        else:
            more += 1
    text = separator.join(shown) + (f"{separator}and {more:,} more" if more else "")
    return cut(text, limit)


def series(values: Sequence[float], form: Callable[[float], str] = str, ends: int = SERIES_ENDS,
           separator: str = " ") -> str:
    """A series as one line: every value of a short one; the first and last ``ends`` values of a
    long one around how many were left out (``1e-07 2e-07 ... (2,999,984 more) ... 3e-05 4e-05``)."""
    if len(values) <= 2 * ends + 1:
        return separator.join(form(v) for v in values)
    head = separator.join(form(v) for v in values[:ends])
    tail = separator.join(form(v) for v in values[-ends:])
    return f"{head}{separator}... ({len(values) - 2 * ends:,} more) ...{separator}{tail}"
