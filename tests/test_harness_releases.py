"""The rules around releases and what ran, without running anything: the diff between releases of
one run, implementation and time changes, the slow fault, suite expectations, long step plots."""
from __future__ import annotations

import re

import pytest
from conftest_harness import result

from irtool.harness.baseline import BaselineError, diff_runs, diff_versions, render_diff
from irtool.harness.html import PLOT_POINTS, step_plot
from irtool.harness.store import RunResults
from irtool.jobs.environments import release_order
from irtool.jobs.faults import FaultError, parse_faults
from irtool.jobs.job_results import expectations_broken
from irtool.jobs.records import Job, SuiteCase
from irtool.jobs.suite import SuiteError, load_suite

TI, SEQ = "TensorIterator (f32; decomposed)", "RNNSeq (f32)"


def _run(*results) -> RunResults:
    return RunResults({"devices": ["CPU"], "precisions": ["f32"]}, list(results))


def test_releases_of_one_run_are_compared_oldest_to_newest():
    run = _run(result("a", "pass", openvino="2026.4.1", max_abs=1e-7, implementations={"n": SEQ}),
               result("a", "pass", openvino="2025.4.1", max_abs=1e-7, implementations={"n": TI}),
               result("b", "fail", openvino="2026.4.1", max_abs=0.1),
               result("b", "pass", openvino="2025.4.1", max_abs=1e-7),
               result("c", "pass", openvino="2025.10.0", max_abs=1e-7))
    assert sorted(["2026.4.1", "2025.10.0", "2025.4.1"], key=release_order) == ["2025.4.1", "2025.10.0", "2026.4.1"]
    diffs = diff_versions(run)
    assert [(old, new) for old, new, _ in diffs] == [("2025.4.1", "2025.10.0"), ("2025.10.0", "2026.4.1")]
    last = diffs[-1][2]
    assert [c.name for c in last.new_failures] == ["b on CPU at f32 on openvino 2026.4.1"]
    whole = diff_runs(run, run, openvino_map={"2025.4.1": "2026.4.1"})
    assert [c.ran_differently() for c in whole.implementation] == [[f"n: {TI} -> {SEQ}"]]
    assert whole.regressed and "REGRESSED: 1 new failures, 1 implementation or precision changed" in render_diff(whole)


def test_runs_of_one_release_each_pair_up_as_they_are():
    old = _run(result("a", "pass", openvino="2025.4.1", max_abs=1e-7))
    new = _run(result("a", "pass", max_abs=1e-7))
    assert not diff_runs(old, new).added and not diff_runs(old, new).removed
    with pytest.raises(BaselineError, match="holds no results of openvino 2024.0"):
        diff_runs(old, new, openvino_map={"2024.0": "2026.4.1"})


def test_a_run_of_one_release_compares_with_that_release_of_a_baseline_of_several():
    """A baseline made with --openvino 2025.4.1,current against a plain run (its results carry only
    the version their openvino said): the 2026.4.1 results pair up, the slowdown is caught, and
    the 2025.4.1 results are not "removed"; ``current`` in a map is the release asked as current."""
    base = RunResults({"devices": ["CPU"], "openvino_releases": {"2025.4.1": {"release": "2025.4.1"},
                                                                 "2026.4.1": {"release": "current"}}},
                      [result("a", "pass", openvino="2025.4.1", compile_time=0.1),
                       result("a", "pass", openvino="2026.4.1", compile_time=0.1)])
    plain = RunResults({"devices": ["CPU"], "openvino_version": "2026.4.1-22982-e213a147257"},
                       [result("a", "pass", openvino_version="2026.4.1-22982-e213a147257", compile_time=3.0),
                        result("gpu", "skip", device="GPU")])  # skipped before a worker: the run's release
    diff = diff_runs(base, plain)
    assert not diff.removed and [c.name for c in diff.added] == ["gpu on GPU at f32"]
    assert [c.name for c in diff.slower] == ["a on CPU at f32"] and diff.regressed
    mapped = diff_runs(base, base, openvino_map={"2025.4.1": "current"})
    assert not mapped.added and not mapped.removed and len(mapped.changed + mapped.fixed) == 0
    with pytest.raises(BaselineError, match="no release in common .* openvino map"):
        diff_runs(base, _run(result("a", "pass", openvino="2027.1.0"), result("b", "pass", openvino="2027.2.0")))


def test_a_whole_case_that_stopped_pairs_with_the_other_runs_node_results():
    """A model the older release cannot read is one result (skip); the newer judges its nodes
    (m::a, m::b): each node says skip -> pass, and nothing is added or removed; the other way
    round, a whole model that crashes is a new crash of each node that passed."""
    older = [result("m", "skip", openvino="2025.4.1")]
    newer = [result("m::a", "pass", openvino="2026.4.1", max_abs=1e-7),
             result("m::b", "fail", openvino="2026.4.1", max_abs=0.1)]
    [(_, _, diff)] = diff_versions(_run(*older, *newer))
    assert not diff.added and not diff.removed
    assert [c.describe() for c in diff.changed] == ["m::a on CPU at f32 on openvino 2026.4.1: skip on openvino "
                                                    "2025.4.1 -> pass"]
    assert [c.name for c in diff.new_failures] == ["m::b on CPU at f32 on openvino 2026.4.1"]
    before = _run(result("m::a", "pass", max_abs=1e-7), result("m::b", "pass", max_abs=1e-7))
    after = _run(result("m", "crash"))
    diff = diff_runs(before, after)
    assert not diff.added and not diff.removed
    assert [c.name for c in diff.new_crashes] == ["m::a on CPU at f32", "m::b on CPU at f32"]
    assert all(c.to_json()["case"].startswith("m::") for c in diff.new_crashes)


