"""Writes samples/ir/broken: each file is a valid sample with one defect, said in its comment.

Files whose worst finding is a warning (valid by the spec, yet OpenVINO trips on them) go
to samples/ir/warnings, those with notes only (what converters write, fine) to samples/ir/notes.  The comment's ``expect:`` list name the diagnostics the file must get (code, line,
layer, port, attribute); tests/test_validate_samples.py holds the validator to them.
Run from the repository root after make_ir.py: python samples/make_broken.py
"""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent / "ir"
VALID, BROKEN, WARNINGS, NOTES = ROOT / "valid", ROOT / "broken", ROOT / "warnings", ROOT / "notes"
sys.path.insert(0, str(ROOT.parent.parent))
from irtool.core.diagnostics import CODES, ERROR, WARNING  # noqa: E402  (the severities: one source of truth)


def sub(pattern, replacement, count=1):
    def mutate(text):
        new, n = re.subn(pattern, replacement, text, count=count, flags=re.S)
        if n == 0:
            raise SystemExit(f"pattern {pattern!r} not found")
        return new
    return mutate


def nth_dim(layer_name, port_id, dim_index, value):
    """Set one <dim> of a port of the named layer."""
    def mutate(text):
        start = text.index(f'name="{layer_name}"')
        port_at = text.index(f'<port id="{port_id}"', start)
        at = port_at
        for _ in range(dim_index + 1):
            at = text.index("<dim>", at + 1)
        end = text.index("</dim>", at)
        return text[:at] + f"<dim>{value}</dim>" + text[end + len("</dim>"):]
    return mutate


