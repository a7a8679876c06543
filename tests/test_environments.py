"""Environments of other OpenVINO releases: made with venv + pip, reused, and never used half-made.

One real older release is installed from the package registry (once per test run, into the
run's temporary cache, conftest.older_openvino) and imported there; a folder without the ready
marker, as a killed pip leaves it, is made again (in a copy, so that other tests keep theirs).
The environments made again, and the older release's wheel, are made offline from a wheelhouse
pip downloads once (PIP_NO_INDEX, as on a machine with a local mirror only).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import OLDER_OPENVINO as OLDER

from irtool.jobs.environments import (
    CURRENT,
    MARKER,
    EnvironmentError_,
    cache_folder,
    device_report,
    ensure,
    environments,
    parse_releases,
    worker_requirements,
)


@pytest.fixture(scope="session")
def cache(openvino_cache) -> Path:
    return openvino_cache


@pytest.fixture(scope="session")
def older(older_openvino):
    return older_openvino


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    """The older release's wheel and every wheel it and irtool's run-time dependencies need, downloaded
    by pip once: the environments this module makes again are made from it, offline."""
    import sys

    folder = tmp_path_factory.mktemp("wheelhouse")
    done = subprocess.run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--quiet", "-d",
                           str(folder), f"openvino=={OLDER}", *worker_requirements()], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    return folder


def _offline(patch: pytest.MonkeyPatch, wheelhouse: Path) -> Path:
    """pip as set up for a machine without an index (PIP_NO_INDEX, PIP_FIND_LINKS): irtool's pip
    installs from the wheelhouse alone, as a user's offline mirror has it (a make then takes the
    time of unpacking, not of asking an index about each requirement)."""
    patch.setenv("PIP_NO_INDEX", "1")
    patch.setenv("PIP_FIND_LINKS", str(wheelhouse))
    return wheelhouse


def test_releases_are_versions_or_current():
    assert parse_releases("2025.4.1, current,2025.4.1") == ["2025.4.1", "current"]
    # as pip matches them (PEP 440): one environment per release however it is written
    assert parse_releases("2025.4,2025.4.0.0,2025.4.1.0,2025.4.1.2,current,") == ["2025.4.0", "2025.4.1",
                                                                                    "2025.4.1.2", "current"]
    for text, says in (("", "expected a comma-separated list"),
                       ("latest", r"--openvino latest: expected a version pip resolves \(a release such as 2025.4.1"),
                       ("2025.4.1;rm -rf /", "expected a version pip resolves"),
                       ("--index-url=http://x", "expected a version pip resolves"),
                       ("2025.4.1 --pre", "expected a version pip resolves"), ("1.0", "expected a version")):
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
    # what a worker imports is compiled once, whatever PYTHONDONTWRITEBYTECODE says; pip compiled nothing else
    site = next((cache / f"openvino-{OLDER}" / "lib").glob("python3*/site-packages"))
    assert list((site / "openvino" / "__pycache__").glob("__init__.*.pyc"))
    assert list((site / "onnx" / "__pycache__").glob("__init__.*.pyc"))
    assert not list((site / "onnx" / "backend" / "test" / "case" / "node").glob("__pycache__/*.pyc"))


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


def _spoilt_copy(env, folder: Path, spoil) -> str:
    """What ensure() reads of ``env``'s environment (its marker and its python), copied to ``folder``
    and spoilt; what ensure() then says of it."""
    made = Path(env.python).parent.parent
    shutil.copytree(made / "bin", folder / "bin", symlinks=True)
    shutil.copyfile(made / MARKER, folder / MARKER)
    return spoil(folder)


@pytest.fixture(scope="module")
def made_again(older_openvino, openvino_cache, wheelhouse, tmp_path_factory):
    """Two spoilt environments made again offline from the wheelhouse, side by side (each make a
    pip install of its own, as environments() makes several releases'):

    - "wheel": (the older release's wheel, its environment, its folder, what ensure() logged making
      it, what it said of the half-made folder found there), in the run's cache, where a pip killed
      before the end had left the wheel's folder half-made; read by two tests;
    - "other": (the older release's environment, its folder, what ensure() logged, what it said of
      the folder), in a cache of its own, where an environment made for other dependencies was."""
    import hashlib
    from concurrent.futures import ThreadPoolExecutor

    [wheel] = wheelhouse.glob("openvino-*.whl")
    folder = openvino_cache / f"openvino-wheel-{hashlib.sha256(wheel.read_bytes()).hexdigest()[:16]}"
    says = _spoilt_copy(older_openvino[0], folder, _half_made)
    other_cache = tmp_path_factory.mktemp("other-dependencies") / "cache"
    other_folder = other_cache / f"openvino-{OLDER}"
    other_says = _spoilt_copy(older_openvino[0], other_folder, _made_for_other_dependencies)
    log: list[str] = []
    other_log: list[str] = []
    with pytest.MonkeyPatch.context() as patch, ThreadPoolExecutor(2) as making:
        _offline(patch, wheelhouse)
        env = making.submit(ensure, parse_releases(str(wheel))[0], openvino_cache, log.append)
        other = making.submit(ensure, OLDER, other_cache, other_log.append)
        made = {"wheel": (wheel, env.result(), folder, log, says),
                "other": (other.result(), other_folder, other_log, other_says)}
    return made


@pytest.fixture(scope="module")
def wheel_made(made_again):
    return made_again["wheel"]


def _made_again(env, again, folder: Path) -> None:
    """``again``, made in ``folder`` where a spoilt ``env`` was, is whole: usable, the same openvino,
    nothing of the spoilt folder left, its marker written, what a worker imports importable."""
    assert again.usable and again.openvino_version == env.openvino_version
    assert Path(again.python).parent.parent == folder
    assert not (folder / "half-made").exists() and (folder / MARKER).is_file()
    done = subprocess.run([again.python, "-c", "import onnx, numpy, lxml"], capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_half_made_environment_is_made_again(older, wheel_made):
    env, _ = older
    _, again, folder, log, says = wheel_made
    assert says in log[0] and "making an environment" in log[1]
    _made_again(env, again, folder)


def test_an_environment_made_for_other_dependencies_is_made_again(older, made_again):
    env, _ = older
    again, folder, log, says = made_again["other"]
    assert says in log[0] and "making an environment" in log[1]
    _made_again(env, again, folder)


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


# ----------------------------------------------------------------------------- what --openvino takes

@pytest.mark.parametrize("text, expected", [
    ("2026.5.0.dev20261120", "2026.5.0.dev20261120"),  # a nightly
    ("2026.5-dev20261120", "2026.5.0.dev20261120"),  # as pip (PEP 440) normalises it
    ("2026.0.0RC1", "2026.0.0rc1"),
    ("2026.0.0-rc.2", "2026.0.0rc2"),
    ("2025.4.1.post1", "2025.4.1.post1"),
    ("2025.4.1-1", "2025.4.1.post1"),
    ("2026.1.0b2.dev3", "2026.1.0b2.dev3"),
])
def test_any_version_pip_resolves_is_taken_as_pip_normalises_it(text, expected):
    assert parse_releases(text) == [expected]


def test_versions_are_ordered_as_pip_orders_them():
    from irtool.jobs.environments import release_order

    ordered = ["2025.4.1", "2026.0.0.dev1", "2026.0.0a1", "2026.0.0rc1", "2026.0.0", "2026.0.0.post1", "2026.1.0"]
    assert sorted(reversed(ordered), key=release_order) == ordered


def test_a_wheel_must_be_a_regular_file_named_as_openvinos(tmp_path):
    wheel = tmp_path / "openvino-2026.4.1-1-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"")
    assert parse_releases(str(wheel)) == [f"wheel:{wheel}"]
    (tmp_path / "numpy-2.0.0-cp311-none-any.whl").write_bytes(b"")
    (tmp_path / "folder.whl").mkdir()
    for item, says in ((str(tmp_path / "gone.whl"), "no such wheel file"),
                       (str(tmp_path / "numpy-2.0.0-cp311-none-any.whl"), "not an openvino wheel"),
                       (str(tmp_path / "folder.whl"), "not a regular file"),
                       ("wheel:/dev/null", "not a regular file")):
        with pytest.raises(EnvironmentError_, match=f"--openvino {re.escape(item)}: {says}"):
            parse_releases(item)


def test_an_environment_must_be_a_folder_with_a_python(tmp_path):
    import sys

    assert parse_releases(f"env:{sys.prefix}") == [f"env:{Path(sys.prefix).absolute()}"]
    (tmp_path / "file").write_text("")
    for item, says in (("env:", "expected env:PATH"), (f"env:{tmp_path / 'gone'}", "no such folder"),
                       (f"env:{tmp_path / 'file'}", "not a folder"), (f"env:{tmp_path}", "no bin/python")):
        with pytest.raises(EnvironmentError_, match=f"--openvino {re.escape(item)}: {says}"):
            parse_releases(item)


def test_an_existing_environment_is_used_as_it_is_with_its_exact_version(tmp_path):
    """env:PATH with the test venv's own prefix: its python, what its openvino says, nothing made."""
    import sys
    from importlib import metadata

    import openvino

    env = ensure(parse_releases(f"env:{sys.prefix}")[0], tmp_path / "cache")
    assert env.usable, env.problem
    assert Path(env.python).parent.parent == Path(sys.prefix).absolute()
    assert env.openvino_version == openvino.get_version() and env.distribution == metadata.version("openvino")
    assert env.label == metadata.version("openvino")
    assert not (tmp_path / "cache").exists()  # nothing made, nothing cached


def test_an_environment_without_openvino_cannot_be_used_and_says_why(tmp_path):
    import sys

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True, timeout=120)
    env = ensure(f"env:{tmp_path / 'bare'}", tmp_path / "cache")
    assert not env.usable and "importing openvino failed: " in env.problem and "openvino" in env.problem
    envs = environments(parse_releases(f"current,env:{tmp_path / 'bare'}"), tmp_path / "cache")
    assert envs[f"env:{tmp_path / 'bare'}"].problem == env.problem  # kept under its name, beside current


