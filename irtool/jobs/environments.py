"""Environments of other OpenVINO releases, made with the standard tools and reused.

``--openvino 2025.4.1,current`` runs the harness's workers (or ``irtool run``) under each
named openvino.  What ``--openvino`` takes (:func:`parse_releases`):

- ``current``: the openvino installed beside irtool;
- a version pip resolves: a release (``2025.4.1``) or a pre-release, nightly or dev build
  (``2026.5.0.dev20261120``, ``2026.0.0rc1``), written by PEP 440's rules and normalised as
  pip normalises it; pip gets ``openvino==VERSION`` (with ``--pre`` for a pre-release) from
  the indexes pip is configured with (a nightly needs its index: ``PIP_EXTRA_INDEX_URL``);
- a wheel file (``/path/openvino-2026.4.1-...whl``): installed into an environment keyed by
  the wheel's SHA-256, so a rebuilt wheel gets a new one;
- ``env:PATH``: an existing virtual environment or Python prefix that has openvino (and
  irtool's run-time dependencies), used as it is, never modified.

A version or wheel gets a virtual environment of its own in a cache folder (``--openvino-cache
DIR``, or ``$IRTOOL_OPENVINO_CACHE``, else ``~/.cache/irtool/openvino``): ``python -m venv``
and pip install openvino with irtool's other run-time dependencies (read from pyproject.toml,
or the installed package's metadata).  irtool itself is never installed there: the worker's
launcher puts it on ``PYTHONPATH``, so every environment runs this very irtool.  Each is
recorded with the exact version its openvino reports (``openvino.get_version()`` and the
distribution's version), and named in results and reports by the distribution's version
(``2025.4.1``, ``2026.5.0.dev20261120``).

An environment is used only once it is whole: the marker file ``irtool-ready.json`` is
written last, after the new interpreter has imported openvino and said its version.  A
folder without the marker (a killed pip, a full disk), or one made for other dependencies
than irtool's present ones, is removed and made again, never used.  A release that cannot
be installed or imported here is reported with pip's own reason, and its jobs are skipped
like an absent device's.  What a release can run on (its devices and their precisions) is
asked of that release's openvino, not of the one installed here (:func:`device_report`).
No text from the command line reaches pip as an option: a version must match the version
syntax, and a wheel is given to pip as an absolute path.

An environment is code irtool runs, so the cache is trusted only as far as its owner:
the cache folder, a release's folder, its marker and its ``bin/python`` are used only when
this user owns them and no group or other user may write them (:func:`untrusted` says why
not, and the release is refused saying it).  A planted environment in a world-writable
cache is never run.  A release's lock file is opened without following a link or blocking
on a FIFO (:func:`irtool.core.files.open_lock_file`).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from irtool.core.diagnostics import clipped
from irtool.core.documents import load_json
from irtool.core.errors import IrtoolError
from irtool.core.files import FileError, open_lock_file, read_bytes
from irtool.runtime.core import installed_openvino, release_label

CURRENT = "current"
ENV_PREFIX = "env:"
WHEEL_PREFIX = "wheel:"
CACHE_ENV = "IRTOOL_OPENVINO_CACHE"
MARKER = "irtool-ready.json"
# PEP 440's public versions, as pip reads them (openvino's releases begin with a year): the
# release numbers, then an optional pre-release, post-release and dev part.
# Each number at most 9 ASCII digits: no release has more, and a longer one would only reach pip,
# or int(), as a number of thousands of digits.
VERSION = re.compile(r"^v?(?P<release>[0-9]{4}(?:\.[0-9]{1,9}){0,5})"
                     r"(?:[-_.]?(?P<pre>a|b|c|rc|alpha|beta|pre|preview)[-_.]?(?P<pre_n>[0-9]{1,9})?)?"
                     r"(?P<post>-(?P<post_implicit>[0-9]{1,9})|[-_.]?(?:post|rev|r)[-_.]?(?P<post_n>[0-9]{1,9})?)?"
                     r"(?:[-_.]?(?P<dev>dev)[-_.]?(?P<dev_n>[0-9]{1,9})?)?$", re.IGNORECASE | re.ASCII)
PRE_NAMES = {"a": "a", "alpha": "a", "b": "b", "beta": "b", "c": "rc", "rc": "rc", "pre": "rc", "preview": "rc"}
WHEEL_NAME = re.compile(r"^openvino-(?P<version>[^-]+)-.*\.whl$")
PIP_TIMEOUT = 1200.0
HASH_CHUNK = 1 << 20


class EnvironmentError_(IrtoolError):
    """A release named in --openvino that is not a version, or a cache folder that cannot be used."""


@dataclass(frozen=True)
class Environment:
    """Where a release's workers run: its Python, and the version openvino reports there."""

    release: str  # as asked, normalised: "2025.4.1", "2026.5.0.dev20261120", "current", "wheel:PATH", "env:PATH"
    python: str
    openvino_version: str | None = None  # openvino.get_version() there; None until the environment has said it
    problem: str | None = None  # why it cannot be used here (pip's or the import's reason)
    distribution: str | None = None  # the openvino distribution's version there (importlib.metadata)

    @property
    def usable(self) -> bool:
        return self.problem is None

    @property
    def label(self) -> str:
        """What results and reports call it: the distribution's version (a nightly's is its own,
        ``2026.5.0.dev20261120``), else the release get_version() names, else as asked."""
        if self.distribution:
            return self.distribution
        return release_label(self.openvino_version) if self.openvino_version else self.release


