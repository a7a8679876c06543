"""Comparing runs (baseline diff, drift, device maps) and merging shards."""
from __future__ import annotations

import json
import math

import pytest
from conftest_harness import result, sample_run

from irtool.harness.baseline import KINDS, BaselineError, diff_runs, render_diff
from irtool.harness.merge import MergeError, merge_runs
from irtool.harness.store import RunResults

META = {"openvino_version": "2026.4.1", "suites": ["smoke"], "devices": ["CPU"], "precisions": ["f32"]}
REGRESSIONS = {"new_failures", "new_crashes", "drift"}


def _run(*results, **meta) -> RunResults:
    return RunResults({**META, **meta}, list(results))


def _kinds(diff) -> dict[str, list[str]]:
    return {kind: [change.name for change in getattr(diff, kind)] for kind in KINDS if getattr(diff, kind)}


@pytest.mark.parametrize("old, old_max, new, new_max, kind", [
    ("pass", 1e-7, "fail", 0.1, "new_failures"),
    ("xfail", 0.1, "fail", 0.1, "new_failures"),  # the known-failure entry no longer covers it
    ("skip", None, "error", None, "new_failures"),
    ("unjudged", None, "fail", 0.1, "new_failures"),
    ("pass", 1e-7, "crash", None, "new_crashes"),
    ("fail", 0.1, "timeout", None, "new_crashes"),
    ("crash", None, "timeout", None, "changed"),
    ("fail", 0.1, "error", None, "changed"),
    ("fail", 0.1, "pass", 1e-7, "fixed"),
    ("timeout", None, "xpass", 1e-7, "fixed"),
    ("error", None, "skip", None, "changed"),
    ("pass", 1e-7, "skip", None, "changed"),
    ("pass", 1e-3, "pass", 3e-3, "drift"),
    ("fail", 0.1, "fail", 0.5, "drift"),
    ("pass", 0.0, "pass", 1e-5, "drift"),  # from exactly 0: an infinite factor
    ("pass", 1e-3, "pass", 1.9e-3, None),  # under the factor
    ("pass", 1e-9, "pass", 1e-8, None),  # under the floor: rounding noise
    ("pass", 1e-3, "pass", 1e-4, None),
    ("pass", 1e-7, "pass", 1e-7, None),
])
def test_classification(old, old_max, new, new_max, kind):
    diff = diff_runs(_run(result("c", old, max_abs=old_max)), _run(result("c", new, max_abs=new_max)))
    assert _kinds(diff) == ({kind: ["c on CPU at f32"]} if kind else {})
    assert diff.regressed == (kind in REGRESSIONS)


def test_drift_factor_and_floor_are_options():
    old, new = _run(result("c", "pass", max_abs=1e-3)), _run(result("c", "pass", max_abs=3e-3))
    assert not diff_runs(old, new, drift_factor=4).regressed
    assert not diff_runs(old, new, drift_floor=5e-3).regressed
    (change,) = diff_runs(old, new).drift
    assert change.factor == pytest.approx(3)


def test_added_and_removed():
    old = _run(result("kept", "pass", max_abs=1e-7), result("gone", "pass", max_abs=1e-7))
    new = _run(result("kept", "pass", max_abs=1e-7), result("new-ok", "pass"), result("new-bad", "fail"))
    diff = diff_runs(old, new)
    assert _kinds(diff) == {"added": ["new-ok on CPU at f32", "new-bad on CPU at f32"],
                            "new_failures": ["new-bad on CPU at f32"], "removed": ["gone on CPU at f32"]}
    assert diff.regressed
    assert not diff_runs(old, _run(result("kept", "pass", max_abs=1e-7))).regressed  # a partial run removes


def test_text_lists_at_most_ten_added_or_removed():
    old = _run(*(result(f"c{k}", "pass") for k in range(12)))
    lines = render_diff(diff_runs(old, _run())).splitlines()
    assert lines[0] == "removed (12):" and len(lines) == 1 + 10 + 2 and lines[-2] == "  ... and 2 more"


def test_a_run_against_itself_says_nothing():
    assert _kinds(diff_runs(sample_run(), sample_run())) == {}


