"""Stable keys of nodes whose names OpenVINO makes by its process-wide counter.

A TensorFlow cell in a Loop body has no name of its own: OpenVINO calls it LSTMCell_77 in one
process and LSTMCell_11647 after converting another model first.  Its results (CASE::NODE,
--atol NODE:PORT, reproducer folders, reduce --node) are keyed by its place instead,
``LSTMCell@1``, the same in every run, order, shard and process; names a model gives its nodes
(an IR file's, an ONNX graph's) stay the keys.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from irtool.cli.program import main
from irtool.pipeline.prepare import read_and_prepare
from irtool.runtime.nodes import generated_name

MODELS = Path(__file__).resolve().parent.parent / "samples" / "models"
TF = MODELS / "tf"


@pytest.mark.parametrize("name, op_type, generated", [
    ("LSTMCell_11647", "LSTMCell", True),
    ("GRUSequence_2978", "GRUSequence", True),
    ("LSTMCell_77", "GRUCell", False),  # another type's name
    ("while/BlockLSTM", "LSTMCell", False),
    ("LSTMCell_", "LSTMCell", False),
    ("lstm0", "LSTMSequence", False),
])
def test_a_generated_name_is_openvinos_type_and_counter(name, op_type, generated):
    assert generated_name(name, op_type) is generated


def test_a_converted_cell_keeps_its_key_after_another_conversion_moved_the_counter():
    first = read_and_prepare(TF / "block_lstm_while.pb").nodes
    read_and_prepare(TF / "gru_block_while.pb")  # OpenVINO's counter moves on
    second = read_and_prepare(TF / "block_lstm_while.pb").nodes
    assert [n.name for n in first] != [n.name for n in second]  # the names did change: the check is not vacuous
    assert [n.key for n in first] == [n.key for n in second] == ["LSTMCell@1"]


@pytest.mark.parametrize("model, keys", [
    (MODELS / "gru_lengths.xml", ["GRUSequence_2978"]),  # an IR file's names are the file's, counter-like or not
    (MODELS / "torch" / "gru.xml", ["__module.gru/aten::gru/GRUSequence"]),
])
def test_names_a_model_gives_stay_the_keys(model, keys):
    nodes = read_and_prepare(model).nodes
    assert [n.key for n in nodes] == [n.name for n in nodes] == keys


def test_an_onnx_models_nodes_keep_their_onnx_names(capsys):
    code = main(["run", str(MODELS / "lstm2_bidirectional.onnx"), "-d", "CPU", "--format", "json"])
    assert code == 0
    assert [n["name"] for n in json.loads(capsys.readouterr().out)["nodes"]] == ["lstm0", "lstm1"]


def test_irtool_run_shows_the_stable_key_and_says_the_name_it_runs_as(capsys):
    code = main(["run", str(TF / "block_lstm_while.pb"), "-d", "CPU", "--format", "json"])
    (node,) = json.loads(capsys.readouterr().out)["nodes"]
    assert code == 0 and node["name"] == "LSTMCell@1" and node["verdict"] == "pass"
    assert node["converted_to"].startswith("LSTMCell_") and node["implementation"]  # what ran is still found
    code = main(["run", str(TF / "block_lstm_while.pb"), "-d", "CPU"])
    out = capsys.readouterr().out
    assert code == 0 and "LSTMCell@1" in out and "LSTMCell_" not in out.split("where each node sits")[0]


def _suite_ids(tmp_path: Path, name: str, models: list[str], *options: str) -> list[str]:
    suite = tmp_path / f"{name}.toml"
    suite.write_text("".join(f'[[models]]\nid = "{m}"\npath = "{TF / m}.pb"\ninputs = "{TF / m}.inputs.npz"\n'
                             for m in models))
    out = tmp_path / name
    done = subprocess.run([sys.executable, "-m", "irtool", "harness", str(suite), "-d", "CPU", "--report-dir", str(out),
                           "--no-progress", "-j", "1", *options], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return sorted(r["case"] for r in json.loads((out / "results.json").read_text())["results"])


def test_suite_ids_are_the_same_in_any_order_and_shard(tmp_path):
    ids = ["block_lstm_while[inputs]::LSTMCell@1", "gru_block_while[inputs]::GRUCell@1"]
    assert _suite_ids(tmp_path, "ba", ["block_lstm_while", "gru_block_while"]) == ids
    sharded = [_suite_ids(tmp_path, "s1", ["gru_block_while", "block_lstm_while"], "--shard", "1/2"),
               _suite_ids(tmp_path, "s2", ["gru_block_while", "block_lstm_while"], "--shard", "2/2")]
    assert sorted(sharded[0] + sharded[1]) == ids and all(len(one) == 1 for one in sharded)  # each model alone
