""""Did you mean": one rule (irtool.core.errors.closest) for every closed list of names that irtool
checks: op types and attribute names and values in validate, options' choices, suite and
known-failures keys, precisions, activations."""
from __future__ import annotations

from pathlib import Path

import pytest

from irtool.cli.program import main
from irtool.core.errors import InputError, closest, did_you_mean
from irtool.harness import expectations
from irtool.harness.matrix import MatrixError, check_precisions
from irtool.jobs.suite import SuiteError, load_suite
from irtool.reference.activations import resolve
from irtool.specs import get_spec
from irtool.validate import validate_file

FORWARD = Path(__file__).resolve().parent.parent / "samples" / "ir" / "valid" / "gru_sequence_forward.xml"


@pytest.mark.parametrize("word, choices, expected", [
    ("hiden_size", ["hidden_size", "direction", "clip"], "hidden_size"),
    ("GRUSequense", ["GRUSequence", "LSTMSequence", "GRUCell"], "GRUSequence"),
    ("cpu", ["CPU", "GPU"], "CPU"),
    ("Forward", ["forward", "reverse"], "forward"),
    ("sideways", ["forward", "reverse", "bidirectional"], None),
    ("x" * 1000, ["x"], None),
    (3, ["3"], None),
])
def test_closest(word, choices, expected):
    assert closest(word, choices) == expected
    assert did_you_mean(word, choices) == (f" (did you mean {expected}?)" if expected else "")


@pytest.mark.parametrize("old, new, code, attribute, meant", [
    ('hidden_size="4"', 'hiden_size="4"', "IR021", "hiden_size", "hidden_size"),
    ('linear_before_reset=', 'linear_before_rest=', "IR021", "linear_before_rest", "linear_before_reset"),
    ('direction="forward"', 'direction="forwad"', "IR023", "direction", "forward"),
    ('activations="sigmoid,tanh"', 'activations="sigmoid,tahn"', "IR023", "activations", "tanh"),
    ('type="GRUSequence"', 'type="GRUSequense"', "IR015", "type", "GRUSequence"),
])
def test_validate_suggests_the_name_meant(tmp_path, old, new, code, attribute, meant):
    path = tmp_path / "m.xml"
    path.write_text(FORWARD.read_text().replace(old, new))
    [finding] = [d for d in validate_file(path).diagnostics if d.code == code]
    assert finding.attribute == attribute
    assert f"(did you mean {meant}?)" in finding.message
    if code != "IR023":  # IR023's expected is the whole list of values allowed
        assert finding.expected == meant


def test_an_option_choice_is_suggested(capsys):
    assert main(["validate", "--format", "jsn", str(FORWARD)]) == 2
    assert "invalid choice: 'jsn' (did you mean json?)" in capsys.readouterr().err


@pytest.mark.parametrize("text, message", [
    ("[[grid]]\nop = 'GRUSequence'\nattributes = { hidden_size = 4, direction = 'forward' }\nseed = [1]",
     "unknown key 'seed' (did you mean seeds?)"),
    ("[[grid]]\nop = 'GRUSequence'\nattributes = { hidden_size = 4, direcion = 'forward' }",
     "has no attribute 'direcion' (did you mean direction?)"),
    ("[[grid]]\nop = 'GRUSequense'\nattributes = { hidden_size = 4, direction = 'forward' }",
     "no spec for GRUSequense (did you mean GRUSequence?)"),
    ("[[grid]]\nop = 'GRUCell'\nattributes = { hidden_size = 4 }\nweights = 'cnst'", "(did you mean const?)"),
    ("[[grids]]\nop = 'GRUCell'", r"unknown table [grids] (did you mean grid?)"),
])
def test_a_suite_key_or_value_is_suggested(tmp_path, text, message):
    path = tmp_path / "suite.toml"
    path.write_text(text)
    with pytest.raises(SuiteError) as error:
        load_suite(path)
    assert message in error.value.message


def test_a_known_failures_key_is_suggested(tmp_path):
    path = tmp_path / "xfail.toml"
    path.write_text('[[xfail]]\ncase = "x"\nreason = "r"\nverdicts = "fail"\n')
    with pytest.raises(expectations.ExpectationsError, match=r"unknown key 'verdicts' \(did you mean verdict\?\)"):
        expectations.load_expectations(path)


def test_a_precision_and_an_activation_and_a_spec_are_suggested():
    with pytest.raises(MatrixError, match=r"\(did you mean bf16\?\)"):
        check_precisions(["bf61"])
    with pytest.raises(InputError, match=r"\(did you mean sigmoid\?\)"):
        resolve(["sigmiod"])
    with pytest.raises(KeyError, match=r"\(did you mean LSTMCell\?\)"):
        get_spec("LSTMCel")