def test_device_map_pairs_devices_of_two_runs():
    old = _run(result("a", "pass", max_abs=1e-7), result("b", "pass", max_abs=1e-7),
               result("a", "pass", device="AUTO:CPU", max_abs=1e-7))
    new = _run(result("a", "pass", device="GPU", max_abs=1e-7), result("b", "fail", device="GPU", max_abs=0.1),
               result("a", "fail", device="CPU", max_abs=0.1))
    diff = diff_runs(old, new, device_map={"CPU": "GPU"})
    assert _kinds(diff) == {"new_failures": ["b on GPU at f32"]}  # AUTO:CPU of old and CPU of new left out
    assert diff.to_json()["new_failures"][0] | {"message": ""} == {
        "case": "b", "device": "GPU", "precision": "f32", "openvino": None, "old_openvino": None,
        "old_device": "CPU", "old": "pass", "new": "fail",
        "old_max_abs": 1e-7, "new_max_abs": 0.1, "factor": pytest.approx(1e6), "message": ""}


def test_text_without_labels_as_the_harness_prints_it():
    diff = diff_runs(_run(result("c", "pass", max_abs=1e-7)), _run(result("c", "timeout", message="ran past 5 s")))
    assert render_diff(diff).splitlines() == ["new crashes and timeouts (1):",
                                              "  c on CPU at f32: pass -> timeout: ran past 5 s",
                                              "REGRESSED: 1 new crashes and timeouts"]


def test_json_is_strict_json():
    diff = diff_runs(_run(result("c", "pass", max_abs=0.0)), _run(result("c", "pass", max_abs=1e-3)))
    data = json.loads(json.dumps(diff.to_json(), allow_nan=False))
    assert data["regressed"] and data["drift"][0]["factor"] == "inf"


@pytest.mark.parametrize("factor", [0.5, math.nan])
def test_drift_factor_below_one_is_refused(factor):
    with pytest.raises(BaselineError, match="drift factor"):
        diff_runs(_run(), _run(), drift_factor=factor)


# ----------------------------------------------------------------------------- merge

def _shards(partial: bool = False) -> list[RunResults]:
    run = sample_run()
    half = len(run.results) // 2
    first = RunResults({**run.meta, "shard": "1/2", "started": "2026-01-01T10:00:00+00:00",
                        "finished": "2026-01-01T10:03:00+00:00"}, run.results[:half])
    second = RunResults({**run.meta, "shard": "2/2", "host": {"name": "host-2"}, "started": "2026-01-01T09:59:00+00:00",
                         "finished": "2026-01-01T10:02:00+00:00"}, run.results[half:], partial=partial)
    return [first, second]


@pytest.mark.parametrize("partial", [False, True])
def test_merge_joins_shards(partial):
    merged = merge_runs(_shards(partial))
    assert merged.results == sample_run().results and merged.partial == partial
    assert (merged.meta["started"], merged.meta["finished"]) == ("2026-01-01T09:59:00+00:00",
                                                                 "2026-01-01T10:03:00+00:00")
    assert [(s["shard"], s["host"], s["results"]) for s in merged.meta["shards"]] == [("1/2", "host-1", 7),
                                                                                       ("2/2", "host-2", 8)]
    assert merged.meta["shard"] is None


def test_merge_of_merges_stays_flat_and_identical_duplicates_are_fine():
    first, second = _shards()
    merged = merge_runs([merge_runs([first, second]), second])
    assert len(merged.results) == len(sample_run().results)
    assert [s["shard"] for s in merged.meta["shards"]] == ["1/2", "2/2", "2/2"]


def test_merge_joins_devices():
    merged = merge_runs([_run(result("a", "pass")), _run(result("a", "skip", device="GPU"), devices=["GPU"])])
    assert merged.meta["devices"] == ["CPU", "GPU"] and len(merged.results) == 2


@pytest.mark.parametrize("runs, message", [
    ([_run(result("a", "pass")), _run(result("a", "fail"))], "a on CPU at f32 is in one.json and in two.json"),
    ([_run(), _run(openvino_version="2025.3.0")],
     r"differ in openvino_version \(one.json: 2026.4.1; two.json: 2025.3.0\)"),
    ([_run(), _run(suites=["full"])], r"differ in suites \(one.json: smoke; two.json: full\)"),
    ([], "no results to merge"),
])
def test_merge_refuses(runs, message):
    with pytest.raises(MergeError, match=message):
        merge_runs(runs, names=["one.json", "two.json"][:len(runs)])



def test_a_merge_of_some_shards_only_is_partial_and_names_the_missing_ones():
    first, second = _shards()
    merged = merge_runs([first])
    assert merged.partial and merged.meta["missing_shards"] == ["2/2"]
    assert "missing_shards" not in merge_runs([first, second]).meta
