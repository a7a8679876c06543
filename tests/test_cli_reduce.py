"""``irtool reduce`` end to end on real OpenVINO (CPU): the issue's Done-when cases, an
interrupted reduction, the criteria, the harness's --reduce-failures, and bad input.

The failures are made on purpose and do not depend on OpenVINO being wrong, nor on the CPU
having bf16: f32 judged with no tolerance (OpenVINO's f32 kernels and the reference round
differently, ~1e-8), or a worker that aborts on a chosen shape (IRTOOL_FAULT).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from irtool.reduce import load_origin
from irtool.reduce.origin import concrete_case

NO_TOLERANCE = ("--atol", "1e-12", "--rtol", "0")
REPRODUCER_FILES = {"model.xml", "model.bin", "inputs.npz", "expected.npz", "case.json", "reproduce.py"}
SUITE = """
[suite]
name = "reduce-tests"
[[grid]]
id = "big"
op = "GRUSequence"
attributes = { hidden_size = 64, direction = "bidirectional", linear_before_reset = true }
sizes = { batch_size = 8, seq_length = 50, input_size = 16 }
[[grid]]
id = "gru"
op = "GRUSequence"
attributes = { hidden_size = 8, direction = "bidirectional", clip = 4.0 }
sizes = { batch_size = 4, seq_length = 6, input_size = 4 }
[[grid]]
id = "lstm"
op = "LSTMSequence"
attributes = { hidden_size = 4, direction = "reverse" }
sizes = { batch_size = 3, seq_length = 4, input_size = 3 }
"""
BIG, GRU, LSTM = "big[seed=0]", "gru[seed=0]", "lstm[seed=0]"


def irtool(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *args], capture_output=True, text=True, timeout=600,
                          env=env)


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("suite") / "reduce.toml"
    path.write_text(SUITE)
    return path


def reduced(out: Path):
    """The reduced reproducer's concrete case and its case.json."""
    folder = out / "reproducer"
    assert {p.name for p in folder.iterdir()} >= REPRODUCER_FILES
    return concrete_case(load_origin(str(folder)).case), json.loads((folder / "case.json").read_text())


def reproduce(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "reproduce.py"], cwd=folder, capture_output=True, text=True, timeout=120)


def steps(text: str) -> list[str]:
    return re.findall(r"^step \d+: .*$", text, re.MULTILINE)


# ----------------------------------------------------------------------------- Done when

@pytest.fixture(scope="module")
def big(suite, tmp_path_factory):
    out = tmp_path_factory.mktemp("big") / "out"
    done = irtool("reduce", f"{suite}::{BIG}", "-d", "CPU", *NO_TOLERANCE, "-o", str(out))
    return done, out


def test_f32_against_no_tolerance_shrinks_to_one_element_one_direction_and_few_steps(big):
    done, out = big
    assert done.returncode == 0, done.stdout + done.stderr
    case, record = reduced(out)
    sizes = case.symbols
    assert sizes["batch_size"] == 1 and sizes["num_directions"] == 1
    assert sizes["seq_length"] <= 2 and sizes["hidden_size"] <= 2
    assert case.attributes["direction"] in ("forward", "reverse")
    assert (record["device"], record["precision"], record["result"]["verdict"]) == ("CPU", "f32", "fail")
    assert record["tolerances"] == {"Y": [1e-12, 0.0], "Ho": [1e-12, 0.0]}


def test_the_reduced_reproducer_fails_when_its_script_runs_alone(big):
    _, out = big
    done = reproduce(out / "reproducer")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "MISMATCH in" in done.stdout and "'INFERENCE_PRECISION_HINT': 'f32'" in done.stdout


def test_each_step_is_logged_with_sizes_and_the_first_diverging_step(big):
    done, out = big
    log = (out / "reduce.log").read_text()
    assert log == done.stdout
    assert "original: batch_size 8, seq_length 50, input_size 16, hidden_size 64, num_directions 2" in log
    assert ("criterion: fails as the original does: mismatch beyond tolerance, with Y atol 1e-12 rtol 0 "
            "(--atol, --rtol); Ho atol 1e-12 rtol 0 (--atol, --rtol)") in log
    logged = steps(log)
    assert [int(line.split(":")[0].split()[1]) for line in logged] == list(range(1, len(logged) + 1))
    for axis in ("direction bidirectional->", "batch_size 8->", "seq_length 50->", "hidden_size 64->"):
        assert any(axis in line for line in logged), axis
    assert all(re.search(r"; elements [\d.k]+->[\d.k]+; fail \(max abs ", line) for line in logged), logged
    assert re.search(r"^diverges: (Y|Ho) first at time step \d \(max abs error \S+ > atol 1e-12\)$", log, re.MULTILINE)
    assert f"reproducer: {out / 'reproducer'}" in log


