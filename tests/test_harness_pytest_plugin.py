"""The pytest plugin: a suite named on pytest's command line becomes one test per job, run by
pytest itself or spread by pytest-xdist.  Real pytest processes, real OpenVINO on CPU."""
from __future__ import annotations

import json

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hostile import full_folder

SUITE = """
[suite]
name = "plugin"
expected_failures = "xfail.toml"
[[grid]]
id = "gru"
op = "GRUSequence"
attributes = { hidden_size = 4, direction = "forward" }
seeds = [0, 1]
[[grid]]
id = "tight"
op = "LSTMSequence"
attributes = { hidden_size = 4, direction = "bidirectional" }
atol = 0.0
rtol = 0.0
[[grid]]
id = "known"
op = "RNNSequence"
attributes = { hidden_size = 4, direction = "reverse" }
atol = 0.0
rtol = 0.0
"""
XFAIL = '[[xfail]]\ncase = "known[*]"\nreason = "no tolerance at all"\n'


XDIST = ["-n", "1"]  # pytest-xdist's controller and a worker: what differs from one process, at one worker's cost


@pytest.fixture
def suite(tmp_path):
    (tmp_path / "suite.toml").write_text(SUITE)
    (tmp_path / "xfail.toml").write_text(XFAIL)
    (tmp_path / "other.toml").write_text("[tool.x]\n")  # a project's TOML file that is not a suite
    return tmp_path


def pytest_run(folder, *args: str, env=None) -> subprocess.CompletedProcess:
    # without hypothesis's plugin, which these sessions do not use: it costs 1.2 s of every pytest start;
    # and without assertion rewriting: these sessions hold no assert statement, yet pytest rewrites every
    # module of a plugin's distribution it imports (irtool's, 0.6 s of CPU a process where no bytecode is kept)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                           "--assert=plain", "-rs", *args],
                          cwd=folder, capture_output=True, text=True, timeout=300, env=env)


def harness_run(folder, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", "harness", "suite.toml", "--no-progress", *args],
                          cwd=folder, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("spread", [[], XDIST], ids=["in-process", "xdist"])
def test_a_suite_runs_as_tests(suite, spread):
    done = pytest_run(suite, "suite.toml", "--irtool-device", "CPU,GPU", "--irtool-precision", "f32", *spread)
    assert done.returncode == 1, done.stdout + done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert "1 failed, 2 passed, 4 skipped, 1 xfailed" in last, done.stdout
    assert "tight[seed=0] on CPU at f32" in done.stdout and "outside tolerance: Y" in done.stdout


@pytest.fixture(scope="module")
def gru_at_default(tmp_path_factory):
    """One session of the suite's two GRU jobs at --irtool-precision default (its folder and outcome),
    which tests asserting different things of a judged session share."""
    folder = tmp_path_factory.mktemp("gru-default")
    (folder / "suite.toml").write_text(SUITE)
    (folder / "xfail.toml").write_text(XFAIL)
    done = pytest_run(folder, "suite.toml", "--irtool-device", "CPU", "--irtool-precision", "default", "-k", "gru",
                      "--junitxml", "junit.xml")
    return folder, done


def test_precision_default_judges_what_the_device_chose(gru_at_default, cpu_default_precision):
    """--irtool-precision default: no hint; each job is judged at the precision the CPU picked (bf16
    with bf16, f32 without), which junit.xml records per test."""
    import lxml.etree as ET

    suite, done = gru_at_default
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr
    cases = ET.parse(str(suite / "junit.xml")).findall(".//testcase")
    assert len(cases) == 2 and all(case.get("name").endswith("-CPU-default]") for case in cases)
    for case in cases:
        values = {p.get("name"): p.get("value") for p in case.findall("properties/property")}
        assert values["irtool_effective_precision"] == f"{cpu_default_precision} on CPU"
        # what each result ran as, as JSON (junit.xml holds a property's value as text: not a Python repr)
        (ran,) = json.loads(values["irtool_ran"])
        assert ran["verdict"] == "pass" and ran["device"] == "CPU" and ran["op"].startswith("GRU")


def test_only_suites_named_on_the_command_line_are_collected(suite):
    done = pytest_run(suite, ".", "--collect-only")
    assert "suite.toml" not in done.stdout and done.returncode == 5  # no tests collected


def test_a_bad_suite_is_a_collection_error_naming_it(suite):
    (suite / "bad.toml").write_text("[[grid]]\nop = 'GRUFoo'\n")
    done = pytest_run(suite, "bad.toml")
    assert done.returncode == 2 and "bad.toml: [[grid]] 1: " in done.stdout


@pytest.mark.parametrize("spread", [[], XDIST], ids=["in-process", "xdist"])
def test_a_session_where_every_job_was_skipped_exits_3_not_0(suite, spread):
    """No GPU here: every job is skipped, nothing was checked, so the session must not pass.
    (On a machine with a GPU the jobs run; the exit code then follows their verdicts.)"""
    done = pytest_run(suite, "suite.toml", "--irtool-device", "GPU.7", *spread)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "irtool: ALL SKIPPED: 4 skip (suite jobs)" in done.stdout, done.stdout


def test_a_device_typo_is_a_collection_error_with_a_suggestion(suite):
    done = pytest_run(suite, "suite.toml", "--irtool-device", "CPU,GPUU")
    assert done.returncode != 0 and "'GPUU' is not a device OpenVINO knows (did you mean GPU?)" in done.stdout


def test_a_judged_session_says_passed(gru_at_default):
    _, done = gru_at_default
    assert done.returncode == 0, done.stdout + done.stderr
    assert "irtool: PASSED: 2 pass (suite jobs)" in done.stdout


def test_a_session_of_unjudged_jobs_is_not_a_pass(tmp_path):
    """An IR file that is no single RNN op runs (pytest passes its test), but nothing was judged.
    The model is onnx's own Relu graph converted by OpenVINO."""
    import onnx
    import openvino as ov
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(graph), str(tmp_path / "relu.onnx"))
    ov.save_model(ov.convert_model(str(tmp_path / "relu.onnx")), str(tmp_path / "relu.xml"))
    (tmp_path / "suite.toml").write_text('[[files]]\nid = "other"\npaths = ["relu.xml"]\n')
    done = pytest_run(tmp_path, "suite.toml")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "irtool: NOTHING JUDGED: 1 unjudged (suite jobs)" in done.stdout


