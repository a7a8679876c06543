"""``irtool report diff|merge|render``: exit codes, what is printed, what is written."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest_harness import result, sample_run

from irtool.cli.program import main
from irtool.harness.store import JsonlWriter, RunResults, StoreError, load_results, read_jsonl, write_json
from irtool.jobs.records import result_to_json


def _save(folder: Path, run: RunResults) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "results.json", run)
    return folder / "results.json"


def _worse(run: RunResults) -> RunResults:
    """gru-b fails, lstm-a crashes, gru-a at bf16 drifts 5x, gru-fail is fixed."""
    changes = {("gru-b", "f32"): dict(verdict="fail", max_abs=0.2, message="Y: 9 of 64 outside"),
               ("lstm-a", "f32"): dict(verdict="crash", max_abs=None, message="worker died: signal 11"),
               ("gru-a", "bf16"): dict(max_abs=1.5e-2),
               ("gru-fail", "f32"): dict(verdict="pass", max_abs=1e-7, message="")}
    results = [dataclasses.replace(r, **changes.get((r.case, r.precision), {})) if r.device == "CPU" else r
               for r in run.results]
    return RunResults(dict(run.meta), results)


@pytest.fixture()
def runs(tmp_path) -> tuple[Path, Path]:
    return _save(tmp_path / "old", sample_run()), _save(tmp_path / "new", _worse(sample_run()))


def test_diff_reports_regressions_and_exits_1(runs, capsys):
    assert main(["report", "diff", str(runs[0]), str(runs[1])]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("old: ") and "OpenVINO 2026.4.1, CPU, GPU" in out[0]
    assert out[2:] == [
        "new failures (1):", "  gru-b on CPU at f32: pass -> fail, max abs 2e-07 -> 0.2 (x1e+06): Y: 9 of 64 outside",
        "new crashes and timeouts (1):", "  lstm-a on CPU at f32: pass -> crash: worker died: signal 11",
        "accuracy drift (max abs error grew more than 2x, past 1e-06) (1):",
        "  gru-a on CPU at bf16: pass -> pass, max abs 0.003 -> 0.015 (x5)",
        "fixed (1):", "  gru-fail on CPU at f32: fail -> pass, max abs 0.05 -> 1e-07 (x2e-06)",
        "REGRESSED: 1 new failures, 1 new crashes and timeouts, 1 accuracy drift"]


def test_diff_of_report_dirs_without_regression_exits_0(runs, capsys):
    assert main(["report", "diff", str(runs[1].parent), str(runs[1].parent)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "OK: no new failure, crash, drift, change of implementation or slowdown (0 fixed)")


def test_diff_options_and_json(runs, capsys):
    assert main(["report", "diff", str(runs[0]), str(runs[1]), "--drift-factor", "10", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["drift"] == [] and data["drift_factor"] == 10
    assert [c["case"] for c in data["new_failures"] + data["new_crashes"] + data["fixed"]] == [
        "gru-b", "lstm-a", "gru-fail"]


def test_diff_with_device_map(tmp_path, capsys):
    old = _save(tmp_path / "cpu", RunResults({}, [result("a", "pass", max_abs=1e-7)]))
    new = _save(tmp_path / "gpu", RunResults({}, [result("a", "fail", device="GPU", max_abs=0.1)]))
    assert main(["report", "diff", str(old), str(new), "--device-map", "CPU=GPU"]) == 1
    assert "  a on GPU at f32: pass on CPU -> fail, max abs 1e-07 -> 0.1 (x1e+06)" in capsys.readouterr().out


@pytest.mark.parametrize("args, says", [
    (["report", "diff", "{missing}", "{new}"], "no such results file"),
    (["report", "diff", "{junk}", "{new}"], "not a results.json"),
    (["report", "diff", "{old}", "{new}", "--drift-factor", "0.5"], "drift factor 0.5: expected a number >= 1"),
    (["report", "diff", "{old}", "{new}", "--device-map", "CPU"], "--device-map CPU: expected OLD=NEW, e.g. CPU=GPU"),
    (["report", "merge", "{old}", "{missing}", "-o", "{out}"], "no such results file"),
    (["report", "render", "{old}", "-o", "{junk}/out"], "cannot create the report folder"),
])
def test_unreadable_input_exits_2_with_one_line(tmp_path, runs, capsys, args, says):
    junk = tmp_path / "junk.json"
    junk.write_text("{not json")
    paths = {"old": runs[0], "new": runs[1], "missing": tmp_path / "missing.json", "junk": junk, "out": tmp_path / "o"}
    assert main([a.format(**paths) for a in args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("irtool: error: ") and says in err and err.count("\n") == 1


def _shard(folder: Path, results, shard: str) -> Path:
    return _save(folder, RunResults({**sample_run().meta, "shard": shard}, results))


def test_merge_writes_the_three_reports(tmp_path, capsys):
    run = sample_run()
    first = _shard(tmp_path / "s1", run.results[:5], "1/2")
    second = _shard(tmp_path / "s2", run.results[5:], "2/2")
    (first.parent / "reproducers" / "gru-fail-CPU-f32").mkdir(parents=True)  # each shard's own reproducers
    out = tmp_path / "merged"
    assert main(["report", "merge", str(first), str(second.parent), "-o", str(out)]) == 1  # it holds failures
    assert sorted(p.name for p in out.iterdir()) == [".irtool-files.json", "junit.xml", "report.html", "reproducers",
                                                     "results.json"]
    assert [p.name for p in (out / "reproducers").iterdir()] == ["gru-fail-CPU-f32"]
    merged = load_results(out)
    assert merged.results == run.results and [s["shard"] for s in merged.meta["shards"]] == ["1/2", "2/2"]
    assert capsys.readouterr().out.endswith(f": {len(run.results)} results (5 pass, 1 fail, 1 unjudged, 1 error, "
                                            "1 crash, 1 timeout, 3 skip, 1 xfail, 1 xpass)\n")


def test_merge_of_conflicting_shards_exits_2(tmp_path, capsys):
    first = _shard(tmp_path / "s1", [result("a", "pass")], "1/2")
    second = _shard(tmp_path / "s2", [result("a", "fail")], "2/2")
    assert main(["report", "merge", str(first), str(second), "-o", str(tmp_path / "out")]) == 2
    assert f"a on CPU at f32 is in {first} and in {second}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_render_a_partial_run_from_jsonl(tmp_path):
    jsonl = tmp_path / "results.jsonl"
    writer = JsonlWriter(jsonl, sample_run().meta, append=False)
    for record in sample_run().results[:4]:
        writer.append(record)
    writer.close()
    with open(jsonl, "a") as handle:
        handle.write('{"case": "torn')  # a killed writer's last line
    done = subprocess.run([sys.executable, "-m", "irtool", "report", "render", str(jsonl), "-o", str(tmp_path / "r")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "4 results (3 pass, 1 fail); partial run" in done.stdout
    assert 'class="warning"' in (tmp_path / "r" / "report.html").read_text()
    assert load_results(tmp_path / "r").partial


@pytest.mark.parametrize("after, partial", [
    ([{"end": {"results": 4, "finished": "2026-11-28T09:14:58Z"}}], False),
    ([{"end": {"results": 3}}], True),  # an end that does not count what the file holds
    ([{"end": {"results": 4}}, "result"], True),  # results after the end: a --resume that did not end
    ([{"end": {"results": 4}}, "result", {"end": {"results": 5, "finished": "2026-11-28T09:14:58Z"}}], False),
], ids=["ended", "miscounted", "resumed", "resumed-and-ended"])
def test_a_results_jsonl_is_whole_where_its_last_line_ends_the_run(tmp_path, after, partial):
    jsonl = tmp_path / "results.jsonl"
    run = sample_run()
    writer = JsonlWriter(jsonl, run.meta, append=False)
    for record in run.results[:4]:
        writer.append(record)
    writer.close()
    with open(jsonl, "a") as handle:
        for line in after:
            handle.write(json.dumps(result_to_json(run.results[4]) if line == "result" else line) + "\n")
    read = read_jsonl(jsonl)
    assert read.partial is partial
    assert read.meta["finished"] == (run.meta["finished"] if partial else "2026-11-28T09:14:58Z")  # the end's if whole


@pytest.mark.parametrize("end", ['{"results": "all"}', '{"results": -1}', '{"results": 0, "x": 1}', '5',
                                 '{"results": true}', '{"results": 18.0}', '{"results": 0, "finished": 5}'])
def test_a_malformed_end_of_a_run_is_named(tmp_path, end):
    jsonl = tmp_path / "results.jsonl"
    JsonlWriter(jsonl, sample_run().meta, append=False).close()
    with open(jsonl, "a") as handle:
        handle.write(f'{{"end": {end}}}\n')
    with pytest.raises(StoreError, match=r"results.jsonl:2: the end of the run holds .*; expected \{\"results\": N, "):
        read_jsonl(jsonl)


def test_render_elsewhere_brings_the_reproducers_its_links_lead_to(tmp_path, capsys):
    """``report render bad/results.json -o rendered/``: every reproducer link in rendered/report.html
    resolves inside rendered/ (copied there); a link whose folder is gone, or that leads out of
    the run's report dir, is dropped."""
    from lxml import html as lxml_html

    run = sample_run()  # gru-fail's reproducer: reproducers/gru-fail-CPU-f32
    gone = next(r for r in run.results if r.case == "lstm-error")
    gone.reproducer = "reproducers/lstm-error-CPU-f32"  # never written
    escape = next(r for r in run.results if r.case == "lstm-crash")
    escape.reproducer = "../secrets"
    (tmp_path / "secrets").mkdir()
    source = _save(tmp_path / "bad", run)
    folder = tmp_path / "bad" / "reproducers" / "gru-fail-CPU-f32"
    folder.mkdir(parents=True)
    (folder / "reproduce.py").write_text("print('hi')\n")
    assert main(["report", "render", str(source), "-o", str(tmp_path / "rendered")]) == 0
    page = lxml_html.parse(str(tmp_path / "rendered" / "report.html")).getroot()
    links = page.xpath("//a[@class='reproducer']/@href")
    assert links == ["reproducers/gru-fail-CPU-f32/"]
    assert (tmp_path / "rendered" / links[0] / "reproduce.py").read_text() == "print('hi')\n"
    stored = {r.case: r.reproducer for r in load_results(tmp_path / "rendered").results}
    assert stored["lstm-error"] is None and stored["lstm-crash"] is None
    assert not (tmp_path / "secrets" / "reproduce.py").exists() and not (tmp_path / "rendered" / "..secrets").exists()
    # rendering in place leaves everything as it was
    assert main(["report", "render", str(source), "-o", str(tmp_path / "bad")]) == 0
    assert {r.case: r.reproducer for r in load_results(source).results}["lstm-crash"] == "../secrets"


