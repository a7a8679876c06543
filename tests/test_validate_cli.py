"""The validate command's contract: formats, exit codes, paths (DESIGN.md, contracts)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from irtool.cli.program import main
from irtool.core.diagnostics import CODES, JSON_FIELDS

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


@pytest.mark.parametrize("model, label", [("keras_lstm.tflite", "TensorFlow Lite"),
                                          ("block_lstm_while.pb", "TensorFlow frozen graph")])
def test_a_model_of_another_format_is_named_in_one_line(model, label, capsys):
    path = SAMPLES.parent / "models" / "tf" / model
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"a {label} model; validate checks IR .xml and .onnx files" in err
    assert len(err.strip().splitlines()) == 1 and "IR001" not in err and "binary" not in err


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
        assert code.severity in ("error", "warning", "note") and code.summary


def test_docs_list_every_code():
    docs = (Path(__file__).resolve().parent.parent / "docs" / "validate.md").read_text()
    for code in CODES.values():
        assert f"| {code.code} | {code.severity} | {code.summary} |" in docs


NOTES = SAMPLES / "notes" / "gru_sequence_activations_per_direction.xml"
UNKNOWN = SAMPLES / "broken" / "gru_sequence_unknown_attribute.xml"


def test_notes_in_text_json_and_sarif(capsys):
    assert main(["validate", str(NOTES)]) == 0
    out = capsys.readouterr().out
    assert "note[IR028]" in out and out.endswith("1 file checked: 0 errors, 0 warnings, 1 note\n")
    assert main(["validate", "--format", "json", str(NOTES)]) == 0
    [file] = json.loads(capsys.readouterr().out)["files"]
    assert file["valid"] and [(d["code"], d["severity"]) for d in file["diagnostics"]] == [("IR028", "note")]
    assert main(["validate", "--format", "sarif", str(NOTES)]) == 0
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert [r["level"] for r in run["results"]] == ["note"]
    assert run["tool"]["driver"]["rules"][0]["defaultConfiguration"]["level"] == "note"


def test_quiet_notes_leaves_notes_out(capsys):
    assert main(["validate", "--quiet-notes", "--format", "json", str(NOTES)]) == 0
    assert json.loads(capsys.readouterr().out)["files"][0]["diagnostics"] == []


@pytest.mark.parametrize("option, exit_code, severity", [
    ("IR021=warning", 0, "warning"), ("ir021=note", 0, "note"), ("IR021=off", 0, None), ("IR021=error", 1, "error")])
def test_severity_changes_or_hides_a_code(capsys, option, exit_code, severity):
    assert main(["validate", "--severity", option, "--format", "json", str(UNKNOWN)]) == exit_code
    found = [d["severity"] for d in json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]]
    assert found == ([severity] if severity else [])


@pytest.mark.parametrize("option, words", [("IR999=error", "no code 'IR999'"), ("IR021=loud", "level must be")])
def test_a_bad_severity_option_is_a_usage_error(capsys, option, words):
    assert main(["validate", "--severity", option, str(UNKNOWN)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err


def test_an_unconnected_parameter_is_said_to_stay_an_input(capsys):
    main(["validate", "--format", "json", str(SAMPLES / "warnings" / "gru_cell_without_b.xml")])
    [d] = [d for d in json.loads(capsys.readouterr().out)["files"][0]["diagnostics"] if d["code"] == "IR067"]
    assert "stays an input of the model" in d["message"] and "drops" not in d["message"]


def test_ops_without_spec_get_one_note_per_type_with_the_count(tmp_path, capsys):
    import numpy as np
    import openvino as ov
    from openvino import opset1

    x = opset1.parameter([2, 3], np.float32, name="x")
    model = ov.Model([opset1.relu(opset1.relu(opset1.relu(x)))], [x], "relus")
    path = tmp_path / "relus.xml"
    ov.save_model(model, str(path))
    assert main(["validate", "--format", "json", str(path)]) == 0
    [d] = json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]
    assert (d["code"], d["severity"], d["found"]) == ("IR010", "note", "ReLU")
    assert "3 layers of 'ReLU'" in d["message"]


@pytest.mark.parametrize("name", ["net_version_missing", "net_version_7"])
def test_with_openvino_says_what_read_model_says_of_a_net_version(capsys, name):
    """The IR frontend alone would read a <net> without version; read_model does not."""
    assert main(["validate", "--with-openvino", "--format", "json", str(SAMPLES / "broken" / f"{name}.xml")]) == 1
    codes = [d["code"] for d in json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]]
    assert sorted(codes) == ["IR005", "IR080"]


@pytest.mark.parametrize("value, says", [("-5", "-5: a size limit is a number of bytes >= 1"),
                                         ("0", "0: a size limit is a number of bytes >= 1"),
                                         ("1e3", "'1e3' is not a whole number of bytes")])
def test_max_size_must_be_a_positive_number_of_bytes(samples_dir, capsys, value, says):
    from irtool.cli.program import main

    code = main(["validate", str(samples_dir / "valid" / "gru_sequence_forward.xml"), "--max-size", value])
    err = capsys.readouterr().err
    assert code == 2 and says in err and "Traceback" not in err
