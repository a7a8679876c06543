"""The validate command's contract: formats, exit codes, paths (DESIGN.md, contracts)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from irtool.cli import main
from irtool.diagnostics import CODES, JSON_FIELDS

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "ir"
B768 = SAMPLES / "spec-examples" / "GRUCell-3.page.xml"


def test_json_follows_the_contract(capsys):
    assert main(["validate", "--format", "json", str(B768), str(SAMPLES / "valid" / "gru_cell.xml")]) == 1
    files = json.loads(capsys.readouterr().out)["files"]
    assert [f["valid"] for f in files] == [False, True]
    [d] = files[0]["diagnostics"]
    assert list(d) == list(JSON_FIELDS)
    assert d["code"] == "IR041" and d["severity"] == "error" and d["line"] == 21 and d["column"] == 13
    assert d["port_id"] == "4" and d["layer_id"] is None and d["attribute"] is None
    assert d["expected"] == "4*hidden_size = 512" and d["found"] == "768"


def test_json_layer_and_attribute_fields(capsys):
    main(["validate", "--format", "json", str(SAMPLES / "broken" / "gru_sequence_direction_bad.xml")])
    [d] = json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]
    assert (d["layer_id"], d["layer_name"], d["attribute"], d["found"]) == ("6", "gru_sequence", "direction", "forwards")


def test_sarif_lists_results_and_rules(capsys):
    assert main(["validate", "--format", "sarif", str(SAMPLES / "broken")]) == 1
    sarif = json.loads(capsys.readouterr().out)
    run = sarif["runs"][0]
    assert sarif["version"] == "2.1.0"
    assert {r["ruleId"] for r in run["results"]} <= {r["id"] for r in run["tool"]["driver"]["rules"]}
    assert any(r["ruleId"] == "IR041" for r in run["results"])


def test_directory_means_every_xml_under_it(capsys):
    assert main(["validate", "--format", "json", str(SAMPLES)]) == 1
    paths = [f["path"] for f in json.loads(capsys.readouterr().out)["files"]]
    assert len(paths) == len(list(SAMPLES.rglob("*.xml")))


@pytest.mark.parametrize("argv, needle", [
    (["validate", "no/such/file.xml"], "cannot read no/such/file.xml"),
    (["validate"], "the following arguments are required"),
    (["validate", "--format", "yaml", "x.xml"], "invalid choice"),
])
def test_usage_errors_exit_2_with_one_line(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_empty_directory_is_a_usage_error(tmp_path, capsys):
    assert main(["validate", str(tmp_path)]) == 2
    assert "no *.xml or *.onnx file under" in capsys.readouterr().err


def test_with_openvino_reports_its_verdict_beside(capsys):
    nets = [SAMPLES / "spec-examples" / "GRUCell-3.net.xml", SAMPLES / "valid" / "gru_sequence_const.xml"]
    assert main(["validate", "--format", "json", "--with-openvino", *map(str, nets)]) == 1
    files = json.loads(capsys.readouterr().out)["files"]
    codes = [[d["code"] for d in f["diagnostics"]] for f in files]
    assert "IR080" in codes[0] and "IR041" in codes[0]
    assert codes[1] == ["IR081"]
    rejected = next(d for d in files[0]["diagnostics"] if d["code"] == "IR080")
    assert "768" in rejected["message"]


def test_with_openvino_checks_ops_without_spec(tmp_path, capsys):
    import numpy as np
    import openvino as ov
    from openvino import opset1

    x = opset1.parameter([2, 3], np.float32, name="x")
    model = ov.Model([opset1.relu(x)], [x], "relu")
    path = tmp_path / "relu.xml"
    ov.save_model(model, str(path))
    text = path.read_text()
    relu_output = text.index('type="ReLU"')
    out_at = text.index("<output>", relu_output)
    patched = text[:out_at] + text[out_at:].replace("<dim>3</dim>", "<dim>4</dim>", 1)
    path.write_text(patched)
    main(["validate", "--format", "json", "--with-openvino", str(path)])
    codes = [d["code"] for d in json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]]
    assert "IR010" in codes and "IR082" in codes


def test_console_entry_runs_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "irtool", "validate", str(B768)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "error[IR041]" in proc.stdout and proc.stderr == ""


def test_every_code_has_a_summary_and_severity():
    for code in CODES.values():
        assert code.severity in ("error", "warning", "info") and code.summary


def test_docs_list_every_code():
    docs = (Path(__file__).resolve().parent.parent / "docs" / "validate.md").read_text()
    for code in CODES.values():
        assert f"| {code.code} | {code.severity} | {code.summary} |" in docs
