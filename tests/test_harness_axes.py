"""Suite axes that reach each implementation path of a device: each input's source, the content
and element type of sequence_lengths, and the input ranges; run through the harness on the CPU.

Measured with openvino 2026.4.1 (docs/harness.md): with a static time axis the CPU runs a
sequence op as its native RNNSeq only when sequence_lengths is a Const of full lengths; a
Parameter or a ragged Const gives a TensorIterator; a dynamic dim gives RNNSeq, where lengths
shorter than the sequence meet the CPU's sequence_lengths bug."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from irtool.jobs.suite import SuiteError, load_suite
from irtool.pipeline.build import build_model
from irtool.specs.cases import CaseError, OpCase

SEQUENCES = ("GRUSequence", "LSTMSequence", "RNNSequence")
SIZES = {"batch_size": 3, "seq_length": 6, "input_size": 5}


def harness(suite: Path, out: Path, env: dict | None = None) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """``irtool harness SUITE -d CPU`` into ``out``, as a user runs it, and the results it stored."""
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(suite), "-d", "CPU", "--precision", "f32",
                           "--report-dir", str(out), "--no-progress"], capture_output=True, text=True, timeout=600,
                          env=env)
    return done, json.loads((out / "results.json").read_text())["results"]


def grid(case_id: str, op: str, extra: str) -> str:
    return f"""
[[grid]]
id = "{case_id}"
op = "{op}"
attributes = {{ hidden_size = 8, direction = ["forward", "reverse", "bidirectional"] }}
sizes = {{ batch_size = 3, seq_length = 6, input_size = 5 }}
{extra}
"""


@pytest.fixture(scope="module")
def axes_run(tmp_path_factory):
    """Every sequence op in every direction: full Const lengths (i32 and i64, saturating inputs
    too), W a Parameter beside Const R and B with ragged and random lengths, and a dynamic time
    axis with ragged lengths."""
    folder = tmp_path_factory.mktemp("axes")
    text = '[suite]\nname = "axes"\n'
    for op in SEQUENCES:
        text += grid(f"{op}-native", op, 'sources = { sequence_lengths = "const" }\nlengths = "full"\n'
                                         'lengths_type = ["i32", "i64"]\nvalues = ["unsaturated", "saturating"]')
        text += grid(f"{op}-w-parameter", op, 'sources = { W = "parameter" }\nlengths = ["ragged", "random"]')
        text += grid(f"{op}-dynamic", op, 'dynamic = ["seq_length"]\nlengths = ["full", "ragged"]')
    (folder / "axes.toml").write_text(text)
    done, results = harness(folder / "axes.toml", folder / "out")
    return done, {r["case"]: r for r in results}


def test_full_const_lengths_reach_the_native_kernel_in_every_direction(axes_run):
    _, results = axes_run
    native = {case: r for case, r in results.items() if "-native[" in case}
    assert len(native) == 3 * 3 * 2 * 2
    for case, result in native.items():
        assert result["verdict"] == "pass", (case, result["message"])
        (impl,) = result["implementations"].values()
        if "direction=bidirectional" in case:  # split per direction, each named
            assert impl == "forward: RNNSeq (f32); reverse: RNNSeq (f32)", case
        else:
            assert impl == "RNNSeq (f32)", case
        assert result["shapes"].get("sequence_lengths") is None  # a Const: not a model input


def test_a_w_parameter_beside_const_r_and_b_runs_and_is_judged(axes_run):
    _, results = axes_run
    mixed = {case: r for case, r in results.items() if "-w-parameter[" in case}
    assert len(mixed) == 3 * 3 * 2
    for case, result in mixed.items():
        assert result["verdict"] == "pass", (case, result["message"])
        assert "W" in result["shapes"] and "R" not in result["shapes"] and "B" not in result["shapes"]
        assert "TensorIterator" in next(iter(result["implementations"].values()))


def test_the_dynamic_path_with_ragged_lengths_finds_the_cpu_lengths_bug(axes_run):
    """The CPU's dynamic RNNSeq ignores lengths shorter than the sequence (found by construction:
    OpenVINO's own dynamic tests fill lengths with the maximum)."""
    done, results = axes_run
    dynamic = {case: r for case, r in results.items() if "-dynamic[" in case}
    full = [r for case, r in dynamic.items() if "lengths=full" in case]
    ragged = [r for case, r in dynamic.items() if "lengths=ragged" in case]
    assert len(full) == len(ragged) == 9
    assert all(r["verdict"] == "pass" for r in full)
    assert all("RNNSeq" in next(iter(r["implementations"].values())) for r in full + ragged)
    if any(r["verdict"] == "fail" for r in ragged):  # openvino 2026.4.1 and earlier: every one
        assert done.returncode == 1
        assert all(o["name"] in ("Y", "Ho", "Co") for r in ragged for o in r["outputs"] if not o["passed"])
    else:
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("lengths, expected", [
    ("full", [6, 6, 6]), ("zero", [0, 0, 0]),
])
def test_lengths_content_as_a_const(lengths, expected):
    import openvino as ov

    case = OpCase("GRUSequence", {"hidden_size": 4, "direction": "forward"}, SIZES,
                  sources={"sequence_lengths": "const"}, lengths=lengths, lengths_type="i64")
    model = build_model(case)
    assert [p.get_friendly_name() for p in model.get_parameters()] == ["X", "initial_hidden_state"]
    gru = next(op for op in model.get_ordered_ops() if op.get_type_name() == "GRUSequence")
    lengths_const = gru.input_value(2).get_node()
    assert lengths_const.get_type_name() == "Constant"
    assert lengths_const.get_element_type() == ov.Type.i64
    assert lengths_const.get_data().tolist() == expected


