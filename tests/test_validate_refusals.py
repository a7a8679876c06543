"""What OpenVINO's reader refuses (or misreads) and irtool validate once missed: a layer's version or
type it lacks, reported at that attribute; a Const whose shape is dynamic; a net with no Result; a
layer or edge id that is not an integer; a dim that is not a number.  Each is one finding, with its
code, at its own line and column, and OpenVINO's own verdict on the same file is checked beside it
(measured with the installed openvino, not assumed)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest_validate import openvino_reads

from irtool.validate import validate_file

# Parameter x + Const w -> Add -> Result, each element on a line of its own.
NET = """<?xml version="1.0"?>
<net name="t" version="11">
\t<layers>
\t\t<layer id="0" name="x" type="Parameter" version="opset1">
\t\t\t<data shape="2,3" element_type="f32"/>
\t\t\t<output>
\t\t\t\t<port id="0" precision="FP32">
\t\t\t\t\t<dim>2</dim>
\t\t\t\t\t<dim>3</dim>
\t\t\t\t</port>
\t\t\t</output>
\t\t</layer>
\t\t<layer id="1" name="w" type="Const" version="opset1">
\t\t\t<data element_type="f32" shape="2,3" offset="0" size="24"/>
\t\t\t<output>
\t\t\t\t<port id="0" precision="FP32">
\t\t\t\t\t<dim>2</dim>
\t\t\t\t\t<dim>3</dim>
\t\t\t\t</port>
\t\t\t</output>
\t\t</layer>
\t\t<layer id="2" name="add" type="Add" version="opset1">
\t\t\t<data auto_broadcast="numpy"/>
\t\t\t<input>
\t\t\t\t<port id="0" precision="FP32">
\t\t\t\t\t<dim>2</dim>
\t\t\t\t\t<dim>3</dim>
\t\t\t\t</port>
\t\t\t\t<port id="1" precision="FP32">
\t\t\t\t\t<dim>2</dim>
\t\t\t\t\t<dim>3</dim>
\t\t\t\t</port>
\t\t\t</input>
\t\t\t<output>
\t\t\t\t<port id="2" precision="FP32">
\t\t\t\t\t<dim>2</dim>
\t\t\t\t\t<dim>3</dim>
\t\t\t\t</port>
\t\t\t</output>
\t\t</layer>
\t\t<layer id="3" name="out" type="Result" version="opset1">
\t\t\t<input>
\t\t\t\t<port id="0" precision="FP32">
\t\t\t\t\t<dim>2</dim>
\t\t\t\t\t<dim>3</dim>
\t\t\t\t</port>
\t\t\t</input>
\t\t</layer>
\t</layers>
\t<edges>
\t\t<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>
\t\t<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>
\t\t<edge from-layer="2" from-port="2" to-layer="3" to-port="0"/>
\t</edges>
</net>
"""
RESULT = NET[NET.index('\t\t<layer id="3"'):NET.index("\t</layers>")]
LAST_EDGE = '\t\t<edge from-layer="2" from-port="2" to-layer="3" to-port="0"/>\n'
ADD_PORT_1 = '<port id="1" precision="FP32">\n\t\t\t\t\t<dim>2</dim>'

# name: (the change, what OpenVINO does, the one finding: code, line, column, attribute)
CASES = {
    "version without the op": (('type="Add" version="opset1"', 'type="Add" version="opset0"'), False,
                               ("IR014", 22, 39, "version")),
    "version of a later opset": (('type="Const" version="opset1"', 'type="Const" version="opset99"'), False,
                                 ("IR014", 13, 39, "version")),
    "type of no opset": (('type="Add" version="opset1"', 'type="Addd" version="opset1"'), False,
                         ("IR015", 22, 28, "type")),
    "Const of ? dim": (('element_type="f32" shape="2,3"', 'element_type="f32" shape="?,3"'), False,
                       ("IR045", 14, 29, "shape")),
    "Const of -1 dim": (('element_type="f32" shape="2,3"', 'element_type="f32" shape="2,-1"'), False,
                        ("IR045", 14, 29, "shape")),
    "Const of an interval": (('element_type="f32" shape="2,3"', 'element_type="f32" shape="1..2,3"'), True,
                             ("IR045", 14, 29, "shape")),
    "Const of a negative dim": (('element_type="f32" shape="2,3"', 'element_type="f32" shape="-2,3"'), False,
                                ("IR022", 14, 29, "shape")),
    "no Result": ((RESULT, ""), True, ("IR069", 2, 1, None)),
    "no layers": ((NET[NET.index("\t<layers>"):NET.index("</net>")], ""), True, ("IR069", 2, 1, None)),
    "layer id a word": (('<layer id="1" name="w"', '<layer id="w1" name="w"'), False, ("IR017", 13, 10, "id")),
    "edge from-layer a word": (('from-layer="1"', 'from-layer="one"'), False, ("IR059", 52, 9, "from-layer")),
    "edge from-port a word": (('from-layer="1" from-port="0"', 'from-layer="1" from-port="p0"'), False,
                              ("IR059", 52, 24, "from-port")),
    "edge to-port a fraction": (('to-layer="2" to-port="1"', 'to-layer="2" to-port="1.0"'), False,
                                ("IR059", 52, 51, "to-port")),
    "dim a word": ((ADD_PORT_1, ADD_PORT_1.replace("<dim>2", "<dim>two")), False, ("IR043", 30, 6, None)),
    "dim empty": ((ADD_PORT_1, ADD_PORT_1.replace("<dim>2", "<dim>")), False, ("IR043", 30, 6, None)),
}


def _file(tmp_path: Path, name: str, change: tuple[str, str]) -> Path:
    """The net with the change made (a Result taken away takes its edge along)."""
    old, new = change
    assert old in NET
    path = tmp_path / f"{name.replace(' ', '_')}.xml"
    path.write_text(NET.replace(old, new, 1).replace(LAST_EDGE, "" if old == RESULT else LAST_EDGE))
    np.zeros(6, np.float32).tofile(path.with_suffix(".bin"))
    return path


def test_the_net_unchanged_is_valid_and_read(tmp_path):
    path = _file(tmp_path, "valid", (NET, NET))
    assert [d for d in validate_file(path).diagnostics if d.severity != "note"] == [] and openvino_reads(path)


@pytest.mark.parametrize("name", CASES)
def test_each_refusal_is_one_finding_at_its_place(tmp_path, name):
    change, reads, (code, line, column, attribute) = CASES[name]
    path = _file(tmp_path, name, change)
    assert openvino_reads(path) == reads  # what OpenVINO does with it, as the message says
    found = [d for d in validate_file(path).diagnostics if d.severity == "error"]
    assert [(d.code, d.line, d.column, d.attribute) for d in found if d.code == code] == [(code, line, column,
                                                                                          attribute)], found


@pytest.mark.parametrize("name", ["no Result", "no layers", "Const of ? dim", "version without the op", "dim a word",
                                  "edge from-port a word"])
def test_these_are_the_only_finding_of_their_file(tmp_path, name):
    change, _, (code, *_) = CASES[name]
    assert [d.code for d in validate_file(_file(tmp_path, name, change)).diagnostics if d.severity != "note"] == [code]


def test_a_layer_and_the_edges_naming_it_by_a_word_are_a_finding_each(tmp_path):
    """No layer lacks its edges then: the ids themselves are what OpenVINO refuses."""
    path = tmp_path / "words.xml"
    path.write_text(NET.replace('<layer id="1" name="w"', '<layer id="w1" name="w"').replace('from-layer="1"',
                                                                                            'from-layer="w1"'))
    np.zeros(6, np.float32).tofile(path.with_suffix(".bin"))
    assert not openvino_reads(path)
    assert [(d.code, d.line, d.attribute) for d in validate_file(path).diagnostics if d.severity != "note"] == [
        ("IR017", 13, "id"), ("IR059", 52, "from-layer")]
