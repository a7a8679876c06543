"""Reading models: an op the running openvino's opsets do not hold is Unsupported (a release that
cannot run the model: the harness skips it, run says so); a model file a frontend cannot convert
is NotConvertible, an error in run and the harness alike, naming every op OpenVINO's report lists
and why; an op no release holds where the file puts it stays the file's error.  Real openvino,
real files."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx.helper as oh
import pytest
from real_models import newest_opset_model

from irtool.core.errors import NotConvertible, RunError, Unsupported
from irtool.runtime.model import read_model

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


SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "models"


def onnx_loop_of_a_sequence(path):
    """An ONNX Loop carrying a tensor sequence (SequenceEmpty, then SequenceInsert per iteration),
    made with onnx.helper: OpenVINO's ONNX frontend keeps SequenceInsert as a framework node."""
    float_in = [oh.make_tensor_value_info("i", onnx.TensorProto.INT64, []),
                oh.make_tensor_value_info("c", onnx.TensorProto.BOOL, []),
                oh.make_tensor_sequence_value_info("s_in", onnx.TensorProto.FLOAT, None)]
    body = oh.make_graph([oh.make_node("Identity", ["c"], ["c_out"]), oh.make_node("SequenceInsert", ["s_in", "x"], ["s_out"])],
                         "body", float_in, [oh.make_tensor_value_info("c_out", onnx.TensorProto.BOOL, []),
                                            oh.make_tensor_sequence_value_info("s_out", onnx.TensorProto.FLOAT, None)])
    nodes = [oh.make_node("SequenceEmpty", [], ["s0"], dtype=onnx.TensorProto.FLOAT),
             oh.make_node("Loop", ["n", "cond", "s0"], ["s"], body=body), oh.make_node("SequenceAt", ["s", "zero"], ["y"])]
    graph = oh.make_graph(nodes, "loop", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3]),
                                          oh.make_tensor_value_info("n", onnx.TensorProto.INT64, []),
                                          oh.make_tensor_value_info("cond", onnx.TensorProto.BOOL, []),
                                          oh.make_tensor_value_info("zero", onnx.TensorProto.INT64, [])],
                          [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])])
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]), str(path))
    return path


