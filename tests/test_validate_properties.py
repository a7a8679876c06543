"""Property tests: the validator on mutated IR never raises and always reports in its catalogue.

Valid IRs are written once per module by OpenVINO itself (GRUSequence-5, LSTMSequence-5,
GRUCell-3, LSTMCell-4, single-op nets with Const weights and a .bin); hypothesis then
mutates them, through the XML tree (attributes and their values, <dim>s, port ids,
precisions, layer ids, edges, whole elements) and through the bytes (truncation, random
bytes inserted or overwritten, ranges cut or repeated).  Whatever comes out,
``validate_file`` and ``validate_model`` return a FileReport whose every diagnostic is a
code of the catalogue with its severity and a sane location, and the report renders in
every format.  The streamed read of a <net> gives the same model as a walk of the whole
tree.  Last, on these fully static models, any change of a <dim> of the RNN layer to
another positive size makes the report invalid, in the net and in the layer alone.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree
from openvino import opset1, opset3, opset4, opset5

from irtool.core.diagnostics import CODES, ERROR, FileReport, render_json, render_sarif, render_text
from irtool.ir import IRParseError, parse_ir_bytes
from irtool.validate import validate_file, validate_model

PROPERTY_SETTINGS = settings(max_examples=150, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
RNN_TYPES = ("GRUSequence", "LSTMSequence", "GRUCell", "LSTMCell")
SHAPE_CODES = {"IR040", "IR041", "IR042", "IR044"}
B, T, I, H = 2, 3, 5, 4


# ---------------------------------------------------------------- the valid IRs, written by OpenVINO

def _const(rng: np.random.Generator, *shape: int):
    return opset1.constant(rng.standard_normal(shape).astype(np.float32))


def _gru_sequence(rng):
    x = opset1.parameter([B, T, I], ov.Type.f32, name="X")
    h = opset1.parameter([B, 2, H], ov.Type.f32, name="H")
    lengths = opset1.constant(np.array([T, T - 1], dtype=np.int32))
    op = opset5.gru_sequence(x, h, lengths, _const(rng, 2, 3 * H, I), _const(rng, 2, 3 * H, H),
                             _const(rng, 2, 4 * H), H, "bidirectional", linear_before_reset=True)
    return [op.output(0), op.output(1)], [x, h]


def _lstm_sequence(rng):
    x = opset1.parameter([B, T, I], ov.Type.f32, name="X")
    h = opset1.parameter([B, 1, H], ov.Type.f32, name="H")
    c = opset1.parameter([B, 1, H], ov.Type.f32, name="C")
    lengths = opset1.constant(np.array([T, 1], dtype=np.int64))
    op = opset5.lstm_sequence(x, h, c, lengths, _const(rng, 1, 4 * H, I), _const(rng, 1, 4 * H, H),
                              _const(rng, 1, 4 * H), H, "reverse", clip=3.0)
    return [op.output(0), op.output(1), op.output(2)], [x, h, c]


def _gru_cell(rng):
    x = opset1.parameter([B, I], ov.Type.f32, name="X")
    h = opset1.parameter([B, H], ov.Type.f32, name="H")
    op = opset3.gru_cell(x, h, _const(rng, 3 * H, I), _const(rng, 3 * H, H), _const(rng, 3 * H), H,
                         activations=["tanh", "relu"])
    return [op.output(0)], [x, h]


def _lstm_cell(rng):
    x = opset1.parameter([B, I], ov.Type.f32, name="X")
    h = opset1.parameter([B, H], ov.Type.f32, name="H")
    c = opset1.parameter([B, H], ov.Type.f32, name="C")
    op = opset4.lstm_cell(x, h, c, _const(rng, 4 * H, I), _const(rng, 4 * H, H), _const(rng, 4 * H), H)
    return [op.output(0), op.output(1)], [x, h, c]


BUILDERS = {"gru_sequence": _gru_sequence, "lstm_sequence": _lstm_sequence, "gru_cell": _gru_cell,
            "lstm_cell": _lstm_cell}


class Sample:
    """One valid IR; mutants are written over ``path``, beside the original .bin."""

    def __init__(self, name: str, xml: bytes, path: Path):
        self.name, self.xml, self.path = name, xml, path

    def __repr__(self) -> str:
        return f"<{self.name} IR>"

    def write(self, data: bytes) -> Path:
        self.path.write_bytes(data)
        return self.path

    def tree(self) -> etree._Element:
        return etree.fromstring(self.xml, etree.XMLParser(resolve_entities=False, no_network=True))

    @staticmethod
    def rnn_layer(root: etree._Element) -> etree._Element:
        [layer] = [e for e in root.iter("layer") if e.get("type") in RNN_TYPES]
        return layer


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> dict[str, Sample]:
    made = {}
    for index, (name, build) in enumerate(BUILDERS.items()):
        outputs, params = build(np.random.default_rng(index))
        folder = tmp_path_factory.mktemp(name)
        path = folder / f"{name}.xml"
        model = ov.Model([opset1.result(o) for o in outputs], params, name)
        ov.save_model(model, str(path), compress_to_fp16=False)
        made[name] = Sample(name, path.read_bytes(), path)
    return made


def test_the_unmutated_samples_are_valid(samples):
    """The base of every property: OpenVINO's own files, checked clean, with their RNN layer."""
    for sample in samples.values():
        report = validate_file(sample.write(sample.xml))
        assert report.diagnostics == [], (sample.name, report.diagnostics)
        assert Sample.rnn_layer(sample.tree()).get("type") in RNN_TYPES


