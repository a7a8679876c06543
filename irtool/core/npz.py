""".npz files (numpy's zip of .npy arrays), read with bounds and written for any array names.

:func:`read_npz` never unpickles and never allocates before it has checked: the file is a
regular file (:mod:`irtool.core.files`), the zip's declared member sizes fit the memory limit
(:mod:`irtool.core.memory`), no compressed member inflates past 64 MiB at a ratio over 200
(a deflate bomb), and each member's .npy header (at most 10,000 bytes) gives a shape and
dtype whose size (shape x itemsize) fits too and matches the data the member declares.
The declared sizes may lie: a member is inflated into a buffer of the size its header
gives, at most its declared size (zipfile stops there), so no more is ever inflated.  Each refusal is one line: an empty file, a bare .npy, a file that is not a zip,
a truncated or corrupt member, an object (pickled) array, a huge header.

:func:`write_npz` takes the arrays as a dict, so any name works (``np.savez`` takes them
as keyword arguments: an array named ``file`` or ``allow_pickle`` breaks it), and writes
the file whole or not at all.  A name is data, never a path: one of letters, digits and
``_ . + = : -``, in parts split by ``/`` that do not start with a dot (``lstm/Y:0``; at most
200 characters, not taken by an earlier name in any letter case) is the member ``NAME.npy`` as numpy writes it
(``np.load`` gives it back under its name); any other (``../../x``, ``/etc/passwd``,
names that differ only after a NUL or in case) gets a safe member name of its own
(``etc_passwd-1a2b3c4d.npy``) and the name itself in the member's zip comment, which
:func:`read_npz` gives back as the key (numpy ignores it and reads the array under the
member name).
"""
from __future__ import annotations

import hashlib
import math
import re
import zipfile
import zlib
from pathlib import Path
from typing import BinaryIO, Iterable, Mapping

import numpy as np

from irtool.core.files import FileError, atomic_writer, open_regular, size_text
from irtool.core.memory import memory_limit

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK"
MAX_HEADER = 10_000  # numpy's own default bound for an .npy header
RECORD_PREFIX = "irtool:"  # keys of irtool's own record of a run beside its outputs (irtool.pipeline.recording)
NAME_MARK = b"irtool-name:"  # a member's zip comment: the array's name, where the member name cannot be it
_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9_.+=:-]*"
_PLAIN_NAME = re.compile(rf"(?=.{{1,200}}$){_SEGMENT}(?:/{_SEGMENT})*")

# A compressed member may unpack to INFLATE_FLOOR whatever its ratio; past it, to at most MAX_RATIO
# times what it stores (numpy.savez_compressed of measured or random data stores 1-3 times
# less; deflate's most is about 1,000 times, a file of zeros).
INFLATE_FLOOR = 64 << 20
MAX_RATIO = 200
_CORRUPT = (zipfile.BadZipFile, EOFError, zlib.error, OSError, ValueError, NotImplementedError)


class NpzError(FileError):
    """An .npz that cannot be read as arrays."""


def describe_dtype(dtype: np.dtype) -> str:
    """A dtype as messages give it: ``float32``; ``>f4 (big-endian float32)`` when its byte
    order is not this machine's (the name alone would read the same as the native one)."""
    dtype = np.dtype(dtype)
    if dtype.byteorder in ("=", "|") or dtype.isnative:
        return dtype.name
    order = "big" if dtype.byteorder == ">" else "little"
    return f"{dtype.str} ({order}-endian {dtype.newbyteorder('=').name})"


def read_npz(path: str | Path, what: str = "inputs file", limit: int | None = None) -> dict[str, np.ndarray]:
    """The arrays of an .npz by key (the member name without .npy), in stored order.

    ``limit`` bounds the bytes of all arrays together (default: :func:`memory_limit`).
    """
    path = Path(path)
    limit = memory_limit() if limit is None else limit
    with open_regular(path, what) as handle:
        head = handle.read(len(NPY_MAGIC))
        handle.seek(0)
        if not head:
            raise NpzError(f"{path}: an empty file; expected an .npz of arrays (numpy.savez) as the {what}")
        if head == NPY_MAGIC:
            raise NpzError(f"{path}: a single .npy array, not an .npz; save the arrays by name with "
                           f"numpy.savez(path, NAME=array, ...)")
        if not head.startswith(ZIP_MAGIC):
            raise NpzError(f"{path}: not an .npz (not a zip of .npy arrays); expected the {what} as numpy.savez writes it")
        try:
            archive = zipfile.ZipFile(handle)
        except _CORRUPT as error:
            raise NpzError(f"{path}: not a readable .npz (truncated or corrupt zip: {error})") from None
        with archive:
            return _arrays(path, archive, limit)


