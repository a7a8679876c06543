"""Hostile numbers and nesting in every JSON and TOML file irtool reads, and in --openvino
releases: each is one line naming the file and the limit, exit 2, never an internal error.

Each class has a generator (deep nesting, a 5,000-digit integer, a hexadecimal one) that
writes a small file at test time into each place a user can hand one over.
"""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Callable

import pytest
from conftest_harness import sample_run

from irtool.cli.program import main
from irtool.core.documents import INT_HIGH, INT_LOW, MAX_DEPTH, load_json, load_toml
from irtool.harness.store import write_json
from irtool.jobs.records import result_to_json

DEEP = 5000  # far past the recursion limit of json and tomllib
DIGITS = 5000  # past int()'s 4,300 digits
HUGE = "9" * DIGITS
NESTED = "[" * DEEP + "]" * DEEP

# (what a value is written as in TOML, what the refusal says)
TOML_VALUES = {
    "deep": (NESTED, f"nested more than {MAX_DEPTH} deep"),
    "digits": (f"[{HUGE}]", r"the integer 999999999999\.\.\. \(5000 characters\) does not fit in 64 bits"),
    "hex": ("[0x" + "f" * DIGITS + "]", r"the integer 0xffffffffff\.\.\. \(5002 characters\) does not fit in 64 bits"),
    "dotted": (None, f"nested more than {MAX_DEPTH} deep"),  # a.a.a...a = 1: tables in tables
}
# (a JSON value, what the refusal says)
JSON_VALUES = {
    "deep": (NESTED, f"nested more than {MAX_DEPTH} deep"),
    "digits": (HUGE, r"the integer 999999999999\.\.\. \(5000 characters\) does not fit in 64 bits"),
}


def _cli(argv: list[str], capsys) -> tuple[int, list[str]]:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    return code, [line for line in err.splitlines() if line.strip()]


def _suite_with(tmp_path: Path, kind: str, where: str = "grid") -> Path:
    """A suite whose [[grid]] seeds (or its known-failures file's entry) hold the hostile value."""
    value, _ = TOML_VALUES[kind]
    path = tmp_path / "suite.toml"
    if where == "grid":
        body = ("[suite]\nname = \"x\"\n" + (".".join(["a"] * DEEP) + " = 1\n" if value is None else
                                             f"[[grid]]\nop = \"RNNCell\"\nseeds = {value}\n"))
    else:
        (tmp_path / "known.toml").write_text("[[xfail]]\ncase = \"*\"\nreason = \"r\"\n"
                                             + (".".join(["a"] * DEEP) + " = 1\n" if value is None else
                                                f"seed = {value}\n"))
        body = ("[suite]\nname = \"x\"\nexpected_failures = \"known.toml\"\n[[grid]]\nop = \"RNNCell\"\n"
                "attributes = { hidden_size = [2] }\nsizes = { batch_size = [1], input_size = [1] }\n")
    path.write_text(body)
    return path


@pytest.mark.parametrize("kind", TOML_VALUES)
@pytest.mark.parametrize("where", ["grid", "known-failures"])
def test_a_hostile_suite_or_known_failures_file_is_one_line(tmp_path, capsys, kind, where):
    suite = _suite_with(tmp_path, kind, where)
    code, err = _cli(["harness", suite, "-d", "CPU", "--report-dir", tmp_path / "out"], capsys)
    name = "suite.toml" if where == "grid" else "known.toml"
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"irtool: error: {tmp_path / name}: not valid TOML: ")
    assert re.search(TOML_VALUES[kind][1], err[0])
    assert not (tmp_path / "out").exists()  # refused before anything was written


def _record_with(value: str) -> str:
    """A results.jsonl line of a real result whose seed is the hostile JSON text."""
    text = json.dumps({**result_to_json(sample_run().results[2]), "seed": 12345})
    return text.replace('"seed": 12345', f'"seed": {value}')


def _results_jsonl(folder: Path, kind: str) -> Path:
    path = folder / "results.jsonl"
    path.write_text(json.dumps({"run": {"devices": ["CPU"], "precisions": ["f32"]}}) + "\n"
                    + _record_with(JSON_VALUES[kind][0]) + "\n")
    return path


