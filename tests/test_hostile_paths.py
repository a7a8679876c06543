"""Files a model names are read only inside the model's folder (issue 22, item 1).

A generator of hostile locations for ONNX external data (``..``, absolute, NUL, links out of
the folder, FIFO, folder, short file, bad offset), an IR whose .bin links out, and a
reproducer folder whose files link out: each is a one-line refusal naming the model, the
tensor and the location (``irtool validate``: ONNX005), never a read outside.  The sentinel
tree around the work folder (tests/sentinel.py) holds files of the same names, a valid
``data.bin`` among them (reading it would pass), and the working directory of every command
is one of its folders; the kernel's inotify proves none was opened.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx.external_data_helper import convert_model_to_external_data
from sentinel import Sentinel

from irtool.cli.program import main
from irtool.onnx.model import generate, save_inputs
from irtool.pipeline.build import build_and_save
from irtool.specs.cases import OpCase

TENSORS = ("W", "R", "B")


@pytest.fixture(scope="module")
def external(tmp_path_factory) -> tuple[onnx.ModelProto, bytes, Path]:
    """A GRU whose W, R and B are external data in data.bin; the data; its inputs file."""
    folder = tmp_path_factory.mktemp("external")
    made = generate("GRU", 14, {"hidden_size": 4}, batch=1, seq_length=3, input_size=3, seed=1,
                    optional_inputs=("B",))
    model = made.model
    convert_model_to_external_data(model, all_tensors_to_one_file=True, location="data.bin", size_threshold=0)
    onnx.save(model, folder / "model.onnx")  # writes data.bin beside it
    save_inputs(made.feeds, folder / "inputs.npz")
    return onnx.load(folder / "model.onnx", load_external_data=False), (folder / "data.bin").read_bytes(), \
        folder / "inputs.npz"


@pytest.fixture
def place(tmp_path, external, monkeypatch):
    """(model folder, sentinel): the work folder tmp/work/model; a sentinel tree around it (tmp,
    tmp/work, tmp/cwd: a valid data.bin and the rest), the working directory tmp/cwd."""
    _, data, inputs = external
    wrong = np.random.default_rng(7).standard_normal(len(data) // 4).astype(np.float32).tobytes()
    folder = tmp_path / "work" / "model"
    folder.mkdir(parents=True)
    shutil.copy(inputs, folder / "inputs.npz")
    guard = Sentinel([tmp_path, tmp_path / "work", tmp_path / "cwd"],
                     {"data.bin": data, "wrong.bin": wrong, "model.bin": wrong, "secret": b"secret\n"})
    (tmp_path / "cwd" / "data.bin").write_bytes(wrong)  # the weights a reader relative to the cwd would take
    guard.touched()
    monkeypatch.chdir(tmp_path / "cwd")
    yield folder, guard
    guard.close()


def write_model(folder: Path, model: onnx.ModelProto, location: str, offset: str | None = None) -> Path:
    changed = onnx.ModelProto()
    changed.CopyFrom(model)
    for tensor in changed.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = location
            if entry.key == "offset" and offset is not None:
                entry.value = offset
    path = folder / "model.onnx"
    path.write_bytes(changed.SerializeToString())
    return path


def one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("irtool: error: ") and "Traceback" not in captured.err, captured.err
    return lines[0]


def test_external_data_comes_from_the_models_folder_whatever_the_working_directory(place, external, capsys):
    """Before: from another folder an internal error (and validate's ONNX003); from a folder holding
    another data.bin, those weights, and a FAIL where OpenVINO was right."""
    folder, guard = place
    model, data, _ = external
    (folder / "data.bin").write_bytes(data)
    path = write_model(folder, model, "data.bin")
    code = main(["run", str(path), "-d", "CPU", "--inputs", str(folder / "inputs.npz"), "--compare-with",
                 "onnxruntime", "--format", "json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["verdict"] == "pass" and [n["verdict"] for n in result["nodes"]] == ["pass"]
    assert main(["validate", str(path), "--format", "json"]) == 0
    diagnostics = json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]
    assert [d["code"] for d in diagnostics] == ["ONNX000"] and "onnx.checker (onnx" in diagnostics[0]["message"]
    assert "; valid)" in diagnostics[0]["message"]
    assert guard.touched() == []


def test_a_link_inside_the_folder_is_read(tmp_path, external, capsys, monkeypatch):
    """data.bin -> weights/data.bin stays inside.  (A Hugging Face style cache, model.onnx and
    data.bin linking into blobs/, OpenVINO's ONNX frontend refuses itself: "resolves to ... outside
    the base directory"; an IR of that layout runs: test_an_ir_of_links_into_one_blobs_folder_runs.)"""
    model, data, inputs = external
    monkeypatch.chdir(tmp_path)
    inside = tmp_path / "inside"
    (inside / "weights").mkdir(parents=True)
    (inside / "weights" / "data.bin").write_bytes(data)
    (inside / "data.bin").symlink_to("weights/data.bin")
    assert main(["run", str(write_model(inside, model, "data.bin")), "-d", "CPU", "--inputs", str(inputs)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "PASS: 1 of 1 judged nodes within tolerance"


def _link(target_of):
    def make(folder: Path) -> None:
        os.symlink(target_of(folder), folder / "link.bin")
    return make


# name: (location, what to make in the model folder, offset, the refusal's words)
HOSTILE = {
    "parent": ("../data.bin", None, None, "is at '../data.bin', a path with '..'"),
    "parent deeper": ("sub/../../data.bin", None, None, "is at 'sub/../../data.bin', a path with '..'"),
    "parent backslash": ("..\\data.bin", None, None, "is at '..\\data.bin', a path with '..'"),
    "absolute": ("{outside}/data.bin", None, None, "is at '{outside}/data.bin', an absolute path"),
    "NUL": ("data.bin\x00.txt", None, None, "is at 'data.bin\\x00.txt', a name with a NUL character"),
    "link out": ("link.bin", _link(lambda f: f.parent.parent / "data.bin"), None,
                 "is at 'link.bin', a symbolic link to {outside}/data.bin, outside the folder"),
    "link up": ("link.bin", _link(lambda f: "../../data.bin"), None,
                "is at 'link.bin', a symbolic link to {outside}/data.bin, outside the folder"),
    "folder link out": ("up/data.bin", lambda f: os.symlink(f.parent.parent, f / "up"), None,
                        "is at 'up/data.bin', a symbolic link to {outside}/data.bin, outside the folder"),
    "FIFO": ("data.bin", lambda f: os.mkfifo(f / "data.bin"), None, "the file is a named pipe (FIFO)"),
    "folder": ("sub", lambda f: (f / "sub").mkdir(), None, "the file is a directory"),
    "missing": ("gone.bin", None, None, "('gone.bin'): {folder}/gone.bin: no such file"),
    "short": ("data.bin", lambda f: (f / "data.bin").write_bytes(b"\0" * 10), None,
              "lie past the end of the file (10 bytes)"),
    "offset past the end": ("data.bin", "data", "1000000", "lie past the end of the file"),
    "offset not a number": ("data.bin", "data", "-1", "has offset '-1'; expected a whole number of bytes"),
    "empty": ("", None, None, "names no file (an empty location)"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_external_data_is_a_one_line_refusal(name, place, external, capsys):
    folder, guard = place
    model, data, _ = external
    location, make, offset, words = HOSTILE[name]
    outside = folder.parent.parent
    location = location.format(outside=outside)
    words = words.format(outside=outside, folder=folder)
    if make == "data":
        (folder / "data.bin").write_bytes(data)
    elif make is not None:
        make(folder)
    path = write_model(folder, model, location, offset)
    code = main(["run", str(path), "-d", "CPU", "--inputs", str(folder / "inputs.npz")])
    line = one_error_line(capsys)
    assert code == 2 and line.startswith(f"irtool: error: {path}: the external data of tensor 'W' ")
    assert words in line and line.endswith("(and 2 more tensors)"), line
    if name == "short":
        assert "'W' ('data.bin'): bytes 0..144 lie past the end" in line
    assert main(["validate", str(path), "--format", "json"]) == 1
    diagnostics = json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]
    refused = [d for d in diagnostics if d["code"] == "ONNX005"]
    assert [d["found"] for d in refused] == list(TENSORS) and "ONNX003" not in {d["code"] for d in diagnostics}
    assert all(d["message"].startswith(f"the external data of tensor '{d['found']}' ") and words in d["message"]
               for d in refused), refused
    assert main(["validate", str(path)]) == 1  # the text lines: one per diagnostic, the location escaped
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 5 and sum(f"{path}: error[ONNX005] " in line for line in out) == 3, out
    assert guard.touched() == []


@pytest.fixture(scope="module")
def gru_ir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gru-ir")
    return build_and_save(OpCase("GRUSequence", {"hidden_size": 4, "direction": "forward"},
                                 {"batch_size": 2, "seq_length": 3, "input_size": 5}), folder / "gru.xml")[0]


def test_an_ir_whose_bin_links_out_of_its_folder_is_refused(place, gru_ir, capsys):
    folder, guard = place
    outside = folder.parent.parent
    (outside / "model.bin").write_bytes(gru_ir.with_suffix(".bin").read_bytes())  # weights that would pass
    guard.touched()
    xml = folder / "gru.xml"
    shutil.copy(gru_ir, xml)
    (folder / "gru.bin").symlink_to(outside / "model.bin")
    code = main(["run", str(xml), "-d", "CPU"])
    assert code == 2 and one_error_line(capsys) == (
        f"irtool: error: {xml}: its weights file is at 'gru.bin', a symbolic link to {outside}/model.bin, "
        f"outside the folder; irtool reads a model's files only inside its folder ({folder})")
    assert main(["run", str(xml), "-d", "CPU", "--fill-defaults"]) == 2 and "a symbolic link to" in one_error_line(capsys)
    assert main(["validate", str(xml), "--with-openvino", "--format", "json"]) == 1
    found = {d["code"]: d["message"] for d in json.loads(capsys.readouterr().out)["files"][0]["diagnostics"]}
    assert f"which is a symbolic link out of the model's folder (to {outside}/model.bin)" in found["IR070"]
    assert found["IR083"].startswith("OpenVINO was not asked: gru.bin is not a regular file inside the model's folder")
    assert guard.touched() == []


def test_an_ir_of_links_into_one_blobs_folder_runs(tmp_path, gru_ir, capsys):
    blobs, snapshot = tmp_path / "blobs", tmp_path / "snapshots" / "abc"
    blobs.mkdir()
    snapshot.mkdir(parents=True)
    shutil.copy(gru_ir, blobs / "x1")
    shutil.copy(gru_ir.with_suffix(".bin"), blobs / "b1")
    (snapshot / "gru.xml").symlink_to("../../blobs/x1")
    (snapshot / "gru.bin").symlink_to("../../blobs/b1")
    assert main(["run", str(snapshot / "gru.xml"), "-d", "CPU"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("PASS")


@pytest.mark.parametrize("name", ["inputs.npz", "model.xml", "model.bin", "case.json"])
def test_a_reproducer_folder_whose_file_links_out_is_refused(name, place, gru_ir, capsys):
    folder, guard = place
    outside = folder.parent.parent
    shutil.copy(gru_ir, folder / "model.xml")
    shutil.copy(gru_ir.with_suffix(".bin"), folder / "model.bin")
    (folder / "case.json").write_text("{}")
    (folder / name).unlink(missing_ok=True)
    (folder / name).symlink_to(outside / "secret")
    code = main(["reduce", str(folder), "-d", "CPU", "-o", str(folder / "out")])
    assert code == 2 and one_error_line(capsys) == (
        f"irtool: error: {folder}: the reproducer's {name} is at '{name}', a symbolic link to {outside}/secret, "
        f"outside the folder; irtool reads a model's files only inside its folder ({folder})")
    assert guard.touched() == []
