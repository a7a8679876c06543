"""The axes of ``irtool reduce``: every cut is read from the spec and keeps the case consistent.

The strong checks use the reference: batch elements are independent, so cutting the batch
must give those elements' outputs; the directions of a bidirectional op are independent, so
cutting to one must give that direction's outputs; a forward op's first steps do not depend
on later ones.  Gate blocks are checked by content.  Every proposal of every axis, for every
op irtool builds, must fit the spec and round-trip through an OpenVINO model.
"""
from __future__ import annotations

import numpy as np
import pytest

from irtool.pipeline.build import build_model, buildable
from irtool.pipeline.concrete import ConcreteCase, from_node
from irtool.pipeline.inputs import seeded_inputs
from irtool.pipeline.prepare import prepare
from irtool.reduce.axes import attributes_to_defaults, axes_of, cut_symbol, simpler_values, uniform_lengths
from irtool.reference import evaluate
from irtool.runtime.captured import input_arrays
from irtool.specs.cases import OpCase

SEQUENCES = [("GRUSequence", {"linear_before_reset": True}), ("LSTMSequence", {}), ("RNNSequence", {})]
SIZES = {"batch_size": 4, "seq_length": 5, "input_size": 3}


def concrete(op: str, attributes: dict, sizes: dict | None = None, **case: object) -> ConcreteCase:
    model = build_model(OpCase(op, attributes, sizes if sizes is not None else SIZES, **case))
    node = prepare(model, op).single
    assert node is not None
    inputs = seeded_inputs(model, seed=1, sizes=sizes)
    return from_node(node, input_arrays(node, inputs))


def reference(case: ConcreteCase) -> tuple[np.ndarray, ...]:
    arrays = [case.arrays[port.name] for port in case.ports]
    return evaluate(case.spec.type, arrays, dict(case.attributes), version=case.spec.version)


def proposals(case: ConcreteCase, axis: str) -> dict[str, ConcreteCase]:
    return {p.change: p.case for make in axes_of(case) for p in make(case) if p.axis == axis}


