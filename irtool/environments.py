"""Environments of other OpenVINO releases, made with the standard tools and reused.

``--openvino 2025.4.1,current`` runs the harness's workers under each named release.  A
release other than ``current`` gets a virtual environment of its own in a cache folder
(``--openvino-cache DIR``, or ``$IRTOOL_OPENVINO_CACHE``, else ``~/.cache/irtool/openvino``):
``python -m venv`` and pip install ``openvino==VERSION`` with irtool's other run-time
dependencies; irtool itself is not installed there but put on ``PYTHONPATH`` by the
worker's launcher, so every release runs this very irtool.

An environment is used only once it is whole: the marker file ``irtool-ready.json`` is
written last, after the new interpreter has imported openvino and said its version.  A
folder without the marker (a killed pip, a full disk) is removed and made again, never used.
A release that cannot be installed or imported here is reported with pip's own reason, and
its jobs are skipped like an absent device's.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from irtool.errors import IrtoolError

CURRENT = "current"
CACHE_ENV = "IRTOOL_OPENVINO_CACHE"
MARKER = "irtool-ready.json"
# What a worker imports besides openvino (irtool's own run-time dependencies).
WORKER_REQUIREMENTS = ("numpy", "lxml")
VERSION = re.compile(r"^\d{4}\.\d+(\.\d+)*$")
PIP_TIMEOUT = 1200.0


class EnvironmentError_(IrtoolError):
    """A release named in --openvino that is not a version, or a cache folder that cannot be used."""


@dataclass(frozen=True)
class Environment:
    """Where a release's workers run: its Python, and the version openvino reports there."""

    release: str  # as asked: "2025.4.1" or "current"
    python: str
    openvino_version: str | None = None  # None until the environment has said it
    problem: str | None = None  # why it cannot be used here (pip's or the import's reason)

    @property
    def usable(self) -> bool:
        return self.problem is None


def parse_releases(text: str) -> list[str]:
    """``2025.4.1,current`` -> releases; EnvironmentError_ for anything that is not a version."""
    releases = list(dict.fromkeys(item.strip() for item in text.split(",") if item.strip()))
    if not releases:
        raise EnvironmentError_(f"--openvino {text!r}: expected a comma-separated list such as 2025.4.1,current")
    for release in releases:
        if release != CURRENT and not VERSION.match(release):
            raise EnvironmentError_(f"--openvino {release}: expected a release such as 2025.4.1, or {CURRENT}")
    return releases


def cache_folder(given: str | Path | None = None) -> Path:
    if given is not None:
        return Path(given)
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path.home() / ".cache" / "irtool" / "openvino"


def ensure(release: str, cache: Path, log: Callable[[str], None] | None = None) -> Environment:
    """The environment of ``release``: the running Python for ``current``, else the cached one,
    made first if it is absent or half-made."""
    if release == CURRENT:
        return Environment(CURRENT, sys.executable, _version(sys.executable)[0])
    try:
        cache.mkdir(parents=True, exist_ok=True)
        lock = open(cache / f"openvino-{release}.lock", "a")
    except OSError as error:
        raise EnvironmentError_(f"--openvino-cache {cache}: cannot use it ({error.strerror})") from None
    with lock:  # one process makes a release's environment; the others wait, then use it
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure(release, cache, log)


def _ensure(release: str, cache: Path, log: Callable[[str], None] | None) -> Environment:
    folder = cache / f"openvino-{release}"
    python = str(folder / "bin" / "python")
    marker = folder / MARKER
    if marker.is_file():
        try:
            recorded = json.loads(marker.read_text(encoding="utf-8"))
            if recorded.get("release") == release and Path(python).exists():
                return Environment(release, python, recorded.get("openvino_version"))
        except (OSError, ValueError):
            pass
    if folder.exists():  # half-made (no marker) or not ours: made again, never used as it is
        if log:
            log(f"openvino {release}: {folder} is not a whole environment; making it again")
        shutil.rmtree(folder, ignore_errors=True)
    if log:
        log(f"openvino {release}: making an environment in {folder} (python -m venv, pip install)")
    problem = _make(folder, release)
    if problem:
        shutil.rmtree(folder, ignore_errors=True)
        return Environment(release, python, None, problem)
    version, problem = _version(python)
    if problem:
        shutil.rmtree(folder, ignore_errors=True)
        return Environment(release, python, None, problem)
    marker.write_text(json.dumps({"release": release, "openvino_version": version, "python": python}) + "\n",
                      encoding="utf-8")
    return Environment(release, python, version)


def _make(folder: Path, release: str) -> str | None:
    steps: Sequence[list[str]] = (
        [sys.executable, "-m", "venv", str(folder)],
        [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         f"openvino=={release}", *WORKER_REQUIREMENTS],
    )
    for command in steps:
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"{Path(command[0]).name} {command[2]} failed: {error}"
        if done.returncode != 0:
            return _reason(done.stderr or done.stdout)
    return None


def _version(python: str) -> tuple[str | None, str | None]:
    """openvino's version as ``python`` imports it, or None and why not."""
    try:
        done = subprocess.run([python, "-c", "import openvino; print(openvino.get_version())"], capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL, env={**os.environ, "CI": "true"})
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"cannot start {python}: {error}"
    if done.returncode != 0:
        return None, "importing openvino failed: " + _reason(done.stderr)
    return done.stdout.strip().splitlines()[-1], None


def _reason(text: str) -> str:
    """The line of pip's (or Python's) output that says what went wrong."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("ERROR:", "error:")) or "Error" in line.split(":")[0]]
    return (errors or lines or ["no output"])[-1][:300]
