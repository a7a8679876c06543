"""Shared test fixtures: paths of the repository's samples."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "ir"


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    return SAMPLES
