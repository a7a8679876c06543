"""``irtool harness`` end to end on real OpenVINO: the smoke suite across CPU-backed devices and
an absent GPU, known failures, compiled-model reuse, and usage errors."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import lxml.etree as ET
import lxml.html
import pytest

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "samples" / "suites" / "smoke.toml"
CPU_BACKED = ("CPU", "AUTO:CPU", "HETERO:CPU")


def irtool(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *args], capture_output=True, text=True, timeout=600,
                          **kwargs)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    """The README's command, as it is (tests/test_docs_commands.py leaves it to this test)."""
    command = ["harness", "samples/suites/smoke.toml", "-d", "CPU,AUTO:CPU,HETERO:CPU,GPU", "--precision", "f32,bf16",
               "--report-dir", "irtool-report"]
    assert f"&& irtool {' '.join(command)}\n" in (ROOT / "README.md").read_text()  # the set-up line's end
    out = tmp_path_factory.mktemp("smoke") / "out"
    done = irtool(*command[:-2], "--report-dir", str(out), cwd=ROOT)
    return done, out, json.loads((out / "results.json").read_text())


def test_smoke_passes_every_cpu_backed_case_and_skips_gpu(smoke, cpu_precisions):
    """Every CPU-backed job passes; at bf16 on a CPU without bf16 each is skipped with that reason."""
    done, _, results = smoke
    assert done.returncode == 0, done.stdout + done.stderr
    cases = {r["case"] for r in results["results"]}
    for result in results["results"]:
        if result["device"] in CPU_BACKED and result["precision"] not in cpu_precisions:
            assert result["verdict"] == "skip" and "CPU does not support bf16" in result["message"], result
        elif result["device"] in CPU_BACKED:
            assert result["verdict"] in ("pass", "unjudged"), result
        else:
            assert result["verdict"] == "skip" and "GPU" in result["message"], result
    assert len(results["results"]) == len(cases) * 4 * 2
    assert "PASSED in " in done.stdout and "skipped" in done.stdout


def test_bf16_really_ran_at_bf16(smoke, cpu_precisions):
    _, _, results = smoke
    for device in CPU_BACKED:
        ran = {r["precision"]: r for r in results["results"] if r["device"] == device and r["case"].startswith("lstm-seq")}
        if "bf16" not in cpu_precisions:  # nothing ran at f32 under the name bf16
            assert ran["bf16"]["verdict"] == "skip" and not ran["bf16"]["effective_precision"]
            continue
        assert set(ran["bf16"]["effective_precision"].values()) == {"bf16"}
        assert set(ran["f32"]["effective_precision"].values()) == {"f32"}
        assert ran["bf16"]["max_abs"] > 100 * ran["f32"]["max_abs"]


def test_smoke_writes_the_three_reports(smoke):
    _, out, results = smoke
    assert results["format"] == "irtool-results/1" and results["partial"] is False
    assert results["openvino_version"].startswith("20") and results["host"]["name"]
    junit = ET.parse(str(out / "junit.xml")).getroot()
    suites = {s.get("name"): s for s in junit.iter("testsuite")}
    assert suites["GPU f32"].get("skipped") == suites["GPU f32"].get("tests") != "0"
    assert suites["CPU bf16"].get("failures") == "0" and suites["CPU bf16"].get("errors") == "0"
    page = lxml.html.parse(str(out / "report.html")).getroot()
    text = page.text_content()
    assert "GRUSequence-5" in text and "HETERO:CPU bf16" in text


def test_the_summary_table_counts_each_device_and_precision(smoke):
    done, _, _ = smoke
    lines = done.stdout.splitlines()
    row = next(line for line in lines if line.strip().startswith("GPU bf16"))
    assert row.split()[-1] != "0"  # the skip column
    assert any(line.strip().startswith("HETERO:CPU f32") for line in lines)


