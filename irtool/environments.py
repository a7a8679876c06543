"""Environments of other OpenVINO releases, made with the standard tools and reused.

``--openvino 2025.4.1,current`` runs the harness's workers under each named release.  A
release other than ``current`` gets a virtual environment of its own in a cache folder
(``--openvino-cache DIR``, or ``$IRTOOL_OPENVINO_CACHE``, else ``~/.cache/irtool/openvino``):
``python -m venv`` and pip install ``openvino==VERSION`` with irtool's other run-time
dependencies (read from pyproject.toml, or the installed package's metadata); irtool itself
is not installed there but put on ``PYTHONPATH`` by the worker's launcher, so every release
runs this very irtool.

An environment is used only once it is whole: the marker file ``irtool-ready.json`` is
written last, after the new interpreter has imported openvino and said its version.  A
folder without the marker (a killed pip, a full disk), or one made for other dependencies
than irtool's present ones, is removed and made again, never used.  A release that cannot
be installed or imported here is reported with pip's own reason, and its jobs are skipped
like an absent device's.  What a release can run on (its devices and their precisions) is
asked of that release's openvino, not of the one installed here (:func:`device_report`).
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from irtool.diagnostics import clipped
from irtool.documents import load_json
from irtool.errors import IrtoolError
from irtool.files import FileError, read_bytes
from irtool.runtime.core import release_label

CURRENT = "current"
CACHE_ENV = "IRTOOL_OPENVINO_CACHE"
MARKER = "irtool-ready.json"
# A release: a year and one to five more numbers of at most 9 ASCII digits each (no release
# has more; a longer one would only reach pip, or int(), as a number of thousands of digits).
VERSION = re.compile(r"[0-9]{4}(?:\.[0-9]{1,9}){1,5}", re.ASCII)
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
    """``2025.4.1,current`` -> releases, each written as pip matches it (``2025.4`` and
    ``2025.4.0.0`` are ``2025.4.0``), each once; EnvironmentError_ for anything that is not a version."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise EnvironmentError_(f"--openvino {text!r}: expected a comma-separated list such as 2025.4.1,current")
    for release in items:
        if release != CURRENT and not VERSION.fullmatch(release):
            raise EnvironmentError_(f"--openvino {clipped(release, 40)}: expected a release such as 2025.4.1 (a year and up "
                                    f"to five more numbers), or {CURRENT}")
    return list(dict.fromkeys(item if item == CURRENT else canonical_release(item) for item in items))


def canonical_release(release: str) -> str:
    """A release as three numbers or more, without trailing zeros past the third: pip's (PEP 440's)
    equality, so that one release gets one environment however it is written."""
    numbers = [int(n) for n in release.split(".")]
    numbers += [0] * (3 - len(numbers))
    while len(numbers) > 3 and numbers[-1] == 0:
        numbers.pop()
    return ".".join(map(str, numbers))


_NUMBERS = re.compile(r"[0-9]+(?:\.[0-9]+)*", re.ASCII)


def release_order(release: str) -> tuple:
    """A release's place among others: by its numbers (2025.4.1 before 2026.0), unknown ones last."""
    label = release_label(release)
    if not _NUMBERS.fullmatch(label):
        return (1, (release,))
    # each number compared by its digits, never int(): a results file may name a release of 5,000 digits
    return (0, tuple((len(n.lstrip("0")), n.lstrip("0")) for n in label.split(".")))


def environments(releases: Sequence[str], cache: str | Path | None = None,
                 log: Callable[[str], None] | None = None) -> dict[str, Environment]:
    """Label -> Environment of each release asked for (made where absent).  A label is the version
    the release's openvino reports (``current`` becomes its version), so that results and reports
    say which release ran, whatever was asked; a release that cannot be used keeps its name."""
    folder = cache_folder(cache)
    found: dict[str, Environment] = {}
    current = ensure(CURRENT, folder) if CURRENT in releases else None
    here = release_label(current.openvino_version) if current and current.openvino_version else None
    for release in releases:
        # a release that is the installed one is run as current: nothing to make
        env = current if release in (CURRENT, here) else ensure(release, folder, log)
        label = release_label(env.openvino_version) if env.openvino_version else release
        found.setdefault(label, env)
    return dict(sorted(found.items(), key=lambda item: release_order(item[0])))


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
    if cache.exists() and not cache.is_dir():
        raise EnvironmentError_(f"--openvino-cache {cache}: not a folder")
    try:
        cache.mkdir(parents=True, exist_ok=True)
        lock = open(cache / f"openvino-{release}.lock", "a")
    except OSError as error:
        raise EnvironmentError_(f"--openvino-cache {cache}: cannot use it ({error.strerror})") from None
    with lock:  # one process makes a release's environment; the others wait, then use it
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure(release, cache, log)


