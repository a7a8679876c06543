"""Coverage: which implementations a run reached per op, device and release, with the conditions
that led to each, in results.json, report.html and the summary; expect_coverage fails a run that
did not reach an implementation it names."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest_harness import result

from irtool.harness.coverage import CoverageError, coverage, kinds, missing, parse_expected, render_text
from irtool.jobs.conditions import node_conditions
from irtool.pipeline.build import build_model
from irtool.pipeline.prepare import prepare
from irtool.runtime.captured import input_arrays
from irtool.specs.cases import OpCase

SUITE = """
[suite]
name = "cov"
{head}

[[grid]]
id = "native"
op = "GRUSequence"
attributes = {{ hidden_size = 4, direction = ["forward", "bidirectional"] }}
sizes = {{ batch_size = 2, seq_length = 4, input_size = 3 }}
sources = {{ sequence_lengths = "const" }}
lengths = "full"

[[grid]]
id = "loop"
op = "GRUSequence"
attributes = {{ hidden_size = 4, direction = "forward" }}
sizes = {{ batch_size = 2, seq_length = 4, input_size = 3 }}
"""


@pytest.mark.parametrize("description, found", [
    ("RNNSeq (f32)", ("RNNSeq",)),
    ("RNNSeq [jit_avx2] (bf16)", ("RNNSeq",)),
    ("TensorIterator (f32; decomposed)", ("TensorIterator",)),
    ("forward: RNNSeq (f32); reverse: TensorIterator (f32; decomposed)", ("RNNSeq", "TensorIterator")),
    ("forward: RNNSeq (f32); reverse: RNNSeq (f32)", ("RNNSeq",)),
    ("not reported", ()),
    ("in TensorIterator", ("TensorIterator",)),
])
def test_kinds_of_a_description(description, found):
    assert kinds(description) == found


def test_coverage_counts_nodes_per_implementation_and_their_conditions():
    static = {"shapes": "static", "sequence_lengths": "const full", "weights": "const"}
    results = [
        result("a", "pass", implementations={"g": "RNNSeq (f32)"}, conditions={"g": static}),
        result("b", "fail", implementations={"g": "forward: RNNSeq (f32); reverse: RNNSeq (f32)"},
               conditions={"g": {**static, "direction": "bidirectional"}}),
        result("c", "pass", implementations={"g": "TensorIterator (f32; decomposed)"},
               conditions={"g": {"shapes": "static", "sequence_lengths": "parameter ragged"}}),
        result("d", "error", implementations={"g": "Loop (f32)"}),  # did not run: not reached
        result("e", "pass", device="GPU", implementations={"g": "RNNSeq (f16)"}),
    ]
    rows = coverage(results)
    assert [(r.device, r.implementation, r.nodes) for r in rows] == [
        ("CPU", "RNNSeq", 2), ("CPU", "TensorIterator", 1), ("GPU", "RNNSeq", 1)]
    assert rows[0].by_key()["sequence_lengths"] == {"const full": 2}
    assert rows[0].to_json()["conditions"][0] == {**static, "nodes": 1}
    text = render_text(rows)
    assert text[1:] == ["  GRUSequence-5 on CPU: RNNSeq 2, TensorIterator 1", "  GRUSequence-5 on GPU: RNNSeq 1"]
    assert all(len(line) <= 120 for line in text)
    assert missing(rows, parse_expected(["RNNSeq", "GRUSequence:TensorIterator", "Loop", "LSTMSequence-5:RNNSeq"],
                                        "x")) == ["no job ran as Loop", "no job of LSTMSequence-5 ran as RNNSeq"]


@pytest.mark.parametrize("item", ["", "RNN Seq", "GRU/Sequence:RNNSeq", ":"])
def test_an_unreadable_expected_implementation_is_refused(item):
    with pytest.raises(CoverageError, match="expected an implementation such as RNNSeq"):
        parse_expected([item], "--expect-coverage")


@pytest.mark.parametrize("item, says", [
    ("GRUSequence:RNNseq", "'GRUSequence:RNNseq': RNNseq: did you mean RNNSeq? (the CPU's layer types are "
                           "RNNSeq, RNNCell, TensorIterator, Loop, Subgraph)"),
    ("tensoriterator", "tensoriterator: did you mean TensorIterator?"),
    ("GRUSequense:RNNSeq", "'GRUSequense:RNNSeq': no op GRUSequense (did you mean GRUSequence?)"),
    ("GRUSequence-9:TensorIterator", "no version 9 of GRUSequence (its versions: GRUSequence-5)"),
    ("LSTMSequence:RNNSeq", "'LSTMSequence:RNNSeq': no case of LSTMSequence in the suites; expect_coverage can name "
                            "GRUSequence, RNNSequence"),
])
def test_an_expected_implementation_is_checked_against_the_ops_and_kinds_irtool_knows(item, says):
    with pytest.raises(CoverageError) as caught:
        parse_expected([item], "--expect-coverage", {"GRUSequence", "RNNSequence"})
    assert caught.value.message.startswith("--expect-coverage: ") and says in caught.value.message


@pytest.mark.parametrize("item", ["GRUSequence-5:RNNSeq", "GRUSequence:SomeGpuKernel", "Subgraph"])
def test_an_op_the_run_has_and_a_kind_of_another_device_are_allowed(item):
    assert parse_expected([item], "x", {"GRUSequence"}) == [tuple(item.split(":")) if ":" in item else (None, item)]
    assert parse_expected([item], "x", None)  # the ops of a model file are not known before it runs


@pytest.mark.parametrize("sources, lengths, expected", [
    ({"sequence_lengths": "const"}, "full", "const full"),
    ({}, "ragged", "parameter ragged"),
    ({}, "zero", "parameter zero"),
])
def test_node_conditions_read_from_the_node_as_it_ran(sources, lengths, expected):
    case = OpCase("GRUSequence", {"hidden_size": 4, "direction": "reverse"},
                  {"batch_size": 3, "seq_length": 5, "input_size": 2}, sources={"W": "parameter", **sources},
                  lengths=lengths)
    prepared = prepare(build_model(case), "GRUSequence")
    rng = np.random.default_rng(0)
    inputs = {p.name: case.tensor(p, rng) for p in case.ports if case.is_parameter(p)}
    (node,) = prepared.probed.judgeable
    conditions = node_conditions(node, input_arrays(node, inputs))
    assert conditions == {"shapes": "static", "sequence_lengths": expected, "direction": "reverse",
                          "weights": "W parameter, R const, B const"}


def harness(tmp_path, head: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    (tmp_path / "s.toml").write_text(SUITE.format(head=head))
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(tmp_path / "s.toml"), "-d", "CPU",
                           "--report-dir", str(tmp_path / "out"), "--no-progress", *extra],
                          capture_output=True, text=True, timeout=600)
    return done, json.loads((tmp_path / "out" / "results.json").read_text())


def test_a_run_reports_its_coverage_and_passes_what_it_expects(tmp_path):
    done, stored = harness(tmp_path, 'expect_coverage = ["GRUSequence:RNNSeq", "TensorIterator"]')
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  GRUSequence-5 on CPU: RNNSeq 2, TensorIterator 1" in done.stdout.splitlines()
    rows = {row["implementation"]: row for row in stored["coverage"]}
    assert set(rows) == {"RNNSeq", "TensorIterator"}
    assert rows["TensorIterator"]["conditions"] == [{"shapes": "static", "direction": "forward",
                                                     "sequence_lengths": "parameter ragged", "weights": "const",
                                                     "nodes": 1}]
    html = (tmp_path / "out" / "report.html").read_text()
    assert '<h2 id="coverage">Implementations reached</h2>' in html and "sequence_lengths const full" in html


def test_an_implementation_no_job_reached_fails_the_run(tmp_path):
    done, _ = harness(tmp_path, 'expect_coverage = ["RNNSeq"]', "--expect-coverage", "GRUSequence-5:Loop,Loop",
                      "--format", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert summary["coverage_missing"] == ["no job of GRUSequence-5 ran as Loop", "no job ran as Loop"]
    assert summary["verdict"] == "FAILED" and summary["summary"] == {"pass": 3}


def test_a_bad_expect_coverage_is_refused_before_the_run(tmp_path):
    (tmp_path / "s.toml").write_text(SUITE.format(head='expect_coverage = "RNNSeq"'))
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(tmp_path / "s.toml"), "-d", "CPU",
                           "--report-dir", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "[suite] expect_coverage is 'RNNSeq'; expected a list" in done.stderr


@pytest.mark.parametrize("head, extra, says", [
    ('expect_coverage = ["LSTMSequence:RNNSeq"]', (),
     "s.toml: expect_coverage: 'LSTMSequence:RNNSeq': no case of LSTMSequence in the suites; expect_coverage can "
     "name GRUSequence"),
    ("", ("--expect-coverage", ""), "--expect-coverage: '': expected an implementation such as RNNSeq"),
    ("", ("--expect-coverage", "RNNSeq,"), "--expect-coverage: '': expected an implementation such as RNNSeq"),
])
def test_an_expected_implementation_the_run_cannot_reach_is_refused_before_anything_runs(tmp_path, head, extra, says):
    (tmp_path / "s.toml").write_text(SUITE.format(head=head))
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(tmp_path / "s.toml"), "-d", "CPU",
                           "--report-dir", str(tmp_path / "out"), *extra], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert says in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert not (tmp_path / "out").exists()  # refused before the report dir was made


def test_an_onnx_models_nodes_carry_the_conditions_of_the_nodes_openvino_converted_them_to(tmp_path):
    """Each ONNX node's coverage row has the conditions its converted node ran under (it had none)."""
    from pathlib import Path

    model = Path(__file__).resolve().parent.parent / "samples" / "models" / "lstm2_bidirectional.onnx"
    (tmp_path / "s.toml").write_text(f'[suite]\nname = "onnx"\n[[models]]\nid = "lstm2"\npath = "{model}"\n')
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(tmp_path / "s.toml"), "-d", "CPU",
                           "--precision", "f32", "--report-dir", str(tmp_path / "out"), "--no-progress"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    stored = json.loads((tmp_path / "out" / "results.json").read_text())
    results = {r["node"]: r for r in stored["results"]}
    assert set(results) == {"lstm0", "lstm1"}
    for name, record in results.items():
        assert record["conditions"][name]["direction"] == "bidirectional"
        assert record["conditions"][name]["shapes"] == "dynamic"
    (row,) = stored["coverage"]
    assert row["op"] == "LSTM-14" and row["conditions"][0]["nodes"] == 2