def parse_releases(text: str) -> list[str]:
    """``2025.4.1,current`` -> what to run under, each once: ``current``; a version as pip matches
    it (``2025.4`` and ``2025.4.0.0`` are ``2025.4.0``, ``2026.5.0-dev1`` is ``2026.5.0.dev1``); a
    wheel file as ``wheel:/absolute/path``; an environment as ``env:/absolute/path``.
    EnvironmentError_ for anything else, naming it and what was expected."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise EnvironmentError_(f"--openvino {text!r}: expected a comma-separated list such as 2025.4.1,current")
    return list(dict.fromkeys(_one_release(item) for item in items))


def _one_release(item: str) -> str:
    if item == CURRENT:
        return CURRENT
    if item.startswith(ENV_PREFIX):
        return ENV_PREFIX + str(_environment_prefix(item[len(ENV_PREFIX):], item))
    if item.startswith(WHEEL_PREFIX) or item.endswith(".whl"):
        return WHEEL_PREFIX + str(_wheel_path(item.removeprefix(WHEEL_PREFIX), item))
    if VERSION.match(item):
        return canonical_release(item)
    raise EnvironmentError_(f"--openvino {clipped(item, 40)}: expected a version pip resolves (a release such as 2025.4.1, or a "
                            f"pre-release or nightly such as 2026.5.0.dev20261120), a wheel file "
                            f"(/path/openvino-VERSION-....whl), env:PATH (an environment that has openvino), "
                            f"or {CURRENT}")


def _wheel_path(text: str, item: str) -> Path:
    """A wheel file named on the command line: absolute, a regular file, named as openvino's wheels are."""
    path = Path(text).expanduser().absolute()
    if not path.exists():
        raise EnvironmentError_(f"--openvino {item}: no such wheel file")
    if not path.is_file():
        raise EnvironmentError_(f"--openvino {item}: not a regular file (a wheel file is expected)")
    if not WHEEL_NAME.match(path.name):
        raise EnvironmentError_(f"--openvino {item}: not an openvino wheel; expected a file named "
                                f"openvino-VERSION-....whl")
    return path