SEEDS = """
[[grid]]
id = "gru"
op = "GRUSequence"
attributes = { hidden_size = 4, direction = "forward" }
seeds = [0, 1, 2]
[[grid]]
id = "tight"
op = "LSTMSequence"
attributes = { hidden_size = 4, direction = "bidirectional" }
atol = 0.0
rtol = 0.0
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    folder = tmp_path_factory.mktemp("small")
    (folder / "suite.toml").write_text(SEEDS)
    return folder


def test_one_model_is_compiled_once_for_all_its_seeds(small):
    done = irtool("harness", str(small / "suite.toml"), "--report-dir", str(small / "reuse"), "--precision", "f32")
    results = json.loads((small / "reuse" / "results.json").read_text())["results"]
    gru = [r for r in results if r["case"].startswith("gru[")]
    assert [r["compile_time"] > 0 for r in gru] == [True, False, False], done.stdout
    assert len({r["outputs"][0]["worst_expected"] for r in gru}) == 3  # three different inputs


def test_a_known_failure_is_xfail_and_exits_0(small):
    xfail = small / "xfail.toml"
    xfail.write_text('[[xfail]]\ncase = "tight[*]"\nprecision = "f32"\nreason = "no tolerance at all"\n'
                     '[[xfail]]\ncase = "gru[seed=2]"\nreason = "flaky once"\n')
    done = irtool("harness", str(small / "suite.toml"), "--report-dir", str(small / "xf"), "--precision", "f32",
                  "--xfail", str(xfail))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "XPASS: gru[seed=2] on CPU at f32: known to fail (flaky once) but passed" in done.stdout
    verdicts = {r["case"]: r["verdict"] for r in json.loads((small / "xf" / "results.json").read_text())["results"]}
    assert verdicts == {"gru[seed=0]": "pass", "gru[seed=1]": "pass", "gru[seed=2]": "xpass", "tight[seed=0]": "xfail"}


def test_a_known_failure_that_matches_no_job_is_a_note_naming_it_and_its_file(small):
    xfail = small / "unmatched.xfail.toml"
    xfail.write_text('[[xfail]]\ncase = "tight[*]"\nreason = "no tolerance at all"\n'
                     '[[xfail]]\ncase = "gru-dynn[*]"\nreason = "a typo"\n'
                     '[[xfail]]\ncase = "gru[*]"\ndevice = "GPU"\nreason = "not run now"\n')
    notes = [f"known failure 'gru-dynn[*]' ({xfail}) matched no job of this run",
             f"known failure 'gru[*]' (device GPU) ({xfail}) matched no job of this run"]
    done = irtool("harness", str(small / "suite.toml"), "--report-dir", str(small / "unmatched"), "--precision",
                  "f32", "--xfail", str(xfail), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr  # a note, not an error
    assert [line for line in done.stdout.splitlines() if "matched no job" in line] == [f"note: {n}" for n in notes]
    done = irtool("harness", str(small / "suite.toml"), "--report-dir", str(small / "unmatched"), "--precision",
                  "f32", "--xfail", str(xfail), "--format", "json", "--force")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [note for note in json.loads(done.stdout)["notes"] if "matched no job" in note] == notes


def test_precision_default_runs_without_a_hint_and_records_what_the_device_chose(small, cpu_default_precision):
    """--precision default,f32: the default jobs compile without INFERENCE_PRECISION_HINT; each result
    records the precision the CPU picked (bf16 with bf16, f32 without) and is judged with its tolerance;
    the summary shows it beside "default"."""
    done = irtool("harness", str(small / "suite.toml"), "--report-dir", str(small / "default"), "-d", "CPU",
                  "--precision", "default,f32")
    results = json.loads((small / "default" / "results.json").read_text())["results"]
    default = [r for r in results if r["precision"] == "default" and r["case"].startswith("gru[")]
    assert len(default) == 3 and all(r["verdict"] == "pass" for r in default), done.stdout + done.stderr
    assert all(r["effective_precision"] == {"CPU": cpu_default_precision} for r in default)
    # at f32 the precision's default; at bf16 the bound of the path the precision model knows it ran
    assert all(o["tolerance_source"] == f"{cpu_default_precision} default" or
               cpu_default_precision != "f32" and o["tolerance_source"].startswith("derived: ")
               for r in default for o in r["outputs"])
    assert any(line.split()[:3] == ["CPU", "default", f"({cpu_default_precision})"] for line in done.stdout.splitlines())


def test_a_failure_exits_1_with_a_reproducer(small):
    done = irtool("harness", str(small / "suite.toml"), "--report-dir", str(small / "fail"), "--precision", "f32")
    assert done.returncode == 1
    line = next(line for line in done.stdout.splitlines() if line.startswith("FAIL: tight[seed=0] on CPU at f32"))
    assert "outside tolerance: Y (max abs" in line
    folder = Path(line.rsplit("[", 1)[1].rstrip("]"))
    replay = subprocess.run([sys.executable, "reproduce.py"], cwd=folder, capture_output=True, text=True, timeout=120)
    assert replay.returncode == 1 and "Y" in replay.stdout


@pytest.mark.parametrize("args, message", [
    (["-j", "0"], "-j 0: expected at least 1 worker"),
    (["--precision", "f8"], "--precision f8: expected one of"),
    (["--shard", "3/2"], "--shard 3/2: expected K/N"),
    (["--timeout", "0"], "--timeout: 0.0; expected a number of seconds > 0"),
    (["--config", "INFERENCE_PRECISION_HINT=f32"], "with --precision"),
    (["--config", "FOO=1"], "--config FOO=1: CPU refuses it (CPU cannot compile a probe model: "),
])
def test_usage_errors_exit_2_with_one_line(small, args, message):
    done = irtool("harness", str(small / "suite.toml"), "--report-dir", str(small / "usage"), *args)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert not (small / "usage").exists()  # refused before anything is made


def test_a_bad_suite_exits_2_naming_it(tmp_path):
    (tmp_path / "bad.toml").write_text("[[grid]]\nop = 'GRUSequence'\n")
    done = irtool("harness", str(tmp_path / "bad.toml"), "--report-dir", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(f"irtool: error: {tmp_path / 'bad.toml'}: case")


def test_a_case_made_to_fail_is_a_regression_against_the_baseline(tmp_path):
    """Two runs of one suite; in the second, one case's tolerance is cut to nothing."""
    for name, tolerance in (("old", ""), ("new", "atol = 0.0\nrtol = 0.0\n")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "suite.toml").write_text(SEEDS.replace("atol = 0.0\nrtol = 0.0\n", tolerance))
    old = irtool("harness", str(tmp_path / "old" / "suite.toml"), "--report-dir", str(tmp_path / "old" / "out"))
    assert old.returncode == 0, old.stdout + old.stderr
    new = irtool("harness", str(tmp_path / "new" / "suite.toml"), "--report-dir", str(tmp_path / "new" / "out"),
                 "--baseline", str(tmp_path / "old" / "out"))
    assert new.returncode == 1
    assert "new failures (1):" in new.stdout and "tight[seed=0] on CPU at f32" in new.stdout
    assert "REGRESSED: 1 new failures" in new.stdout
    # said once on stdout (in the diff, with its reproducer), not in a list of problems besides
    assert new.stdout.count("tight[seed=0] on CPU at f32") == 1, new.stdout
    line = next(line for line in new.stdout.splitlines() if "tight[seed=0] on CPU at f32" in line)
    assert "tolerance changed: atol " in line and "-> atol 0 rtol 0" in line and "reproducers" in line
    diff = irtool("report", "diff", str(tmp_path / "old" / "out"), str(tmp_path / "new" / "out" / "results.json"))
    assert diff.returncode == 1 and "tight[seed=0] on CPU at f32" in diff.stdout
    same = irtool("report", "diff", str(tmp_path / "old" / "out"), str(tmp_path / "old" / "out"))
    assert same.returncode == 0 and same.stdout.strip().endswith("(0 fixed)")


