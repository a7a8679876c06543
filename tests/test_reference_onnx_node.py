"""irtool.onnx.semantics.evaluate_node: one ONNX GRU/LSTM/RNN node in ONNX semantics.

Oracles: onnxruntime (CPU, f32) on a seeded grid over every attribute it implements, and
ONNX's own expected outputs (the onnx package's backend node cases, at every opset whose
schema has the case's attributes).  Where onnxruntime departs from the ONNX pages, a test
per departure measures onnxruntime's behaviour and asserts that the reference follows the
page.  Bound: 1e-5, absolute up to 1 and relative above (conftest_reference.assert_close).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

onnxruntime = pytest.importorskip("onnxruntime", reason="onnxruntime is an oracle of this file")

from conftest_onnx import backend_cases, case_inputs, input_list, onnxruntime_node  # noqa: E402
from conftest_reference import assert_close  # noqa: E402

from irtool.onnx import schema  # noqa: E402
from irtool.onnx.semantics import evaluate_node  # noqa: E402
from irtool.reference.activations import KINDS  # noqa: E402

GATES = {"GRU": 3, "LSTM": 4, "RNN": 1}
PER_SET = {"GRU": 2, "LSTM": 3, "RNN": 1}
ACTIVATIONS = ["Relu", "Tanh", "Sigmoid", "Affine", "LeakyRelu", "ThresholdedRelu", "ScaledTanh", "HardSigmoid",
               "Elu", "Softsign", "Softplus"]
# Where onnxruntime's default alpha/beta is the page's (the others are departures, tested below)
SAME_DEFAULTS = {"leakyrelu", "hardsigmoid", "elu"}
ORT_OPSETS = (7, 14, 22)  # onnxruntime has no kernel for GRU-1/3, LSTM-1, RNN-1


@dataclass(frozen=True)
class OnnxCase:
    """One node and its inputs, ONNX names and layouts."""

    op: str
    opset: int
    attributes: dict[str, Any]
    inputs: dict[str, np.ndarray] = field(repr=False)

    def __str__(self) -> str:
        shown = {k: v for k, v in self.attributes.items() if k != "hidden_size"}
        present = "+".join(n for n in self.inputs if n not in ("X", "W", "R"))
        lengths = self.inputs.get("sequence_lens")
        return (f"{self.op}-{self.opset}-{shown}-{present or 'XWR'}"
                + (f"-len{lengths.tolist()}" if lengths is not None else ""))


def _parameters(rng: np.random.Generator, names: list[str], which: str) -> list[float] | None:
    """Values for the functions that take ``which`` (ONNX reads them in order), or None to use
    the defaults where onnxruntime's agree with the page."""
    takers = [n.lower() for n in names if getattr(KINDS[n.lower()], f"takes_{which}")]
    if not takers:
        return None
    if set(takers) <= SAME_DEFAULTS and rng.random() < 0.5:
        return None
    return [round(float(rng.uniform(0.1, 0.9)), 3) for _ in takers]