def _results_json(folder: Path, kind: str) -> Path:
    path = folder / "results.json"
    write_json(path, sample_run())
    text = path.read_text()
    path.write_text(text.replace('"seed": 0', f'"seed": {JSON_VALUES[kind][0]}', 1))
    return path


def _case_json(folder: Path, kind: str) -> Path:
    """A reproducer folder whose case.json holds the hostile value."""
    folder = folder / "repro"
    folder.mkdir()
    for name in ("model.xml", "inputs.npz"):
        (folder / name).write_bytes(b"x")
    (folder / "case.json").write_text('{"device": "CPU", "precision": "f32", "tolerances": {}, "case": {"seed": '
                                      + JSON_VALUES[kind][0] + "}}")
    return folder


MAKERS: dict[str, Callable[[Path, str], Path]] = {"jsonl": _results_jsonl, "json": _results_json}


@pytest.mark.parametrize("kind", JSON_VALUES)
@pytest.mark.parametrize("form", MAKERS)
@pytest.mark.parametrize("command", ["render", "merge", "diff-old", "diff-new", "baseline"])
def test_a_hostile_results_file_is_one_line(tmp_path, capsys, kind, form, command):
    hostile = MAKERS[form](tmp_path, kind)
    good = tmp_path / "good" / "results.json"
    good.parent.mkdir()
    write_json(good, sample_run())
    argv = {"render": ["report", "render", hostile, "-o", tmp_path / "out"],
            "merge": ["report", "merge", good, hostile, "-o", tmp_path / "out"],
            "diff-old": ["report", "diff", hostile, good], "diff-new": ["report", "diff", good, hostile],
            "baseline": ["harness", tmp_path / "none.toml", "-d", "CPU", "--baseline", hostile,
                         "--report-dir", tmp_path / "out"]}[command]
    if command == "baseline":  # a suite that is fine, so that the baseline is what is refused
        (tmp_path / "none.toml").write_text('[suite]\nname = "x"\n[[grid]]\nop = "RNNCell"\n'
                                            "attributes = { hidden_size = [2] }\n")
    code, err = _cli(argv, capsys)
    assert code == 2 and len(err) == 1
    where = f"{hostile}:2: " if form == "jsonl" else f"{hostile}: "
    assert err[0].startswith(f"irtool: error: {where}not a")
    assert re.search(JSON_VALUES[kind][1], err[0])
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", JSON_VALUES)
def test_a_hostile_case_json_is_one_line(tmp_path, capsys, kind):
    folder = _case_json(tmp_path, kind)
    code, err = _cli(["reduce", folder, "-o", tmp_path / "out"], capsys)
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"irtool: error: {folder / 'case.json'}: cannot read it as JSON (")
    assert re.search(JSON_VALUES[kind][1], err[0])


@pytest.mark.parametrize("release, says", [
    ("2025." + HUGE, r"--openvino 2025\.9{35}\.\.\. \(5005 characters\): expected a version pip resolves \(a release such as 2025\.4\.1"),
    ("2025.4.1." + "1" * 10, r"--openvino 2025\.4\.1\.1111111111: expected a version pip resolves"),  # 10 digits: no release
    ("2025.1.1.1.1.1.1", r"--openvino 2025\.1\.1\.1\.1\.1\.1: expected a version pip resolves"),  # seven numbers
    ("२०२५.४.१", r"--openvino २०२५\.४\.१: expected a version pip resolves"),  # digits, but not ASCII ones (pip's)
])
@pytest.mark.parametrize("command", ["run", "harness"])
def test_a_hostile_openvino_release_is_one_line(tmp_path, capsys, samples_dir, release, says, command):
    suite = tmp_path / "s.toml"
    suite.write_text('[suite]\nname = "x"\n[[grid]]\nop = "RNNCell"\nattributes = { hidden_size = [2] }\n')
    argv = (["run", samples_dir / "valid" / "gru_cell.xml", "-d", "CPU"] if command == "run" else
            ["harness", suite, "-d", "CPU", "--report-dir", tmp_path / "out"])
    code, err = _cli([*argv, "--openvino", release], capsys)
    assert code == 2 and len(err) == 1 and re.search(says, err[0])


