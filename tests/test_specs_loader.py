"""Where the op specs and the opset table are read from (schemas/, installed as irtool._schemas), and
what a missing or empty place says: irtool's own data missing is irtool's fault, named, never blamed
on the user's file; IRTOOL_EXTRA_SPECS naming no folder is the user's, named."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from irtool.core.errors import InputError
from irtool.specs import EXTRA_SPECS_VARIABLE, OPS_DIR, SpecError, load_registry, registry
from irtool.specs.opsets import load_opsets

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "samples" / "ir" / "valid" / "gru_sequence_forward.xml"


def test_the_specs_are_the_repositorys_schemas_folder():
    """In a checkout (editable install) importlib.resources finds schemas/ itself: one copy."""
    assert Path(str(OPS_DIR)).resolve() == (ROOT / "schemas" / "ops").resolve()
    assert {"GRUSequence", "LSTMSequence", "GRUCell"} <= set(registry().types())


def test_a_source_tree_that_was_never_installed_finds_its_specs():
    """As the workers of another openvino release run irtool: the checkout on the path, no install
    (-S: no site-packages, so no editable install's import hook either)."""
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); from irtool.specs import OPS_DIR, registry; "
             "print(OPS_DIR); print(len(registry().types()))")
    done = subprocess.run([sys.executable, "-S", "-c", probe, str(ROOT)], capture_output=True, text=True, timeout=60,
                          cwd=ROOT.parent)
    assert done.returncode == 0, done.stderr
    where, count = done.stdout.split()
    assert Path(where).resolve() == (ROOT / "schemas" / "ops").resolve() and int(count) == len(registry().types())


def test_a_folder_without_spec_files_is_refused_not_an_empty_registry(tmp_path):
    """A wheel without its data once gave "no spec for GRUSequence-5; known: " (nothing) far from the cause."""
    with pytest.raises(SpecError, match=f"{tmp_path}: no op spec files"):
        load_registry(tmp_path)


def test_an_unreadable_opset_table_is_irtools_fault_naming_it(tmp_path):
    with pytest.raises(SpecError, match="missing.json"):
        load_opsets(tmp_path / "missing.json")


def test_extra_specs_naming_no_folder_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setenv(EXTRA_SPECS_VARIABLE, str(tmp_path / "nowhere"))
    with pytest.raises(InputError, match=f"{EXTRA_SPECS_VARIABLE} names {tmp_path / 'nowhere'}, which is not a folder"):
        registry()
    env = {**os.environ, EXTRA_SPECS_VARIABLE: str(tmp_path / "nowhere")}
    done = subprocess.run([sys.executable, "-m", "irtool", "validate", str(SAMPLE)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().endswith(f"{EXTRA_SPECS_VARIABLE} names {tmp_path / 'nowhere'}, which is not a folder "
                                        "(expected folders of op spec files, separated by ':')"), done.stderr