def test_render_with_a_baseline_puts_the_regressions_in_every_report(runs, tmp_path, capsys):
    assert main(["report", "render", str(runs[1]), "-o", str(tmp_path / "out"), "--baseline", str(runs[0])]) == 0
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [c["case"] for c in data["baseline_diff"]["new_failures"]] == ["gru-b"]
    assert data["baseline_diff"]["baseline"] == str(runs[0])
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert f'<testsuite name="baseline {runs[0]}" tests="3" failures="3"' in junit
    assert 'id="baseline"' in (tmp_path / "out" / "report.html").read_text()
    assert "baseline_diff" not in {k for k in load_results(tmp_path / "out").meta}  # derived: dropped when read


def test_render_xfail_applies_another_known_failures_file(runs, tmp_path, capsys):
    (tmp_path / "known.toml").write_text('[[xfail]]\ncase = "gru-b"\nreason = "bug 5"\n')
    assert main(["report", "render", str(runs[1]), "-o", str(tmp_path / "out"), "--xfail",
                 str(tmp_path / "known.toml")]) == 0
    results = {(r.case, r.device, r.precision): r for r in load_results(tmp_path / "out").results}
    gru_b = results[("gru-b", "CPU", "f32")]
    assert (gru_b.verdict, gru_b.raw_verdict, gru_b.known) == ("xfail", "fail", "bug 5")
    # an xfail stored without its raw verdict (an older irtool) stays as it was stored
    assert results[("gru-fail", "CPU", "bf16")].verdict == "xfail"