def _environment_prefix(text: str, item: str) -> Path:
    """An existing environment named by env:PATH: a folder with bin/python (a venv or a Python prefix)."""
    if not text:
        raise EnvironmentError_(f"--openvino {item}: expected env:PATH, the folder of a virtual environment or "
                                f"Python prefix that has openvino")
    path = Path(text).expanduser().absolute()
    if not path.exists():
        raise EnvironmentError_(f"--openvino {item}: no such folder")
    if not path.is_dir():
        raise EnvironmentError_(f"--openvino {item}: not a folder (expected a virtual environment or Python prefix)")
    if _prefix_python(path) is None:
        raise EnvironmentError_(f"--openvino {item}: no bin/python or bin/python3 in it (expected a virtual "
                                f"environment or Python prefix)")
    return path


def _prefix_python(prefix: Path) -> Path | None:
    for name in ("python", "python3"):
        candidate = prefix / "bin" / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def canonical_release(release: str) -> str:
    """A version as pip (PEP 440) normalises it: the release as three numbers or more, without
    trailing zeros past the third, then ``aN``/``bN``/``rcN``, ``.postN``, ``.devN``; so that
    one version gets one environment however it is written."""
    match = VERSION.match(release)
    if match is None:
        raise EnvironmentError_(f"--openvino {release}: not a version")
    numbers = [int(n) for n in match["release"].split(".")]
    numbers += [0] * (3 - len(numbers))
    while len(numbers) > 3 and numbers[-1] == 0:
        numbers.pop()
    text = ".".join(map(str, numbers))
    if match["pre"]:
        text += f"{PRE_NAMES[match['pre'].lower()]}{int(match['pre_n'] or 0)}"
    if match["post"]:
        text += f".post{int(match['post_implicit'] or match['post_n'] or 0)}"
    if match["dev"]:
        text += f".dev{int(match['dev_n'] or 0)}"
    return text


def is_prerelease(release: str) -> bool:
    """A pre-release or dev version (pip needs --pre for its dependencies' pre-releases)."""
    match = VERSION.match(release)
    return bool(match and (match["pre"] or match["dev"]))




def release_order(release: str) -> tuple:
    """A release's place among others, by PEP 440's order (2025.4.1 before 2026.0.0.dev1 before
    2026.0.0rc1 before 2026.0.0 before 2026.0.0.post1), unknown ones last."""
    version, _, local = release_label(release).partition("+")
    match = VERSION.match(version)
    if match is None:
        return (1, (release,))
    numbers = [int(n) for n in match["release"].split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    pre = (("a", "b", "rc").index(PRE_NAMES[match["pre"].lower()]) + 1, int(match["pre_n"] or 0)) if match["pre"] \
        else (0, 0) if match["dev"] and not match["post"] else (4, 0)
    post = int(match["post_implicit"] or match["post_n"] or 0) if match["post"] else -1
    dev = (0, int(match["dev_n"] or 0)) if match["dev"] else (1, 0)
    return (0, (tuple(numbers), pre, post, dev, local))


def environments(releases: Sequence[str], cache: str | Path | None = None,
                 log: Callable[[str], None] | None = None) -> dict[str, Environment]:
    """Label -> Environment of each release asked for (made where absent).  A label is the version
    the environment's openvino reports (``current`` becomes its version, a nightly its dev
    version), so that results and reports say which openvino ran, whatever was asked; one that
    cannot be used keeps its name.  Two environments of one version (a wheel built from a
    release's sources beside that release) are told apart by ``+wheel.HASH`` / ``+env.HASH``."""
    folder = cache_folder(cache)
    found: dict[str, Environment] = {}
    current = ensure(CURRENT, folder) if CURRENT in releases else None
    here = current.label if current and current.openvino_version else None
    # a release that is the installed one is run as current: nothing to make
    made = ensure_all([release for release in releases if release not in (CURRENT, here)], folder, log)
    for release in releases:
        env = current if release in (CURRENT, here) else made[release]
        label = env.label
        if label in found and found[label].python != env.python:
            label = f"{label}+{_source_tag(env.release)}"
        found.setdefault(label, env)
    return dict(sorted(found.items(), key=lambda item: release_order(item[0])))


def ensure_all(releases: Sequence[str], cache: Path,
               log: Callable[[str], None] | None = None) -> dict[str, Environment]:
    """:func:`ensure` of each release, all at once: the environments to make are made side by side
    (each its own venv and pip, under its own lock), not one after the other: a pip install waits
    on its downloads and its disk much of its time (2023.3.0 and 2024.6.0 from pip's cache, on a
    loaded 2-core machine: 104 s one after the other, 68 s side by side, the same CPU time).  The
    first error, in the order asked, is raised once all have ended."""
    if len(releases) < 2:
        return {release: ensure(release, cache, log) for release in releases}
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(releases), thread_name_prefix="irtool-environment") as making:
        started = {release: making.submit(ensure, release, cache, log) for release in releases}
    return {release: future.result() for release, future in started.items()}


