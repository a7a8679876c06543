"""Files written whole or not at all: a temporary name in the same folder, renamed into place."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write a file through a temporary name in the same folder, renamed into place."""
    path = Path(path)
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, mode) as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_npz(path: str | Path, error: type[Exception]) -> dict:
    """The arrays of an .npz (no pickles), by key; ``error`` with one line naming the file if it is
    absent, not a regular file, or not an .npz of arrays."""
    import numpy as np

    path = Path(path)
    if not path.exists():
        raise error(f"{path}: no such inputs file")
    if not path.is_file():
        raise error(f"{path}: not a regular file; expected an .npz of arrays")
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not hasattr(archive, "files"):
                raise ValueError("a bare .npy array, not an .npz archive")
            return {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError) as problem:
        raise error(f"{path}: not a readable .npz of arrays ({problem})") from None
