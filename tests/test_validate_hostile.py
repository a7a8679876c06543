"""Hostile input to `irtool validate`: XXE, entity bombs, truncated, binary, empty, huge
and foreign files, and unreadable paths.

Each case checks the diagnostic code, what its message says and the exit code, through
``irtool.cli.program.main`` in this process; the cases that could read a file, block or expand
something also run ``python -m irtool validate`` in a child process with a timeout, so a
parser that opened the named pipe, fetched a URL or expanded the bomb would fail the test
by blocking, connecting or running out the clock, and a traceback would show on stderr.
"""
from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from conftest_validate import openvino_reads

from irtool.cli.program import main
from irtool.core.diagnostics import CODES
from irtool.ir import IRParseError, parse_ir_bytes
from irtool.validate import validate_file

CHILD_TIMEOUT = 20  # seconds; generous: each child validates a few hundred bytes


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["validate", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_child(*argv: str) -> subprocess.CompletedProcess:
    """``python -m irtool validate ARGV``; a TimeoutExpired here means the parser blocked or ran away."""
    done = subprocess.run([sys.executable, "-m", "irtool", "validate", *argv], capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT, env={**os.environ, "IRTOOL_DEBUG": ""})
    assert "Traceback" not in done.stderr, done.stderr
    return done


def json_diagnostics(out: str) -> list[dict]:
    [file] = json.loads(out)["files"]
    return file["diagnostics"]


@pytest.fixture(scope="module")
def gru_cell_ir(tmp_path_factory) -> tuple[bytes, bytes]:
    """A valid single-GRUCell net written by OpenVINO: (xml, bin)."""
    import numpy as np
    import openvino as ov
    from openvino import opset1, opset3

    rng = np.random.default_rng(7)
    x = opset1.parameter([2, 5], ov.Type.f32, name="X")
    h = opset1.parameter([2, 4], ov.Type.f32, name="H")
    weights = [opset1.constant(rng.standard_normal(s).astype(np.float32)) for s in ((12, 5), (12, 4), (12,))]
    cell = opset3.gru_cell(x, h, *weights, 4)
    path = tmp_path_factory.mktemp("gru_cell") / "gru_cell.xml"
    ov.save_model(ov.Model([opset1.result(cell)], [x, h], "gru_cell"), str(path), compress_to_fp16=False)
    return path.read_bytes(), path.with_suffix(".bin").read_bytes()


def test_the_base_net_is_valid(gru_cell_ir, tmp_path, capsys):
    """The net the other cases break is itself clean, so what they find is what they broke."""
    xml, weights = gru_cell_ir
    (tmp_path / "gru_cell.xml").write_bytes(xml)
    (tmp_path / "gru_cell.bin").write_bytes(weights)
    assert run_cli(capsys, str(tmp_path / "gru_cell.xml")) == (0, "1 file checked: 0 errors, 0 warnings, 0 notes\n", "")


# ---------------------------------------------------------------- DTDs, external entities, XXE

# Each payload names TARGET where a file path or URL goes; the body after the DTD is a real net.
NET = b'<net name="n" version="11"><layers>BODY</layers><edges/></net>\n'
XXE_PAYLOADS = {
    "general entity in content": (b'<!DOCTYPE net [<!ENTITY x SYSTEM "TARGET">]>', b"&x;", b"n"),
    "general entity in attribute": (b'<!DOCTYPE net [<!ENTITY x SYSTEM "TARGET">]>', b"", b"&x;"),
    "parameter entity": (b'<!DOCTYPE net [<!ENTITY % p SYSTEM "TARGET"> %p;]>', b"", b"n"),
    "parameter entity defining a general one": (
        b'<!DOCTYPE net [<!ENTITY % file SYSTEM "TARGET"><!ENTITY % def "<!ENTITY x \'%file;\'>"> %def;]>',
        b"&x;", b"n"),
    "external DTD": (b'<!DOCTYPE net SYSTEM "TARGET">', b"", b"n"),
    "external DTD by public id": (b'<!DOCTYPE net PUBLIC "-//irtool//hostile//EN" "TARGET">', b"", b"n"),
}


def xxe_document(payload: str, target: str, comments: int = 0) -> bytes:
    doctype, body, name = XXE_PAYLOADS[payload]
    prolog = b'<?xml version="1.0" encoding="UTF-8"?>\n' + b"<!-- a comment -->\n" * comments
    net = NET.replace(b"BODY", body).replace(b'name="n"', b'name="' + name + b'"')
    return prolog + doctype.replace(b"TARGET", target.encode()) + b"\n" + net


@pytest.fixture
def secret(tmp_path) -> tuple[Path, str]:
    token = f"irtool-secret-{uuid.uuid4().hex}"
    path = tmp_path / "secret.txt"
    path.write_text(token + "\n")
    return path, token


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
@pytest.mark.parametrize("payload", sorted(XXE_PAYLOADS))
def test_xxe_is_refused_unread(payload, fmt, secret, tmp_path, capsys):
    path, token = secret
    xml = tmp_path / "xxe.xml"
    xml.write_bytes(xxe_document(payload, path.as_uri(), comments=2))
    code, out, err = run_cli(capsys, "--format", fmt, str(xml))
    assert code == 1 and err == ""
    assert token not in out
    assert "IR002" in out and "DTD" in out
    report = validate_file(xml)
    assert [(d.code, d.line, d.column) for d in report.diagnostics] == [("IR002", 4, 1)]
    assert "never loads DTDs or expands entities" in report.diagnostics[0].message


@pytest.mark.parametrize("payload", sorted(XXE_PAYLOADS))
def test_xxe_opens_nothing(payload, tmp_path):
    """The entity or DTD names a FIFO that nobody writes to: opening it would block the child."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    xml = tmp_path / "xxe.xml"
    xml.write_bytes(xxe_document(payload, fifo.as_uri()))
    done = run_child("--format", "json", str(xml))
    assert done.returncode == 1
    assert [d["code"] for d in json_diagnostics(done.stdout)] == ["IR002"]


@pytest.mark.parametrize("payload", sorted(XXE_PAYLOADS))
def test_the_parser_itself_opens_nothing(payload, tmp_path):
    """make_parser() is shared (irtool/ir/defaults.py parses with it too), and the streamed
    read of a <net> uses its options: even without irtool's DOCTYPE refusal in front of
    them, lxml so configured must not open what a DTD names.  (collect_ids=False made
    libxml2 open it: see _PARSER_OPTIONS.)"""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    xml = tmp_path / "xxe.xml"
    xml.write_bytes(xxe_document(payload, fifo.as_uri()))
    code = ("import io, sys\nfrom lxml import etree\nfrom irtool.ir import make_parser\n"
            "from irtool.ir.parse import _PARSER_OPTIONS\n"
            "data = open(sys.argv[1], 'rb').read()\n"
            "try:\n    etree.fromstring(data, make_parser())\n"
            "except etree.XMLSyntaxError as error:\n    print('refused:', error)\n"
            "try:\n    list(etree.iterparse(io.BytesIO(data), events=('end',), **_PARSER_OPTIONS))\n"
            "except etree.XMLSyntaxError as error:\n    print('refused:', error)\nprint('done')\n")
    done = subprocess.run([sys.executable, "-c", code, str(xml)], capture_output=True, text=True,
                          timeout=CHILD_TIMEOUT)
    assert done.returncode == 0 and done.stdout.endswith("done\n"), done.stderr


@pytest.mark.parametrize("payload", ["external DTD", "external DTD by public id", "parameter entity"])
def test_xxe_over_the_network_connects_nowhere(payload, tmp_path):
    """The DTD points at a port this test listens on: any connection attempt would be accepted."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        server.settimeout(0.5)
        url = f"http://127.0.0.1:{server.getsockname()[1]}/x.dtd"
        xml = tmp_path / "xxe.xml"
        xml.write_bytes(xxe_document(payload, url))
        done = run_child("--format", "json", str(xml))
        assert [d["code"] for d in json_diagnostics(done.stdout)] == ["IR002"]
        with pytest.raises(socket.timeout):
            server.accept()


# ---------------------------------------------------------------- entity expansion bombs

def billion_laughs(levels: int = 10) -> bytes:
    entities = [b'<!ENTITY lol0 "lol">']
    entities += [b"<!ENTITY lol%d \"%s\">" % (i, b"&lol%d;" % (i - 1) * 10) for i in range(1, levels)]
    return (b'<?xml version="1.0"?>\n<!DOCTYPE net [\n' + b"\n".join(entities) + b"\n]>\n"
            + NET.replace(b"BODY", b"&lol%d;" % (levels - 1)))


def quadratic_blowup(size: int = 50_000, uses: int = 50_000) -> bytes:
    return (b'<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY a "' + b"a" * size + b'">]>\n'
            + NET.replace(b'name="n"', b'name="' + b"&a;" * uses + b'"'))


BOMBS = {"billion laughs": billion_laughs, "quadratic blowup": quadratic_blowup}


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_entity_bomb_is_refused_unexpanded(bomb, tmp_path, capsys):
    xml = tmp_path / "bomb.xml"
    xml.write_bytes(BOMBS[bomb]())
    code, out, err = run_cli(capsys, "--format", "json", str(xml))
    assert code == 1 and err == ""
    [diagnostic] = json_diagnostics(out)
    assert diagnostic["code"] == "IR002" and diagnostic["line"] == 2 and "entities" in diagnostic["message"]
    assert "lollol" not in out and "aaaa" not in out
    # in a child that must finish well inside the timeout: an expanding parser would not
    done = run_child(str(xml))
    assert done.returncode == 1 and "error[IR002]" in done.stdout


def test_entity_bomb_bytes_are_refused_before_lxml(monkeypatch):
    """parse_ir_bytes refuses the DTD from the prolog alone: lxml is never called."""
    import irtool.ir.parse as parse_module

    def no_lxml(*args, **kwargs):
        raise AssertionError("lxml was asked to parse a document with a DTD")

    monkeypatch.setattr(parse_module.etree, "fromstring", no_lxml)
    monkeypatch.setattr(parse_module.etree, "iterparse", no_lxml)
    for make in BOMBS.values():
        with pytest.raises(IRParseError) as caught:
            parse_ir_bytes(make())
        assert caught.value.kind == "dtd"


def test_many_comments_before_the_root_do_not_slow_the_prolog_scan():
    """The prolog is scanned in one pass (a backtracking regex took 2**n steps for n comments)."""
    data = b'<?xml version="1.0"?>\n' + b"<!-- c -->" * 5000 + b"<!DOCTYPE net>\n" + NET.replace(b"BODY", b"")
    done = subprocess.run([sys.executable, "-c", "import sys\nfrom irtool.ir import parse_ir_bytes, IRParseError\n"
                           "try:\n    parse_ir_bytes(sys.stdin.buffer.read())\n"
                           "except IRParseError as e:\n    print(e.kind)\n"],
                          input=data, capture_output=True, timeout=CHILD_TIMEOUT)
    assert done.stdout == b"dtd\n"


# ---------------------------------------------------------------- truncated, binary, empty, foreign

@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.999])
def test_truncated_file_is_ir001_with_its_line(fraction, gru_cell_ir, tmp_path, capsys):
    xml, _ = gru_cell_ir
    cut = xml[: int(len(xml) * fraction)]
    path = tmp_path / "cut.xml"
    path.write_bytes(cut)
    code, out, err = run_cli(capsys, "--format", "json", str(path))
    assert code == 1 and err == ""
    [diagnostic] = json_diagnostics(out)
    assert diagnostic["code"] == "IR001" and diagnostic["severity"] == "error"
    assert diagnostic["line"] == cut.count(b"\n") + 1
    assert "truncated" in diagnostic["message"] and "not well-formed" in diagnostic["message"]


