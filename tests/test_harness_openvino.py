"""Runs under several OpenVINO releases, and what each job ran: a real older release in its own
environment beside the installed one, the implementation each node became on this CPU, and
the baseline diff catching a changed implementation and an injected slowdown.

The older release is the one conftest.older_openvino installs (once per test run)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import lxml.etree as ET
import lxml.html
import openvino
import pytest
from conftest import OLDER_OPENVINO as OLDER

CURRENT = openvino.get_version().split("-")[0]
GRU = """
[suite]
name = "gru"
timeout = 120

[[grid]]
id = "gru-seq"
op = "GRUSequence-5"
attributes = {{ hidden_size = 8, direction = ["forward", "bidirectional"] }}
sizes = {{ batch_size = 3, seq_length = 5, input_size = 6 }}
{extra}
"""


def irtool(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *args], capture_output=True, text=True, timeout=600,
                          env=env)


def suite(folder: Path, text: str, name: str = "suite.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def two_releases(older_openvino, openvino_cache, tmp_path_factory):
    """One op of the smoke suite on CPU f32 under the older release and the installed one."""
    env, _ = older_openvino
    assert env.usable, env.problem
    folder = tmp_path_factory.mktemp("releases")
    done = irtool("harness", str(suite(folder, GRU.format(extra=""))), "-d", "CPU", "--precision", "f32",
                  "--openvino", f"{OLDER},current", "--openvino-cache", str(openvino_cache),
                  "--report-dir", str(folder / "out"), "--no-progress", "--time-floor", "30")
    # (the time floor: a loaded test machine makes compiles seconds slower at random; the slowdown
    # rule is tested below with an injected one)
    return done, folder / "out"


def test_each_result_carries_the_release_that_produced_it(two_releases):
    done, out = two_releases
    assert done.returncode == 0, done.stdout + done.stderr
    assert "making an environment" not in done.stderr  # the fixture made it: this run reused it
    results = json.loads((out / "results.json").read_text())
    releases = {(r["openvino"], r["openvino_version"].split("-")[0]) for r in results["results"]}
    assert releases == {(OLDER, OLDER), (CURRENT, CURRENT)}
    assert set(results["openvino_releases"]) == {OLDER, CURRENT}
    assert results["openvino_releases"][CURRENT]["release"] == "current"
    by_release = {}
    for r in results["results"]:
        by_release.setdefault(r["openvino"], set()).add(r["case"])
    assert by_release[OLDER] == by_release[CURRENT] and len(by_release[OLDER]) == 2
    assert all(r["verdict"] == "pass" and r["implementations"] for r in results["results"])
    assert f"CPU f32 openvino {OLDER}" in done.stdout and f"openvino {OLDER} -> {CURRENT}:" in done.stdout
    [diff] = results["openvino_diffs"]
    assert (diff["older"], diff["newer"]) == (OLDER, CURRENT) and diff["regressed"] is False


def test_the_reports_show_the_releases_side_by_side(two_releases):
    _, out = two_releases
    page = lxml.html.parse(str(out / "report.html"))
    head = [th.text_content() for th in page.xpath("//table[@class='passrate']//th")]
    assert head == ["op", f"CPU f32 openvino {OLDER}", f"CPU f32 openvino {CURRENT}"]
    assert page.xpath("//h3[contains(., 'OpenVINO') and contains(., '→')]")
    suites = ET.parse(str(out / "junit.xml")).getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == [f"CPU f32 openvino {OLDER}", f"CPU f32 openvino {CURRENT}",
                                               f"openvino {OLDER} -> {CURRENT}"]
    assert all(int(s.get("tests")) == 2 for s in suites[:2])
    versions = [{p.get("name"): p.get("value") for p in s.iter("property")}["openvino_version"] for s in suites[:2]]
    assert [v.split("-")[0] for v in versions] == [OLDER, CURRENT]  # each its own release's
    [nothing] = suites[2].findall("testcase")  # no regression: one passing testcase says so
    assert nothing.get("name") == "no regression" and suites[2].get("failures") == "0"


def test_report_diff_compares_two_releases_of_one_run(two_releases):
    _, out = two_releases
    done = irtool("report", "diff", str(out), str(out), "--openvino-map", f"{OLDER}={CURRENT}", "--format", "json",
                  "--time-floor", "30")
    assert done.returncode == 0, done.stderr
    diff = json.loads(done.stdout)
    assert not diff["added"] and not diff["removed"] and diff["regressed"] is False
    done = irtool("report", "diff", str(out), str(out), "--openvino-map", f"2024.0={CURRENT}")
    assert done.returncode == 2 and "holds no results of openvino 2024.0" in done.stderr


def test_a_release_that_cannot_be_installed_is_a_skip_with_pips_reason(openvino_cache, tmp_path):
    done = irtool("harness", str(suite(tmp_path, GRU.format(extra=""))), "--openvino", "2099.1,current",
                  "--openvino-cache", str(openvino_cache), "--report-dir", str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr  # the current release judged its jobs
    run = json.loads((tmp_path / "out" / "results.json").read_text())
    skipped = [r for r in run["results"] if r["verdict"] == "skip"]
    assert len(skipped) == 2 and all(r["openvino"] == "2099.1.0" for r in skipped)  # as pip matches it
    assert "No matching distribution found for openvino==2099.1.0 (pip offers 20" in skipped[0]["message"]
    assert "skipped 2: CPU f32 openvino 2099.1.0: openvino 2099.1.0 cannot run here: " in done.stdout
    assert not run.get("openvino_diffs") and "->" not in done.stdout  # a release that ran nothing is not compared


def test_an_existing_environment_runs_the_jobs_and_is_recorded_with_its_exact_version(tmp_path):
    """--openvino env:PATH (this test venv's prefix): its workers run the jobs; the results name it by
    its distribution's version, and the run's metadata says what was asked and what openvino it is."""
    from importlib import metadata

    done = irtool("harness", str(suite(tmp_path, GRU.format(extra=""))), "--openvino", f"env:{sys.prefix}",
                  "--openvino-cache", str(tmp_path / "cache"), "--report-dir", str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    run = json.loads((tmp_path / "out" / "results.json").read_text())
    label = metadata.version("openvino")
    assert {r["openvino"] for r in run["results"]} == {label} and all(r["verdict"] == "pass" for r in run["results"])
    assert {r["openvino_version"] for r in run["results"]} == {openvino.get_version()}
    assert run["openvino_releases"][label] == {"release": f"env:{Path(sys.prefix).absolute()}",
                                                       "openvino_version": openvino.get_version(),
                                                       "distribution": label, "problem": None}
    assert f"  openvino {label}: {openvino.get_version()} (environment {Path(sys.prefix).absolute()})" \
        in done.stdout.splitlines()[:4]
    assert not (tmp_path / "cache").exists()


# ----------------------------------------------------------------------------- what ran


@pytest.fixture(scope="module")
def static_run(tmp_path_factory):
    """The baseline: GRUSequence with a static time axis (this CPU decomposes it)."""
    folder = tmp_path_factory.mktemp("static")
    done = irtool("harness", str(suite(folder, GRU.format(extra=""))), "--report-dir", str(folder / "out"),
                  "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "out"


def test_static_and_dynamic_sequences_run_as_different_implementations_and_expect_impl_fails(static_run,
                                                                                             tmp_path):
    """Measured on this CPU (tests/test_runtime_what_ran.py): with Const weights, a static time axis
    runs as a decomposed TensorIterator, a dynamic one as RNNSeq (which also gives wrong numbers
    with openvino 2026.4.1: full.xfail.toml's known bug); the same case id (dynamic is not a listed axis) in two
    runs makes a baseline diff flag the change of implementation, and expect_impl fails the job
    whose implementation is not the one the suite expects."""
    dynamic = suite(tmp_path, GRU.format(extra='dynamic = ["seq_length"]\nexpect_impl = "TensorIterator"'))
    done = irtool("harness", str(dynamic), "--report-dir", str(tmp_path / "out"), "--baseline", str(static_run),
                  "--no-progress", "--format", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    forward = "gru-seq[direction=forward,seed=0]"
    [changed] = [c for c in summary["baseline"]["implementation"] if c["case"] == forward]
    assert changed["what"] == ["GRUSequence: TensorIterator (f32; decomposed) -> RNNSeq (f32)"]
    old = json.loads((static_run / "results.json").read_text())["results"]
    assert [r["implementations"] for r in old if r["case"] == forward] == [
        {"GRUSequence": "TensorIterator (f32; decomposed)"}]
    [problem] = [p for p in summary["problems"] if p["name"] == f"{forward} on CPU at f32"]
    assert problem["verdict"] == "fail"
    assert "expected the implementation 'TensorIterator', node GRUSequence ran as RNNSeq (f32)" in problem["message"]


def test_an_injected_slowdown_is_caught_by_the_baseline_diff(static_run, tmp_path):
    env = {**__import__("os").environ, "IRTOOL_FAULT": "slow:4,direction=forward"}
    done = irtool("harness", str(suite(tmp_path, GRU.format(extra=""))), "--report-dir", str(tmp_path / "out"),
                  "--baseline", str(static_run), "--no-progress", "--time-floor", "2", env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "slower (compile or first inference more than 2x, by more than 2 s) (1):" in done.stdout
    assert "gru-seq[direction=forward,seed=0] on CPU at f32: compile" in done.stdout
    assert "REGRESSED: 1 slower" in done.stdout
    # every job still passed: the slowdown is the only regression
    assert json.loads((tmp_path / "out" / "results.json").read_text())["summary"] == {"pass": 2}
    done = irtool("report", "diff", str(static_run), str(tmp_path / "out"), "--time-floor", "10")
    assert done.returncode == 0, done.stdout  # under a 10 s floor, 4 s more is not a regression


# ----------------------------------------------------------------------------- whole models across releases


@pytest.fixture(scope="module")
def models_across_releases(older_openvino, openvino_cache, tmp_path_factory):
    """[[models]] under the older release and the installed one: a converted two-node model, and a
    model the older release cannot read (an op of an opset it does not have); the installed
    release's compiles of the two-node model slowed by an injected fault."""
    from real_models import newest_opset_model

    env, _ = older_openvino
    assert env.usable, env.problem
    folder = tmp_path_factory.mktemp("models-releases")
    newest = newest_opset_model(folder)
    lstm2 = Path(__file__).resolve().parent.parent / "samples" / "models" / "lstm2_bidirectional.xml"
    text = (f'[suite]\nname = "m"\ntimeout = 120\n\n[[models]]\nid = "lstm2"\npath = "{lstm2}"\n\n'
            f'[[models]]\nid = "newest"\npath = "{newest}"\n')
    env_vars = {**__import__("os").environ, "IRTOOL_FAULT": f"slow:3,case=lstm2*,openvino={CURRENT}"}
    done = irtool("harness", str(suite(folder, text)), "-d", "CPU", "--precision", "f32", "--openvino",
                  f"{OLDER},current", "--openvino-cache", str(openvino_cache), "--report-dir", str(folder / "out"),
                  "--no-progress", "--time-floor", "1.5", "--format", "json", env=env_vars)
    return done, json.loads((folder / "out" / "results.json").read_text()), folder / "out"


def test_an_op_an_older_release_lacks_is_a_skip_with_the_reason(models_across_releases):
    done, results, _ = models_across_releases
    newest = {r["openvino"]: r for r in results["results"] if r["case"].startswith("newest")}
    old = newest[OLDER]
    assert old["verdict"] == "skip", old
    assert ("cannot read it: layer 'erfinv'" in old["message"] and "is ErfInv of opset17, an opset this release "
            f"does not have; openvino {CURRENT} has it" in old["message"]), old["message"]
    assert newest[CURRENT]["verdict"] == "pass" and "::" in newest[CURRENT]["case"]  # its node, judged


def test_the_release_diff_pairs_node_results_and_flags_the_slower_release(models_across_releases):
    """Each node of the two-node model is a result per release, paired by CASE::NODE: the slowed
    compiles of the installed release are the only regression; the unreadable model's node says
    skip -> pass."""
    done, results, out = models_across_releases
    assert done.returncode == 1, done.stdout + done.stderr
    nodes = {}
    for r in results["results"]:
        if r["case"].startswith("lstm2"):
            nodes.setdefault(r["openvino"], set()).add(r["case"])
    assert nodes[OLDER] == nodes[CURRENT] and len(nodes[OLDER]) == 2 and all("::" in c for c in nodes[OLDER])
    [diff] = results["openvino_diffs"]
    assert diff["regressed"] is True and not diff["added"] and not diff["removed"]
    assert sorted(c["case"] for c in diff["slower"]) == sorted(nodes[CURRENT])
    assert all(c["what"][0].startswith("compile") for c in diff["slower"])
    assert not diff["new_failures"] and not diff["implementation"] and not diff["drift"]
    [changed] = diff["changed"]
    assert changed["case"].startswith("newest[seed=0]::") and (changed["old"], changed["new"]) == ("skip", "pass")
    # a CI reading junit.xml fails too: a failing testcase per regressed node
    suite = next(s for s in ET.parse(str(out / "junit.xml")).getroot().findall("testsuite")
                 if s.get("name") == f"openvino {OLDER} -> {CURRENT}")
    assert suite.get("failures") == "2" and {c.get("name") for c in suite.findall("testcase")} == {
        f"{case} on CPU at f32 on openvino {CURRENT}" for case in nodes[CURRENT]}


def test_each_release_decides_its_own_devices(older_openvino, openvino_cache, tmp_path):
    """The skip reason of a device comes from each release's own openvino (the older one is asked
    in its environment): where GPU is absent, each release says why in its own words."""
    from irtool.jobs.environments import device_report
    from irtool.runtime.devices import list_devices, skip_reason

    env, _ = older_openvino
    done = irtool("harness", str(suite(tmp_path, GRU.format(extra=""))), "-d", "GPU", "--precision", "f32",
                  "--openvino", f"{OLDER},current", "--openvino-cache", str(openvino_cache), "--report-dir",
                  str(tmp_path / "out"), "--no-progress")
    results = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    reports = {OLDER: device_report(env)[0], CURRENT: list_devices()}
    for release, report in reports.items():
        mine = [r for r in results if r["openvino"] == release]
        reason = skip_reason("GPU", "f32", report)
        if reason is None:  # a GPU here: the jobs ran
            assert all(r["verdict"] != "skip" for r in mine)
        else:
            assert {r["message"] for r in mine} == {f"openvino {release}: {reason}"}
    if all(skip_reason("GPU", "f32", report) for report in reports.values()):
        assert done.returncode == 3, done.stdout + done.stderr  # nothing judged anywhere


def test_older_api_is_handled_and_a_release_too_old_is_skipped_with_the_reason(openvino_cache, tmp_path):
    """Releases before 2025 keep the opset modules under openvino.runtime (irtool builds through
    them there: 2024.6.0 runs and passes); before 2024.1 they have no symbolic shapes, which
    irtool sizes inputs with: 2023.3.0's jobs are skipped saying so, never an irtool error."""
    done = irtool("harness", str(suite(tmp_path, GRU.format(extra=""))), "-d", "CPU", "--precision", "f32",
                  "--openvino", "2023.3.0,2024.6.0", "--openvino-cache", str(openvino_cache), "--report-dir",
                  str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    verdicts = {(r["openvino"], r["verdict"]) for r in results}
    assert verdicts == {("2023.3.0", "skip"), ("2024.6.0", "pass")}, [r["message"] for r in results]
    assert {r["message"] for r in results if r["openvino"] == "2023.3.0"} == {
        "openvino 2023.3.0 has no symbolic shapes (openvino.Symbol, from openvino 2024.1 on), which "
        "irtool sizes a model's inputs with"}


def test_a_release_whose_cpu_refuses_a_model_says_why(openvino_cache, tmp_path):
    """openvino 2024.6.0's ONNX frontend keeps an LSTM's peepholes as an 8th input, which its CPU
    plugin refuses; 2026.4.1's drops them and runs (with the wrong numbers onnx.xfail.toml lists).
    The error is the compile's own reason, with query_model's list only as a note."""
    model = tmp_path / "peep.onnx"
    built = irtool("build", "onnx-lstm", "--opset", "14", "--hidden-size", "4", "--optional-inputs", "B,P", "-o",
                   str(model))
    assert built.returncode == 0, built.stderr
    done = irtool("run", str(model), "-d", "CPU", "--openvino", "2024.6.0,current", "--openvino-cache",
                  str(openvino_cache), "--format", "json")
    assert done.returncode == 1, done.stdout + done.stderr  # the current release fails it: a wrong result
    releases = json.loads(done.stdout)["releases"]
    old = releases["2024.6.0"]
    assert old["verdict"] == "error" and old["stopped"].startswith("CPU cannot compile peep.onnx: Unsupported "
                                                                  "operation of type: LSTMSequence")
    assert "Node expects 7 inputs. Actual: 8" in old["stopped"] and "; query_model: CPU does not support" in \
        old["stopped"]
    assert releases[CURRENT]["verdict"] == "fail"


def test_a_release_whose_workers_cannot_start_is_asked_in_its_environment_instead(older_openvino, tmp_path):
    """The harness asks each release's workers what devices its openvino offers; where they cannot
    start, it asks the release's environment as before (which says why, or what it sees): never the
    pool's error for the whole run."""
    import os

    from irtool.harness.session import _devices
    from irtool.jobs.pool import Pool, PoolError
    from irtool.jobs.worker import RunnerOptions

    env, _ = older_openvino
    (tmp_path / "openvino").mkdir()  # shadows the release's openvino in the workers: they cannot start
    (tmp_path / "openvino" / "__init__.py").write_text("raise ImportError('a broken openvino')\n")
    broken = Pool(1, 60, RunnerOptions(), {**os.environ, "PYTHONPATH": str(tmp_path)}, env.python)
    try:
        with pytest.raises(PoolError, match="a broken openvino"):
            broken.devices()
        report, problem = _devices(OLDER, env, {OLDER: broken}, {})
    finally:
        broken.close()
    assert problem is None and report.openvino == env.openvino_version and "CPU" in report.names
