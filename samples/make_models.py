"""Writes samples/models: real converted models, as a user has them.

Each is an ONNX graph built with onnx.helper, saved as .onnx, and converted by OpenVINO's own
``ov.convert_model`` with its default (dynamic) dims, saved as IR by ``ov.save_model``:

- lstm2_bidirectional.xml: a two-layer bidirectional LSTM (hidden 8) with a MatMul/Add head;
  OpenVINO's CPU plugin gets it right.
- gru_lengths.xml: one GRU with its weights as initializers and a sequence_lens input; the CPU
  plugin of openvino 2026.4.1 ignores the lengths of such a model (samples/suites/full.xfail.toml).

And erfinv_gru.xml, built with openvino's opset API: a GRUSequence fed through ErfInv, an op of
opset17 (openvino 2026): ``irtool run --openvino 2025.4.1,current`` skips it on 2025.4.1, whose
opsets end at opset16.

And loop_peepholes.onnx with its inputs loop_peepholes.npz: an ONNX Loop whose body runs an
LSTM with peepholes once per iteration; OpenVINO's ONNX frontend drops the peepholes, which
irtool sees from iteration 1 on (docs/onnx.md).

And lstm_f16w.xml: an LSTM (hidden 64) with a MatMul/Add head, converted from ONNX and saved with
``compress_to_fp16=True`` (its weights stored as f16 behind Convert ops, as ``ovc`` writes by
default), with its inputs lstm_f16w.inputs.npz and onnxruntime's outputs of the ONNX model on them,
lstm_f16w.expected.npz: ``irtool run ... --expected`` judges the f16-stored weights against the
framework's float32 outputs (docs/run.md).

And broken_gru.onnx, for ``irtool validate``: a bidirectional GRU with one activation set, a
negative clip, R of hidden size 5 and a declared Y of batch 3 (not converted: OpenVINO refuses it).

Run it from the repository root (python samples/make_models.py); the files it writes are
committed.  The graphs are the tests' own (tests/real_models.py), so tests and samples agree.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from real_models import OnnxCase, convert_onnx, newest_opset_model, onnx_inputs, onnx_loop_lstm_model  # noqa: E402

HERE = ROOT / "samples" / "models"
MODELS = {
    "lstm2_bidirectional": OnnxCase("LSTM", layers=2, bidirectional=True, hidden=8),
    "gru_lengths": OnnxCase("GRU", lengths=True, hidden=8),
}


def broken_gru():
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node("GRU", ["X", "W", "R"], ["Y", "Y_h"], name="gru1", hidden_size=4, clip=-1.0,
                            direction="bidirectional", activations=["Sigmoid", "Tanh"])
    weights = [numpy_helper.from_array(np.zeros((2, 12, 3), np.float32), "W"),
               numpy_helper.from_array(np.zeros((2, 12, 5), np.float32), "R")]
    graph = helper.make_graph([node], "broken", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [5, 2, 3])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [5, 2, 3, 4]),
                               helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [2, 2, 4])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)


def f16_weights() -> None:
    """lstm_f16w: converted with compress_to_fp16, with onnxruntime's float32 outputs as expected ones."""
    import tempfile

    import numpy as np
    import onnxruntime

    case = OnnxCase("LSTM", hidden=64, seq=20, batch=2)
    with tempfile.TemporaryDirectory() as folder:
        xml = convert_onnx(case, Path(folder), compress=True)
        for suffix in (".xml", ".bin"):
            xml.with_suffix(suffix).replace(HERE / f"lstm_f16w{suffix}")
        inputs = onnx_inputs(case, seed=3)
        session = onnxruntime.InferenceSession(str(Path(folder) / f"{case.name}.onnx"))
        outputs = session.run(None, inputs)
    np.savez(HERE / "lstm_f16w.inputs.npz", **inputs)
    np.savez(HERE / "lstm_f16w.expected.npz", **{o.name: a for o, a in zip(session.get_outputs(), outputs)})
    print("wrote samples/models/lstm_f16w.xml, .bin, .inputs.npz, .expected.npz")


def main() -> None:
    import numpy as np
    import onnx

    HERE.mkdir(exist_ok=True)
    onnx.save(broken_gru(), HERE / "broken_gru.onnx")
    print("wrote samples/models/broken_gru.onnx")
    for name, case in MODELS.items():
        xml = convert_onnx(case, HERE)
        for suffix in (".onnx", ".xml", ".bin"):
            xml.with_suffix(suffix).replace(HERE / f"{name}{suffix}")
        print(f"wrote samples/models/{name}.onnx, .xml, .bin")
    onnx_loop_lstm_model(HERE / "loop_peepholes.onnx", peepholes=True)
    rng = np.random.default_rng(4)
    np.savez(HERE / "loop_peepholes.npz", X=rng.standard_normal((3, 1, 2, 3)).astype(np.float32),
             trip=np.array(3, np.int64), h0=np.zeros((1, 2, 4), np.float32), c0=np.zeros((1, 2, 4), np.float32))
    print("wrote samples/models/loop_peepholes.onnx, .npz")
    xml = newest_opset_model(HERE)
    for suffix in (".xml", ".bin"):
        xml.with_suffix(suffix).replace(HERE / f"erfinv_gru{suffix}")
    print("wrote samples/models/erfinv_gru.xml, .bin")
    f16_weights()


if __name__ == "__main__":
    main()
