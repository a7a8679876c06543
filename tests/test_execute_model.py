"""execute.py pieces: device strings, finding the RNN op in an ov.Model, writing defaults into XML."""
from __future__ import annotations

import numpy as np
import pytest

from irtool.core.device_names import DeviceError, same_device
from irtool.ir.defaults import DefaultsError, fill_defaults
from irtool.pipeline.build import build_and_save, build_model
from irtool.pipeline.inputs import seeded_inputs
from irtool.pipeline.prepare import prepare
from irtool.runtime.core import openvino_message
from irtool.runtime.devices import check_device, list_devices, skip_reason
from irtool.runtime.model import read_model
from irtool.specs.cases import OpCase


def test_check_device_refuses_unknown_names_only():
    """A name OpenVINO does not know is a DeviceError; a known device that is absent here is no
    error (skip_reason says why it is skipped, with OpenVINO's reason).  Whether this machine has a
    GPU decides which GPU is absent."""
    report = list_devices()
    for device in ("CPU", "AUTO", "AUTO:CPU", "HETERO:CPU", "MULTI:CPU", "BATCH:CPU", "BATCH:CPU(2)",
                   "GPU", "GPU.0", "NPU", "GPU.99"):
        check_device(device, report)
    reasons = {absent.name: absent.reason for absent in report.absent}
    for device in ("GPU", "GPU.0", "NPU"):
        present = any(same_device(device, name) for name in report.names)
        reason = skip_reason(device, "f32", report)
        if present:
            assert reason is None
        else:
            assert reason == f"{device} is not available here: {reasons[device.split('.')[0]]}"
    if not any(same_device("GPU.99", name) for name in report.names):
        assert skip_reason("GPU.99", "f32", report).startswith("GPU.99 is not available here: ")
    for device, says in (("", "is not a device OpenVINO knows"), ("FOO:CPU", "'FOO:CPU' is not a device OpenVINO knows"),
                         ("GPUU", "did you mean GPU")):
        with pytest.raises(DeviceError, match=says):
            check_device(device, report)


def test_a_single_op_model_is_one_node_read_from_the_model():
    case = OpCase("GRUSequence", {"hidden_size": 3, "direction": "reverse", "clip": 2.0,
                                  "linear_before_reset": True}, seed=4)
    prepared = prepare(build_model(case), "gru.xml")
    node = prepared.single
    assert node is not None and node.spec.key == "GRUSequence-5" and node.name == "GRUSequence"
    assert node.attributes["direction"] == "reverse" and node.attributes["clip"] == 2.0
    assert node.attributes["linear_before_reset"] is True and node.attributes["activations"] == ["sigmoid", "tanh"]
    assert [f.parameter for f in node.feeds] == ["X", "initial_hidden_state", "sequence_lengths", None, None, None]
    assert node.feeds[5].constant.shape == (1, 12)
    assert dict(node.model_outputs) == {0: 0, 1: 1} and not prepared.probed.needs_probe
    assert [labels[0] for labels in prepared.labels] == ["Y", "Ho"]


def test_converted_const_weights_count_as_consts(tmp_path):
    import openvino as ov

    model = build_model(OpCase("RNNCell", {"hidden_size": 3}))
    ov.save_model(model, str(tmp_path / "f16.xml"), compress_to_fp16=True)  # Const f16 -> Convert -> RNNCell
    loaded = read_model(tmp_path / "f16.xml").model
    assert "Convert" in {op.get_type_name() for op in loaded.get_ordered_ops()}
    node = prepare(loaded, "f16.xml").single
    assert node is not None and node.feeds[2].constant.dtype == np.float32


def test_dynamic_dims_take_symbol_sizes():
    case = OpCase("LSTMSequence", {"hidden_size": 3, "direction": "bidirectional"},
                  {"batch_size": 5, "seq_length": 2, "input_size": 7}, dynamic=("batch_size", "seq_length"))
    arrays = seeded_inputs(build_model(case), seed=0)
    assert arrays["X"].shape == (2, 4, 7)  # batch and seq_length default to 2 and 4; input_size from W
    assert arrays["initial_cell_state"].shape == (2, 2, 3) and arrays["sequence_lengths"].dtype == np.int32


def test_fill_defaults_writes_only_what_is_omitted(tmp_path):
    xml, _ = build_and_save(OpCase("LSTMSequence", {"hidden_size": 3, "direction": "forward", "clip": 1.5}),
                            tmp_path / "m.xml")
    text = xml.read_text().replace(' activations="sigmoid, tanh, tanh"', "").replace(' clip="1.5"', "")
    result = fill_defaults(text.encode())
    assert [f.describe() for f in result.filled] == ["layer 'LSTMSequence' (LSTMSequence): activations=sigmoid,tanh,tanh",
                                                     "layer 'LSTMSequence' (LSTMSequence): clip=0"]
    assert fill_defaults(result.xml).filled == ()


def test_fill_defaults_refuses_dtd_and_bad_xml():
    with pytest.raises(DefaultsError, match="DTD"):
        fill_defaults(b'<?xml version="1.0"?><!DOCTYPE net [<!ENTITY x "y">]><net>&x;</net>')
    with pytest.raises(DefaultsError, match="not well-formed"):
        fill_defaults(b"<net><layers>")


def test_openvino_message_keeps_what_is_wrong():
    error = RuntimeError("Exception from src/a.cpp:1:\nCheck 'x' failed at src/b.hpp:2:\n"
                         "While validating node 'opset3::GRUCell g (...) -> ()' with friendly_name 'g':\n"
                         "First dimension of B is wrong.\n")
    assert openvino_message(error) == "layer 'g': First dimension of B is wrong."
    lib = RuntimeError('Exception from x:\nCannot load library "/a/b/libgpu.so": libOpenCL.so.1: missing')
    assert openvino_message(lib) == 'Cannot load library "libgpu.so": libOpenCL.so.1: missing'
