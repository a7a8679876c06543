"""``irtool run MODEL --openvino ...``: one model under an older release (installed once per test run
by conftest.older_openvino) and the installed one, side by side; a release that cannot read the
model or cannot be installed is skipped with the reason.  Real releases, real models."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import openvino
import pytest
from conftest import OLDER_OPENVINO as OLDER
from real_models import newest_opset_model

CURRENT = openvino.get_version().split("-")[0]
MODELS = Path(__file__).resolve().parent.parent / "samples" / "models"


@pytest.fixture(scope="module")
def releases(older_openvino, openvino_cache):
    env, _ = older_openvino
    assert env.usable, env.problem
    return ["--openvino", f"{OLDER},current", "--openvino-cache", str(openvino_cache)]


def irtool(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd, env=env)


def test_a_model_both_releases_get_wrong_fails_under_both(releases):
    """The CPU's sequence_lengths bug (samples/models/gru_lengths.xml) is in 2025.4.1 too: docs/run.md's
    command, as written (tests/test_docs_commands.py leaves it to this test)."""
    command = ["run", "samples/models/gru_lengths.xml", "-d", "CPU", "--openvino", f"{OLDER},current"]
    assert f"$ irtool {' '.join(command)}\n" in (MODELS.parent.parent / "docs" / "run.md").read_text()
    done = irtool(*command, *releases[2:], cwd=MODELS.parent.parent)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].endswith(f"gru_lengths.xml: on CPU at f32, under openvino {OLDER}, {CURRENT}")
    assert lines[1].split() == ["node", "type", OLDER, CURRENT]
    assert lines[2].split()[2] == "FAIL" and lines[2].count("FAIL") == 2 and lines[2].count("RNNSeq (f32)") == 2
    assert f"openvino {OLDER} -> {CURRENT}: no change" in lines
    assert lines[-1] == f"FAIL on {OLDER}; FAIL on {CURRENT}"


def test_a_model_the_older_release_cannot_read_is_skipped_there(releases, tmp_path):
    model = newest_opset_model(tmp_path)
    done = irtool("run", str(model), "-d", "CPU", *releases, "--format", "json", "--save-outputs",
                  str(tmp_path / "out.npz"))
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(done.stdout)
    older, current = data["releases"][OLDER], data["releases"][CURRENT]
    assert older["verdict"] == "skipped" and "is ErfInv of opset17, an opset this release does not have" in \
        older["stopped"]
    assert current["verdict"] == "pass" and current["run"]["run"]["openvino"].startswith(CURRENT)
    [change] = data["changes"]
    assert (change["older"], change["newer"], change["what"]) == (OLDER, CURRENT, ["the model: skipped -> pass"])
    assert data["verdict"] == "pass"
    # each release's outputs where it ran, named by the release
    assert not (tmp_path / f"out-{OLDER}.npz").exists()
    with np.load(tmp_path / f"out-{CURRENT}.npz") as saved:
        assert len([key for key in saved.files if not key.startswith("irtool:")]) == 2  # and the run's record


def test_one_release_is_that_releases_own_run(releases):
    done = irtool("run", str(MODELS / "lstm2_bidirectional.xml"), "-d", "CPU", *releases[:1], f"{OLDER}",
                  *releases[2:])
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"openvino {OLDER}" in done.stdout.splitlines()[1]
    assert done.stdout.splitlines()[-1] == "PASS: 2 of 2 judged nodes within tolerance"


def test_a_release_that_cannot_be_installed_is_skipped(openvino_cache):
    """pip refuses the release (offline, PIP_NO_INDEX: at once; tests/test_harness_openvino.py has pip
    refuse one the index lacks, with the releases it offers)."""
    import os

    from concurrent.futures import ThreadPoolExecutor

    offline = {**os.environ, "PIP_NO_INDEX": "1"}
    model = str(MODELS / "lstm2_bidirectional.xml")
    with ThreadPoolExecutor(3) as running:  # three runs side by side, each making (and failing) its own
        alone, as_json, both = running.map(lambda args: irtool("run", model, "-d", "CPU", *args, env=offline), [
            ["--openvino", "2099.1", "--openvino-cache", str(openvino_cache)],
            ["--openvino", "2099.1", "--openvino-cache", str(openvino_cache), "--format", "json"],
            ["--openvino", "2099.1,current", "--openvino-cache", str(openvino_cache)]])
    assert alone.returncode == 3, alone.stdout + alone.stderr
    assert "skipped: openvino 2099.1.0 cannot run here:" in alone.stderr and "openvino==2099.1.0" in alone.stderr
    assert as_json.returncode == 3 and json.loads(as_json.stdout)["verdict"] == "unjudged"  # JSON, as any run's
    assert both.returncode == 0, both.stdout + both.stderr
    assert both.stdout.splitlines()[-1] == f"PASS on {CURRENT}; SKIPPED on 2099.1.0"


@pytest.mark.parametrize("change, says", [
    (["--shape", "x=[a]"], "--shape x=[a]"),
    (["--save-outputs", "nodir/out.npz"], "nodir/out.npz: folder nodir does not exist"),
    (["--inputs", "none.npz"], "none.npz: no such inputs file"),
    (["--compare-with", "onnxruntime"], "--compare-with onnxruntime runs onnxruntime beside the installed openvino"),
    (["--openvino-cache", "afile"], "--openvino-cache afile: not a folder"),
])
def test_the_other_options_are_checked_before_any_release_is_made(tmp_path, change, says):
    (tmp_path / "afile").write_text("")
    done = irtool("run", str(MODELS / "lstm2_bidirectional.xml"), "-d", "CPU", "--openvino", "2025.4.1,current",
                  "--openvino-cache", str(tmp_path / "cache"), *change, cwd=tmp_path)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert not (tmp_path / "cache").exists()


def test_a_missing_model_is_said_before_any_release_is_made(tmp_path):
    done = irtool("run", "gone.xml", "-d", "CPU", "--openvino", "2025.4.1,current", "--openvino-cache",
                  str(tmp_path / "cache"), cwd=tmp_path)
    assert done.returncode == 2 and "gone.xml: no such model file" in done.stderr
    assert not (tmp_path / "cache").exists()


def test_each_release_names_its_files_and_its_reproducer_runs_where_it_is_run(releases, tmp_path):
    done = irtool("run", str(MODELS / "gru_lengths.xml"), "-d", "CPU", *releases, "--reproducers", "rp",
                  "--save-outputs", "out.npz", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    for release in (OLDER, CURRENT):
        assert f"  {release}: outputs saved to out-{release}.npz" in done.stdout.splitlines()
        [line] = [line for line in done.stdout.splitlines() if line.startswith(f"  {release}: reproducer of node")]
        folder = tmp_path / line.rpartition(": ")[2]
        assert folder.parent.name == release
        assert json.loads((folder / "case.json").read_text())["openvino"].startswith(release)
    older = next((tmp_path / "rp" / OLDER).iterdir())
    replay = subprocess.run([sys.executable, "reproduce.py"], cwd=older, capture_output=True, text=True, timeout=120)
    assert replay.returncode == 1 and f"(recorded with {OLDER}" in replay.stdout.splitlines()[0]


def test_a_comparison_with_a_second_device_is_shown_per_release(releases):
    done = irtool("run", str(MODELS / "lstm2_bidirectional.xml"), "-d", "CPU", *releases, "--compare-with",
                  "AUTO:CPU")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for release in (OLDER, CURRENT):
        [line] = [line for line in lines if line.startswith(f"  {release}: against AUTO:CPU (f32): ")]
        assert " PASS max abs " in line and "FAIL" not in line


@pytest.fixture(scope="module")
def bare_env(tmp_path_factory) -> Path:
    """A virtual environment without openvino (nor pip)."""
    folder = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    return folder


def test_an_existing_environment_runs_as_it_is_and_says_its_exact_version(bare_env, tmp_path):
    """env:PATH with this test venv's prefix runs the model there; beside an environment without
    openvino (skipped with the import's reason), each column says exactly which openvino it is."""
    from importlib import metadata

    model = str(MODELS / "lstm2_bidirectional.xml")
    alone = irtool("run", model, "-d", "CPU", "--openvino", f"env:{sys.prefix}", "--openvino-cache",
                   str(tmp_path / "cache"), "--format", "json")
    assert alone.returncode == 0, alone.stdout + alone.stderr
    assert json.loads(alone.stdout)["run"]["openvino"] == openvino.get_version()
    both = irtool("run", model, "-d", "CPU", "--openvino", f"env:{sys.prefix},env:{bare_env}",
                  "--openvino-cache", str(tmp_path / "cache"))
    assert both.returncode == 0, both.stdout + both.stderr
    label = metadata.version("openvino")
    assert f"  {label}: openvino {openvino.get_version()} (environment {Path(sys.prefix).absolute()})" \
        in both.stdout.splitlines()
    assert f"  env:{bare_env}: skipped: openvino env:{bare_env} cannot run here: importing openvino failed: " \
           "ModuleNotFoundError: No module named 'openvino'" in both.stdout
    as_json = json.loads(irtool("run", model, "-d", "CPU", "--openvino", f"env:{sys.prefix},env:{bare_env}",
                                "--openvino-cache", str(tmp_path / "cache"), "--format", "json").stdout)
    mine = as_json["releases"][label]
    assert mine["asked"] == f"env:{Path(sys.prefix).absolute()}" and mine["verdict"] == "pass"
    assert mine["openvino_version"] == openvino.get_version() and mine["distribution"] == label
    assert not (tmp_path / "cache").exists()  # nothing was made


def test_an_absent_device_is_a_skip_under_a_release_too(bare_env, tmp_path):
    """The one rule for absent devices holds in each release's run: NPU.7 is nowhere, so nothing is judged."""
    model = str(MODELS / "lstm2_bidirectional.xml")
    alone = irtool("run", model, "-d", "NPU.7", "--openvino", f"env:{sys.prefix}", "--openvino-cache",
                   str(tmp_path / "cache"))
    assert alone.returncode == 3, alone.stdout + alone.stderr
    assert alone.stderr.startswith("irtool: skipped: NPU.7 is not available here: ")
    both = irtool("run", model, "-d", "NPU.7", "--openvino", f"env:{sys.prefix},env:{bare_env}",
                  "--openvino-cache", str(tmp_path / "cache"))
    assert both.returncode == 3, both.stdout + both.stderr
    assert "skipped: NPU.7 is not available here: " in both.stdout and "ERROR" not in both.stdout
    typo = irtool("run", model, "-d", "NPUU", "--openvino", f"env:{sys.prefix}")
    assert typo.returncode == 2 and "(did you mean NPU?)" in typo.stderr


@pytest.fixture
def dashed(tmp_path) -> Path:
    """A failing model named ``-d.xml`` (the CPU's sequence_lengths bug) and its inputs as ``-in.npz``:
    names a re-parse of the command line would take for options."""
    import shutil

    from irtool.pipeline.inputs import seeded_inputs
    from irtool.runtime.core import core

    for suffix in (".xml", ".bin"):
        shutil.copy(MODELS / f"gru_lengths{suffix}", tmp_path / f"-d{suffix}")
    np.savez(tmp_path / "-in.npz", **seeded_inputs(core().read_model(str(tmp_path / "-d.xml"))))
    return tmp_path


DASHED = ["-d", "CPU", "--inputs=-in.npz", "--reproducers=-rep", "--save-outputs=-out.npz", "--", "-d.xml"]


def test_one_release_gets_the_command_line_word_for_word(dashed, tmp_path):
    plain = irtool("run", *DASHED, cwd=dashed)
    assert plain.returncode == 1, plain.stdout + plain.stderr
    assert plain.stdout.splitlines()[-1].startswith("FAIL: 1 of 1 judged nodes outside tolerance")
    shown = irtool("run", "--openvino", f"env:{sys.prefix}", "--openvino-cache", str(tmp_path / "cache"), *DASHED,
                   cwd=dashed)
    assert shown.returncode == 1, shown.stdout + shown.stderr
    assert shown.stdout == plain.stdout and shown.stderr == plain.stderr
    assert (dashed / "-out.npz").is_file() and len(list((dashed / "-rep").iterdir())) == 1


def test_several_releases_get_the_command_line_word_for_word(dashed, bare_env, tmp_path):
    from importlib import metadata

    label = metadata.version("openvino")
    done = irtool("run", "--openvino", f"env:{sys.prefix},env:{bare_env}", "--openvino-cache", str(tmp_path / "cache"),
                  *DASHED, cwd=dashed)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == f"-d.xml: on CPU at f32, under openvino {label}, env:{bare_env}"
    assert f"  {label}: outputs saved to -out-{label}.npz" in done.stdout.splitlines()
    assert (dashed / f"-out-{label}.npz").is_file() and len(list((dashed / "-rep" / label).iterdir())) == 1