def random_bytes(size: int = 4096) -> bytes:
    return random.Random(20261121).randbytes(size)


@pytest.mark.parametrize("content", ["random bytes", "the .bin renamed .xml", "NUL after an XML prolog"])
def test_binary_file_is_ir001_binary(content, gru_cell_ir, tmp_path, capsys):
    data = {"random bytes": random_bytes(), "the .bin renamed .xml": gru_cell_ir[1],
            "NUL after an XML prolog": b'<?xml version="1.0"?>\n<net>\x00\x01\x02</net>'}[content]
    path = tmp_path / "binary.xml"
    path.write_bytes(data)
    code, out, err = run_cli(capsys, str(path))
    assert code == 1 and err == ""
    assert out.splitlines()[0].startswith(f"{path}:1:1: error[IR001] file holds binary data")
    assert len(out.splitlines()) == 2  # the diagnostic and the summary: one clear error


@pytest.mark.parametrize("data", [b"", b"\n", b"  \t\r\n  \n"], ids=["zero bytes", "newline", "white space"])
def test_empty_file_is_ir001_empty(data, tmp_path, capsys):
    path = tmp_path / "empty.xml"
    path.write_bytes(data)
    code, out, err = run_cli(capsys, "--format", "json", str(path))
    assert code == 1 and err == ""
    [diagnostic] = json_diagnostics(out)
    assert (diagnostic["code"], diagnostic["message"]) == ("IR001", "file is empty")


