"""``irtool build onnx-gru | onnx-lstm | onnx-rnn``: options from onnx.defs, models that onnx.checker,
onnxruntime and OpenVINO accept, values that agree with onnxruntime, one-line refusals."""
from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from conftest_reference import assert_close

from irtool.cli.program import build_parser, main
from irtool.onnx import schema
from irtool.onnx.semantics import evaluate_node


def build(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["build", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def option_strings(command: str) -> set[str]:
    build_action = next(a for a in build_parser("build")._subparsers._group_actions[0].choices["build"]._actions
                        if a.dest == "op")
    return {s for action in build_action.choices[command]._actions for s in action.option_strings}


@pytest.mark.parametrize("op", schema.OPS)
def test_every_schema_attribute_of_every_version_is_an_option(op: str) -> None:
    options = option_strings(f"onnx-{op.lower()}")
    for version in schema.versions(op):
        for name in schema.get(op, version).attributes:
            assert "--" + name.replace("_", "-") in options
    assert {"--opset", "--batch", "--seq-length", "--input-size", "--optional-inputs", "--outputs",
            "--weights-as-inputs", "--dynamic", "-o"} <= options


def _all_values(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {**{t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}, **feeds}


def _every_version() -> list[tuple[str, int]]:
    return [(op, version) for op in schema.OPS for version in schema.versions(op)]


@pytest.mark.parametrize("op, opset", _every_version(), ids=lambda v: str(v))
def test_models_pass_the_checker_and_load_in_openvino(capsys, tmp_path, op: str, opset: int) -> None:
    import openvino as ov

    path, inputs = tmp_path / "m.onnx", tmp_path / "m.npz"
    optional = "B,sequence_lens,initial_h" + (",initial_c,P" if op == "LSTM" else "")
    code, out, err = build(capsys, f"onnx-{op.lower()}", "--opset", str(opset), "--hidden-size", "3",
                           "--direction", "bidirectional", "--optional-inputs", optional, "--save-inputs", str(inputs),
                           "-o", str(path))
    assert code == 0, err
    assert out.startswith(f"wrote {path}: {op}-{schema.get(op, opset).version} (opset {opset}) ")
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    assert [o.version for o in model.opset_import] == [opset]
    ov_model = ov.Core().read_model(path)
    assert {o.get_any_name() for o in ov_model.outputs} == {p.name for p in schema.get(op, opset).outputs}
    ov.convert_model(str(path))
    assert set(np.load(inputs)) == {"X", "sequence_lens", "initial_h"} | ({"initial_c"} if op == "LSTM" else set())


@pytest.mark.parametrize("op, opset, extra", [
    ("GRU", 7, ["--linear-before-reset", "1", "--direction", "reverse"]),
    ("GRU", 14, ["--activations", "Sigmoid,Tanh,HardSigmoid,Relu", "--direction", "bidirectional",
                 "--weights-as-inputs"]),
    ("LSTM", 22, ["--optional-inputs", "B,P,initial_h", "--input-forget", "1", "--clip", "0.5"]),
    ("LSTM", 14, ["--dynamic", "batch,seq_length", "--outputs", "Y_h,Y_c", "--sequence-lens", "4,0"]),
    ("RNN", 22, ["--activations", "LeakyRelu", "--activation-alpha", "0.2", "--element-type", "f32"]),
], ids=lambda v: str(v))
def test_models_run_in_onnxruntime_as_the_reference_says(capsys, tmp_path, op: str, opset: int, extra: list) -> None:
    import onnxruntime

    path, inputs = tmp_path / "m.onnx", tmp_path / "m.npz"
    code, _, err = build(capsys, f"onnx-{op.lower()}", "--opset", str(opset), "--hidden-size", "4",
                         "--save-inputs", str(inputs), "-o", str(path), *extra)
    assert code == 0, err
    model = onnx.load(path)
    feeds = dict(np.load(inputs))
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    theirs = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    node = model.graph.node[0]
    values = _all_values(model, feeds)
    mine = evaluate_node(op, opset, schema.node_attributes(node),
                         [values.get(name) if name else None for name in node.input])
    for index, name in enumerate(node.output):
        if name:
            assert_close(mine[index], theirs[name], f"{op} {name}")
    assert set(theirs) == {n for n in node.output if n}


@pytest.mark.parametrize("argv, message", [
    (["onnx-rnn", "--opset", "7", "--layout", "1"], r"--layout: RNN-7 \(opset 7\) has no attribute layout"),
    (["onnx-gru", "--opset", "0"], "--opset 0: opset is 0"),
    (["onnx-gru", "--hidden-size", "0"], "hidden_size is 0; expected a positive integer"),
    (["onnx-gru"], "hidden_size is needed to size W and R"),
    (["onnx-rnn", "--optional-inputs", "P"], "RNN-22 has no input 'P'"),
    (["onnx-rnn", "--outputs", "Y_c"], "RNN-22 has no output 'Y_c'"),
    (["onnx-rnn", "--outputs", ""], "the node must produce at least one output"),
    (["onnx-rnn", "--batch", "100000", "--seq-length", "100000"], "irtool builds models up to"),
    (["onnx-rnn", "--sequence-lens", "1,9"], r"sequence_lens is \[1, 9\]; expected 2 values in \[0, 4\]"),
    (["onnx-rnn", "--activations", "Foo"], "activations has 'Foo'"),
    (["onnx-gru", "--direction", "bidirectional", "--activations", "Sigmoid,Tanh"], "expected 4"),
    (["onnx-lstm", "--input-forget", "3"], "input_forget is 3; expected 0 or 1"),
    (["onnx-rnn", "--dynamic", "hidden"], "--dynamic hidden: expected some of batch"),
], ids=lambda v: str(v))
def test_refusals_are_one_line(capsys, tmp_path, argv: list, message: str) -> None:
    import re

    hidden = [] if "--hidden-size" in argv or argv == ["onnx-gru"] else ["--hidden-size", "2"]
    code, out, err = build(capsys, *argv, *hidden, "-o", str(tmp_path / "m.onnx"))
    assert code == 2 and not out
    assert re.search(message, err), err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "m.onnx").exists()


def test_written_atomically_and_only_over_regular_files(capsys, tmp_path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(b"old")
    assert build(capsys, "onnx-rnn", "--hidden-size", "2", "-o", str(path))[0] == 0
    onnx.checker.check_model(onnx.load(path))
    assert [p.name for p in tmp_path.iterdir()] == ["m.onnx"]  # no temporary left behind
    fifo = tmp_path / "pipe.onnx"
    os.mkfifo(fifo)
    code, _, err = build(capsys, "onnx-rnn", "--hidden-size", "2", "-o", str(fifo))
    assert code == 2 and "is not a regular file; refusing to replace it" in err
    assert fifo.is_fifo()
    code, _, err = build(capsys, "onnx-rnn", "--hidden-size", "2", "-o", str(tmp_path / "missing" / "m.onnx"))
    assert code == 2 and "does not exist" in err
