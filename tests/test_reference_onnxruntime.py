"""irtool.reference against onnxruntime running the equivalent ONNX GRU/LSTM/RNN node.

Inputs and attributes go to ONNX through irtool.onnx.semantics (time-major X,
[num_dir, batch, H] states, separate Wb/Rb, LSTM gates i, o, f, c) and the outputs come back
through it.  onnxruntime implements every ONNX activation (with activation_alpha/beta consumed
in order), clip, linear_before_reset and sequence_lens, so the ONNX-only activations are
checked here.  Bound: 1e-5, absolute up to 1 and relative above.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="onnx builds the ONNX node")
onnxruntime = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle of this file")

from conftest_reference import Case, assert_close  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

from irtool.onnx import semantics  # noqa: E402
from irtool.reference import gru_sequence, lstm_sequence, rnn_sequence  # noqa: E402


def onnxruntime_outputs(case: Case, inputs: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    attributes = case.attributes()
    feeds = semantics.inputs_to_onnx(case.family, *inputs, linear_before_reset=case.linear_before_reset)
    names = list(feeds)
    outputs = ["Y", "Y_h"] + (["Y_c"] if case.family == "LSTM" else [])
    node = helper.make_node(case.family, names, outputs, **semantics.attributes_to_onnx(case.family, attributes))
    element = TensorProto.FLOAT  # onnxruntime's GRU, LSTM and RNN kernels are float32 only
    graph = helper.make_graph(
        [node], "case",
        [helper.make_tensor_value_info(n, TensorProto.INT32 if n == "sequence_lens" else element, a.shape)
         for n, a in feeds.items()],
        [helper.make_tensor_value_info(n, element, None) for n in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return semantics.outputs_from_onnx(*session.run(None, feeds))


def structural_grid() -> list[Case]:
    cases, counter = [], itertools.count()
    sizes = [(1, 1, None), (3, 4, (5, 0, 2)), (2, 3, (2, 5))]
    for family in ("GRU", "LSTM", "RNN"):
        for direction, lbr, clip in itertools.product(("forward", "reverse", "bidirectional"),
                                                      (False, True) if family == "GRU" else (False,), (0.0, 0.6)):
            k = next(counter)
            batch, hidden, lengths = sizes[k % len(sizes)]
            cases.append(Case(family, batch=batch, seq=5, hidden=hidden, direction=direction, lengths=lengths,
                              linear_before_reset=lbr, clip=clip, seed=100 + k, scale=1.5))
    return cases


# Every activation in the first slot, with positional alpha/beta (OpenVINO's convention);
# irtool.onnx.semantics turns them into ONNX's in-order lists.  Scaled tanh has no default: always given.
ONNX_ACTIVATIONS = ["relu", "sigmoid", "tanh", "affine", "leakyrelu", "thresholdedrelu", "scaledtanh",
                    "hardsigmoid", "elu", "softsign", "softplus"]


def activation_grid() -> list[Case]:
    cases = []
    for k, (name, family) in enumerate(itertools.product(ONNX_ACTIVATIONS, ("GRU", "LSTM", "RNN"))):
        rest = {"GRU": ("tanh",), "LSTM": ("tanh", "elu"), "RNN": ()}[family]
        count = 1 + len(rest)
        alpha = tuple(0.4 + 0.1 * i for i in range(count)) if k % 2 == 0 or name == "scaledtanh" else ()
        beta = tuple(0.7 - 0.1 * i for i in range(count)) if alpha else ()
        cases.append(Case(family, batch=2, seq=4, hidden=3, direction=("forward", "bidirectional")[k % 2],
                          lengths=(4, 2), activations=(name.upper() if k % 3 == 0 else name, *rest),
                          alpha=alpha, beta=beta, seed=200 + k, scale=0.8))
    return cases


@pytest.mark.parametrize("case", structural_grid(), ids=str)
def test_matches_onnxruntime(case: Case) -> None:
    inputs = case.inputs()
    for index, (mine, theirs) in enumerate(zip(case.reference(inputs), onnxruntime_outputs(case, inputs))):
        assert_close(mine, theirs, f"{case} output {index}")


@pytest.mark.parametrize("case", activation_grid(), ids=lambda c: f"{c}-alpha{list(c.alpha)}")
def test_onnx_activations_match_onnxruntime(case: Case) -> None:
    inputs = case.inputs()
    for index, (mine, theirs) in enumerate(zip(case.reference(inputs), onnxruntime_outputs(case, inputs))):
        assert_close(mine, theirs, f"{case} output {index}")



def onnx_node_outputs(family: str, feeds: dict[str, np.ndarray], attributes: dict) -> list[np.ndarray]:
    names = ["X", "W", "R", "B", "sequence_lens", "initial_h"] + (["initial_c"] if family == "LSTM" else [])
    names = [n if n in feeds else "" for n in names]  # "" marks an omitted optional input
    while names and not names[-1]:
        names.pop()
    outputs = ["Y", "Y_h"] + (["Y_c"] if family == "LSTM" else [])
    node = helper.make_node(family, names, outputs, **attributes)
    graph = helper.make_graph(
        [node], "onnx_side",
        [helper.make_tensor_value_info(n, TensorProto.INT32 if n == "sequence_lens" else TensorProto.FLOAT,
                                       feeds[n].shape) for n in names if n],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {n: feeds[n] for n in names if n})


@pytest.mark.parametrize("family, attributes, optional", [
    ("GRU", {"linear_before_reset": 0}, ("B", "initial_h")),  # separate Wbh and Rbh get summed
    ("GRU", {"linear_before_reset": 1, "clip": 0.7}, ()),
    ("LSTM", {"direction": "bidirectional"}, ("initial_c", "sequence_lens")),
    ("LSTM", {"activations": ["HardSigmoid", "Tanh", "LeakyRelu"], "activation_alpha": [0.3, 0.05],
              "activation_beta": [0.4]}, ()),
    ("RNN", {"direction": "reverse", "activations": ["Relu"]}, ("sequence_lens",)),
    ("GRU", {"direction": "bidirectional", "activations": ["Sigmoid", "Tanh", "sigmoid", "TANH"]}, ()),
], ids=lambda v: str(v))
def test_onnx_tensors_converted_to_openvino_layouts(family: str, attributes: dict, optional: tuple) -> None:
    """From the ONNX side: ONNX's own tensors (Rb non-zero, optional inputs left out) through
    inputs_from_onnx / attributes_from_onnx give the reference what onnxruntime computes."""
    rng = np.random.default_rng(len(str(attributes)))
    seq, batch, inputs, hidden = 5, 3, 4, 3
    directions = 2 if attributes.get("direction") == "bidirectional" else 1
    rows = {"GRU": 3, "LSTM": 4, "RNN": 1}[family] * hidden
    attributes = {"hidden_size": hidden, **attributes}
    feeds = {
        "X": rng.uniform(-1, 1, (seq, batch, inputs)), "W": rng.uniform(-0.7, 0.7, (directions, rows, inputs)),
        "R": rng.uniform(-0.7, 0.7, (directions, rows, hidden)), "B": rng.uniform(-0.5, 0.5, (directions, 2 * rows)),
        "sequence_lens": np.array([5, 0, 3]), "initial_h": rng.uniform(-1, 1, (directions, batch, hidden)),
        "initial_c": rng.uniform(-1, 1, (directions, batch, hidden)),
    }
    if family != "LSTM":
        del feeds["initial_c"]
    feeds = {n: a.astype(np.int32 if n == "sequence_lens" else np.float32)
             for n, a in feeds.items() if n not in optional}
    expected = semantics.outputs_from_onnx(*onnx_node_outputs(family, feeds, attributes))
    linear = attributes.get("linear_before_reset", 0)
    converted = semantics.inputs_from_onnx(family, **feeds, linear_before_reset=linear)
    function = {"GRU": gru_sequence, "LSTM": lstm_sequence, "RNN": rnn_sequence}[family]
    actual = function(*converted, **semantics.attributes_from_onnx(family, attributes))
    for index, (mine, theirs) in enumerate(zip(actual, expected)):
        assert_close(mine, theirs, f"{family} output {index}")
