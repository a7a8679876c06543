"""Suites: TOML grids and file lists expand into cases with stable ids; bad suites get one line."""
from __future__ import annotations

from pathlib import Path

import pytest

from irtool.core.errors import IrtoolError
from irtool.jobs.suite import SuiteError, load_suite
from irtool.specs import registry

ROOT = Path(__file__).resolve().parent.parent
SUITES = ROOT / "samples" / "suites"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suite.toml"
    path.write_text(text)
    return path


def test_grid_is_the_product_of_its_lists_with_ids_naming_each_axis(tmp_path):
    suite = load_suite(write(tmp_path, """
[[grid]]
id = "g"
op = "GRUSequence-5"
attributes = { hidden_size = 4, direction = ["forward", "bidirectional"], activations = [["relu", "tanh"], ["sigmoid", "tanh"]] }
sizes = { batch_size = [1, 3], seq_length = 2 }
seeds = [0, 7]
"""))
    assert suite.name == "suite" and len(suite.cases) == 2 * 2 * 2 * 2
    first = suite.cases[0]
    assert first.id == "g[direction=forward,activations=relu+tanh,batch_size=1,seed=0]"
    assert (first.op, first.version, first.attributes) == (
        "GRUSequence", 5, {"hidden_size": 4, "direction": "forward", "activations": ["relu", "tanh"]})
    assert first.sizes == {"batch_size": 1, "seq_length": 2}
    assert {c.seed for c in suite.cases} == {0, 7}
    assert len({c.id for c in suite.cases}) == len(suite.cases)


def test_a_plain_list_for_a_list_attribute_is_one_value_not_an_axis(tmp_path):
    suite = load_suite(write(tmp_path, """
[[grid]]
op = "LSTMCell"
attributes = { hidden_size = 2, activations = ["tanh", "relu", "sigmoid"] }
dynamic = ["batch_size"]
weights = "parameter"
"""))
    (case,) = suite.cases
    assert case.id == "LSTMCell[seed=0]" and case.version == 4
    assert case.attributes["activations"] == ["tanh", "relu", "sigmoid"]
    assert case.dynamic == ("batch_size",) and case.weights_as_parameters


def test_seeds_share_a_model_and_model_seed_does_not(tmp_path):
    suite = load_suite(write(tmp_path, """
[[grid]]
id = "a"
op = "RNNCell"
attributes = { hidden_size = 2 }
seeds = [0, 1]
[[grid]]
id = "b"
op = "RNNCell"
attributes = { hidden_size = 2 }
model_seed = 5
"""))
    a0, a1, b0 = suite.cases
    assert a0.model_key == a1.model_key != b0.model_key


def test_files_are_globbed_relative_to_the_suite(tmp_path, samples_dir):
    path = SUITES / "smoke.toml"
    suite = load_suite(path)
    files = [c for c in suite.cases if c.file]
    assert len(files) == len(list((samples_dir / "valid").glob("*.xml")))
    assert all(c.id.startswith("valid:") and Path(c.file).is_file() for c in files)


@pytest.mark.parametrize("text, message", [
    ("[[grid]]\nop = 'GRUSequence'\nattributes = { hidden_size = 4, direction = 'forward' }\ncolour = 1",
     r"\[\[grid\]\] 1: unknown key 'colour'"),
    ("[[grid]]\nattributes = {}", r"'op' is required"),
    ("[[grid]]\nop = 'GRUFoo'", r"GRUFoo"),
    ("[[grid]]\nop = 'GRUSequence'\nattributes = { hidden_size = 4, direction = 'forward', colour = 2 }",
     r"GRUSequence-5 has no attribute 'colour'"),
    ("[[grid]]\nop = 'GRUSequence'\nattributes = { hidden_size = 4, direction = ['forward', 'sideways'] }",
     r"case GRUSequence\[direction=sideways,seed=0\]: .*'sideways' is not one of"),
    ("[[grid]]\nop = 'GRUSequence'\nattributes = { hidden_size = 4 }", r"'direction' is required"),
    ("[[grid]]\nop = 'GRUCell'\nattributes = { hidden_size = 4 }\nsizes = { seq_length = 3 }", r"unknown size seq_length"),
    ("[[grid]]\nop = 'GRUCell'\nattributes = { hidden_size = 4 }\nweights = 'file'", r"weights is 'file'"),
    ("[[grid]]\nop = 'GRUCell'\nattributes = { hidden_size = 4 }\nseeds = [-1]", r"seeds is \[-1\]"),
    ("[[grid]]\nid = 'a b'\nop = 'GRUCell'\nattributes = { hidden_size = 4 }", r"id 'a b' must be"),
    ("[[grid]]\nop = 'GRUCell'\nattributes = { hidden_size = 4 }\n[[grid]]\nop = 'GRUCell'\nattributes = { hidden_size = 4 }",
     r"two cases have the id GRUCell\[seed=0\]"),
    ("[[files]]\npaths = ['nothing/*.xml']", r"'nothing/\*.xml' matches no file"),
    ("[[files]]\nid = 'x'", r"'paths' is required"),
    ("[suite]\ntimeout = 0\n[[files]]\npaths = ['*.toml']", r"timeout is 0"),
    ("[suite]\nname = 'x'", r"the suite has no cases"),
    ("[cases]\nop = 1", r"unknown table \[cases\]"),
    ("[[grid]\nop = 1", r"not valid TOML"),
])
def test_bad_suites_get_one_line_naming_the_file_and_table(tmp_path, text, message):
    with pytest.raises(SuiteError, match=message) as error:
        load_suite(write(tmp_path, text))
    assert error.value.message.startswith(str(tmp_path / "suite.toml")) and "\n" not in error.value.message


