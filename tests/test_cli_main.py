"""``irtool`` itself: help written for users, typos answered with a suggestion and the right usage,
one place that turns library errors into a line and an exit code, and a closed pipe that keeps
the exit code."""
from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest

from irtool.cli.program import main
from irtool.core.errors import IrtoolBug, IrtoolError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))
from conftest_harness import sample_run  # noqa: E402


def test_top_level_help_is_for_users_and_lists_the_exit_codes(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "argparse" not in out and "``" not in out and "handler" not in out
    assert "validate IR files against the op specs" in out
    assert "exit codes: 0 passed, 1 " in out and "3 ran but nothing was judged" in out


@pytest.mark.parametrize("command", [["validate"], ["build"], ["build", "gru-sequence"], ["devices"], ["harness"],
                                     ["report"], ["report", "diff"], ["reduce"]])
def test_each_commands_help_is_written_for_users(command, capsys):
    """No docstring markup or developer words (run's help is checked with run)."""
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "``" not in out and "handler" not in out and ":func:" not in out


def test_build_offers_what_it_builds_and_shows_each_list_at_its_length(capsys):
    assert main(["build", "lstm-sequence", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--activations A,B,C " in out and "--op-version {5}" in out  # LSTMSequence-1 validates but cannot be built
    assert main(["build", "gru-sequence", "--help"]) == 0
    assert "--activations A,B " in capsys.readouterr().out


def test_a_mistyped_command_gets_a_suggestion_in_one_line(capsys):
    assert main(["validte", "x.xml"]) == 2
    err = capsys.readouterr().err
    assert "irtool: error: no command 'validte' (did you mean validate?)" in err
    assert "irtool: error: irtool:" not in err and "invalid choice" not in err


def test_a_mistyped_option_shows_the_sub_commands_usage(capsys):
    assert main(["run", "m.xml", "-d", "CPU", "--precison", "bf16"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: irtool run ")
    assert "irtool: error: run: unrecognized arguments: --precison bf16 (did you mean --precision?)" in err


def test_a_usage_error_of_a_sub_command_is_not_prefixed_twice(capsys):
    assert main(["report", "diff", "a"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: irtool report diff ") and "irtool: error: report diff: " in err
    assert "irtool: error: irtool" not in err


def test_library_errors_become_one_line_and_exit_2_in_one_place(monkeypatch, capsys):
    """Every handler raises; cli.main says it (a bug says it is one, and asks for a report)."""
    from irtool.cli import devices_cmd

    for error, line in ((IrtoolError("model.xml: no such file"), "irtool: error: model.xml: no such file\n"),
                        (IrtoolBug("two GRUs registered"), "irtool: error: irtool bug: two GRUs registered "
                                                           "(please report it)\n")):
        def boom(args, error=error):
            raise error
        monkeypatch.setattr(devices_cmd, "handle", boom)
        assert main(["devices"]) == 2
        assert capsys.readouterr().err == line


def test_every_library_error_is_an_irtool_error():
    from irtool.core.errors import InputError
    from irtool.core.numbers import NumberSyntaxError
    from irtool.core.shapes import ShapeSyntaxError
    from irtool.ir.defaults import DefaultsError
    from irtool.ir.parse import IRParseError
    from irtool.specs import SpecError
    from irtool.specs.expressions import ExpressionError
    from irtool.specs.model import SpecMismatch
    from irtool.specs.values import ValueSyntaxError

    for cls in (DefaultsError, IRParseError, ShapeSyntaxError, SpecError, ExpressionError, SpecMismatch,
                ValueSyntaxError, InputError, IrtoolBug, NumberSyntaxError):
        assert issubclass(cls, IrtoolError), cls
    assert issubclass(SpecError, IrtoolBug)  # irtool's own spec files: a bug, not the user's input


def test_the_reference_reports_bad_input_as_an_irtool_error_that_is_still_a_value_error():
    import numpy as np

    from irtool.reference import gru_sequence

    with pytest.raises(IrtoolError, match="hidden_size is 0") as caught:
        gru_sequence(np.zeros((1, 1, 1), np.float32), np.zeros((1, 1, 1), np.float32), np.ones(1, np.int32),
                     np.zeros((1, 3, 1), np.float32), np.zeros((1, 3, 1), np.float32), np.zeros((1, 3), np.float32),
                     hidden_size=0, direction="forward")
    assert isinstance(caught.value, ValueError)


def test_a_closed_pipe_keeps_the_exit_code_of_a_regression(tmp_path):
    """``irtool report diff OLD NEW | head -1``: the reader is gone before irtool writes; the
    regression's exit code 1 must survive, with no BrokenPipeError on stderr."""
    from irtool.harness.store import write_json

    old = sample_run()
    new = copy.deepcopy(old)
    fixed = next(r for r in new.results if r.verdict == "pass")
    fixed.verdict, fixed.message = "fail", "Y: outside tolerance"
    write_json(tmp_path / "old.json", old)
    write_json(tmp_path / "new.json", new)
    command = [sys.executable, "-m", "irtool", "report", "diff", str(tmp_path / "old.json"), str(tmp_path / "new.json")]
    assert subprocess.run(command, capture_output=True, timeout=120).returncode == 1
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # as head does once it has its line
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 1, err
    assert b"BrokenPipe" not in err and b"Exception ignored" not in err


def test_harness_options_check_themselves_when_built():
    from irtool.harness.session import HarnessOptions, SessionError

    suite = [ROOT / "samples" / "suites" / "smoke.toml"]
    for bad, message in (({"jobs": 0}, "-j 0"), ({"timeout": -1.0}, "--timeout -1"), ({"devices": ["GPUU"]}, "GPUU"),
                         ({"devices": []}, "no device"), ({"precisions": ["f8"]}, "--precision f8"),
                         ({"drift_factor": 1.0}, "--drift-factor 1"), ({"reduce_budget": 0.0}, "--reduce-budget 0"),
                         ({"suites": []}, "no suite")):
        with pytest.raises(IrtoolError, match=message):
            HarnessOptions(**{"suites": suite, **bad})
    assert HarnessOptions(suite, devices=["HETERO:GPU,CPU"]).jobs == 1
    assert SessionError.__mro__[1] is IrtoolError


def test_reduce_options_check_themselves_when_built(tmp_path):
    from irtool.reduce import ReduceOptions

    for bad, message in (({"device": "cpu"}, "did you mean CPU"), ({"device": "MULTI"}, "needs a device list"),
                         ({"precision": "f8"}, "--precision f8"), ({"timeout": 0.0}, "--timeout 0"),
                         ({"budget": -1.0}, "--budget -1")):
        with pytest.raises(IrtoolError, match=message):
            ReduceOptions(**{"device": "CPU", "out_dir": tmp_path, **bad})
    assert ReduceOptions("HETERO:GPU,CPU", tmp_path).timeout > 0


def test_version_names_irtool_by_its_metadata_and_openvino(capsys):
    from importlib import metadata

    from irtool.runtime.core import openvino_version

    assert main(["--version"]) == 0
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith(f"irtool {metadata.version('irtool')} from {ROOT / 'irtool'} (python ")
    assert second == f"openvino {openvino_version()}"


VERSION_PROBE = """\
import sys
{setup}
import irtool.cli.program
sys.exit(irtool.cli.program.main(["--version"]))
"""


@pytest.mark.parametrize("setup, said", [
    ("sys.modules['openvino'] = None", "(ModuleNotFoundError: import of openvino halted; None in sys.modules)"),
    ("sys.path.insert(0, sys.argv[1])", "(ImportError: libopenvino.so.2026.4.1: cannot open shared object file)"),
], ids=["missing", "broken"])
def test_version_says_a_missing_or_broken_openvino_instead_of_failing(setup, said, tmp_path):
    broken = tmp_path / "openvino"
    broken.mkdir()
    (broken / "__init__.py").write_text('raise ImportError("libopenvino.so.2026.4.1: cannot open shared object file")\n')
    done = subprocess.run([sys.executable, "-c", VERSION_PROBE.format(setup=setup), str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith("irtool ")
    assert second == f"openvino: cannot be imported {said}; validate works without it, build, run, harness and " \
                     f"reduce need it"


# Ctrl-C at a chosen moment: this import hook sends the process SIGINT when the named module
# starts to load (so the interrupt lands inside that import), then runs irtool's program entry
# exactly as its console script does.
INTERRUPT_HOOK = """
import importlib.abc, os, signal, sys
TARGET = {target}
assert TARGET not in sys.modules
class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == TARGET:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Interrupt())
"""
INTERRUPT_AT_IMPORT = INTERRUPT_HOOK.format(target="sys.argv.pop(1)") + "from {module} import main\nsys.exit(main())\n"


def _entry_point() -> str:
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="irtool")
    return script.value


def test_the_console_script_is_the_entry_that_catches_ctrl_c():
    assert _entry_point() == "irtool.cli.console:main"


@pytest.mark.parametrize("module, command", [
    ("irtool.cli.program", ["validate", "x.xml"]),  # the command line itself loading
    ("argparse", ["validate", "x.xml"]),
    ("irtool.cli.run_cmd", ["run", "x.xml", "-d", "CPU"]),  # the parser being built
    ("numpy", ["run", "MODEL", "-d", "CPU"]),
    ("openvino", ["run", "MODEL", "-d", "CPU"]),  # the handler loading OpenVINO
])
def test_ctrl_c_while_irtool_starts_is_exit_130_without_a_traceback(samples_dir, module, command):
    command = [str(samples_dir / "valid" / "gru_cell.xml") if word == "MODEL" else word for word in command]
    entry = _entry_point().split(":")[0]
    done = subprocess.run([sys.executable, "-c", INTERRUPT_AT_IMPORT.format(module=entry), module, *command],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "irtool: error: interrupted\n" and done.stdout == ""


def test_ctrl_c_to_the_process_group_during_a_harness_run_is_exit_130(tmp_path):
    """As a terminal sends it: to irtool and its workers alike, once the first result is stored."""
    import os
    import signal
    import time

    out = tmp_path / "out"
    process = subprocess.Popen([sys.executable, "-m", "irtool", "harness", str(ROOT / "samples" / "suites" / "smoke.toml"),
                                "-d", "CPU", "--report-dir", str(out), "-j", "2", "--no-progress"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    jsonl = out / "results.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if jsonl.is_file() and jsonl.read_text().count("\n") >= 2:  # the run header and one result
            break
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert stderr.strip().splitlines()[-1].startswith("irtool: error: interrupted")
    from irtool.harness.store import read_jsonl

    assert read_jsonl(jsonl).results  # what was done is kept, readable


# What pip writes as the console script (its template), so these tests start irtool exactly as a user's shell does.
CONSOLE_SCRIPT = """#!{python}
import re
import sys
from irtool.cli.console import main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(main())
"""


def _console_script(folder: Path, hook: str = "") -> Path:
    script = folder / "irtool"
    text = CONSOLE_SCRIPT.format(python=sys.executable)
    if hook:  # the interrupting import hook goes in before the script's own imports
        first, rest = text.split("\n", 1)
        text = f"{first}\n{hook}\n{rest}"
    script.write_text(text)
    script.chmod(0o755)
    return script



@pytest.mark.parametrize("target", ["irtool.cli", "irtool.cli.console"])
def test_ctrl_c_while_the_console_script_imports_its_entry_is_exit_130_without_a_traceback(tmp_path, target):
    """The console script imports irtool, irtool.cli and irtool.cli.console before main() runs:
    irtool/__init__.py answers an interrupt from its first line (before: a KeyboardInterrupt
    traceback through the script's ``from irtool.cli.console import main``)."""
    script = _console_script(tmp_path, INTERRUPT_HOOK.format(target=repr(target)))
    done = subprocess.run([str(script), "validate", "x.xml"], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stderr, done.stdout) == (130, "irtool: error: interrupted\n", "")


LOST_INTERRUPT = """
import sys, weakref
import irtool.cli.program

class Held:
    pass

def command():  # a Ctrl-C taken in a callback Python runs itself (a module lock's, in an import)
    def callback(_):
        raise KeyboardInterrupt
    held = Held()
    ref = weakref.ref(held, callback)
    del held
    print("went on")
    return 0

irtool.cli.program.main = command
sys.argv = ["irtool", "devices"]
from irtool.cli.console import main
sys.exit(main())
"""


def test_an_interrupt_python_drops_in_its_own_callback_still_ends_the_command_as_interrupted():
    """Python drops a KeyboardInterrupt raised in a callback of its own, printing "Exception ignored"
    with a traceback, and the command goes on (the 20 tries below met it once in a harness's
    imports): the command still ends as interrupted, in one line."""
    done = subprocess.run([sys.executable, "-c", LOST_INTERRUPT], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stderr, done.stdout) == (130, "irtool: error: interrupted\n", "went on\n")


BROKEN_IMPORT = """
import os, signal, sys, time
import irtool.cli.program

def command():  # Ctrl-C in numpy's import: it raises ImportError in the KeyboardInterrupt's place
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(10)
    except KeyboardInterrupt:
        raise ImportError('PyCapsule_Import could not import module "datetime"') from None
    return 0

irtool.cli.program.main = command
sys.argv = ["irtool", "devices"]
from irtool.cli.console import main
sys.exit(main())
"""


def test_an_interrupt_an_import_turns_into_another_error_is_still_one_line():
    """Seen once in 20 interrupts a tenth of a second into a run: numpy's import, stopped, raised an
    ImportError ("Original error was: PyCapsule_Import could not import module ...") and its
    traceback reached the user."""
    done = subprocess.run([sys.executable, "-c", BROKEN_IMPORT], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stderr) == (130, "irtool: error: interrupted\n")


def test_sigint_a_tenth_of_a_second_after_the_start_is_one_line_in_20_tries(tmp_path):
    """As the issue found it: `irtool harness ...` interrupted while it is still importing.  The tenth
    of a second counts from where the console script starts importing irtool: Python's own start
    before it (site and the .pth files of an editable install, 30 ms here and 100 ms and more on a
    loaded machine) runs no code of irtool's, and an interrupt there is Python's to answer."""
    import signal
    import time

    script = _console_script(tmp_path, 'import sys; sys.stdout.write("."); sys.stdout.flush()  # Python has started')
    said = []
    for attempt in range(20):
        process = subprocess.Popen([str(script), "harness", str(ROOT / "samples" / "suites" / "smoke.toml"),
                                    "-d", "CPU", "--report-dir", str(tmp_path / f"out{attempt}"), "--no-progress"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        assert process.stdout.read(1) == "."
        time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
        said.append((process.returncode, stderr))
    assert all(code == 130 and "Traceback" not in err and err.strip().splitlines()[-1] == "irtool: error: interrupted"
               for code, err in said), [s for s in said if s[0] != 130 or "Traceback" in s[1]]
