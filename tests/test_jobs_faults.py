"""IRTOOL_FAULT read strictly: an unknown action or condition key is an error when read, with a
suggestion; a fault that matches no job of a harness run is an error before the run, one of a
reduction at its end (its jobs are made as it goes)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from irtool.jobs.faults import FaultError, condition_keys, parse_faults, unmatched
from irtool.jobs.records import Job, SuiteCase

CASES = [SuiteCase(f"c{k}[seed=0]", "t", op="RNNCell", version=0, attributes={"hidden_size": k + 1},
                   sizes={"batch_size": 2}) for k in range(3)]
JOBS = [Job(case, device, "f32") for case in CASES for device in ("CPU", "AUTO:CPU")]


@pytest.mark.parametrize("text, message", [
    ("abort:hiden_size=2", "'hiden_size' is no condition a fault can name (did you mean hidden_size?)"),
    ("abort:devce=CPU", "(did you mean device?)"),
    ("abrt:case=x", "'abrt' is not one of abort, segfault, hang, exit, slow, skew, impl (did you mean abort?)"),
    ("slow:2,colour=red", "'colour' is no condition a fault can name; conditions: case, device"),
])
def test_an_unknown_action_or_key_is_an_error_when_read(text, message):
    with pytest.raises(FaultError) as error:
        parse_faults(text)
    assert message in error.value.message and "\n" not in error.value.message


def test_every_attribute_of_the_onnx_ops_is_a_condition_key():
    from irtool.onnx import schema

    names = {name for op in schema.OPS for version in schema.versions(op)
             for name in schema.get(op, version).attributes}
    assert names <= condition_keys()


@pytest.mark.parametrize("text, matches", [
    ("abort:hidden_size=2", True), ("abort:hidden_size=9", False), ("abort:device=GPU", False),
    ("abort:device=AUTO:CPU,hidden_size=3", True), ("hang:case=c1[*]", True), ("hang:case=d*", False),
    ("abort:batch_size=2", True), ("abort:batch_size=3", False), ("abort:precision=bf16", False),
    ("abort:seq_length=7", True),  # the cases do not give it: known only once the model is read
])
def test_a_fault_that_can_match_no_job_is_found(text, matches):
    assert (unmatched(parse_faults(text), JOBS) == []) == matches


def test_a_file_case_may_match_on_what_its_model_holds():
    file_job = Job(SuiteCase("f", "t", file="m.xml"), "CPU", "f32")
    assert unmatched(parse_faults("abort:hidden_size=9"), [file_job]) == []
    assert len(unmatched(parse_faults("abort:hidden_size=9,device=GPU"), [file_job])) == 1


def _harness(tmp_path: Path, fault: str) -> subprocess.CompletedProcess:
    suite = tmp_path / "s.toml"
    suite.write_text('[[grid]]\nop = "GRUSequence"\nattributes = { hidden_size = [2, 3], direction = "forward" }\n')
    return subprocess.run([sys.executable, "-m", "irtool", "harness", str(suite), "-d", "CPU", "--report-dir",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, IRTOOL_FAULT=fault))


@pytest.mark.parametrize("fault, message", [
    ("abort:hidden_size=9", "IRTOOL_FAULT: 'abort:hidden_size=9' matches no job of this run (hidden_size: 2, 3)"),
    ("abort:direction=forwad", "matches no job of this run (direction: forward (did you mean forward?))"),
    ("abort:direction=reverse", "matches no job of this run (direction: forward)"),
])
def test_harness_refuses_a_fault_that_matches_nothing_before_it_runs(tmp_path, fault, message):
    done = _harness(tmp_path, fault)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "results.jsonl").exists()
