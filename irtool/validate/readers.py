"""What OpenVINO's IR reader makes of the numbers a file writes, measured with openvino 2026.4
(tests/test_validate_forms.py checks each form against ``read_model``).

* An id (a layer's, a port's, an edge's end, a port map's ``internal_layer_id``) and the other
  unsigned attributes are read by ``std::stoll`` and must be used whole: leading white space
  (`` 5``, ``\\t5``), a sign (``+5``, ``-0``) and leading zeros are read; a trailing space, a
  fraction, hex, or a value past 2**63-1 or below 0 are refused.  Signed attributes
  (``external_port_id``, ``start``) likewise, from -2**63.
* A port's ``<dim>`` is read by ``stream >> int64``: its leading integer (after white space and a
  sign), whatever follows it (``4.5`` is 4, ``1e2`` is 1, ``1..5`` is 1); no leading integer
  (``..5``, ``?``, ``abc``), a value past 64 bits or below -1 is refused.
"""
from __future__ import annotations

import re

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
_C_SPACE = " \t\n\v\f\r"  # what isspace() is in the C locale
_STOLL = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")
_CANONICAL = re.compile(r"0|[1-9][0-9]*")


def stoll(text: str | None, lowest: int = INT64_MIN) -> int | None:
    """The value std::stoll gives ``text`` when it reads it whole, within [lowest, 2**63-1]; None
    when OpenVINO refuses it.  An unsigned attribute is ``stoll(text, 0)``."""
    if text is None or len(text) > 4096:
        return None
    match = _STOLL.fullmatch(text)
    if match is None:
        return None
    value = int(match.group(1))
    return value if lowest <= value <= INT64_MAX else None


def read_id(text: str | None) -> int | None:
    """An id as OpenVINO reads it (an unsigned attribute), or None if it refuses it."""
    return stoll(text, 0)


def is_canonical(text: str) -> bool:
    """Whether an id is written as the IR format writes one: decimal digits, no leading zero."""
    return _CANONICAL.fullmatch(text) is not None


def port_dim(text: str) -> int | None:
    """The value OpenVINO's reader takes from a port's <dim> text (its leading integer), or None
    where it refuses the file."""
    match = _STOLL.match(text[:4096])
    if match is None:
        return None
    value = int(match.group(1))
    return value if -1 <= value <= INT64_MAX else None
