"""run's text fits 120 columns: the node table with its long text below it in plain words, and a
time series of any length summarised in a few bounded lines."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from irtool.cli.program import main
from irtool.cli.run_text import WIDTH, _node_table, step_summary
from irtool.judge.verdicts import NodeResult
from irtool.pipeline.build import build_and_save
from irtool.specs.cases import OpCase

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "samples" / "models"


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(["run", *argv])
    return code, capsys.readouterr().out


def test_a_split_node_is_said_in_plain_words_within_120_columns(capsys):
    code, out = run(capsys, str(MODELS / "lstm2_bidirectional.xml"), "-d", "CPU")
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= WIDTH
    assert "only its outputs are named" not in out
    table = [line for line in out.splitlines() if "LSTMSequence-5" in line]
    assert len(table) == 2 and all("RNNSeq x2 [a]" in line or " | " in line for line in table)
    text = " ".join(out.split())
    assert "[a] CPU ran the bidirectional node as one kernel per direction: forward " in text
    assert "1: top level (from Transpose 'Transpose_7', to Transpose 't0')" in text
    code, out = run(capsys, str(MODELS / "lstm2_bidirectional.xml"), "-d", "CPU", "--format", "json")
    assert all(node["implementation"].startswith("forward: ") and "; reverse: " in node["implementation"]
               for node in json.loads(out)["nodes"])  # data, as results store it


def test_long_names_are_cut_in_the_table_and_whole_below_it():
    name = "/encoder/layers.0/rnn/" + "very_long_scope/" * 4 + "GRU"  # longer than its column
    nodes = [NodeResult(name, "GRUSequence", 5, "the body of Loop 'outer'", "fail",
                        tensors=tuple(f"tensor_{k}_with_a_long_name" for k in range(12)),
                        implementation="TensorIterator (f32; decomposed)"),
             NodeResult("short", "GRUSequence", 5, "top level", "pass", implementation="not reported")]
    lines = _node_table(nodes, "CPU")
    assert max(len(line) for line in lines) <= WIDTH
    assert name not in lines[1] and "..." in lines[1]
    assert name in " ".join(lines) and "tensor_11_with_a_long_name" in " ".join(lines)
    text = " ".join(" ".join(lines).split())
    assert "[a] decomposed: the node runs as a loop over a cell" in text
    assert "[b] CPU reports no runtime layer that carries the node's name" in text


@pytest.mark.parametrize("count", [13, 120, 3_000_000])
def test_a_long_step_series_is_a_few_bounded_lines(count):
    steps = [1e-8] * count
    first = count * 2 // 3
    steps[first:] = [0.5] * (count - first)
    steps[count - 2] = 0.9
    lines = step_summary(tuple(steps), first, 1e-5)
    assert 2 <= len(lines) <= 3 and all(len(line) <= WIDTH for line in lines)
    assert lines[0] == (f"max abs per time step, {count} steps: worst 0.9 at step {count - 2}; "
                        f"{count - first} steps above atol 1e-05")
    assert lines[-1].startswith(f"  first outside tolerance at steps {first - 3}-{first + 2}: 1e-08 1e-08 1e-08 0.5")


def test_a_short_series_is_shown_whole():
    assert step_summary((0.1, float("nan"), 0.3), None, 1e-5) == ["max abs per time step: 0.1 nan 0.3"]


def test_a_run_of_120_steps_fits_120_columns(tmp_path, capsys):
    case = OpCase("GRUSequence", {"hidden_size": 2, "direction": "forward"},
                  {"batch_size": 1, "seq_length": 120, "input_size": 2})
    xml = build_and_save(case, tmp_path / "gru.xml")[0]
    code, out = run(capsys, str(xml), "-d", "CPU", "--atol", "0", "--rtol", "0")
    assert code == 1
    assert max(len(line) for line in out.splitlines()[1:]) <= WIDTH  # the first names the model path, kept whole
    assert "max abs per time step, 120 steps: worst" in out


def test_a_probed_copy_that_differs_by_nan_says_so_not_max_abs_0():
    import numpy as np

    from irtool.cli.run_text import probe_line
    from irtool.judge.compare import Tolerance, compare_output
    from irtool.pipeline.judging import ProbeCheck

    plain = np.array([1.0, 2.0, 3.0], np.float32)
    check = ProbeCheck((compare_output("y", np.array([1.0, np.nan, 3.0], np.float32), plain, Tolerance(1e-5, 1e-4)),))
    assert not check.passed
    assert probe_line(check) == ("  probed copy: the model's own outputs DIFFER from the unprobed compile (max abs inf; 1 "
                                 "value(s) NaN or infinite in one and not the other); the nodes judged may not be what "
                                 "the unprobed model runs")


@pytest.mark.parametrize("value, dtype, shown", [(1.7000000476837158, "float32", "1.7"), (True, "bool", "True"),
                                                 (3, "int64", "3")])
def test_a_scalar_input_is_shown_in_its_own_types_digits(value, dtype, shown):
    from irtool.cli.run_text import _scalar

    assert _scalar(value, dtype) == shown
