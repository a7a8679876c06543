"""Gives each recorded outputs file of a recordings folder the record of its run that ``irtool run
--save-outputs`` writes beside outputs (irtool.pipeline.recording): the device, the precision it ran
at (the hint read back), the release, and what the node ran as, read from the case's runtime graph
(``runs.PRECISION.ran_as`` of the manifest).  A replay then judges each case by the path the device
took, as recorded, instead of reading it from the replaying machine's CPU.  Run once per folder:

    python tests/data/recordings/add_records.py tests/data/recordings/cpu-bf16-avx512-openvino-2026.4.1
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from irtool.core.npz import RECORD_PREFIX, write_npz
from irtool.pipeline.recording import record_arrays
from irtool.runtime.compile import DeviceRun
from irtool.runtime.what_ran import CPU_LAYER_TYPES, KERNELS, Implementation

NODE = "node"  # the recorded models' recurrent node


def ran_as(layers: list[dict]) -> Implementation:
    """What the node ran as, from its runtime layers, as irtool.runtime.what_ran reads a runtime graph:
    its own layers that compute, else those named after its outputs (NODE.K) that compute (a
    decomposed cell's Subgraphs), else the kernels the graph holds (these models hold nothing else):
    one, or for a node the CPU split per direction (its outputs joined by Concatenations), two."""
    def computing(found: list[dict]) -> list[dict]:
        return [layer for layer in found if layer["layerType"] in CPU_LAYER_TYPES]

    names = [layer["originalLayersNames"].split(",") for layer in layers]
    own = computing([layer for layer, named in zip(layers, names) if NODE in named])
    joined = computing([layer for layer, named in zip(layers, names)
                        if any(name.rpartition(".")[0] == NODE for name in named)])
    found = own or joined
    if found:
        return Implementation(tuple(layer["layerType"] for layer in found), (),
                              tuple(layer["runtimePrecision"] for layer in found))
    kernels = [layer for layer in layers if layer["layerType"] in KERNELS]
    parts = [Implementation((k["layerType"],), (), (k["runtimePrecision"],)) for k in kernels]
    return parts[0] if len(parts) == 1 else Implementation((), directions=tuple(parts))


def main(folder: Path) -> None:
    manifest = json.loads((folder / "single-op" / "manifest.json").read_text())
    release = manifest["openvino"]
    for case in manifest["cases"]:
        for precision, run in case["runs"].items():
            outputs = folder / "single-op" / case["files"][f"outputs-{precision}"]
            arrays = {k: v for k, v in np.load(outputs).items() if not k.startswith(RECORD_PREFIX)}
            device = DeviceRun("CPU", precision, {"CPU": precision}, ("CPU",),
                               {"INFERENCE_PRECISION_HINT": precision}, release)
            write_npz(outputs, {**arrays, **record_arrays(device, {NODE: ran_as(run["ran_as"])}, None)})


if __name__ == "__main__":
    main(Path(sys.argv[1]))
