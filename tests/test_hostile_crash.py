"""A user's file that crashes OpenVINO, or a model that never finishes, never takes irtool down
silently: run, reduce and validate run in a child their console entry supervises
(irtool.cli.supervisor).  A crash is one line naming the file, the step and the signal, exit 2;
``run --timeout`` stops a step that runs past it; signals reach the command as they did before.
Real processes, real OpenVINO on CPU (the corrupt .tflite is made here from a sample)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

MODELS = Path(__file__).resolve().parent.parent / "samples" / "models"
CRASH_LINE = ("crash.tflite: irtool run died of SIGSEGV (segmentation fault) while reading it with OpenVINO's "
              "TensorFlow Lite frontend; nothing was judged")


def irtool(*args: str, cwd: Path | None = None, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL, **kwargs)


@pytest.fixture
def crash(tmp_path) -> Path:
    """samples/models/tf/keras_simple_rnn.tflite with byte 2088 set to 2: OpenVINO 2026.4.1's TensorFlow Lite
    frontend reads past a buffer and the process dies of SIGSEGV (found by changing each byte in turn)."""
    data = bytearray((MODELS / "tf" / "keras_simple_rnn.tflite").read_bytes())
    data[2088] = 2
    path = tmp_path / "crash.tflite"
    path.write_bytes(bytes(data))
    return path


@pytest.fixture
def endless(tmp_path) -> Path:
    """An ONNX Loop (x + 1 each iteration) with no trip count, whose body's condition, i > -1, never
    turns false: its inference never ends.  (A trip count of 10^15, known before it runs, irtool
    refuses at once: tests/test_hostile_time.py.)"""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    body = helper.make_graph(
        [helper.make_node("Greater", ["i", "minus_one"], ["cond_out"]),
         helper.make_node("Add", ["x_in", "one"], ["x_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("x_in", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.ones(2, np.float32), "one"), numpy_helper.from_array(np.array(-1, np.int64),
                                                                                         "minus_one")])
    graph = helper.make_graph([helper.make_node("Loop", ["", "cond", "x"], ["y"], body=body)], "loop",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
                              [numpy_helper.from_array(np.array(True), "cond")])
    path = tmp_path / "loop.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


# ----------------------------------------------------------------------------- crashes

def test_a_frontend_crash_is_one_line_naming_the_file_and_the_signal(crash):
    done = irtool("run", crash.name, "-d", "CPU", cwd=crash.parent)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr == f"irtool: error: {CRASH_LINE}\n"


def test_a_frontend_crash_under_json_gives_the_json_object(crash):
    done = irtool("run", crash.name, "-d", "CPU", "--format", "json", cwd=crash.parent)
    assert done.returncode == 2 and done.stderr == f"irtool: error: {CRASH_LINE}\n"
    data = json.loads(done.stdout)
    assert data["verdict"] == "error" and data["model"] == "crash.tflite" and data["nodes"] == []
    assert "died of SIGSEGV" in data["error"]


def test_a_frontend_crash_under_openvino_releases_is_one_line(crash, tmp_path):
    done = irtool("run", crash.name, "-d", "CPU", "--openvino", f"env:{sys.prefix}", "--openvino-cache",
                  tmp_path / "cache", cwd=crash.parent)
    assert done.returncode == 2 and done.stderr == f"irtool: error: {CRASH_LINE}\n", done


def test_reduce_of_a_node_of_a_crashing_model_is_one_line(crash):
    done = irtool("reduce", crash.name, "--node", "x", "-d", "CPU", "-o", "out", cwd=crash.parent)
    assert done.returncode == 2, done
    assert done.stderr == ("irtool: error: crash.tflite: irtool reduce died of SIGSEGV (segmentation fault) while "
                           "reading it with OpenVINO's TensorFlow Lite frontend\n")


def test_the_harness_names_the_step_its_worker_died_or_hung_in(crash, endless, tmp_path):
    """A harness worker notes its steps as run's child does: a job whose worker died, or was killed
    past the suite's timeout, says in which step."""
    suite = tmp_path / "s.toml"
    suite.write_text(f'[suite]\nname = "s"\ntimeout = 5\n[[models]]\nid = "crash"\npath = "{crash}"\n'
                     f'[[models]]\nid = "endless"\npath = "{endless}"\n')
    done = irtool("harness", suite, "-d", "CPU", "--report-dir", tmp_path / "out", "--no-progress")
    assert done.returncode == 1, done
    results = {r["case"]: r for r in json.loads((tmp_path / "out" / "results.json").read_text())["results"]}
    assert (results["crash[seed=0]"]["verdict"], results["crash[seed=0]"]["message"]) == (
        "crash", "the worker died: SIGSEGV (segmentation fault) while reading it with OpenVINO's TensorFlow Lite "
        "frontend")
    assert (results["endless[seed=0]"]["verdict"], results["endless[seed=0]"]["message"]) == (
        "timeout", "ran past the timeout of 5 s while running it on CPU; the worker was killed")
    assert "CRASH: crash[seed=0] on CPU at f32: the worker died: SIGSEGV (segmentation fault) while reading it" \
        in done.stdout
    # its reproducer is written by a fresh worker, which reads the model again and dies the same way
    assert results["crash[seed=0]"]["unwritten"] == (
        "the reproducer of crash[seed=0] on CPU at f32: the worker writing it died too: SIGSEGV (segmentation fault) "
        "while reading it with OpenVINO's TensorFlow Lite frontend")


