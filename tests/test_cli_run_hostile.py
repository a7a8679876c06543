"""``irtool run`` on hostile files: nothing blocks, nothing is destroyed, every refusal is one line, exit 2."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main
from irtool.pipeline.build import build_and_save, build_model
from irtool.pipeline.inputs import seeded_inputs
from irtool.specs.cases import OpCase


@pytest.fixture(scope="module")
def gru(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("gru")
    return build_and_save(OpCase("GRUSequence", {"hidden_size": 4, "direction": "forward"},
                                 {"batch_size": 2, "seq_length": 3, "input_size": 5}), folder / "gru.xml")[0]


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(["run", *argv])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    if code == 2:
        assert len(lines) == 1 and lines[0].startswith("irtool: error: ") and "Traceback" not in err, err
    return code, err


def test_a_fifo_as_inputs_or_as_the_weights_never_blocks(gru, capsys, tmp_path):
    fifo = tmp_path / "in.npz"
    os.mkfifo(fifo)
    code, err = run(capsys, str(gru), "-d", "CPU", "--inputs", str(fifo))
    assert code == 2 and "in.npz" in err and "FIFO" in err
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "gru.xml").write_bytes(gru.read_bytes())
    os.mkfifo(folder / "gru.bin")
    code, err = run(capsys, str(folder / "gru.xml"), "-d", "CPU")
    assert code == 2 and "gru.bin" in err and "FIFO" in err


def test_save_outputs_never_replaces_a_device_node_or_a_folder(gru, capsys, tmp_path, device_node):
    device = device_node(tmp_path / "null")
    code, err = run(capsys, str(gru), "-d", "CPU", "--save-outputs", str(device))
    assert code == 2 and "character device" in err and device.is_char_device()
    for target in (tmp_path, Path(".")):
        code, err = run(capsys, str(gru), "-d", "CPU", "--save-outputs", str(target))
        assert code == 2 and "directory" in err
    code, err = run(capsys, str(gru), "-d", "CPU", "--save-outputs", str(tmp_path / "gone" / "out.npz"))
    assert code == 2 and "gone" in err


def test_outputs_named_like_numpy_keywords_are_saved_whole(capsys, tmp_path):
    """np.savez takes names as keywords: an output called allow_pickle or file would be lost."""
    import openvino as ov
    import openvino.opset1 as ops

    model = build_model(OpCase("RNNCell", {"hidden_size": 3}, {"batch_size": 2, "input_size": 4}))
    x = ops.parameter([2, 3], np.float32, name="x")
    extras = []
    for name in ("allow_pickle", "file"):
        extras.append(ops.relu(x if not extras else extras[-1]))
        extras[-1].output(0).get_tensor().set_names({name})
    both = ov.Model(list(model.outputs) + [e.output(0) for e in extras], list(model.get_parameters()) + [x],
                    "keywords")
    ov.save_model(both, str(tmp_path / "m.xml"), compress_to_fp16=False)
    arrays = seeded_inputs(both)
    np.savez(tmp_path / "in.npz", **arrays)
    code = main(["run", str(tmp_path / "m.xml"), "-d", "CPU", "--inputs", str(tmp_path / "in.npz"),
                 "--save-outputs", str(tmp_path / "out.npz")])
    capsys.readouterr()
    with np.load(tmp_path / "out.npz") as saved:
        assert set(saved.files) - {"irtool:run"} == {"Ho", "allow_pickle", "file"}, saved.files
        assert all(saved[key].size for key in saved.files)
    assert code == 0


def test_a_seed_beside_inputs_is_refused_not_ignored(gru, capsys, tmp_path):
    """--seed seeds the inputs irtool generates; beside --inputs it changed nothing, silently."""
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **seeded_inputs(__import__("openvino").Core().read_model(gru)))
    code, err = run(capsys, str(gru), "-d", "CPU", "--inputs", str(inputs), "--seed", "5")
    assert code == 2 and "--seed does not apply beside --inputs" in err and "in.npz" in err