def grid_case(op: str, opset: int, k: int) -> OnnxCase:
    rng = np.random.default_rng(1000 * opset + 10 * k + GATES[op])
    direction = ("forward", "reverse", "bidirectional")[k % 3]
    directions = 2 if direction == "bidirectional" else 1
    hidden, batch, seq, size = (int(v) for v in rng.integers(1, 6, 4))
    attributes: dict[str, Any] = {"hidden_size": hidden}
    if k % 2 or direction != "forward":
        attributes["direction"] = direction
    if k % 4:
        per_direction = [list(rng.choice(ACTIVATIONS, PER_SET[op])) for _ in range(directions)]
        names = [str(n) for one in per_direction for n in one]
        attributes["activations"] = names
        for which in ("alpha", "beta"):
            values = _parameters(rng, names, which)
            if values is not None:
                attributes[f"activation_{which}"] = values
    if rng.random() < 0.4:
        attributes["clip"] = round(float(rng.uniform(0.2, 2.0)), 3)
    if op == "GRU" and rng.random() < 0.6:
        attributes["linear_before_reset"] = int(rng.integers(0, 2))
    if op == "LSTM" and rng.random() < 0.4:
        attributes["input_forget"] = int(rng.integers(0, 2))
    if opset >= 14 and rng.random() < 0.6:
        attributes["layout"] = int(rng.integers(0, 2))
    layout = attributes.get("layout", 0)

    def uniform(*shape: int, bound: float = 1.0) -> np.ndarray:
        return rng.uniform(-bound, bound, shape).astype(np.float32)

    rows = GATES[op] * hidden
    x = uniform(seq, batch, size)
    inputs = {"X": x if layout == 0 else x.transpose(1, 0, 2).copy(),
              "W": uniform(directions, rows, size, bound=1.2 / np.sqrt(size)),
              "R": uniform(directions, rows, hidden, bound=1.2 / np.sqrt(hidden))}
    if rng.random() < 0.7:
        inputs["B"] = uniform(directions, 2 * rows, bound=0.5)
    if rng.random() < 0.6:
        lengths = rng.integers(0, seq + 1, batch)
        lengths[0] = seq if rng.random() < 0.5 else lengths[0]
        inputs["sequence_lens"] = lengths.astype(np.int32)
    states = ["initial_h"] + (["initial_c"] if op == "LSTM" else [])
    for name in states:
        if rng.random() < 0.6:
            state = uniform(directions, batch, hidden)
            inputs[name] = state if layout == 0 else state.transpose(1, 0, 2).copy()
    if op == "LSTM" and rng.random() < 0.5:
        inputs["P"] = uniform(directions, 3 * hidden, bound=0.8)
    order = [p.name for p in schema.get(op, opset).inputs]
    return OnnxCase(op, opset, attributes, {n: inputs[n] for n in order if n in inputs})


def grid() -> list[OnnxCase]:
    return [grid_case(op, opset, k) for op in GATES for opset in ORT_OPSETS for k in range(14)]


def onnxruntime_outputs(case: OnnxCase) -> tuple[np.ndarray, ...]:
    """onnxruntime's outputs; a layout-1 node runs as its layout-0 twin (onnxruntime refuses layout 1)."""
    if case.attributes.get("layout", 0) == 0:
        return onnxruntime_node(case.op, case.opset, case.attributes, case.inputs)
    swapped = {n: (a.transpose(1, 0, 2) if n in ("X", "initial_h", "initial_c") else a) for n, a in case.inputs.items()}
    outputs = onnxruntime_node(case.op, case.opset, dict(case.attributes, layout=0), swapped)
    return (outputs[0].transpose(2, 0, 1, 3), *(s.transpose(1, 0, 2) for s in outputs[1:]))


def _differs_per_direction(case: OnnxCase) -> bool:
    names, count = case.attributes.get("activations", []), PER_SET[case.op]
    return case.attributes.get("direction") == "bidirectional" and names[:count] != names[count:]


def test_the_grid_covers_every_attribute_and_optional_input() -> None:
    cases = grid()
    seen = {(c.op, name) for c in cases for name in (*c.attributes, *c.inputs)}
    for op in GATES:
        attributes = set().union(*(schema.get(op, v).attributes for v in ORT_OPSETS))
        inputs = {p.name for p in schema.get(op, 22).inputs}
        assert {(op, name) for name in attributes | inputs} <= seen
    assert any(c.attributes.get("layout") == 1 for c in cases)
    assert any(_differs_per_direction(c) for c in cases)
    assert any(0 in c.inputs["sequence_lens"] for c in cases if "sequence_lens" in c.inputs)


@pytest.mark.parametrize("case", grid(), ids=str)
def test_matches_onnxruntime(case: OnnxCase) -> None:
    mine = evaluate_node(case.op, case.opset, case.attributes, input_list(case.op, case.opset, case.inputs))
    theirs = onnxruntime_outputs(case)
    assert len(mine) == len(theirs)
    for name, a, b in zip(("Y", "Y_h", "Y_c"), mine, theirs):
        assert_close(a, b, f"{case} {name}")


# --- ONNX's own expected outputs -----------------------------------------------------------

