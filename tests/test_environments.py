"""Environments of other OpenVINO releases: made with venv + pip, reused, and never used half-made.

One real older release is installed from the package registry (once per test run, into the
run's temporary cache, conftest.older_openvino) and imported there; a folder without the ready
marker, as a killed pip leaves it, is made again (in a copy, so that other tests keep theirs).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from irtool.environments import (CURRENT, MARKER, EnvironmentError_, cache_folder, device_report, ensure, environments,
                                 parse_releases, worker_requirements)

from conftest import OLDER_OPENVINO as OLDER


@pytest.fixture(scope="session")
def cache(openvino_cache) -> Path:
    return openvino_cache


@pytest.fixture(scope="session")
def older(older_openvino):
    return older_openvino


def test_releases_are_versions_or_current():
    assert parse_releases("2025.4.1, current,2025.4.1") == ["2025.4.1", "current"]
    # as pip matches them (PEP 440): one environment per release however it is written
    assert parse_releases("2025.4,2025.4.0.0,2025.4.1.0,2025.4.1.2,current,") == ["2025.4.0", "2025.4.1",
                                                                                    "2025.4.1.2", "current"]
    for text, says in (("", "expected a comma-separated list"), ("latest", "--openvino latest: expected a release"),
                       ("2025.4.1;rm -rf /", "expected a release")):
        with pytest.raises(EnvironmentError_, match=says):
            parse_releases(text)


def test_the_cache_folder_is_given_or_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("IRTOOL_OPENVINO_CACHE", str(tmp_path / "env"))
    assert cache_folder() == tmp_path / "env" and cache_folder(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("IRTOOL_OPENVINO_CACHE")
    assert cache_folder() == Path.home() / ".cache" / "irtool" / "openvino"


def test_the_installed_release_named_beside_current_is_current(tmp_path):
    import openvino

    here = openvino.get_version().split("-")[0]
    envs = environments(["current", here], tmp_path / "cache")
    assert list(envs) == [here] and envs[here].release == CURRENT
    assert not (tmp_path / "cache" / f"openvino-{here}").exists()  # nothing was made


def test_a_cache_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(EnvironmentError_, match="--openvino-cache .*/f: not a folder"):
        ensure("2025.4.1", tmp_path / "f")


def test_current_is_this_python():
    import sys

    import openvino

    env = ensure(CURRENT, Path("/nonexistent"))
    assert env.usable and env.python == sys.executable and env.openvino_version == openvino.get_version()


def test_an_older_release_is_installed_imported_and_reused(older, cache):
    env, log = older
    assert env.usable, env.problem
    assert env.openvino_version.startswith(OLDER)
    assert not log or "making an environment" in log[0]  # empty when another xdist worker made it
    marker = json.loads((cache / f"openvino-{OLDER}" / MARKER).read_text())
    assert marker["openvino_version"] == env.openvino_version
    again_log: list[str] = []
    assert ensure(OLDER, cache, again_log.append) == env and again_log == []  # reused, nothing made
    done = subprocess.run([env.python, "-c", "import openvino, numpy, lxml; print(openvino.get_version())"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith(OLDER)


def _half_made(folder: Path) -> str:
    """As a pip killed before the end leaves it."""
    (folder / MARKER).unlink()
    (folder / "half-made").write_text("")
    return "is not a whole environment; making it again"


def _made_for_other_dependencies(folder: Path) -> str:
    """As an irtool before one that needs onnx in its workers made it (its marker lists what it installed)."""
    marker = json.loads((folder / MARKER).read_text())
    marker["requirements"] = ["numpy>=1.24", "lxml>=4.9"]
    (folder / MARKER).write_text(json.dumps(marker))
    (folder / "half-made").write_text("")
    return "was made for other dependencies (numpy>=1.24, lxml>=4.9; irtool needs "


@pytest.mark.parametrize("spoil", [_half_made, _made_for_other_dependencies])
def test_an_environment_that_is_not_whole_is_made_again(older, tmp_path, spoil):
    env, _ = older
    cache = tmp_path / "cache"
    folder = cache / f"openvino-{OLDER}"
    shutil.copytree(Path(env.python).parent.parent, folder, symlinks=True)
    says = spoil(folder)
    log: list[str] = []
    again = ensure(OLDER, cache, log.append)
    assert again.usable and again.openvino_version == env.openvino_version
    assert says in log[0]
    assert not (folder / "half-made").exists() and (folder / MARKER).is_file()
    done = subprocess.run([again.python, "-c", "import onnx, numpy, lxml"], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_workers_get_irtools_dependencies_from_pyproject_without_openvino():
    import tomllib

    declared = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    wanted = [r for r in declared["project"]["dependencies"] if not r.startswith("openvino")]
    assert worker_requirements() == wanted and any(r.startswith("onnx") for r in wanted)


def test_a_release_reports_its_own_devices(older):
    """The older release's openvino is asked in its environment, not the installed one."""
    env, _ = older
    report, problem = device_report(env)
    assert problem is None and report.openvino == env.openvino_version
    assert "CPU" in report.names and "f32" in report.available[0].precisions
    assert {d.name for d in report.absent} | set(report.names) >= {"CPU", "GPU", "NPU"}  # each found or said absent
