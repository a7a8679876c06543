"""Files a model refers to (an ONNX tensor's external data, an IR's .bin, a reproducer's
inputs), found and opened only inside the model's own folder.

A model file names other files relative to itself: ``location = "weights.bin"`` in an ONNX
tensor, the .bin beside an IR's .xml.  irtool reads such a file for the model only when

- the name is relative and plain: not empty, no NUL character, not
  absolute (``/etc/passwd``, ``C:\\x``, ``\\\\server\\x``), no ``..`` part;
- it is resolved against the folder of the model **as given** (never the working
  directory), as OpenVINO resolves it;
- the file it reaches, symbolic links followed, lies inside that folder (or inside the
  folder the model file itself really is in, when the model is a link too, as in a
  Hugging Face cache whose files link into ``blobs/``); checked again on the open file, so a
  link swapped in between is caught;
- it is a regular file (never a FIFO, device or folder: :func:`irtool.core.files.open_regular`).

Every refusal is a :class:`ModelFileError`: one line naming the model, what the file is for
(``the external data of tensor 'W'``) and the location as written, escaped
(:func:`irtool.core.text.shown`).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import BinaryIO

from irtool.core.files import FileError, open_regular, size_text
from irtool.core.text import shown

_DRIVE = re.compile(r"^[A-Za-z]:")


class ModelFileError(FileError):
    """A file a model names that irtool will not read: outside the model's folder, or not a regular file."""


def _refusal(subject: Path, folder: Path, what: str, location: str, why: str) -> ModelFileError:
    return ModelFileError(f"{shown(subject)}: {what} is at '{shown(location)}', {why}; irtool reads a model's "
                          f"files only inside its folder ({shown(folder)})")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _roots(model: Path) -> tuple[str, ...]:
    return tuple(dict.fromkeys((os.path.realpath(model.parent), os.path.dirname(os.path.realpath(model)))))


def _resolve(subject: Path, folder: Path, roots: tuple[str, ...], location: str, what: str) -> Path:
    if not location:
        raise ModelFileError(f"{shown(subject)}: {what} names no file (an empty location)")
    if "\x00" in location:
        raise _refusal(subject, folder, what, location, "a name with a NUL character")
    if location.startswith(("/", "\\")) or _DRIVE.match(location):
        raise _refusal(subject, folder, what, location, "an absolute path")
    if ".." in re.split(r"[/\\]", location):
        raise _refusal(subject, folder, what, location, "a path with '..'")
    path = folder / location
    if os.path.lexists(path):
        real = os.path.realpath(path)
        if not any(_inside(real, root) for root in roots):
            raise _refusal(subject, folder, what, location, f"a symbolic link to {shown(real)}, outside the folder")
    return path


def _open(subject: Path, folder: Path, roots: tuple[str, ...], location: str, what: str,
          limit: int | None) -> BinaryIO:
    path = _resolve(subject, folder, roots, location, what)
    try:
        handle = open_regular(path, "file", limit)
    except FileError as error:
        raise ModelFileError(f"{shown(subject)}: {what} ('{shown(location)}'): {error.message}") from None
    try:
        real = os.readlink(f"/proc/self/fd/{handle.fileno()}")
    except OSError:  # no /proc: the check before the open stands
        return handle
    if not any(_inside(real, root) for root in roots):
        handle.close()
        raise _refusal(subject, folder, what, location, f"a symbolic link to {shown(real)}, outside the folder")
    return handle


def resolve(model: str | Path, location: str, what: str) -> Path:
    """The path of the file ``location`` names for ``model`` (the folder of ``model`` joined with
    it), after the checks of the name and of where it really leads (module docstring);
    ModelFileError if it is refused.  The file need not exist (the open says so)."""
    model = Path(model)
    return _resolve(model, model.parent, _roots(model), location, what)


def open_model_file(model: str | Path, location: str, what: str, limit: int | None = None) -> BinaryIO:
    """The file ``location`` names for ``model``, opened for binary reading (see :func:`resolve`
    and :func:`irtool.core.files.open_regular`: a regular file of at most ``limit`` bytes, never
    waited on); where the open file really is is checked again from its descriptor."""
    model = Path(model)
    return _open(model, model.parent, _roots(model), location, what, limit)


def check_model_file(model: str | Path, location: str, what: str) -> tuple[Path, int]:
    """The path and size of the file ``location`` names for ``model``, for a reader that opens
    it by path (OpenVINO): ModelFileError unless :func:`open_model_file` would open it."""
    with open_model_file(model, location, what) as handle:
        return Path(model).parent / location, os.fstat(handle.fileno()).st_size


def check_folder_file(folder: str | Path, name: str, what: str) -> Path:
    """The file ``name`` of a folder of files read together (a reproducer folder: model.xml,
    inputs.npz, case.json): ModelFileError unless it is a regular file inside ``folder``."""
    folder = Path(folder)
    with _open(folder, folder, (os.path.realpath(folder),), name, what, None):
        return folder / name


def read_model_file(model: str | Path, location: str, what: str, offset: int = 0, length: int | None = None,
                    limit: int | None = None) -> bytes:
    """``length`` bytes (default: to the end) at ``offset`` of the file ``location`` names for
    ``model``; ModelFileError if they lie past its end or are more than ``limit`` bytes."""
    model = Path(model)
    with open_model_file(model, location, what) as handle:
        size = os.fstat(handle.fileno()).st_size
        if offset < 0 or (length is not None and length < 0):
            raise ModelFileError(f"{shown(model)}: {what} ('{shown(location)}'): a negative offset or length")
        want = size - offset if length is None else length
        if offset + want > size or want < 0:
            raise ModelFileError(f"{shown(model)}: {what} ('{shown(location)}'): bytes {offset}..{offset + max(want, 0)}"
                                 f" lie past the end of the file ({size} bytes)")
        if limit is not None and want > limit:
            raise ModelFileError(f"{shown(model)}: {what} ('{shown(location)}') is {size_text(want)}, more than the "
                                 f"{size_text(limit)} irtool reads")
        handle.seek(offset)
        data = handle.read(want)
    if len(data) != want:  # it shrank while being read
        raise ModelFileError(f"{shown(model)}: {what} ('{shown(location)}'): the file ended after {len(data)} of "
                             f"{want} bytes")
    return data