def test_the_header_comes_first_and_the_summary_says_how_long(small):
    """The header before any job; the verdict line last, with the run's duration (tight fails at f32)."""
    done = irtool("harness", str(small / "suite.toml"), "--report-dir", str(small / "head"), "-d", "CPU,GPU.7",
                  "--precision", "f32", "--no-progress")
    lines = done.stdout.splitlines()
    assert lines[0] == f"irtool harness: {small / 'suite.toml'}: 8 jobs, 4 run now, 4 cannot run here", done.stdout
    assert lines[1].startswith("  devices CPU, GPU.7; precisions f32; openvino 20")
    assert done.returncode == 1 and re.fullmatch(r"FAILED in \d+\.\d s: 3 pass, 1 fail, 4 skip", lines[-1]), lines[-1]


@pytest.mark.parametrize("args, word", [
    (["-d", "GPU.7"], "ALL SKIPPED"),  # no machine has an eighth GPU: every job is skipped
    (["--shard", "9/9"], "NOTHING JUDGED"),  # 4 jobs in 9 slices: the ninth is empty
])
def test_a_run_that_judged_nothing_exits_3_and_never_says_passed(small, args, word):
    done = irtool("harness", str(small / "suite.toml"), "--report-dir", str(small / f"nothing-{word}"), *args)
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith(f"{word} in ") and "PASSED" not in done.stdout


