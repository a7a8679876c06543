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

import pytest

from irtool.core.globs import glob_matches
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
    code = (f"from irtool.core.globs import glob_matches\n"
            f"for n in (40, 1000, 100000):\n"
            f"    assert not glob_matches({pattern!r}, 'a' * n)\n")
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
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "suite.toml",
                           "--irtool-device", "CPU", "--irtool-xfail", "xfail.toml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr
