"""Where validate's findings point: a missing port named by the ids written, and each element
of a line that holds several (a one-line port's dims, a one-line net's layers, ports and edges)
at its own column."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from irtool.validate import validate_file

FORWARD = Path(__file__).resolve().parent.parent / "samples" / "ir" / "valid" / "gru_sequence_forward.xml"


def _without_port(text: str, port_id: str) -> str:
    """The GRUSequence layer's port ``port_id`` deleted (its edge left as it was)."""
    start = text.index('<port id="%s"' % port_id, text.index('name="gru_sequence"'))
    end = text.index("</port>", start) + len("</port>")
    return text[:start] + text[end:]


def _findings(path: Path, code: str) -> list:
    return [d for d in validate_file(path).diagnostics if d.code == code]


@pytest.mark.parametrize("port_id, side, name", [
    ("0", "input", "X"), ("1", "input", "initial_hidden_state"), ("2", "input", "sequence_lengths"),
    ("4", "input", "R"), ("5", "input", "B"), ("6", "output", "Y"), ("7", "output", "Ho"),
])
def test_a_missing_port_is_named_by_the_ids_written(tmp_path, port_id, side, name):
    path = tmp_path / "m.xml"
    path.write_text(_without_port(FORWARD.read_text(), port_id))
    [finding] = _findings(path, "IR030")
    assert finding.port_id == port_id
    assert f"{side} {int(port_id) - (6 if side == 'output' else 0)} ({name}) is missing" in finding.message


def test_a_missing_output_after_a_missing_input_keeps_the_written_numbering(tmp_path):
    path = tmp_path / "m.xml"
    path.write_text(_without_port(_without_port(FORWARD.read_text(), "2"), "6"))
    assert sorted(d.port_id for d in _findings(path, "IR030")) == ["2", "6"]


def _one_line_port(text: str, port_id: str, dims: list[str]) -> str:
    start = text.index('<port id="%s"' % port_id, text.index('name="gru_sequence"'))
    end = text.index("</port>", start) + len("</port>")
    head = text[start:text.index(">", start) + 1]
    return text[:start] + head + "".join(f"<dim>{d}</dim>" for d in dims) + "</port>" + text[end:]


def _column_text(path: Path, line: int, column: int, length: int) -> str:
    return path.read_text().split("\n")[line - 1][column - 1:column - 1 + length]


@pytest.mark.parametrize("dims, bad", [(["7", "1", "4"], 0), (["2", "7", "4"], 1), (["2", "1", "7"], 2)])
def test_each_dim_of_a_one_line_port_has_its_own_column(tmp_path, dims, bad):
    path = tmp_path / "m.xml"
    path.write_text(_one_line_port(FORWARD.read_text(), "1", dims))
    [finding] = _findings(path, "IR041")
    assert f"dim {bad} is 7" in finding.message
    assert _column_text(path, finding.line, finding.column, len("<dim>7")) == "<dim>7"


def test_a_one_line_net_points_at_each_layer_port_dim_and_attribute(tmp_path):
    text = " ".join(FORWARD.read_text().replace("<dim>12</dim>", "<dim>13</dim>").split())
    text = text.replace('<data shape="1,12,4" element_type="f32"', '<data shape="1,12,4" element_type="f33"')
    assert 'element_type="f33"' in text
    path = tmp_path / "m.xml"
    path.write_text(text)
    findings = validate_file(path).diagnostics
    assert {d.line for d in findings} == {1}
    for d in findings:
        at = text[d.column - 1:]
        if d.attribute is not None:
            assert at.startswith(d.attribute + "=")
            assert text.rfind("<layer ", 0, d.column) == text.index(f'<layer id="{d.layer_id}"')
        elif "dim 1 is 13" in d.message:
            assert at.startswith("<dim>13</dim>")
            layer_at = text.index(f'<layer id="{d.layer_id}"')
            port_at = text.index(f'<port id="{d.port_id}"', layer_at)
            assert text.rfind("<port ", 0, d.column) == port_at
    columns = [d.column for d in findings]
    assert len(set(columns)) == len(columns)
    assert any(d.attribute == "element_type" for d in findings)
    assert {d.code for d in findings} >= {"IR041", "IR044"}


def test_edges_on_one_line_each_have_their_column(tmp_path):
    text = FORWARD.read_text()
    start, end = text.index("<edges>"), text.index("</edges>")
    edges = re.sub(r">\s+<", "><", text[start:end])
    edges = edges.replace('from-layer="4" from-port="0" to-layer="6" to-port="4"',
                          'from-layer="4" from-port="0" to-layer="6" to-port="9"')
    assert 'to-port="9"' in edges
    path = tmp_path / "m.xml"
    path.write_text(text[:start] + edges + text[end:])
    [finding] = _findings(path, "IR062")
    assert _column_text(path, finding.line, finding.column, 200).startswith(
        '<edge from-layer="4" from-port="0" to-layer="6" to-port="9"')
