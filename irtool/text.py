"""Text from files shown as data: one escaping rule for everything irtool prints.

Names in models, suites and results files (nodes, outputs, layers, files) and the messages
that embed them reach terminals, logs, CI annotations (``path:line:col``) and line-oriented
files.  A control character in such a name must never act: an ESC would drive the terminal
(clear the screen, set the window title), a newline would start a record of its own (a
forged ``PASS:`` line), a bidi override would show the text in another order.

:func:`shown` writes every such character as an escape, so one record is one line:
``\\n``, ``\\r``, ``\\t`` by name; others of the C0 and C1 sets, DEL, the Unicode line and
paragraph separators and the bidi embedding, override and isolate marks as ``\\xNN`` or
``\\uNNNN``.  Everything else, other scripts included, is shown as it is.
:func:`lines` joins records so, each escaped: the rendering boundary of the CLI's text.
"""
from __future__ import annotations

import re
from typing import Iterable

# C0 and DEL, C1, the line/paragraph separators, bidi marks, embeddings, overrides and isolates,
# the Arabic letter mark, and the BOM / zero-width no-break space (invisible inside a name).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: object) -> str:
    """``text`` (a name, a message, a path; str() of anything else) with every control character
    escaped (see the module docstring): safe to print as part of one line."""
    text = text if isinstance(text, str) else str(text)
    if text.isprintable():  # the usual case, fast: every character escaped here is unprintable to Python
        return text
    return _CONTROL.sub(_escape, text)


def lines(records: Iterable[str]) -> str:
    """Records joined by newlines, each escaped by :func:`shown`: exactly one line per record."""
    return "\n".join(shown(record) for record in records)
