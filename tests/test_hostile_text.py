"""Output that survives any locale and any name: text under an ASCII locale keeps its verdict
(names written with escapes), JSON never carries a lone surrogate (a file name's byte that is not
UTF-8 is written as \\xNN), and hostile files named by IRTOOL_EXTRA_SPECS are one line each.
Real irtool processes and real OpenVINO on CPU where the behaviour is a process's (its locale)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from irtool.cli.program import main

ROOT = Path(__file__).resolve().parent.parent
NAME = "grü_节点"
ESCAPED = "gr\\xfc_\\u8282\\u70b9"  # how an ASCII stream shows it
# (environment, what the locale is): Python's own UTF-8 mode and C-locale coercion off, so the
# streams really are ASCII
LOCALES = {"PYTHONIOENCODING=ascii": {"PYTHONIOENCODING": "ascii"},
           "LC_ALL=C": {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}}
STRAY = os.fsdecode(b"g\xffh")  # a file name with a byte that is not UTF-8


def irtool(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    environment = {key: value for key, value in os.environ.items() if key not in ("PYTHONIOENCODING", "LC_ALL")}
    return subprocess.run([sys.executable, "-m", "irtool", *map(str, args)], capture_output=True,
                          env={**environment, **(env or {})}, cwd=cwd, timeout=180, stdin=subprocess.DEVNULL)


def renamed(source: Path, target: Path, old: str, new: str) -> Path:
    """An IR copied with one layer renamed (its .bin beside it)."""
    target.write_text(source.read_text().replace(f'name="{old}"', f'name="{new}"'), encoding="utf-8")
    shutil.copy(source.with_suffix(".bin"), target.with_suffix(".bin"))
    return target


def strict_json(text: str) -> object:
    """JSON as a strict reader takes it: every string valid Unicode text (no lone surrogate)."""
    data = json.loads(text)
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            item.encode("utf-8")  # UnicodeEncodeError on a lone surrogate
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return data


@pytest.mark.parametrize("locale", LOCALES)
def test_a_pass_and_a_fail_keep_their_verdicts_under_an_ascii_locale(samples_dir, tmp_path, locale):
    passing = renamed(samples_dir / "valid" / "gru_sequence_const.xml", tmp_path / "pass.xml", "gru_sequence", NAME)
    failing = renamed(ROOT / "samples" / "models" / "gru_lengths.xml", tmp_path / "fail.xml", "GRUSequence_2978", NAME)
    done = irtool("run", passing, "-d", "CPU", env=LOCALES[locale])
    out = done.stdout.decode("ascii")  # ASCII it is, every byte
    assert done.returncode == 0 and out.splitlines()[-1].startswith("PASS: "), out + done.stderr.decode()
    assert f"(layer '{ESCAPED}')" in out
    done = irtool("run", failing, "-d", "CPU", env=LOCALES[locale])
    out = done.stdout.decode("ascii")
    assert done.returncode == 1 and out.splitlines()[-1].startswith(f"FAIL: 1 of 1 judged nodes outside tolerance "
                                                                     f"({ESCAPED})"), out + done.stderr.decode()


@pytest.mark.parametrize("locale", LOCALES)
def test_a_reproducer_of_a_node_with_such_a_name_reproduces_under_an_ascii_locale(tmp_path, locale):
    """reproduce.py printed the case id (the node's name) as it is: a UnicodeEncodeError, exit 1, read
    as the mismatch reproduced."""
    failing = renamed(ROOT / "samples" / "models" / "gru_lengths.xml", tmp_path / "fail.xml", "GRUSequence_2978", NAME)
    assert irtool("run", failing, "-d", "CPU", "--reproducers", tmp_path / "rep").returncode == 1
    [folder] = (tmp_path / "rep").iterdir()
    environment = {key: value for key, value in os.environ.items() if key not in ("PYTHONIOENCODING", "LC_ALL")}
    done = subprocess.run([sys.executable, "reproduce.py"], cwd=folder, capture_output=True, timeout=120,
                          env={**environment, **LOCALES[locale]})
    out = done.stdout.decode("ascii")
    assert done.returncode == 1 and "Traceback" not in done.stderr.decode("ascii"), out + done.stderr.decode()
    assert ESCAPED in out.splitlines()[0] and "FAIL" in out


def test_a_file_name_that_is_not_utf8_is_escaped_in_text_and_json(samples_dir, tmp_path):
    model = renamed(samples_dir / "valid" / "gru_sequence_const.xml", tmp_path / f"{STRAY}.xml", "X", "X")
    done = irtool("validate", model.name, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0 and strict_json(done.stdout)["files"][0]["path"] == "g\\xffh.xml"
    done = irtool("validate", model.name, "--format", "sarif", cwd=tmp_path)
    strict_json(done.stdout)
    done = irtool("run", model.name, "-d", "CPU", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0 and strict_json(done.stdout)["model"] == "g\\xffh.xml", done.stderr
    done = irtool("run", model.name, "-d", "CPU", env={"PYTHONIOENCODING": "utf-8"}, cwd=tmp_path)  # strict UTF-8
    assert done.returncode == 0 and done.stdout.decode("utf-8").startswith("g\\xffh.xml: GRUSequence-5"), done.stderr
    done = irtool("run", tmp_path / f"{STRAY}-missing.xml", "-d", "CPU", "--format", "json", cwd=tmp_path)
    assert done.returncode == 2 and "g\\xffh-missing.xml" in strict_json(done.stdout)["error"]


def test_harness_results_of_a_file_whose_name_is_not_utf8_are_strict_json(samples_dir, tmp_path):
    cases = tmp_path / "cases"
    cases.mkdir()
    renamed(samples_dir / "valid" / "gru_sequence_const.xml", cases / f"{STRAY}.xml", "X", "X")
    (tmp_path / "suite.toml").write_text('[suite]\nname = "names"\n[[files]]\nid = "f"\npaths = ["cases/*.xml"]\n')
    done = irtool("harness", tmp_path / "suite.toml", "-d", "CPU", "--report-dir", tmp_path / "out", "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    results = strict_json((tmp_path / "out" / "results.json").read_text())
    assert [r["case"] for r in results["results"]] == ["f:g\\xffh[seed=0]"]
    assert results["results"][0]["file"].endswith("g\\xffh.xml")
    for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines():
        strict_json(line)
    done = irtool("harness", tmp_path / "suite.toml", "-d", "CPU", "--report-dir", tmp_path / "out", "--no-progress",
                  "--resume")
    assert done.returncode == 0 and b"1 kept" in done.stdout + done.stderr, done.stdout + done.stderr


def _extra_specs(folder: Path, kind: str) -> Path:
    folder.mkdir()
    shipped = ROOT / "schemas" / "ops" / "GRUCell-3.json"
    if kind == "duplicate":
        shutil.copy(shipped, folder / "GRUCell-3.json")
        return folder / "GRUCell-3.json"
    text = {"nested": "[" * 5000 + "]" * 5000, "digits": '{"type": "GRUCell", "version": ' + "9" * 5000 + "}",
            "invalid": '{"type": ', "not-a-spec": '{"type": "GRUCell", "version": 9, "attributes": []}',
            "list": "[1, 2]"}[kind]
    (folder / "GRUCell-9.json").write_text(text)
    return folder / "GRUCell-9.json"


@pytest.mark.parametrize("kind, says", [
    ("nested", "nested more than 64 deep"), ("digits", "does not fit in 64 bits"), ("invalid", "not JSON"),
    ("duplicate", "a second spec file for GRUCell-3"), ("not-a-spec", "not an op spec irtool reads"),
    ("list", "expected a JSON object")])
def test_a_hostile_extra_spec_file_is_one_line(samples_dir, tmp_path, monkeypatch, capsys, kind, says):
    path = _extra_specs(tmp_path / "specs", kind)
    monkeypatch.setenv("IRTOOL_EXTRA_SPECS", str(path.parent))
    assert main(["validate", str(samples_dir / "valid" / "gru_cell.xml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"irtool: error: IRTOOL_EXTRA_SPECS: {path}"), err
    assert says in err and "bug" not in err and "report it" not in err
