"""Shared test fixtures: paths of the repository's samples."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples" / "ir"


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    return SAMPLES


@pytest.fixture(scope="session")
def cpu_precisions() -> tuple[str, ...]:
    """The precisions this machine's CPU lists in OPTIMIZATION_CAPABILITIES (bf16 only on CPUs
    with AVX512_BF16 or AMX): tests of reduced precision assert the run where the CPU has it, and
    the skip with its reason where it does not."""
    from irtool.runtime.devices import list_devices

    return next(d.precisions for d in list_devices().available if d.name == "CPU")