@pytest.mark.parametrize("op, extra", SEQUENCES)
def test_a_batch_cut_gives_those_elements_outputs(op, extra):
    case = concrete(op, {"hidden_size": 3, "direction": "bidirectional", **extra})
    cut = cut_symbol(case, "batch_size", 1, 3)
    assert cut.symbols["batch_size"] == 2
    for whole, part in zip(reference(case), reference(cut)):
        np.testing.assert_allclose(part, whole[1:3], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("op, extra", SEQUENCES)
def test_one_direction_of_a_bidirectional_op_is_that_direction(op, extra):
    case = concrete(op, {"hidden_size": 3, "direction": "bidirectional", **extra})
    cuts = proposals(case, "direction")
    assert set(cuts) == {"bidirectional->forward", "bidirectional->reverse"}
    for index, direction in enumerate(("forward", "reverse")):
        cut = cuts[f"bidirectional->{direction}"]
        assert cut.attributes["direction"] == direction and cut.symbols["num_directions"] == 1
        for whole, part in zip(reference(case), reference(cut)):
            np.testing.assert_allclose(part, whole[:, index:index + 1], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("op, extra", SEQUENCES)
def test_a_forward_op_cut_in_time_keeps_its_first_steps_and_clamps_the_lengths(op, extra):
    case = concrete(op, {"hidden_size": 3, "direction": "forward", **extra})
    cut = proposals(case, "seq_length")["5->2"]
    np.testing.assert_array_equal(cut.arrays["sequence_lengths"], np.minimum(case.arrays["sequence_lengths"], 2))
    np.testing.assert_allclose(reference(cut)[0], reference(case)[0][:, :, :2], rtol=1e-6, atol=1e-7)


def test_a_reverse_op_is_cut_in_time_from_the_start_first():
    case = concrete("GRUSequence", {"hidden_size": 2, "direction": "reverse"})
    first = next(p for p in axes_of(case)[2](case))
    assert (first.axis, first.change) == ("seq_length", "5->1 (from 4)")
    np.testing.assert_array_equal(first.case.arrays["X"], case.arrays["X"][:, 4:])
    np.testing.assert_array_equal(first.case.arrays["sequence_lengths"],
                                  np.clip(case.arrays["sequence_lengths"] - 4, 0, 1))


@pytest.mark.parametrize("op, attributes", [
    ("GRUSequence", {"direction": "bidirectional", "linear_before_reset": True}),
    ("LSTMSequence", {"direction": "reverse"}),
    ("GRUCell", {"linear_before_reset": True}),
    ("LSTMCell", {}),
    ("RNNCell", {}),
])
def test_a_hidden_cut_keeps_the_same_units_of_every_gate(op, attributes):
    sizes = {"batch_size": 2, "input_size": 3} | ({"seq_length": 2} if "Sequence" in op else {})
    case = concrete(op, {"hidden_size": 4, **attributes}, sizes)
    cut = cut_symbol(case, "hidden_size", 1, 3)
    assert cut.attributes["hidden_size"] == 2 and cut.symbols["hidden_size"] == 2
    for port in case.ports:
        wanted = case.arrays[port.name]
        for axis, text in enumerate(port.dim_texts):
            if "hidden_size" in text:  # blocks of 4 units (gates stacked): keep units 1 and 2 of each
                blocks = wanted.shape[axis] // 4
                wanted = np.take(wanted, [4 * block + unit for block in range(blocks) for unit in (1, 2)], axis=axis)
        np.testing.assert_array_equal(cut.arrays[port.name], wanted, err_msg=port.name)


def test_an_input_cut_cuts_x_and_w_alike():
    case = concrete("LSTMSequence", {"hidden_size": 2, "direction": "forward"})
    cut = cut_symbol(case, "input_size", 2, 3)
    np.testing.assert_array_equal(cut.arrays["X"], case.arrays["X"][..., 2:3])
    np.testing.assert_array_equal(cut.arrays["W"], case.arrays["W"][..., 2:3])
    np.testing.assert_array_equal(cut.arrays["R"], case.arrays["R"])


def test_linear_before_reset_to_default_drops_the_fourth_bias_block():
    case = concrete("GRUSequence", {"hidden_size": 2, "direction": "forward", "linear_before_reset": True,
                                    "clip": 3.0})
    found = {p.axis: p for p in attributes_to_defaults(case)}
    assert {name: p.change for name, p in found.items()} == {
        "clip": "3->0 (default)", "linear_before_reset": "true->false (default)"}
    cut = found["linear_before_reset"].case
    assert cut.arrays["B"].shape == (1, 6)
    np.testing.assert_array_equal(cut.arrays["B"], case.arrays["B"][:, :6])
    assert cut.symbols["hidden_size"] == 2


def test_ragged_lengths_become_uniform():
    case = concrete("GRUSequence", {"hidden_size": 2, "direction": "forward"})
    (proposal,) = uniform_lengths(case)
    assert proposal.change.endswith("->all 5")
    np.testing.assert_array_equal(proposal.case.arrays["sequence_lengths"], [5, 5, 5, 5])
    assert list(uniform_lengths(proposal.case)) == []


def test_values_only_ever_get_simpler():
    case = concrete("RNNCell", {"hidden_size": 2}, {"batch_size": 1, "input_size": 2})
    changes = [(p.axis, p.change) for p in simpler_values(case)]
    assert changes[:3] == [("X", "to zeros"), ("X", "to ones"), ("X", "to integers")]
    ones = case.replace(arrays={**case.arrays, "X": np.ones_like(case.arrays["X"])})
    assert [p.change for p in simpler_values(ones) if p.axis == "X"] == ["to zeros"]
    zeros = case.replace(arrays={**case.arrays, "X": np.zeros_like(case.arrays["X"])})
    assert [p.change for p in simpler_values(zeros) if p.axis == "X"] == []


@pytest.mark.parametrize("op_version", sorted((s.type, s.version) for s in buildable()), ids=lambda key: f"{key[0]}-{key[1]}")
@pytest.mark.parametrize("weights_as_parameters", [False, True], ids=["const", "parameter"])
def test_every_proposal_fits_the_spec_and_round_trips_through_openvino(op_version, weights_as_parameters):
    op, version = op_version
    attributes = {"hidden_size": 2} | ({"direction": "bidirectional"} if "Sequence" in op else {})
    sizes = {"batch_size": 2, "input_size": 2} | ({"seq_length": 2} if "Sequence" in op else {})
    case = concrete(op, attributes, sizes, version=version, weights_as_parameters=weights_as_parameters)
    seen = 0
    for axis in axes_of(case):
        for proposal in axis(case):
            candidate = proposal.case
            assert candidate.symbols, proposal  # fits the spec
            assert candidate.elements <= case.elements
            node = prepare(candidate.to_model(), "candidate").single
            assert node.attributes["hidden_size"] == candidate.attributes["hidden_size"]
            for feed in node.feeds:
                if feed.parameter is None:
                    np.testing.assert_array_equal(feed.constant, candidate.arrays[feed.port.name])
                else:
                    assert feed.port.name not in candidate.constants
            seen += 1
    assert seen >= 8


def test_dynamic_dims_stay_dynamic():
    case = concrete("GRUSequence", {"hidden_size": 2, "direction": "forward"}, dynamic=("batch_size",))
    assert case.dynamic == {"X": (0,), "initial_hidden_state": (0,), "sequence_lengths": (0,)}
    model = cut_symbol(case, "batch_size", 0, 1).to_model()
    assert [str(port.get_partial_shape()) for port in model.inputs] == ["[?,5,3]", "[?,1,2]", "[?]"]


def test_the_fingerprint_tells_cases_apart():
    sizes = {"batch_size": 2, "input_size": 2}
    case = concrete("RNNCell", {"hidden_size": 2}, sizes)
    assert case.fingerprint() == concrete("RNNCell", {"hidden_size": 2}, sizes).fingerprint()
    assert cut_symbol(case, "batch_size", 0, 1).fingerprint() != case.fingerprint()
    assert case.replace(attributes={**case.attributes, "clip": 1.0}).fingerprint() != case.fingerprint()