# ----------------------------------------------------------------------------- time

def test_run_stops_an_endless_inference_at_its_timeout(endless):
    began = time.monotonic()
    done = irtool("run", endless.name, "-d", "CPU", "--timeout", "2", "--format", "json", cwd=endless.parent)
    assert done.returncode == 2, done
    assert done.stderr == ("irtool: error: loop.onnx: timeout: still running it on CPU after 2 s (--timeout 2, for "
                           "each step); stopped; nothing was judged\n")
    data = json.loads(done.stdout)
    assert data["verdict"] == "timeout" and data["error"].startswith("loop.onnx: timeout: still running it on CPU")
    assert time.monotonic() - began < 60


def test_the_default_timeout_is_said_in_the_help():
    done = irtool("run", "--help")
    assert "--timeout S" in done.stdout and "(default 600)" in " ".join(done.stdout.split())


# ----------------------------------------------------------------------------- signals

def _started(endless: Path, **kwargs) -> subprocess.Popen:
    """irtool run of the endless model, once its child is inferring."""
    process = subprocess.Popen([sys.executable, "-m", "irtool", "run", endless.name, "-d", "CPU"], cwd=endless.parent,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not any(_reading_onnx(child) for child in _children(process.pid)):
        time.sleep(0.05)
    time.sleep(1)  # reading the model, compiling it: then the endless inference (earlier, the same outcome)
    assert process.poll() is None
    return process


def _reading_onnx(pid: int) -> bool:
    """The process has loaded OpenVINO's ONNX frontend: it is past its imports, reading the model."""
    try:
        return "libopenvino_onnx_frontend" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, -signal.SIGTERM)],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_the_command_reaches_the_run(endless, signum, code):
    process = _started(endless)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr and (signum != signal.SIGINT or stderr == "irtool: error: interrupted\n")


def test_ctrl_c_to_the_process_group_is_one_interrupt(endless):
    process = _started(endless, start_new_session=True)
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130 and stderr == "irtool: error: interrupted\n", stderr


def test_the_run_ends_with_its_supervisor(endless):
    process = _started(endless)
    [child] = _children(process.pid)
    process.kill()
    process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and Path(f"/proc/{child}").exists() and \
            Path(f"/proc/{child}/stat").read_text().split()[2] != "Z":
        time.sleep(0.05)
    assert not Path(f"/proc/{child}").exists() or Path(f"/proc/{child}/stat").read_text().split()[2] == "Z"
