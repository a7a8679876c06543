"""irtool: validate, build, run and regression-test OpenVINO IR for the RNN op family."""
from __future__ import annotations

UNINSTALLED = "0+unknown"  # the version of an irtool run from a source tree that was never installed


def version() -> str:
    """irtool's version, as its installed metadata says (pyproject.toml is the one source)."""
    from importlib import metadata

    try:
        return metadata.version("irtool")
    except metadata.PackageNotFoundError:
        return UNINSTALLED


def __getattr__(name: str) -> str:
    # __version__ is looked up when asked for: reading the metadata costs what ``irtool validate`` saves
    if name == "__version__":
        return version()
    raise AttributeError(f"module 'irtool' has no attribute {name!r}")