@pytest.mark.parametrize("data, needle", [
    (b"<net version='11'><layers><layer id='0'></layers></net>", "Opening and ending tag mismatch"),
    (b"<net version='11'>" + b"<a>" * 300 + b"</a>" * 300 + b"</net>", "depth"),
    (b"<net version='11'><layers/></net><net/>", "Extra content"),
    (b"<net version='11' version='10'/>", "redefined"),
    (b"\xef\xbb\xbf<net version='11'><layers>\xff\xfe</layers></net>", "encoding"),
], ids=["tag mismatch", "too deep", "two roots", "duplicate attribute", "bad utf-8"])
def test_unreadable_xml_is_ir001_or_ir008_naming_the_fault(data, needle, tmp_path, capsys):
    path = tmp_path / "malformed.xml"
    path.write_bytes(data)
    code, out, err = run_cli(capsys, "--format", "json", str(path))
    assert code == 1 and err == ""
    [diagnostic] = json_diagnostics(out)
    expected = "IR008" if needle == "depth" else "IR001"  # too deep: well-formed, past what irtool reads
    assert diagnostic["code"] == expected and needle.lower() in diagnostic["message"].lower()
    assert diagnostic["line"] is not None
    assert "truncated" not in diagnostic["message"]  # each of these files ends where its root does


