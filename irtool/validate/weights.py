"""Const layers against the .bin file beside the .xml: present, long enough, sizes right."""
from __future__ import annotations

import math
import os
import stat
from pathlib import Path

from irtool.core import element_types
from irtool.core.text import shown
from irtool.validate.context import Context, LayerFacts
from irtool.validate.strings import check_strings


def check_weights(ctx: Context, facts: list[LayerFacts]) -> None:
    consts = [f for f in facts if f.layer.type == "Const" and f.spec is not None]
    if not consts or not ctx.model.is_net:
        return
    bin_path = Path(ctx.model.path).with_suffix(".bin")
    bin_size, problem = _bin_size(bin_path, Path(ctx.model.path))
    if problem is not None:
        ctx.report("IR070", f"{len(consts)} Const layer{'s' if len(consts) != 1 else ''} read weights from "
                            f"{bin_path.name}, which {problem}", layer=consts[0].layer, expected=str(bin_path))
        return
    for fact in consts:
        offset, size = fact.attributes.get("offset"), fact.attributes.get("size")
        if offset is None or size is None:
            continue
        if offset > bin_size or (offset == bin_size and size > 0):  # the offset alone is out of range
            ctx.report("IR071", f"offset {offset} lies past the end of {bin_path.name} ({bin_size} bytes)",
                       layer=fact.layer, attribute="offset", expected=f"offset < {bin_size}", found=offset)
        elif offset + size > bin_size:
            ctx.report("IR071", f"bytes {offset}..{offset + size} lie past the end of {bin_path.name} "
                                f"({bin_size} bytes)", layer=fact.layer, attribute="size",
                       expected=f"offset+size <= {bin_size}", found=offset + size)
        else:
            _check_strings(ctx, fact, bin_path, offset, size)
        _check_size(ctx, fact, size)


def _check_strings(ctx: Context, fact: LayerFacts, bin_path: Path, offset: int, size: int) -> None:
    element_type = element_types.from_text(fact.attributes.get("element_type"))
    if element_type is not None and element_type.name == "string":
        shape = fact.attributes.get("shape")
        count = math.prod(shape) if shape is not None and all(isinstance(d, int) for d in shape) else None
        check_strings(ctx, fact.layer, bin_path, offset, size, count)


def _bin_size(path: Path, model: Path) -> tuple[int, str | None]:
    """The size of the weights file, or why OpenVINO could not read it: opened as OpenVINO
    opens it (without blocking, so a FIFO there is refused, not waited on), and only inside
    the model's folder (irtool.core.model_files: a link out of it is refused)."""
    from irtool.core.model_files import ModelFileError, resolve

    try:
        resolve(model, path.name, "its weights file")
    except ModelFileError:
        return 0, f"is a symbolic link out of the model's folder (to {shown(os.path.realpath(path))})"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return 0, "is missing"
    except OSError as error:
        return 0, f"cannot be read: {error.strerror or error}"
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if stat.S_ISDIR(info.st_mode):
        return 0, "is a directory"
    if not stat.S_ISREG(info.st_mode):
        return 0, "is not a regular file"
    return info.st_size, None


def _check_size(ctx: Context, fact: LayerFacts, size: int) -> None:
    shape = fact.attributes.get("shape")
    key = ("size", shape, fact.attributes.get("element_type"), size)
    if key in ctx.memo:  # found right on a Const before: thousands share a shape, a type and a size
        return
    before = len(ctx.diagnostics)
    _check_size_of(ctx, fact, size, shape)
    if len(ctx.diagnostics) == before:
        ctx.memo[key] = True


def _check_size_of(ctx: Context, fact: LayerFacts, size: int, shape) -> None:
    element_type = element_types.from_text(fact.attributes.get("element_type"))
    if shape is None or element_type is None or not all(isinstance(d, int) for d in shape):
        return
    count = math.prod(shape)
    expected = element_types.byte_size(element_type, count)
    if expected is not None and expected >= 2**64:  # no file holds it; and str() of it may be refused
        ctx.report("IR072", f"size is {size} bytes, but {len(shape)} dims of shape make more than 2**64 bytes "
                            f"of {element_type.name}", layer=fact.layer, attribute="size",
                   expected="less than 2**64", found=size)
    elif expected is not None and expected != size:
        ctx.report("IR072", f"size is {size} bytes, expected {count} elements x {element_type.bits} bits = "
                            f"{expected} bytes", layer=fact.layer, attribute="size", expected=expected, found=size)
