"""The op spec files: schema, loading, the dim-expression language and the unifier."""
from __future__ import annotations

import json

import jsonschema
import pytest

from irtool.core.shapes import DYNAMIC, Interval
from irtool.specs import (
    OPS_DIR,
    SCHEMA_DIR,
    SpecError,
    check_shapes,
    get_spec,
    load_registry,
    parse_expression,
    registry,
    unify,
)
from irtool.specs.expressions import ExpressionError

OP_FILES = sorted(p for p in OPS_DIR.glob("*-*.json"))
EXPECTED_OPS = {"GRUSequence-5", "GRUCell-3", "LSTMSequence-1", "LSTMSequence-5", "LSTMCell-4", "RNNCell-0",
                "RNNSequence-5", "Parameter-1", "Const-1", "Result-1", "Convert-1"}


@pytest.mark.parametrize("path", OP_FILES, ids=lambda p: p.stem)
def test_op_file_obeys_schema(path):
    schema = json.loads((SCHEMA_DIR / "op.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(json.loads(path.read_text()), schema)


def test_a_file_breaking_the_schema_is_caught():
    schema = json.loads((SCHEMA_DIR / "op.schema.json").read_text())
    bad = json.loads((OPS_DIR / "GRUCell-3.json").read_text())
    bad["attributes"]["hidden_size"]["type"] = "integer"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_every_op_is_there_and_named_by_its_file():
    assert {s.key for s in registry()} == EXPECTED_OPS
    for path in OP_FILES:
        assert json.loads(path.read_text())["type"] + "-" + str(json.loads(path.read_text())["version"]) == path.stem


def test_duplicate_versions_are_refused(tmp_path):
    for name in ("GRUCell-3.json", "common.json"):
        (tmp_path / name).write_text((OPS_DIR / name).read_text())
    (tmp_path / "GRUCell-3b.json").write_text((OPS_DIR / "GRUCell-3.json").read_text())
    with pytest.raises(SpecError, match="two spec files for GRUCell-3"):
        load_registry(tmp_path)


@pytest.mark.parametrize("op_type, ir_version, key", [
    ("GRUSequence", "opset5", "GRUSequence-5"), ("GRUSequence", "opset15", "GRUSequence-5"),
    ("GRUSequence", "opset4", None), ("LSTMSequence", "opset1", "LSTMSequence-1"),
    ("LSTMSequence", "opset4", "LSTMSequence-1"), ("LSTMSequence", "opset5", "LSTMSequence-5"),
    ("LSTMSequence", None, "LSTMSequence-5"), ("RNNCell", "opset1", "RNNCell-0"),
    ("GRUCell", "extension", None), ("Add", "opset1", None)])
def test_one_rule_picks_the_version(op_type, ir_version, key):
    spec = registry().for_ir(op_type, ir_version)
    assert (spec.key if spec else None) == key


@pytest.mark.parametrize("text, symbols, flags, value", [
    ("3*hidden_size", {"hidden_size": 4}, {}, 12),
    ("linear_before_reset ? 4*hidden_size : 3*hidden_size", {"hidden_size": 4}, {"linear_before_reset": True}, 16),
    ("linear_before_reset ? 4*hidden_size : 3*hidden_size", {"hidden_size": 4}, {"linear_before_reset": False}, 12),
    ("2*(a+1)", {"a": 3}, {}, 8), ("a+b*2", {"a": 1, "b": 5}, {}, 11), ("7", {}, {}, 7),
    ("3*hidden_size", {}, {}, None)])
def test_expressions_evaluate(text, symbols, flags, value):
    assert parse_expression(text).evaluate(symbols, flags) == value


@pytest.mark.parametrize("text, value, solved", [
    ("3*hidden_size", 12, ("hidden_size", 4)), ("3*hidden_size", 13, ("hidden_size", None)),
    ("2*(a+1)", 8, ("a", 3)), ("batch_size", 5, ("batch_size", 5))])
def test_expressions_solve_for_one_symbol(text, value, solved):
    assert parse_expression(text).solve(value, {}, {}) == solved


@pytest.mark.parametrize("text", ["3*", "a ? b", "(a", "a b", "3 ? a : b", "a - b"])
def test_bad_expressions_are_refused(text):
    with pytest.raises(ExpressionError):
        parse_expression(text)


GRU = get_spec("GRUSequence")
GOOD = [(2, 5, 3), (2, 1, 4), (2,), (1, 12, 3), (1, 12, 4), (1, 12)]


def test_unify_binds_symbols_from_attributes_and_ports():
    report = unify(GRU, GRU.fill_defaults({"hidden_size": 4, "direction": "forward"}), GOOD)
    assert report.problems == []
    assert report.symbols == {"hidden_size": 4, "num_directions": 1, "batch_size": 2, "seq_length": 5, "input_size": 3}
    assert report.origins["batch_size"].describe() == "input 0 (X) dim 0"


def test_unify_reports_the_port_that_disagrees_and_where_the_symbol_was_bound():
    shapes = list(GOOD)
    shapes[1] = (3, 1, 4)
    [problem] = unify(GRU, GRU.fill_defaults({"hidden_size": 4, "direction": "forward"}), shapes).problems
    assert (problem.side, problem.index, problem.dim, problem.found, problem.expected_value) == ("input", 1, 0, 3, 2)
    assert problem.message == "dim 0 is 3, expected batch_size = 2 (bound by input 0 (X) dim 0)"


def test_unify_conditional_dim_names_its_flag():
    attrs = GRU.fill_defaults({"hidden_size": 4, "direction": "forward", "linear_before_reset": True})
    [problem] = unify(GRU, attrs, GOOD).problems
    assert problem.message == "dim 1 is 12, expected 4*hidden_size = 16 (linear_before_reset=true)"


@pytest.mark.parametrize("dim", [DYNAMIC, Interval(1, 4)])
def test_dynamic_dims_agree_with_anything_their_interval_admits(dim):
    shapes = list(GOOD)
    shapes[0] = (dim, 5, 3)
    assert unify(GRU, GRU.fill_defaults({"hidden_size": 4, "direction": "forward"}), shapes).problems == []


def test_interval_that_excludes_the_value_is_a_conflict():
    shapes = list(GOOD)
    shapes[1] = (Interval(3, 8), 1, 4)
    [problem] = unify(GRU, GRU.fill_defaults({"hidden_size": 4, "direction": "forward"}), shapes).problems
    assert problem.index == 1 and problem.dim == 0


def test_output_dims_are_checked_against_the_inferred_ones():
    attrs = GRU.fill_defaults({"hidden_size": 4, "direction": "bidirectional"})
    shapes = [(2, 5, 3), (2, 2, 4), (2,), (2, 12, 3), (2, 12, 4), (2, 12)]
    report = unify(GRU, attrs, shapes, [(2, 2, 5, 4), (2, 1, 4)])
    assert [(p.side, p.index, p.dim) for p in report.problems] == [("output", 1, 1)]


def test_check_shapes_raises_naming_the_input_and_expected_dims():
    with pytest.raises(ValueError, match=r"W has shape \[1, 13, 3\]; expected \[num_directions=1, 3\*hidden_size=12, "
                                         r"input_size=3\] \(input 3; dim 1 is 13, expected 3\*hidden_size = 12"):
        check_shapes(GRU, {"hidden_size": 4, "direction": "forward"}, [*GOOD[:3], (1, 13, 3), *GOOD[4:]])


@pytest.mark.parametrize("attrs, message", [
    ({"direction": "forward"}, "'hidden_size' is required"),
    ({"hidden_size": 4, "direction": "sideways"}, "'sideways' is not one of"),
    ({"hidden_size": 4, "direction": "forward", "activations": ["sigmoid"]}, "has 1 items, expected 2"),
    ({"hidden_size": 4, "direction": "forward", "clip": -1.0}, "out of range"),
    ({"hidden_size": 4, "direction": "forward", "colour": 1}, "unknown attribute 'colour'")])
def test_check_attributes_names_the_attribute(attrs, message):
    with pytest.raises(ValueError, match=message):
        GRU.check_attributes(attrs)


def test_check_attributes_fills_defaults_and_folds_case():
    filled = GRU.check_attributes({"hidden_size": 4, "direction": "Forward", "activations": ["Sigmoid", "TANH"]})
    assert filled["direction"] == "forward" and filled["activations"] == ["sigmoid", "tanh"]
    assert filled["linear_before_reset"] is False and filled["clip"] == 0.0


@pytest.mark.parametrize("text, b_rows", [("false", 12), ("0", 12), ("true", 16), ("1", 16)])
def test_check_shapes_reads_ir_text_for_bools_by_the_spec_parser(text, b_rows):
    """"false" is a non-empty string, so truthiness would pick the 4*hidden_size bias layout."""
    attrs = {"hidden_size": 4, "direction": "forward", "linear_before_reset": text}
    shapes = [*GOOD[:5], (1, b_rows)]
    assert check_shapes(GRU, attrs, shapes)["hidden_size"] == 4
    wrong = 16 if b_rows == 12 else 12
    with pytest.raises(ValueError, match=rf"B has shape \[1, {wrong}\]; expected .* \(input 5; dim 1 is {wrong}"):
        check_shapes(GRU, attrs, [*GOOD[:5], (1, wrong)])


def test_check_shapes_refuses_unreadable_ir_text():
    with pytest.raises(ValueError, match="'linear_before_reset'.*not a bool"):
        check_shapes(GRU, {"hidden_size": 4, "direction": "forward", "linear_before_reset": "yes"}, list(GOOD))


FAMILY = [s for s in registry() if s.family]


@pytest.mark.parametrize("spec", FAMILY, ids=lambda s: s.key)
def test_every_family_input_has_a_role_and_every_free_dim_a_size(spec):
    assert all(port.role is not None for port in spec.inputs)
    assert set(spec.default_sizes) == set(spec.free_symbols)
    if spec.form == "sequence":
        assert spec.port_with_role("lengths").name == "sequence_lengths"
        assert spec.time_symbol == "seq_length"
        assert spec.time_axis(spec.inputs[0]) == 1 and spec.time_axis(spec.outputs[0]) == 2  # X and Y
        assert spec.directions({"direction": "reverse"}) == (True,)
        assert spec.directions({"direction": "bidirectional"}) == (False, True)
    else:
        assert spec.time_symbol is None and spec.directions({}) is None
    assert [p.name for p in spec.inputs if p.is_weight] == ["W", "R", "B"]


@pytest.mark.parametrize("change, message", [
    (lambda d: d["sizes"].pop("input_size"), "sizes batch_size, seq_length do not match"),
    (lambda d: d["sizes"]["batch_size"].update(time=True), "more than one size is the time axis"),
    (lambda d: d["inputs"][0].update(role="payload"), "unknown role 'payload'"),
    (lambda d: d["sizes"]["batch_size"].update(default=0), "default 0 is not a positive integer"),
])
def test_a_spec_with_inconsistent_roles_or_sizes_is_refused(change, message):
    from irtool.specs.loader import _resolve, build_spec

    common = json.loads((OPS_DIR / "common.json").read_text())
    data = _resolve(json.loads((OPS_DIR / "GRUSequence-5.json").read_text()), common, "GRUSequence-5")
    change(data)
    with pytest.raises(SpecError, match=message):
        build_spec(data, common, "GRUSequence-5")
