"""``irtool reduce`` on hostile input: a reproducer's case.json of the wrong shape, -o naming a
file, options the device refuses on any model: one line and exit 2, never a reduction."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from irtool.core.errors import IrtoolError
from irtool.jobs.records import SuiteCase, case_to_json
from irtool.pipeline.build import build_model
from irtool.pipeline.inputs import seeded_inputs
from irtool.pipeline.reproducer import write_reproducer
from irtool.reduce import load_origin
from irtool.specs.cases import OpCase


@pytest.fixture(scope="module")
def reproducer(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("repro") / "repro"
    model = build_model(OpCase("RNNCell", {"hidden_size": 2}))
    write_reproducer(folder, model=model, inputs=seeded_inputs(model, seed=0), expected=None,
                     actual=None, device="CPU", precision="f32", config={}, tolerances={"Ho": (1e-5, 1e-4)},
                     case=case_to_json(SuiteCase(id="cell[seed=0]", suite="s", op="RNNCell", version=0)), result=None)
    return folder


def _edited(reproducer: Path, tmp_path: Path, change) -> Path:
    folder = tmp_path / "edited"
    folder.mkdir()
    for name in ("model.xml", "model.bin", "inputs.npz"):
        (folder / name).write_bytes((reproducer / name).read_bytes())
    record = json.loads((reproducer / "case.json").read_text())
    change(record)
    (folder / "case.json").write_text(json.dumps(record))
    return folder


@pytest.mark.parametrize("change, says", [
    (lambda r: r.update(config=["NUM_STREAMS=1"]), r"'config' is \[\"NUM_STREAMS=1\"\]; expected an object"),
    (lambda r: r.update(tolerances=None), "'tolerances' is null; expected an object"),
    (lambda r: r.update(tolerances={"Ho": [1e-5]}), r"tolerances\['Ho'\] is \[1e-05\]; expected \[atol, rtol\]"),
    (lambda r: r.update(tolerances={"Ho": ["a", 0]}), r"tolerances\['Ho'\] is \[\"a\", 0\]"),
    (lambda r: r.update(config={"A": [1]}), "'config' is .*; expected an object of strings"),
    (lambda r: r.update(device=5), "'device' is 5; expected a string"),
    (lambda r: r.update(case=[]), "'case' is \\[\\]; expected an object"),
    (lambda r: r["case"].update(seed=-3), "'case' is not a case irtool wrote .*'seed' is -3; expected an integer >= 0"),
    (lambda r: r["case"].update(colour="red"), "'case' is not a case irtool wrote .*unknown case field 'colour'"),
], ids=["config-list", "tolerances-null", "tolerance-pair", "tolerance-text", "config-values", "device-int",
        "case-list", "case-seed", "case-field"])
def test_a_broken_case_json_is_one_line(reproducer, tmp_path, change, says):
    folder = _edited(reproducer, tmp_path, change)
    with pytest.raises(IrtoolError, match=says) as caught:
        load_origin(str(folder))
    assert str(folder / "case.json") in caught.value.message and "\n" not in caught.value.message


def _reduce(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", "reduce", *args], capture_output=True, text=True,
                          timeout=300)


def test_out_naming_a_file_is_refused(reproducer, tmp_path):
    (tmp_path / "afile").write_text("mine")
    done = _reduce(str(reproducer), "-o", str(tmp_path / "afile"))
    assert done.returncode == 2 and "afile: a file, not a folder" in done.stderr, done.stderr
    assert (tmp_path / "afile").read_text() == "mine"


@pytest.mark.parametrize("config, says", [("NUM_STREAMS=abc", "Could not read number of streams"),
                                          ("NO_SUCH_PROPERTY=1", "NO_SUCH_PROPERTY")])
def test_options_the_device_refuses_on_any_model_are_not_reduced(reproducer, tmp_path, config, says):
    """Every candidate would fail to compile the same way: that is the options' error, not the case's."""
    done = _reduce(str(reproducer), "--config", config, "-o", str(tmp_path / "out"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "refuses the options themselves, whatever the case" in done.stderr and says in done.stderr
    assert not (tmp_path / "out" / "reproducer").exists()


PLANTED_BUG = """
import os
if os.environ.get("IRTOOL_LIFELINE_FD"):  # in harness workers only, not in the reduce process
    import irtool.jobs.worker as worker

    def broken(self, job):
        raise RuntimeError("a planted bug")

    worker.Runner.run = broken
"""


def test_an_irtool_bug_in_the_worker_is_not_reduced(reproducer, tmp_path):
    """reduce shrinks the device's failures; an internal error of irtool's own is said, exit 2."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(PLANTED_BUG)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "irtool", "reduce", str(reproducer), "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the original case met an irtool bug, which reduce does not shrink" in done.stderr
    assert "RuntimeError: a planted bug" in done.stderr
    assert not (tmp_path / "out" / "reproducer").exists()