@pytest.mark.parametrize("model, frontend, lacks, why", [
    # TFLite's fused LSTM (from a Keras 2 LSTM) holds its states in variable tensors
    ("tf/keras_lstm_fused.tflite", "TensorFlow Lite", "UNIDIRECTIONAL_SEQUENCE_LSTM",
     "This tensor should be either input, constant or should be already produced by previous operators"),
    ("tf/irfft", "TensorFlow SavedModel", "IRFFT", "ComplexTypeMark is not created before IRFFT operation"),
    ("loop.onnx", "ONNX", "SequenceInsert", None),
])
def test_every_op_a_frontend_cannot_convert_is_unsupported_and_named(tmp_path, model, frontend, lacks, why):
    """Each frontend names the op it stops at in its own words (the unconverted-ops report, a framework
    node's validation, TFLite's operation of type): each is Unsupported with the op, and JSON says so."""
    path = onnx_loop_of_a_sequence(tmp_path / model) if model.endswith(".onnx") else SAMPLES / model
    with pytest.raises(Unsupported) as raised:
        read_model(path)
    said = f"the {frontend} frontend of openvino {OPENVINO} cannot convert {lacks}"
    assert said in raised.value.message and raised.value.ops == (lacks,)
    assert why is None or why in raised.value.message
    done = subprocess.run([sys.executable, "-m", "irtool", "run", str(path), "-d", "CPU", "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    data = json.loads(done.stdout)
    assert done.returncode == 2 and data["unsupported"] is True and data["unsupported_ops"] == [lacks], done.stderr
    assert said in done.stderr and len(done.stderr.splitlines()) == 1


# ----------------------------------------------------------------------------- conversion with shapes
# An ONNX Conv whose input the graph declares no shape for: OpenVINO 2026.4.1's ONNX frontend
# converts it only with the input's shape ("The input data tensor's rank has to be known"), as
# silero-vad's Convs inside If branches.
WANTS_SHAPES = ("OpenVINO's ONNX frontend converts it only with input shapes "
                "(Conv-14: The input data tensor's rank has to be known (static))")


@pytest.fixture(scope="module")
def undeclared(tmp_path_factory):
    from real_models import front_end_model

    return front_end_model("speech", tmp_path_factory.mktemp("undeclared"), declared=False)


def run_json(capsys, *argv: str) -> tuple[int, dict, str]:
    from irtool.cli.program import main

    code = main(["run", *argv, "--format", "json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else {}, captured.err


def test_a_model_converted_only_with_shapes_names_the_inputs_to_give(undeclared, capsys):
    code, _, err = run_json(capsys, str(undeclared), "-d", "CPU")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert WANTS_SHAPES in err and "give them with --shape NAME=[...]" in err and "its inputs: x (rank not declared)" in err


@pytest.mark.parametrize("source", ["--shape", "--inputs"])
def test_a_model_converted_only_with_shapes_runs_with_them(source, undeclared, capsys, tmp_path):
    import numpy as np

    if source == "--shape":
        argv = ["--shape", "x=[2,3,9]"]
    else:
        np.savez(tmp_path / "in.npz", x=np.random.default_rng(0).uniform(-1, 1, (1, 3, 11)).astype(np.float32))
        argv = ["--inputs", str(tmp_path / "in.npz")]
    code, result, err = run_json(capsys, str(undeclared), "-d", "CPU", *argv)
    assert code == 0 and result["verdict"] == "pass", err
    (node,) = result["nodes"]
    assert node["name"] == "lstm" and node["verdict"] == "pass"
    assert result["inputs"][0]["shape"] == ([2, 3, 9] if source == "--shape" else [1, 3, 11])


@pytest.mark.parametrize("shape, says", [
    ("x=[2,3]", ["cannot convert it with the input shapes x=[2, 3]: Conv-14:", "rank do not match"]),
    ("nope=[2,3,9]", [WANTS_SHAPES, "the shapes given (nope) name none of its inputs: x (rank not declared)"]),
    ("x=[200000,30000,90000]", ["the input shapes given for its conversion: about", "IRTOOL_MEMORY_LIMIT"]),
])
def test_shapes_the_frontend_cannot_convert_with_are_one_line(shape, says, undeclared, capsys):
    code, _, err = run_json(capsys, str(undeclared), "-d", "CPU", "--shape", shape)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert all(text in err for text in says), err


def if_rank_model(path: Path, pad: int = 40, hidden: int = 4) -> Path:
    """x [N, 3, T] -> an If on T > 0 (from the input's shape) whose branches give tensors of different
    ranks (a reflect Pad of ``pad`` samples, or x unsqueezed) -> Conv1d -> Relu -> LSTM: OpenVINO's ONNX
    frontend converts the Conv only once static shapes fold the If's condition, as Silero VAD's
    exports (onnx.helper)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)

    def weight(name: str, shape: tuple[int, ...]) -> Any:
        return numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)

    def value(name: str, data: Any) -> Any:
        return numpy_helper.from_array(np.array(data, np.int64), name)

    then = helper.make_graph([helper.make_node("Pad", ["x", "pads"], ["a_y"], mode="reflect")], "then", [],
                             [helper.make_tensor_value_info("a_y", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Unsqueeze", ["x", "axis3"], ["b_y"])], "else", [],
                              [helper.make_tensor_value_info("b_y", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "two"], ["steps"], axis=0),
             helper.make_node("Greater", ["steps", "zero"], ["flag"]),
             helper.make_node("If", ["flag"], ["y"], then_branch=then, else_branch=other, name="by_length"),
             helper.make_node("Conv", ["y", "K"], ["c"], strides=[16], name="conv"),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[2, 0, 1]),
             helper.make_node("LSTM", ["t", "W", "R", "B"], ["Y", "Y_h"], hidden_size=hidden, name="lstm")]
    inits = [value("pads", [0, 0, pad, 0, 0, pad]), value("two", 2), value("zero", 0), value("axis3", [3]),
             weight("K", (6, 3, 32)), weight("W", (1, 4 * hidden, 6)), weight("R", (1, 4 * hidden, hidden)),
             weight("B", (1, 8 * hidden))]
    graph = helper.make_graph(nodes, "if_rank", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "T"])],
                              [helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, "N", hidden])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


@pytest.mark.parametrize("batch", [None, 3])
def test_a_model_converted_only_with_shapes_runs_at_sizes_irtool_chooses(batch, capsys, tmp_path):
    """Every input's rank declared: irtool converts it with --batch (default 2) for each dynamic dim,
    and where the frontend refuses that, one dim at a time at the smallest of 32, 64, ... it converts
    at (a reflect Pad of 40 wants 41 samples: 64), said in the header; the LSTM is judged at that batch."""
    argv = ["--batch", str(batch)] if batch else []
    code, result, err = run_json(capsys, str(if_rank_model(tmp_path / "if_rank.onnx")), "-d", "CPU", *argv)
    assert code == 0 and result["verdict"] == "pass", err
    size = batch or 2
    assert result["inputs"][0]["shape"] == [size, 3, 64]
    how = result["shapes_chosen"]["x"]
    assert how.startswith(f"dim 0 = {size}, dim 2 = 64 ({WANTS_SHAPES.replace('-14', '-17')}: irtool converted it "
                          f"with {size} for each dynamic dim{' (--batch)' if batch else ''}, x dim 2 = 64, the "
                          f"smallest of 32, 64, ... 4096 it converts at (at {size}: Conv-17:"), how
    assert [node["verdict"] for node in result["nodes"]] == ["pass"]


def test_a_model_no_size_converts_says_what_irtool_tried(capsys, tmp_path):
    code, _, err = run_json(capsys, str(if_rank_model(tmp_path / "if_rank.onnx", pad=5000)), "-d", "CPU")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "give them with --shape NAME=[...]" in err and "its inputs: x (rank 3: [?,3,?]); irtool tried x=[2, 3, " \
        "2]: " in err, err


def test_a_readable_model_keeps_its_dynamic_dims_with_shape(tmp_path):
    """--shape converts only a model that needs it: one OpenVINO reads as it is stays dynamic."""
    from real_models import front_end_onnx

    onnx.save(front_end_onnx("speech"), str(tmp_path / "speech.onnx"))
    loaded = read_model(tmp_path / "speech.onnx", shapes=lambda: {"x": [2, 3, 9]})
    assert str(loaded.model.inputs[0].get_partial_shape()) == "[?,3,?]"


def test_harness_models_convert_with_their_shapes(undeclared, tmp_path):
    suite = tmp_path / "s.toml"
    # shaped first: the entry after it must not reuse the model converted with its shapes
    suite.write_text(f'[[models]]\nid = "shaped"\npath = "{undeclared}"\nshapes = {{ x = [2, 3, 7] }}\n\n'
                     f'[[models]]\nid = "plain"\npath = "{undeclared}"\n')
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(suite), "-d", "CPU", "--report-dir",
                           str(tmp_path / "out"), "--no-progress"], capture_output=True, text=True, timeout=600)
    results = {r["case"].split("[")[0]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())["results"]}
    assert done.returncode == 1, done.stdout + done.stderr  # an error: the entry without shapes
    assert results["plain"]["verdict"] == "error" and WANTS_SHAPES in results["plain"]["message"]
    assert "(or shapes in a suite's [[models]] entry); its inputs: x (rank not declared)" in results["plain"]["message"]
    shaped = results["shaped"]
    assert shaped["verdict"] == "pass" and shaped["shapes"] == {"x": [2, 3, 7]}, shaped


def onnx_with_two_failures(path):
    """An ONNX Cast to complex64 (the frontend's translator throws: no such element type) feeding an op
    no frontend knows: OpenVINO's report lists both, one as failed with its reason."""
    nodes = [oh.make_node("Cast", ["x"], ["c"], to=onnx.TensorProto.COMPLEX64, name="to_complex"),
             oh.make_node("NoSuchOp", ["c"], ["y"], name="mystery")]
    graph = oh.make_graph(nodes, "g", [oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
                          [oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])])
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 21)]), str(path))
    return path


