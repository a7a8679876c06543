"""Names from files are data, never control (issue 22, item 3).

Generators of hostile names (every control character class; names that differ after a NUL or
in case; ``../../x`` and ``/etc/passwd``; a node name an ONNX model repeats), each with the
exact outcome: text output one record per line with the characters escaped, .npz members safe
and distinct with the names read back, a result per node under a key of its own that
``report diff`` and ``report merge`` see, SARIF URIs percent-encoded.
"""
from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
import zipfile
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from sentinel import Sentinel

from irtool.cli.program import main
from irtool.core.npz import member_names, read_npz, write_npz
from irtool.core.text import escaped_lines, shown
from irtool.onnx.model import generate

CONTROLS = ([chr(c) for c in range(0x20)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]
            + ["\u061c", "\u200e", "\u200f", "\u2028", "\u2029", *map(chr, range(0x202A, 0x202F)),
               *map(chr, range(0x2066, 0x206A)), "\ufeff"])
FORGED = "rnn\x1b]0;owned\x07\x1b[2J\x1b[31m\nPASS: forged\r\u202e"
FORGED_SHOWN = "rnn\\x1b]0;owned\\x07\\x1b[2J\\x1b[31m\\nPASS: forged\\r\\u202e"


def clean(text: str) -> bool:
    """No character of CONTROLS but the newlines between records."""
    return not any(c in text for c in CONTROLS if c != "\n")


# ---------------------------------------------------------------------------- (a) one escaping rule

