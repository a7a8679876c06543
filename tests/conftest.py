"""Shared test fixtures: paths of the repository's samples."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "ir"


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    return SAMPLES


@pytest.fixture
def device_node():
    """Make a character device (/dev/null's numbers) at a path; root only, else the test is skipped."""
    def make(path: Path) -> Path:
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("making a device node needs root")
        return path
    return make
