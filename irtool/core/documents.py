"""The one reader of each text format a user can hand irtool: JSON and TOML, bounded.

Suites and known-failure files (TOML), results files, case.json files, markers and lock
files (JSON) are read here and nowhere else.  Python's own readers fail on hostile text
in ways no caller expects: ``json.loads`` and ``tomllib.loads`` recurse once per level of
nesting and raise RecursionError past about 1,000 levels (and data a few hundred levels
deep still breaks whatever walks it later), and ``int()`` of more than 4,300 digits raises
ValueError.  So each reader here checks, before anything else sees the data:

- nesting at most :data:`MAX_DEPTH` levels of arrays and objects (tables);
- every integer fits in 64 bits (:data:`INT_LOW` .. :data:`INT_HIGH`), as TOML requires
  and as every integer irtool writes does; its text is checked before ``int()`` sees it;
- (JSON) no ``NaN`` or ``Infinity`` literal: irtool writes non-finite numbers as strings,
  and strict JSON writers refuse to write them back.

A refusal is the format's own decode error (``json.JSONDecodeError``,
``tomllib.TOMLDecodeError``), so a caller's one ``except`` covers bad syntax and bounds
alike, and its message says what was found and the limit.
"""
from __future__ import annotations

import json
import re
import tomllib
from typing import Any

MAX_DEPTH = 64  # arrays and objects inside each other; irtool's own files nest 6 deep at most
INT_LOW, INT_HIGH = -2**63, 2**64 - 1
_INT_DIGITS = 20  # 2**64 - 1 has 20 digits: longer text is out of range whatever it says

_LONG_DIGITS = re.compile(r"[0-9]{19,}")
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")


def load_json(text: str | bytes) -> Any:
    """``json.loads`` within the bounds above; json.JSONDecodeError for anything else."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")  # UnicodeDecodeError, as json.loads gives for bytes
    _check_json_depth(text)

    def refuse(literal: str) -> Any:
        raise json.JSONDecodeError(f"{literal} is not JSON (irtool writes non-finite numbers as strings)", text, 0)

    def integer(digits: str) -> int:
        if len(digits) < 19:  # fits whatever its digits: the common case, decided without a range check
            return int(digits)
        value = int(digits) if len(digits.lstrip("-")) <= _INT_DIGITS else None
        if value is None or not INT_LOW <= value <= INT_HIGH:
            raise json.JSONDecodeError(f"the integer {_number_text(digits)} does not fit in 64 bits", text, 0)
        return value

    # An integer of fewer than 19 digits fits in 64 bits: text without a longer run of digits is
    # read by json's own C code, with no call per integer.
    try:
        return json.loads(text, parse_constant=refuse, parse_int=integer if _LONG_DIGITS.search(text) else None)
    except RecursionError:  # not reached after the depth check; kept as the last word on nesting
        raise json.JSONDecodeError(f"arrays and objects nested more than {MAX_DEPTH} deep", text, 0) from None


def _check_json_depth(text: str) -> None:
    """JSONDecodeError if arrays and objects nest more than MAX_DEPTH deep.

    Each pass drops the innermost ``[]``/``{}`` pairs of the text's brackets (strings taken
    out first): MAX_DEPTH passes of C-speed regex, and none for text with few brackets."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    skeleton = _NOT_BRACKET.sub("", _STRING.sub("", text))
    for _ in range(MAX_DEPTH):
        shorter = _INNERMOST.sub("", skeleton)
        if not shorter or shorter == skeleton:  # all gone, or brackets that do not pair (json.loads says where)
            return
        skeleton = shorter
    raise json.JSONDecodeError(f"arrays and objects nested more than {MAX_DEPTH} deep", text, 0)


def load_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads`` within the bounds above; tomllib.TOMLDecodeError for anything else."""
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError(f"arrays and tables nested more than {MAX_DEPTH} deep") from None
    except tomllib.TOMLDecodeError:
        raise
    except ValueError as error:  # int() of a 5,000-digit number, a date out of range
        found = _LONG_NUMBER.search(text)
        if found:
            raise tomllib.TOMLDecodeError(f"the integer {_number_text(found.group())} does not fit in 64 bits") \
                from None
        raise tomllib.TOMLDecodeError(f"a value out of range ({error})") from None
    _check_tree(data)
    return data


_LONG_NUMBER = re.compile(r"[0-9_]{%d,}" % (_INT_DIGITS + 1))


def _check_tree(data: Any) -> None:
    """TOMLDecodeError for nesting past MAX_DEPTH (dotted keys nest tables too: ``a.b.c.d = 1``)
    or an integer outside 64 bits (hexadecimal, octal and binary have no length limit in tomllib)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                raise tomllib.TOMLDecodeError(f"arrays and tables nested more than {MAX_DEPTH} deep")
            stack.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))
        elif isinstance(value, int) and not isinstance(value, bool) and not INT_LOW <= value <= INT_HIGH:
            raise tomllib.TOMLDecodeError(f"the integer {_number_text(hex(value))} does not fit in 64 bits")


def _number_text(text: str) -> str:
    """A number's text as a message quotes it: whole when short, else its start and its length."""
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} characters)"
