"""Inputs a device narrows before its nodes receive them (OpenVINO's CPU computes int64 as int32):
the node is judged on what it received and the verdict names the narrowing (it said a bare PASS
for sequence_lengths of 2^32+2 and -2^63 fed through an Add).  Real OpenVINO on CPU; whether
the CPU narrows is measured, so the test holds on a device that does not."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main
from irtool.runtime.narrowing import device_narrows, received

B, T, I, H = 2, 4, 3, 5


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    """A GRUSequence whose sequence_lengths is an int64 input L plus 1 (an Add on the way)."""
    import openvino as ov
    import openvino.opset1 as o1
    import openvino.opset5 as o5

    rng = np.random.default_rng(0)
    x = o1.parameter([B, T, I], np.float32, name="X")
    h = o1.parameter([B, 1, H], np.float32, name="h")
    lengths = o1.parameter([B], np.int64, name="L")
    weights = [o1.constant((rng.standard_normal(shape) * 0.3).astype(np.float32))
               for shape in ((1, 3 * H, I), (1, 3 * H, H), (1, 3 * H))]
    gru = o5.gru_sequence(x, h, o1.add(lengths, o1.constant(np.array([1], np.int64))), *weights, H, "forward",
                          name="gru")
    path = tmp_path_factory.mktemp("narrowing") / "gru_add.xml"
    ov.save_model(ov.Model([gru.output(0), gru.output(1)], [x, h, lengths], "m"), str(path), compress_to_fp16=False)
    return path


def inputs(folder: Path, lengths: list[int]) -> Path:
    rng = np.random.default_rng(1)
    path = folder / f"in-{len(list(folder.glob('in-*')))}.npz"
    np.savez(path, X=rng.standard_normal((B, T, I)).astype(np.float32), h=np.zeros((B, 1, H), np.float32),
             L=np.array(lengths, np.int64))
    return path


@pytest.mark.parametrize("given, became", [(2 ** 32 + 2, 2), (-2 ** 63, 0)])
def test_an_input_the_device_narrows_is_named_in_the_verdict(model, tmp_path, capsys, given, became):
    code = main(["run", str(model), "-d", "CPU", "--inputs", str(inputs(tmp_path, [given, 3])), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["verdict"] == "pass", data  # judged on what the node received: the CPU's own lengths
    if device_narrows("CPU", "int64"):
        assert data["narrowed"] == [f"CPU runs input L (int64) as int32: {given} became {became}; nodes are judged "
                                    f"on the values they received"]
        assert main(["run", str(model), "-d", "CPU", "--inputs", str(inputs(tmp_path, [given, 3]))]) == 0
        last = capsys.readouterr().out.splitlines()[-1]
        assert last == (f"PASS: 1 of 1 judged nodes within tolerance; CPU runs input L (int64) as int32: {given} "
                        f"became {became}; nodes are judged on the values they received")
    else:
        assert data["narrowed"] == []
    # values int32 holds change nothing, and nothing is said
    assert main(["run", str(model), "-d", "CPU", "--inputs", str(inputs(tmp_path, [3, 2])), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["narrowed"] == []


def test_the_inputs_as_received_are_what_a_node_fed_by_them_is_judged_on():
    """A node fed straight by a narrowed input gets the values the device gave it (numpy's cast, as
    the CPU wraps them), never the ones it never received."""
    changed, said = received("CPU", {"L": np.array([2 ** 32 + 3, 4], np.int64), "X": np.ones(3, np.float32),
                                     "S": np.array([5, 6], np.int64)})
    if not device_narrows("CPU", "int64"):
        assert changed == {} and said == ()
        return
    assert set(changed) == {"L"} and changed["L"].tolist() == [3, 4] and changed["L"].dtype == np.int64
    assert [(n.input, n.given, n.became, n.count) for n in said] == [("L", 2 ** 32 + 3, 3, 1)]


def test_a_harness_job_names_the_narrowing_beside_its_verdict(model, tmp_path):
    (tmp_path / "suite.toml").write_text(f'[suite]\nname = "n"\n[[models]]\nid = "gru_add"\npath = "{model}"\n'
                                         f'inputs = "{inputs(tmp_path, [2 ** 32 + 2, 3])}"\n')
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(tmp_path / "suite.toml"), "--report-dir",
                           str(tmp_path / "out"), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    [result] = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert result["verdict"] == "pass"
    if device_narrows("CPU", "int64"):
        assert "CPU runs input L (int64) as int32: 4294967298 became 2" in result["message"], result["message"]