def test_random_lengths_allow_zero_and_stay_valid():
    case = OpCase("LSTMSequence", {"hidden_size": 4, "direction": "forward"}, {**SIZES, "batch_size": 64},
                  sources={"sequence_lengths": "const"}, lengths="random")
    rng = np.random.default_rng(0)
    port = next(p for p in case.ports if p.role == "lengths")
    values = case.tensor(port, rng)
    assert values.min() == 0 and values.max() <= 6 and len(set(values.tolist())) > 2


def test_sources_put_any_input_in_a_parameter_or_a_const():
    case = OpCase("LSTMSequence", {"hidden_size": 4, "direction": "forward"}, SIZES,
                  sources={"W": "parameter", "initial_cell_state": "const"}, values="saturating")
    model = build_model(case)
    names = [p.get_friendly_name() for p in model.get_parameters()]
    assert names == ["X", "initial_hidden_state", "sequence_lengths", "W"]
    lstm = next(op for op in model.get_ordered_ops() if op.get_type_name() == "LSTMSequence")
    for index in (2, 5, 6):  # the cell state, R and B: Consts drawn saturating, in [0, 10)
        data = lstm.input_value(index).get_node().get_data()
        assert data.min() >= 0 and data.max() < 10 and data.max() > 1


@pytest.mark.parametrize("fields, message", [
    ({"sources": {"Q": "const"}}, "sources name Q, not an input it feeds"),
    ({"sources": {"W": "constant"}}, "source of W is 'constant': expected parameter or const"),
    ({"lengths": "short"}, "lengths 'short': expected one of ragged, full, zero, random"),
    ({"lengths_type": "u8"}, "lengths_type 'u8': expected one of i32, i64"),
    ({"values": "big"}, "values 'big': expected one of unsaturated, saturating"),
    ({"sources": {"sequence_lengths": "const"}, "dynamic": ("seq_length",)},
     "sequence_lengths cannot be a Const when seq_length is dynamic"),
])
def test_bad_axis_values_are_refused(fields, message):
    with pytest.raises(CaseError, match=message.replace("(", r"\(").replace(")", r"\)")):
        OpCase("GRUSequence", {"hidden_size": 4, "direction": "forward"}, SIZES, **fields).symbols