@pytest.mark.parametrize("root", [b"<foo/>", b"<html><body>not IR</body></html>", b"<layers><layer/></layers>",
                                  b"<Net version='11'/>"])
def test_foreign_root_is_ir004_naming_it(root, tmp_path, capsys):
    path = tmp_path / "foreign.xml"
    path.write_bytes(b'<?xml version="1.0"?>\n<!-- not IR -->\n' + root + b"\n")
    code, out, err = run_cli(capsys, "--format", "json", str(path))
    assert code == 1 and err == ""
    [diagnostic] = json_diagnostics(out)
    tag = root[1:].split(b">")[0].split(b"/")[0].split(b" ")[0].decode()
    assert diagnostic["code"] == "IR004" and diagnostic["line"] == 3
    assert f"root element is <{tag}>" in diagnostic["message"] and "expected <net>" in diagnostic["message"]


# ---------------------------------------------------------------- absurd values

INT64_MAX = "9223372036854775807"
ABSURD = {
    # name: (old text, new text, expected (code, layer_id, port_id, attribute), words of the message)
    "dim of 5000 digits": (b"<dim>5</dim>", b"<dim>" + b"7" * 5000 + b"</dim>", ("IR043", "0", "0", None),
                           "does not fit in 64 bits"),
    "dim past int64": (b"<dim>5</dim>", b"<dim>9223372036854775808</dim>", ("IR043", "0", "0", None),
                       "does not fit in 64 bits"),
    "dim in Arabic-Indic digits": (b"<dim>5</dim>", "<dim>\u0665</dim>".encode(), ("IR043", "0", "0", None),
                                   "is not a size"),
    "hidden_size of 5000 digits": (b'hidden_size="4"', b'hidden_size="' + b"4" * 5000 + b'"',
                                   ("IR022", "5", None, "hidden_size"), "does not fit in 64 bits"),
    "opset of 5000 digits": (b'version="opset3"', b'version="opset' + b"3" * 5000 + b'"',
                             ("IR014", "5", None, "version"), "is not one of OpenVINO's opsets"),
    "port id in Arabic-Indic digits": (b'<port id="4" precision', '<port id="\u0664" precision'.encode(),
                                       ("IR031", "5", "\u0664", None), "is not a non-negative integer"),
    "Const of 300 int64-max dims": (b'shape="12, 5"', b'shape="' + b",".join([INT64_MAX.encode()] * 300) + b'"',
                                    ("IR072", "2", None, "size"), "more than 2**64 bytes"),
    "name with a line break": (b'name="GRUCell_', b'name="line&#10;break', ("IR041", "5", "2", None),
                               "port 2 (W): dim 1 is 5, expected input_size = 6"),
}