def test_missing_suite_file(tmp_path):
    with pytest.raises(IrtoolError, match="no such suite file"):
        load_suite(tmp_path / "none.toml")


def test_the_full_suite_covers_every_attribute_of_every_loadable_op():
    """Each attribute of each op OpenVINO loads takes at least two values (its default and another)."""
    cases = [c for c in load_suite(SUITES / "full.toml").cases if c.op]
    for spec in registry():
        if not spec.family or not spec.openvino_loads:
            continue
        mine = [c for c in cases if (c.op, c.version) == (spec.type, spec.version)]
        assert mine, f"{spec.key} has no case in the full suite"
        for name, attribute in spec.attributes.items():
            values = {repr(spec.fill_defaults(c.attributes)[name]) for c in mine}
            assert len(values) >= 2, f"{spec.key}: {name} takes only {values} in the full suite"
        for where in ("weights_as_parameters", "dynamic"):
            assert len({getattr(c, where) for c in mine if spec.type.endswith("Sequence")} or {0, 1}) >= 2, \
                f"{spec.key}: {where} never varies"


def test_the_smoke_suite_has_every_op_and_the_valid_samples():
    suite = load_suite(SUITES / "smoke.toml")
    ops = {(c.op, c.version) for c in suite.cases if c.op}
    loadable = {(s.type, s.version) for s in registry() if s.family and s.openvino_loads}
    assert ops == loadable


@pytest.fixture(scope="module")
def openvino_cpu_cases():
    return load_suite(SUITES / "openvino-cpu.toml").cases


def _sequence(case) -> bool:
    return bool(case.op) and case.op.endswith("Sequence")


@pytest.mark.parametrize("op", ["GRUSequence", "LSTMSequence", "RNNSequence"])
def test_the_openvino_cpu_suite_has_each_sequence_mode_of_openvinos_tests(openvino_cpu_cases, op):
    """PURE_SEQ (a Const of full lengths, expected to run as RNNSeq in the custom tests),
    PURE_SEQ_RAND_SEQ_LEN_CONST and _PARAM (random lengths as a Const or a Parameter), all i64,
    each with OpenVINO's saturating inputs and irtool's unsaturated ones."""
    mine = [c for c in openvino_cpu_cases if c.op == op]
    modes = {(c.sources.get("sequence_lengths", "parameter"), c.lengths) for c in mine if not c.dynamic and
             not c.bounds}
    assert {("const", "full"), ("const", "random"), ("parameter", "random")} <= modes
    assert {c.lengths_type for c in mine} == {"i64"}
    assert any(c.sources.get("sequence_lengths") == "const" and c.lengths == "full" and c.expect_impl == "RNNSeq"
               for c in mine)
    for mode in modes:
        values = {c.values for c in mine if (c.sources.get("sequence_lengths", "parameter"), c.lengths) == mode}
        assert values == {"saturating", "unsaturated"}, f"{op} {mode}: {values}"


def test_the_openvino_cpu_suite_infers_several_shapes_on_one_model_with_bounds(openvino_cpu_cases):
    """The custom CPU tests' dynamic points: lists of shapes on one compiled model, bounded dims,
    lengths a Parameter of full lengths; each expects RNNSeq."""
    dynamic = [c for c in openvino_cpu_cases if _sequence(c) and c.infer_sizes]
    assert {c.op for c in dynamic} == {"GRUSequence", "LSTMSequence", "RNNSequence"}
    assert all(len(c.infer_sizes) >= 3 and c.lengths == "full" and c.expect_impl == "RNNSeq" for c in dynamic)
    assert any(len(c.infer_sizes) == 5 for c in dynamic)  # shapes that go back to earlier ones
    assert any("batch_size" in c.bounds for c in dynamic) and any("seq_length" in c.bounds for c in dynamic)
    assert any(set(c.dynamic) == {"batch_size", "seq_length", "input_size"} for c in dynamic)


def test_the_openvino_cpu_suite_takes_each_weight_source_and_cell(openvino_cpu_cases):
    cells = {c.op for c in openvino_cpu_cases if c.op and c.op.endswith("Cell")}
    assert cells == {"GRUCell", "LSTMCell", "RNNCell"}
    for op in ("GRUCell", "LSTMCell", "RNNCell"):
        combos = {tuple(c.sources.get(port, "const") for port in "WRB") for c in openvino_cpu_cases if c.op == op}
        assert len(combos) == 8, f"{op}: W, R, B sources {combos}"
    assert any(c.op == "LSTMSequence" and c.weights_as_parameters for c in openvino_cpu_cases)


def test_the_openvino_cpu_suite_has_openvinos_f16_models(openvino_cpu_cases):
    """The shared tests' model_types f16: GRU and LSTM sequences in each mode, and the cells."""
    f16 = [c for c in openvino_cpu_cases if c.element_type == "f16"]
    assert {c.op for c in f16} == {"GRUSequence", "LSTMSequence", "GRUCell", "LSTMCell", "RNNCell"}
    for op in ("GRUSequence", "LSTMSequence"):
        modes = {(c.sources.get("sequence_lengths", "parameter"), c.lengths) for c in f16 if c.op == op}
        assert modes == {("const", "full"), ("const", "random"), ("parameter", "random")}, op


def test_the_openvino_cpu_suite_must_reach_each_path_of_each_op():
    """A run of the suite fails if any op stops reaching one of the paths measured for it."""
    coverage = set(load_suite(SUITES / "openvino-cpu.toml").expect_coverage)
    for op in ("GRUSequence", "LSTMSequence", "RNNSequence"):
        assert {f"{op}:RNNSeq", f"{op}:TensorIterator"} <= coverage
    for op in ("GRUCell", "LSTMCell", "RNNCell"):
        assert {f"{op}:RNNCell", f"{op}:Subgraph"} <= coverage