def test_a_reproducer_folder_is_reduced_with_its_own_device_precision_and_tolerance(big, tmp_path):
    _, out = big
    done = irtool("reduce", str(out / "reproducer"), "-o", str(tmp_path / "again"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "on CPU at f32" in done.stdout.splitlines()[0]
    assert "Y atol 1e-12 rtol 0 (--atol Y, --rtol Y)" in done.stdout
    case, _ = reduced(tmp_path / "again")
    assert case.elements <= concrete_case(load_origin(str(out / "reproducer")).case).elements


def test_a_crash_on_a_chosen_shape_keeps_that_shape(suite, tmp_path):
    env = dict(os.environ, IRTOOL_FAULT="abort:batch_size=3")
    done = irtool("reduce", f"{suite}::{LSTM}", "-d", "CPU", "-o", str(tmp_path), "--timeout", "30", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "criterion: fails as the original does: crash: the worker died: SIGABRT (abort)" in done.stdout
    case, record = reduced(tmp_path)
    assert case.symbols == {"batch_size": 3, "seq_length": 1, "input_size": 1, "hidden_size": 1, "num_directions": 1}
    assert record["result"]["verdict"] == "crash"
    assert not any("batch_size" in line for line in steps(done.stdout))


# ----------------------------------------------------------------------------- interrupted

@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_reduction_keeps_the_best_reproducer_so_far(suite, tmp_path, signum):
    process = subprocess.Popen([sys.executable, "-m", "irtool", "reduce", f"{suite}::{GRU}", "-d", "CPU",
                                *NO_TOLERANCE, "-o", str(tmp_path)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("step 1:"):
            process.send_signal(signum)
            break
    rest, stderr = process.communicate(timeout=120)
    output = "".join(lines) + rest
    assert process.returncode == 130, output + stderr
    assert f"interrupted: the best reproducer so far is in {tmp_path / 'reproducer'}" in stderr
    assert "Traceback" not in stderr
    log = (tmp_path / "reduce.log").read_text()
    assert "step 1: direction bidirectional->" in log and re.search(r"^interrupted; \d+ steps kept", log, re.MULTILINE)
    case, record = reduced(tmp_path)
    assert case.symbols["num_directions"] == 1 and record["result"]["verdict"] == "fail"
    done = reproduce(tmp_path / "reproducer")
    assert done.returncode == 1 and "MISMATCH" in done.stdout, done.stdout + done.stderr


# ----------------------------------------------------------------------------- criteria and budget

def test_a_check_expression_is_the_criterion(suite, tmp_path):
    """At f32 with its own tolerance the case passes; the check asks for errors above 1e-9."""
    done = irtool("reduce", f"{suite}::{GRU}", "-d", "CPU", "--check", "Y.max_abs>1e-9", "-o", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "original: " in done.stdout and "; pass (max abs" in done.stdout
    assert "criterion: --check Y.max_abs>1e-9" in done.stdout
    _, record = reduced(tmp_path)
    y = next(o for o in record["result"]["outputs"] if o["name"] == "Y")
    assert y["max_abs"] > 1e-9 and record["result"]["verdict"] == "pass"


def test_flaky_candidates_are_never_kept(suite, tmp_path):
    """A check that holds on a candidate's first run and not on its re-run: every candidate is flaky."""
    script = tmp_path / "check.py"
    script.write_text("calls = []\n\n\ndef check(result):\n    calls.append(1)\n"
                      "    return len(calls) <= 2 or len(calls) % 2 == 1\n")
    done = irtool("reduce", f"{suite}::{LSTM}", "-d", "CPU", "--check-script", str(script), "--budget", "8",
                  "-o", str(tmp_path / "out"))
    assert done.returncode == 0, done.stdout + done.stderr
    flaky = re.findall(r"^flaky: .*, then pass \(max abs \S+\) on a re-run; not kept$", done.stdout, re.MULTILINE)
    assert flaky and not steps(done.stdout)
    assert re.search(rf"; 0 steps kept of \d+ runs \({len(flaky)} flaky\)", done.stdout)
    case, _ = reduced(tmp_path / "out")
    assert case.symbols["batch_size"] == 3 and case.symbols["hidden_size"] == 4


# A check that holds for the original as given and as rebuilt, then hangs in a process of its own
# (whose pid it leaves in HANG_PID_FILE) on the first candidate: the budget's end stops the reduction.
HOLDS_TWICE_THEN_HANGS = """import os, subprocess
calls = []
def check(result):
    calls.append(result)
    if len(calls) <= 2:
        return True
    child = subprocess.Popen(["sleep", "1000"])
    with open(os.environ["HANG_PID_FILE"], "w") as pid:
        pid.write(str(child.pid))
    child.wait()
"""


def hanging_check(folder: Path) -> tuple[Path, dict]:
    """The script above, and the environment that says where it leaves its sleeper's pid."""
    script = folder / "hangs.py"
    script.write_text(HOLDS_TWICE_THEN_HANGS)
    return script, dict(os.environ, HANG_PID_FILE=str(folder / "sleeper.pid"))


def gone(pid: int) -> bool:
    """The process has ended (a zombie whose parent was killed counts: it runs no more)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] in "ZX"
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_a_budget_stops_with_the_best_so_far(suite, tmp_path):
    """The first candidate's check() hangs: the budget's end stops it, with what its check started."""
    script, env = hanging_check(tmp_path)
    done = irtool("reduce", f"{suite}::{GRU}", "-d", "CPU", "--check-script", str(script), "--budget", "6",
                  "-o", str(tmp_path / "out"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stopped: the time budget is used up; 0 steps kept" in done.stdout
    assert gone(int((tmp_path / "sleeper.pid").read_text()))  # killed with the check's process group
    case, _ = reduced(tmp_path / "out")
    assert case.symbols["batch_size"] == 4
    lengths = ", ".join(str(int(v)) for v in case.arrays["sequence_lengths"])
    [summary] = [line for line in done.stdout.splitlines() if line.startswith("inputs: ")]
    assert summary == f"inputs: sequence_lengths [{lengths}]"  # the other inputs hold more than a few values


def test_a_fault_that_matched_no_run_of_the_reduction_is_an_error_at_its_end(suite, tmp_path):
    """Faults are applied per job in the worker, and a reduction makes its jobs as it goes: what
    IRTOOL_FAULT asked and no run met is said at the end (exit 2), the reproducer kept."""
    script, env = hanging_check(tmp_path)
    env["IRTOOL_FAULT"] = "abort:batch_size=4;abort:batch_size=9"
    # the budget ends the hang; 10 s leaves the original's two judgments time on a loaded machine
    done = irtool("reduce", f"{suite}::{GRU}", "-d", "CPU", "--check-script", str(script), "--budget", "10",
                  "-o", str(tmp_path), env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "irtool: error: IRTOOL_FAULT: 'abort:batch_size=9' matched none of the 3 runs of this reduction; "
        "it changed nothing"]
    assert (tmp_path / "reproducer").is_dir()


def test_a_check_that_never_returns_ends_with_the_budget(suite, tmp_path):
    """--budget bounds the whole reduction: the original's check() too (it waited for --timeout,
    60 s, before), and the check's process is killed."""
    import time

    script = tmp_path / "check.py"
    script.write_text("import time\n\n\ndef check(result):\n    time.sleep(10 ** 6)\n")
    began = time.monotonic()
    done = irtool("reduce", f"{suite}::{GRU}", "-d", "CPU", "--check-script", str(script), "--budget", "5",
                  "-o", str(tmp_path / "out"))
    assert time.monotonic() - began < 10
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"irtool: error: --budget 5: used up before the original case was judged as given and as rebuilt ({script}: "
        f"check() gave no answer within the time left of --budget; it was stopped); no reproducer was written: "
        f"give the reduction more time"]
    assert not (tmp_path / "out" / "reproducer").exists()


def test_a_check_script_that_never_imports_ends_with_the_budget(tmp_path):
    import time

    script = tmp_path / "check.py"
    script.write_text("while True:\n    pass\n")
    began = time.monotonic()
    done = irtool("reduce", "x.xml", "-d", "CPU", "--check-script", str(script), "--budget", "2")
    assert time.monotonic() - began < 10
    assert (done.returncode, done.stderr) == (2, f"irtool: error: {script}: importing it gave no answer within the "
                                                 f"time left of --budget; it was stopped\n")


def test_a_case_that_passes_has_nothing_to_reduce(suite, tmp_path):
    done = irtool("reduce", f"{suite}::{LSTM}", "-d", "CPU", "-o", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == (f"irtool reduce: {LSTM} on CPU at f32: pass; it does not fail, so there "
                                            "is nothing to reduce")
    assert not (tmp_path / "reproducer").exists()


# ----------------------------------------------------------------------------- the harness

def test_harness_reduce_failures(tmp_path):
    (tmp_path / "h.toml").write_text(SUITE.split("[[grid]]\nid = \"big\"")[0] + """
[[grid]]
id = "gru"
op = "GRUSequence"
attributes = { hidden_size = 4, direction = "forward" }
sizes = { batch_size = 2, seq_length = 3, input_size = 3 }
atol = 1e-12
rtol = 0.0
""")
    done = irtool("harness", str(tmp_path / "h.toml"), "--precision", "f32", "--report-dir", str(tmp_path / "r"),
                  "--reduce-failures", "--reduce-budget", "60", "--no-progress")
    assert done.returncode == 1, done.stdout + done.stderr
    job = "gru[seed=0] on CPU at f32"
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("REDUCED:")]
    found = re.match(rf"REDUCED: {re.escape(job)}: (\S+) \(batch_size 1, .*, direction forward, \d+ steps\)$", line)
    assert found, line
    folder = Path(found.group(1))
    assert folder.parent.parent == tmp_path / "r" / "reduced"
    assert {p.name for p in folder.iterdir()} >= REPRODUCER_FILES
    assert "step 1: " in (folder.parent / "reduce.log").read_text()


# ----------------------------------------------------------------------------- bad input

def _relu_model(tmp_path: Path) -> str:
    import openvino as ov
    import openvino.opset1 as ops

    parameter = ops.parameter([2, 3], np.float32, name="x")
    ov.save_model(ov.Model([ops.relu(parameter)], [parameter]), str(tmp_path / "relu.xml"))
    return str(tmp_path / "relu.xml")


@pytest.mark.parametrize("args, says", [
    (lambda tmp, suite: [str(tmp / "gone.xml"), "-d", "CPU"], "gone.xml: no such model file"),
    (lambda tmp, suite: [_relu_model(tmp), "-d", "CPU"],
     "relu.xml: cannot reduce it: the model is not a single recurrent op fed by Parameters and Consts"),
    (lambda tmp, suite: [f"{suite}::nope", "-d", "CPU"], "reduce.toml: no case 'nope'; its cases are big[seed=0]"),
    (lambda tmp, suite: [f"{suite}::{LSTM}"], f"{LSTM}: name the device with -d DEVICE"),
    (lambda tmp, suite: [f"{suite}::{LSTM}", "-d", "NPUU"], "'NPUU' is not a device OpenVINO knows (did you mean NPU?)"),
    (lambda tmp, suite: [f"{suite}::{LSTM}", "-d", "CPU", "--check", "max_abs=>1"], "--check 'max_abs=>1': "),
    (lambda tmp, suite: [f"{suite}::{LSTM}", "-d", "CPU", "--check-script", str(tmp / "c.py")],
     "c.py: no such check script"),
    (lambda tmp, suite: [f"{suite}::{LSTM}", "-d", "CPU", "--budget", "0"],
     "argument --budget: 0.0; expected a number of seconds > 0"),
], ids=["missing", "not-one-rnn-op", "no-such-case", "no-device", "unknown-device", "bad-check", "no-script",
        "bad-budget"])
def test_bad_input_is_one_line_and_exit_2(suite, tmp_path, args, says):
    done = irtool("reduce", *args(tmp_path, suite), "-o", str(tmp_path / "out"))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith(("usage:", " "))]  # argparse's usage
    assert len(lines) == 1 and lines[0].startswith("irtool: error: ") and says in lines[0], done.stderr


def test_absent_device_is_a_skip_exit_3(suite, tmp_path):
    """A known device absent here (NPU.7: a seventh NPU) is a skip, exit 3, with OpenVINO's reason, as in
    run and the harness; nothing is written."""
    from irtool.runtime.devices import skip_reason

    reason = skip_reason("NPU.7", "f32")
    assert reason.startswith("NPU.7 is not available here: ")
    done = irtool("reduce", f"{suite}::{LSTM}", "-d", "NPU.7", "-o", str(tmp_path / "out"))
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stderr.strip() == f"irtool: skipped: {reason}: nothing was run"
    assert not (tmp_path / "out").exists()


def test_precision_default_reduces_at_what_the_device_chose(suite, tmp_path, cpu_default_precision):
    """--precision default: every run compiles without INFERENCE_PRECISION_HINT, and the reproducer
    records "default" (its script sets no hint either) and the precision the CPU picked."""
    done = irtool("reduce", f"{suite}::{LSTM}", "-d", "CPU", "--precision", "default", *NO_TOLERANCE,
                  "--budget", "5", "-o", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == f"reduce {LSTM} (LSTMSequence-5) on CPU at default"
    _, record = reduced(tmp_path)
    assert record["precision"] == "default" and "INFERENCE_PRECISION_HINT" not in record["config"]
    assert record["result"]["effective_precision"] == {"CPU": cpu_default_precision}
    script = reproduce(tmp_path / "reproducer")
    assert script.returncode == 1 and "MISMATCH" in script.stdout, script.stdout + script.stderr
    assert script.stdout.splitlines()[0].endswith("config {}")