MODELS = Path(__file__).resolve().parent.parent / "samples" / "models"


@pytest.mark.parametrize("spread", [[], XDIST], ids=["in-process", "xdist"])
def test_the_cpu_lengths_bug_is_a_failed_test_with_its_statistics_in_junit(tmp_path, spread):
    """gru_lengths.xml: the CPU ignores sequence_lengths, so Y is wrong at padded steps, where the
    expected value is 0 and max rel is inf.  Formatting that inf once made the run an INTERNALERROR
    (exit 3) in-process and a green run (exit 0, "1 warning") under xdist."""
    (tmp_path / "suite.toml").write_text(f'[[models]]\npath = "{MODELS / "gru_lengths.xml"}"\n')
    done = pytest_run(tmp_path, "suite.toml", "--junitxml", "junit.xml", *spread)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed" in done.stdout.strip().splitlines()[-1] and "INTERNALERROR" not in done.stdout
    assert "max rel inf" in done.stdout and "needed rtol inf" in done.stdout
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert (suite.get("failures"), suite.get("errors")) == ("1", "0")
    failure = suite.find("testcase/failure")
    assert "gru_lengths[seed=0]" in failure.get("message") and "outside tolerance: Y" in failure.text


@pytest.fixture
def one_gru(tmp_path):
    (tmp_path / "suite.toml").write_text('[suite]\nname = "one"\ntimeout = 8\n[[grid]]\nid = "gru"\n'
                                         'op = "GRUSequence"\nattributes = { hidden_size = 4, direction = "forward" }\n')
    return tmp_path


TROUBLE = ('[suite]\nname = "trouble"\ntimeout = 5\n'
           '[[grid]]\nid = "crash"\nop = "GRUSequence"\nattributes = { hidden_size = 4, direction = "forward" }\n'
           '[[grid]]\nid = "hang"\nop = "LSTMSequence"\nattributes = { hidden_size = 4, direction = "forward" }\n'
           '[[grid]]\nid = "known"\nop = "RNNSequence"\nattributes = { hidden_size = 4, direction = "forward" }\n')


