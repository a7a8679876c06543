"""Text irtool prints: one escaping rule for names shown as data, and how long a line may be.

Names in models, suites and results files (nodes, outputs, layers, files) and the messages
that embed them reach terminals, logs, CI annotations (``path:line:col``) and line-oriented
files.  A control character in such a name must never act: an ESC would drive the terminal
(clear the screen, set the window title), a newline would start a record of its own (a
forged ``PASS:`` line), a bidi override would show the text in another order.

:func:`shown` writes every such character as an escape, so one record is one line:
``\\n``, ``\\r``, ``\\t`` by name; others of the C0 and C1 sets, DEL, the Unicode line and
paragraph separators and the bidi embedding, override and isolate marks as ``\\xNN`` or
``\\uNNNN``.  Everything else, other scripts included, is shown as it is.

A file name is bytes, and a byte that is not UTF-8 reaches Python as a lone surrogate
(U+DC80-U+DCFF, os.fsdecode's "surrogateescape"), which no terminal, UTF-8 file or strict
JSON reader takes.  :func:`undecodable_escaped` writes each such byte as ``\\xNN`` (the
byte, ``a\\xffb.xml`` for the name ``a<0xff>b.xml``; another lone surrogate as
``\\uNNNN``): the one documented spelling of such names in text and in JSON alike.
:func:`escaped_lines` joins records so, each escaped: the rendering boundary of the CLI's text.

A model can have 3,000,000 time steps, 100,000 recurrent nodes or outputs, or a crashing
plugin can write a megabyte without a newline: printed as it is, any of these is one line
of megabytes that floods a terminal and a CI log.  Whatever irtool prints, stores as a
message or shows in a report is cut here, saying how much was left out:

- :func:`cut` a text to :data:`LINE_LIMIT` characters, with its full length;
- :func:`joined` the first items of a list, then how many more;
- :func:`series` a long numeric series as its first and last values around a count.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Iterable, Sequence

# C0 and DEL, C1, the line/paragraph separators, bidi marks, embeddings, overrides and isolates,
# the Arabic letter mark, and the BOM / zero-width no-break space (invisible inside a name).
# Lone surrogates too: a file name's bytes that are not UTF-8 (see undecodable_escaped).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_BYTES = range(0xDC80, 0xDD00)  # surrogateescape's: the byte 0xNN as U+DCNN
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if code in _ESCAPED_BYTES:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def undecodable_escaped(text: str) -> str:
    """``text`` with each lone surrogate written as an escape: a byte of a file name that is not
    UTF-8 as ``\\xNN``, any other as ``\\uNNNN`` (see the module docstring).  Other characters
    stay as they are."""
    return _SURROGATE.sub(_escape, text) if not text.isascii() else text


def shown(text: object) -> str:
    """``text`` (a name, a message, a path; str() of anything else) with every control character
    escaped (see the module docstring): safe to print as part of one line."""
    text = text if isinstance(text, str) else str(text)
    if text.isprintable():  # the usual case, fast: every character escaped here is unprintable to Python
        return text
    return _CONTROL.sub(_escape, text)


def escaped_lines(records: Iterable[str]) -> str:
    """Records joined by newlines, each escaped by :func:`shown`: exactly one line per record."""
    return "\n".join(shown(record) for record in records)

LINE_LIMIT = 2000  # characters of one line: a message, a stderr line, a list
LISTED = 20  # items of a list named in one line
SERIES_ENDS = 8  # values shown at each end of a long series


def counted(count: int, noun: str) -> str:
    """``1 error``, ``2 errors``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def number(value: Any, digits: int = 3) -> str:
    """A statistic as text: 3 significant digits, "-" for none."""
    if value is None:
        return "-"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{value:.{digits}g}" if isinstance(value, float) else str(value)


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
