"""Reading models: an op the running openvino's opsets (or its ONNX frontend) do not hold is
Unsupported (a release that cannot run the model: the harness skips it, run says so), while an
op no release holds where the file puts it stays the file's error.  Real openvino, real files."""
from __future__ import annotations

import json
import subprocess
import sys

import onnx
import onnx.helper as oh
import pytest

from irtool.errors import RunError, Unsupported
from irtool.runtime.model import read_model

from real_models import newest_opset_model

OPENVINO = __import__("openvino").get_version().split("-")[0]


@pytest.fixture
def newest(tmp_path):
    return newest_opset_model(tmp_path)


def relabel(path, new_version: str):
    """The model with its ErfInv layer claimed to be of another opset."""
    text = path.read_text()
    assert text.count('type="ErfInv" version="opset17"') == 1
    target = path.with_name(f"erf-{new_version}.xml")
    target.write_text(text.replace('type="ErfInv" version="opset17"', f'type="ErfInv" version="{new_version}"'))
    target.with_suffix(".bin").write_bytes(path.with_suffix(".bin").read_bytes())
    return target


def test_an_opset_newer_than_this_release_is_unsupported(newest):
    with pytest.raises(Unsupported) as raised:
        read_model(relabel(newest, "opset99"))
    assert raised.value.message.endswith(f"erf-opset99.xml: openvino {OPENVINO} cannot read it: layer "
                                         "'erfinv' is ErfInv of opset99, an opset this release does not have")
    assert "has it" not in raised.value.message  # no release irtool knows has opset99


def test_an_op_no_release_holds_in_that_opset_is_the_files_error(newest):
    with pytest.raises(RunError) as raised:
        read_model(relabel(newest, "opset5"))
    assert not isinstance(raised.value, Unsupported)
    assert "Opset opset5 doesn't contain the operation with type: ErfInv" in raised.value.message


def test_an_onnx_op_the_frontend_cannot_convert_is_unsupported(tmp_path):
    node = oh.make_node("NoSuchOp", ["x"], ["y"])
    graph = oh.make_graph([node], "g", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                          [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    path = tmp_path / "unknown.onnx"
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 21)]), str(path))
    with pytest.raises(Unsupported, match=f"the ONNX frontend of openvino {OPENVINO} cannot convert NoSuchOp-21$"):
        read_model(path)
    done = subprocess.run([sys.executable, "-m", "irtool", "run", str(path), "-d", "CPU", "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and json.loads(done.stdout)["unsupported"] is True, done.stderr