EXPECT = {
    "const_bin_missing": [
        "IR070 line=33 layer=3",
    ],
    "const_bin_too_short": [
        "IR071 line=54 layer=5 attribute=size",
    ],
    "const_offset_past_end": [
        "IR071 line=54 layer=5 attribute=offset",
    ],
    "const_size_wrong": [
        "IR072 line=44 layer=4 attribute=size",
    ],
    "gru_cell_b_768": [
        "IR044 line=45 layer=4 port=0",
        "IR041 line=69 layer=5 port=4",
    ],
    "gru_cell_direction_attribute": [
        "IR021 line=50 layer=5 attribute=direction",
    ],
    "gru_cell_without_b": [
        "IR067 line=41 layer=4",
        "IR032 line=49 layer=5 port=4",
    ],
    "gru_sequence_activation_unknown": [
        "IR023 line=63 layer=6 attribute=activations",
    ],
    "gru_sequence_activations_count": [
        "IR025 line=63 layer=6 attribute=activations",
    ],
    "gru_sequence_activations_omitted": [
        "IR026 line=63 layer=6 attribute=activations",
    ],
    "gru_sequence_activations_per_direction": [
        "IR028 line=63 layer=6 attribute=activations",
    ],
    "gru_sequence_activations_per_direction_differ": [
        "IR029 line=63 layer=6 attribute=activations",
    ],
    "gru_sequence_bad_dim_text": [
        "IR043 line=68 layer=6 port=0",
    ],
    "gru_sequence_batch_conflict": [
        "IR041 line=71 layer=6 port=1",
        "IR063 line=129 layer=6 port=1",
    ],
    "gru_sequence_clip_1e400": [
        "IR022 line=63 layer=6 attribute=clip",
    ],
    "gru_sequence_clip_arabic": [
        "IR022 line=63 layer=6 attribute=clip",
    ],
    "gru_sequence_clip_negative": [
        "IR024 line=63 layer=6 attribute=clip",
    ],
    "gru_sequence_cycle": [
        "IR067 line=5 layer=0",
        "IR065 line=65 layer=6 port=0",
        "IR063 line=128 layer=6 port=0",
    ],
    "gru_sequence_dead_layer": [
        "IR066 line=119 layer=8 port=0",
    ],
    "gru_sequence_direction_bad": [
        "IR023 line=63 layer=6 attribute=direction",
    ],
    "gru_sequence_duplicate_id": [
        "IR060 line=15 layer=0",
        "IR066 line=70 layer=6 port=1",
        "IR063 line=128 layer=6 port=0",
        "IR061 line=129 layer=6 port=1",
    ],
    "gru_sequence_edge_dims": [
        "IR044 line=11 layer=0 port=0",
        "IR063 line=128 layer=6 port=0",
    ],
    "gru_sequence_edge_from_input_port": [
        "IR067 line=5 layer=0",
        "IR066 line=65 layer=6 port=0",
        "IR062 line=128 layer=6 port=0",
    ],
    "gru_sequence_edge_missing_layer": [
        "IR067 line=53 layer=5",
        "IR066 line=88 layer=6 port=5",
        "IR061 line=133 layer=6 port=5",
    ],
    "gru_sequence_hidden_size_missing": [
        "IR020 line=63 layer=6 attribute=hidden_size",
    ],
    "gru_sequence_hidden_size_wrong": [
        "IR041 line=73 layer=6 port=1",
        "IR041 line=80 layer=6 port=3",
        "IR041 line=85 layer=6 port=4",
        "IR041 line=86 layer=6 port=4",
        "IR041 line=90 layer=6 port=5",
        "IR042 line=98 layer=6 port=6",
        "IR042 line=103 layer=6 port=7",
    ],
    "gru_sequence_lbr_yes": [
        "IR022 line=63 layer=6 attribute=linear_before_reset",
    ],
    "gru_sequence_lengths_float": [
        "IR050 line=75 layer=6 port=2",
        "IR064 line=130 layer=6 port=2",
    ],
    "gru_sequence_missing_port_b": [
        "IR067 line=53 layer=5",
        "IR030 line=62 layer=6 port=5",
    ],
    "gru_sequence_opset99": [
        "IR014 line=62 layer=6",
    ],
    "gru_sequence_output_dim": [
        "IR042 line=97 layer=6 port=6",
        "IR063 line=134 layer=7 port=0",
    ],
    "gru_sequence_port_dim_question": [
        "IR043 line=67 layer=6 port=0",
    ],
    "gru_sequence_precision_fp32": [
        "IR052 line=94 layer=6 port=6",
    ],
    "gru_sequence_rank": [
        "IR040 line=75 layer=6 port=2",
        "IR063 line=130 layer=6 port=2",
    ],
    "gru_sequence_two_edges_one_port": [
        "IR067 line=15 layer=1",
        "IR066 line=70 layer=6 port=1",
        "IR068 line=129 layer=6 port=0",
    ],
    "gru_sequence_type_typo": [
        "IR015 line=62 layer=6",
    ],
    "gru_sequence_unconnected": [
        "IR067 line=53 layer=5",
        "IR066 line=88 layer=6 port=5",
    ],
    "gru_sequence_unknown_attribute": [
        "IR021 line=63 layer=6 attribute=hiden_size",
    ],
    "gru_sequence_weights_f16": [
        "IR051 line=78 layer=6 port=3",
        "IR064 line=131 layer=6 port=3",
    ],
    "layer_outside_layers": [
        "IR016 line=4 layer=99",
    ],
    "lstm_sequence_opset1": [
        "IR012 line=72 layer=7",
    ],
    "lstm_sequence_opset4": [
        "IR012 line=72 layer=7",
    ],
    "net_version_7": [
        "IR005 line=3",
    ],
    "net_version_missing": [
        "IR005 line=3",
    ],
    "parameter_negative_dim": [
        "IR022 line=6 layer=0 attribute=shape",
    ],
    "parameter_opset99": [
        "IR014 line=5 layer=0",
    ],
    "parameter_second_output": [
        "IR030 line=13 layer=0 port=1",
    ],
    "result_with_output": [
        "IR030 line=125 layer=8 port=1",
    ],
    "truncated": [
        "IR001 line=34",
    ],
}

