"""``irtool build``: options made from the spec, models that validate and run, one-line refusals."""
from __future__ import annotations

import importlib.util
import os
import re

import pytest

from irtool.cli.build_cmd import command_name
from irtool.cli.program import build_parser, main
from irtool.specs import registry
from irtool.specs.cases import OpCase

HAS_VALIDATE = importlib.util.find_spec("irtool.cli.validate_cmd") is not None


def build(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["build", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def option_strings(op: str) -> set[str]:
    build_action = next(a for a in build_parser()._subparsers._group_actions[0].choices["build"]._actions
                        if a.dest == "op")
    return {s for action in build_action.choices[op]._actions for s in action.option_strings}


@pytest.mark.parametrize("spec", [s for s in registry() if s.family and registry().get(s.type) is s],
                         ids=lambda s: s.type)
def test_every_spec_attribute_is_an_option(spec):
    options = option_strings(command_name(spec.type))
    for name in spec.attributes:
        assert "--" + name.replace("_", "-") in options
    assert {"--batch", "--batch-size", "--input-size", "-o", "--weights-as-parameters", "--dynamic"} <= options


def test_command_names():
    assert [command_name(t) for t in ("GRUSequence", "LSTMCell", "RNNCell")] == ["gru-sequence", "lstm-cell", "rnn-cell"]


def test_issue_example_builds_validates_and_runs(capsys, tmp_path):
    path = tmp_path / "gru.xml"
    code, out, err = build(capsys, "gru-sequence", "--hidden-size", "16", "--input-size", "16", "--batch", "1",
                           "--seq-length", "4", "--direction", "bidirectional", "--linear-before-reset", "-o", str(path))
    assert code == 0, err
    assert out.startswith(f"wrote {path} and gru.bin: GRUSequence-5 ") and "linear_before_reset=true" in out
    assert main(["run", str(path), "-d", "CPU"]) == 0


BUILDS = {
    "gru-sequence": ["--hidden-size", "4", "--direction", "reverse", "--dynamic", "batch,seq_length"],
    "lstm-sequence": ["--hidden-size", "4", "--direction", "bidirectional", "--weights-as-parameters",
                      "--clip", "0.5", "--activations", "sigmoid,relu,tanh"],
    "rnn-sequence": ["--hidden-size", "4", "--direction", "forward", "--seq-length", "2"],
    "gru-cell": ["--hidden-size", "4", "--linear-before-reset", "--element-type", "f16"],
    "lstm-cell": ["--hidden-size", "4", "--weights-as-parameters"],
    "rnn-cell": ["--hidden-size", "4", "--activations", "relu"],
}


@pytest.mark.skipif(not HAS_VALIDATE, reason="irtool validate is not in this checkout yet")
@pytest.mark.parametrize("op", list(BUILDS))
def test_built_models_validate_with_no_error(op, capsys, tmp_path):
    path = tmp_path / f"{op}.xml"
    assert build(capsys, op, *BUILDS[op], "-o", str(path))[0] == 0
    assert main(["validate", str(path)]) == 0, capsys.readouterr()


@pytest.mark.parametrize("argv, message", [
    (["lstm-sequence", "--op-version", "1", "--hidden-size", "4", "--direction", "forward"],
     "LSTMSequence-1 cannot be built: OpenVINO 2026 cannot load LSTMSequence with version=\"opset1\"; LSTMSequence-5"),
    (["gru-sequence", "--hidden-size", "4", "--direction", "forward", "--dynamic", "hidden"],
     "--dynamic hidden: expected some of batch_size, seq_length, input_size, batch"),
    (["gru-sequence", "--hidden-size", "4", "--direction", "forward", "--activations", "sigmoid,softsign"],
     "'softsign' is not one of relu, sigmoid, tanh"),
    (["gru-sequence", "--hidden-size", "4", "--direction", "forward", "--activations", "tanh"],
     "has 1 items, expected 2"),
    (["gru-sequence", "--hidden-size", "x", "--direction", "forward"], "argument --hidden-size: 'x' is not an integer"),
    (["gru-sequence", "--hidden-size", "4"], "the following arguments are required: --direction"),
    (["gru-cell", "--hidden-size", "0"], "out of range"),
])
def test_refusals_are_one_line_and_exit_2(argv, message, capsys, tmp_path):
    code, out, err = build(capsys, *argv, "-o", str(tmp_path / "m.xml"))
    assert code == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("irtool: error:")]
    assert len(errors) == 1 and message in errors[0], err
    assert list(tmp_path.iterdir()) == []


def test_build_without_an_op_is_a_usage_error(capsys):
    code, _, err = build(capsys)
    assert code == 2 and "name an op" in err


@pytest.mark.parametrize("argv, message", [
    (["--hidden-size", "12000"], r"GRUSequence-5 with hidden_size 12000, .*: about [\d.]+ GiB needed, more than 1.0 GiB "
                                 r"\(IRTOOL_MEMORY_LIMIT=1G\); make it smaller, or set IRTOOL_MEMORY_LIMIT"),
    (["--hidden-size", "4", "--batch", "10000000000000000000000"], r"about .* TiB needed, more than 1.0 GiB"),
    (["--hidden-size", "4", "--input-size", "1e20"], r"argument --input-size: invalid int value: '1e20'"),
    (["--hidden-size", "4", "--seed", "-1"], r"argument --seed: -1: a seed is an integer from 0 to 2\*\*63-1"),
], ids=["hidden-12000", "huge-batch", "input-size-float", "seed-negative"])
def test_sizes_and_seeds_are_checked_before_anything_is_allocated(argv, message, capsys, tmp_path, monkeypatch):
    """The memory limit is set to 1 GiB, so the figures are the same on any machine."""
    monkeypatch.setenv("IRTOOL_MEMORY_LIMIT", "1G")
    code, out, err = build(capsys, "gru-sequence", "--direction", "forward", *argv, "-o", str(tmp_path / "m.xml"))
    errors = [line for line in err.splitlines() if line.startswith("irtool: error:")]
    assert code == 2 and len(errors) == 1 and re.search(message, errors[0]), err
    assert list(tmp_path.iterdir()) == []


def test_the_memory_estimate_grows_with_the_sizes():
    """Weights grow with hidden_size squared, data with batch x seq_length: the estimate follows both."""
    def needed(**sizes):
        hidden = sizes.pop("hidden_size", 16)
        return OpCase("GRUSequence", {"hidden_size": hidden, "direction": "forward"}, sizes).memory_needed()

    assert 3.5 < needed(hidden_size=1024) / needed(hidden_size=512) < 4.5
    assert 1.8 < needed(batch_size=64, seq_length=64) / needed(batch_size=32, seq_length=64) < 2.2
    assert needed(hidden_size=12000) > 3 * 12000 * 12000 * 4  # R alone is 1.6 GiB at f32


@pytest.mark.parametrize("target, message", [
    (lambda tmp, node: tmp / "dir.xml", r"dir.xml: a directory; irtool writes the model file only as a new file or over"),
    (lambda tmp, node: node(tmp / "null.xml"), r"null.xml: a character device"),
    (lambda tmp, node: tmp / "gone" / "m.xml", r"m.xml: folder .*gone does not exist"),
], ids=["directory", "device", "no-folder"])
def test_output_targets_that_are_not_regular_files_are_refused(target, message, capsys, tmp_path, device_node):
    (tmp_path / "dir.xml").mkdir()
    path = target(tmp_path, device_node)
    code, _, err = build(capsys, "gru-cell", "--hidden-size", "4", "-o", str(path))
    assert code == 2 and re.search(message, err), err
    assert (tmp_path / "dir.xml").is_dir()


def test_a_failed_xml_rename_leaves_the_old_pair(capsys, tmp_path, monkeypatch):
    """build renames the .bin first: when the .xml rename fails, the old .bin comes back."""
    from irtool.core import files

    xml = tmp_path / "m.xml"
    assert build(capsys, "gru-cell", "--hidden-size", "4", "-o", str(xml))[0] == 0
    old = (xml.read_bytes(), xml.with_suffix(".bin").read_bytes())
    real = os.replace

    def fail_on_xml(source, target):
        if str(target).endswith("m.xml"):
            raise OSError(28, "No space left on device", str(target))
        real(source, target)

    monkeypatch.setattr(files.os, "replace", fail_on_xml)
    code, _, err = build(capsys, "gru-cell", "--hidden-size", "8", "--seed", "3", "-o", str(xml))
    assert code == 2 and "m.xml: disk full" in err, err
    assert (xml.read_bytes(), xml.with_suffix(".bin").read_bytes()) == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.bin", "m.xml"]