@pytest.mark.parametrize("spread", [[], XDIST], ids=["in-process", "xdist"])
def test_a_crash_a_hang_and_a_known_failure_that_passes_each_get_their_outcome(tmp_path, spread):
    """One session: a worker that aborts and one that hangs fail their tests and the session goes
    on; a job the known failures name that passes is an xpass."""
    (tmp_path / "suite.toml").write_text(TROUBLE)
    (tmp_path / "known.toml").write_text('[[xfail]]\ncase = "known*"\nreason = "said to be broken"\n')
    done = pytest_run(tmp_path, "suite.toml", "--irtool-xfail", "known.toml", "--junitxml", "junit.xml", *spread,
                      env={**os.environ, "IRTOOL_FAULT": "abort:case=crash*;hang:case=hang*"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed, 1 xpassed" in done.stdout.strip().splitlines()[-1], done.stdout
    words = {"crash": "the worker died: SIGABRT (abort)", "hang": "ran past the timeout of 5 s"}
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite.get("failures") == "2"
    for case in suite.iter("testcase"):
        failure = case.find("failure")
        grid = next(g for g in ("crash", "hang", "known") if g in case.get("name"))
        assert (failure is not None) == (grid != "known")
        if failure is not None:
            assert words[grid] in failure.get("message") and words[grid] in done.stdout


def test_a_known_failure_that_passes_alone_is_a_passed_session(one_gru):
    (one_gru / "known.toml").write_text('[[xfail]]\ncase = "gru*"\nreason = "said to be broken"\n')
    done = pytest_run(one_gru, "suite.toml", "--irtool-xfail", "known.toml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 xpassed" in done.stdout.strip().splitlines()[-1]
    assert "irtool: PASSED: 1 xpass (suite jobs)" in done.stdout


def test_a_regression_against_a_baseline_fails_and_a_reproducer_is_written(one_gru):
    """The baseline is a harness run of the same suite; the plugin's run is slowed down (a compile
    of more than twice the time, by more than a second) for one job and breaks another."""
    harness = harness_run(one_gru, "--report-dir", "old")
    assert harness.returncode == 0, harness.stdout + harness.stderr
    done = pytest_run(one_gru, "suite.toml", "--irtool-baseline", "old", "--irtool-reproducers", "repro",
                      env={**os.environ, "IRTOOL_FAULT": "slow:2,case=gru*"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "against the baseline old:" in done.stdout and "REGRESSED: 1 slower" in done.stdout
    assert "gru[seed=0] on CPU at f32: compile " in done.stdout
    same = pytest_run(one_gru, "suite.toml", "--irtool-baseline", "old")
    assert same.returncode == 0, same.stdout + same.stderr
    (one_gru / "suite.toml").write_text((one_gru / "suite.toml").read_text() + "atol = 0.0\nrtol = 0.0\n")
    broken = pytest_run(one_gru, "suite.toml", "--irtool-reproducers", "repro")
    assert broken.returncode == 1
    folders = list((one_gru / "repro" / "reproducers").iterdir())
    assert len(folders) == 1 and (folders[0] / "reproduce.py").is_file()
    assert f"reproducer: repro/reproducers/{folders[0].name}" in broken.stdout


def test_a_baseline_that_cannot_be_read_is_a_collection_error(one_gru):
    done = pytest_run(one_gru, "suite.toml", "--irtool-baseline", "nowhere.json")
    assert done.returncode == 2 and "nowhere.json" in done.stdout


COVERED = ('[suite]\nname = "covered"\nexpect_coverage = {expect}\n[[grid]]\nid = "gru"\nop = "GRUSequence"\n'
           'attributes = {{ hidden_size = 4, direction = "forward" }}\nseeds = [0, 1]\n')


@pytest.fixture(scope="module")
def harness_of_covered(tmp_path_factory):
    """irtool harness's run of COVERED with an expect_coverage, once per expect_coverage (the xdist
    variant compares its pytest session with the same harness run)."""
    runs: dict[str, subprocess.CompletedProcess] = {}

    def run(expect: str) -> subprocess.CompletedProcess:
        if expect not in runs:
            folder = tmp_path_factory.mktemp("covered")
            (folder / "suite.toml").write_text(COVERED.format(expect=expect))
            runs[expect] = harness_run(folder, "--report-dir", "out")
        return runs[expect]
    return run


@pytest.mark.parametrize("expect, code, spread", [('["GRUSequence:TensorIterator"]', 0, []),
                                                  ('["TensorIterator", "GRUSequence:Loop"]', 1, []),
                                                  ('["TensorIterator", "GRUSequence:Loop"]', 1, XDIST)],
                         ids=["reached", "missed", "missed-xdist"])
def test_expect_coverage_is_held_as_the_harness_holds_it(tmp_path, harness_of_covered, expect, code, spread):
    """The same suite, the same exit code and COVERAGE line from pytest (in one process or spread
    over xdist workers, whose reports carry what each job ran as) and from irtool harness."""
    (tmp_path / "suite.toml").write_text(COVERED.format(expect=expect))
    done = pytest_run(tmp_path, "suite.toml", *spread)
    assert done.returncode == code, done.stdout + done.stderr
    harness = harness_of_covered(expect)
    assert harness.returncode == code, harness.stdout + harness.stderr
    said = [line for line in harness.stdout.splitlines() if line.startswith("COVERAGE: ")]
    assert said == ([] if code == 0 else ["COVERAGE: no job of GRUSequence ran as Loop"])
    assert [line for line in done.stdout.splitlines() if line.startswith("COVERAGE: ")] == said
    assert f"irtool: {'PASSED' if code == 0 else 'FAILED'}: 2 pass (suite jobs)" in done.stdout


def test_an_expect_coverage_naming_an_op_the_suite_lacks_is_a_collection_error(tmp_path):
    (tmp_path / "suite.toml").write_text(COVERED.format(expect='["LSTMSequence:RNNSeq"]'))
    done = pytest_run(tmp_path, "suite.toml")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no case of LSTMSequence in the suites; expect_coverage can name GRUSequence" in done.stdout


@pytest.mark.parametrize("option, code, said", [
    ("GRUSequence:TensorIterator", 0, []),
    ("GRUSequence:Loop,TensorIterator", 1, ["COVERAGE: no job of GRUSequence ran as Loop"]),
])
def test_irtool_expect_coverage_holds_the_session_as_harness_expect_coverage_does(tmp_path, option, code, said):
    (tmp_path / "suite.toml").write_text(COVERED.format(expect="[]"))
    done = pytest_run(tmp_path, "suite.toml", "--irtool-expect-coverage", option)
    assert done.returncode == code, done.stdout + done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("COVERAGE: ")] == said
    harness = harness_run(tmp_path, "--report-dir", "out", "--expect-coverage", option)
    assert harness.returncode == code and [line for line in harness.stdout.splitlines()
                                           if line.startswith("COVERAGE: ")] == said


def test_a_misspelt_irtool_expect_coverage_is_a_usage_error_before_anything_runs(tmp_path):
    (tmp_path / "suite.toml").write_text(COVERED.format(expect="[]"))
    done = pytest_run(tmp_path, "suite.toml", "--irtool-expect-coverage", "GRUSequence:RNNseq")
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's exit code for a usage error
    assert "--irtool-expect-coverage: 'GRUSequence:RNNseq': RNNseq: did you mean RNNSeq?" in done.stderr
    assert "passed" not in done.stdout


TIGHT = ('[suite]\nname = "tight"\n[[grid]]\nid = "gru"\nop = "GRUSequence"\natol = 0.0\nrtol = 0.0\n'
         'attributes = { hidden_size = 4, direction = ["forward", "reverse"] }\n')


@pytest.mark.parametrize("how, spread", [("a file", []), ("a file", XDIST), ("full disk", [])],
                         ids=["a file", "a file-xdist", "full disk"])
def test_reproducers_that_cannot_be_written_are_said(tmp_path, monkeypatch, how, spread):
    """As run and the harness print NOT WRITTEN beside the verdict, so does the plugin: in the test's
    failure and after pytest's summary (it said nothing of them)."""
    (tmp_path / "suite.toml").write_text(TIGHT)
    (tmp_path / "rep").mkdir()
    if how == "a file":
        (tmp_path / "rep" / "reproducers").write_text("a file where the folder belongs\n")
        done = pytest_run(tmp_path, "suite.toml", "--irtool-reproducers", "rep", *spread)
        why = "rep/reproducers is a file, not a folder"
    else:
        with full_folder(tmp_path / "rep" / "reproducers", monkeypatch):
            done = pytest_run(tmp_path, "suite.toml", "--irtool-reproducers", "rep", *spread)
        why = "no space left on device"
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 failed" in done.stdout.strip().splitlines()[-1]
    for direction in ("forward", "reverse"):
        job = f"gru[direction={direction},seed=0] on CPU at f32"
        assert re.search(rf"^  NOT WRITTEN: rep/reproducers/\S+: the reproducer could not be written \({why}\)$",
                         done.stdout, re.MULTILINE), done.stdout
        assert re.search(rf"^NOT WRITTEN: {re.escape(job)}: rep/reproducers/\S+: the reproducer could not be written "
                         rf"\({why}\)$", done.stdout, re.MULTILINE), done.stdout


def test_junit_names_each_test_by_its_pytest_id(tmp_path):
    """A test's id is pytest's form for a parametrized test, its parameters in one bracket group at the
    end, and junit.xml's name is that id (CI tools read ``name[params]``; text after the brackets
    came out as ``gru[direction=forward,seed=0] on CPU at f32]``)."""
    (tmp_path / "suite.toml").write_text(TIGHT.replace("atol = 0.0\nrtol = 0.0\n", ""))
    # -rA: pytest's summary names each test by its id (as --collect-only lists them), in the order run
    done = pytest_run(tmp_path, "suite.toml", "--irtool-device", "CPU,AUTO:CPU", "--junitxml", "junit.xml", "-rA")
    assert done.returncode == 0, done.stdout + done.stderr
    ids = [line.split("::", 1)[1] for line in done.stdout.splitlines() if line.startswith("PASSED suite.toml::")]
    assert ids == ["gru[direction=forward,seed=0-CPU-f32]", "gru[direction=forward,seed=0-AUTO:CPU-f32]",
                   "gru[direction=reverse,seed=0-CPU-f32]", "gru[direction=reverse,seed=0-AUTO:CPU-f32]"], ids
    names = [case.get("name") for case in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")]
    assert names == ids
