"""The forms of a port's <dim> and of ids that OpenVINO's reader takes, refuses or reads as
another number, each tried on ``read_model`` beside irtool validate (as a grid: one file per form)."""
from __future__ import annotations

import pytest
from conftest_validate import openvino_reads

from irtool.validate import validate_file

NET = """<?xml version="1.0"?>
<net name="t" version="11">
<layers>
<layer id="{lid}" name="x" type="Parameter" version="opset1">
<data shape="2,3" element_type="{et}"/>
<output><port id="{pid}" precision="FP32"><dim>{dim}</dim><dim>3</dim></port></output>
</layer>
<layer id="1" name="out" type="Result" version="opset1">
<input><port id="{rpid}" precision="FP32"><dim>2</dim><dim>3</dim></port></input>
</layer>
</layers>
<edges><edge from-layer="{elid}" from-port="{epid}" to-layer="1" to-port="{tport}"/></edges>
</net>
"""
BASE = dict(lid="0", et="f32", pid="0", rpid="0", dim="2", elid="0", epid="0", tport="0")

# the form: (OpenVINO reads the file, the codes irtool reports as errors, and as warnings)
DIMS = {
    "2": (True, set(), set()), "-1": (True, set(), set()), "1..5": (True, set(), set()),
    "1..": (True, set(), set()), "5..": (True, set(), set()), "-1..5": (True, {"IR043"}, set()),
    " 2": (True, set(), set()), "\t2": (True, set(), set()), "2 ": (True, set(), set()),
    "9223372036854775807": (True, set(), set()),
    "+2": (True, set(), {"IR046"}), "2.0": (True, set(), {"IR046"}),
    "2.5": (True, {"IR043"}, set()), "1e2": (True, {"IR043"}, set()), "0x4": (True, {"IR043"}, set()),
    "2abc": (True, {"IR043"}, set()),
    "..5": (False, {"IR043"}, set()), "..": (False, {"IR043"}, set()), "?": (False, {"IR043"}, set()),
    "-2": (False, {"IR043"}, set()), "": (False, {"IR043"}, set()), "abc": (False, {"IR043"}, set()),
    "- 4": (False, {"IR043"}, set()), "9223372036854775808": (False, {"IR043"}, set()),
    "99999999999999999999": (False, {"IR043"}, set()), "\u0664": (False, {"IR043"}, set()),
}
IDS = {  # a layer id (with the edge's from-layer), a port id (with the edge's from-port), an edge's to-port
    ("lid", " 0"): (True, set(), {"IR018"}), ("lid", "+0"): (True, set(), {"IR018"}),
    ("lid", "00"): (True, set(), {"IR018"}), ("lid", "-0"): (True, set(), {"IR018"}),
    ("lid", "0 "): (False, {"IR017"}, set()), ("lid", "0x0"): (False, {"IR017"}, set()),
    ("lid", "0.0"): (False, {"IR017"}, set()),
    ("pid", " 0"): (True, set(), {"IR018"}), ("pid", "+0"): (True, set(), {"IR018"}),
    ("pid", "0 "): (False, {"IR031"}, set()), ("pid", "0.5"): (False, {"IR031"}, set()),
    ("pid", "18446744073709551615"): (False, {"IR031"}, set()),
    ("tport", " 0"): (True, set(), {"IR018"}), ("tport", "+0"): (True, set(), {"IR018"}),
    ("tport", "0 "): (False, {"IR059"}, set()), ("tport", "9223372036854775808"): (False, {"IR059"}, set()),
}
_PAIRED = {"lid": "elid", "pid": "epid"}


def _check(tmp_path, values, reads, errors, warnings):
    """OpenVINO's verdict; irtool's codes for the form; and where OpenVINO reads the file, no error
    that says it refuses it, and none but the form's own (and IR044, IR063: a dim read as another
    number than the Parameter's shape and the Result's dim, findings of their own)."""
    path = tmp_path / "t.xml"
    path.write_text(NET.format(**{**BASE, **values}))
    assert openvino_reads(path) is reads
    report = validate_file(path)
    found_errors = {d.code for d in report.diagnostics if d.severity == "error"}
    assert errors <= found_errors, report.diagnostics
    assert warnings <= {d.code for d in report.diagnostics if d.severity == "warning"}, report.diagnostics
    if reads:
        assert found_errors - errors <= {"IR044", "IR063"}, report.diagnostics
        assert not [d for d in report.diagnostics if "refuses" in d.message], report.diagnostics


@pytest.mark.parametrize("dim", list(DIMS))
def test_port_dim_forms(tmp_path, dim):
    _check(tmp_path, {"dim": dim}, *DIMS[dim])


@pytest.mark.parametrize(("field", "written"), list(IDS))
def test_id_forms(tmp_path, field, written):
    values = {field: written}
    if field in _PAIRED:  # the edge names it as the IR format writes it
        values[_PAIRED[field]] = "0"
    _check(tmp_path, values, *IDS[(field, written)])


# element_type: any case of an element type's name (a warning: the IR format writes it lower case); nothing around it
ELEMENT_TYPES = {
    "f32": (True, set(), set()), "F32": (True, set(), {"IR054"}), "FP32": (False, {"IR023"}, set()),
    "fp32": (False, {"IR023"}, set()), " f32": (False, {"IR023"}, set()), "f32 ": (False, {"IR023"}, set()),
}


@pytest.mark.parametrize("written", list(ELEMENT_TYPES))
def test_element_type_forms(tmp_path, written):
    _check(tmp_path, {"et": written}, *ELEMENT_TYPES[written])


@pytest.mark.parametrize("written, precision", [("I64", "I64"), ("Boolean", "BOOL"), ("BF16", "BF16"),
                                                ("U8", "U8"), ("F16", "FP16")])
def test_element_type_in_any_case(tmp_path, written, precision):
    path = tmp_path / "t.xml"
    path.write_text(NET.format(**{**BASE, "et": written}).replace('precision="FP32"', f'precision="{precision}"'))
    assert openvino_reads(path)
    report = validate_file(path)
    assert [d.code for d in report.diagnostics] == ["IR054"], report.diagnostics
    assert report.diagnostics[0].found == written and report.diagnostics[0].column == 19  # <data shape="2,3" element_type=