def _backend_params() -> list[Any]:
    params = []
    for case in backend_cases():
        node = case.model.graph.node[0]
        names = {a.name for a in node.attribute}
        for version in schema.versions(node.op_type):
            if names <= set(schema.get(node.op_type, version).attributes):
                params.append(pytest.param(case, version, id=f"{case.name}-opset{version}"))
    return params


@pytest.mark.parametrize("case, opset", _backend_params())
def test_matches_onnx_expected_outputs(case: Any, opset: int) -> None:
    """ONNX's cases (written for the latest version), at every opset whose schema has their attributes."""
    node, _, inputs, expected = case_inputs(case)
    outputs = evaluate_node(node.op_type, opset, schema.node_attributes(node), inputs)
    for index, array in expected:
        assert_close(outputs[index], array, f"{case.name} output {node.output[index]}")


def test_backend_cases_include_what_onnxruntime_cannot_run() -> None:
    names = {case.name for case in backend_cases()}
    assert {"test_gru_batchwise", "test_lstm_batchwise", "test_simple_rnn_batchwise",
            "test_lstm_with_peepholes"} <= names


# --- where onnxruntime departs from the ONNX pages (measured with onnxruntime 1.32) --------

def _rnn_inputs(seed: int = 5) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"X": rng.uniform(-2, 2, (4, 2, 3)).astype(np.float32),
            "W": rng.uniform(-1, 1, (1, 3, 3)).astype(np.float32),
            "R": rng.uniform(-1, 1, (1, 3, 3)).astype(np.float32)}


def _run_both(activation: str, **parameters: Any) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    inputs = _rnn_inputs()
    attributes = {"hidden_size": 3, "activations": [activation], **parameters}
    return (evaluate_node("RNN", 14, attributes, input_list("RNN", 14, inputs)),
            onnxruntime_node("RNN", 14, attributes, inputs))


def _reference(activation: str, **parameters: Any) -> tuple[np.ndarray, ...]:
    inputs = _rnn_inputs()
    attributes = {"hidden_size": 3, "activations": [activation], **parameters}
    return evaluate_node("RNN", 14, attributes, input_list("RNN", 14, inputs))


