"""Files validate could not check: well-formed XML past irtool's bounds, a file it could not read
whatever --severity says, and *.xml entries of a folder that are no regular files.  Each is
counted as not checked and the exit is never 0."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest_validate import openvino_reads

from irtool.cli.program import main
from irtool.validate import validate_file

VALID = Path(__file__).resolve().parent.parent / "samples" / "ir" / "valid"


def _after_layers(tmp_path: Path, inserted: bytes) -> Path:
    data = (VALID / "gru_sequence_const.xml").read_bytes()
    at = data.index(b"<layers>") + len(b"<layers>")
    path = tmp_path / "big.xml"
    path.write_bytes(data[:at] + inserted + data[at:])
    path.with_suffix(".bin").write_bytes((VALID / "gru_sequence_const.bin").read_bytes())
    return path


@pytest.mark.parametrize("inserted, says", [
    (b"<u>" * 300 + b"</u>" * 300, "nesting deeper than irtool reads"),
    (b" " * (10_000_001), "a text run longer than irtool reads"),
])
def test_well_formed_xml_past_irtools_bounds_is_not_called_malformed(tmp_path, inserted, says):
    path = _after_layers(tmp_path, inserted)
    assert openvino_reads(path)
    report = validate_file(path)
    [d] = report.diagnostics
    assert d.code == "IR008" and says in d.message and "not well-formed" not in d.message
    assert report.unchecked is not None and not report.valid


def _truncated(tmp_path: Path) -> Path:
    path = tmp_path / "t.xml"
    path.write_bytes((VALID / "gru_cell.xml").read_bytes()[:1000])
    return path


@pytest.mark.parametrize("argv", [["--severity", "IR001=off"], ["--severity", "IR001=note"],
                                  ["--max-size", "10", "--severity", "IR003=off"], ["--quiet-notes"]])
def test_a_file_not_read_is_never_a_clean_check(tmp_path, capsys, argv):
    path = _truncated(tmp_path) if "--max-size" not in argv else VALID / "gru_cell.xml"
    assert main(["validate", *argv, str(path)]) == 1
    out = capsys.readouterr().out
    assert "0 files checked, 1 file not checked" in out
    assert main(["validate", "--format", "json", *argv, str(path)]) == 1
    assert '"checked": false' in capsys.readouterr().out
    assert main(["validate", "--format", "sarif", *argv, str(path)]) == 1  # a code scanner's view: said there too
    (invocation,) = json.loads(capsys.readouterr().out)["runs"][0]["invocations"]
    (said,) = invocation["toolExecutionNotifications"]
    assert invocation["executionSuccessful"] is False and said["message"]["text"].startswith("not checked: ")
    assert said["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith(path.name)


def test_entries_of_a_folder_that_are_no_files_are_listed(tmp_path, capsys):
    (tmp_path / "ok.xml").write_bytes((VALID / "gru_cell.xml").read_bytes())
    os.mkfifo(tmp_path / "fifo.xml")
    (tmp_path / "zero.xml").symlink_to("/dev/zero")
    (tmp_path / "dangling.xml").symlink_to(tmp_path / "nowhere.xml")
    assert main(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [f"{tmp_path}/dangling.xml: not checked: a symbolic link to '{tmp_path}/nowhere.xml', "
                       f"which does not exist",
                       f"{tmp_path}/fifo.xml: not checked: a FIFO, not a regular file",
                       f"{tmp_path}/zero.xml: not checked: a character device (a symbolic link to '/dev/zero'), "
                       f"not a regular file"]
    assert out[3] == "1 file checked, 3 files not checked: 0 errors, 0 warnings, 0 notes"