# ---------------------------------------------------------------- what every report must satisfy

def assert_sound(report: object) -> None:
    assert isinstance(report, FileReport)
    for d in report.diagnostics:
        assert d.code in CODES and d.severity == CODES[d.code].severity, d
        assert d.line is None or (isinstance(d.line, int) and d.line >= 1), d
        assert d.column is None or (isinstance(d.column, int) and d.column >= 1), d
        assert all(v is None or isinstance(v, str) for v in (d.layer_id, d.layer_name, d.port_id, d.attribute,
                                                              d.expected, d.found)), d
        assert isinstance(d.message, str) and d.message, d
    assert report.valid == (not any(d.severity == ERROR for d in report.diagnostics))
    lines = render_text([report]).splitlines()
    assert len(lines) == len(report.diagnostics) + 1  # one line each, whatever the file's names hold
    assert all(line.startswith(report.path) for line in lines[:-1]) and lines[-1].startswith(
        "1 file checked: " if report.unchecked is None else "0 files checked, 1 file not checked: ")
    files = json.loads(render_json([report]))["files"]
    assert [d["code"] for d in files[0]["diagnostics"]] == [d.code for d in report.diagnostics]
    assert len(json.loads(render_sarif([report], "test"))["runs"][0]["results"]) == len(report.diagnostics)


def check_bytes(sample: Sample, data: bytes) -> FileReport:
    """Both entry points on the same bytes: the file one, and parse + validate_model."""
    report = validate_file(sample.write(data))
    assert_sound(report)
    try:
        model = parse_ir_bytes(data, str(sample.path))
    except IRParseError as error:
        assert [d.code for d in report.diagnostics] == [
            {"syntax": "IR001", "binary": "IR001", "dtd": "IR002", "root": "IR004"}[error.kind]]
        return report
    in_memory = validate_model(model)
    assert_sound(in_memory)
    assert in_memory.diagnostics == report.diagnostics
    return report


# ---------------------------------------------------------------- mutation strategies

XML_CHARS = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\ufffe\uffff") | \
    st.sampled_from("\t\n")
TRICKY = [
    "", " ", "?", "-1", "-2", "-0", "+3", "0", "1", "..", "1..", "..4", "3..2", "2..8", "0x10", "1e3", "1.5", "nan",
    "inf", "-inf", "true", "false", "yes", "TRUE", "forward", "reverse", "bidirectional", "Forward",
    "sigmoid,tanh", "tanh, relu", "sigmoid,tanh,tanh", "relu,relu,relu,relu", ",", "sigmoid,,tanh", "f16", "f32",
    "bf16", "i32", "i64", "u1", "dynamic", "FP16", "FP32", "I32", "I64", "U8", "BOOL", "UNSPECIFIED", "fp8",
    "opset1", "opset3", "opset4", "opset5", "opset15", "opset0", "extension", "GRUSequence", "LSTMSequence",
    "GRUCell", "LSTMCell", "RNNCell", "Const", "Parameter", "Result", "Convert", "Add", "١٢", "²", "９", "٣",
    "9" * 19, "9" * 20, "9" * 25, "1" * 5000, "-" + "1" * 5000, "\u00a0" + "4", "4\n", "1,2", "[1,2]", "2, 5",
    "", "1" * 4000 + "," + "1" * 4000, "opset" + "3" * 5000, "opset٣", "opset00000000003",
]
VALUES = st.one_of(
    st.integers(-3, 40).map(str),
    st.integers(-2**70, 2**70).map(str),
    st.sampled_from(TRICKY),
    st.text(XML_CHARS, max_size=12),
    st.lists(st.integers(-2, 70).map(str), max_size=5).map(",".join),
    # past int64 and past Python's 4300-digit int() limit
    st.tuples(st.sampled_from(["", "-", "+", "0"]), st.sampled_from([19, 20, 21, 40, 4300, 4301, 6000])).map(
        lambda t: t[0] + "7" * t[1]),
)
ATTRIBUTE_NAMES = {
    "layer": ["id", "name", "type", "version"],
    "data": ["hidden_size", "direction", "linear_before_reset", "clip", "activations", "activations_alpha",
             "activations_beta", "shape", "element_type", "offset", "size", "output_names"],
    "port": ["id", "precision", "names"],
    "edge": ["from-layer", "from-port", "to-layer", "to-port"],
    "net": ["version", "name"],
}
NEW_NAMES = st.from_regex(r"\A[a-z_][a-z0-9_-]{0,10}\Z")