@pytest.mark.parametrize("char", CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
def test_every_control_character_is_shown_escaped(char):
    text = shown(f"a{char}b")
    assert text.isascii() and text.isprintable() and text.startswith("a\\") and text.endswith("b")
    assert text == {"\n": "a\\nb", "\r": "a\\rb", "\t": "a\\tb"}.get(char, text)
    assert escaped_lines([f"x{char}y", "z"]).count("\n") == 1


@pytest.mark.parametrize("text", ["gru_node", "LSTM -> Y", "Ünïcödé 名前 🙂", "a\\x1b stays", "tab-free/path.xml"])
def test_printable_text_is_shown_as_it_is(text):
    assert shown(text) == text
    assert all(unicodedata.category(c)[0] != "C" for c in text if c not in "\\")


def test_the_escaping_covers_every_unicode_control_and_line_separator():
    """Every code point of category Cc, and every Zl/Zp, is escaped."""
    for code in range(0x110000):
        char = chr(code)
        if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            assert char not in shown(char), hex(code)


def two_lstms(name: str, fail_second: bool) -> onnx.ModelProto:
    """Two LSTM nodes of one name reading X; the second has peepholes P (OpenVINO's ONNX frontend
    drops them: a known FAIL) when ``fail_second``, else, as the first, P = 0 (dropping them changes
    nothing)."""
    made = [generate("LSTM", 14, {"hidden_size": 3}, batch=1, seq_length=2, input_size=2, seed=seed,
                     optional_inputs=("B", "P")) for seed in (1, 2)]
    graph = onnx.GraphProto(name="two")
    graph.input.extend(made[0].model.graph.input)
    for prefix, one in zip(("a_", "b_"), made):
        node = onnx.NodeProto()
        node.CopyFrom(one.model.graph.node[0])
        node.name = name
        node.input[:] = [n if n in ("", "X") else prefix + n for n in node.input]
        node.output[:] = [prefix + n if n else n for n in node.output]
        graph.node.append(node)
        for tensor in one.model.graph.initializer:
            array = numpy_helper.to_array(tensor)
            if tensor.name == "P" and (prefix == "a_" or not fail_second):
                array = np.zeros_like(array)
            graph.initializer.append(numpy_helper.from_array(array, prefix + tensor.name))
        for output in one.model.graph.output:
            copy = onnx.ValueInfoProto()
            copy.CopyFrom(output)
            copy.name = prefix + output.name
            graph.output.append(copy)
    model = onnx.helper.make_model(graph, opset_imports=list(made[0].model.opset_import),
                                   ir_version=made[0].model.ir_version)
    onnx.checker.check_model(model)
    return model


def test_run_shows_a_hostile_node_name_escaped_one_record_per_line(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(two_lstms(FORGED, fail_second=True), path)
    assert main(["run", str(path), "-d", "CPU"]) == 1
    out = capsys.readouterr().out
    assert clean(out) and not any(line.startswith("PASS") for line in out.splitlines())
    assert f"FAIL node '{FORGED_SHOWN}#2' (LSTM-14): outside tolerance" in out
    assert out.splitlines()[-1] == f"FAIL: 1 of 2 judged nodes outside tolerance ({FORGED_SHOWN}#2)"


def test_an_error_line_naming_a_hostile_file_is_one_line(tmp_path, capsys):
    path = tmp_path / f"{FORGED}.xml"
    assert main(["run", str(path), "-d", "CPU"]) == 2
    err = capsys.readouterr().err
    assert err == f"irtool: error: {tmp_path}/{FORGED_SHOWN}.xml: no such model file\n"


def test_validate_lines_of_a_hostile_file_and_layer_name_stay_one_per_diagnostic(tmp_path, capsys, monkeypatch):
    """Editors and CI annotate from ``path:line:col``: a newline in the file's or a layer's name
    must not start a line of its own."""
    monkeypatch.chdir(tmp_path)
    name = "x\x1b[2J\nevil.xml:1:1: error[IR001] forged\u2028.xml"
    Path(name).write_bytes(b"<net name='n' version='11'><layers><layer id='0' name='a&#10;b: note[IR000] forged"
                           b"&#x85;' type='Parameter' version='opset1'><data element_type='f32'/>"
                           b"<output><port id='0' precision='FP32'><dim>1</dim></port></output></layer></layers>"
                           b"<edges/></net>")
    Path("broken\nfile.xml").write_bytes(b"<net")
    code = main(["validate", name, "broken\nfile.xml"])
    out = capsys.readouterr().out
    assert code == 1 and clean(out)
    records = out.splitlines()
    assert all(line.startswith((shown(name) + ":", "broken\\nfile.xml:")) for line in records[:-1]), records
    assert records[-1].startswith("1 file checked, 1 file not checked: ")  # ("<net": read no further)
    assert any("a\\nb: note[IR000] forged\\x85" in line for line in records), records


def test_sarif_uris_are_percent_encoded(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    names = ["a b#1?%.xml", "x:y.xml", "line\nbreak.xml", "ü.xml"]
    for name in names:
        Path(name).write_bytes(b"<net")
    assert main(["validate", *names, str(tmp_path / "a b#1?%.xml"), "--format", "sarif"]) == 1
    results = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert uris == ["a%20b%231%3F%25.xml", "x%3Ay.xml", "line%0Abreak.xml", "%C3%BC.xml",
                    (tmp_path / "a b#1?%.xml").as_uri()]
    assert [unquote(u) for u in uris[:4]] == names


# ---------------------------------------------------------------------------- (b) npz names

HOSTILE_NAMES = ["Y", "y", "out\x00one", "out\x00two", "../../x", "/etc/passwd", "..", ".", "", "a/../b",
                 "C:\\Windows\\x", "\\\\server\\share", "lstm/Y:0", "x" * 300, FORGED, "x-9cdf6a50", "a//b",
                 ".hidden", "con", "名前"]


def test_npz_members_are_safe_distinct_and_the_names_come_back(tmp_path):
    arrays = {name: np.full(k + 1, k, np.float32) for k, name in enumerate(HOSTILE_NAMES)}
    members = member_names(arrays)
    assert len({m.casefold() for m in members.values()}) == len(arrays)
    for name, member in members.items():
        parts = member[:-len(".npy")].split("/")
        assert member.endswith(".npy") and not member.startswith("/") and "\\" not in member
        assert all(part and not part.startswith(".") and part.isascii() and part.isprintable() for part in parts)
    assert {n: members[n] for n in ("Y", "lstm/Y:0", "con")} == {"Y": "Y.npy", "lstm/Y:0": "lstm/Y:0.npy",
                                                                  "con": "con.npy"}
    work = tmp_path / "work"
    work.mkdir()
    path = write_npz(work / "out.npz", arrays)
    back = read_npz(path)
    assert list(back) == HOSTILE_NAMES and all(np.array_equal(back[n], arrays[n]) for n in HOSTILE_NAMES)
    with np.load(path, allow_pickle=False) as stored:  # numpy reads it too, every array in order
        assert [stored[key].tolist() for key in stored.files] == [a.tolist() for a in arrays.values()]
    folder = work / "unzipped"
    folder.mkdir()
    sentinel = Sentinel([tmp_path, tmp_path / "etc"], {"passwd": b"root:x:0:0\n", "x": b"x\n"})
    with zipfile.ZipFile(path) as archive:  # an unzip lands inside the folder only
        archive.extractall(folder)
    assert sentinel.touched() == []
    sentinel.close()
    assert len(list(p for p in folder.rglob("*.npy"))) == len(arrays)


def test_a_plain_numpy_npz_reads_as_before(tmp_path):
    np.savez(tmp_path / "plain.npz", X=np.ones(2), **{"a/b": np.zeros(1)})
    assert list(read_npz(tmp_path / "plain.npz")) == ["X", "a/b"]


# ---------------------------------------------------------------------------- (c) repeated node names

def test_run_keys_two_nodes_of_one_name_by_position(tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(two_lstms("rnn", fail_second=True), path)
    assert main(["run", str(path), "-d", "CPU", "--format", "json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert [(n["name"], n["verdict"]) for n in result["nodes"]] == [("rnn", "pass"), ("rnn#2", "fail")]


def irtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess, subprocess.CompletedProcess]:
    """A suite of one ONNX model whose two nodes share a hostile name; run when both pass (old), then
    when the second fails (new)."""
    folder = tmp_path_factory.mktemp("twice")
    (folder / "suite.toml").write_text('[[files]]\nid = "m"\npaths = ["m.onnx"]\n')
    done = []
    for run, fail_second in (("old", False), ("new", True)):
        onnx.save(two_lstms(FORGED, fail_second), folder / "m.onnx")
        done.append(irtool("harness", "suite.toml", "-d", "CPU", "--precision", "f32", "--report-dir", run,
                           "--no-progress", cwd=folder))
    return folder, done[0], done[1]


def test_the_harness_keys_each_node_and_shows_its_name_escaped(two_runs):
    folder, old, new = two_runs
    assert old.returncode == 0 and new.returncode == 1, (old.stderr, new.stderr)
    for done in (old, new):
        assert clean(done.stdout) and clean(done.stderr) and "Traceback" not in done.stderr
        assert not any(line.startswith("PASS: forged") for line in (done.stdout + done.stderr).splitlines())
    cases = [r["case"] for r in json.loads((folder / "new" / "results.json").read_text())["results"]]
    assert sorted(cases) == sorted([f"m:m[seed=0]::{FORGED}", f"m:m[seed=0]::{FORGED}#2"]), cases
    assert f"FAIL: m:m[seed=0]::{FORGED_SHOWN}#2 on CPU at f32: outside tolerance" in new.stdout


def test_report_diff_sees_the_new_failure_of_the_repeated_name_and_merge_takes_the_run(two_runs):
    folder, _, _ = two_runs
    diff = irtool("report", "diff", "old", "new", cwd=folder)
    assert diff.returncode == 1 and clean(diff.stdout), diff.stdout + diff.stderr
    assert "new failures (1):" in diff.stdout and f"::{FORGED_SHOWN}#2" in diff.stdout
    assert diff.stdout.splitlines()[-1].startswith("REGRESSED: 1 new failure")
    merged = irtool("report", "merge", "new", "-o", "merged", cwd=folder)
    assert merged.returncode == 1 and clean(merged.stdout), merged.stderr  # the run it takes has a failure
    assert len(json.loads((folder / "merged" / "results.json").read_text())["results"]) == 2
