"""Encodings and namespaces as OpenVINO's reader (pugixml) takes them, each form tried on
``read_model`` beside irtool validate: which declared encodings it decodes, UTF-16 and UTF-32 with
and without a byte order mark, bytes that are not UTF-8, a default namespace on <net>."""
from __future__ import annotations

from pathlib import Path

import pytest

from irtool.validate import validate_file

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "ir" / "valid" / "gru_cell.xml"
BODY = SAMPLE.read_text(encoding="utf-8").split("?>", 1)[1].replace('name="X"', 'name="X\u00e9"')


def _openvino_names(path: Path) -> list[str] | None:
    """The Parameters' names as OpenVINO reads them; None where it refuses the file, [] where its
    Python API cannot give them (bytes that are not UTF-8)."""
    import openvino as ov

    try:
        model = ov.Core().read_model(str(path))
    except RuntimeError:
        return None
    try:
        return [p.get_friendly_name() for p in model.get_parameters()]
    except UnicodeDecodeError:
        return []


# declared encoding -> (OpenVINO decodes it: names as the file says, the code irtool reports or None)
DECLARED = {
    "ISO-8859-1": (True, None), "iso-8859-1": (True, None), "latin1": (True, None), "LATIN1": (True, None),
    "UTF-8": (True, None), "utf8": (True, None),
    "latin-1": (False, "IR006"), "ISO_8859-1": (False, "IR006"), "ISO-8859-2": (False, "IR006"),
    "ISO-8859-15": (False, "IR006"), "windows-1252": (False, "IR006"), "cp1252": (False, "IR006"),
}


@pytest.mark.parametrize("declared", list(DECLARED))
def test_declared_encodings(tmp_path, declared):
    decodes, code = DECLARED[declared]
    path = tmp_path / "e.xml"
    path.write_bytes(f'<?xml version="1.0" encoding="{declared}"?>{BODY}'.encode(declared))
    names = _openvino_names(path)
    assert names is not None and ("X\u00e9" in names) is decodes
    diagnostics = validate_file(path).diagnostics
    assert [d.code for d in diagnostics] == ([code] if code else []), diagnostics
    if code:
        [d] = diagnostics
        assert d.severity == "error" and (d.line, d.column) == (5, 24) and repr(declared) in d.message


@pytest.mark.parametrize("declared", ["bogus", "UTF-16"])
def test_a_declaration_no_codec_reads_is_read_as_utf8(tmp_path, declared):
    """Neither OpenVINO nor irtool decode it: both read UTF-8 (and say so where a byte is past ASCII)."""
    path = tmp_path / "e.xml"
    path.write_bytes(f'<?xml version="1.0" encoding="{declared}"?>{BODY}'.encode())
    assert "X\u00e9" in _openvino_names(path)
    [d] = validate_file(path).diagnostics
    assert d.code == "IR006" and "neither OpenVINO's reader nor irtool decodes" in d.message and d.line == 5
    ascii_only = tmp_path / "a.xml"
    ascii_only.write_bytes(path.read_bytes().replace("X\u00e9".encode(), b"X"))
    assert validate_file(ascii_only).diagnostics == []


def test_bytes_the_declared_encoding_does_not_hold(tmp_path):
    path = tmp_path / "e.xml"
    path.write_bytes(f'<?xml version="1.0" encoding="cp1252"?>{BODY}'.encode("cp1252").replace(b"\xe9", b"\x81"))
    [d] = validate_file(path).diagnostics
    assert d.code == "IR001" and "is not cp1252" in d.message and "well-formed" not in d.message


def test_an_undecoded_declaration_of_an_ascii_file_is_fine(tmp_path):
    path = tmp_path / "e.xml"
    path.write_bytes(f'<?xml version="1.0" encoding="ISO-8859-2"?>{BODY}'.replace("\u00e9", "e").encode("ascii"))
    assert _openvino_names(path) and validate_file(path).diagnostics == []


@pytest.mark.parametrize("encoding, bom", [("utf-16-le", True), ("utf-16-be", True), ("utf-32-le", True),
                                           ("utf-32-be", True), ("utf-16-le", False), ("utf-16-be", False),
                                           ("utf-32-le", False), ("utf-32-be", False)])
def test_wide_encodings_are_read(tmp_path, encoding, bom):
    path = tmp_path / "w.xml"
    text = f'<?xml version="1.0" encoding="{encoding[:6].upper()}"?>{BODY}'
    path.write_bytes(("\ufeff" if bom else "").encode(encoding) + text.encode(encoding))
    assert "X\u00e9" in _openvino_names(path)
    assert validate_file(path).diagnostics == []
    broken = tmp_path / "b.xml"
    broken.write_bytes(text.replace('hidden_size="4"', 'hidden_size="5"').encode(encoding))
    assert "IR041" in {d.code for d in validate_file(broken).diagnostics}


def test_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "n.xml"
    path.write_bytes(f'<?xml version="1.0"?>{BODY}'.encode().replace("X\u00e9".encode(), b"X\xe9"))
    assert _openvino_names(path) == []  # read, and the Python API fails on the name
    [d] = validate_file(path).diagnostics
    assert d.code == "IR001" and d.line == 5 and "not well-formed" in d.message
    assert "OpenVINO reads the file nonetheless, keeping the bytes" in d.message


@pytest.mark.parametrize("root, reads, codes", [
    ('<net xmlns="http://x" name="n" version="11">', True, ["IR007"]),
    ("<net xmlns='http://x' name=\"n\" version=\"11\">", True, ["IR007"]),
    ('<net name="n" version="11" xmlns = "">', True, ["IR007"]),
])
def test_a_default_namespace_is_read_as_openvino_reads_it(tmp_path, root, reads, codes):
    path = tmp_path / "ns.xml"
    path.write_text(f'<?xml version="1.0"?>{BODY}'.replace('<net name="gru_cell" version="11">', root))
    assert (_openvino_names(path) is not None) is reads
    diagnostics = validate_file(path).diagnostics
    assert [d.code for d in diagnostics] == codes, diagnostics
    assert all(d.severity == "warning" and d.line == 3 and d.column == root.index("xmlns") + 1 for d in diagnostics)
    broken = tmp_path / "b.xml"
    broken.write_text(path.read_text().replace('hidden_size="4"', 'hidden_size="5"'))
    assert "IR041" in {d.code for d in validate_file(broken).diagnostics}
