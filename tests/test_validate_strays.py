"""IR016: a <layer> outside <layers> or an <edge> outside <edges>, which OpenVINO ignores; a
TensorIterator's or Loop's <back_edges> are where edges belong."""
from __future__ import annotations

from pathlib import Path

from irtool.validate import validate_file

ROOT = Path(__file__).resolve().parent.parent


def test_a_loops_back_edges_are_no_strays():
    """A Loop as OpenVINO's TensorFlow Lite frontend converted it (samples/make_tf_models.py), with
    four back edges: none is a finding."""
    report = validate_file(ROOT / "samples" / "models" / "tf" / "keras_gru_fault.xml")
    assert "back_edges" in (ROOT / "samples" / "models" / "tf" / "keras_gru_fault.xml").read_text()
    assert [d for d in report.diagnostics if d.code == "IR016"] == []


def test_an_edge_outside_edges_is_a_warning_at_its_line(tmp_path):
    text = (ROOT / "samples" / "ir" / "valid" / "gru_cell.xml").read_text()
    head, tail = text.rsplit("</net>", 1)
    stray = '\t<edge from-layer="0" from-port="0" to-layer="9" to-port="0" />\n'
    (tmp_path / "stray.xml").write_text(head + stray + "</net>" + tail)
    [finding] = validate_file(tmp_path / "stray.xml").diagnostics
    assert (finding.code, finding.severity, finding.line) == ("IR016", "warning", head.count("\n") + 1)
    assert finding.message == "a <edge> outside <edges>: OpenVINO ignores it"
