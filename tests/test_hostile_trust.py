"""Trust boundaries (issue 22, item 4): folders and files irtool does not own lead to no code run,
no write outside, no hang: planted --openvino-cache environments, FIFO and symlinked lock files,
case.json configs that would write files, symlink cycles under a [[files]] glob, device nodes
in a shard's reproducer folder.

Each test works in a sentinel tree (tests/hostile.py): nothing outside its work folder may
change.  Whatever could hang runs in a child process with a timeout.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from hostile import Sentinel

from irtool.cli.program import main
from irtool.jobs.environments import MARKER, EnvironmentError_, ensure, worker_requirements

PLANTED = "2099.1.0"
GRU_SUITE = '[[grid]]\nid = "gru"\nop = "GRUSequence"\nattributes = { hidden_size = 2, direction = "forward" }\n'


@pytest.fixture
def sentinel(tmp_path):
    tree = Sentinel(tmp_path)
    yield tree
    tree.check()


def python_child(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``code`` in a child Python: a hang there fails the test (TimeoutExpired), not the run."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)


# ----------------------------------------------------------------------------- --openvino-cache

def plant(cache: Path, ran: Path) -> Path:
    """An environment of a release that does not exist, with a marker forged to look whole; its
    "python" records that it ran in ``ran`` and says it is openvino 2099.1.0."""
    folder = cache / f"openvino-{PLANTED}"
    (folder / "bin").mkdir(parents=True)
    python = folder / "bin" / "python"
    python.write_text(f"#!/bin/sh\necho ran >> {ran}\necho {PLANTED}\n")
    python.chmod(0o755)
    (folder / MARKER).write_text(json.dumps({"release": PLANTED, "openvino_version": PLANTED, "python": str(python),
                                             "requirements": worker_requirements()}))
    return folder


@pytest.mark.parametrize("spoil, says", [
    (lambda cache, env: cache.chmod(0o777), "the cache folder {cache} is writable by others (mode 777"),
    (lambda cache, env: cache.chmod(0o775), "the cache folder {cache} is writable by its group"),
    (lambda cache, env: env.chmod(0o777), f"openvino {PLANTED}'s environment {{env}} is writable by others"),
    (lambda cache, env: os.chown(env, 65534, 65534), f"openvino {PLANTED}'s environment {{env}} is owned by user 65534"),
    (lambda cache, env: (env / MARKER).chmod(0o666), f"openvino {PLANTED}'s marker {{env}}/{MARKER} is writable"),
    (lambda cache, env: os.chown(env / "bin" / "python", 65534, 65534), f"openvino {PLANTED}'s python {{env}}/bin/python "
                                                                        "is owned by user 65534"),
])
def test_a_planted_environment_is_never_run(spoil, says, sentinel):
    cache = sentinel.work / "cache"
    cache.mkdir(mode=0o755)
    cache.chmod(0o755)
    ran = sentinel.work / "ran"
    env = plant(cache, ran)
    spoil(cache, env)
    with pytest.raises(EnvironmentError_) as caught:
        ensure(PLANTED, cache)
    assert says.format(cache=cache, env=env) in caught.value.message
    assert "irtool runs only environments that you own and that no one else can write" in caught.value.message
    assert not ran.exists() and env.exists()  # not run, and not removed either (it is not irtool's to remove)


def test_the_harness_refuses_a_world_writable_cache_in_one_line(sentinel):
    cache = sentinel.work / "cache"
    cache.mkdir()
    ran = sentinel.work / "ran"
    plant(cache, ran)
    cache.chmod(0o777)
    (sentinel.work / "suite.toml").write_text(GRU_SUITE)
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(sentinel.work / "suite.toml"),
                           "--openvino", PLANTED, "--openvino-cache", str(cache), "--report-dir",
                           str(sentinel.work / "report")], capture_output=True, text=True, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "writable by others" in lines[0], done.stderr
    assert PLANTED not in done.stdout and not ran.exists()


def test_an_environment_that_is_yours_and_closed_is_trusted(sentinel):
    from irtool.jobs.environments import untrusted

    folder = sentinel.work / "env"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    (folder / "python").symlink_to(sys.executable)  # a venv's python: a link to a root-owned interpreter
    assert untrusted(folder, "env") is None and untrusted(folder / "python", "python") is None
    assert "cannot be read" in untrusted(folder / "absent", "thing")


# ----------------------------------------------------------------------------- lock files

def test_a_fifo_as_a_releases_lock_file_is_refused_at_once(sentinel):
    cache = sentinel.work / "cache"
    cache.mkdir()
    cache.chmod(0o755)
    os.mkfifo(cache / f"openvino-{PLANTED}.lock")
    done = python_child(f"from irtool.jobs.environments import ensure\nensure({PLANTED!r}, __import__('pathlib')."
                        f"Path({str(cache)!r}))")
    assert done.returncode == 1 and "is a named pipe (FIFO); irtool locks only a regular file" in done.stderr


def test_a_symlinked_lock_file_creates_nothing_outside(sentinel):
    cache = sentinel.work / "cache"
    cache.mkdir()
    cache.chmod(0o755)
    (cache / f"openvino-{PLANTED}.lock").symlink_to(sentinel.outside / "created.lock")
    with pytest.raises(EnvironmentError_, match="the release's lock file is a symlink"):
        ensure(PLANTED, cache)
    report = sentinel.work / "report"
    report.mkdir()
    (report / ".irtool.lock").symlink_to(sentinel.outside / "created.lock")
    (sentinel.work / "suite.toml").write_text(GRU_SUITE)
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(sentinel.work / "suite.toml"),
                           "--report-dir", str(report)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "lock file is a symlink" in done.stderr, done.stderr
    assert not (sentinel.outside / "created.lock").exists()


def test_a_fifo_as_the_report_dirs_lock_is_refused_at_once(sentinel):
    report = sentinel.work / "report"
    report.mkdir()
    os.mkfifo(report / ".irtool.lock")
    done = python_child(f"from pathlib import Path\nfrom irtool.harness.lock import ReportDirLock\n"
                        f"ReportDirLock.acquire(Path({str(report)!r}))")
    assert done.returncode == 1 and "LockedError" in done.stderr and "named pipe (FIFO)" in done.stderr


# ----------------------------------------------------------------------------- case.json configs

@pytest.fixture(scope="module")
def reproducer(tmp_path_factory) -> Path:
    from irtool.jobs.records import SuiteCase, case_to_json
    from irtool.pipeline.build import build_model
    from irtool.pipeline.inputs import seeded_inputs
    from irtool.pipeline.reproducer import write_reproducer
    from irtool.specs.cases import OpCase

    folder = tmp_path_factory.mktemp("repro") / "repro"
    model = build_model(OpCase("RNNCell", {"hidden_size": 2}))
    write_reproducer(folder, model=model, inputs=seeded_inputs(model, seed=0), expected=None, actual=None,
                     device="CPU", precision="f32", config={}, tolerances={"Ho": (1e-5, 1e-4)},
                     case=case_to_json(SuiteCase(id="cell[seed=0]", suite="s", op="RNNCell", version=0)),
                     result={"verdict": "pass"})
    return folder


def _with_config(reproducer: Path, folder: Path, config: dict) -> Path:
    folder.mkdir()
    for name in ("model.xml", "model.bin", "inputs.npz"):
        (folder / name).write_bytes((reproducer / name).read_bytes())
    record = json.loads((reproducer / "case.json").read_text())
    record["config"] = config
    (folder / "case.json").write_text(json.dumps(record))
    return folder


def test_case_json_keeps_only_properties_that_cannot_write_or_load(reproducer, sentinel):
    from irtool.reduce import load_origin

    hostile = {"CACHE_DIR": str(sentinel.outside / "cache"), "CONFIG_FILE": str(sentinel.outside / "c.json"),
               "DUMP_GRAPH_PATH": str(sentinel.outside), "GPU_CACHE_PATH": "x", "SOME_FUTURE_PROPERTY": "1",
               "NUM_STREAMS": "1", "INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY"}
    folder = _with_config(reproducer, sentinel.work / "edited", hostile)
    origin = load_origin(str(folder))
    assert origin.config == {"NUM_STREAMS": "1", "INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY"}
    dropped = sorted(note.split("config ", 1)[1].split(" ")[0] for note in origin.notes)
    assert dropped == ["CACHE_DIR", "CONFIG_FILE", "DUMP_GRAPH_PATH", "GPU_CACHE_PATH", "SOME_FUTURE_PROPERTY"]
    assert all("only properties that cannot write files or load code" in note for note in origin.notes)


def test_reduce_of_a_case_json_with_cache_dir_writes_nothing_there(reproducer, sentinel):
    folder = _with_config(reproducer, sentinel.work / "edited", {"CACHE_DIR": str(sentinel.outside / "cache")})
    done = subprocess.run([sys.executable, "-m", "irtool", "reduce", str(folder), "-o", str(sentinel.work / "out")],
                          capture_output=True, text=True, timeout=300)
    assert "note: " in done.stderr and "config CACHE_DIR dropped" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (sentinel.outside / "cache").exists()  # the sentinel check says the same, for the whole tree


# ----------------------------------------------------------------------------- [[files]] globs

def test_a_files_glob_over_symlink_cycles_ends_and_finds_each_file_once(sentinel, samples_dir):
    models = sentinel.work / "ir"
    (models / "sub").mkdir(parents=True)
    source = next((samples_dir / "valid").glob("*.xml"))
    for place in (models / "a.xml", models / "sub" / "b.xml"):
        place.write_bytes(source.read_bytes())
        if source.with_suffix(".bin").exists():
            place.with_suffix(".bin").write_bytes(source.with_suffix(".bin").read_bytes())
    (models / "loop1").symlink_to(".")
    (models / "loop2").symlink_to(".")
    (models / "sub" / "up").symlink_to("..")
    (models / ".hidden.xml").write_text("<net/>")
    suite = sentinel.work / "suite.toml"
    suite.write_text('[[files]]\nid = "ir"\npaths = ["ir/**/*.xml"]\n')
    done = python_child(f"from irtool.jobs.suite import load_suite\n"
                        f"print('\\n'.join(sorted(c.file for c in load_suite({str(suite)!r}).cases)))", timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(models / "a.xml"), str(models / "sub" / "b.xml")]


def test_a_glob_names_dot_files_only_when_it_spells_the_dot(sentinel):
    from irtool.jobs.suite import expand_glob

    (sentinel.work / ".h.xml").write_text("")
    (sentinel.work / "v.xml").write_text("")
    assert expand_glob(sentinel.work, "*.xml") == [sentinel.work / "v.xml"]
    assert expand_glob(sentinel.work, ".*.xml") == [sentinel.work / ".h.xml"]
    assert expand_glob(sentinel.root, str(sentinel.work / "v.xml")) == [sentinel.work / "v.xml"]


# ----------------------------------------------------------------------------- report merge

def test_merge_copies_only_regular_files_of_a_shards_reproducer(sentinel, capsys):
    shard = sentinel.work / "shard"
    (shard / "reproducers" / "job-1").mkdir(parents=True)
    repro = shard / "reproducers" / "job-1"
    (repro / "case.json").write_text("{}")
    # /dev/null's numbers: were it ever copied again, the copy ends at once (/dev/zero's would fill the disk)
    os.mknod(repro / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.mkfifo(repro / "pipe")
    (repro / "passwd").symlink_to("/etc/passwd")
    (repro / "deeper").mkdir()
    from irtool.harness.store import RunResults, write_json
    from irtool.jobs.records import CaseResult

    run = RunResults({"openvino_version": "2026.4.1", "suites": ["s.toml"], "devices": ["CPU"],
                      "precisions": ["f32"], "started": "2026-11-25T00:00:00+00:00",
                      "finished": "2026-11-25T00:00:01+00:00"},
                     [CaseResult("c", "s", "CPU", "f32", "fail", reproducer="reproducers/job-1")])
    write_json(shard / "results.json", run, {})
    out = sentinel.work / "merged"
    assert main(["report", "merge", str(shard), "-o", str(out)]) == 1  # the merged run holds a failure
    err = capsys.readouterr().err
    assert sorted(p.name for p in (out / "reproducers" / "job-1").iterdir()) == ["case.json"]
    for name, kind in (("null", "a character device"), ("pipe", "a named pipe (FIFO)"), ("passwd", "a symlink"),
                       ("deeper", "a directory")):
        assert f"{repro / name}: not copied ({kind}; only regular files are)" in err
    stored = json.loads((out / "results.json").read_text())["results"][0]
    assert stored["reproducer"] == "reproducers/job-1"


def test_merge_drops_a_reproducer_beyond_its_bounds(sentinel, capsys, monkeypatch):
    from irtool.harness import reports
    from irtool.harness.store import RunResults, write_json
    from irtool.jobs.records import CaseResult

    monkeypatch.setattr(reports, "REPRODUCER_FILES", 3)
    shard = sentinel.work / "shard"
    repro = shard / "reproducers" / "job-1"
    repro.mkdir(parents=True)
    for k in range(5):
        (repro / f"f{k}").write_text("x")
    run = RunResults({"openvino_version": "2026.4.1", "suites": ["s.toml"], "devices": ["CPU"], "precisions": ["f32"]},
                     [CaseResult("c", "s", "CPU", "f32", "fail", reproducer="reproducers/job-1")])
    write_json(shard / "results.json", run, {})
    out = sentinel.work / "merged"
    assert main(["report", "merge", str(shard), "-o", str(out)]) == 1  # the merged run holds a failure
    assert "not copied (5 files of 5 bytes; a reproducer is copied up to 3 files" in capsys.readouterr().err
    assert json.loads((out / "results.json").read_text())["results"][0]["reproducer"] is None
    assert not (out / "reproducers" / "job-1").exists()
