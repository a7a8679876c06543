"""Results files as a user may hand them over: each wrong line or field is one clear line and
exit 2, never counted as done, never an internal error; a full disk is said."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from conftest_harness import sample_run

from irtool.cli.program import main
from irtool.harness.store import JsonlWriter, StoreError, load_results, read_jsonl, write_json
from irtool.jobs.records import result_to_json

HEADER_META = {"suites": ["s.toml"], "devices": ["CPU"], "precisions": ["f32"]}
HEADER = json.dumps({"run": HEADER_META})
GOOD = json.dumps(result_to_json(sample_run().results[0]))


def _jsonl(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "results.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def _with(**fields) -> str:
    record = result_to_json(sample_run().results[0])
    record.update(fields)
    return json.dumps({k: v for k, v in record.items() if v is not ...})


@pytest.mark.parametrize("lines, says", [
    ((HEADER, "5"), r":2: 5 is not a JSON object"),
    ((HEADER, '"running"'), r':2: "running" is not a JSON object'),
    ((HEADER, "null"), r":2: null is not a JSON object"),
    (('{"run": 5}',), r":1: the run header holds 5; expected an object"),
    (('{"verdict": "pass"}',), r':1: expected the run header \{"run": \{...\}\} first'),
    ((HEADER, '{"verdict": "pass"}'), r":2: a result without case, suite, device, precision"),
    ((HEADER, _with(verdict="running")), r":2: unknown verdict 'running'; verdicts are pass, fail"),
    ((HEADER, _with(max_abs="big")), r":2: field 'max_abs' is 'big'; expected a number or null"),
    ((HEADER, _with(outputs=[{"name": "Y", "total": "64"}])), r":2: outputs\[0\].total is '64'; expected an integer"),
    ((HEADER, _with(device=...)), r":2: a result without device"),
    ((HEADER, GOOD, HEADER), r":3: a second run header"),
    (('{"run": {"devices": "CPU"}}',), r":1: run field 'devices' is \"CPU\"; expected a list of strings"),
    # times whose sums overflow to inf in junit.xml, or that no job takes
    ((HEADER, _with(time=1.7e308)), r":2: field 'time' is 1.7e\+308; expected a number of seconds from 0 to 1e\+09"),
    ((HEADER, _with(compile_time=-1)), r":2: field 'compile_time' is -1; expected a number of seconds from 0"),
], ids=["int", "string", "null", "run-int", "verdict-only-first", "verdict-only", "unknown-verdict", "wrong-type",
        "output-type", "missing-field", "two-headers", "meta-type", "huge-time", "negative-time"])
def test_a_wrong_line_is_named(tmp_path, capsys, lines, says):
    path = _jsonl(tmp_path, *lines)
    with pytest.raises(StoreError, match=says):
        read_jsonl(path)
    for command in (["report", "render", str(path), "-o", str(tmp_path / "out")],
                    ["report", "diff", str(path), str(path)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "internal error" not in err and str(path) in err


def test_a_good_file_reads_and_a_torn_last_line_is_dropped(tmp_path):
    path = _jsonl(tmp_path, HEADER, GOOD)
    with open(path, "a") as handle:
        handle.write(GOOD[:30])
    run = read_jsonl(path)
    assert len(run.results) == 1 and run.meta["devices"] == ["CPU"]


@pytest.mark.parametrize("change, says", [
    (lambda data: data.update(results=5), "'results' is 5; expected a list of results"),
    (lambda data: data["results"].__setitem__(1, 5), r"results\[1\]: a result is a JSON object, not 5"),
    (lambda data: data["results"][2].update(outputs=[{"shape": "2x3"}]),
     r"results\[2\]: outputs\[0\].shape is '2x3'; expected a list of integers"),
    (lambda data: data.update(precisions=None), "run field 'precisions' is null; expected a list of strings"),
], ids=["results-int", "result-int", "output-shape", "meta-null"])
def test_a_wrong_results_json_is_named(tmp_path, capsys, change, says):
    path = tmp_path / "results.json"
    write_json(path, sample_run())
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    with pytest.raises(StoreError, match=says):
        load_results(path)
    assert main(["report", "render", str(path), "-o", str(tmp_path / "out")]) == 2
    assert main(["report", "diff", str(path), str(path)]) == 2
    assert "internal error" not in capsys.readouterr().err


@pytest.mark.parametrize("make", [lambda p: os.mkfifo(p), None], ids=["fifo", "dev-zero"])
def test_a_fifo_or_device_as_results_never_blocks(tmp_path, capsys, make):
    path = tmp_path / "results.json"
    if make is None:
        path = Path("/dev/zero")
    else:
        make(path)
    assert main(["report", "render", str(path), "-o", str(tmp_path / "out")]) == 2
    assert "irtool reads only regular files" in capsys.readouterr().err


def test_disk_full_while_appending_is_said(small_disk):
    """A tmpfs filled to the last byte fails the next write with ENOSPC, as a full disk does."""
    path = small_disk / "results.jsonl"
    writer = JsonlWriter(path, HEADER_META, append=False)
    filler = os.open(small_disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(filler, b"\0" * 512):
            pass
    except OSError:
        pass  # full
    finally:
        os.close(filler)
    with pytest.raises(StoreError, match="results.jsonl: disk full"):
        for k in range(100):  # each of its own job: a results.jsonl holds one result per job
            writer.append(dataclasses.replace(sample_run().results[0], case=f"gru-{k}"))
    writer.close()  # after the failure: no second error, the handle is closed
    (small_disk / "filler").unlink()
    assert read_jsonl(path).meta["devices"] == ["CPU"]  # what was written before stays readable


def test_results_json_is_written_a_result_per_line_and_reads_back_the_same(tmp_path):
    """Written as it goes (never one string of the whole run): the run's fields, then one line per result."""
    run = sample_run()
    run.results[0].outputs[0]["step_max_abs"] = [float("inf"), float("nan"), 1e-7]
    write_json(tmp_path / "results.json", run, {"openvino_diffs": []})
    lines = (tmp_path / "results.json").read_text().splitlines()
    result_lines = [line for line in lines if line.startswith('  {"case": ')]
    assert len(result_lines) == len(run.results) and lines[-2:] == [" ]", "}"]
    again = load_results(tmp_path / "results.json")
    assert again.meta == run.meta and len(again.results) == len(run.results)
    assert [r.key for r in again.results] == [r.key for r in run.results]
    assert again.results[1:] == run.results[1:]
    steps = again.results[0].outputs[0]["step_max_abs"]
    assert steps[0] == float("inf") and steps[1] != steps[1] and steps[2] == 1e-7
    write_json(tmp_path / "empty.json", type(run)(run.meta, []))
    assert load_results(tmp_path / "empty.json").results == []


def test_a_results_json_holding_one_job_twice_is_refused_naming_both(tmp_path, capsys):
    """A duplicated result would count twice in every report made from it."""
    run = sample_run()
    run.results.append(run.results[2])
    write_json(tmp_path / "results.json", run)
    assert main(["report", "render", str(tmp_path / "results.json"), "-o", str(tmp_path / "out")]) == 2
    assert (f"results.json: results[{len(run.results) - 1}]: a second result of gru-fail on CPU at f32 (the first is "
            "results[2])") in capsys.readouterr().err
