"""schemas/openvino_opsets.json against the installed openvino: the table the validator reads
(without importing openvino) says what OpenVINO's opsets hold, and what its reader refuses."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import openvino as ov
import pytest
from conftest_validate import openvino_reads
from openvino._pyopenvino import NodeFactory

from irtool.specs.opsets import load_opsets, openvino_opsets
from irtool.validate import validate_file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "schemas"))
import make_opsets  # noqa: E402  (the generator: its rule for "opset N holds T" is what is checked here)

TABLE = openvino_opsets()
REFUSALS = {"IR012", "IR014", "IR015"}


def test_table_is_of_the_installed_openvino():
    assert TABLE.openvino == ov.__version__.split("-")[0], "run python schemas/make_opsets.py"
    assert make_opsets.opset_numbers() == list(range(1, TABLE.count + 1))


@pytest.mark.parametrize("number", range(1, TABLE.count + 1))
def test_each_opset_holds_exactly_what_the_table_says(number):
    factory = NodeFactory(f"opset{number}")
    for name in TABLE.ops:
        assert make_opsets.version_in(factory, name) == TABLE.ops[name].get(f"opset{number}"), name


def test_every_op_the_python_factories_create_is_in_the_table():
    """A second source of op names, besides the library's symbols the generator also reads."""
    names = set()
    for source in Path(ov.__file__).resolve().parent.glob("opset*/*.py"):
        names.update(re.findall(r'\.create\(\s*"(\w+)"', source.read_text()))
    assert len(names) > 150
    assert names <= set(TABLE.ops)


def test_loading_refuses_a_table_naming_an_opset_past_the_newest(tmp_path):
    path = tmp_path / "opsets.json"
    path.write_text('{"openvino": "x", "opsets": 2, "ops": {"Abs": {"opset3": "opset1"}}}')
    with pytest.raises(ValueError, match="opset3"):
        load_opsets(path)


SAMPLE = ROOT / "samples" / "ir" / "valid" / "gru_sequence_forward.xml"
VERSIONS = ["opset0", "opset1", "opset4", "opset5", "opset8", "opset16", "opset17", "opset18", "opset99", "opset05",
            "opset-5", "opset5.1", "", " opset5", "OPSET5", "experimental"]
TYPES = ["GRUSequence", "grusequence", "GRUSEQUENCE", "GRUSequenceX"]


@pytest.mark.parametrize("layer_type", TYPES)
@pytest.mark.parametrize("version", VERSIONS)
def test_validator_refuses_an_op_version_exactly_when_openvino_does(tmp_path, layer_type, version):
    path = tmp_path / "m.xml"
    path.write_text(SAMPLE.read_text().replace('type="GRUSequence" version="opset5"',
                                               f'type="{layer_type}" version="{version}"'))
    codes = {d.code for d in validate_file(path).diagnostics}
    assert openvino_reads(path) == (not codes & REFUSALS), codes


@pytest.mark.parametrize("layer_type, version", [("Parameter", "opset17"), ("Parameter", "opset99"),
                                                 ("Result", "opset17"), ("Result", "opset16")])
def test_parameter_and_result_versions_as_openvino_reads_them(tmp_path, layer_type, version):
    path = tmp_path / "m.xml"
    path.write_text(SAMPLE.read_text().replace(f'type="{layer_type}" version="opset1"',
                                               f'type="{layer_type}" version="{version}"'))
    codes = {d.code for d in validate_file(path).diagnostics}
    assert openvino_reads(path) == (not codes & REFUSALS), codes


def test_the_message_names_where_the_op_exists(tmp_path):
    path = tmp_path / "m.xml"
    path.write_text(SAMPLE.read_text().replace('version="opset5"', 'version="opset4"'))
    [d] = validate_file(path).diagnostics
    assert (d.code, d.layer_id) == ("IR012", "6")
    assert "GRUSequence exists in opset5 to opset16" in d.message
    assert TABLE.where("RNNCell") == "opset1, opset3 to opset16"


def test_an_op_type_in_another_case_is_checked_against_its_spec(tmp_path):
    """OpenVINO's reader takes grusequence as GRUSequence; so does the validator, spec and all."""
    path = tmp_path / "m.xml"
    path.write_text(SAMPLE.read_text().replace('type="GRUSequence"', 'type="grusequence"')
                    .replace('hidden_size="4"', 'hidden_size="5"'))
    assert openvino_reads(path)  # it reads; hidden_size is checked only at compile time
    codes = {d.code for d in validate_file(path).diagnostics}
    assert codes == {"IR041", "IR042"}