def _only(run: RunResults, prefix: str, rename: str = "") -> RunResults:
    """The jobs of ``run`` whose case starts with ``prefix``, their cases renamed ``rename + case``."""
    return RunResults(dict(run.meta), [dataclasses.replace(r, case=rename + r.case) for r in run.results
                                       if r.case.startswith(prefix)])


def test_diff_of_runs_with_no_job_in_common_compared_nothing_and_exits_3(tmp_path, capsys):
    old = _save(tmp_path / "old", _only(sample_run(), "gru-a"))
    new = _save(tmp_path / "new", _only(sample_run(), "gru-a", "other-"))  # all pass: no new failure
    assert main(["report", "diff", str(old), str(new)]) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "nothing compared: no job of NEW is in OLD"
    assert main(["report", "diff", str(old), str(new), "--format", "json"]) == 3
    assert json.loads(capsys.readouterr().out)["compared"] == 0


def test_diff_of_runs_that_share_one_job_stays_ok(tmp_path, capsys):
    old = _save(tmp_path / "old", _only(sample_run(), "gru-a"))
    partial = _only(sample_run(), "gru-a", "other-")
    partial.results.append(_only(sample_run(), "gru-a").results[0])
    new = _save(tmp_path / "new", partial)
    assert main(["report", "diff", str(old), str(new)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("OK: ")


def test_render_xfail_notes_an_entry_that_matches_no_result(runs, tmp_path, capsys):
    (tmp_path / "known.toml").write_text('[[xfail]]\ncase = "gru-b"\nreason = "bug 5"\n'
                                         '[[xfail]]\ncase = "gru-bb"\nreason = "a typo"\n')
    assert main(["report", "render", str(runs[1]), "-o", str(tmp_path / "out"), "--xfail",
                 str(tmp_path / "known.toml")]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"irtool: note: known failure 'gru-bb' ({tmp_path / 'known.toml'}) matched no job of this run"]