@pytest.mark.parametrize("extra, message", [
    ('sources = { Q = "const" }', "sources: GRUSequence-5 has no input 'Q' that a case feeds"),
    ('lengths = ["full", "long"]', "lengths is 'long'; expected one of ragged, full, zero, random"),
    ('sources = { W = "param" }', "the source of W is 'param'; expected parameter or const"),
])
def test_bad_axes_in_a_suite_are_refused_when_it_is_read(tmp_path, extra, message):
    path = tmp_path / "s.toml"
    path.write_text(grid("g", "GRUSequence", extra))
    with pytest.raises(SuiteError, match=message.replace("(", r"\(")):
        load_suite(path)


def test_onnx_grids_take_no_ir_axes(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[[grid]]\nid = "g"\nop = "GRU"\nattributes = { hidden_size = 4 }\nlengths = "full"\n')
    with pytest.raises(SuiteError, match="'lengths' is for grids of an OpenVINO op"):
        load_suite(path)


def test_full_suite_names_every_implementation_path():
    """full.toml crosses the axes so that every sequence op and direction reaches RNNSeq with static
    shapes, the TensorIterator path and the dynamic path with ragged lengths."""
    suite = load_suite(Path(__file__).parent.parent / "samples" / "suites" / "full.toml")
    for short in ("gru", "lstm", "rnn"):
        for direction in ("forward", "reverse", "bidirectional"):
            ids = [c for c in suite.cases if f"direction={direction}" in c.id]
            assert any(c.id.startswith(f"{short}-rnnseq-static[") and c.expect_impl == "RNNSeq"
                       and c.sources == {"sequence_lengths": "const"} and c.lengths == "full" for c in ids)
            assert any(c.id.startswith(f"{short}-ti-static[") and c.expect_impl == "TensorIterator" for c in ids)
            assert any(c.id.startswith(f"{short}-rnnseq-dynamic[") and c.lengths == "ragged" for c in ids)


SHAPES = """
[[grid]]
id = "shapes"
op = "GRUSequence"
attributes = { hidden_size = 4, direction = "forward" }
sizes = { batch_size = 2, seq_length = 5, input_size = 3 }
dynamic = ["batch_size", "seq_length"]
lengths = ["full", "ragged"]
infer_sizes = [{ batch_size = 1, seq_length = 3 }, { batch_size = 4, seq_length = 7 }, { batch_size = 2, seq_length = 1 }]

[[grid]]
id = "bounded"
op = "LSTMSequence"
attributes = { hidden_size = 4, direction = "forward" }
sizes = { batch_size = 3, seq_length = 5, input_size = 3 }
bounds = { batch_size = [1, 15] }
lengths = "full"
infer_sizes = [{ batch_size = 1 }, { batch_size = 15 }]
"""


def test_several_shapes_on_one_compiled_model_each_judged_and_a_mismatch_names_its_shape(tmp_path):
    """A batch of one has only full lengths, so the CPU's dynamic-path lengths bug shows first at the
    second shape (batch 4, ragged): the failure names it and its position in the list."""
    (tmp_path / "s.toml").write_text(SHAPES)
    done, stored = harness(tmp_path / "s.toml", tmp_path / "out")
    results = {r["case"]: r for r in stored}
    full = results["shapes[lengths=full,seed=0]"]
    assert full["verdict"] == "pass"
    assert full["message"] == ("3 shapes inferred in order on one compiled model (batch_size 1, seq_length 3; "
                               "batch_size 4, seq_length 7; batch_size 2, seq_length 1)")
    ragged = results["shapes[lengths=ragged,seed=0]"]
    if ragged["verdict"] == "fail":  # openvino 2026.4.1 and earlier
        assert done.returncode == 1
        assert ragged["message"].startswith("shape 2 of 3 (batch_size 4, seq_length 7): outside tolerance: ")
        assert ragged["shapes"]["X"] == [4, 7, 3]  # the failing shape's inputs, and its reproducer's
        repro = tmp_path / "out" / ragged["reproducer"]
        assert np.load(repro / "inputs.npz")["X"].shape == (4, 7, 3)
    bounded = results["bounded[seed=0]"]
    assert bounded["verdict"] == "pass" and bounded["shapes"]["X"] == [15, 5, 3]


def test_a_bounded_dim_is_declared_with_its_bounds():
    case = OpCase("LSTMSequence", {"hidden_size": 4, "direction": "forward"}, SIZES, bounds={"batch_size": (1, 15)})
    shapes = [str(p.get_partial_shape()) for p in build_model(case).get_parameters()]
    assert shapes[0] == "[1..15,6,5]"
    with pytest.raises(CaseError, match=r"batch_size is 16, outside its bounds \[1, 15\]"):
        OpCase("LSTMSequence", {"hidden_size": 4, "direction": "forward"}, {**SIZES, "batch_size": 16}, bounds={"batch_size": (1, 15)}).symbols


@pytest.mark.parametrize("extra, message", [
    ('infer_sizes = [{ batch_size = 3 }]', "infer_sizes names batch_size, not a dynamic dim of the case"),
    ('dynamic = ["batch_size"]\ninfer_sizes = [{ batch_size = 0 }]', "infer_sizes is .*; expected a list of tables"),
    ('bounds = { batch_size = [2, 4] }\ninfer_sizes = [{ batch_size = 9 }]', r"batch_size is 9, outside its bounds"),
    ('bounds = { batch_size = [4, 2] }', r"bounds of batch_size are \(4, 2\); expected \[min, max\]"),
    ('dynamic = ["batch_size"]\ninfer_sizes = [{ batch_sise = 1 }]',  # misspelt dims: named, with a suggestion
     r"infer_sizes names batch_sise, not a dim of the op \(did you mean batch_size\?\)"),
    ('bounds = { batch = [1, 4] }', r"bounds names batch, not a dim that can be dynamic \(did you mean batch_size\?\)"),
])
def test_bad_shape_axes_are_refused_when_the_suite_is_read(tmp_path, extra, message):
    path = tmp_path / "s.toml"
    path.write_text(grid("g", "GRUSequence", extra))
    with pytest.raises(SuiteError, match=message):
        load_suite(path)


def test_openvinos_sequence_to_tensor_iterator_pass_runs_before_compiling_and_the_sequence_is_judged(tmp_path):
    """The TensorIterator the pass makes runs in place of the sequence, and its outputs (Y, Ho, Co)
    are judged as the sequence's, sequence_lengths masking included; a wrong output fails."""
    text = ""
    for op in SEQUENCES:
        text += grid(f"{op}-ti", op, 'transform = "sequence_to_ti"\nlengths = "random"').replace(
            '["forward", "reverse", "bidirectional"]', '["forward", "reverse"]')
    (tmp_path / "s.toml").write_text(text)
    for fault, code in (("", 0), ("skew:1e-3,direction=reverse", 1)):
        env = {**__import__("os").environ, "IRTOOL_FAULT": fault} if fault else None
        out = tmp_path / f"out{code}"
        done, results = harness(tmp_path / "s.toml", out, env)
        assert done.returncode == code, done.stdout + done.stderr
        assert len(results) == 6
        for result, op in zip(results, [op for op in SEQUENCES for _ in range(2)]):
            assert "::" not in result["case"] and result["op"].startswith(op)
            assert [o["name"] for o in result["outputs"]][:2] == ["Y", "Ho"]
            assert result["implementations"] == {op: "TensorIterator (f32; decomposed)"}
            assert result["verdict"] == ("fail" if fault and "direction=reverse" in result["case"] else "pass")


@pytest.mark.parametrize("op, direction, message", [
    ("GRUSequence", "bidirectional", "OpenVINO's pass leaves a bidirectional one as it is"),
    ("GRUCell", None, "a cell has no sequence to convert"),
])
def test_sequence_to_tensor_iterator_is_refused_where_the_pass_does_nothing(op, direction, message):
    attributes = {"hidden_size": 4, **({"direction": direction} if direction else {})}
    sizes = {k: v for k, v in SIZES.items() if k != "seq_length" or direction}
    with pytest.raises(CaseError, match=message):
        OpCase(op, attributes, sizes, transform="sequence_to_ti").symbols


def test_clip_values_the_spec_leaves_open_run_with_a_note_of_what_the_device_did(tmp_path):
    """-1, -inf and NaN: the spec asks for a positive clip; the reference reads them as no clipping
    (what OpenVINO's CPU plugin does, measured), and each result says whether the device matched."""
    (tmp_path / "s.toml").write_text(grid("g", "LSTMSequence", "").replace(
        '["forward", "reverse", "bidirectional"]', '"forward", clip = [-1.0, -inf, nan]'))
    done, results = harness(tmp_path / "s.toml", tmp_path / "out")
    assert [r["case"] for r in results] == ["g[clip=-1,seed=0]", "g[clip=-inf,seed=0]", "g[clip=nan,seed=0]"]
    for result, text in zip(results, ("-1", "-inf", "nan")):
        assert result["message"].startswith(f"clip {text} is left open by the spec (")
        assert "judged as clip 0: CPU " in result["message"]
        assert result["message"].endswith("CPU matched it" if result["verdict"] == "pass" else "CPU did not match it")
    assert done.returncode == (0 if all(r["verdict"] == "pass" for r in results) else 1)


def test_an_open_value_is_built_as_asked_and_a_closed_one_still_refused():
    case = OpCase("GRUSequence", {"hidden_size": 4, "direction": "forward", "clip": -1.0}, SIZES)
    assert case.filled_attributes["clip"] == -1.0 and case.open_notes[0].startswith("clip -1 is left open")
    gru = next(op for op in build_model(case).get_ordered_ops() if op.get_type_name() == "GRUSequence")
    assert gru.get_attributes()["clip"] == -1.0
    with pytest.raises(CaseError, match="hidden_size"):
        OpCase("GRUSequence", {"hidden_size": -4, "direction": "forward"}, SIZES).symbols


# Static shapes and a Const of full lengths: the attributes and the weights' source decide as
# well (measured with samples/suites/openvino-cpu.toml; docs/harness.md).
ATTRIBUTE_PATHS = [
    ("GRUSequence", 'activations = ["sigmoid", "tanh"], clip = 0.0', "", "RNNSeq"),
    ("GRUSequence", 'activations = ["tanh", "sigmoid"], clip = 0.0', "", "TensorIterator"),
    ("GRUSequence", 'clip = 0.7', "", "TensorIterator"),
    ("GRUSequence", 'clip = inf', "", "RNNSeq"),
    ("LSTMSequence", 'activations = ["tanh", "relu", "sigmoid"]', "", "TensorIterator"),
    ("LSTMSequence", 'clip = 0.0', 'weights = "parameter"', "TensorIterator"),
    ("RNNSequence", 'activations = ["sigmoid"]', "", "RNNSeq"),
    ("RNNSequence", 'activations = ["relu"], clip = 0.7', "", "TensorIterator"),
]


@pytest.fixture(scope="module")
def attribute_paths_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attribute-paths")
    text = '[suite]\nname = "attribute-paths"\n'
    for index, (op, attributes, extra, _) in enumerate(ATTRIBUTE_PATHS):
        text += f"""
[[grid]]
id = "path{index}"
op = "{op}"
attributes = {{ hidden_size = 4, direction = "forward", {attributes} }}
sizes = {{ batch_size = 3, seq_length = 4, input_size = 5 }}
sources = {{ sequence_lengths = "const" }}
lengths = "full"
{extra}
"""
    (folder / "paths.toml").write_text(text)
    _, results = harness(folder / "paths.toml", folder / "out")
    return {r["case"].split("[")[0]: r for r in results}


@pytest.mark.parametrize("index", range(len(ATTRIBUTE_PATHS)),
                         ids=[f"{op}-{attrs}-{extra}" for op, attrs, extra, _ in ATTRIBUTE_PATHS])
def test_static_full_const_lengths_reach_the_native_kernel_only_with_default_attributes(attribute_paths_run, index):
    op, attributes, extra, expected = ATTRIBUTE_PATHS[index]
    result = attribute_paths_run[f"path{index}"]
    assert result["verdict"] == "pass", result["message"]
    assert result["implementations"] == {op: f"{expected} (f32)" if expected == "RNNSeq"
                                         else f"{expected} (f32; decomposed)"}


CELL_VARIANTS = [("GRUCell", {"linear_before_reset": False, "activations": ["sigmoid", "tanh"]}),
                 ("GRUCell", {"linear_before_reset": True, "activations": ["tanh", "relu"]}),
                 ("LSTMCell", {"activations": ["sigmoid", "tanh", "tanh"]}),
                 ("LSTMCell", {"activations": ["tanh", "relu", "sigmoid"]}),
                 ("RNNCell", {"activations": ["relu"]})]


@pytest.mark.parametrize("clip", [0.0, 0.5])
@pytest.mark.parametrize("op, attributes", CELL_VARIANTS)
def test_a_decomposed_cell_computes_what_openvinos_cell_computes(op, attributes, clip):
    """The decomposition is built through the opset API (OpenVINO's Python API has no pass for it):
    checked here against OpenVINO's own cell op on the CPU, not against irtool's reference."""
    import openvino as ov

    sizes = {"batch_size": 3, "input_size": 4}
    case = OpCase(op, {"hidden_size": 5, "clip": clip, **attributes}, sizes, sources={"W": "parameter"})
    cell, decomposed = build_model(case), build_model(dataclasses.replace(case, transform="decompose_cell"))
    assert op not in {node.get_type_name() for node in decomposed.get_ordered_ops()}
    rng = np.random.default_rng(1)
    feeds = {p.get_friendly_name(): rng.uniform(-2, 2, tuple(p.get_shape())).astype(np.float32)
             for p in cell.get_parameters()}
    core = ov.Core()
    want, got = (core.compile_model(m, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(feeds) for m in (cell, decomposed))
    for k in range(len(cell.outputs)):
        np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), atol=1e-6, rtol=0)


def test_a_decomposed_cell_is_judged_as_its_op_and_a_wrong_output_fails(tmp_path):
    (tmp_path / "s.toml").write_text(
        '[[grid]]\nid = "dec"\nop = "LSTMCell"\nattributes = { hidden_size = 5 }\n'
        'sizes = { batch_size = 3, input_size = 4 }\ntransform = "decompose_cell"\n')
    for fault, code in (("", 0), ("skew:1e-3", 1)):
        env = {**__import__("os").environ, "IRTOOL_FAULT": fault} if fault else None
        done, results = harness(tmp_path / "s.toml", tmp_path / f"out{code}", env)
        assert done.returncode == code, done.stdout + done.stderr
        (result,) = results
        assert result["case"] == "dec[seed=0]" and result["op"] == "LSTMCell-4"
        assert [o["name"] for o in result["outputs"]] == ["Ho", "Co"]
        assert result["implementations"]["LSTMCell"] != "not reported"


def test_decompose_cell_is_for_cells():
    with pytest.raises(CaseError, match="transform decompose_cell is for cells"):
        OpCase("GRUSequence", {"hidden_size": 4, "direction": "forward"}, SIZES, transform="decompose_cell").symbols