def worker_requirements() -> list[str]:
    """What a worker imports besides openvino: irtool's run-time dependencies as pyproject.toml
    names them (a checkout, editable or not), else as the installed package's metadata does;
    openvino itself and the extras (test) left out."""
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        requirements = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["dependencies"]
    except (OSError, KeyError, ValueError):
        from importlib import metadata

        try:
            requirements = [r for r in metadata.requires("irtool") or [] if "extra ==" not in r]
        except metadata.PackageNotFoundError:
            raise EnvironmentError_("irtool's dependencies are unknown here (no pyproject.toml beside the package "
                                    "and no installed metadata); install irtool with pip") from None
    return [r.strip() for r in requirements if not re.match(r"openvino\b(?![-_.\w])", r.strip())]


def _ensure(release: str, cache: Path, log: Callable[[str], None] | None) -> Environment:
    folder = cache / f"openvino-{release}"
    python = str(folder / "bin" / "python")
    marker = folder / MARKER
    requirements = worker_requirements()
    why_again = "is not a whole environment"  # half-made (no marker) or not ours
    if marker.is_file():
        try:
            recorded = load_json(read_bytes(marker, "environment marker"))
            if isinstance(recorded, dict) and recorded.get("release") == release and Path(python).exists():
                if recorded.get("requirements") == requirements:
                    return Environment(release, python, recorded.get("openvino_version"))
                why_again = (f"was made for other dependencies ({', '.join(recorded.get('requirements') or ['?'])}; "
                             f"irtool needs {', '.join(requirements)})")
        except (OSError, ValueError, FileError):
            pass
    if folder.exists():  # made again, never used as it is
        if log:
            log(f"openvino {release}: {folder} {why_again}; making it again")
        shutil.rmtree(folder, ignore_errors=True)
    if log:
        log(f"openvino {release}: making an environment in {folder} (python -m venv, pip install)")
    problem = _make(folder, release, requirements)
    if problem:
        shutil.rmtree(folder, ignore_errors=True)
        return Environment(release, python, None, problem)
    version, problem = _version(python)
    if problem:
        shutil.rmtree(folder, ignore_errors=True)
        return Environment(release, python, None, problem)
    marker.write_text(json.dumps({"release": release, "openvino_version": version, "python": python,
                                  "requirements": requirements}) + "\n", encoding="utf-8")
    return Environment(release, python, version)


def _make(folder: Path, release: str, requirements: Sequence[str]) -> str | None:
    steps: Sequence[list[str]] = (
        [sys.executable, "-m", "venv", str(folder)],
        [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         f"openvino=={release}", *requirements],
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
    """The line of pip's (or Python's) output that says what went wrong, and the releases pip
    offers for this Python where it lists them (a typo, or a release without a wheel here)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("ERROR:", "error:")) or "Error" in line.split(":")[0]]
    reason = (errors or lines or ["no output"])[-1][:300]
    offered = re.search(r"\(from versions: ([^)]*)\)", text)
    versions = [v.strip() for v in offered.group(1).split(",") if v.strip()] if offered else []
    return reason + (f" (pip offers {versions[0]} to {versions[-1]} here)" if versions else "")


def worker_environment(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a process of another release runs in (irtool.jobs.pool's, for workers)."""
    from irtool.jobs.pool import worker_environment as pool_environment

    return pool_environment(env)


def device_report(env: Environment) -> tuple[Any, str | None]:
    """(irtool.runtime.devices.DeviceReport, None) of what ``env``'s openvino sees here, or
    (None, why it could not say): a release decides its own devices and precisions (an older
    plugin may lack a device or a precision the installed one has, or have one it lacks)."""
    from irtool.runtime.devices import report_from_json

    try:
        done = subprocess.run([env.python, "-m", "irtool.runtime.devices"], capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL, env=worker_environment())
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"cannot ask it for its devices: {error}"
    try:
        if done.returncode == 0:
            return report_from_json(load_json(done.stdout)), None
    except (ValueError, KeyError, TypeError):
        pass
    return None, "asking it for its devices failed: " + _reason(done.stderr or done.stdout)
