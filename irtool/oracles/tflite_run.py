"""The TFLite interpreter as an oracle of a .tflite model: ai-edge-litert's (LiteRT, TFLite's
successor), else tflite-runtime's.  The one module that imports either.

A model of dynamic-range quantization (``tf.lite.Optimize.DEFAULT`` without a representative
dataset) stores the weights of its fully connected, convolution and LSTM ops as int8 and keeps
its activations float.  The model means those ops computed in float on the dequantized weights
(TFLite's documentation of the quantization; OpenVINO's frontend decompresses them so); the
interpreter's "hybrid" kernels instead quantize each float input to int8 at run time, which moved
a DTLN denoiser's outputs by 0.02 from that.  Such a model is run with its int8 weights
dequantized to f32 (:func:`dequantized`: the same values, held as f32), and the note says so and
how far the interpreter's own run of the model as shipped is from it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from irtool.core.files import read_bytes
from irtool.oracles.common import not_installed, refused

FLATBUFFER_LIMIT = 2**31 - 1  # bytes: the most a .tflite holds in itself (larger models keep buffers outside)


def _interpreter_class() -> tuple[Any, str] | None:
    try:
        from ai_edge_litert import __version__ as version  # noqa: N811
        from ai_edge_litert import interpreter
        return interpreter.Interpreter, f"ai-edge-litert {version}"
    except ImportError:
        pass
    try:
        from tflite_runtime import __version__ as version  # noqa: N811
        from tflite_runtime import interpreter
        return interpreter.Interpreter, f"tflite-runtime {version}"
    except ImportError:
        return None


def available() -> str | None:
    """The interpreter and its version ("ai-edge-litert 2.3.0"), or None where neither is installed."""
    found = _interpreter_class()
    return found[1] if found else None


def run_tflite(path: str | Path, feeds: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], str | None]:
    """The model's outputs by tensor name (the names OpenVINO's TFLite frontend gives them), run by the
    interpreter on ``feeds`` (by input tensor name; a dynamic input is resized to its array), and a
    note where the model was run with its int8 weights dequantized (see the module docstring)."""
    found = _interpreter_class()
    if found is None:
        raise not_installed("tflite", "the TFLite interpreter (ai-edge-litert)")
    if Path(path).stat().st_size > FLATBUFFER_LIMIT:  # its buffers outside the flatbuffer: run as it is
        return _run(found[0], {"model_path": str(path)}, feeds), None
    content = read_bytes(Path(path), "model", FLATBUFFER_LIMIT)
    made = dequantized(content)
    if made is None:
        return _run(found[0], {"model_content": content}, feeds), None
    exact, ops = made
    outputs = _run(found[0], {"model_content": exact}, feeds)
    shipped = _run(found[0], {"model_content": content}, feeds)
    moved = max((float(np.max(np.abs(outputs[name].astype(np.float64) - shipped[name])))
                 for name in outputs if outputs[name].size and outputs[name].dtype.kind == "f"), default=0.0)
    counted = ", ".join(f"{name} x{count}" if count > 1 else name for name, count in sorted(ops.items()))
    return outputs, (f"the model stores the weights of {sum(ops.values())} ops as int8 ({counted}), which the "
                     f"interpreter's own kernels run with their float inputs quantized to int8 at run time "
                     f"(dynamic-range quantization): it ran them on those weights dequantized to f32 (the same "
                     f"values), as the model means; its run of the model as shipped differs from that by up to "
                     f"{moved:.3g}")


def dequantized(content: bytes) -> tuple[bytes, dict[str, int]] | None:
    """The model ``content`` with each int8 (or uint8) constant that an op of float outputs reads
    made f32 ((q - zero point) x scale, per channel where it is), and the ops that read them by kind;
    None for a model without such weights (or where LiteRT's schema is not installed to edit it)."""
    try:
        import flatbuffers
        from ai_edge_litert import schema_py_generated as schema
    except ImportError:
        return None
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(content, 0))
    kinds = {value: name for name, value in vars(schema.BuiltinOperator).items() if not name.startswith("_")}
    quantized = {schema.TensorType.INT8: np.int8, schema.TensorType.UINT8: np.uint8}
    ops: dict[str, int] = {}
    made: set[int] = set()  # the tensors of a subgraph made f32
    for graph in model.subgraphs or []:
        made.clear()
        for op in graph.operators or []:
            code = model.operatorCodes[op.opcodeIndex]
            kind = kinds.get(max(code.builtinCode, code.deprecatedBuiltinCode), "CUSTOM")
            outputs = [graph.tensors[i] for i in op.outputs if i >= 0]
            if kind == "DEQUANTIZE" or not outputs or any(t.type != schema.TensorType.FLOAT32 for t in outputs):
                continue
            read = False
            for index in (i for i in op.inputs if i >= 0):
                tensor = graph.tensors[index]
                data = model.buffers[tensor.buffer].data if tensor.buffer < len(model.buffers) else None
                if index in made:
                    read = True
                elif tensor.type in quantized and data is not None and tensor.quantization is not None \
                        and tensor.quantization.scale is not None and len(tensor.quantization.scale):
                    model.buffers.append(_f32_buffer(schema, tensor, np.asarray(data, np.uint8), quantized))
                    tensor.buffer = len(model.buffers) - 1
                    tensor.type, tensor.quantization, read = schema.TensorType.FLOAT32, None, True
                    made.add(index)
            if read:
                ops[kind] = ops.get(kind, 0) + 1
    if not ops:
        return None
    builder = flatbuffers.Builder(2 * len(content) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output()), ops


def _f32_buffer(schema: Any, tensor: Any, data: np.ndarray, quantized: Mapping[int, Any]) -> Any:
    """A buffer holding ``tensor``'s quantized values (``data``, its bytes) dequantized to f32."""
    shape = [int(d) for d in tensor.shape] if tensor.shape is not None else [data.size]
    values = data.view(quantized[tensor.type]).reshape(shape).astype(np.float32)
    scale = np.asarray(tensor.quantization.scale, np.float32)
    zero = np.asarray(tensor.quantization.zeroPoint if tensor.quantization.zeroPoint is not None else [0], np.float32)
    if scale.size > 1:  # per channel, along the quantized dimension
        where = [1] * len(shape)
        where[tensor.quantization.quantizedDimension] = scale.size
        scale, zero = scale.reshape(where), (zero.reshape(where) if zero.size == scale.size else zero)
    buffer = schema.BufferT()
    buffer.data = ((values - zero) * scale).astype(np.float32).view(np.uint8).reshape(-1)
    return buffer


def _run(interpreter_class: Any, model: Mapping[str, Any], feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The outputs of the model given as the interpreter takes it (``model_content`` or ``model_path``)."""
    try:
        interpreter = interpreter_class(**model, num_threads=1)
        inputs = interpreter.get_input_details()
        for detail in inputs:
            if detail["name"] in feeds and list(detail["shape"]) != list(feeds[detail["name"]].shape):
                interpreter.resize_tensor_input(detail["index"], list(feeds[detail["name"]].shape))
        interpreter.allocate_tensors()
        for detail in inputs:
            array = feeds.get(detail["name"])
            if array is None:
                raise ValueError(f"no value for its input {detail['name']}")
            interpreter.set_tensor(detail["index"], np.ascontiguousarray(array, dtype=detail["dtype"]))
        interpreter.invoke()
        return {detail["name"]: np.array(interpreter.get_tensor(detail["index"]))
                for detail in interpreter.get_output_details()}
    except (RuntimeError, ValueError) as error:
        raise refused(error) from None