CASES = [
    # name, base, mutation, defect
    ("gru_cell_b_768", "gru_cell_lbr", lambda t: nth_dim("B", 0, 0, 768)(nth_dim("gru_cell", 4, 0, 768)(t)),
     "B of a GRUCell with linear_before_reset has 768 elements; 4*hidden_size = 16"),
    ("gru_sequence_hidden_size_missing", "gru_sequence_forward", sub(r' hidden_size="4"', ""),
     "the required hidden_size attribute is missing (OpenVINO would read 0)"),
    ("gru_sequence_hidden_size_wrong", "gru_sequence_forward", sub(r'hidden_size="4"', 'hidden_size="5"'),
     "hidden_size says 5, but every weight and state port is built for 4"),
    ("gru_sequence_direction_bad", "gru_sequence_forward", sub(r'direction="forward"', 'direction="forwards"'),
     "direction is not one of forward, reverse, bidirectional"),
    ("gru_sequence_lbr_yes", "gru_sequence_forward", sub(r'linear_before_reset="false"', 'linear_before_reset="yes"'),
     "linear_before_reset='yes' is not a bool (OpenVINO silently falls back to false)"),
    ("gru_sequence_unknown_attribute", "gru_sequence_forward", sub(r' clip="0"', ' clip="0" hiden_size="4"'),
     "an unknown attribute hiden_size (a typo, which OpenVINO ignores)"),
    ("gru_sequence_clip_negative", "gru_sequence_forward", sub(r'clip="0"', 'clip="-1"'),
     "clip is negative"),
    ("gru_sequence_activations_count", "gru_sequence_forward", sub(r'activations="sigmoid,tanh"', 'activations="sigmoid"'),
     "GRUSequence takes two activations, the file gives one"),
    ("gru_sequence_activation_unknown", "gru_sequence_forward", sub(r'activations="sigmoid,tanh"', 'activations="sigmoid,gelu"'),
     "gelu is not an activation OpenVINO's RNN ops accept"),
    ("gru_sequence_activations_omitted", "gru_sequence_forward", sub(r' activations="sigmoid,tanh"', ""),
     "activations omitted: valid by the spec, but OpenVINO does not apply the default and the CPU plugin fails"),
    ("gru_sequence_batch_conflict", "gru_sequence_forward", nth_dim("gru_sequence", 1, 0, 3),
     "initial_hidden_state says batch 3 where X says 2"),
    ("gru_sequence_rank", "gru_sequence_forward", sub(r'(<layer id="6" name="gru_sequence".*?<port id="2" precision="I32">\s*<dim>2</dim>)',
                                                      r'\1<dim>1</dim>'),
     "sequence_lengths has rank 2"),
    ("gru_sequence_output_dim", "gru_sequence_forward", nth_dim("gru_sequence", 6, 2, 6),
     "output Y declares seq_length 6 where X has 5"),
    ("gru_sequence_bad_dim_text", "gru_sequence_forward", nth_dim("gru_sequence", 0, 2, "three"),
     "a <dim> holds a word"),
    ("gru_sequence_lengths_float", "gru_sequence_forward",
     sub(r'(<layer id="6" name="gru_sequence".*?<port id="2" precision=")I32', r'\1FP32'),
     "sequence_lengths is floating point at the op (and I32 at its Parameter)"),
    ("gru_sequence_weights_f16", "gru_sequence_forward",
     sub(r'(<layer id="6" name="gru_sequence".*?<port id="3" precision=")FP32', r'\1FP16'),
     "W is FP16 while X is FP32; both are T1"),
    ("gru_sequence_duplicate_id", "gru_sequence_forward", sub(r'<layer id="1" name="H0"', '<layer id="0" name="H0"'),
     "two layers have id 0"),
    ("gru_sequence_edge_missing_layer", "gru_sequence_forward",
     sub(r'<edge from-layer="5" from-port="0" to-layer="6" to-port="5"/>', '<edge from-layer="42" from-port="0" to-layer="6" to-port="5"/>'),
     "an edge comes from layer 42, which does not exist"),
    ("gru_sequence_unconnected", "gru_sequence_forward",
     sub(r'\s*<edge from-layer="5" from-port="0" to-layer="6" to-port="5"/>', ""),
     "no edge feeds B"),
    ("gru_sequence_dead_layer", "gru_sequence_forward",
     sub(r'\s*<edge from-layer="6" from-port="7" to-layer="8" to-port="0"/>', ""),
     "Result Ho has no producer, and nothing reaches it"),
    ("gru_sequence_cycle", "gru_sequence_forward",
     sub(r'<edge from-layer="0" from-port="0" to-layer="6" to-port="0"/>', '<edge from-layer="6" from-port="6" to-layer="6" to-port="0"/>'),
     "the GRUSequence feeds its own X"),
    ("gru_sequence_edge_dims", "gru_sequence_forward", nth_dim("X", 0, 2, 7),
     "Parameter X declares input_size 7 at its port and shape attribute 3"),
    ("parameter_negative_dim", "gru_cell", sub(r'shape="2,3" element_type="f32"', 'shape="1,-16" element_type="f32"'),
     "a Parameter shape 1,-16 (OpenVINO accepts it)"),
    ("const_bin_too_short", "gru_sequence_const", sub(r'offset="336" size="48"', 'offset="360" size="48"'),
     "B's bytes reach past the end of the .bin"),
    ("const_size_wrong", "gru_sequence_const", sub(r'offset="144" size="192"', 'offset="144" size="190"'),
     "R's size is not 48 elements of 4 bytes"),
    ("lstm_sequence_opset1", "lstm_sequence_forward", sub(r'version="opset5"', 'version="opset1"'),
     "LSTMSequence version opset1: the spec page's op, which OpenVINO 2026 cannot load"),
    ("lstm_sequence_opset4", "lstm_sequence_forward", sub(r'type="LSTMSequence" version="opset5"', 'type="LSTMSequence" version="opset4"'),
     "LSTMSequence version opset4: opset4 has no LSTMSequence (OpenVINO refuses the file)"),
    ("gru_sequence_opset99", "gru_sequence_forward", sub(r'type="GRUSequence" version="opset5"', 'type="GRUSequence" version="opset99"'),
     "GRUSequence version opset99: no such opset (OpenVINO refuses the file)"),
    ("parameter_opset99", "gru_sequence_forward", sub(r'type="Parameter" version="opset1"', 'type="Parameter" version="opset99"'),
     "a Parameter with version opset99 (OpenVINO refuses the file)"),
    ("gru_sequence_type_typo", "gru_sequence_forward", sub(r'type="GRUSequence"', 'type="GRUSequenceX"'),
     "op type GRUSequenceX, which no opset has (OpenVINO refuses the file)"),
    ("net_version_missing", "gru_sequence_forward", sub(r'(<net name="gru_sequence_forward") version="11"', r'\1'),
     "the <net> has no version (OpenVINO refuses the file)"),
    ("net_version_7", "gru_sequence_forward", sub(r'(<net name="gru_sequence_forward") version="11"', r'\1 version="7"'),
     "IR version 7, which OpenVINO 2026 does not read"),
    ("gru_cell_direction_attribute", "gru_cell", sub(r'hidden_size="4"', 'hidden_size="4" direction="forward"'),
     "a direction attribute on a cell, which has none (OpenVINO ignores it)"),
    ("gru_sequence_port_dim_question", "gru_sequence_forward",
     sub(r'(<layer id="6" name="gru_sequence".*?<port id="0" precision="FP32">\s*<dim>2</dim>\s*)<dim>5</dim>', r'\1<dim>?</dim>'),
     "a port <dim>? (ports write -1; OpenVINO refuses ?)"),
    ("gru_sequence_precision_fp32", "gru_sequence_forward",
     sub(r'(<layer id="6" name="gru_sequence".*?<port id="6" precision=")FP32', r'\1fp32'),
     "output precision fp32, which OpenVINO does not read: FP32 or f32 (OpenVINO refuses the file)"),
    ("gru_sequence_clip_arabic", "gru_sequence_forward", sub(r'clip="0"', 'clip="\u0661"'),
     "clip in an Arabic-Indic digit (OpenVINO refuses it)"),
    ("gru_sequence_clip_1e400", "gru_sequence_forward", sub(r'clip="0"', 'clip="1e400"'),
     "clip 1e400, past any float (OpenVINO refuses it)"),
    ("gru_sequence_missing_port_b", "gru_sequence_forward",
     lambda t: sub(r'\s*<edge from-layer="5" from-port="0" to-layer="6" to-port="5"/>', "")(
         sub(r'(<layer id="6" name="gru_sequence".*?)\s*<port id="5" precision="FP32">\s*<dim>1</dim>\s*<dim>12</dim>\s*</port>', r'\1')(t)),
     "the GRUSequence has no port 5 (B), and B's Parameter feeds nothing"),
    ("parameter_second_output", "gru_sequence_forward",
     sub(r'(<layer id="0" name="X".*?</port>)', r'\1\n\t\t\t\t<port id="1" precision="FP32"><dim>2</dim></port>'),
     "the Parameter X has a second output port (OpenVINO refuses the file)"),
    ("result_with_output", "gru_sequence_forward",
     sub(r'(<layer id="8" name="Ho" type="Result" version="opset1">.*?</input>)', r'\1\n\t\t\t<output><port id="1" precision="FP32"><dim>2</dim></port></output>'),
     "the Result Ho has an output port"),
    ("gru_sequence_edge_from_input_port", "gru_sequence_forward",
     sub(r'<edge from-layer="0" from-port="0" to-layer="6" to-port="0"/>', '<edge from-layer="7" from-port="0" to-layer="6" to-port="0"/>'),
     "an edge comes from input port 0 of the Result Y (OpenVINO refuses the file)"),
    ("gru_sequence_two_edges_one_port", "gru_sequence_forward",
     sub(r'<edge from-layer="1" from-port="0" to-layer="6" to-port="1"/>', '<edge from-layer="0" from-port="0" to-layer="6" to-port="0"/>'),
     "two edges feed port 0 of the GRUSequence, none port 1 (OpenVINO refuses the file)"),
    ("const_offset_past_end", "gru_sequence_const", sub(r'offset="336" size="48"', 'offset="4000" size="48"'),
     "B's offset lies past the end of the .bin (OpenVINO refuses the file)"),
    ("gru_sequence_activations_per_direction_differ", "gru_sequence_bidirectional",
     sub(r'activations="sigmoid,tanh"', 'activations="sigmoid,tanh,tanh,sigmoid"'),
     "activations once per direction, the halves differ: OpenVINO applies sigmoid,tanh to both directions"),
    ("gru_sequence_activations_per_direction", "gru_sequence_bidirectional",
     sub(r'activations="sigmoid,tanh"', 'activations="sigmoid, tanh, sigmoid, tanh"'),
     "activations once per direction, as OpenVINO's ONNX frontend writes them; the halves are equal"),
    ("layer_outside_layers", "gru_sequence_forward",
     sub(r'<layers>', '<layer id="99" name="stray" type="Parameter" version="opset1"/>\n\t<layers>'),
     "a <layer> outside <layers> (OpenVINO ignores it)"),
    ("gru_cell_without_b", "gru_cell",
     lambda t: sub(r'\s*<edge from-layer="4" from-port="0" to-layer="5" to-port="4"/>', "")(
         sub(r'(<layer id="5" name="gru_cell".*?)\s*<port id="4" precision="FP32">\s*<dim>12</dim>\s*</port>', r'\1')(t)),
     "GRUCell without B: optional by the spec, rejected by OpenVINO (the Parameter B is left dead)"),
]