@pytest.mark.parametrize("old, new, slower", [
    ((0.04, 0.01), (0.16, 0.01), False),  # x4, but 0.12 s: under the floor
    ((0.5, 0.01), (2.0, 0.01), True),  # compile x4 and 1.5 s
    ((0.5, 0.4), (0.9, 1.6), True),  # inference x4 and 1.2 s
    ((0.0, 0.01), (3.0, 0.01), False),  # a reused compile (0) compares nothing
])
def test_slower_is_a_factor_and_a_floor(old, new, slower):
    before = _run(result("a", "pass", compile_time=old[0], infer_time=old[1]))
    after = _run(result("a", "pass", compile_time=new[0], infer_time=new[1]))
    diff = diff_runs(before, after)
    assert bool(diff.slower) == slower == diff.regressed
    assert not diff_runs(before, after, time_factor=10).slower


def test_a_changed_effective_precision_is_flagged():
    before = _run(result("a", "pass", effective_precision={"CPU": "bf16"}))
    after = _run(result("a", "pass", effective_precision={"CPU": "f32"}))
    [change] = diff_runs(before, after).implementation
    assert change.ran_differently() == ["effective precision bf16 on CPU -> f32 on CPU"]


def test_the_slow_fault_takes_seconds_and_conditions():
    [fault] = parse_faults("slow:1.5,op=GRUSequence")
    assert (fault.action, fault.seconds, dict(fault.when)) == ("slow", 1.5, {"op": "GRUSequence"})
    for text in ("slow", "slow:op=GRUSequence", "slow:-1", "slow:nan", "slow:1e9"):
        with pytest.raises(FaultError, match="slow takes seconds first"):
            parse_faults(text)


def test_expectations_name_what_broke():
    case = SuiteCase(id="g", suite="s", op="GRUSequence", version=5, expect_impl="RNNSeq", max_compile_s=1.0)
    assert expectations_broken(case, {"n": SEQ}, 0.2) == []
    assert expectations_broken(case, {"n": TI}, 2.5) == [
        f"expected the implementation 'RNNSeq', node n ran as {TI}",
        "compiling took 2.5 s, more than max_compile_s = 1"]
    assert Job(case, "CPU", "f32", "2025.4.1").name == "g on CPU at f32 on openvino 2025.4.1"


@pytest.mark.parametrize("line, says", [
    ('expect_impl = ""', "expect_impl is ''; expected a non-empty string"),
    ("expect_impl = 3", "expect_impl is 3; expected a non-empty string"),
    ("max_compile_s = 0", "max_compile_s is 0; expected seconds > 0"),
    ("max_compile_s = true", "max_compile_s is True; expected seconds > 0"),
])
def test_a_suite_refuses_bad_expectations(tmp_path, line, says):
    path = tmp_path / "s.toml"
    path.write_text(f'[[grid]]\nop = "GRUSequence"\nattributes = {{ hidden_size = 2 }}\n'
                    f'sizes = {{ batch_size = 1, seq_length = 2, input_size = 2 }}\n{line}\n')
    with pytest.raises(SuiteError, match=re.escape(says)):
        load_suite(path)


def test_a_long_step_curve_is_drawn_from_its_worst_steps():
    values = [1e-7] * 3000
    values[1234] = 5e-3  # one spike must survive the downsampling
    svg = step_plot("Y", values, 1e-5)
    points = re.search(r'<polyline points="([^"]+)"', svg).group(1).split()
    assert len(points) <= PLOT_POINTS and "<circle" not in svg and "3000 steps drawn as" in svg
    assert min(float(p.split(",")[1]) for p in points) < 40  # the spike reaches the top of the frame
    assert '>2999</text>' in svg  # the x axis still ends at the last step
    short = step_plot("Y", [1e-7] * 10, 1e-5)
    assert short.count("<circle") == 10


def test_a_shard_holds_every_release_of_its_jobs(tmp_path):
    from irtool.harness.matrix import Shard, make_jobs

    path = tmp_path / "s.toml"
    path.write_text('[[grid]]\nid = "g"\nop = "GRUSequence-5"\nattributes = { hidden_size = 2, '
                    'direction = ["forward", "reverse", "bidirectional"] }\n')
    cases = load_suite(path).cases
    shards = [make_jobs(cases, ["CPU", "AUTO:CPU"], ["f32"], Shard(k, 4), ["2025.4.1", "2026.4.1"]) for k in (1, 2, 3, 4)]
    cells = [{(j.case.id, j.device, j.precision) for j in jobs} for jobs in shards]
    for jobs, mine in zip(shards, cells):
        assert sorted(j.openvino for j in jobs) == ["2025.4.1"] * len(mine) + ["2026.4.1"] * len(mine)
    assert sum(len(c) for c in cells) == len(set().union(*cells)) == 6  # each job in exactly one shard
