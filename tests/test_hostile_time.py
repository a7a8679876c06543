"""Everything irtool does ends in bounded time, whatever the input: globs that would make a
backtracking matcher run for hours, a model whose inference never ends (run --timeout), and a
reduce check script that loops or exits (run in a process reduce can kill).  Real processes,
real OpenVINO on CPU; each would hang or end wrong before."""
from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from irtool.harness.store import write_json

# Alternating *? backtracks exponentially in a regex: 35 characters took 100 s, 40 take hours.
HOSTILE_GLOB = "*?*?*?*?*?*?*?*?*?*?*?*?*?Z"
LONG_ID = "a-case-identifier-of-many-characters-" * 2  # 74 characters, no Z
SUITE = f"""
[suite]
name = "globs"
[[grid]]
id = "{LONG_ID}"
op = "RNNCell"
attributes = {{ hidden_size = 2 }}
sizes = {{ batch_size = 1, input_size = 2 }}
"""
XFAIL = f'[[xfail]]\ncase = "{HOSTILE_GLOB}"\nreason = "never matches"\n'


def irtool(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, **kwargs)


def _regex_glob(pattern: str, text: str) -> bool:
    """What a glob of * and ? means, as a (backtracking) regex: the reference on small texts."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, text, re.DOTALL) is not None


def test_globs_match_as_the_regex_does_on_every_small_case():
    from irtool.core.globs import glob_matches

    chance = random.Random(7)
    for _ in range(20000):
        text = "".join(chance.choice("ab[]*?") for _ in range(chance.randint(0, 9)))
        pattern = "".join(chance.choice("ab[*?") for _ in range(chance.randint(0, 8)))
        assert glob_matches(pattern, text) == _regex_glob(pattern, text), (pattern, text)
    assert glob_matches("gru[*]::*", "gru[seed=0]::node") and not glob_matches("gru[*]", "gru[seed=0]::node")


@pytest.mark.parametrize("pattern", [HOSTILE_GLOB, "*a?*a?*a?*a?*a?*a?*a?*a?*a?*a?*a?*a?Z", "?*" * 300 + "Z"],
                         ids=["star-question", "star-letter-question", "300-pairs"])
def test_a_backtracking_glob_is_matched_at_once(pattern):
    """A subprocess bounded at 30 s: each of these took minutes or more per match as a regex."""
    code = (f"from irtool.harness.expectations import Expected\n"
            f"from irtool.jobs.records import CaseResult\n"
            f"for n in (40, 1000, 100000):\n"
            f"    assert not Expected({pattern!r}).matches(CaseResult('a' * n, 's', 'CPU', 'f32', 'fail'))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_report_render_xfail_with_a_backtracking_glob_ends(tmp_path):
    from conftest_harness import result

    from irtool.harness.store import RunResults

    results = tmp_path / "run" / "results.json"
    results.parent.mkdir()
    write_json(results, RunResults({"suites": ["globs"], "devices": ["CPU"], "precisions": ["f32"]},
                                   [result(f"{LONG_ID}[seed={seed}]", "fail", max_abs=1.0) for seed in range(20)]))
    (tmp_path / "xfail.toml").write_text(XFAIL)
    done = irtool("report", "render", results, "--xfail", tmp_path / "xfail.toml", "-o", tmp_path / "out", timeout=60)
    assert done.returncode == 0 and "20 results (20 fail)" in done.stdout, done.stdout + done.stderr
    assert f"known failure '{HOSTILE_GLOB}'" in done.stderr and "matched no job" in done.stderr


def test_a_harness_with_a_backtracking_glob_in_its_known_failures_and_faults_ends(tmp_path):
    (tmp_path / "suite.toml").write_text(SUITE)
    (tmp_path / "xfail.toml").write_text(XFAIL)
    env = {**os.environ, "IRTOOL_FAULT": f"hang:case={HOSTILE_GLOB}"}
    done = irtool("harness", tmp_path / "suite.toml", "-d", "CPU", "--xfail", tmp_path / "xfail.toml",
                  "--report-dir", tmp_path / "out", "--no-progress", timeout=90, env=env)
    # the fault matches no job: the harness refuses it, in one line, at once
    assert done.returncode == 2 and "IRTOOL_FAULT" in done.stderr, done.stdout + done.stderr
    env.pop("IRTOOL_FAULT")
    done = irtool("harness", tmp_path / "suite.toml", "-d", "CPU", "--xfail", tmp_path / "xfail.toml",
                  "--report-dir", tmp_path / "out", "--no-progress", timeout=90, env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_pytest_plugin_with_a_backtracking_glob_ends(tmp_path):
    (tmp_path / "suite.toml").write_text(SUITE)
    (tmp_path / "xfail.toml").write_text(XFAIL)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                           "--assert=plain", "suite.toml",
                           "--irtool-device", "CPU", "--irtool-xfail", "xfail.toml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


# ----------------------------------------------------------------------------- reduce --check-script

REDUCE_SUITE = """
[suite]
name = "reduce-time"
[[grid]]
id = "lstm"
op = "LSTMSequence"
attributes = { hidden_size = 4, direction = "reverse" }
sizes = { batch_size = 3, seq_length = 4, input_size = 3 }
"""
# holds for the original and its rebuild (the first two calls), then as the script says
SCRIPTS = {
    "loops": "calls = []\ndef check(result):\n    calls.append(1)\n    while len(calls) > 2:\n        pass\n"
             "    return True\n",
    "exits": "import sys\ncalls = []\ndef check(result):\n    calls.append(1)\n    if len(calls) > 2:\n"
             "        sys.exit(0)\n    return True\n",
    "os-exits": "import os\ncalls = []\ndef check(result):\n    calls.append(1)\n    if len(calls) > 2:\n"
                "        os._exit(0)\n    return True\n",
    "loops-at-import": "while True:\n    pass\n",
}


def _reduce(tmp_path: Path, script: str, *more: str) -> subprocess.CompletedProcess:
    (tmp_path / "suite.toml").write_text(REDUCE_SUITE)
    (tmp_path / "check.py").write_text(SCRIPTS[script])
    return irtool("reduce", f"{tmp_path / 'suite.toml'}::lstm[seed=0]", "-d", "CPU", "--check-script",
                  tmp_path / "check.py", "-o", tmp_path / "out", *more, timeout=180)


def test_a_check_script_that_loops_ends_at_the_budget_with_the_best_so_far(tmp_path):
    began = time.monotonic()
    done = _reduce(tmp_path, "loops", "--budget", "8")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stopped: the time budget is used up" in done.stdout
    assert (tmp_path / "out" / "reproducer" / "reproduce.py").is_file()
    assert time.monotonic() - began < 120  # the budget, the start and the original's runs: not a loop's forever


def test_a_check_script_that_loops_without_a_budget_ends_at_the_timeout(tmp_path):
    done = _reduce(tmp_path, "loops", "--timeout", "3")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == (f"irtool: error: {tmp_path / 'check.py'}: check() gave no answer "
                                                   f"within 3 s (--timeout); it was stopped")


@pytest.mark.parametrize("script, says", [
    ("exits", "check() called sys.exit(0) instead of returning True or False"),
    ("os-exits", "check() ended its process (exit code 0) instead of returning True or False; a check script's "
                 "exit is never reduce's"),
    ("loops-at-import", "importing it gave no answer within 3 s (--timeout); it was stopped"),
])
def test_a_check_script_that_exits_is_an_error_not_reduces_exit(tmp_path, script, says):
    done = _reduce(tmp_path, script, "--timeout", "3")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"irtool: error: {tmp_path / 'check.py'}: {says}"


# ----------------------------------------------------------------------------- Loops of known trip count

def _loop_model(path: Path, trip: int, computed: bool = False, nested: int | None = None) -> Path:
    """A model built with openvino's opset API: Loop 'L' adds 1 to x ``trip`` times (its trip count a
    Constant, or a Multiply of two Constants: ``computed``); ``nested``: L sits in the body of Loop
    'outer' of that many iterations."""
    import numpy as np
    import openvino as ov
    import openvino.opset8 as ops

    def loop(x: object, count: int, name: str, inner: bool) -> object:
        carried = ops.parameter([2, 3], np.float32)
        step = loop(carried.output(0), trip, "L", False) if inner else \
            ops.add(carried, ops.constant(np.ones((2, 3), np.float32))).output(0)
        body = ov.Model([ops.result(ops.constant(True)), ops.result(step)], [carried], f"{name}-body")
        count_value = ops.multiply(ops.constant(np.int64(count)), ops.constant(np.int64(1))) \
            if computed and name == "L" else ops.constant(np.int64(count))
        node = ops.loop(count_value, ops.constant(True))
        node.set_function(body)
        node.set_special_body_ports([-1, 0])
        node.set_merged_input(carried, x, step)
        node.set_friendly_name(name)
        return node.get_iter_value(step, -1)

    x = ops.parameter([2, 3], np.float32, name="x")
    out = loop(x.output(0), nested, "outer", True) if nested else loop(x.output(0), trip, "L", False)
    ov.save_model(ov.Model([ops.result(out)], [x], "loop"), str(path))
    return path


@pytest.mark.parametrize("trip, computed, nested, says", [
    (10 ** 15, False, None, "Loop 'L' runs 1000000000000000 iterations (its trip count, a Constant)"),
    (10 ** 15, True, None, "Loop 'L' runs 2147483647 iterations (its trip count, computed from Constants)"),
    (10 ** 5, False, 10 ** 5, "Loop 'L' in the body of Loop 'outer' runs 10000000000 iterations (its trip count, "
                              "a Constant, times 100000 of the loops around it)"),
], ids=["constant", "computed", "nested"])
def test_a_loop_whose_known_trip_count_outruns_the_timeout_is_refused_before_compiling(tmp_path, monkeypatch, trip,
                                                                                      computed, nested, says):
    """It waited for --timeout (600 s) before.  Computed from Constants, the count is what OpenVINO's CPU
    computes for it (int64 as int32, saturated), which is what the CPU would run."""
    from irtool.core.errors import RunError
    from irtool.pipeline.prepare import read_and_prepare

    from irtool.core import activity

    path = _loop_model(tmp_path / "loop.xml", trip, computed, nested)
    monkeypatch.setattr(activity, "_limit", None)  # as a library caller has it (an earlier CLI call set one)
    began = time.monotonic()
    with pytest.raises(RunError) as refused:
        read_and_prepare(path)
    assert time.monotonic() - began < 1
    assert refused.value.message == (f"loop.xml: {says}: at no less than 1 µs each, more than the 600 s a step may "
                                     f"take (--timeout); make its trip count smaller, or give it more time")
    done = irtool("run", path, "-d", "CPU", "--timeout", "5")
    assert done.returncode == 2 and done.stderr.splitlines() == [f"irtool: error: {refused.value.message}".replace(
        "600 s", "5 s")]


def test_a_loop_of_a_trip_count_within_the_timeout_runs(tmp_path):
    done = irtool("run", _loop_model(tmp_path / "loop.xml", 3000), "-d", "CPU", "--format", "json")
    assert done.returncode == 3, done.stderr  # it ran: no recurrent node, so nothing was judged


def test_a_loop_with_no_trip_count_whose_conditions_are_true_constants_is_refused(tmp_path):
    """Trip count -1 (none), execution condition true, body condition a true Constant: it never ends."""
    done = irtool("run", _loop_model(tmp_path / "loop.xml", -1), "-d", "CPU", "--timeout", "5")
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "irtool: error: loop.xml: Loop 'L' runs forever: its trip count is -1 (none), its execution condition is "
        "true and its body's condition is a true Constant; OpenVINO would run it until --timeout (5 s) stops it"]