@pytest.mark.parametrize("case", sorted(ABSURD))
def test_absurd_values_get_a_diagnostic_not_a_traceback(case, gru_cell_ir, tmp_path, capsys):
    """Values that once crashed the validator (Python's int() refuses 4300 digits; str(n) too) or
    slipped through it (int() reads any Unicode digit, OpenVINO only ASCII ones)."""
    old, new, (code, layer_id, port_id, attribute), words = ABSURD[case]
    xml, weights = gru_cell_ir
    assert old in xml
    data = xml.replace(old, new, 1)
    if case == "name with a line break":  # and a real defect on that layer, to have its name in a message
        data = data.replace(b"<dim>5</dim>\n\t\t\t\t</port>\n\t\t\t\t<port id=\"1\"", b"<dim>6</dim>\n\t\t\t\t</port>\n"
                            b"\t\t\t\t<port id=\"1\"", 1)
    path = tmp_path / "absurd.xml"
    path.write_bytes(data)
    path.with_suffix(".bin").write_bytes(weights)
    code_, out, err = run_cli(capsys, "--format", "json", str(path))
    assert code_ == (0 if CODES[code].severity != "error" else 1) and err == ""
    found = [d for d in json_diagnostics(out) if d["code"] == code]
    assert found, out
    assert (found[0]["layer_id"], found[0]["port_id"], found[0]["attribute"]) == (layer_id, port_id, attribute)
    assert words in found[0]["message"]
    text_code, text, _ = run_cli(capsys, str(path))  # and the text format keeps one line per diagnostic
    assert text_code == code_ and all(line.startswith(str(path)) for line in text.splitlines()[:-1])
    if case == "name with a line break":
        assert "line\nbreak" in found[0]["message"] and "layer 5 'line\\nbreak" in text


# ---------------------------------------------------------------- size limit

@pytest.mark.parametrize("limit_offset", [-1, -1000])
def test_file_over_max_size_is_ir003_naming_the_limit(limit_offset, gru_cell_ir, tmp_path, capsys):
    xml, weights = gru_cell_ir
    path = tmp_path / "gru_cell.xml"
    path.write_bytes(xml)
    path.with_suffix(".bin").write_bytes(weights)
    limit = len(xml) + limit_offset
    code, out, err = run_cli(capsys, "--format", "json", "--max-size", str(limit), str(path))
    assert code == 1 and err == ""
    [diagnostic] = json_diagnostics(out)
    assert diagnostic["code"] == "IR003"
    assert f"file is {len(xml)} bytes" in diagnostic["message"]
    assert f"limit of {limit} bytes" in diagnostic["message"] and "--max-size" in diagnostic["message"]
    # at the limit exactly the file is read, and is valid
    assert run_cli(capsys, "--max-size", str(len(xml)), str(path))[0] == 0


@pytest.mark.parametrize("padding", [65_530, 70_000, 200_000])
def test_line_numbers_past_65535_are_exact(padding, gru_cell_ir, tmp_path, capsys):
    """libxml2 keeps a line number above 65535 on the text after the element's start tag, and
    lxml's sourceline gives the line where that text ends: one too many for most layers,
    ports and edges (and 65535 for all of them, were the white space dropped)."""
    xml, weights = gru_cell_ir
    data = xml.replace(b"<layers>", b"<layers>" + b"\n" * padding, 1)
    faults = {"IR013": (b' type="GRUCell" version="opset3"', b' type="GRUCell"'),  # at the <layer>
              "IR062": (b'to-port="4"', b'to-port="9"'),  # at the <edge>
              "IR043": (b"<dim>5</dim>", b"<dim>?5</dim>"),  # at the <dim>
              "IR024": (b'hidden_size="4"', b'hidden_size="-4"'),  # at the attribute
              "IR031": (b'<port id="1" precision', b'<port id="x" precision')}  # at the <port>
    for old, new in faults.values():
        data = data.replace(old, new, 1)
    path = tmp_path / "long.xml"
    path.write_bytes(data)
    path.with_suffix(".bin").write_bytes(weights)
    code, out, _ = run_cli(capsys, "--format", "json", str(path))
    lines = {d["code"]: d["line"] for d in json_diagnostics(out)}
    assert code == 1
    for fault, (_, new) in faults.items():
        assert lines[fault] == data[: data.index(new)].count(b"\n") + 1, fault


def test_max_size_is_checked_before_reading(tmp_path):
    """A sparse 1 GiB file over the limit is refused from its size alone."""
    path = tmp_path / "huge.xml"
    with open(path, "wb") as handle:
        handle.truncate(1 << 30)
    report = validate_file(path, max_bytes=1 << 20)
    assert [(d.code, d.severity) for d in report.diagnostics] == [("IR003", "error")]
    assert f"file is {1 << 30} bytes, over the limit of {1 << 20} bytes" in report.diagnostics[0].message


def test_a_long_version_is_cut_short_in_the_message(gru_cell_ir, tmp_path, capsys):
    """IR014 quotes the layer's version: the first 40 characters of it, and its length."""
    xml, weights = gru_cell_ir
    path = tmp_path / "long_version.xml"
    path.write_bytes(xml.replace(b'version="opset3"', b'version="opset' + b"3" * 5000 + b'"', 1))
    path.with_suffix(".bin").write_bytes(weights)
    code, out, err = run_cli(capsys, "--format", "json", str(path))
    [d] = [d for d in json_diagnostics(out) if d["code"] == "IR014"]
    shown = "opset" + "3" * 35
    assert f"attribute version: {shown!r}... (5005 characters) is not one of OpenVINO's opsets" in d["message"]
    assert len(d["message"]) < 300


