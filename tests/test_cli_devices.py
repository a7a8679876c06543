"""``irtool devices``: what OpenVINO sees, with full names and precisions; absent GPU/NPU with reasons."""
from __future__ import annotations

import json

from irtool.cli import main


def test_text_lists_cpu_with_name_precisions_virtual_and_absent(capsys):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("CPU  ") and len(lines[0]) > len("CPU  ")
    assert "precisions: " in lines[1] and "f32" in lines[1] and "OPTIMIZATION_CAPABILITIES: " in lines[1]
    assert "virtual: AUTO, HETERO, MULTI, BATCH (e.g. AUTO:CPU, HETERO:CPU, MULTI:CPU, BATCH:CPU)" in out
    assert any(line.startswith("absent: GPU (") for line in lines), "GPU is absent on these machines"


def test_json(capsys):
    assert main(["devices", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    cpu = next(d for d in report["available"] if d["name"] == "CPU")
    assert cpu["full_name"] and "f32" in cpu["precisions"] and "FP32" in cpu["capabilities"]
    assert report["virtual"] == ["AUTO", "HETERO", "MULTI", "BATCH"]
    assert {a["name"] for a in report["absent"]} >= {"GPU"}
    assert all(a["reason"] for a in report["absent"])
