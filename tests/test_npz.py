"""irtool.core.npz: .npz inputs read with bounds and one clear line for each way a file can be wrong;
written for any array names."""
from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from irtool.core.files import FileError
from irtool.core.npz import MAX_HEADER, NpzError, describe_dtype, read_npz, write_npz


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _npy_header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def test_round_trip_with_names_np_savez_cannot_take(tmp_path):
    """np.savez takes names as keyword arguments: "file" clashes with its first parameter and
    "allow_pickle" is swallowed as an option."""
    arrays = {"file": np.arange(3, dtype=np.float32), "allow_pickle": np.ones((2, 2), np.int32),
              "a/b": np.zeros(0, np.float16)}
    write_npz(tmp_path / "out.npz", arrays)
    with np.load(tmp_path / "out.npz", allow_pickle=False) as stored:
        assert stored.files == list(arrays)
        for name, array in arrays.items():
            np.testing.assert_array_equal(stored[name], array)
    again = read_npz(tmp_path / "out.npz")
    assert list(again) == list(arrays) and all(again[k].dtype == v.dtype for k, v in arrays.items())
    again["file"][0] = 7  # writable, not a view of a read-only buffer


def test_fortran_order_and_big_endian_are_kept(tmp_path):
    array = np.asfortranarray(np.arange(6, dtype=">f4").reshape(2, 3))
    np.savez(tmp_path / "f.npz", x=array)
    read = read_npz(tmp_path / "f.npz")["x"]
    np.testing.assert_array_equal(read, array)
    assert read.dtype.str == ">f4"
    assert describe_dtype(read.dtype) == ">f4 (big-endian float32)"
    assert describe_dtype(np.dtype("float32")) == "float32"


def _bare_npy(path: Path) -> Path:
    with open(path, "wb") as handle:
        np.save(handle, np.ones(3))
    return path


def _written(data: bytes):
    def make(path: Path) -> Path:
        path.write_bytes(data)
        return path
    return make


def _truncated(path: Path) -> Path:
    np.savez(path, x=np.ones(1000, np.float32))
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    return path


def _member_truncated(path: Path) -> Path:
    return _zip(path, {"x.npy": _npy_header((1 << 30, 4)) + b"\0" * 16})


def _huge_header(path: Path) -> Path:
    header = b"\x93NUMPY\x01\x00" + (60000).to_bytes(2, "little") + b"{" + b" " * 59999
    return _zip(path, {"x.npy": header})


def _pickled(path: Path) -> Path:
    np.savez(path, x=np.array([{"a": 1}], dtype=object))
    return path


@pytest.mark.parametrize("make, says", [
    (_written(b""), "an empty file; expected an .npz of arrays"),
    (_bare_npy, r"a single .npy array, not an .npz; save the arrays by name with numpy.savez"),
    (_written(b"hello"), r"not an .npz \(not a zip of .npy arrays\)"),
    (_truncated, r"not a readable .npz \(truncated or corrupt zip"),
    (_member_truncated, r"array 'x' is truncated: its header says shape \[1073741824, 4\] float32 \(16.0 GiB\), "
                        r"the member holds 16 bytes"),
    (_huge_header, f"array 'x' has an .npy header over {MAX_HEADER} bytes; refused"),
    (_pickled, r"array 'x' holds Python objects \(object\); irtool reads only numeric arrays and never unpickles"),
    (lambda p: _zip(p, {"x.txt": b"hi"}), "member 'x.txt' is not an .npy array"),
    (lambda p: _zip(p, {"x.npy": b"not numpy"}), r"member x.npy is not an .npy array \(no NUMPY header\)"),
], ids=["empty", "bare-npy", "not-zip", "truncated-zip", "truncated-member", "huge-header", "pickled", "not-npy",
        "no-magic"])
def test_each_bad_file_is_one_line(tmp_path, make, says):
    path = make(tmp_path / "in.npz")
    with pytest.raises(NpzError, match=says) as caught:
        read_npz(path)
    assert caught.value.message.startswith(str(path)) and "\n" not in caught.value.message
    assert "allow_pickle" not in caught.value.message  # numpy's advice to load it unsafely is not repeated