def folder(name: str) -> Path:
    """broken/ for files with an error; warnings/ for files valid by the spec that OpenVINO trips on;
    notes/ for files with notes only."""
    severities = {CODES[e.split()[0]].severity for e in EXPECT[name]}
    return BROKEN if ERROR in severities else WARNINGS if WARNING in severities else NOTES


def write(name: str, text: str, defect: str, bin_from: Path | None = None) -> None:
    header = f"<!-- defect: {defect}. expect: {'; '.join(EXPECT[name])} -->"
    target = folder(name) / f"{name}.xml"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(re.sub(r"<!-- .*? -->", header, text, count=1) if "<!--" in text[:200] else text)
    if bin_from is not None and bin_from.exists():
        shutil.copy(bin_from, target.with_suffix(".bin"))


def main() -> None:
    for name, base, mutate, defect in CASES:
        write(name, mutate((VALID / f"{base}.xml").read_text()), defect, VALID / f"{base}.bin")
    write("const_bin_missing", (VALID / "gru_sequence_const.xml").read_text(), "the .bin beside this file is missing")
    write("truncated", (VALID / "gru_cell.xml").read_text()[:900], "the file ends in the middle of a tag")
    print(f"wrote {len(CASES) + 2} files", file=sys.stderr)


if __name__ == "__main__":
    main()