def test_every_op_the_frontends_report_lists_is_named_with_its_reason_in_one_bounded_line(tmp_path):
    """Not the report's first line alone (DTLN's SavedModel said only "Const of unknown type", where
    OpenVINO names Cast and IRFFT and DT_COMPLEX64): each op listed, the failed one's reason kept,
    shortened past a bound."""
    path = onnx_with_two_failures(tmp_path / "two.onnx")
    with pytest.raises(NotConvertible) as raised:
        read_model(path)
    message = raised.value.message
    assert raised.value.ops == ("NoSuchOp-21", "Cast-21")
    assert f"the ONNX frontend of openvino {OPENVINO} cannot convert NoSuchOp-21, Cast-21 (Unsupported data type " \
           f"COMPLEX64 expected: BOOL" in message
    assert message.endswith("...)") and "Exception from" not in message and "\n" not in message
    assert len(message) < len(str(path)) + 400  # OpenVINO's list of every element type, cut


def test_a_model_its_frontend_cannot_convert_is_an_error_in_the_harness_as_in_run(tmp_path):
    """A skip could hide a conversion regression: the harness says error with run's message (FAILED,
    exit 1, not ALL SKIPPED's 3), as run does (exit 2, could not run)."""
    path = onnx_with_two_failures(tmp_path / "two.onnx")
    done = subprocess.run([sys.executable, "-m", "irtool", "run", str(path), "-d", "CPU"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "cannot convert NoSuchOp-21, Cast-21 (" in done.stderr, done.stderr
    said = done.stderr.strip().removeprefix("irtool: error: ")
    (tmp_path / "suite.toml").write_text(f'[suite]\nname = "s"\n\n[[models]]\npath = "{path}"\n')
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(tmp_path / "suite.toml"), "-d", "CPU",
                           "--precision", "f32", "--no-progress", "--report-dir", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300)
    (result,) = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert done.returncode == 1 and result["verdict"] == "error", done.stdout + done.stderr
    assert result["message"] == said


def gru_cell_ir(folder: Path) -> Path:
    """A GRUCell model saved as IR by openvino (layer names X, H and 'cell')."""
    import openvino as ov
    from openvino import opset3

    rng = np.random.default_rng(0)
    x, h = opset3.parameter([1, 3], np.float32, name="X"), opset3.parameter([1, 2], np.float32, name="H")
    weights = [opset3.constant(rng.uniform(-1, 1, shape).astype(np.float32)) for shape in ([6, 3], [6, 2], [6])]
    cell = opset3.gru_cell(x, h, *weights, 2)
    cell.set_friendly_name("cell")
    path = folder / "gru_cell.xml"
    ov.save_model(ov.Model([cell], [x, h]), path, compress_to_fp16=False)
    return path


@pytest.mark.parametrize("written, bad", [
    (b'name="X"', b'name="X\xff"'),  # a Parameter's name (what --inputs are matched by)
    (b'name="cell"', b'name="c\xe9ll"'),  # the recurrent node's (latin-1 bytes in a UTF-8 file)
    (b'names="H"', b'names="H\xfe"'),  # a tensor's
])
def test_a_name_that_is_not_utf8_is_one_clear_error(written, bad, capsys, tmp_path):
    """OpenVINO reads such a file, keeping the name's bytes; its Python API then fails on the name (an
    internal error reached the user before): one line naming the file and the name, exit 2."""
    path = gru_cell_ir(tmp_path)
    text = path.read_bytes()
    assert text.count(written) == 1, text
    path.write_bytes(text.replace(written, bad))
    code, _, err = run_json(capsys, str(path), "-d", "CPU")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert str(path) in err and "is not UTF-8 text" in err and "internal error" not in err, err


def test_a_file_the_ir_reader_does_not_take_is_one_line_without_the_other_frontends_logs(tmp_path):
    """read_model tries every frontend on a file OpenVINO's IR reader does not take (an IR version 7);
    TensorFlow's printed its text-format parse errors to the process's stderr before irtool's line."""
    path = gru_cell_ir(tmp_path)
    path.write_text(path.read_text().replace('version="11"', 'version="7"', 1))
    done = subprocess.run([sys.executable, "-m", "irtool", "run", str(path), "-d", "CPU"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "IR version 7" in lines[0], done.stderr
