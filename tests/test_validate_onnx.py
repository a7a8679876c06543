"""``irtool validate model.onnx``: onnx.checker plus irtool's checks of GRU/LSTM/RNN nodes against the
ONNX schema, every finding a diagnostic with a code; same exit codes and formats as for IR.

The broken models are made with onnx.helper (not irtool's builder), one defect each.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from irtool.cli.program import main

ROOT = Path(__file__).resolve().parent.parent


def gru_model(attributes: dict[str, Any] | None = None, *, x_shape=(5, 2, 3), w_shape=(1, 12, 3),
              r_shape=(1, 12, 4), inputs=("X", "W", "R"), y_shape=(5, 1, 2, 4), x_type=TensorProto.FLOAT,
              lengths=None, opset: int = 14, op: str = "GRU") -> onnx.ModelProto:
    attributes = {"hidden_size": 4, **(attributes or {})}
    node = helper.make_node(op, list(inputs), ["Y", "Y_h"], name="gru1", **attributes)
    graph_inputs = [helper.make_tensor_value_info("X", x_type, x_shape)]
    initializers = [numpy_helper.from_array(np.zeros(w_shape, np.float32), "W"),
                    numpy_helper.from_array(np.zeros(r_shape, np.float32), "R")]
    if lengths is not None:
        initializers.append(numpy_helper.from_array(np.array(lengths, np.int32), "sequence_lens"))
    graph = helper.make_graph([node], "g", graph_inputs,
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape),
                               helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, y_shape[1:])],
                              initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def validate(capsys, path: Path, *options: str) -> tuple[int, dict]:
    code = main(["validate", "--format", "json", *options, str(path)])
    return code, json.loads(capsys.readouterr().out)


def diagnostics(capsys, tmp_path: Path, model: onnx.ModelProto | bytes) -> tuple[int, list[dict]]:
    path = tmp_path / "m.onnx"
    path.write_bytes(model if isinstance(model, bytes) else model.SerializeToString())
    code, report = validate(capsys, path)
    return code, report["files"][0]["diagnostics"]


def test_a_valid_model_says_what_was_checked(capsys, tmp_path) -> None:
    code, found = diagnostics(capsys, tmp_path, gru_model())
    assert code == 0
    assert [d["code"] for d in found] == ["ONNX000"]
    assert "onnx.checker" in found[0]["message"] and "1 GRU/LSTM/RNN node" in found[0]["message"]


@pytest.mark.parametrize("model, code, where", [
    (gru_model({"direction": "sideways"}), "ONNX013", {"attribute": "direction", "layer_id": "0",
                                                       "layer_name": "gru1"}),
    (gru_model({"colour": 2}), "ONNX010", {"attribute": "colour"}),
    (gru_model({"hidden_size": "four"}), "ONNX012", {"attribute": "hidden_size"}),
    (gru_model({"clip": -1.0}), "ONNX013", {"attribute": "clip"}),
    (gru_model({"layout": 1}, opset=7, x_shape=(2, 5, 3)), "ONNX010", {"attribute": "layout"}),
    (gru_model({"activations": ["Sigmoid", "Gelu"]}), "ONNX014", {"attribute": "activations"}),
    (gru_model({"direction": "bidirectional", "activations": ["Sigmoid", "Tanh"]}, w_shape=(2, 12, 3),
               r_shape=(2, 12, 4), y_shape=(5, 2, 2, 4)), "ONNX014", {"attribute": "activations"}),
    (gru_model({"activations": ["Affine", "Tanh"], "activation_alpha": [1.0, 2.0]}), "ONNX014",
     {"attribute": "activation_alpha"}),
    (gru_model(w_shape=(1, 12, 5)), "ONNX031", {"port_id": "W", "expected": "input_size = 3", "found": "5"}),
    (gru_model(r_shape=(1, 9, 4)), "ONNX031", {"port_id": "R", "expected": "3*hidden_size = 12", "found": "9"}),
    (gru_model(x_shape=(5, 2)), "ONNX030", {"port_id": "X"}),
    (gru_model(y_shape=(5, 1, 3, 4)), "ONNX032", {"port_id": "Y", "expected": "batch_size = 2", "found": "3"}),
    (gru_model(y_shape=(5, 1, 2, 4, 1)), "ONNX030", {"port_id": "Y"}),
    (gru_model(x_type=TensorProto.INT32), "ONNX040", {"port_id": "X", "found": "tensor(int32)"}),
    (gru_model(inputs=("X", "W", "")), "ONNX020", {"port_id": "R"}),
    (gru_model(inputs=("X", "W", "R", "", "sequence_lens"), lengths=[5, 7]), "ONNX050",
     {"port_id": "sequence_lens", "found": "7"}),
    (gru_model({"input_forget": 2}, op="LSTM", w_shape=(1, 16, 3), r_shape=(1, 16, 4)), "ONNX013",
     {"attribute": "input_forget"}),
], ids=lambda v: v if isinstance(v, str) else "")
def test_each_defect_is_a_diagnostic_with_its_code_and_place(capsys, tmp_path, model, code: str, where: dict) -> None:
    exit_code, found = diagnostics(capsys, tmp_path, model)
    assert exit_code == 1
    matching = [d for d in found if d["code"] == code]
    assert matching, found
    assert any(all(d[k] == v for k, v in where.items()) for d in matching), matching
    assert all("node 0 'gru1'" in d["message"] for d in matching)


def test_every_finding_at_once(capsys, tmp_path) -> None:
    model = gru_model({"direction": "sideways", "colour": 1}, w_shape=(1, 12, 5), x_type=TensorProto.DOUBLE)
    _, found = diagnostics(capsys, tmp_path, model)
    assert {"ONNX010", "ONNX013", "ONNX040"} <= {d["code"] for d in found}


@pytest.mark.parametrize("data, code", [
    (b"", "ONNX001"),
    (b"<?xml version='1.0'?><net/>", "ONNX001"),
    (gru_model().SerializeToString()[:60], "ONNX001"),
], ids=["empty", "xml", "truncated"])
def test_not_an_onnx_model(capsys, tmp_path, data: bytes, code: str) -> None:
    exit_code, found = diagnostics(capsys, tmp_path, data)
    assert exit_code == 1 and [d["code"] for d in found] == [code]


def test_size_limit_and_checker(capsys, tmp_path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(gru_model().SerializeToString())
    code, report = validate(capsys, path, "--max-size", "100")
    assert code == 1 and report["files"][0]["diagnostics"][0]["code"] == "ONNX002"
    model = gru_model()
    model.graph.node[0].input[1] = "nowhere"  # an input nothing produces: the checker's finding
    _, found = diagnostics(capsys, tmp_path, model)
    assert "ONNX003" in {d["code"] for d in found}


def test_unknown_opset_and_no_recurrent_node(capsys, tmp_path) -> None:
    exit_code, found = diagnostics(capsys, tmp_path, gru_model(opset=999))
    assert "ONNX004" in {d["code"] for d in found}
    node = helper.make_node("Relu", ["X"], ["Y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])])
    exit_code, found = diagnostics(capsys, tmp_path, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]))
    assert exit_code == 0 and "0 GRU/LSTM/RNN nodes" in found[0]["message"]


def test_text_and_sarif_formats(capsys, tmp_path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(gru_model({"direction": "sideways"}).SerializeToString())
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}: error[ONNX013] node 0 'gru1' (GRU-14): direction is 'sideways'" in out
    assert out.strip().splitlines()[-1] == "1 file checked: 1 error, 0 warnings, 1 note in 1 invalid file"
    assert main(["validate", "--format", "sarif", str(path)]) == 1
    sarif = json.loads(capsys.readouterr().out)
    assert "ONNX013" in {r["ruleId"] for r in sarif["runs"][0]["results"]}


def test_directories_take_onnx_files_too(capsys, tmp_path) -> None:
    (tmp_path / "a.onnx").write_bytes(gru_model().SerializeToString())
    (tmp_path / "b.onnx").write_bytes(gru_model({"clip": 0.0}).SerializeToString())
    code, report = validate(capsys, tmp_path)
    assert code == 1 and [Path(f["path"]).name for f in report["files"]] == ["a.onnx", "b.onnx"]


def test_with_openvino_gives_the_onnx_frontends_verdict(capsys, tmp_path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(gru_model().SerializeToString())
    code, report = validate(capsys, path, "--with-openvino")
    assert code == 0 and "IR081" in {d["code"] for d in report["files"][0]["diagnostics"]}


def test_models_irtool_builds_are_valid(capsys, tmp_path) -> None:
    for op, extra in (("gru", ["--direction", "bidirectional"]), ("lstm", ["--optional-inputs", "B,P", "--layout", "1"]),
                      ("rnn", ["--opset", "7"])):
        path = tmp_path / f"{op}.onnx"
        assert main(["build", f"onnx-{op}", "--hidden-size", "3", "-o", str(path), *extra]) == 0
        capsys.readouterr()
        code, report = validate(capsys, path)
        assert code == 0 and [d["code"] for d in report["files"][0]["diagnostics"]] == ["ONNX000"], report


PROBE = """\
import sys, irtool.cli.program
rc = irtool.cli.program.main(sys.argv[1:])
print(f"rc={rc} onnx={'onnx' in sys.modules}", file=sys.stderr)
"""


@pytest.mark.parametrize("target, expected", [
    (ROOT / "samples" / "ir" / "valid", "rc=0 onnx=False"),
    ("MODEL", "rc=0 onnx=True"),  # the probe can see onnx: the negative above is not vacuous
], ids=["xml", "onnx"])
def test_onnx_is_imported_only_for_onnx_files(tmp_path, target, expected: str) -> None:
    if target == "MODEL":
        target = tmp_path / "m.onnx"
        target.write_bytes(gru_model().SerializeToString())
    done = subprocess.run([sys.executable, "-c", PROBE, "validate", str(target)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.stderr.strip().splitlines()[-1] == expected, done.stderr


def lstm_branch(name: str, w_rows: int = 16, hidden: int = 4) -> onnx.GraphProto:
    """A branch graph of one LSTM on the outer X [3, 2, 3] (an If's then/else branch)."""
    weights = [numpy_helper.from_array(np.zeros(shape, np.float32), f"{name}_{w}")
               for w, shape in (("W", (1, w_rows, 3)), ("R", (1, 16, 4)))]
    node = helper.make_node("LSTM", ["X", *(w.name for w in weights)], ["", f"{name}_h"], hidden_size=hidden,
                            name=name)
    return helper.make_graph([node], f"{name}_graph", [],
                             [helper.make_tensor_value_info(f"{name}_h", TensorProto.FLOAT, [1, 2, 4])], weights)


def nested_if_model(inner_else: onnx.GraphProto) -> onnx.ModelProto:
    """If(first) {then: LSTM 'a'} {else: If(second) {then: LSTM 'b'} {else: ``inner_else``}}, as
    silero-vad nests its LSTMs."""
    inner = helper.make_node("If", ["second"], ["inner_h"], then_branch=lstm_branch("b"), else_branch=inner_else)
    outer_else = helper.make_graph([inner], "outer_else", [],
                                   [helper.make_tensor_value_info("inner_h", TensorProto.FLOAT, [1, 2, 4])])
    outer = helper.make_node("If", ["first"], ["Y_h"], then_branch=lstm_branch("a"), else_branch=outer_else)
    graph = helper.make_graph([outer], "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 2, 3]),
                                             helper.make_tensor_value_info("first", TensorProto.BOOL, []),
                                             helper.make_tensor_value_info("second", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, 2, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def test_nodes_inside_if_subgraphs_are_checked_at_any_depth(capsys, tmp_path) -> None:
    code, found = diagnostics(capsys, tmp_path, nested_if_model(lstm_branch("c")))
    assert code == 0 and "3 GRU/LSTM/RNN nodes" in found[0]["message"]
    code, found = diagnostics(capsys, tmp_path, nested_if_model(lstm_branch("c", w_rows=12)))
    assert code == 1
    (wrong,) = [d for d in found if d["code"] == "ONNX031"]
    assert wrong["layer_id"] == "0/else_branch/0/else_branch/0" and wrong["layer_name"] == "c"
    assert wrong["port_id"] == "W" and wrong["expected"] == "4*hidden_size = 16" and wrong["found"] == "12"
    assert wrong["message"].startswith("node 0/else_branch/0/else_branch/0 'c' (LSTM-14)")


def test_a_node_in_a_loop_body_is_checked(capsys, tmp_path) -> None:
    weights = [numpy_helper.from_array(np.zeros(shape, np.float32), name)
               for name, shape in (("W", (1, 12, 3)), ("R", (1, 12, 4)))]
    body = helper.make_graph(
        [helper.make_node("GRU", ["X", "W", "R", "", "", "h"], ["", "h_next"], hidden_size=4, direction="sideways",
                          name="inner"),
         helper.make_node("Identity", ["cond"], ["cond_next"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 2, 4])],
        [helper.make_tensor_value_info("cond_next", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [1, 2, 4])], weights)
    graph = helper.make_graph(
        [helper.make_node("Loop", ["M", "", "h0"], ["hT"], body=body)], "loop",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [5, 2, 3]),
         helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, 2, 4])],
        [helper.make_tensor_value_info("hT", TensorProto.FLOAT, [1, 2, 4])],
        [numpy_helper.from_array(np.array(3, np.int64), "M")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    code, found = diagnostics(capsys, tmp_path, model)
    assert code == 1
    (wrong,) = [d for d in found if d["code"] == "ONNX013"]
    assert wrong["layer_id"] == "0/body/0" and wrong["attribute"] == "direction"


@pytest.mark.parametrize("name", ["gru_lengths", "lstm2_bidirectional"])
def test_the_projects_own_onnx_samples_are_valid(capsys, name: str) -> None:
    """Their graph outputs carry shapes (onnx.checker requires the field), as the generator
    tests/real_models.py now writes them."""
    code, report = validate(capsys, ROOT / "samples" / "models" / f"{name}.onnx")
    assert code == 0 and [d["code"] for d in report["files"][0]["diagnostics"]] == ["ONNX000"], report


def test_the_generator_writes_the_committed_onnx_samples() -> None:
    sys.path.insert(0, str(ROOT / "samples"))
    try:
        from make_models import MODELS
    finally:
        sys.path.remove(str(ROOT / "samples"))
    from real_models import onnx_model
    for name, case in MODELS.items():
        committed = onnx.load(str(ROOT / "samples" / "models" / f"{name}.onnx"))
        assert committed.SerializeToString() == onnx_model(case).SerializeToString(), name