def _elements(root: etree._Element, tag: str | None = None) -> list[etree._Element]:
    return [e for e in root.iter(tag) if isinstance(e.tag, str)]


def _pick(data, items: list, label: str = "element"):
    """One of ``items``, or None when earlier mutations left none (the mutation is then skipped)."""
    return data.draw(st.sampled_from(items), label=label) if items else None


def _set_attribute(data, root):
    """Set an attribute of a layer, data, port, edge or net element, known or new, to a random value."""
    element = _pick(data, [e for e in _elements(root) if e.tag in ATTRIBUTE_NAMES])
    if element is None:
        return
    names = ATTRIBUTE_NAMES[element.tag]
    name = data.draw(st.sampled_from(sorted(element.attrib) or names) | st.sampled_from(names) | NEW_NAMES,
                     label="attribute")
    element.set(name, data.draw(VALUES, label="value"))


def _delete_attribute(data, root):
    element = _pick(data, [e for e in _elements(root) if e.attrib])
    if element is not None:
        del element.attrib[data.draw(st.sampled_from(sorted(element.attrib)), label="deleted attribute")]


def _set_dim(data, root):
    element = _pick(data, _elements(root, "dim"))
    if element is not None:
        element.text = data.draw(VALUES, label="dim text")


def _insert_dim(data, root):
    port = _pick(data, _elements(root, "port"))
    if port is not None:
        dim = etree.Element("dim")
        dim.text = data.draw(VALUES, label="new dim")
        port.insert(data.draw(st.integers(0, len(port)), label="at"), dim)


def _delete_element(data, root):
    element = _pick(data, _elements(root)[1:])
    if element is not None:
        element.getparent().remove(element)


def _duplicate_element(data, root):
    element = _pick(data, _elements(root)[1:])
    if element is not None:
        element.addnext(copy.deepcopy(element))


def _move_element(data, root):
    """Put a copy of a layer, port, dim, edge or data element under another parent."""
    element = _pick(data, _elements(root)[1:])
    if element is not None:
        _pick(data, _elements(root), "parent").append(copy.deepcopy(element))


def _set_text(data, root):
    element = _pick(data, _elements(root))
    element.text = data.draw(VALUES, label="text")


TREE_MUTATIONS = [_set_attribute, _set_attribute, _set_attribute, _delete_attribute, _set_dim, _set_dim,
                  _insert_dim, _delete_element, _duplicate_element, _move_element, _set_text]


def _serialize(root: etree._Element) -> bytes:
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


# ---------------------------------------------------------------- the properties

@PROPERTY_SETTINGS
@given(data=st.data())
def test_tree_mutations_never_raise(samples, data):
    sample = samples[data.draw(st.sampled_from(sorted(samples)), label="sample")]
    root = sample.tree()
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        data.draw(st.sampled_from(TREE_MUTATIONS), label="mutation")(data, root)
    check_bytes(sample, _serialize(root))


@PROPERTY_SETTINGS
@given(data=st.data())
def test_streamed_and_whole_tree_reads_agree(samples, data):
    """parse_ir_bytes reads a <net> while lxml parses it, dropping each layer once read; the
    plain walk of the whole tree must give the very same model (lines past 65535 included),
    or both must refuse the file."""
    from irtool.ir import parse as parse_module
    from irtool.ir.model import SourceLines

    sample = samples[data.draw(st.sampled_from(sorted(samples)), label="sample")]
    root = sample.tree()
    for _ in range(data.draw(st.integers(0, 4), label="mutations")):
        data.draw(st.sampled_from(TREE_MUTATIONS), label="mutation")(data, root)
    raw = _serialize(root)
    if data.draw(st.booleans(), label="past line 65535"):
        raw = raw.replace(b"<layers>", b"<layers>" + b"\n" * 70_000, 1)
    try:
        whole = etree.fromstring(raw, parse_module.make_parser())
    except etree.XMLSyntaxError:
        whole = None
    if whole is None:
        with pytest.raises(IRParseError):
            parse_ir_bytes(raw, "m.xml")
        return
    assert whole.tag == "net"  # what the tree mutations keep
    assert parse_ir_bytes(raw, "m.xml") == parse_module._net(whole, "m.xml", SourceLines(raw))