@pytest.mark.parametrize("device, message", [
    ("CPU,GPUU", "-d GPUU: 'GPUU' is not a device OpenVINO knows (did you mean GPU?)"),
    ("cpu", "(did you mean CPU?)"),
    ("MULTI", "-d MULTI: MULTI needs a device list, e.g. MULTI:CPU or MULTI:GPU+CPU"),
    ("HETERO", "HETERO needs a device list"),
    ("BATCH", "BATCH needs a device list"),
])
def test_a_device_typo_exits_2_before_anything_runs(small, device, message):
    done = irtool("harness", str(small / "suite.toml"), "--report-dir", str(small / "typo"), "-d", device)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
    assert not (small / "typo").exists()


def test_a_missing_baseline_stops_the_run_before_it_starts(small):
    done = irtool("harness", str(small / "suite.toml"), "--report-dir", str(small / "nobase"),
                  "--baseline", str(small / "nope" / "results.json"))
    assert done.returncode == 2 and "nope/results.json: no such results file" in done.stderr
    assert done.stdout == "" and not (small / "nobase").exists()


def test_the_bar_shows_elapsed_time_and_the_time_left():
    from irtool.cli.harness_cmd import Progress
    from irtool.jobs.records import CaseResult

    times = iter([0.0, 0.5, 2.0, 6.0, 10.0])
    stream = Terminal()
    bar = Progress(stream, clock=lambda: next(times))
    bar(CaseResult("s", "s", "GPU", "f32", "skip"), 1, 6)  # at 0.5 s: skips cost nothing, no estimate yet
    bar(CaseResult("a", "s", "CPU", "f32", "pass"), 2, 6)  # at 2 s: the first job ran; the rate starts here
    bar(CaseResult("b", "s", "CPU", "f32", "pass"), 3, 6)  # at 6 s: 4 s per job, 3 to go
    bar(CaseResult("c", "s", "CPU", "f32", "pass"), 6, 6)
    frames = stream.getvalue().split("\r")
    assert frames[1].endswith("0.5 s elapsed\033[K") and frames[2].endswith("2.0 s elapsed\033[K")
    assert frames[3].endswith("6.0 s elapsed, ~12.0 s left\033[K")
    assert frames[4].endswith("10.0 s elapsed\033[K")


