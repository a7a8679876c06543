"""A model with no recurrent op and its framework's outputs, for ``irtool run --expected``
(docs/run.md, "Judging a model against its framework's outputs").

Writes into FOLDER (default: here): dense.onnx (MatMul + Sigmoid, made with onnx.helper),
dense-in.npz (its input ``x``), dense-out.npz (onnxruntime's output ``y`` on it: the expected
values) and dense-wrong.npz (the same with one value off by 0.01, as a wrong conversion would
give); with ``--dynamic``, dense-dyn.onnx too: the same graph with a dynamic batch, a dim no
recurrent node sizes, which takes the batch (docs/run.md, "Sizes for dynamic dims").

    python samples/make_expected.py [FOLDER] [--dynamic]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def dense(rng: np.random.Generator, batch: int | str = 2) -> onnx.ModelProto:
    weights = numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Sigmoid", ["h"], ["y"])],
                              "dense", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4])], [weights])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main(folder: Path, dynamic: bool = False) -> None:
    try:
        import onnxruntime
    except ImportError:  # an extra of irtool, not a dependency: what to install, in one line
        raise SystemExit("samples/make_expected.py: onnxruntime computes the expected outputs and is not installed: "
                         "pip install onnxruntime (or pip install -e '.[onnxruntime]')") from None

    rng = np.random.default_rng(0)
    onnx.save(dense(rng), folder / "dense.onnx")
    x = rng.standard_normal((2, 3)).astype(np.float32)
    if dynamic:
        onnx.save(dense(np.random.default_rng(0), "batch"), folder / "dense-dyn.onnx")
    np.savez(folder / "dense-in.npz", x=x)
    session = onnxruntime.InferenceSession(str(folder / "dense.onnx"), providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x})
    np.savez(folder / "dense-out.npz", y=y)
    y[1, 2] += 0.01
    np.savez(folder / "dense-wrong.npz", y=y)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Write dense.onnx and its inputs, expected and wrong outputs.")
    parser.add_argument("folder", nargs="?", type=Path, default=Path("."), help="where to write (default: here)")
    parser.add_argument("--dynamic", action="store_true", help="dense-dyn.onnx too: a dynamic batch")
    arguments = parser.parse_args()
    main(arguments.folder, arguments.dynamic)