def _same(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    return all(np.allclose(x, y, atol=1e-6) for x, y in zip(a, b))


@pytest.mark.parametrize("given", [{}, {"activation_beta": [0.25]}], ids=["no-alpha-beta", "beta-only"])
def test_departure_affine_missing_alpha(given: dict) -> None:
    """Affine's alpha defaults to 1 (ONNX's Affine op, as the pages say); onnxruntime uses 0."""
    mine, theirs = _run_both("Affine", **given)
    beta = given.get("activation_beta", [0.0])
    assert _same(theirs, _reference("Affine", activation_alpha=[0.0], activation_beta=beta))  # onnxruntime: 0
    assert _same(mine, _reference("Affine", activation_alpha=[1.0], activation_beta=beta))    # the page: 1
    assert not _same(mine, theirs)


def test_departure_thresholdedrelu_missing_alpha() -> None:
    """ThresholdedRelu's alpha defaults to 1 (ONNX's ThresholdedRelu op); onnxruntime uses 0."""
    mine, theirs = _run_both("ThresholdedRelu")
    assert _same(theirs, _reference("ThresholdedRelu", activation_alpha=[0.0]))
    assert _same(mine, _reference("ThresholdedRelu", activation_alpha=[1.0]))
    assert not _same(mine, theirs)


def test_departure_scaledtanh_without_parameters() -> None:
    """ScaledTanh has no default alpha or beta: the reference refuses; onnxruntime runs with 0 (output 0)."""
    inputs = _rnn_inputs()
    attributes = {"hidden_size": 3, "activations": ["ScaledTanh"]}
    theirs = onnxruntime_node("RNN", 14, attributes, inputs)
    assert not np.any(theirs[0])
    with pytest.raises(ValueError, match="activation_alpha has no value for 'ScaledTanh'"):
        evaluate_node("RNN", 14, attributes, input_list("RNN", 14, inputs))


def test_departure_hidden_size_optional() -> None:
    """hidden_size is optional in the schema (R's last dim says it); onnxruntime refuses a node without it."""
    inputs = _rnn_inputs()
    with pytest.raises(Exception, match="hidden_size"):
        onnxruntime_node("RNN", 14, {}, inputs)
    mine = evaluate_node("RNN", 14, {}, input_list("RNN", 14, inputs))
    theirs = onnxruntime_node("RNN", 14, {"hidden_size": 3}, inputs)
    for a, b in zip(mine, theirs):
        assert_close(a, b, "RNN without hidden_size")


def test_departure_layout_1() -> None:
    """onnxruntime refuses layout 1 ("Batchwise recurrent operations are not supported"); the
    reference runs it (checked against ONNX's *_batchwise cases and the layout-0 twin above)."""
    inputs = _rnn_inputs()
    inputs["X"] = inputs["X"].transpose(1, 0, 2).copy()
    with pytest.raises(Exception, match="layout"):
        onnxruntime_node("RNN", 14, {"hidden_size": 3, "layout": 1}, inputs)
    y, y_h = evaluate_node("RNN", 14, {"hidden_size": 3, "layout": 1}, input_list("RNN", 14, inputs))
    assert y.shape == (2, 4, 1, 3) and y_h.shape == (2, 1, 3)


def test_departure_one_activation_set_for_two_directions_is_refused_by_both() -> None:
    """Not a departure: the pages ask for a set per direction ("2, or 4 if bidirectional") and
    both refuse a bidirectional GRU with one set."""
    rng = np.random.default_rng(3)
    inputs = {"X": rng.uniform(-1, 1, (2, 1, 2)).astype(np.float32),
              "W": rng.uniform(-1, 1, (2, 6, 2)).astype(np.float32),
              "R": rng.uniform(-1, 1, (2, 6, 2)).astype(np.float32)}
    attributes = {"hidden_size": 2, "direction": "bidirectional", "activations": ["Sigmoid", "Tanh"]}
    with pytest.raises(Exception, match="activation"):
        onnxruntime_node("GRU", 14, attributes, inputs)
    with pytest.raises(ValueError, match=r"activations has 2 values .*expected 4 \(2 per direction, 2 directions\)"):
        evaluate_node("GRU", 14, attributes, input_list("GRU", 14, inputs))


# --- refusals: one ValueError naming the attribute or input ---------------------------------

def _gru_inputs() -> list[np.ndarray | None]:
    rng = np.random.default_rng(0)
    return [rng.uniform(-1, 1, (3, 2, 4)).astype(np.float32), rng.uniform(-1, 1, (1, 6, 4)).astype(np.float32),
            rng.uniform(-1, 1, (1, 6, 2)).astype(np.float32)]


@pytest.mark.parametrize("op, opset, attributes, change, message", [
    ("GRU", 14, {"hidden_size": 2, "colour": 1}, None, "GRU-14 has no attribute 'colour'"),
    ("GRU", 7, {"hidden_size": 2, "layout": 1}, None, "GRU-7 has no attribute 'layout'"),
    ("GRU", 0, {"hidden_size": 2}, None, "opset is 0"),
    ("GRU", 2, {"hidden_size": 2, "linear_before_reset": 1}, None, "GRU-1 has no attribute 'linear_before_reset'"),
    ("Gru", 14, {"hidden_size": 2}, None, "op type is 'Gru'"),
    ("GRU", 14, {"hidden_size": 2.0}, None, "hidden_size is 2.0; expected an integer"),
    ("GRU", 14, {"hidden_size": 2, "direction": "both"}, None, "direction is 'both'"),
    ("GRU", 14, {"hidden_size": 2, "layout": 2}, None, "layout is 2"),
    ("GRU", 14, {"hidden_size": 2, "clip": 0.0}, None, "clip is 0.0; expected a positive number"),
    ("GRU", 14, {"hidden_size": 2, "activations": ["Sigmoid", "Gelu"]}, None, "activations has 'Gelu'"),
    ("GRU", 14, {"hidden_size": 2, "activations": ["Sigmoid"]}, None, "activations has 1 values"),
    ("GRU", 14, {"hidden_size": 2, "activation_alpha": [0.5]}, None, "activation_alpha has 1 values"),
    ("GRU", 14, {"hidden_size": 3}, None, r"W dim 1 is 6; expected 3\*hidden_size = 9 \(hidden_size = 3 from the attributes\)"),
    ("GRU", 14, {"hidden_size": 2}, {0: None}, "X is missing; it is a required input of GRU-14"),
    ("GRU", 14, {"hidden_size": 2}, {0: np.zeros((3, 2, 4), np.int32)}, "X has dtype int32"),
    ("GRU", 14, {"hidden_size": 2}, {1: np.zeros((1, 6, 4), np.float64)}, "W has dtype float64; expected float32"),
    ("GRU", 14, {"hidden_size": 2}, {4: np.array([3, 1], np.int64)}, "sequence_lens has dtype int64"),
    ("GRU", 14, {"hidden_size": 2}, {4: np.array([3, 4], np.int32)}, r"sequence_lens\[1\] is 4"),
    ("GRU", 14, {"hidden_size": 2}, {5: np.zeros((1, 3, 2), np.float32)}, "initial_h dim 1 is 3; expected batch_size = 2"),
    ("GRU", 14, {"hidden_size": 2}, {6: np.zeros(1, np.float32)}, "GRU-14 takes at most 6 inputs"),
    ("LSTM", 14, {"hidden_size": 2, "input_forget": 2}, None, "input_forget is 2; expected 0 or 1"),
    ("RNN", 14, {"hidden_size": 2, "activations": ["ScaledTanh"], "activation_alpha": [1.0]}, None,
     "activation_beta has no value for 'ScaledTanh'"),
], ids=lambda v: str(v)[:40])
def test_refusals_name_what_is_wrong(op: str, opset: int, attributes: dict, change: dict | None,
                                     message: str) -> None:
    inputs = _gru_inputs()
    if op in ("LSTM", "RNN"):
        rows = GATES[op] * 2
        inputs = [inputs[0], np.ones((1, rows, 4), np.float32), np.ones((1, rows, 2), np.float32)]
    inputs += [None] * (6 - len(inputs))
    for index, value in (change or {}).items():
        if index >= len(inputs):
            inputs.append(value)
        else:
            inputs[index] = value
    with pytest.raises(ValueError, match=message):
        evaluate_node(op, opset, attributes, inputs)


def test_strings_may_come_as_bytes_as_onnx_gives_them() -> None:
    inputs = _gru_inputs()
    text = evaluate_node("GRU", 14, {"hidden_size": 2, "direction": "reverse", "activations": ["Relu", "Tanh"]}, inputs)
    raw = evaluate_node("GRU", 14, {"hidden_size": 2, "direction": b"reverse", "activations": [b"Relu", b"Tanh"]},
                        inputs)
    for a, b in zip(text, raw):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_float_types_keep_their_dtype(dtype: Any) -> None:
    inputs = [a.astype(dtype) for a in _gru_inputs()]
    outputs = evaluate_node("GRU", 14, {"hidden_size": 2}, inputs)
    assert all(o.dtype == dtype for o in outputs)
    expected = evaluate_node("GRU", 14, {"hidden_size": 2}, [a.astype(np.float32) for a in inputs])
    for a, b in zip(outputs, expected):
        assert_close(a, b, str(dtype), tolerance=2e-3 if dtype == np.float16 else 1e-5)


def test_a_models_node_by_tensor_name() -> None:
    """irtool.onnx.evaluate: a node of a model, its inputs looked up by tensor name (ONNX's batchwise case)."""
    from irtool.onnx.evaluate import evaluate_model_node

    case = next(c for c in backend_cases() if c.name == "test_lstm_batchwise")
    node, opset, inputs, expected = case_inputs(case)
    tensors = {name: array for name, array in zip(node.input, inputs) if name}
    outputs = evaluate_model_node(node, opset, tensors)
    assert set(outputs) == {name for name in node.output if name}
    for index, array in expected:
        assert_close(outputs[node.output[index]], array, node.output[index])
    with pytest.raises(ValueError, match="LSTM node: no value for its input tensor 'W'"):
        evaluate_model_node(node, opset, {"X": tensors["X"]})
