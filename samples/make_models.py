"""Writes samples/models: real converted models, as a user has them.

Each is an ONNX graph built with onnx.helper, saved as .onnx, and converted by OpenVINO's own
``ov.convert_model`` with its default (dynamic) dims, saved as IR by ``ov.save_model``:

- lstm2_bidirectional.xml: a two-layer bidirectional LSTM (hidden 8) with a MatMul/Add head;
  OpenVINO's CPU plugin gets it right.
- gru_lengths.xml: one GRU with its weights as initializers and a sequence_lens input; the CPU
  plugin of openvino 2026.4.1 ignores the lengths of such a model (samples/suites/full.xfail.toml).

Run it from the repository root (python samples/make_models.py); the files it writes are
committed.  The graphs are the tests' own (tests/real_models.py), so tests and samples agree.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from real_models import OnnxCase, convert_onnx  # noqa: E402

HERE = ROOT / "samples" / "models"
MODELS = {
    "lstm2_bidirectional": OnnxCase("LSTM", layers=2, bidirectional=True, hidden=8),
    "gru_lengths": OnnxCase("GRU", lengths=True, hidden=8),
}


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for name, case in MODELS.items():
        xml = convert_onnx(case, HERE)
        for suffix in (".onnx", ".xml", ".bin"):
            xml.with_suffix(suffix).replace(HERE / f"{name}{suffix}")
        print(f"wrote samples/models/{name}.onnx, .xml, .bin")


if __name__ == "__main__":
    main()