def test_declared_sizes_over_the_limit_are_refused_before_reading(tmp_path):
    """A member that inflates past the limit is refused from the zip directory, unread."""
    np.savez_compressed(tmp_path / "bomb.npz", x=np.zeros(1 << 20, np.float32))  # 4 MiB of zeros, a few KiB stored
    assert os.path.getsize(tmp_path / "bomb.npz") < 64 << 10
    with pytest.raises(NpzError, match=r"its arrays unpack to 4.0 MiB, more than the 1.0 MiB of memory irtool may use"):
        read_npz(tmp_path / "bomb.npz", limit=1 << 20)
    assert read_npz(tmp_path / "bomb.npz", limit=8 << 20)["x"].shape == (1 << 20,)


def test_the_memory_limit_applies_by_default(tmp_path, monkeypatch):
    np.savez(tmp_path / "in.npz", x=np.zeros(1000, np.float32))
    monkeypatch.setenv("IRTOOL_MEMORY_LIMIT", "1K")
    with pytest.raises(NpzError, match="unpack to 4.0 KiB, more than the 1.0 KiB"):
        read_npz(tmp_path / "in.npz")


def test_a_fifo_or_device_is_refused(tmp_path):
    os.mkfifo(tmp_path / "in.npz")
    with pytest.raises(FileError, match=r"the inputs file is a named pipe \(FIFO\)"):
        read_npz(tmp_path / "in.npz")
    with pytest.raises(FileError, match="the inputs file is a character device"):
        read_npz("/dev/zero")


def test_writing_refuses_a_directory_and_keeps_the_old_file_on_error(tmp_path):
    with pytest.raises(FileError, match="a directory"):
        write_npz(tmp_path, {"x": np.ones(2)})
    (tmp_path / "out.npz").write_bytes(b"old")
    with pytest.raises(ValueError):
        write_npz(tmp_path / "out.npz", {"x": np.array([object()])})  # object arrays are never pickled
    assert (tmp_path / "out.npz").read_bytes() == b"old"


def _deflated_zeros(path: Path, size: int, shape: tuple[int, ...] | None = None) -> Path:
    """An .npz whose one member is an .npy header and ``size`` zero bytes, deflated as it is written
    (1 MiB at a time: the test never holds the whole)."""
    header = _npy_header(shape if shape is not None else (size // 4,))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, \
            archive.open("x.npy", "w", force_zip64=True) as member:
        member.write(header)
        chunk = bytes(1 << 20)
        for _ in range(size >> 20):
            member.write(chunk)
    return path


def test_a_deflate_bomb_is_refused_before_it_is_inflated(tmp_path):
    """256 MiB of zeros stored in 256 KiB: refused from its declared sizes, whatever memory allows,
    and nothing the size of what it unpacks to is ever allocated."""
    import tracemalloc

    bomb = _deflated_zeros(tmp_path / "bomb.npz", 256 << 20)
    assert os.path.getsize(bomb) < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(NpzError, match=r"member 'x.npy' unpacks 2\d\d.\d KiB to 256.0 MiB, more than 200 times "
                                           r"over .*; save the arrays uncompressed \(numpy.savez\)"):
            read_npz(bomb, limit=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


def test_compressed_inputs_within_the_floor_are_read(tmp_path):
    """numpy.savez_compressed of zeros (about 1,000 times smaller) is read while it is under 64 MiB."""
    np.savez_compressed(tmp_path / "in.npz", x=np.zeros((4, 1 << 20), np.float32))  # 16 MiB
    assert read_npz(tmp_path / "in.npz", limit=None)["x"].shape == (4, 1 << 20)


def test_a_member_whose_declared_size_lies_is_not_inflated_past_it(tmp_path):
    """The zip directory says 2 KiB; the deflated data holds 4 MiB and the .npy header claims 4 MiB:
    refused as truncated (zipfile stops at the declared size and finds its CRC wrong), having
    inflated no more than about the 2 KiB declared."""
    import tracemalloc

    path = tmp_path / "liar.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("x.npy", _npy_header((1 << 20,)) + bytes(4 << 20))
    data = bytearray(path.read_bytes())
    central = data.index(b"PK\x01\x02")
    data[central + 24:central + 28] = (2048).to_bytes(4, "little")  # the declared uncompressed size
    path.write_bytes(bytes(data))
    tracemalloc.start()
    try:
        with pytest.raises(NpzError, match=r"array 'x' is truncated"):
            read_npz(path, limit=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