class Terminal(__import__("io").StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("stream_type", [Terminal, __import__("io").StringIO], ids=["terminal", "log"])
def test_progress_draws_a_bar_on_a_terminal_and_lists_problems_everywhere(stream_type):
    from irtool.cli.harness_cmd import Progress
    from irtool.jobs.records import CaseResult

    stream = stream_type()
    bar = Progress(stream)
    bar(CaseResult("a[seed=0]", "s", "CPU", "f32", "pass"), 1, 4)
    bar(CaseResult("b[seed=0]", "s", "CPU", "f32", "crash", message="the worker died: SIGSEGV"), 2, 4)
    bar.finish()
    text = stream.getvalue()
    assert "CRASH: b[seed=0] on CPU at f32: the worker died: SIGSEGV\n" in text
    if stream_type is Terminal:
        assert "\r[###############...............] 2/4 pass 1 crash 1" in text and text.endswith("\n")
    else:
        assert "\r" not in text and "a[seed=0]" not in text


def test_an_ir_file_skipped_everywhere_still_counts_under_its_op(tmp_path):
    """No job of the smoke suite runs on an absent device; its IR files are still grouped by the
    op each holds (read from the XML), not under "(not one RNN op)"."""
    done = irtool("harness", str(SMOKE), "-d", "GPU.7", "--report-dir", str(tmp_path / "out"))
    assert done.returncode == 3, done.stdout + done.stderr
    files = [r for r in json.loads((tmp_path / "out" / "results.json").read_text())["results"] if r["file"]]
    assert len(files) == 17 and all(r["verdict"] == "skip" and r["op"] for r in files)
    page = lxml.html.parse(str(tmp_path / "out" / "report.html")).getroot()
    assert "(not one RNN op)" not in page.text_content()


THREE = """
[suite]
name = "three"
[[grid]]
id = "gru"
op = "GRUSequence"
attributes = { hidden_size = 4, direction = ["forward", "reverse", "bidirectional"] }
"""
# compile slowed by 1.5 s (forward), a changed implementation recorded (reverse), 5e-6 added to every
# output value (bidirectional: max abs error from ~1e-7 to 5e-6, still within f32's atol of 1e-5)
FAULTS = ("slow:1.5,direction=forward;impl:TensorIterator (f32),direction=reverse;"
          "skew:5e-6,direction=bidirectional")


def test_baseline_regressions_fail_testcases_in_junit_and_are_in_every_report(tmp_path):
    """A slowdown, a changed implementation and accuracy drift against a baseline: each a failing
    testcase of junit.xml, in results.json's baseline_diff and in report.html's baseline section,
    while every job of the run itself passes."""
    import os

    (tmp_path / "suite.toml").write_text(THREE)
    old = irtool("harness", str(tmp_path / "suite.toml"), "--report-dir", str(tmp_path / "old"), "--no-progress")
    assert old.returncode == 0, old.stdout + old.stderr
    new = irtool("harness", str(tmp_path / "suite.toml"), "--report-dir", str(tmp_path / "new"), "--no-progress",
                 "--baseline", str(tmp_path / "old"), env={**os.environ, "IRTOOL_FAULT": FAULTS})
    assert new.returncode == 1, new.stdout + new.stderr
    assert "REGRESSED: 1 accuracy drift, 1 implementation or precision changed, 1 slower" in new.stdout
    results = json.loads((tmp_path / "new" / "results.json").read_text())
    assert results["summary"] == {"pass": 3}
    diff = results["baseline_diff"]
    assert diff["baseline"] == str(tmp_path / "old") and diff["regressed"] is True
    assert {kind: [c["case"] for c in diff[kind]] for kind in ("drift", "implementation", "slower")} == {
        "drift": ["gru[direction=bidirectional,seed=0]"], "implementation": ["gru[direction=reverse,seed=0]"],
        "slower": ["gru[direction=forward,seed=0]"]}
    assert diff["implementation"][0]["what"][0].endswith("-> TensorIterator (f32)")
    junit = ET.parse(str(tmp_path / "new" / "junit.xml")).getroot()
    [suite] = [s for s in junit.findall("testsuite") if s.get("name") == f"baseline {tmp_path / 'old'}"]
    failures = {case.get("name"): case.find("failure").get("message") for case in suite.findall("testcase")}
    assert suite.get("failures") == "3" and junit.get("failures") == "3"
    assert failures["gru[direction=forward,seed=0] on CPU at f32"].startswith("slower")
    assert failures["gru[direction=reverse,seed=0] on CPU at f32"].startswith("implementation or precision changed")
    assert failures["gru[direction=bidirectional,seed=0] on CPU at f32"].startswith("accuracy drift")
    page = lxml.html.parse(str(tmp_path / "new" / "report.html")).getroot()
    [heading] = page.xpath('//h2[@id="baseline"]')
    assert "regressed" in heading.text_content()
    # the jobs passed, the run failed: the last line and report.html say why, in the same words
    why = "1 accuracy drift, 1 implementation or precision changed, 1 slower against the baseline"
    assert re.fullmatch(rf"FAILED in .*: 3 pass; regressed: {why}", new.stdout.splitlines()[-1]), new.stdout
    [verdict] = page.xpath('//p[@class="overall"]')
    assert verdict.text_content() == f"Verdict: FAILED: {why}"
    assert page.xpath("//h1/following::*[1]")[0] is not None and page.text_content().index("Verdict: FAILED") < \
        page.text_content().index("Summary")
    # a baseline of other cases: nothing compared, exit 3 (not OK, 0)
    (tmp_path / "other.toml").write_text(THREE.replace('id = "gru"', 'id = "other"'))
    other = irtool("harness", str(tmp_path / "other.toml"), "--report-dir", str(tmp_path / "other"), "--no-progress",
                   "--baseline", str(tmp_path / "old"))
    assert other.returncode == 3, other.stdout + other.stderr
    assert "nothing compared: no job of NEW is in OLD" in other.stdout.splitlines()
    assert other.stdout.splitlines()[-1].startswith("NOTHING COMPARED in ")
    section = heading.getnext().text_content()
    for case in ("forward", "reverse", "bidirectional"):
        assert f"gru[direction={case},seed=0] on CPU at f32" in section
    same = irtool("harness", str(tmp_path / "suite.toml"), "--report-dir", str(tmp_path / "same"), "--no-progress",
                  "--baseline", str(tmp_path / "old"))
    assert same.returncode == 0, same.stdout
    junit = ET.parse(str(tmp_path / "same" / "junit.xml")).getroot()
    assert junit.get("failures") == "0" and junit.xpath('//testcase[@name="no regression"]')


def test_an_interrupted_run_counts_the_jobs_without_a_result_and_exits_130_in_json():
    """A model's job has one result per node: 3 models of 2 nodes each ran of 5 jobs, so 2 jobs did not."""
    from conftest_harness import result

    from irtool.cli.harness_cmd import render, summary_json
    from irtool.harness.session import HarnessOutcome
    from irtool.harness.store import RunResults

    results = [result(f"m{k}[seed=0]::node{n}", "pass", node=f"node{n}") for k in range(3) for n in range(2)]
    outcome = HarnessOutcome(RunResults({}, results, partial=True), interrupted=True, jobs=5)
    last = render(outcome, Path("out")).splitlines()[-1]
    assert re.fullmatch(r"INTERRUPTED in [\d.]+ s: 6 pass; 2 of 5 jobs not run", last), last
    data = summary_json(outcome)
    assert (data["exit_code"], data["verdict"], data["jobs"], data["not_run"]) == (130, "INTERRUPTED", 5, 2)
    nothing = HarnessOutcome(RunResults({}, [], partial=True), interrupted=True, jobs=36)
    lines = render(nothing, Path("out")).splitlines()
    assert lines[-1].endswith(": no results; 36 of 36 jobs not run")
    assert not any("device precision" in line for line in lines)  # no table of no results
