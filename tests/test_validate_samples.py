"""Every bundled sample gets exactly the diagnostics its comment says, at the right place."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest_validate import openvino_reads

from irtool.cli.program import main
from irtool.validate import validate_file

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "ir"
EXPECT = re.compile(r"expect: (.*?) -->")


def expected(path: Path) -> list[str]:
    match = EXPECT.search(path.read_text()[:2000])
    assert match, f"{path} says in no comment what it expects"
    return match.group(1).split("; ")


def found(path: Path) -> list[str]:
    return [" ".join(x for x in (d.code, f"line={d.line}", d.layer_id and f"layer={d.layer_id}",
                                 d.port_id and f"port={d.port_id}", d.attribute and f"attribute={d.attribute}") if x)
            for d in validate_file(path).diagnostics]


@pytest.mark.parametrize("path", sorted((SAMPLES / "valid").glob("*.xml")), ids=lambda p: p.stem)
def test_valid_samples_have_no_finding(path):
    assert validate_file(path).diagnostics == []


def test_valid_directory_exits_0(capsys):
    assert main(["validate", str(SAMPLES / "valid")]) == 0
    assert "0 errors, 0 warnings" in capsys.readouterr().out


@pytest.mark.parametrize("path", sorted((SAMPLES / "broken").glob("*.xml")), ids=lambda p: p.stem)
def test_broken_samples_get_their_diagnostics_and_exit_1(path, capsys):
    assert found(path) == expected(path)
    assert main(["validate", str(path)]) == 1
    assert "error[" in capsys.readouterr().out


@pytest.mark.parametrize("path", sorted((SAMPLES / "warnings").glob("*.xml")), ids=lambda p: p.stem)
def test_warning_samples_get_their_warnings_and_exit_0(path):
    assert found(path) == expected(path)
    assert main(["validate", str(path)]) == 0


@pytest.mark.parametrize("path", sorted((SAMPLES / "notes").glob("*.xml")), ids=lambda p: p.stem)
def test_note_samples_get_their_notes_only_and_exit_0(path, capsys):
    assert found(path) == expected(path)
    assert {d.severity for d in validate_file(path).diagnostics} == {"note"}
    assert main(["validate", "--quiet-notes", str(path)]) == 0
    assert capsys.readouterr().out == "1 file checked: 0 errors, 0 warnings, 0 notes\n"


REFUSED = "(OpenVINO refuses the file)"


@pytest.mark.parametrize("path", sorted(p for p in (SAMPLES / "broken").glob("*.xml") if REFUSED in p.read_text()[:2000]),
                         ids=lambda p: p.stem)
def test_samples_said_refused_are_refused_by_openvino(path):
    """What the samples say OpenVINO refuses, it does refuse (measured, not assumed)."""
    assert not openvino_reads(path)


@pytest.mark.parametrize("path", sorted((SAMPLES / "notes").glob("*.xml")) + sorted((SAMPLES / "valid").glob("*.xml")),
                         ids=lambda p: p.stem)
def test_valid_and_note_samples_are_read_by_openvino(path):
    assert openvino_reads(path)


PAGE_EXAMPLES = {
    # the spec pages' examples pasted as they are: exactly their real defects
    "GRUCell-3.page.xml": ["IR041 line=21 port=4"],
    "GRUSequence-5.page.xml": ["IR020 line=2 attribute=direction", "IR026 line=2 attribute=activations"],
    "LSTMSequence-1.page.xml": ["IR020 line=2 attribute=direction", "IR026 line=2 attribute=activations"],
    "GRUCell-3.net.xml": ["IR041 line=69 layer=5 port=4"],
    "GRUSequence-5.net.xml": ["IR020 line=63 layer=6 attribute=direction", "IR026 line=63 layer=6 attribute=activations"],
    "LSTMSequence-1.net.xml": ["IR012 line=72 layer=7 attribute=version", "IR020 line=73 layer=7 attribute=direction",
                               "IR026 line=73 layer=7 attribute=activations"],
}


@pytest.mark.parametrize("name", sorted(PAGE_EXAMPLES))
def test_spec_page_examples_get_exactly_their_defects(name):
    path = SAMPLES / "spec-examples" / name
    assert found(path) == PAGE_EXAMPLES[name]
    shape_codes = {"IR040", "IR041", "IR042", "IR043", "IR044"}
    if "GRUCell" not in name:
        assert not shape_codes & {d.code for d in validate_file(path).diagnostics}


def test_gru_cell_page_example_message_names_port_and_rule(capsys):
    assert main(["validate", str(SAMPLES / "spec-examples" / "GRUCell-3.page.xml")]) == 1
    out = capsys.readouterr().out
    assert ("GRUCell-3.page.xml:21:13: error[IR041] layer <GRUCell> port 4 (B): dim 0 is 768, "
            "expected 4*hidden_size = 512 (linear_before_reset=true)") in out


def test_page_example_placeholders_are_read_as_blanks():
    text = (SAMPLES / "spec-examples" / "GRUSequence-5.page.xml").read_text()
    assert '<layer ... type="GRUSequence" ...>' in text  # pasted as it is