@PROPERTY_SETTINGS
@given(data=st.data())
def test_lone_layer_mutations_never_raise(samples, data):
    """The RNN layer pasted alone, as from a spec page, then mutated (placeholders included)."""
    sample = samples[data.draw(st.sampled_from(sorted(samples)), label="sample")]
    layer = copy.deepcopy(Sample.rnn_layer(sample.tree()))
    for _ in range(data.draw(st.integers(0, 4), label="mutations")):
        mutation = data.draw(st.sampled_from([_set_attribute, _delete_attribute, _set_dim, _insert_dim,
                                              _delete_element, _duplicate_element, _set_text]), label="mutation")
        mutation(data, layer)
    text = etree.tostring(layer)
    if data.draw(st.booleans(), label="spec-page placeholders"):
        text = text.replace(b' id="', b' ... id="', 1).replace(b' version="', b' ...  version="', 1)
    check_bytes(sample, text)


BYTE_CHUNKS = st.one_of(st.binary(min_size=1, max_size=16),
                        st.sampled_from([b"<", b">", b"</", b"/>", b"<!--", b"-->", b"&", b"&amp;", b"&x;", b'"', b"\x00",
                                         b"<![CDATA[", b"]]>", b"<?pi x?>", b"<!DOCTYPE net>", b"\xef\xbb\xbf",
                                         b"\xff\xfe", b"<layer>", b"</layers>", b"<dim>-5</dim>", b"\n" * 3]))


@PROPERTY_SETTINGS
@given(data=st.data())
def test_byte_mutations_never_raise(samples, data):
    sample = samples[data.draw(st.sampled_from(sorted(samples)), label="sample")]
    raw = sample.xml
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        start = data.draw(st.integers(0, len(raw)), label="offset")
        end = data.draw(st.integers(start, min(len(raw), start + 200)), label="end")
        kind = data.draw(st.sampled_from(["truncate", "insert", "overwrite", "cut", "repeat"]), label="kind")
        if kind == "truncate":
            raw = raw[:start]
        elif kind == "insert":
            raw = raw[:start] + data.draw(BYTE_CHUNKS, label="bytes") + raw[start:]
        elif kind == "overwrite":
            chunk = data.draw(BYTE_CHUNKS, label="bytes")
            raw = raw[:start] + chunk + raw[start + len(chunk):]
        elif kind == "cut":
            raw = raw[:start] + raw[end:]
        else:
            raw = raw[:end] + raw[start:end] + raw[end:]
    report = check_bytes(sample, raw)
    if raw == sample.xml:
        assert report.diagnostics == []


def _dim_change(data, root) -> tuple[etree._Element, str, int]:
    """Pick a <dim> of the RNN layer and a different positive size for it."""
    layer = Sample.rnn_layer(root)
    dims = [d for side in ("input", "output") for d in layer.find(side).iter("dim")]
    dim = data.draw(st.sampled_from(dims), label="dim")
    old = int(dim.text)
    new = data.draw(st.one_of(st.sampled_from([old - 1, old + 1, 2 * old, 3 * old, 4 * old, old // 2, 1, H, 3 * H,
                                               4 * H, I, B, T]),
                              st.integers(1, 2**62)).filter(lambda v: v > 0 and v != old), label="new size")
    return dim, layer.get("type"), new


@PROPERTY_SETTINGS
@given(data=st.data())
def test_every_dim_change_of_the_rnn_layer_is_an_error(samples, data):
    sample = samples[data.draw(st.sampled_from(sorted(samples)), label="sample")]
    root = sample.tree()
    dim, op_type, new = _dim_change(data, root)
    dim.text = str(new)
    report = check_bytes(sample, _serialize(root))
    assert not report.valid, (op_type, dim.sourceline, new)


@PROPERTY_SETTINGS
@given(data=st.data())
def test_every_dim_change_of_the_lone_rnn_layer_is_a_shape_error(samples, data):
    """Without edges to fall back on, the spec's dim expressions alone must catch it."""
    sample = samples[data.draw(st.sampled_from(sorted(samples)), label="sample")]
    root = sample.tree()
    dim, op_type, new = _dim_change(data, root)
    dim.text = str(new)
    report = validate_model(parse_ir_bytes(etree.tostring(Sample.rnn_layer(root))))
    assert_sound(report)
    errors = {d.code for d in report.diagnostics if d.severity == ERROR}
    assert errors & SHAPE_CODES, (op_type, new, report.diagnostics)
