"""The number grammar of IR values (irtool/core/numbers.py): ASCII digits, finite, in range."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irtool.core.numbers import NumberSyntaxError, parse_float, parse_int

NUMBERISH = st.text(st.sampled_from("0123456789+-.eE _xabinf\u0661\u0664\uff11 "), max_size=30)


@pytest.mark.parametrize("text, value", [("0", 0.0), ("1.5", 1.5), (" -2 ", -2.0), (".5", 0.5), ("5.", 5.0),
                                         ("+1e3", 1000.0), ("2E-3", 0.002), ("1e308", 1e308)])
def test_floats_of_the_grammar(text, value):
    assert parse_float(text) == value


@pytest.mark.parametrize("text", ["\u0661", "1e400", "1" * 400, "-1e309", "inf", "-inf", "nan", "0x10", "1_0",
                                  "1.5x", "", ".", "e5", "1e", "\uff11", "1 2"])
def test_floats_outside_the_grammar(text):
    with pytest.raises(NumberSyntaxError):
        parse_float(text)


@pytest.mark.parametrize("text", ["\u0664", "4.0", "1_0", "", "+", "9" * 21, str(2**64), str(-2**63 - 1), "4" * 5000])
def test_integers_outside_the_grammar(text):
    with pytest.raises(NumberSyntaxError):
        parse_int(text)


def test_integer_range_and_message():
    assert parse_int(" +42 ") == 42 and parse_int(str(2**64 - 1)) == 2**64 - 1 and parse_int(str(-2**63)) == -2**63
    with pytest.raises(NumberSyntaxError, match=r"out of range, expected 0\.\.10"):
        parse_int("11", 0, 10)
    with pytest.raises(NumberSyntaxError, match=r"\.\.\. \(5000 characters\) does not fit in 64 bits"):
        parse_int("4" * 5000)


@given(NUMBERISH)
def test_any_text_is_a_finite_ascii_number_or_refused(text):
    try:
        value = parse_float(text)
    except NumberSyntaxError:
        return
    assert text.strip().isascii() and math.isfinite(value) and value == float(text)


@given(NUMBERISH)
def test_any_text_is_a_64_bit_ascii_integer_or_refused(text):
    try:
        value = parse_int(text)
    except NumberSyntaxError:
        return
    assert text.strip().isascii() and -2**63 <= value < 2**64 and value == int(text)
