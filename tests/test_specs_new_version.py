"""Adding a version of an existing op is adding its spec file: a throw-away GRUSequence-6 (a copy of
GRUSequence-5 with opset6 and without linear_before_reset) dropped into a folder that
IRTOOL_EXTRA_SPECS names is picked up by validate, build, the CLI's build options and the
reference lookup, with no code edit."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from irtool.pipeline.build import build_model, buildable
from irtool.reference import evaluate, lookup
from irtool.specs import EXTRA_SPECS_VARIABLE, OPS_DIR, get_spec, registry
from irtool.specs.cases import OpCase

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "ir" / "valid" / "gru_sequence_forward.xml"


@pytest.fixture
def extra_specs(tmp_path, monkeypatch) -> Path:
    """A folder holding GRUSequence-6.json, named by IRTOOL_EXTRA_SPECS for this test and its subprocesses."""
    data = json.loads((OPS_DIR / "GRUSequence-5.json").read_text())
    data.update(version=6, opset="opset6", description="A throw-away GRUSequence without linear_before_reset.")
    del data["attributes"]["linear_before_reset"]
    bias = next(port for port in data["inputs"] if port.get("name") == "B")
    bias["shape"] = ["num_directions", "3*hidden_size"]
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "GRUSequence-6.json").write_text(json.dumps(data))
    monkeypatch.setenv(EXTRA_SPECS_VARIABLE, str(folder))
    return folder


def irtool(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irtool", *argv], capture_output=True, text=True,
                          env=dict(os.environ) if env is None else env, timeout=300)


def test_the_registry_picks_the_new_version_by_the_one_rule(extra_specs):
    assert get_spec("GRUSequence").key == "GRUSequence-6"  # the newest
    assert registry().for_ir("GRUSequence", "opset6").key == "GRUSequence-6"
    assert registry().for_ir("GRUSequence", "opset9").key == "GRUSequence-6"
    assert registry().for_ir("GRUSequence", "opset5").key == "GRUSequence-5"
    assert get_spec("GRUSequence", 6).factory == "openvino.opset6.gru_sequence"  # opset + OpenVINO's naming rule
    assert "GRUSequence-6" in {spec.key for spec in buildable()}


def test_without_the_variable_the_shipped_specs_alone_are_loaded(extra_specs, monkeypatch):
    monkeypatch.delenv(EXTRA_SPECS_VARIABLE)
    assert get_spec("GRUSequence").key == "GRUSequence-5"
    assert registry().for_ir("GRUSequence", "opset6").key == "GRUSequence-5"


def test_validate_reads_a_layer_of_the_new_version_by_its_spec(extra_specs, tmp_path):
    model = tmp_path / "gru6.xml"
    text = SAMPLE.read_text()
    assert text.count('type="GRUSequence" version="opset5"') == 1
    model.write_text(text.replace('type="GRUSequence" version="opset5"', 'type="GRUSequence" version="opset6"'))
    done = irtool("validate", "--format", "json", str(model))
    assert done.returncode == 1, done.stdout + done.stderr
    [found] = [d for d in json.loads(done.stdout)["files"][0]["diagnostics"] if d["severity"] == "error"]
    assert (found["code"], found["attribute"]) == ("IR021", "linear_before_reset")
    assert "unknown attribute of GRUSequence-6" in found["message"]
    # the same file without the throw-away spec is GRUSequence-5's, and valid
    done = irtool("validate", str(model), env={k: v for k, v in os.environ.items() if k != EXTRA_SPECS_VARIABLE})
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_cli_offers_and_builds_the_new_version(extra_specs, tmp_path):
    helped = irtool("build", "gru-sequence", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "{5,6}" in helped.stdout and "default 6" in helped.stdout
    assert "--linear-before-reset" not in helped.stdout  # the options are the newest spec's
    target = tmp_path / "gru6.xml"
    done = irtool("build", "gru-sequence", "--op-version", "6", "--hidden-size", "4", "--direction", "forward",
                  "-o", str(target))
    assert done.returncode == 0, done.stderr
    assert "GRUSequence-6" in done.stdout and target.exists()


def test_build_makes_the_new_version_through_its_factory(extra_specs):
    model = build_model(OpCase("GRUSequence", {"hidden_size": 4, "direction": "reverse"}, version=6))
    [op] = [op for op in model.get_ordered_ops() if op.get_type_name() == "GRUSequence"]
    assert model.get_friendly_name() == "GRUSequence-6"
    assert op.get_attributes()["direction"] == "reverse"


def test_the_reference_takes_the_highest_implemented_version_not_above_the_new_one(extra_specs):
    assert lookup("GRUSequence", 6).version == 5
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-1, 1, (2, 3, 5)).astype(np.float32), np.zeros((2, 1, 4), np.float32),
              np.array([3, 2], np.int32), rng.uniform(-1, 1, (1, 12, 5)).astype(np.float32),
              rng.uniform(-1, 1, (1, 12, 4)).astype(np.float32), np.zeros((1, 12), np.float32)]
    attributes = {"hidden_size": 4, "direction": "forward"}
    for got, want in zip(evaluate("GRUSequence", inputs, attributes, version=6),
                         evaluate("GRUSequence", inputs, attributes, version=5)):
        np.testing.assert_array_equal(got, want)


def test_a_version_this_openvino_lacks_is_skipped_by_the_harness_not_an_error(tmp_path, monkeypatch):
    """An op version whose factory module the running openvino does not have (a spec newer than the
    release, as an older release in --openvino meets a newer irtool's spec) cannot be run here:
    its jobs are skipped with the reason, and nothing judged is exit 3."""
    import openvino

    data = json.loads((OPS_DIR / "GRUSequence-5.json").read_text())
    data.update(version=99, opset="opset99", description="A GRUSequence of an opset no openvino has.")
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "GRUSequence-99.json").write_text(json.dumps(data))
    monkeypatch.setenv(EXTRA_SPECS_VARIABLE, str(folder))
    suite = tmp_path / "s.toml"
    suite.write_text('[[grid]]\nid = "g99"\nop = "GRUSequence-99"\nattributes = { hidden_size = 4, '
                     'direction = "forward" }\n')
    done = irtool("harness", str(suite), "-d", "CPU", "--report-dir", str(tmp_path / "out"), "--no-progress")
    assert done.returncode == 3, done.stdout + done.stderr
    [result] = json.loads((tmp_path / "out" / "results.json").read_text())["results"]
    assert result["verdict"] == "skip"
    assert (f"GRUSequence-99 cannot be built: openvino {openvino.get_version().split('-')[0]} has no "
            "openvino.opset99.gru_sequence") in result["message"]