def test_the_environments_of_several_releases_are_made_side_by_side(tmp_path, monkeypatch):
    """environments() makes the releases it lacks at once: each make says so (its log line) and then
    waits, at a barrier, for the other's to have begun too; made one after the other, the first
    would wait in vain and fail.  Offline (no index), pip refuses both, each with its own reason."""
    import threading

    monkeypatch.setenv("PIP_NO_INDEX", "1")
    both_begun = threading.Barrier(2, timeout=120)
    log: list[str] = []

    def said(line: str) -> None:
        log.append(line)
        if "making an environment" in line:
            both_begun.wait()

    envs = environments(parse_releases("2099.1,current,2099.2"), tmp_path / "cache", said)
    assert [label for label in envs if label.startswith("2099")] == ["2099.1.0", "2099.2.0"]
    for release in ("2099.1.0", "2099.2.0"):
        assert f"openvino=={release}" in envs[release].problem, envs[release].problem
        assert not (tmp_path / "cache" / f"openvino-{release}").exists()
    assert sorted(line.split(":")[0] for line in log) == ["openvino 2099.1.0", "openvino 2099.2.0"]


def test_a_dev_version_reaches_pip_as_its_exact_spec(tmp_path):
    """A nightly that is not on the configured indexes: pip's own reason, naming the spec it was given."""
    log: list[str] = []
    env = ensure(parse_releases("2026.5.0-dev20261120")[0], tmp_path / "cache", log.append)
    if env.usable:  # an index that has the nightly (PIP_EXTRA_INDEX_URL): then it is that version
        assert env.distribution == "2026.5.0.dev20261120"
        return
    assert "openvino==2026.5.0.dev20261120" in env.problem, env.problem
    assert not (tmp_path / "cache" / "openvino-2026.5.0.dev20261120").exists()  # a failed make leaves nothing
    assert "making an environment" in log[0]


def test_a_wheel_is_installed_in_an_environment_keyed_by_its_hash(cache, wheel_made, tmp_path):
    """The older release's wheel, downloaded by pip, installed as a file (its dependencies from the
    wheelhouse beside it); a copy under another name is the same wheel."""
    import hashlib

    wheel, env, _, _, _ = wheel_made
    assert env.usable, env.problem
    assert env.distribution == OLDER and env.openvino_version.startswith(OLDER) and env.label == OLDER
    key = hashlib.sha256(wheel.read_bytes()).hexdigest()[:16]
    assert Path(env.python).parent.parent == cache / f"openvino-wheel-{key}"
    copy = tmp_path / "copy" / wheel.name
    copy.parent.mkdir()
    shutil.copyfile(wheel, copy)
    log: list[str] = []
    assert ensure(f"wheel:{copy}", cache, log.append).python == env.python and log == []  # reused
    # beside the release of the same version, it keeps a label of its own
    envs = environments([OLDER, f"wheel:{wheel}"], cache)
    assert list(envs) == [OLDER, f"{OLDER}+wheel.{hashlib.sha256(str(wheel).encode()).hexdigest()[:8]}"]