def _arrays(path: Path, archive: zipfile.ZipFile, limit: int | None) -> dict[str, np.ndarray]:
    members = archive.infolist()
    declared = sum(info.file_size for info in members)
    if limit is not None and declared > limit:
        raise NpzError(f"{path}: its arrays unpack to {size_text(declared)}, more than the {size_text(limit)} "
                       f"of memory irtool may use (IRTOOL_MEMORY_LIMIT)")
    for info in members:
        _check_ratio(path, info)
    arrays: dict[str, np.ndarray] = {}
    for info in members:
        if info.is_dir():
            continue
        if not info.filename.endswith(".npy"):
            raise NpzError(f"{path}: member {info.filename!r} is not an .npy array; an .npz holds NAME.npy members")
        key = _key(info)
        if key in arrays:
            raise NpzError(f"{path}: two arrays are named {key!r}")
        try:
            with archive.open(info) as member:
                arrays[key] = _array(path, key, member, info.file_size)
        except NpzError:
            raise
        except _CORRUPT as error:
            raise NpzError(f"{path}: array {key!r} is truncated or corrupt ({error})") from None
    return arrays


def _key(info: zipfile.ZipInfo) -> str:
    """The array's name: the one irtool recorded in the member's comment, else the member name without .npy."""
    if info.comment.startswith(NAME_MARK):
        return info.comment[len(NAME_MARK):].decode("utf-8", "surrogatepass")
    return info.filename[:-len(".npy")]


def member_names(names: Iterable[str]) -> dict[str, str]:
    """Array name -> the zip member it is stored as (module docstring): distinct and safe for any
    names.  A plain name keeps its member unless an earlier name took it (in any letter case)."""
    members: dict[str, str] = {}
    taken: set[str] = set()
    for name in dict.fromkeys(names):
        member = f"{name}.npy"
        if not _PLAIN_NAME.fullmatch(name) or member.casefold() in taken:
            slug = re.sub(r"[^A-Za-z0-9_.+=-]+", "_", name).strip("_.")[:60] or "array"
            digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
            member, count = f"{slug}-{digest[:8]}.npy", 1
            while member.casefold() in taken:
                count += 1
                member = f"{slug}-{digest[:8]}-{count}.npy"
        taken.add(member.casefold())
        members[name] = member
    return members


def _check_ratio(path: Path, info: zipfile.ZipInfo) -> None:
    """NpzError for a compressed member that would inflate past INFLATE_FLOOR at more than
    MAX_RATIO times the bytes it stores: a deflate bomb (2 MB that unpack to gigabytes)."""
    if info.compress_type == zipfile.ZIP_STORED or info.file_size <= INFLATE_FLOOR:
        return
    if info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise NpzError(f"{path}: member {info.filename!r} unpacks {size_text(info.compress_size)} to "
                       f"{size_text(info.file_size)}, more than {MAX_RATIO} times over (irtool inflates a member past "
                       f"{size_text(INFLATE_FLOOR)} only up to that); save the arrays uncompressed (numpy.savez)")


def _array(path: Path, key: str, member: BinaryIO, member_size: int) -> np.ndarray:
    try:
        version = np.lib.format.read_magic(member)
    except ValueError:
        raise NpzError(f"{path}: member {key}.npy is not an .npy array (no NUMPY header)") from None
    read_header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(version)
    if read_header is None:
        raise NpzError(f"{path}: array {key!r} has .npy format version {version[0]}.{version[1]}; "
                       f"irtool reads 1.0 and 2.0 (as numpy.savez writes)")
    try:
        shape, fortran, dtype = read_header(member, max_header_size=MAX_HEADER)
    except ValueError as error:
        text = str(error)
        if "max_header_size" in text or "too large" in text.lower():
            raise NpzError(f"{path}: array {key!r} has an .npy header over {MAX_HEADER} bytes; refused") from None
        raise NpzError(f"{path}: array {key!r} has a broken .npy header ({text.splitlines()[0]})") from None
    if dtype.hasobject:
        raise NpzError(f"{path}: array {key!r} holds Python objects ({dtype}); irtool reads only numeric arrays "
                       f"and never unpickles")
    size = math.prod(shape) * dtype.itemsize  # Python ints: no overflow for any header
    data_size = member_size - member.tell()
    if size > data_size:
        raise NpzError(f"{path}: array {key!r} is truncated: its header says shape {list(shape)} "
                       f"{describe_dtype(dtype)} ({size_text(size)}), the member holds {size_text(max(data_size, 0))}")
    buffer = bytearray(size)
    view = memoryview(buffer)
    done = 0
    while done < size:
        count = member.readinto(view[done:])
        if not count:
            raise NpzError(f"{path}: array {key!r} is truncated ({done} of {size} bytes)")
        done += count
    array = np.frombuffer(buffer, dtype=dtype)
    return array.reshape(shape, order="F" if fortran else "C")


def write_npz(path: str | Path, arrays: Mapping[str, np.ndarray], what: str = "outputs file") -> Path:
    """Write ``arrays`` (name -> array) as an .npz that ``numpy.load`` reads back, whole or not
    at all, over a regular file only (see :mod:`irtool.core.files`); any name works."""
    members = member_names(arrays)
    comments = {name: NAME_MARK + name.encode("utf-8", "surrogatepass") for name, member in members.items()
                if member != f"{name}.npy"}
    for name, comment in comments.items():
        if len(comment) > 0xFFFF:
            raise NpzError(f"{path}: an array name of {len(comment)} bytes; irtool writes names of up to 65,000 bytes")
    with atomic_writer(path, what) as handle, zipfile.ZipFile(handle, "w") as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(members[name], date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.comment = comments.get(name, b"")
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)
    return Path(path)