def test_results_naming_a_release_of_5000_digits_are_ordered_without_int(tmp_path, capsys):
    """Release labels come from results files too (a run of several releases): ordering them never
    converts a number of thousands of digits."""
    run = sample_run()
    long_release = "2025." + HUGE
    run.meta["openvino_releases"] = {"2025.4.1": {"release": "2025.4.1"}, long_release: {"release": long_release}}
    for result, release in zip(run.results, ["2025.4.1", long_release] * len(run.results)):
        result.openvino = release
    write_json(tmp_path / "results.json", run)
    code, err = _cli(["report", "render", tmp_path / "results.json", "-o", tmp_path / "out"], capsys)
    assert code == 0 and err == []
    assert "OpenVINO 2025.4.1 &rarr; 2025.9999" in (tmp_path / "out" / "report.html").read_text()


# ----------------------------------------------------------------------------- the readers themselves

def _nested(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


@pytest.mark.parametrize("text", [_nested(MAX_DEPTH), '{"a":' * (MAX_DEPTH - 1) + "[]" + "}" * (MAX_DEPTH - 1),
                                  '["' + "[" * 10_000 + '"]',  # brackets in a string are text
                                  "[" + "[]," * 10_000 + "[]]"])  # many brackets, two deep
def test_json_within_the_bounds_reads_as_json_does(text):
    assert load_json(text) == json.loads(text)


@pytest.mark.parametrize("text, says", [
    (_nested(MAX_DEPTH + 1), f"nested more than {MAX_DEPTH} deep"),
    ('{"a":' * MAX_DEPTH + "[]" + "}" * MAX_DEPTH, f"nested more than {MAX_DEPTH} deep"),
    ("[" * DEEP, f"nested more than {MAX_DEPTH} deep"),  # never closed
    (str(INT_HIGH + 1), "does not fit in 64 bits"), (str(INT_LOW - 1), "does not fit in 64 bits"),
    (HUGE, r"999999999999\.\.\. \(5000 characters\) does not fit"), ("[NaN]", "NaN is not JSON"),
    ("[" * 70 + "}" * 70, "Expecting value"),  # brackets that do not pair: JSON's own syntax error
])
def test_json_past_the_bounds_is_a_decode_error(text, says):
    with pytest.raises(json.JSONDecodeError, match=says):
        load_json(text)


def test_json_integers_at_the_bounds_are_read():
    assert load_json(f"[{INT_LOW}, {INT_HIGH}, 1e999]") == [INT_LOW, INT_HIGH, float("inf")]


@pytest.mark.parametrize("text, says", [
    ("a = " + _nested(MAX_DEPTH + 1), "nested more than"), ("a = " + _nested(DEEP), "nested more than"),
    ("a = " + "{b = " * DEEP + "1" + "}" * DEEP, "nested more than"), (".".join(["a"] * DEEP) + " = 1", "nested more"),
    (f"a = {INT_HIGH + 1}", "does not fit in 64 bits"), (f"a = {HUGE}", "does not fit in 64 bits"),
    ("a = 0o" + "7" * DIGITS, "does not fit in 64 bits"), ("a = 0b" + "1" * 65, "does not fit in 64 bits"),
])
def test_toml_past_the_bounds_is_a_decode_error(text, says):
    with pytest.raises(tomllib.TOMLDecodeError, match=says):
        load_toml(text)


def test_toml_within_the_bounds_reads_as_tomllib_does():
    text = "a = " + _nested(MAX_DEPTH - 1) + f"\nb = {INT_HIGH}\nc = {INT_LOW}\nd = 0x{'f' * 16}\n" \
           + ".".join(["t"] * (MAX_DEPTH - 1)) + " = 1\n"
    assert load_toml(text) == tomllib.loads(text)


def test_no_other_reader_of_user_json_or_toml():
    """json.loads and tomllib.loads appear only where irtool reads its own files or its own
    processes' lines: every file a user can hand over goes through irtool.core.documents."""
    root = Path(__file__).resolve().parent.parent / "irtool"
    allowed = {"core/documents.py", "jobs/pool.py", "jobs/serve.py", "specs/opsets.py", "specs/loader.py", "specs/precision.py",
               "pipeline/reproducer.py", "jobs/environments.py", "reduce/reducer.py", "oracles/process.py",
               "oracles/child.py",
               "core/activity.py",  # the note a supervised child writes for its parent
               "reduce/check_script.py",  # the answers of a check script's driver
               "harness/pytest_plugin.py",  # what an xdist worker's report says each job ran as
               "jobs/zygote.py"}  # a pool's requests to its zygote, and its answers
    found = {str(p.relative_to(root)) for p in root.rglob("*.py")
             if "json.loads(" in p.read_text() or "tomllib.loads(" in p.read_text()}
    assert found <= allowed, found - allowed


@pytest.mark.parametrize("steps", [(1.7e308, 1e-3), (5e-324, 1e-3), (1.7e308, 5e-324), (5e-324, 5e-324),
                                   (1.7976931348623157e308, 0.0)])
def test_per_step_errors_at_the_ends_of_the_float_range_render(tmp_path, capsys, steps):
    """A results file whose per-step errors are the largest or the smallest floats: rendered, diffed
    and merged like any other (its plot's axis spans decades no float reaches)."""
    run = sample_run()
    failed = next(r for r in run.results if r.verdict == "fail")
    failed.outputs[0]["step_max_abs"] = list(steps)
    failed.outputs[0]["max_abs"] = failed.max_abs = max(steps)
    write_json(tmp_path / "results.json", run)
    code, err = _cli(["report", "render", tmp_path / "results.json", "-o", tmp_path / "out"], capsys)
    assert code == 0 and err == []
    assert (tmp_path / "out" / "report.html").read_text().count("<svg") >= 1
    assert _cli(["report", "diff", tmp_path / "results.json", tmp_path / "out"], capsys) == (0, [])


# ----------------------------------------------------------------------------- shards

@pytest.mark.parametrize("shard", ["1/" + HUGE, "1/10001", "१/२", "0/4", "3/2", "1/"])
def test_a_hostile_shard_is_one_line(tmp_path, capsys, shard):
    suite = tmp_path / "s.toml"
    suite.write_text('[suite]\nname = "x"\n[[grid]]\nop = "RNNCell"\nattributes = { hidden_size = [2] }\n')
    code, err = _cli(["harness", suite, "-d", "CPU", "--report-dir", tmp_path / "out", "--shard", shard], capsys)
    assert code == 2 and len(err) == 1
    assert re.search(r"--shard .{1,90}: expected K/N with 1 <= K <= N <= 10000, e\.g\. 2/4$", err[0])


@pytest.mark.parametrize("shard", ["1/999999999999", "1/" + HUGE, "1/²"])
def test_merging_a_shard_of_hostile_size_is_not_counted(tmp_path, capsys, shard):
    """A merged run lists the K/N slices no shard brought: a results file naming 1/999999999999
    must not make a trillion of them (it was a hang), nor a 5,000-digit N an internal error."""
    run = sample_run()
    run.meta["shard"] = shard
    write_json(tmp_path / "results.json", run)
    code, err = _cli(["report", "merge", tmp_path / "results.json", "-o", tmp_path / "out"], capsys)
    assert code == 1 and err == []  # the sample run's failures: its slices are not counted as missing
    assert "missing_shards" not in json.loads((tmp_path / "out" / "results.json").read_text())


# ----------------------------------------------------------------------------- lines

from irtool.core.text import LINE_LIMIT, cut, joined, series  # noqa: E402


def test_cut_keeps_short_text_and_says_the_length_of_long_text():
    assert cut("x" * LINE_LIMIT) == "x" * LINE_LIMIT
    long = cut("y" * 20_000_000)
    assert len(long) <= LINE_LIMIT and long.endswith("... (20,000,000 characters)")


def test_joined_names_the_first_items_and_counts_the_rest():
    assert joined(["a", "b"]) == "a, b"
    assert joined((f"n{k}" for k in range(100_000)), listed=3) == "n0, n1, n2, and 99,997 more"


def test_series_shows_both_ends_of_a_long_series():
    assert series([1, 2, 3]) == "1 2 3"
    text = series(range(3_000_000), ends=2)
    assert text == "0 1 ... (2,999,996 more) ... 2999998 2999999"


def _long_run():
    """A run whose failure message is 5 MB on one line and whose crash wrote a 1 MB stderr line."""
    run = sample_run()
    failed = next(r for r in run.results if r.verdict == "fail")
    failed.message = "outside tolerance: " + ", ".join(f"Y{k} (max abs 0.05, 3/64)" for k in range(200_000))
    crashed = next(r for r in run.results if r.verdict == "crash")
    crashed.stderr = ["E" * 1_000_000, "Aborted"]
    return run


def test_reports_of_a_run_with_megabyte_messages_have_bounded_lines(tmp_path, capsys):
    write_json(tmp_path / "old.json", sample_run())
    write_json(tmp_path / "new.json", _long_run())
    code, err = _cli(["report", "render", tmp_path / "new.json", "-o", tmp_path / "out"], capsys)
    assert code == 0 and err == []
    html = (tmp_path / "out" / "report.html").read_text()
    junit = (tmp_path / "out" / "junit.xml").read_text()
    assert len(html) < 1_000_000 and len(junit) < 100_000
    assert "... (5," in html and "(1,000,000 characters)" in junit
    assert main(["report", "diff", str(tmp_path / "old.json"), str(tmp_path / "new.json")]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) < LINE_LIMIT + 200


def test_a_worker_stderr_of_gigabyte_size_is_read_for_its_tail_only(tmp_path):
    """The last lines of a crashed worker's stderr come from its last 256 KiB, each cut to a line."""
    import tempfile

    from irtool.jobs.pool import STDERR_LINES, _Worker

    with tempfile.TemporaryFile() as stderr:
        stderr.write(b"x" * (64 << 20) + b"\n" + b"".join(b"line %d\n" % k for k in range(100)) + b"z" * 100_000)
        tail = _Worker(process=None, stderr=stderr).stderr_tail()  # type: ignore[arg-type]
    assert len(tail) == STDERR_LINES and tail[-2] == "line 99"
    assert tail[-1].startswith("zzz") and len(tail[-1]) <= LINE_LIMIT


# ----------------------------------------------------------------------------- numbers on the command line

@pytest.mark.parametrize("argv, says", [
    (["run", "MODEL", "-d", "CPU", "--shape", f"X=[{HUGE}]"], r"--shape X=\[9{10}.*: expected NAME=\[D,D,\.\.\.\]"),
    (["run", "MODEL", "-d", "CPU", "--seed", HUGE], r"argument --seed: .9{10}.*characters\)$"),
    (["harness", "SUITE", "-d", "CPU", "-j", HUGE], r"argument -j/--jobs: invalid int value: '9{10}.*characters\)$"),
    (["harness", "OPSUITE", "-d", "CPU"], r"no spec for RNNCell-9{10}.*characters\)$"),
], ids=["shape", "seed", "jobs", "op-version"])
def test_a_huge_number_on_the_command_line_or_in_an_op_name_is_one_bounded_line(tmp_path, capsys, samples_dir,
                                                                                 argv, says):
    from irtool.core.text import LINE_LIMIT

    (tmp_path / "s.toml").write_text('[suite]\nname = "x"\n[[grid]]\nop = "RNNCell"\nattributes = { hidden_size = [2] }\n')
    (tmp_path / "op.toml").write_text(f'[suite]\nname = "x"\n[[grid]]\nop = "RNNCell-{HUGE}"\n')
    places = {"MODEL": samples_dir / "valid" / "gru_cell.xml", "SUITE": tmp_path / "s.toml", "OPSUITE": tmp_path / "op.toml"}
    code, err = _cli([places.get(word, word) for word in argv] + ["--report-dir", tmp_path / "out"] * (argv[0] == "harness"),
                     capsys)
    assert code == 2 and re.search(says, err[-1]) and all(len(line) <= LINE_LIMIT + 20 for line in err)


def test_a_memory_limit_of_5000_digits_is_one_line(monkeypatch, capsys, samples_dir):
    monkeypatch.setenv("IRTOOL_MEMORY_LIMIT", HUGE)
    code, err = _cli(["run", samples_dir / "valid" / "gru_cell.xml", "-d", "CPU"], capsys)
    assert code == 2 and err == ["irtool: error: IRTOOL_MEMORY_LIMIT=" + "9" * 40 + "...: expected a size in bytes "
                                 "such as 64G, 512M or 1000000 (at most 15 digits), or none"]