# ---------------------------------------------------------------- unreadable paths

@pytest.mark.parametrize("make, needle", [
    (lambda tmp: tmp / "missing.xml", "cannot read {tmp}/missing.xml: no such file"),
    (lambda tmp: (tmp / "empty_dir").mkdir() or tmp / "empty_dir", "no *.xml or *.onnx file under {tmp}/empty_dir"),
    (lambda tmp: (tmp / "d").mkdir() or (tmp / "d" / "notes.txt").write_text("x") and tmp / "d",
     "no *.xml or *.onnx file under {tmp}/d"),
], ids=["missing file", "empty directory", "directory without xml"])
def test_unreadable_path_exits_2_with_one_line(make, needle, tmp_path, capsys):
    path = make(tmp_path)
    code, out, err = run_cli(capsys, str(path))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("irtool: error: ")
    assert needle.format(tmp=tmp_path) in err


def test_a_fifo_is_not_a_regular_file_and_is_never_waited_on(tmp_path):
    """Nobody writes to the FIFO: opening it to read would block (hence the children), and it
    is no missing file."""
    fifo = tmp_path / "pipe.xml"
    os.mkfifo(fifo)
    done = run_child(str(fifo))
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"irtool: error: cannot read {fifo}: "
                                                                   f"not a regular file\n")
    code = "import sys\nfrom irtool.validate import validate_file\ntry:\n    validate_file(sys.argv[1])\n" \
           "except OSError as error:\n    print(error.strerror)\n"
    library = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, text=True,
                             timeout=CHILD_TIMEOUT)
    assert library.stdout == "not a regular file\n", library.stderr


def test_a_file_that_cannot_be_opened_exits_2_with_one_line(gru_cell_ir, tmp_path, capsys, monkeypatch):
    """As for a file without read permission (which root, running the tests, does not lack)."""
    import irtool.ir.parse as parse_module

    path = tmp_path / "locked.xml"
    path.write_bytes(gru_cell_ir[0])

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(parse_module, "read_ir_bytes", refuse)
    code, out, err = run_cli(capsys, str(path))
    assert (code, out, err) == (2, "", f"irtool: error: cannot read {path}: Permission denied\n")


def test_one_unreadable_path_among_good_ones_exits_2(gru_cell_ir, tmp_path, capsys):
    good = tmp_path / "good.xml"
    good.write_bytes(gru_cell_ir[0])
    code, out, err = run_cli(capsys, str(good), str(tmp_path / "gone.xml"))
    assert code == 2 and out == "" and err == f"irtool: error: cannot read {tmp_path}/gone.xml: no such file\n"


# ---------------------------------------------------------------- all of it at once, in a child

