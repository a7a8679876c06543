"""irtool installs like real software: the sdist made from the checkout, and the wheel built from
that sdist, carry every file irtool reads at run time; installed into a fresh virtual environment
outside the checkout, the wheel runs validate, build, run, harness and report from a folder that
holds no repository, and imported from the wheel as a zip it finds its specs too.

The environment is made once per test run (xdist workers share it, under a lock): ``python -m
venv`` with the pip it brings, setuptools>=77 installed into it (what pyproject.toml's build
backend needs: from the package registry, as ``pip wheel .`` would fetch it), the sdist and the
wheels built there, the wheel installed with --no-deps.  Only then does a .pth file let it see
this test environment's site-packages for the heavy dependencies (openvino, onnx, numpy, lxml):
the folders a .pth names are put on sys.path without their own .pth files being run, so the
editable install of the checkout (a .pth and an import hook) stays out.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from conftest import ROOT, shared_folder, tracked_copy

VERSION = metadata.version("irtool")
SCHEMA_FILES = sorted(f"irtool/_schemas/{p.relative_to(ROOT / 'schemas')}" for p in (ROOT / "schemas").rglob("*.json"))
MODULES = sorted(f"irtool/{p.relative_to(ROOT / 'irtool')}" for p in (ROOT / "irtool").rglob("*.py"))
TINY_SUITE = """
[suite]
name = "tiny"
timeout = 120
[[grid]]
id = "gru"
op = "GRUSequence-5"
attributes = { hidden_size = 4, direction = ["forward", "reverse"] }
sizes = { batch_size = 2, seq_length = 3, input_size = 3 }
[[files]]
id = "ir"
paths = ["gru_sequence_bidirectional.xml"]
"""


@dataclass(frozen=True)
class Installed:
    venv: Path
    sdist: Path
    wheel: Path  # built from the sdist, and installed
    tree_wheel: Path  # built from the checkout's files directly


def _run(argv: list, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, **kwargs)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _site_packages() -> list[str]:
    """This test environment's folders of installed packages (a venv's own, and the system's it sees)."""
    return [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages") and os.path.isdir(p)]


def _make(folder: Path) -> Installed:
    source = tracked_copy(folder / "source")
    venv = folder / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])  # this Python's pip installs into it: 5 s less
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", python]
    _run([*pip, "install", "--quiet", "setuptools>=77"])
    dist = folder / "dist"
    # the sdist and the checkout's own wheel by the build backend's hooks, each in a process of its own as a
    # frontend calls them (the wheel by pip wheel took 4 s more: pip --python starts two interpreters)
    hook = "import sys; from setuptools import build_meta; build_meta.build_{}(sys.argv[1])"
    _run([python, "-c", hook.format("sdist"), dist], cwd=source)
    (dist / "from-tree").mkdir()
    _run([python, "-c", hook.format("wheel"), dist / "from-tree"], cwd=source)
    sdist = next(dist.glob("irtool-*.tar.gz"))
    _run([*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", dist / "from-sdist",
          sdist], cwd=folder)
    wheel = next((dist / "from-sdist").glob("irtool-*.whl"))
    _run([*pip, "install", "--quiet", "--no-deps", wheel], cwd=folder)
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (site / "zz-test-environment.pth").write_text("".join(f"{p}\n" for p in _site_packages()))
    return Installed(venv, sdist, wheel, next((dist / "from-tree").glob("irtool-*.whl")))


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    folder = shared_folder(tmp_path_factory, "packaging")
    with open(folder / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        made, failed = folder / "made.json", folder / "failed.txt"
        if failed.exists():  # tried once in this run: the other tests fail with the same reason, at once
            pytest.fail(failed.read_text())
        if not made.exists():
            try:
                made.write_text(json.dumps({k: str(v) for k, v in vars(_make(folder)).items()}))
            except AssertionError as error:
                failed.write_text(f"making the wheel and its environment failed: {error}")
                raise
        return Installed(**{k: Path(v) for k, v in json.loads(made.read_text()).items()})


@pytest.fixture
def workdir(tmp_path) -> Path:
    """A folder with no repository above it, holding copies of the samples the commands use."""
    folder = tmp_path / "work"
    folder.mkdir()
    for name in ("valid/gru_sequence_bidirectional.xml", "broken/gru_cell_b_768.xml"):
        shutil.copy2(ROOT / "samples" / "ir" / name, folder)
    for suffix in (".xml", ".bin"):
        shutil.copy2(ROOT / "samples" / "models" / f"gru_lengths{suffix}", folder)
    (folder / "tiny.toml").write_text(TINY_SUITE)
    assert subprocess.run(["git", "rev-parse"], cwd=folder, capture_output=True).returncode != 0, "inside a repository"
    return folder


def irtool(installed: Installed, workdir: Path, *argv: str) -> subprocess.CompletedProcess:
    """The installed ``irtool`` command, run in ``workdir`` with none of the test run's irtool settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IRTOOL_", "PYTHON"))}
    env.update(PATH=f"{installed.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", CI="true")
    done = subprocess.run(["irtool", *argv], cwd=workdir, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert str(ROOT) not in done.stdout + done.stderr, "the checkout leaked into the installed irtool"
    return done


def _names(archive: Path) -> list[str]:
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as whl:
            return sorted(whl.namelist())
    with tarfile.open(archive) as tar:
        return sorted(name.split("/", 1)[1] for name in tar.getnames() if "/" in name)


def test_the_wheel_carries_every_module_and_every_spec_file(installed):
    names = _names(installed.wheel)
    assert set(MODULES) <= set(names), sorted(set(MODULES) - set(names))
    assert set(SCHEMA_FILES) <= set(names), sorted(set(SCHEMA_FILES) - set(names))
    assert {"irtool/_schemas/__init__.py", "irtool/_schemas/ops/GRUSequence-5.json",
            "irtool/_schemas/openvino_opsets.json", "irtool/_schemas/op.schema.json"} <= set(names)
    assert not [n for n in names if n.startswith(("tests/", "schemas/", "samples/"))]  # nothing outside irtool/


def test_the_sdist_holds_what_the_wheel_is_built_from(installed):
    """The wheel built from the sdist is the wheel built from the checkout's files."""
    names = _names(installed.sdist)
    assert {"pyproject.toml", "README.md", "schemas/ops/GRUSequence-5.json", "schemas/openvino_opsets.json",
            "schemas/op.schema.json", "irtool/cli/__init__.py"} <= set(names)
    assert _names(installed.wheel) == _names(installed.tree_wheel)


def test_the_installed_irtool_is_the_wheels_not_the_checkouts(installed, workdir):
    python = installed.venv / "bin" / "python"
    done = _run([python, "-c", "import irtool, openvino; from irtool.specs import OPS_DIR; print(irtool.__file__); "
                 "print(OPS_DIR); print(irtool.version())"], cwd=workdir)
    where, specs, version = done.stdout.split()
    assert Path(where).is_relative_to(installed.venv) and Path(specs).is_relative_to(installed.venv)
    assert version == VERSION


def test_version_names_irtool_and_openvino(installed, workdir):
    done = irtool(installed, workdir, "--version")
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith(f"irtool {VERSION} from {installed.venv}")
    assert re.fullmatch(r"openvino 20\d\d\.\d+\.\d+\S*", second), second


def test_validate_reads_the_specs_of_the_wheel(installed, workdir):
    done = irtool(installed, workdir, "validate", "gru_sequence_bidirectional.xml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 file checked: 0 errors" in done.stdout
    done = irtool(installed, workdir, "validate", "gru_cell_b_768.xml")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error[IR041]" in done.stdout and "expected 4*hidden_size = 16" in done.stdout


def test_build_then_run_passes(installed, workdir):
    done = irtool(installed, workdir, "build", "gru-sequence", "--hidden-size", "4", "--direction", "bidirectional",
                  "--batch-size", "2", "--seq-length", "3", "--input-size", "3", "-o", "gru.xml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (workdir / "gru.xml").is_file() and (workdir / "gru.bin").is_file()
    done = irtool(installed, workdir, "run", "gru.xml", "-d", "CPU")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS" in done.stdout


def test_run_finds_the_cpus_sequence_lengths_bug(installed, workdir):
    done = irtool(installed, workdir, "run", "gru_lengths.xml", "-d", "CPU")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL: 1 of 1 judged nodes outside tolerance" in done.stdout


def test_harness_then_report(installed, workdir):
    done = irtool(installed, workdir, "harness", "tiny.toml", "-d", "CPU", "--precision", "f32",
                  "--report-dir", "reports")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASSED" in done.stdout and "3 pass" in done.stdout
    for name in ("results.json", "junit.xml", "report.html"):
        assert (workdir / "reports" / name).is_file(), name
    done = irtool(installed, workdir, "report", "render", "reports", "-o", "again")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (workdir / "again" / "report.html").is_file()
    done = irtool(installed, workdir, "report", "diff", "reports", "again")
    assert done.returncode == 0, done.stdout + done.stderr


def test_imported_from_the_wheel_as_a_zip_irtool_finds_its_specs(installed, workdir):
    """zipimport: the spec files are read through importlib.resources, never as paths on disk."""
    probe = ("import sys, irtool, irtool.cli.program; from irtool.specs import OPS_DIR; "
             "print(irtool.__file__, type(OPS_DIR).__name__); sys.exit(irtool.cli.program.main(sys.argv[1:]))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRTOOL_")}
    env["PYTHONPATH"] = str(installed.wheel)
    done = subprocess.run([sys.executable, "-c", probe, "validate", "gru_cell_b_768.xml"], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert first == f"{installed.wheel / 'irtool' / '__init__.py'} Path", first  # zipfile.Path
    assert "error[IR041]" in done.stdout
