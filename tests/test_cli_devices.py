"""``irtool devices``: what OpenVINO sees, with full names and precisions; absent GPU/NPU with reasons."""
from __future__ import annotations

import json

from irtool.cli.program import main


def test_text_lists_cpu_with_name_precisions_virtual_and_absent(capsys, cpu_default_precision):
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("CPU  ") and len(lines[0]) > len("CPU  ")
    assert "precisions: " in lines[1] and "f32" in lines[1] and "OPTIMIZATION_CAPABILITIES: " in lines[1]
    assert lines[2].split()[:3] == ["default", "precision:", cpu_default_precision], out
    assert "virtual: AUTO, HETERO, MULTI, BATCH (e.g. AUTO:CPU, HETERO:CPU, MULTI:CPU, BATCH:CPU)" in out
    listed = {line.split()[0] for line in lines if line and not line.startswith((" ", "virtual:", "absent:"))}
    absent = {line.split()[1] for line in lines if line.startswith("absent: ")}
    for family in ("GPU", "NPU"):  # each physical family is either listed or absent with its reason
        here = any(name == family or name.startswith(family + ".") for name in listed)
        assert here != (family in absent), (family, out)
    assert all(line.startswith("absent: ") and line.endswith(")") and " (" in line
               for line in lines if line.startswith("absent"))


def test_json(capsys, cpu_default_precision):
    assert main(["devices", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    cpu = next(d for d in report["available"] if d["name"] == "CPU")
    assert cpu["full_name"] and "f32" in cpu["precisions"] and "FP32" in cpu["capabilities"]
    assert cpu["default_precision"] == cpu_default_precision  # read from the device, as its capabilities imply
    assert report["virtual"] == ["AUTO", "HETERO", "MULTI", "BATCH"]
    names = [d["name"] for d in report["available"]]
    for family in ("GPU", "NPU"):  # listed or absent, never both, never neither
        here = any(name == family or name.startswith(family + ".") for name in names)
        assert here != (family in {a["name"] for a in report["absent"]}), (family, report)
    assert all(a["reason"] for a in report["absent"])
