"""Every command README.md and docs/*.md show runs as written, from a fresh copy of the repository,
with the exit code the text says.

A command is every line of a ```sh block (a trailing backslash continues it), and every line
starting with "$ " in any other fenced block (the lines after it are its output). Other
blocks (synopses, outputs, TOML) are not run.  The key lines of a shown output (its verdict
line, a run's count of recurrent nodes, a validation's count of files and errors: KEY_LINES)
must be among the lines the command prints, times normalized (``in 15.4 s`` is any time),
for every command run as written. The commands of one page run in order in one
fresh copy of the repository (the tracked files as they are in the work tree), so a page
may build a file and then run it; ``irtool``, ``python`` and ``pytest`` are this Python
with the copy on PYTHONPATH.  Afterwards ``git status`` of the copy is clean: whatever the
commands write, the repository's .gitignore ignores.

What runs differently from the text is listed below, each change with its reason; a
command no entry names runs exactly as written. A command expected to exit non-zero is
listed in EXIT_CODES with the reason the page gives.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from conftest import tracked_copy

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# (pattern, replacement, reason): re.sub on the command before it runs.
SUBSTITUTIONS = [
    (r"^python -m venv \.venv && \. \.venv/bin/activate && pip install -e \. && ", "",
     "the copy runs from PYTHONPATH; a new virtual environment would download every dependency"),
    (r"^\. \.venv/bin/activate && pip install -e '\.\[test\]' && python -m pytest -q -n 3$", None,
     "the test suite itself, of which this test is a part"),
    (r"^IRTOOL_FAULT=\"abort:batch_size=3\" irtool reduce .* -o crash$", None,
     "tests/test_cli_reduce.py (test_a_crash_on_a_chosen_shape_keeps_that_shape) runs this reduction of a crash on "
     "batch 3 and checks what it keeps: 28 crashing runs"),
    (r"--reduce-failures --reduce-budget 120$", None,
     "tests/test_cli_reduce.py (test_harness_reduce_failures) runs a harness that reduces its failures and checks "
     "the reproducer each gets: the page's two reductions take up to 120 s each"),
    (r"^python benchmarks/bench_onnx_node\.py --rounds \d+$",
     "python benchmarks/bench_onnx_node.py --rounds 1 --repeats 1",
     "the page's figures are its own; one call of each peer shows the command runs"),
    (r"--compare-with (tflite|tensorflow|paddle)$", None,
     "the extras are no test dependency (21 to 274 MB wheels); tests/test_run_oracles.py runs them where installed"),
    (r"^irtool harness samples/suites/onnx\.toml -d CPU --report-dir onnx-out$", None,
     "tests/test_harness_onnx.py runs this command as written and checks its verdicts"),
    (r"irtool harness samples/suites/smoke\.toml -d CPU,AUTO:CPU,HETERO:CPU,GPU --precision f32,bf16 "
     r"--report-dir irtool-report$", None,
     "tests/test_cli_harness.py runs this command as written (its smoke fixture) and checks every verdict"),
    (r"^irtool (scheduler|worker) ", None,
     "docs/cluster.md: a lab's scheduler and workers, on three machines, run until stopped; "
     "tests/test_harness_cluster.py starts them on one and runs what the page says of them"),
    (r" --cluster tcp://lab-1:8786 ", None,
     "docs/cluster.md: the run on the lab's machines (tests/test_harness_cluster.py runs it on one)"),
    (r"^irtool run samples/models/gru_lengths\.xml -d CPU --openvino 2025\.4\.1,current$", None,
     "tests/test_cli_run_releases.py runs this command as written and checks its table line by line"),
    (r"^irtool report rejudge \.\./shared/recordings/", None,
     "docs/harness.md: the recordings of a bf16 CPU are not part of a clone (their README); the page shows the run "
     "it measured"),
    (r"^irtool run samples/models/streaming_gru\.onnx -d CPU --batch 2$", None,
     "tests/test_runtime_sizes.py runs it on the same model (real_models.streaming_gru_model) and checks its line "
     "word for word"),
]
# reduce.md's bf16 examples were recorded when a bf16 run was judged against the ideal reference;
# against the emulation of its path (docs/run.md) it agrees bit for bit and there is nothing to
# reduce, on any CPU: they run at f32 held to no tolerance, which fails (and is reduced) the same way.
SUBSTITUTIONS += [
    (r"--precision bf16 --atol 1e-5 --rtol 1e-4", "--atol 0 --rtol 0",
     "bf16 against the emulation of its path passes bit for bit; f32 held to no tolerance fails as bf16 "
     "held to f32's did"),
    (r"--precision bf16 --check \"Y\.max_abs>2e-3\"", None,
     "bf16 against the emulation of its path passes bit for bit (nothing to reduce); tests/test_cli_reduce.py "
     "(test_a_check_expression_is_the_criterion) reduces by a criterion of its own at f32"),
]
# Outputs that depend on whether the CPU lists BF16 in OPTIMIZATION_CAPABILITIES, as the page
# says: (pattern, whether the page's output is from a CPU with bf16, the exit code and the start
# of the verdict line on the other CPU, what the page says).  On the page's CPU the command's
# exit code is EXIT_CODES' and its key lines the page's.
CPU_DEPENDENT = [
    (r"^irtool run gru\.xml -d CPU --precision bf16$", False, (0, "PASS: 2 of 2 outputs within tolerance"),
     "README.md: a precision the device lacks is skipped (exit 3; the run shown is from a CPU without bf16); "
     "a CPU with bf16 runs it, judged against its path's emulation"),
]
# The reduce examples shrink a GRU of batch 8, 50 steps and hidden size 64 and an LSTM of batch
# 3 (10 to 15 s per reduction here); the test's copy of the suite has the same ids (so the same
# reproducer folder names) with small sizes.
SMALL_TRIAGE = """
[suite]
name = "triage"
timeout = 60
[[grid]]
id = "gru-big"
op = "GRUSequence-5"
attributes = { hidden_size = 4, direction = "bidirectional", linear_before_reset = true }
sizes = { batch_size = 2, seq_length = 3, input_size = 3 }
[[grid]]
id = "lstm"
op = "LSTMSequence-5"
attributes = { hidden_size = 2, direction = "reverse" }
sizes = { batch_size = 3, seq_length = 2, input_size = 2 }
"""
# (pattern, exit code, why): the first match decides; 0 otherwise.
EXIT_CODES = [
    (r"^irtool validate samples/ir/spec-examples/GRUCell-3\.page\.xml$", 1, "the spec page's example is invalid"),
    (r"^irtool reduce .*-o passes$", 1, "a case that passes has nothing to reduce"),
    (r"reproduce\.py", 1, "the reproducer of a failure reproduces the mismatch"),
    (r"^irtool harness samples/suites/triage\.toml --atol 0 --rtol 0", 1, "no tolerance: every case fails"),
    (r"^irtool build onnx-rnn --opset 7 --layout 1 ", 2, "the page shows an attribute the opset lacks being refused"),
    (r"^irtool validate samples/models/broken_gru\.onnx$", 1, "the page shows a broken ONNX model's findings"),
    (r"^IRTOOL_MEMORY_LIMIT=1G irtool build .*--hidden-size 12000", 2, "the page shows the memory estimate refusing it"),
    (r"^irtool run batchwise\.onnx ", 1, "OpenVINO's ONNX frontend ignores layout=1 (docs/onnx.md)"),
    (r"^irtool run samples/models/loop_peepholes\.onnx ", 1, "OpenVINO's ONNX frontend drops the peepholes"),
    (r"^irtool run per_direction\.onnx ", 1, "OpenVINO applies the forward activations to both directions"),
    (r"^irtool run dense\.onnx -d CPU --inputs dense-in\.npz$", 3, "the page shows a model no one judged: nothing compared"),
    (r"^irtool run dense\.onnx .*--expected dense-wrong\.npz$", 1, "the page shows one expected value off by 0.01 failing"),
    (r"^irtool run hard\.onnx ", 2, "HardSigmoid is unsupported by OpenVINO: exit 2, never a mismatch"),
    (r"^irtool run samples/models/\S+_fault\.(xml|onnx) ", 1, "a fault planted in a lowered cell fails at its step"),
    (r"^irtool report merge shard-1/ -o merged/$", 2, "the page shows a merge of one shard of two: partial"),
    (r"^irtool run samples/models/gru_lengths\.xml", 1,
     "OpenVINO 2026.4.1's CPU ignores ragged sequence_lengths there (the bug of samples/suites/full.xfail.toml)"),
    (r"^irtool run gru\.xml -d CPU --precision bf16$", 3, "a CPU without bf16 skips it (CPU_DEPENDENT: with bf16, 0)"),
]
# A shown line is a key line if it matches one of these: verdicts, node and file counts.
KEY_LINES = [
    r"^(PASS|FAIL|PASSED|FAILED|NOT JUDGED|SKIPPED|ERROR|MISMATCH)\b",  # verdict lines (run, harness, reproducers)
    r"^irtool( reduce)?: (error|skipped|\S+\[)",  # a refusal, a skip, reduce's verdict on a case
    r"^\S+: \d+ recurrent nodes? on ",  # a run's header: how many recurrent nodes it found
    r"^\d+ files? checked: ",  # validate's counts
    r"^wrote \S+( and \S+)?: ",  # what build wrote: the op, its attributes and inputs
    r"^reproducer: ",  # where reduce wrote the reproducer
]

TIMEOUT = 300


@lru_cache(maxsize=1)
def cpu_has_bf16() -> bool:
    import openvino as ov

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def shown(page: Path) -> list[tuple[str, list[str]]]:
    """The commands of a page, in order (see the module docstring), each with the output lines
    the page shows for it (none for a ```sh block's)."""
    found: list[tuple[str, list[str]]] = []
    fence, pending, output = None, "", None
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence, output = None if fence is not None else line[3:].strip(), None
            continue
        if fence is None:
            continue
        if fence == "sh":
            text = line.strip()
            if text.endswith("\\"):
                pending += text[:-1].strip() + " "
                continue
            whole, pending = (pending + text).strip(), ""
            if whole:
                found.append((whole, []))
        elif line.startswith("$ "):
            output = []
            found.append((line[2:].strip(), output))
        elif output is not None:
            output.append(line)
    return found


def commands(page: Path) -> list[str]:
    """The commands of a page, in order (see the module docstring)."""
    return [command for command, _ in shown(page)]


def normalized(line: str) -> str:
    """A line as compared: spaces squeezed, any time (``15.4 s``, ``120 ms``) the same."""
    return re.sub(r"\s+", " ", re.sub(r"\b\d+(\.\d+)? ?(ms|s|min)\b", "<time>", line)).strip()


def key_lines(output: list[str]) -> list[str]:
    return [normalized(line) for line in output if any(re.search(pattern, line) for pattern in KEY_LINES)]


def expected_outcome(command: str, output: list[str]) -> tuple[int, list[str], str | None]:
    """The exit code, the key lines and the start of a verdict line a command shown with ``output``
    must give on this CPU (CPU_DEPENDENT: the other CPU's exit code and verdict)."""
    for pattern, shown_with_bf16, (code, verdict), _ in CPU_DEPENDENT:
        if re.search(pattern, command) and cpu_has_bf16() != shown_with_bf16:
            return code, [], verdict
    return expected_code(command), key_lines(output), None


def prepared(command: str) -> tuple[str | None, list[str]]:
    """The command to run (None: not run) and the reasons for each change made to it."""
    reasons = []
    for pattern, replacement, reason in SUBSTITUTIONS:
        if re.search(pattern, command):
            if replacement is None:
                return None, [reason]
            command = re.sub(pattern, replacement, command)
            reasons.append(reason)
    return command, reasons


def expected_code(command: str) -> int:
    return next((code for pattern, code, _ in EXIT_CODES if re.search(pattern, command)), 0)


def fresh_copy(target: Path) -> Path:
    """The repository's tracked files, as they are in the work tree, with nothing generated."""
    tracked_copy(target)
    (target / "samples" / "suites" / "triage.toml").write_text(SMALL_TRIAGE)
    return target


def shims(folder: Path) -> Path:
    """irtool, python and pytest as the user has them after the README's set-up, for this Python."""
    folder.mkdir()
    # the README's set-up installs no hypothesis: its pytest plugin (1.2 s of each start) is not loaded here either
    for name, args in (("irtool", "-m irtool"), ("python", ""), ("pytest", "-m pytest -p no:hypothesispytest")):
        (folder / name).write_text(f'#!/bin/sh\nexec "{sys.executable}" {args} "$@"\n')
        (folder / name).chmod(0o755)
    return folder


def test_commands_are_found_in_every_page_that_shows_one():
    shown = {page.name: commands(page) for page in PAGES}
    assert any("irtool harness samples/suites/smoke.toml" in c for c in shown["README.md"]), shown
    assert any(c.startswith("irtool build gru-sequence --hidden-size 128") and c.endswith("-o gru.xml")
               for c in shown["run.md"])  # a continued line is one command
    assert any(c.startswith("irtool reduce") for c in shown["reduce.md"])
    assert all(not c.startswith("irtool harness SUITE") for cs in shown.values() for c in cs)  # synopses


def test_every_substitution_and_exit_code_is_used():
    """A table entry no command matches is a page that changed without its test."""
    every = [c for page in PAGES for c in commands(page)]
    for pattern, _, reason in SUBSTITUTIONS:
        assert any(re.search(pattern, c) for c in every), (pattern, reason)
    for pattern, _, _, reason in CPU_DEPENDENT:
        assert any(re.search(pattern, c) for c in every), (pattern, reason)
    for pattern, _, reason in EXIT_CODES:
        assert any(re.search(pattern, c) for c in every), (pattern, reason)


def test_key_lines_are_verdicts_and_counts_with_times_normalized():
    output = ["irtool harness: samples/suites/smoke.toml: 288 jobs, 216 run now, 72 cannot run here",
              "  CPU f32                36        0", "reports: irtool-report/results.json",
              "gru.onnx: 1 recurrent node on CPU", "  1 file checked: 0 errors",
              "PASSED in 15.4 s: 216 pass, 72 skip"]
    assert key_lines(output) == ["gru.onnx: 1 recurrent node on CPU", "PASSED in <time>: 216 pass, 72 skip"]
    assert normalized("PASSED in 0.8 s:  7 pass") == normalized("PASSED in 112 s: 7 pass") != normalized("PASSED: 8 pass")


def test_make_expected_without_onnxruntime_says_what_to_install_in_one_line(tmp_path):
    """samples/make_expected.py (run by docs/run.md) needs onnxruntime, an extra: without it (an import
    of it fails, as Python's sys.modules[name] = None makes it) one line says what to install."""
    script = ("import runpy, sys; sys.modules['onnxruntime'] = None; "
              f"sys.argv = ['make_expected.py', {str(tmp_path)!r}]; "
              f"runpy.run_path({str(ROOT / 'samples' / 'make_expected.py')!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 1 and done.stderr == (
        "samples/make_expected.py: onnxruntime computes the expected outputs and is not installed: "
        "pip install onnxruntime (or pip install -e '.[onnxruntime]')\n"), done.stderr
    assert not list(tmp_path.iterdir())


def _git(copy: Path, *argv: str) -> str:
    return subprocess.run(["git", "-c", "user.name=docs", "-c", "user.email=docs@localhost", *argv], cwd=copy,
                          capture_output=True, text=True, check=True).stdout


# pages whose commands tests/test_docs_walkthroughs.py runs: a module of their own, which pytest-xdist
# (--dist loadscope: a module to a worker) runs beside this one's pages, not after them
WALKTHROUGHS = ("README.md", "reduce.md", "run.md")


def pages_with_commands(walkthroughs: bool) -> list[Path]:
    """The pages that show commands: those of WALKTHROUGHS, or the others."""
    return [page for page in PAGES if commands(page) and (page.name in WALKTHROUGHS) == walkthroughs]


@pytest.mark.parametrize("page", pages_with_commands(False), ids=lambda p: p.name)
def test_the_commands_of_a_page_run_as_written(page, tmp_path, openvino_cache):
    run_page(page, tmp_path, openvino_cache)


def run_page(page: Path, tmp_path: Path, openvino_cache: Path) -> None:
    """Each command ``page`` shows, run as written in a fresh copy of the repository: its exit code,
    the key lines of its output, no traceback, and nothing left that git does not ignore."""
    copy = fresh_copy(tmp_path / "repo")
    _git(copy, "init", "-q")  # to see what the commands leave in the checkout, as the reader's git status would
    _git(copy, "add", "-A")
    _git(copy, "commit", "-q", "--no-verify", "-m", "the copy")
    # --openvino examples use the test run's cache of releases (made once, conftest.openvino_cache)
    env = {**os.environ, "PATH": f"{shims(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(copy), "IRTOOL_OPENVINO_CACHE": str(openvino_cache)}
    env.pop("IRTOOL_FAULT", None)
    # a reader's Python writes the copy's bytecode on its first command (git ignores __pycache__/); with
    # PYTHONDONTWRITEBYTECODE (set on these machines) every command, worker and pytest process compiled
    # irtool's sources again: 0.3 s of the 1.3 s CPU of a small `irtool run`
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for written, output in shown(page):
        command, changes = prepared(written)
        if command is None:
            continue
        done = subprocess.run(["bash", "-c", command], cwd=copy, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT)
        code, keys, verdict = expected_outcome(written, output)
        said = f"{page.name}: {written}\nran: {command}\nexit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert done.returncode == code, said
        assert "Traceback" not in done.stderr, done.stderr
        printed = [normalized(line) for line in (done.stdout + "\n" + done.stderr).splitlines()]
        if not changes:  # the page's output is this command's
            missing = [line for line in keys if line not in printed]
            assert not missing, f"the page shows lines the command does not print: {missing}\n{said}"
        if verdict is not None:
            assert any(line.startswith(verdict) for line in printed), f"no line starts {verdict!r}\n{said}"
    left = _git(copy, "status", "--porcelain", "--untracked-files=all")
    assert not left, f"{page.name}: its commands leave in the checkout what git does not ignore:\n{left}"