def describe(env: Environment, label: str) -> str:
    """Which openvino an environment is, exactly: ``2026.5.0-20526-abc... (wheel /path/....whl)``;
    what was asked is said where it is not the label's release number."""
    kind, sep, where = env.release.partition(":")
    asked = "" if env.release in (CURRENT, label) else \
        f" (wheel {where})" if sep and kind == "wheel" else f" (environment {where})" if sep and kind == "env" \
        else f" (asked as {env.release})"
    return f"{env.openvino_version or 'version unknown'}{asked}"


def _source_tag(release: str) -> str:
    kind, _, where = release.partition(":")
    return f"{kind}.{hashlib.sha256(where.encode()).hexdigest()[:8]}" if where else "pip"


def cache_folder(given: str | Path | None = None) -> Path:
    if given is not None:
        return Path(given)
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path.home() / ".cache" / "irtool" / "openvino"


def ensure(release: str, cache: Path, log: Callable[[str], None] | None = None) -> Environment:
    """The environment of ``release`` (as :func:`parse_releases` writes it): the running Python
    for ``current``, the named one for ``env:PATH``, else the cached one of a version or wheel,
    made first if it is absent or half-made."""
    if release == CURRENT:
        return _current()
    if release.startswith(ENV_PREFIX):
        return _existing(release)
    if release.startswith(WHEEL_PREFIX):
        wheel = _wheel_path(release[len(WHEEL_PREFIX):], release)
        key, install = f"wheel-{_file_hash(wheel, release)}", [str(wheel)]  # absolute: never a pip option
    else:
        if not VERSION.match(release):
            raise EnvironmentError_(f"--openvino {release}: not a version")
        key = canonical_release(release)
        install = [f"openvino=={key}"] + (["--pre"] if is_prerelease(key) else [])
    if cache.exists() and not cache.is_dir():
        raise EnvironmentError_(f"--openvino-cache {cache}: not a folder")
    try:
        cache.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError as error:
        raise EnvironmentError_(f"--openvino-cache {cache}: cannot use it ({error.strerror})") from None
    _refuse_untrusted((cache, "the cache folder"))
    try:
        fd = open_lock_file(cache / f"openvino-{key}.lock", "release's lock file")
    except FileError as error:
        raise EnvironmentError_(f"--openvino-cache: {error.message}") from None
    with os.fdopen(fd, "r+b") as lock:  # one process makes a release's environment; the others wait, then use it
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure(release, key, install, cache, log)


def _current() -> Environment:
    """This Python, and what its openvino says, asked here: no second interpreter to start (that
    took a second of every run under ``--openvino ...,current``)."""
    from importlib import metadata

    version, why = installed_openvino()
    if version is None:
        return Environment(CURRENT, sys.executable, None, f"importing openvino failed: {why}")
    try:
        distribution = metadata.version("openvino")
    except metadata.PackageNotFoundError:
        distribution = None
    return Environment(CURRENT, sys.executable, version, distribution=distribution or None)


def _existing(release: str) -> Environment:
    """``env:PATH`` as it is: its Python, and what its openvino says; irtool's own code must import
    there (from this checkout, on PYTHONPATH as the workers get it), else it cannot be used."""
    prefix = _environment_prefix(release[len(ENV_PREFIX):], release)
    python = str(_prefix_python(prefix))
    return Environment(release, python, *_version(python, whole_pipeline=True))


def _file_hash(path: Path, release: str) -> str:
    """The SHA-256 of a wheel (its first 16 hex digits), read in chunks."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as stream:
            for chunk in iter(lambda: stream.read(HASH_CHUNK), b""):
                digest.update(chunk)
    except OSError as error:
        raise EnvironmentError_(f"--openvino {release}: cannot read it ({error.strerror})") from None
    return digest.hexdigest()[:16]


def untrusted(path: str | Path, what: str) -> str | None:
    """Why ``path`` must not be trusted to hold code irtool runs, or None when it may: it must be
    owned by this user and not writable by group or others.  A symlink (a venv's ``bin/python``)
    must itself be this user's, and what it leads to this user's or root's, not writable by
    group or others."""
    path = Path(path)
    uid = os.getuid()
    try:
        link = os.lstat(path)
        final = os.stat(path)
    except OSError as error:
        return f"{what} {path} cannot be read ({error.strerror})"
    owners = (link.st_uid, final.st_uid)
    if link.st_uid != uid or final.st_uid not in (uid, 0):
        return f"{what} {path} is owned by user {owners[0] if link.st_uid != uid else owners[1]}, not by you " \
               f"(user {uid})"
    if final.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"{what} {path} is writable by {'others' if final.st_mode & stat.S_IWOTH else 'its group'} "
                f"(mode {stat.S_IMODE(final.st_mode):o}; chmod go-w it)")
    return None


def _refuse_untrusted(*checks: tuple[Path, str]) -> None:
    for path, what in checks:
        problem = untrusted(path, what)
        if problem:
            raise EnvironmentError_(f"--openvino-cache: {problem}; irtool runs only environments that you "
                                    f"own and that no one else can write")


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


def _ensure(release: str, key: str, install: Sequence[str], cache: Path,
            log: Callable[[str], None] | None) -> Environment:
    folder = cache / f"openvino-{key}"
    python = str(folder / "bin" / "python")
    marker = folder / MARKER
    requirements = worker_requirements()
    why_again = "is not a whole environment"  # half-made (no marker) or not ours
    if os.path.lexists(folder):  # someone else's (or a world-writable) environment is never run nor removed
        _refuse_untrusted((folder, f"openvino {release}'s environment"))
    if marker.is_file():
        _refuse_untrusted((marker, f"openvino {release}'s marker"), (Path(python), f"openvino {release}'s python"))
        try:
            recorded = load_json(read_bytes(marker, "environment marker"))
            if isinstance(recorded, dict) and recorded.get("release") == key and Path(python).exists():
                if recorded.get("requirements") == requirements:
                    return Environment(release, python, recorded.get("openvino_version"),
                                       distribution=recorded.get("distribution"))
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
    problem = _make(folder, install, requirements)
    if not problem:
        os.chmod(folder, 0o755)  # as trusted as its cache, whatever the umask (untrusted() checks it)
    if problem:
        shutil.rmtree(folder, ignore_errors=True)
        return Environment(release, python, None, problem)
    version, problem, distribution = _version(python, first_import=True)
    if problem:
        shutil.rmtree(folder, ignore_errors=True)
        return Environment(release, python, None, problem)
    marker.write_text(json.dumps({"release": key, "asked": release, "openvino_version": version,
                                  "distribution": distribution, "python": python,
                                  "requirements": requirements}) + "\n", encoding="utf-8")
    os.chmod(marker, 0o644)
    return Environment(release, python, version, distribution=distribution)


def _make(folder: Path, install: Sequence[str], requirements: Sequence[str]) -> str | None:
    """A venv with ``install`` and ``requirements`` pip-installed.  Where this Python's pip can
    install into another interpreter (``pip --python``, pip 22.3 on), the venv is made without a
    pip of its own: that is 5 of the 16 s an environment takes (measured with openvino 2024.6.0
    from pip's cache).  pip compiles no bytecode (``--no-compile``): precompiling every module took
    half of the rest (openvino 2025.4.1 with numpy, lxml and onnx from pip's cache: 14.6 s, 7.6 s
    without).  Instead the version check's import of what a worker imports compiles those modules
    (:func:`_version` with ``first_import``, 1.3 s), with bytecode written even where
    PYTHONDONTWRITEBYTECODE is set: without it each worker start compiled them again (1.1 s to
    import them, 0.5 s compiled)."""
    pip = ["--quiet", "--disable-pip-version-check", "install", "--no-compile", *install,
           *requirements]
    python = str(folder / "bin" / "python")
    steps: Sequence[list[str]] = (
        ([sys.executable, "-m", "venv", "--without-pip", str(folder)], [sys.executable, "-m", "pip", "--python", python, *pip])
        if _pip_installs_elsewhere() else
        ([sys.executable, "-m", "venv", str(folder)], [python, "-m", "pip", *pip]))
    for command in steps:
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"{Path(command[0]).name} {command[2]} failed: {error}"
        if done.returncode != 0:
            return _reason(done.stderr or done.stdout)
    return None


def _pip_installs_elsewhere() -> bool:
    """Whether this Python has a pip that takes ``--python`` (22.3 on)."""
    try:
        from pip import __version__
    except ImportError:
        return False
    numbers = re.findall(r"\d+", __version__)[:2]
    return len(numbers) == 2 and (int(numbers[0]), int(numbers[1])) >= (22, 3)


# What an environment says of its openvino: get_version(), then the distribution's version.
# (an openvino without distribution metadata, e.g. one built from source on PYTHONPATH, says "").
_SAY_VERSION = """import importlib.metadata, openvino
print(openvino.get_version(), flush=True)
try:
    print(importlib.metadata.version("openvino"), flush=True)
except importlib.metadata.PackageNotFoundError:
    print("", flush=True)
"""
# Imported after the version is said, in a new environment (_version's first_import): what every worker
# imports besides openvino (irtool.jobs.worker), compiled once; its failure is a worker's to say.
_WORKER_IMPORTS = """try:
    import numpy, lxml.etree, onnx
except Exception:
    pass
"""


def _version(python: str, whole_pipeline: bool = False,
             first_import: bool = False) -> tuple[str | None, str | None, str | None]:
    """(openvino.get_version(), None, the distribution's version) as ``python`` imports it, or
    (None, why not, None).  ``whole_pipeline``: irtool's run pipeline must import there too (an
    environment irtool did not make may lack its dependencies).  ``first_import``: a new
    environment's first start, which also imports what a worker imports and writes the bytecode
    of it all, whatever PYTHONDONTWRITEBYTECODE says (:func:`_make`)."""
    code = _SAY_VERSION + ("import irtool.pipeline.run\n" if whole_pipeline else
                           _WORKER_IMPORTS if first_import else "")
    env = worker_environment() if whole_pipeline else {**os.environ, "CI": "true"}
    if first_import:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=300,
                              stdin=subprocess.DEVNULL, env=env)
    except (OSError, subprocess.TimeoutExpired) as error:
        return None, f"cannot start {python}: {error}", None
    lines = done.stdout.splitlines()
    if done.returncode != 0:
        what = "importing irtool's run pipeline there" if len(lines) >= 2 else "importing openvino"
        return None, f"{what} failed: " + _reason(done.stderr), None
    if len(lines) < 2 or not lines[0].strip():
        return None, f"{python} did not say openvino's version", None
    return lines[0].strip(), None, lines[1].strip() or None


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