def test_a_directory_of_hostile_files_gets_one_diagnostic_each_and_no_traceback(gru_cell_ir, secret, tmp_path):
    secret_path, token = secret
    folder = tmp_path / "hostile"
    folder.mkdir()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    xml, weights = gru_cell_ir
    files = {
        "xxe.xml": (xxe_document("general entity in content", secret_path.as_uri()), "IR002"),
        "xxe_fifo.xml": (xxe_document("external DTD", fifo.as_uri()), "IR002"),
        "bomb.xml": (billion_laughs(), "IR002"),
        "truncated.xml": (xml[: len(xml) // 2], "IR001"),
        "binary.xml": (weights, "IR001"),
        "empty.xml": (b"", "IR001"),
        "foreign.xml": (b"<svg/>", "IR004"),
        "huge.xml": (xml + b"<!--" + b"x" * 10_000 + b"-->", "IR003"),
    }
    for name, (data, _) in files.items():
        (folder / name).write_bytes(data)
    done = run_child("--format", "json", "--max-size", str(len(xml) + 1000), str(folder))
    assert done.returncode == 1 and done.stderr == ""
    assert token not in done.stdout
    found = {Path(f["path"]).name: [d["code"] for d in f["diagnostics"]] for f in json.loads(done.stdout)["files"]}
    assert found == {name: [code] for name, (_, code) in files.items()}
    assert all(code in CODES for codes in found.values() for code in codes)


# ---------------------------------------------------------------- the .bin, folders, encodings

@pytest.mark.parametrize("make, words", [
    (lambda bin_path: bin_path.mkdir(), "which is a directory"),
    (lambda bin_path: os.mkfifo(bin_path), "which is not a regular file"),
], ids=["directory", "fifo"])
def test_a_bin_that_is_no_regular_file_is_an_error(make, words, tmp_path, capsys):
    """A .bin that is a directory (os.stat gives it a size) or a FIFO (never waited on) is no weights file."""
    source = Path(__file__).resolve().parent.parent / "samples" / "ir" / "valid" / "gru_sequence_const.xml"
    path = tmp_path / "m.xml"
    path.write_bytes(source.read_bytes())
    make(path.with_suffix(".bin"))
    done = run_child("--format", "json", str(path))
    assert done.returncode == 1
    [d] = json_diagnostics(done.stdout)
    assert (d["code"], d["layer_id"]) == ("IR070", "3") and words in d["message"]


def test_an_unreadable_subdirectory_is_reported_not_skipped(gru_cell_ir, tmp_path, capsys, monkeypatch):
    """As for a folder without read permission (which root, running the tests, does not lack)."""
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "a.xml").write_bytes(gru_cell_ir[0])
    locked = tmp_path / "locked"
    locked.mkdir()
    real_scandir = os.scandir

    def scandir(path="."):
        if Path(path) == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    code, out, err = run_cli(capsys, str(tmp_path))
    assert (code, out, err) == (2, "", f"irtool: error: cannot read {locked}: Permission denied\n")


def test_a_directory_without_search_permission_is_one_line(gru_cell_ir, tmp_path, capsys, monkeypatch):
    """Its names can be listed, its files not reached (stat fails): as a non-root user sees it."""
    folder = tmp_path / "noexec"
    folder.mkdir()
    (folder / "a.xml").write_bytes(gru_cell_ir[0])
    real_is_file = Path.is_file

    def is_file(self):
        if self.parent == folder:
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_file(self)

    monkeypatch.setattr(Path, "is_file", is_file)
    code, out, err = run_cli(capsys, str(folder))
    assert (code, out, err) == (2, "", f"irtool: error: cannot read {folder}: Permission denied\n")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_a_utf16_ir_that_openvino_reads_is_valid(gru_cell_ir, tmp_path, encoding):
    xml, weights = gru_cell_ir
    text = xml.decode().replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    path = tmp_path / "utf16.xml"
    path.write_bytes(text.encode(encoding))
    path.with_suffix(".bin").write_bytes(weights)
    assert openvino_reads(path)
    assert validate_file(path).diagnostics == []
    broken = tmp_path / "utf16_broken.xml"
    broken.write_bytes(text.replace('hidden_size="4"', 'hidden_size="5"').encode(encoding))
    broken.with_suffix(".bin").write_bytes(weights)
    assert "IR041" in {d.code for d in validate_file(broken).diagnostics}


# ---------------------------------------------------------------- numbers as OpenVINO reads them

REFUSED_NUMBERS = {
    "clip in an Arabic-Indic digit": ('clip="0"', 'clip="\u0661"', "clip"),
    "clip 1e400": ('clip="0"', 'clip="1e400"', "clip"),
    "clip of 400 digits": ('clip="0"', 'clip="' + "1" * 400 + '"', "clip"),
    "activations_alpha in Arabic-Indic digits": ('clip="0"', 'clip="0" activations_alpha="\u0661,\u0661"',
                                                 "activations_alpha"),
    "hidden_size in an Arabic-Indic digit": ('hidden_size="4"', 'hidden_size="\u0664"', "hidden_size"),
}


@pytest.mark.parametrize("old, new, attribute", REFUSED_NUMBERS.values(), ids=REFUSED_NUMBERS)
def test_numbers_openvino_refuses_are_errors_at_their_attribute(tmp_path, old, new, attribute):
    source = Path(__file__).resolve().parent.parent / "samples" / "ir" / "valid" / "gru_sequence_forward.xml"
    path = tmp_path / "m.xml"
    path.write_text(source.read_text().replace(old, new, 1))
    assert not openvino_reads(path)
    found = [(d.code, d.layer_id, d.attribute, d.severity) for d in validate_file(path).diagnostics]
    assert found == [("IR022", "6", attribute, "error")]


def test_precision_fp32_is_refused_as_openvino_refuses_it(tmp_path):
    source = Path(__file__).resolve().parent.parent / "samples" / "ir" / "valid" / "gru_sequence_forward.xml"
    for spelling, port, refused in (("fp32", "6", True), ("F32", "6", True), ("f32", "6", False), ("FP32", "6", False),
                                    ("fp32", "3", False)):  # OpenVINO reads no input port's precision
        path = tmp_path / f"{spelling}{port}.xml"
        path.write_text(source.read_text().replace(f'<port id="{port}" precision="FP32">',
                                                   f'<port id="{port}" precision="{spelling}">'))
        codes = [(d.code, d.port_id) for d in validate_file(path).diagnostics]
        assert openvino_reads(path) != refused and codes == ([("IR052", port)] if refused else []), spelling


def test_a_huge_value_is_cut_short_in_every_field(tmp_path, capsys):
    source = Path(__file__).resolve().parent.parent / "samples" / "ir" / "valid" / "gru_sequence_forward.xml"
    path = tmp_path / "m.xml"
    path.write_text(source.read_text().replace('clip="0"', 'clip="0" hiden_size="' + "9" * 1_000_000 + '"'))
    code, out, err = run_cli(capsys, "--format", "json", str(path))
    [d] = json_diagnostics(out)
    assert (code, d["code"], d["attribute"]) == (1, "IR021", "hiden_size")
    assert len(out) < 5000 and "(1000000 characters)" in d["found"]


# ---------------------------------------------------------------- linear in the input

def _one_line_net(findings: int) -> bytes:
    """A one-line net whose GRUSequence has ``findings`` unknown attributes on as many layers' worth."""
    source = Path(__file__).resolve().parent.parent / "samples" / "ir" / "valid" / "gru_sequence_forward.xml"
    text = source.read_text()
    extra = " ".join(f'x{i}="1"' for i in range(findings))
    return " ".join(text.replace('clip="0"', f'clip="0" {extra}').split()).encode()


def test_locating_findings_on_one_line_searches_it_a_bounded_number_of_times(tmp_path, monkeypatch):
    """Work per finding is constant: the line is searched at most SEARCHES times and indexed
    once, whether it holds 100 or 1,000 findings (it used to be searched once per finding)."""
    import irtool.ir.model as model

    passes = []
    real_search, real_index = model.re.finditer, model._LineIndex._index
    monkeypatch.setattr(model.re, "finditer", lambda *a, **k: passes.append("search") or real_search(*a, **k))
    monkeypatch.setattr(model._LineIndex, "_index", lambda self: passes.append("index") or real_index(self))
    counts = []
    for findings in (100, 1000):
        path = tmp_path / f"n{findings}.xml"
        path.write_bytes(_one_line_net(findings))
        passes.clear()
        report = validate_file(path)
        assert len([d for d in report.diagnostics if d.code == "IR021"]) == 11
        counts.append(len(passes))
    assert counts[0] == counts[1] <= model._LineIndex.SEARCHES + 1


def test_many_attributes_are_read_in_one_pass(tmp_path, monkeypatch):
    """lxml's attribute values cost a walk from the first each: an element with many is written out
    once and read back through a parser target, never through .items()."""
    import irtool.ir.parse as parse

    passes = []
    real = parse._FirstAttributes.start
    monkeypatch.setattr(parse._FirstAttributes, "start", lambda self, tag, attributes: passes.append(1) or real(self, tag, attributes))
    path = tmp_path / "many.xml"
    path.write_bytes(_one_line_net(5000))
    data = parse.parse_ir(path).layers[6].data
    assert len(data) == 5000 + 5 and data["x4999"] == "1" and data["hidden_size"] == "4"
    assert passes == [1]  # the one element with many attributes, read back once


def test_with_openvino_never_waits_on_a_fifo_bin(tmp_path):
    source = Path(__file__).resolve().parent.parent / "samples" / "ir" / "valid" / "gru_sequence_const.xml"
    path = tmp_path / "m.xml"
    path.write_bytes(source.read_bytes())
    os.mkfifo(path.with_suffix(".bin"))
    done = run_child("--with-openvino", "--format", "json", str(path))
    assert done.returncode == 1
    assert sorted(d["code"] for d in json_diagnostics(done.stdout)) == ["IR070", "IR083"]


def test_a_huge_attribute_name_is_cut_short_too(tmp_path, capsys):
    source = Path(__file__).resolve().parent.parent / "samples" / "ir" / "valid" / "gru_sequence_forward.xml"
    path = tmp_path / "m.xml"
    name = "n" * 20_000  # libxml2 takes names up to 50,000 characters
    path.write_text(source.read_text().replace('clip="0"', f'clip="0" {name}="1"'))
    code, out, err = run_cli(capsys, "--format", "json", str(path))
    [d] = json_diagnostics(out)
    assert (code, d["code"], d["line"], d["column"]) == (1, "IR021", 63, 82)
    assert len(out) < 5000 and d["attribute"].endswith("(20000 characters)")
