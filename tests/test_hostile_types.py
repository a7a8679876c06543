"""Every element type and shape OpenVINO can express, handled or refused in one line, and by
validate as by run: element type dynamic on a Const or Parameter, sequence_lengths of i4, u4 and
u1, a Parameter shape with a negative dim, a Const size OpenVINO refuses.  Real OpenVINO on CPU."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from irtool.cli.program import main

SOURCE = "gru_sequence_const"  # X, H0, seq_lengths Parameters; W, R, B Consts; batch 2, 5 steps
LENGTHS_PORT = '''<port id="0" precision="I32">
					<dim>2</dim>
				</port>
			</output>'''


def _variant(samples_dir: Path, folder: Path, name: str, edits: list[tuple[str, str]], extra: bytes = b"") -> Path:
    source = samples_dir / "valid" / f"{SOURCE}.xml"
    text = source.read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    xml = folder / f"{name}.xml"
    xml.write_text(text)
    xml.with_suffix(".bin").write_bytes(source.with_suffix(".bin").read_bytes() + extra)
    return xml


def _lengths_of(kind: str, precision: str, const: bool) -> list[tuple[str, str]]:
    """sequence_lengths as a Parameter (or a Const of one byte after the weights) of element type ``kind``."""
    layer = (f'<layer id="2" name="seq_lengths" type="Const" version="opset1">\n\t\t\t<data shape="2" '
             f'element_type="{kind}" offset="384" size="1"/>' if const else
             f'<layer id="2" name="seq_lengths" type="Parameter" version="opset1">\n\t\t\t<data shape="2" '
             f'element_type="{kind}"/>')
    return [('<layer id="2" name="seq_lengths" type="Parameter" version="opset1">\n\t\t\t<data shape="2" '
             'element_type="i32"/>', layer),
            (LENGTHS_PORT, LENGTHS_PORT.replace("I32", precision)),
            ('<port id="2" precision="I32">', f'<port id="2" precision="{precision}">')]


# (name, edits of the sample, the code validate reports, what run's one line says)
REFUSED = [
    ("dynamic-const", [('element_type="f32" shape="1,12,3"', 'element_type="dynamic" shape="1,12,3"')], "IR023",
     "layer 'W' (Const) has element type dynamic"),
    ("undefined-const", [('element_type="f32" shape="1,12,3"', 'element_type="undefined" shape="1,12,3"')], "IR023",
     "layer 'W' (Const) has element type dynamic"),
    ("dynamic-parameter", [('shape="2,5,3" element_type="f32"', 'shape="2,5,3" element_type="dynamic"')], "IR023",
     "layer 'X' (Parameter) has element type dynamic"),
    ("negative-dim", [('shape="2,5,3" element_type="f32"', 'shape="2,-5,3" element_type="f32"')], "IR022",
     "dim -5 is negative"),
    ("size-spaces", [('offset="0" size="144"', 'offset="0" size=" 144 "')], "IR022",
     "' 144 ' ends in a space, which OpenVINO's reader refuses here"),
    ("offset-space", [('offset="144" size="192"', 'offset="144 " size="192"')], "IR022",
     "'144 ' ends in a space"),
]


@pytest.mark.parametrize("name, edits, code, says", REFUSED, ids=[r[0] for r in REFUSED])
def test_what_openvino_cannot_run_is_refused_by_validate_and_run_alike(samples_dir, tmp_path, capsys, name, edits,
                                                                       code, says):
    xml = _variant(samples_dir, tmp_path, name, edits)
    assert main(["validate", str(xml)]) == 1
    out = capsys.readouterr().out
    assert f"error[{code}]" in out, out
    assert main(["run", str(xml), "-d", "CPU"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("irtool: error: "), err
    assert says in err and "internal error" not in err and "bug" not in err, err


def test_a_leading_space_in_a_size_is_read_by_openvino_and_by_validate(samples_dir, tmp_path, capsys):
    xml = _variant(samples_dir, tmp_path, "lead", [('offset="0" size="144"', 'offset="0" size=" 144"')])
    assert main(["validate", str(xml)]) == 0
    assert main(["run", str(xml), "-d", "CPU"]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("kind, precision", [("i4", "I4"), ("u4", "U4")])
@pytest.mark.parametrize("const", [False, True], ids=["parameter", "const"])
def test_sequence_lengths_of_four_bits_are_fed_and_judged(samples_dir, tmp_path, capsys, kind, precision, const):
    """OpenVINO packs i4 and u4 two to a byte; the CPU compiles them.  Const lengths [5, 3] (0x35)."""
    xml = _variant(samples_dir, tmp_path, kind, _lengths_of(kind, precision, const), bytes([0x35]))
    assert main(["validate", str(xml)]) == 0
    assert main(["run", str(xml), "-d", "CPU"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "PASS: 2 of 2 outputs within tolerance"
    assert ("seq_lengths int8[2]" if kind == "i4" else "seq_lengths uint8[2]") in out or const


@pytest.mark.parametrize("const", [False, True], ids=["parameter", "const"])
def test_sequence_lengths_of_one_bit_are_one_line(samples_dir, tmp_path, capsys, const):
    xml = _variant(samples_dir, tmp_path, "u1", _lengths_of("u1", "U1", const), bytes([0xC0]))
    assert main(["run", str(xml), "-d", "CPU"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("irtool: error: CPU cannot compile u1.xml: "), err


def test_lengths_that_a_packed_input_cannot_hold_are_one_line(samples_dir, tmp_path, capsys):
    xml = _variant(samples_dir, tmp_path, "i4", _lengths_of("i4", "I4", False))
    inputs = tmp_path / "in.npz"
    rng = np.random.default_rng(0)
    np.savez(inputs, X=rng.uniform(-1, 1, (2, 5, 3)).astype(np.float32),
             H0=rng.uniform(-1, 1, (2, 1, 4)).astype(np.float32), seq_lengths=np.array([5, 9], np.int8))
    assert main(["run", str(xml), "-d", "CPU", "--inputs", str(inputs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "input seq_lengths: values beyond i4's range [-8, 7]" in err, err


def test_an_input_of_a_type_no_array_holds_is_one_line(samples_dir, tmp_path, capsys):
    xml = _variant(samples_dir, tmp_path, "f8", [('shape="2,1,4" element_type="f32"', 'shape="2,1,4" element_type="f8e4m3"')])
    code = main(["run", str(xml), "-d", "CPU"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "internal error" not in err, err


@pytest.mark.parametrize("kind", ["i4", "u4", "u1"])
def test_packed_values_round_trip(kind):
    from irtool.core.element_types import pack, packed_range, unpack

    low, high = packed_range(kind)
    values = np.arange(low, high + 1).repeat(3)[:-1]  # an odd count: the last byte half (or partly) used
    packed = pack(values, kind)
    assert packed.dtype == np.uint8 and packed.size == -(-values.size * {"u1": 1}.get(kind, 4) // 8)
    assert unpack(packed, kind, values.shape).tolist() == values.tolist()
    with pytest.raises(ValueError, match=f"{kind} holds {low}..{high}, not {high + 1}"):
        pack(np.array([high + 1]), kind)


def test_packed_layout_is_openvinos():
    """What OpenVINO's own reader gives for the bytes (measured: 0x35 as u4 is [5, 3], 0xC0 as u1 [1, 1])."""
    from irtool.core.element_types import pack, unpack

    assert pack(np.array([5, 3]), "u4").tolist() == [0x35] and pack(np.array([1, 1]), "u1").tolist() == [0xC0]
    assert unpack(np.array([0xF8], np.uint8), "i4", (2,)).tolist() == [-8, -1]
