"""The process a framework runtime runs in: ``python -m irtool.oracles.child ORACLE MODEL IN.npz OUT.npz
OUTPUTS.json``.  Each runtime runs apart from OpenVINO and from the others (TensorFlow and Paddle
in one process crash it: measured, a segfault at import), so that a crash or a log line of theirs
costs one comparison, not the run.  It writes the runtime's outputs to OUT.npz and prints one JSON
line: ``{"tool": "tensorflow 2.21.0", "refused": null, "note": null}`` (``refused``: why the runtime
would not run the model; ``note``: how it was run, where not as the model file is)."""
from __future__ import annotations

import json
import sys

from irtool.core.npz import read_npz, write_npz
from irtool.oracles.common import OracleRefused


def run(oracle: str, model: str, feeds: dict, outputs: list[tuple[str, ...]]) -> tuple[str, dict, str | None]:
    """The runtime's name and version, its outputs by name, and how it ran the model (or None)."""
    if oracle == "tflite":
        from irtool.oracles.tflite_run import available, run_tflite

        return (available() or "tflite", *run_tflite(model, feeds))
    if oracle == "tensorflow":
        from irtool.oracles.tensorflow_run import available, run_tensorflow

        return available() or "tensorflow", run_tensorflow(model, feeds, outputs), None
    from irtool.oracles.paddle_run import available, run_paddle

    return available() or "paddle", run_paddle(model, feeds), None


def main(argv: list[str]) -> int:
    oracle, model, inputs, target, labels = argv
    try:
        tool, arrays, note = run(oracle, model, read_npz(inputs, "inputs file"), [tuple(n) for n in json.loads(labels)])
    except OracleRefused as error:
        print(json.dumps({"tool": oracle, "refused": str(error)}), flush=True)
        return 0
    write_npz(target, arrays, "the runtime's outputs")
    print(json.dumps({"tool": tool, "refused": None, "note": note}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
