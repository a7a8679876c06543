"""build.py and cases.py: OpCase -> ov.Model from the spec, saved whole, refused with one clear message."""
from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

from irtool.core.files import FileError
from irtool.pipeline.build import BuildError, build_and_save, build_model, buildable, factory, save_model
from irtool.specs import registry
from irtool.specs.cases import CaseError, OpCase, free_symbols, ragged_lengths

FAMILY_SPECS = [spec for spec in registry() if spec.family]


@pytest.mark.parametrize("spec", [s for s in FAMILY_SPECS if s.openvino_loads], ids=lambda s: s.key)
def test_every_loadable_spec_has_a_factory_taking_its_attribute_names(spec):
    parameters = inspect.signature(factory(spec)).parameters
    assert set(spec.attributes) <= set(parameters)
    positional = [name for name in parameters if name not in spec.attributes and name != "name"]
    assert positional == [port.name for port in spec.inputs], "factory inputs are not in the spec's port order"


def test_the_factories_come_from_the_specs_by_openvinos_rule_or_the_spec_s_own_key():
    factories = {spec.key: spec.factory for spec in buildable()}
    assert factories == {
        "GRUSequence-5": "openvino.opset5.gru_sequence", "LSTMSequence-5": "openvino.opset5.lstm_sequence",
        "RNNSequence-5": "openvino.opset5.rnn_sequence", "GRUCell-3": "openvino.opset3.gru_cell",
        "LSTMCell-4": "openvino.opset4.lstm_cell",
        "RNNCell-0": "openvino.opset4.rnn_cell"}  # the spec's "factory": openvino.opset1 has no rnn_cell


def test_lstm_sequence_1_is_refused_naming_version_5():
    with pytest.raises(BuildError, match="LSTMSequence-1 cannot be built: .*LSTMSequence-5"):
        build_model(OpCase("LSTMSequence", {"hidden_size": 4, "direction": "forward"}, version=1))


@pytest.mark.parametrize("case, message", [
    (OpCase("NoSuchOp"), "no spec for NoSuchOp"),
    (OpCase("GRUSequence", {"hidden_size": 4}), "attribute 'direction' is required"),
    (OpCase("GRUSequence", {"hidden_size": 4, "direction": "sideways"}), "'sideways' is not one of"),
    (OpCase("GRUCell", {"hidden_size": 4, "bogus": 1}), "unknown attribute 'bogus'"),
    (OpCase("GRUCell", {"hidden_size": 4}, {"seq_length": 3}), "unknown size seq_length"),
    (OpCase("GRUCell", {"hidden_size": 4}, {"batch_size": 0}), "batch_size is 0; expected a positive integer"),
    (OpCase("GRUCell", {"hidden_size": 4}, dynamic=("hidden_size",)), "dynamic names hidden_size, not a dim that can be dynamic"),
    (OpCase("GRUCell", {"hidden_size": 4}, element_type="i8"), "element type 'i8'"),
])
def test_bad_cases_raise_one_line(case, message):
    with pytest.raises(CaseError, match=message) as info:
        build_model(case)
    assert "\n" not in info.value.message


def test_model_ports_are_named_and_ordered_by_the_spec():
    case = OpCase("LSTMSequence", {"hidden_size": 3, "direction": "bidirectional"},
                  {"batch_size": 2, "seq_length": 5, "input_size": 4}, dynamic=("batch_size",))
    model = build_model(case)
    assert [i.get_any_name() for i in model.inputs] == ["X", "initial_hidden_state", "initial_cell_state",
                                                         "sequence_lengths"]
    assert [o.get_any_name() for o in model.outputs] == ["Y", "Ho", "Co"]
    assert str(model.inputs[0].get_partial_shape()) == "[?,5,4]"
    assert str(model.outputs[0].get_partial_shape()) == "[?,2,5,3]"
    weights = [op for op in model.get_ordered_ops() if op.get_type_name() == "Constant"]
    assert [tuple(op.get_output_shape(0)) for op in weights] == [(2, 12, 4), (2, 12, 3), (2, 12)]


def test_weights_as_parameters_and_gru_cell_always_gets_b():
    model = build_model(OpCase("GRUCell", {"hidden_size": 4, "linear_before_reset": True}, weights_as_parameters=True))
    assert [i.get_any_name() for i in model.inputs] == ["X", "initial_hidden_state", "W", "R", "B"]
    assert list(model.inputs[-1].get_shape()) == [16]  # 4 * hidden_size with linear_before_reset


def test_seed_decides_the_weights():
    def weights(seed):
        model = build_model(OpCase("RNNCell", {"hidden_size": 4}, seed=seed))
        return [op.get_data().copy() for op in model.get_ordered_ops() if op.get_type_name() == "Constant"]
    assert all(np.array_equal(a, b) for a, b in zip(weights(1), weights(1)))
    assert not np.array_equal(weights(1)[0], weights(2)[0])


def test_free_symbols_come_from_the_spec():
    assert free_symbols(registry().get("GRUSequence")) == ["batch_size", "seq_length", "input_size"]
    assert free_symbols(registry().get("LSTMCell")) == ["batch_size", "input_size"]


def test_ragged_lengths_are_valid():
    rng = np.random.default_rng(0)
    for _ in range(20):
        lengths = ragged_lengths((4,), 6, rng)
        assert lengths[0] == 6 and lengths.min() >= 1 and lengths.max() <= 6 and len(set(lengths)) > 1
    assert ragged_lengths((3,), 1, rng).tolist() == [1, 1, 1]


def test_save_is_whole_and_replaces_old_files(tmp_path):
    target = tmp_path / "m.xml"
    target.write_text("old")
    target.with_suffix(".bin").write_bytes(b"old")
    xml, weights = build_and_save(OpCase("GRUCell", {"hidden_size": 4}), target)
    assert xml.read_text().startswith("<?xml") and weights.stat().st_size == 4 * (12 * 8 + 12 * 4 + 12)
    assert sorted(os.listdir(tmp_path)) == ["m.bin", "m.xml"]


def test_save_refuses_bad_targets_without_writing(tmp_path):
    model = build_model(OpCase("GRUCell", {"hidden_size": 4}))
    with pytest.raises(CaseError, match="must end in .xml"):
        save_model(model, tmp_path / "m.txt")
    with pytest.raises(FileError, match="does not exist"):
        save_model(model, tmp_path / "missing" / "m.xml")
    assert os.listdir(tmp_path) == []
