"""A string Const's packed bytes, read as OpenVINO reads them (measured with openvino 2026.4.1;
its StringAlignedBuffer unpacking): a 32-bit little-endian count N, then N+1 32-bit offsets into
the string data that follows them (the first string's begin, then each string's end), all within
the Const's ``size`` bytes.  OpenVINO refuses a Const whose count is missing or negative, whose
header runs past its bytes, whose offsets decrease or run past them.  With fewer strings than the
shape holds it reads the file and leaves the rest undefined (compile_model then failed with
std::bad_alloc); with more, it reads the first ones and drops the rest.

The .bin is read in bounded chunks, only within the Const's bytes: the work is linear in its size.
"""
from __future__ import annotations

import os
from pathlib import Path

from irtool.ir import Layer
from irtool.validate.context import Context

_CHUNK = 1 << 20  # offsets read at a time (4 MiB)


def check_strings(ctx: Context, layer: Layer, bin_path: Path, offset: int, size: int, elements: int | None) -> None:
    """Report (IR073) where OpenVINO cannot read the packed strings at ``offset``, ``size`` of ``bin_path``."""
    try:
        problem = _problem(bin_path, offset, size, elements)
    except OSError as error:
        problem = f"cannot be read from {bin_path.name}: {error.strerror or error}"
    if problem is not None:
        ctx.report("IR073", f"the packed strings (bytes {offset}..{offset + size} of {bin_path.name}) {problem}",
                   layer=layer, attribute="offset")


def _problem(path: Path, offset: int, size: int, elements: int | None) -> str | None:
    import numpy as np

    if size < 4:
        return f"lack the 4-byte string count: size is {size}; OpenVINO refuses the file"
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with open(fd, "rb") as handle:
        handle.seek(offset)
        count = int.from_bytes(handle.read(4), "little", signed=True)
        if count < 0:
            return f"hold a string count of {count}; OpenVINO refuses the file (a negative number of strings)"
        header = 4 * (count + 2)
        if header > size:
            return (f"hold a string count of {count}, whose {count + 1} offsets need {header} bytes with the "
                    f"count, more than the Const's {size}; OpenVINO refuses the file")
        data_size, previous, index = size - header, None, 0
        while index <= count:
            want = min(_CHUNK, count + 1 - index)
            chunk = handle.read(4 * want)
            if len(chunk) < 4 * want:
                return "end early: the .bin is shorter than the Const's bytes"
            offsets = np.frombuffer(chunk, "<i4").astype(np.int64)
            if previous is not None:
                offsets = np.concatenate(([previous], offsets))
            steps = np.flatnonzero(offsets[1:] < offsets[:-1])
            if offsets[0] < 0 and previous is None:
                return f"begin their first string at offset {int(offsets[0])}; OpenVINO refuses the file"
            if steps.size:
                at = int(steps[0]) + index - (previous is not None)
                return (f"end string {at} at offset {int(offsets[steps[0] + 1])}, before it begins (offset "
                        f"{int(offsets[steps[0]])}); OpenVINO refuses the file")
            previous, index = int(offsets[-1]), index + want
        if previous > data_size:
            return (f"end their last string at offset {previous}, past the {data_size} bytes of string data after "
                    f"the header; OpenVINO refuses the file")
    if elements is not None and count < elements:
        return (f"hold {count} strings, fewer than the shape's {elements}; OpenVINO reads the file and leaves the "
                f"other strings undefined memory (compiling it failed with std::bad_alloc, measured)")
    if elements is not None and count > elements:
        return (f"hold {count} strings, more than the shape's {elements}; OpenVINO reads the first {elements} "
                f"and drops the rest")
    return None
