"""TensorIterator and Loop bodies: real models built with openvino's Python API (a GRUCell body in a
TensorIterator, an LSTMCell body in a Loop, an RNNCell body in a TensorIterator inside a
TensorIterator's body) validate with no error; each mutant below is refused by OpenVINO's
``read_model`` (measured here, not assumed) and found by irtool validate with its code, at the line
of what was changed; and the mutants OpenVINO reads are no error."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest_validate import openvino_reads

from irtool.validate import validate_file

ov = pytest.importorskip("openvino")
H, I, N, T = 4, 3, 2, 3


def _ti_gru(ops):
    X, H0 = ops.parameter([N, T, I], np.float32, name="X"), ops.parameter([N, H], np.float32, name="H0")
    xi, hi = ops.parameter([N, 1, I], np.float32, name="xi"), ops.parameter([N, H], np.float32, name="hi")
    squeezed = ops.squeeze(xi, ops.constant(np.array([1], np.int64)))
    rng = np.random.default_rng(0)
    weights = [ops.constant(rng.standard_normal(s).astype(np.float32)) for s in ((3 * H, I), (3 * H, H), (3 * H,))]
    cell = ops.gru_cell(squeezed, hi, *weights, H, name="cell")
    ho = ops.result(cell)
    yo = ops.result(ops.unsqueeze(cell, ops.constant(np.array([1], np.int64))))
    ti = ops.tensor_iterator()
    ti.set_body(ov.Model([ho, yo], [xi, hi], "body"))
    ti.set_sliced_input(xi, X.output(0), 0, 1, 1, -1, 1)
    ti.set_merged_input(hi, H0.output(0), ho.output(0))
    out_h = ti.get_iter_value(ho.output(0), -1)
    out_y = ti.get_concatenated_slices(yo.output(0), 0, 1, 1, -1, 1)
    return ov.Model([ops.result(out_y), ops.result(out_h)], [X, H0], "ti_gru")


def _loop_lstm(ops):
    X = ops.parameter([N, T, I], np.float32, name="X")
    H0, C0 = ops.parameter([N, H], np.float32, name="H0"), ops.parameter([N, H], np.float32, name="C0")
    xi = ops.parameter([N, 1, I], np.float32, name="xi")
    hi, ci = ops.parameter([N, H], np.float32, name="hi"), ops.parameter([N, H], np.float32, name="ci")
    squeezed = ops.squeeze(xi, ops.constant(np.array([1], np.int64)))
    rng = np.random.default_rng(1)
    weights = [ops.constant(rng.standard_normal(s).astype(np.float32)) for s in ((4 * H, I), (4 * H, H), (4 * H,))]
    cell = ops.lstm_cell(squeezed, hi, ci, *weights, H, name="cell")
    ho, co = ops.result(cell.output(0)), ops.result(cell.output(1))
    condition = ops.result(ops.constant(np.array(True)))
    yo = ops.result(ops.unsqueeze(cell.output(0), ops.constant(np.array([1], np.int64))))
    loop = ops.loop(ops.constant(np.array(T, np.int64)), ops.constant(np.array(True)))
    loop.set_function(ov.Model([condition, ho, co, yo], [xi, hi, ci], "body"))
    loop.set_special_body_ports([-1, 0])
    loop.set_sliced_input(xi, X.output(0), 0, 1, 1, -1, 1)
    loop.set_merged_input(hi, H0.output(0), ho.output(0))
    loop.set_merged_input(ci, C0.output(0), co.output(0))
    out_h = loop.get_iter_value(ho.output(0), -1)
    out_y = loop.get_concatenated_slices(yo.output(0), 0, 1, 1, -1, 1)
    return ov.Model([ops.result(out_y), ops.result(out_h)], [X, H0, C0], "loop_lstm")


def _nested_rnn(ops):
    """A Loop whose body holds a TensorIterator whose body holds an RNNCell (OpenVINO refuses a
    TensorIterator in a TensorIterator)."""
    X, H0 = ops.parameter([N, T, I], np.float32, name="X"), ops.parameter([N, H], np.float32, name="H0")
    xo, ho_outer = ops.parameter([N, T, I], np.float32, name="xo"), ops.parameter([N, H], np.float32, name="ho")
    xi, hi = ops.parameter([N, 1, I], np.float32, name="xi"), ops.parameter([N, H], np.float32, name="hi")
    squeezed = ops.squeeze(xi, ops.constant(np.array([1], np.int64)))
    rng = np.random.default_rng(2)
    weights = [ops.constant(rng.standard_normal(s).astype(np.float32)) for s in ((H, I), (H, H), (H,))]
    inner_result = ops.result(ops.rnn_cell(squeezed, hi, *weights, H, ["tanh"], [], [], name="cell"))
    inner = ops.tensor_iterator()
    inner.set_body(ov.Model([inner_result], [xi, hi], "inner"))
    inner.set_sliced_input(xi, xo.output(0), 0, 1, 1, -1, 1)
    inner.set_merged_input(hi, ho_outer.output(0), inner_result.output(0))
    outer_result = ops.result(inner.get_iter_value(inner_result.output(0), -1))
    condition = ops.result(ops.constant(np.array(True)))
    outer = ops.loop(ops.constant(np.array(2, np.int64)), ops.constant(np.array(True)))
    outer.set_function(ov.Model([condition, outer_result], [xo, ho_outer], "outer"))
    outer.set_special_body_ports([-1, 0])
    outer.set_invariant_input(xo, X.output(0))
    outer.set_merged_input(ho_outer, H0.output(0), outer_result.output(0))
    return ov.Model([ops.result(outer.get_iter_value(outer_result.output(0), -1))], [X, H0], "nested")


@pytest.fixture(scope="module")
def seeds(tmp_path_factory) -> dict[str, Path]:
    import openvino.opset8 as ops

    folder = tmp_path_factory.mktemp("bodies")
    paths = {}
    for name, build in (("ti_gru", _ti_gru), ("loop_lstm", _loop_lstm), ("nested", _nested_rnn)):
        paths[name] = folder / f"{name}.xml"
        ov.save_model(build(ops), str(paths[name]), compress_to_fp16=False)
    return paths


@pytest.mark.parametrize("seed", ["ti_gru", "loop_lstm", "nested"])
def test_built_models_validate_clean(seeds, seed):
    report = validate_file(seeds[seed])
    assert openvino_reads(seeds[seed])
    assert [d for d in report.diagnostics if d.severity != "note"] == []
    assert any("in the body of" in d.message for d in report.diagnostics)  # the body was read: its notes


SLICED = re.compile(r'<input axis="1" external_port_id="(\d+)" internal_layer_id="(\d+)"')
MERGED = re.compile(r'<input external_port_id="(\d+)" internal_layer_id="(\d+)" />')
OUTPUT = re.compile(r'<output external_port_id="(\d+)" internal_layer_id="(\d+)" />')
BACK = re.compile(r'<edge from-layer="(\d+)" to-layer="(\d+)" />')
LAST_BODY_EDGE = re.compile(r'(<edge from-layer=")(\d+)(" from-port="\d+" to-layer="\d+" to-port=")\d+(" />\s*</edges>\s*(?:<rt_info />\s*)?</body>)')
# name: (seed, pattern, replacement (a function of the match), code, where: "layer" (the
# TensorIterator's or Loop's line), "change" (the changed line) or a text of the mutant)
MUTANTS = {
    "no body": ("ti_gru", re.compile(r"<body>.*</body>", re.S), lambda m: "", "IR090", "layer"),
    "body without layers": ("loop_lstm", re.compile(r"<body>.*</body>", re.S), lambda m: "<body><edges/></body>",
                            "IR090", "change"),
    "no port_map": ("ti_gru", re.compile(r"<port_map>.*</port_map>", re.S), lambda m: "", "IR093", "layer"),
    "sliced input deleted": ("ti_gru", SLICED, lambda m: "<!-- -->", "IR093", "layer"),
    "merged input deleted": ("loop_lstm", MERGED, lambda m: "<!-- -->", "IR093", "layer"),
    "output deleted": ("ti_gru", OUTPUT, lambda m: "<!-- -->", "IR093", "layer"),
    "axis -1": ("ti_gru", SLICED, lambda m: m[0].replace('axis="1"', 'axis="-1"'), "IR091", "change"),
    "axis 2**64": ("loop_lstm", SLICED, lambda m: m[0].replace('axis="1"', 'axis="18446744073709551616"'), "IR091",
                   "change"),
    "axis past the rank": ("ti_gru", SLICED, lambda m: m[0].replace('axis="1"', 'axis="5"'), "IR091", "change"),
    "external_port_id -1": ("ti_gru", SLICED, lambda m: m[0].replace(f'"{m[1]}" internal', '"-1" internal'),
                            "IR093", "layer"),
    "external_port_id 2**64": ("ti_gru", MERGED, lambda m: m[0].replace(f'"{m[1]}" internal', '"18446744073709551616" '
                                                                                           'internal'), "IR091", "change"),
    "external_port_id past the inputs": ("loop_lstm", MERGED, lambda m: m[0].replace(f'"{m[1]}" internal', '"9" internal'),
                                         "IR093", "layer"),
    "external_port_id twice": ("ti_gru", MERGED, lambda m: m[0].replace(f'"{m[1]}" internal', '"0" internal'), "IR093",
                               "change"),
    "output external_port_id text": ("ti_gru", OUTPUT, lambda m: m[0].replace(f'"{m[1]}" internal', '"abc" internal'),
                                     "IR091", "change"),
    "internal_layer_id no layer": ("ti_gru", MERGED, lambda m: m[0].replace(f'layer_id="{m[2]}"', 'layer_id="99"'),
                                   "IR092", "change"),
    "internal_layer_id a Parameter for an output": ("loop_lstm", OUTPUT, lambda m: m[0].replace(
        f'layer_id="{m[2]}"', 'layer_id="0"'), "IR092", "change"),
    "back edge from no Result": ("ti_gru", BACK, lambda m: m[0].replace(f'from-layer="{m[1]}"', 'from-layer="99"'),
                                 "IR092", "change"),
    "back edge to-layer text first": ("loop_lstm", BACK, lambda m: '<edge from-layer="x" to-layer="y" />' + m[0],
                                      "IR091", "change"),
    "start not a number": ("ti_gru", re.compile('start="0"'), lambda m: 'start="abc"', "IR091", "change"),
    "Loop without execution_condition": ("loop_lstm", re.compile('purpose="execution_condition"'),
                                         lambda m: 'purpose="other"', "IR093", "layer"),
    "body edge to a missing port": ("ti_gru", LAST_BODY_EDGE, lambda m: f"{m[1]}{m[2]}{m[3]}9{m[4]}", "IR062", "change"),
    "body edge from a missing layer": ("nested", LAST_BODY_EDGE, lambda m: f"{m[1]}77{m[3]}{m[4]}", "IR061", "change"),
    "cell clip in a body": ("ti_gru", re.compile(r'clip="0"'), lambda m: 'clip="abc"', "IR022", "change"),
    "cell clip in a body in a body": ("nested", re.compile(r'clip="0"'), lambda m: 'clip="abc"', "IR022", "change"),
    "body Const past the .bin": ("ti_gru", re.compile(r'offset="(\d+)" size="(\d+)"'),
                                 lambda m: 'offset="999999" size="8"', "IR071", "change"),
}
READ = {  # mutants OpenVINO reads: no error
    "no back_edges, outputs numbered anyhow": ("ti_gru", OUTPUT, lambda m: m[0].replace(f'"{m[1]}" internal', '"9" internal')),
    "axis with a leading space": ("ti_gru", SLICED, lambda m: m[0].replace('axis="1"', 'axis=" 1"')),
    "a back edge no input uses": ("ti_gru", BACK, lambda m: m[0] + '<edge from-layer="x" to-layer="y" />'),
}


def _mutate(seeds: dict[str, Path], folder: Path, seed: str, pattern, replace) -> tuple[Path, int, int]:
    """The mutant (its .bin copied), the line of the change, and the line of the first TI or Loop."""
    text = seeds[seed].read_text()
    match = pattern.search(text)
    assert match, f"{seed} has no {pattern.pattern}"
    mutant = text[:match.start()] + replace(match) + text[match.end():]
    path = folder / f"{seed}.xml"
    path.write_text(mutant)
    shutil.copy(seeds[seed].with_suffix(".bin"), folder / f"{seed}.bin")
    layer = re.search(r'type="(TensorIterator|Loop)"', mutant)
    return path, text.count("\n", 0, match.start()) + 1, mutant.count("\n", 0, layer.start()) + 1


@pytest.mark.parametrize("name", list(MUTANTS))
def test_body_mutant_refused_and_found(seeds, tmp_path, name):
    seed, pattern, replace, code, where = MUTANTS[name]
    path, changed, layer_line = _mutate(seeds, tmp_path, seed, pattern, replace)
    assert not openvino_reads(path)
    found = [d for d in validate_file(path).diagnostics if d.code == code]
    assert found, [(d.code, d.line, d.message) for d in validate_file(path).diagnostics]
    line = layer_line if where == "layer" else changed
    assert line in [d.line for d in found], [(d.line, d.message) for d in found]


@pytest.mark.parametrize("name", list(READ))
def test_body_mutant_read_is_no_error(seeds, tmp_path, name):
    seed, pattern, replace = READ[name]
    path, _, _ = _mutate(seeds, tmp_path, seed, pattern, replace)
    assert openvino_reads(path)
    assert [d for d in validate_file(path).diagnostics if d.severity == "error"] == []


def test_body_location_names_the_body(seeds, tmp_path):
    path, changed, _ = _mutate(seeds, tmp_path, "nested", re.compile(r'clip="0"'), lambda m: 'clip="abc"')
    (finding,) = [d for d in validate_file(path).diagnostics if d.code == "IR022"]
    assert re.match(r"layer \d+ 'cell' in the body of layer \d+ '[^']+' in the body of layer \d+ '[^']+' attribute clip",
                    finding.message), finding.message
    assert (finding.line, finding.column) == (changed, path.read_text().splitlines()[changed - 1].index("clip=") + 1)
