"""A string Const's packed bytes in the .bin (count, offsets, string data), each form tried on
OpenVINO's ``read_model`` beside irtool validate (a grid: one file per form)."""
from __future__ import annotations

import struct

import pytest
from conftest_validate import openvino_reads

from irtool.validate import validate_file

NET = """<?xml version="1.0"?>
<net name="s" version="11"><layers>
<layer id="0" name="S" type="Const" version="opset1"><data element_type="string" shape="{n}" offset="0" size="{size}"/>
<output><port id="0" precision="STRING"><dim>{n}</dim></port></output></layer>
<layer id="1" name="R" type="Result" version="opset1"><input><port id="0" precision="STRING"><dim>{n}</dim></port></input></layer>
</layers><edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/></edges></net>
"""

# name: (header int32s, string bytes, shape's element count, size attribute or None for all, OpenVINO reads)
FORMS = {
    "two strings": ([2, 0, 2, 5], b"abcde", 2, None, True),
    "first begins later": ([2, 1, 2, 5], b"abcde", 2, None, True),
    "bytes after the data": ([2, 0, 2, 5], b"abcdefgh", 2, None, True),
    "none": ([0, 0], b"", 0, None, True),
    "negative count": ([-1, 0, 0, 0], b"", 2, None, False),
    "no count": ([2, 0, 2, 5], b"abcde", 2, 3, False),
    "header past the bytes": ([10, 0, 2, 5], b"abcde", 2, None, False),
    "no end offset": ([0], b"", 0, None, False),
    "negative end": ([2, 0, -3, 5], b"abcde", 2, None, False),
    "negative begin": ([2, -1, 2, 5], b"abcde", 2, None, False),
    "decreasing": ([2, 0, 5, 3], b"abcde", 2, None, False),
    "past the data": ([2, 0, 10, 20], b"abcde", 2, None, False),
    "fewer than the shape": ([1, 0, 5], b"abcde", 2, None, True),
    "more than the shape": ([3, 0, 1, 2, 5], b"abcde", 2, None, True),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_packed_string_forms(tmp_path, form):
    header, data, count, size, reads = FORMS[form]
    packed = struct.pack(f"<{len(header)}i", *header) + data
    path = tmp_path / "s.xml"
    path.write_text(NET.format(n=count, size=len(packed) if size is None else size))
    (tmp_path / "s.bin").write_bytes(packed)
    assert openvino_reads(path) is reads
    found = [d for d in validate_file(path).diagnostics if d.code == "IR073"]
    silent_change = form in ("more than the shape", "fewer than the shape")
    assert bool(found) is (not reads or silent_change), found
    for d in found:
        assert d.severity == "error" and d.line == 3 and d.column is not None and d.layer_id == "0"
        assert ("OpenVINO refuses" in d.message) is (not reads)


def test_a_long_header_is_read_in_chunks(tmp_path):
    """Two million strings (8 MB of offsets), the last one decreasing: found, quickly."""
    count = 2_000_000
    offsets = list(range(count + 1))
    offsets[-1] = 0
    packed = struct.pack("<i", count) + struct.pack(f"<{count + 1}i", *offsets) + b"x" * count
    path = tmp_path / "s.xml"
    path.write_text(NET.format(n=count, size=len(packed)))
    (tmp_path / "s.bin").write_bytes(packed)
    [d] = [d for d in validate_file(path).diagnostics if d.code == "IR073"]
    assert f"end string {count - 1} at offset 0" in d.message
