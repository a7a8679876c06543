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

from irtool.environments import CURRENT, MARKER, EnvironmentError_, cache_folder, ensure, parse_releases

from conftest import OLDER_OPENVINO as OLDER


@pytest.fixture(scope="session")
def cache(openvino_cache) -> Path:
    return openvino_cache


@pytest.fixture(scope="session")
def older(older_openvino):
    return older_openvino


def test_releases_are_versions_or_current():
    assert parse_releases("2025.4.1, current,2025.4.1") == ["2025.4.1", "current"]
    for text, says in (("", "expected a comma-separated list"), ("latest", "--openvino latest: expected a release"),
                       ("2025.4.1;rm -rf /", "expected a release")):
        with pytest.raises(EnvironmentError_, match=says):
            parse_releases(text)


def test_the_cache_folder_is_given_or_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("IRTOOL_OPENVINO_CACHE", str(tmp_path / "env"))
    assert cache_folder() == tmp_path / "env" and cache_folder(tmp_path / "x") == tmp_path / "x"
    monkeypatch.delenv("IRTOOL_OPENVINO_CACHE")
    assert cache_folder() == Path.home() / ".cache" / "irtool" / "openvino"


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


def test_a_half_made_environment_is_made_again(older, tmp_path):
    env, _ = older
    cache = tmp_path / "cache"
    folder = cache / f"openvino-{OLDER}"
    shutil.copytree(Path(env.python).parent.parent, folder, symlinks=True)
    (folder / MARKER).unlink()  # as a pip killed before the end leaves it
    (folder / "half-made").write_text("")
    log: list[str] = []
    again = ensure(OLDER, cache, log.append)
    assert again.usable and again.openvino_version == env.openvino_version
    assert "is not a whole environment; making it again" in log[0]
    assert not (folder / "half-made").exists() and (folder / MARKER).is_file()


def test_a_release_pip_cannot_find_is_unusable_with_pips_reason(cache):
    env = ensure("2099.1", cache)
    assert not env.usable and "No matching distribution found for openvino==2099.1" in env.problem
    assert not (cache / "openvino-2099.1").exists()
