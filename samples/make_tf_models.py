"""Writes samples/models/tf: TensorFlow models as their users have them, for the formats OpenVINO
reads directly (not run by CI: tensorflow is not a test dependency; its files are committed).

- block_lstm_while.pb (a frozen graph): a ``tf.while_loop`` over the steps of X [6, 2, 3] running TensorFlow's fused BlockLSTM (hidden
  8) on one step per iteration; OpenVINO's TensorFlow frontend converts it to a Loop whose
  body holds the BlockLSTM's own Loop around an LSTMCell.
- gru_block_while.pb: the same loop with GRUBlockCell (a GRUCell inside a Loop body).
  Each step is read with tf.gather: with ``x[t]`` the CPU plugin of openvino 2026.4.1 fails to
  infer the converted Loop ("StridedSlice node ... doesn't have compiled executor!"), and as
  SavedModels neither loop converts (no conversion rule for BlockLSTM, GRUBlockCell there).
- block_lstm_steps.pb and gru_block_steps.pb: the same two loops over as many steps as X has
  (X [?, 2, 3], the loop running while t < tf.shape(x)[0]): X's dynamic dim 0 reaches no
  recurrent node, only the condition of the Loop OpenVINO makes (how many iterations it runs).
- keras_lstm.tflite and keras_lstm/ (a SavedModel folder, from Keras's export with the input's
  shape fixed): a Keras LSTM layer (hidden 8, random biases), converted by TFLiteConverter for
  the .tflite; OpenVINO keeps no recurrent op of either (a Loop of MatMul/Sigmoid), and irtool
  recognizes the LSTM cell in the Loop's body (docs/lowered.md).
- keras_lstm_export.xml (IR): the same Keras LSTM exported by ``model.export(folder)`` with no input
  signature, as Keras users export (the batch always dynamic: x [?, 6, 3]), converted by
  ov.convert_model and saved by ov.save_model (the SavedModel folder itself is not kept); its batch
  reaches only the lowered cell, no recurrent op (docs/run.md, "Sizes for dynamic dims").
- keras_gru.tflite, keras_gru/ and keras_simple_rnn.tflite: a Keras GRU (and SimpleRNN) layer
  (hidden 8, random biases, returning the sequence and the last state) the same way.
- keras_lstm_fault.xml, keras_gru_fault.xml (from the .tflite files) and
  keras_lstm.saved_model_fault.xml, keras_gru.saved_model_fault.xml (from the SavedModels): the
  model OpenVINO converts, with a fault planted in its Loop body's cell: at iteration FAULT_STEP
  only, the cell's bias gets a vector more (B + v*(t == FAULT_STEP), t the counter the body reads
  x_t with); run on the clean model's .inputs.npz.
- keras_lstm_hard_sigmoid.tflite, keras_gru_hard_sigmoid.tflite and their SavedModel folders, with
  .saved_model and _fault twins as keras_lstm's and keras_gru's: the same layers with
  recurrent_activation="hard_sigmoid" (Keras 3: relu6(x + 3) / 6), which OpenVINO reads as a
  Clamp times 1/6 (ov.convert_model fuses it into an HSigmoid, as in the _fault.xml files).
- keras_lstm_unrolled.tflite, keras_gru_unrolled.tflite, keras_simple_rnn_unrolled.tflite: a Keras
  LSTM, GRU and SimpleRNN (hidden 8, random biases) with unroll=True: their six steps written out
  at the top level, the first one's zero states folded away by the converter (no forget product:
  c_1 = i*g; h_1 = (1-z)*n; h_1 = tanh(x·W + b)).
- keras_lstm_int8.tflite: a Keras LSTM (hidden and input 32, random biases) converted with
  dynamic-range quantization (converter.optimizations = [tf.lite.Optimize.DEFAULT]): its kernels
  stored as int8, which OpenVINO reads as Constant i8 -> Convert -> Multiply (the scale) feeding each
  MatMul of the cell in the Loop's body (size 32: the converter leaves a weight of fewer than 1024
  elements float).  Its .outputs.npz is the TFLite interpreter's, whose hybrid kernels quantize the
  activations too.  keras_lstm_int8_fault.xml: a fault planted in it as in keras_lstm_fault.xml
  (its int8 weights kept).  docs/lowered.md says how the CPU's run-time quantization of the
  activations of such products is judged.
- keras_lstm_t100_h128.tflite: a Keras LSTM (hidden 128, input 32, batch 16, 100 steps) as
  .tflite, for benchmarks/bench_run_overhead.py.
- keras_lstm_fused.tflite: a tf_keras (Keras 2) LSTM, which TFLiteConverter fuses into one
  UNIDIRECTIONAL_SEQUENCE_LSTM whose states are variable tensors: OpenVINO's TFLite frontend
  cannot convert it (irtool says so as unsupported), the TFLite interpreter runs it.
- irfft/ (a SavedModel folder): tf.signal.irfft of a complex64 input, which OpenVINO's
  TensorFlow frontend cannot convert.

Each has NAME.inputs.npz and NAME.outputs.npz (TensorFlow's own outputs on those inputs), both
keyed by the names OpenVINO gives the converted model's inputs and outputs (x:0 and Identity:0,
Identity_1:0 for a frozen graph, serving_default_keras_tensor:0 and StatefulPartitionedCall_1:0 for
a TFLite file), so that ``irtool run MODEL -d CPU --inputs NAME.inputs.npz --expected
NAME.outputs.npz`` judges each.  A Keras SavedModel names its input keras_tensor and its
outputs output_0...: its files are keras_lstm.saved_model.inputs.npz and .outputs.npz (and
keras_gru.saved_model.*).

    python -m venv /tmp/tfenv && /tmp/tfenv/bin/pip install tensorflow-cpu openvino && /tmp/tfenv/bin/pip install --no-deps tf_keras
    /tmp/tfenv/bin/python samples/make_tf_models.py [NAME ...]  # from the repository root

NAMEs (block_lstm_while, gru_block_while, block_lstm_steps, gru_block_steps, keras_lstm, keras_lstm_export, keras_lstm_fused,
keras_gru, keras_simple_rnn, keras_lstm_unrolled, keras_gru_unrolled, keras_simple_rnn_unrolled, irfft,
keras_lstm_int8, bench_lstm, keras_lstm_hard_sigmoid, keras_gru_hard_sigmoid) rewrite only those (default: all; Keras's weights are
seeded, TensorFlow's versions may still differ).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2  # noqa: E402

OUT = Path(__file__).resolve().parent / "models" / "tf"
STEPS, BATCH, SIZE, HIDDEN = 6, 2, 3, 8
FAULT_STEP = 3
INT8_SIZE = 32


def uniform(rng: np.random.Generator, *shape: int) -> np.ndarray:
    scale = 1 / np.sqrt(HIDDEN)
    return rng.uniform(-scale, scale, shape).astype(np.float32)


def block_lstm_function(steps: int | None = STEPS):
    """BlockLSTM over one step per iteration of a while loop (over as many steps as x has where
    ``steps`` is None).  The weights are made inside the loop body: captured from outside, they
    would reach the body as loop inputs of unknown shape, and OpenVINO's frontend converts
    BlockLSTM only with a static hidden size."""
    rng = np.random.default_rng(11)
    w, b = uniform(rng, SIZE + HIDDEN, 4 * HIDDEN), uniform(rng, 4 * HIDDEN)

    @tf.function(input_signature=[tf.TensorSpec([steps, BATCH, SIZE], tf.float32, name="x")])
    def block_lstm(x):
        count = tf.shape(x)[0] if steps is None else STEPS
        def step(t, h, c):
            zeros = tf.constant(np.zeros(HIDDEN, np.float32))
            outputs = tf.raw_ops.BlockLSTM(seq_len_max=tf.constant(1, tf.int64), x=tf.expand_dims(tf.gather(x, t), 0), cs_prev=c,
                                           h_prev=h, w=tf.constant(w), wci=zeros, wcf=zeros, wco=zeros,
                                           b=tf.constant(b), forget_bias=1.0, cell_clip=-1.0, use_peephole=False)
            return t + 1, tf.reshape(outputs[6], [BATCH, HIDDEN]), tf.reshape(outputs[1], [BATCH, HIDDEN])  # h, cs

        state = tf.zeros([BATCH, HIDDEN], np.float32)
        _, h, c = tf.while_loop(lambda t, h, c: t < count, step, [tf.constant(0), state, state])
        return {"h": h, "c": c}

    return block_lstm


def gru_block_function(steps: int | None = STEPS):
    """GRUBlockCell once per iteration of a while loop (weights made in the body, as above)."""
    rng = np.random.default_rng(12)
    w_ru, w_c = uniform(rng, SIZE + HIDDEN, 2 * HIDDEN), uniform(rng, SIZE + HIDDEN, HIDDEN)
    b_ru, b_c = uniform(rng, 2 * HIDDEN), uniform(rng, HIDDEN)

    @tf.function(input_signature=[tf.TensorSpec([steps, BATCH, SIZE], tf.float32, name="x")])
    def gru_block(x):
        count = tf.shape(x)[0] if steps is None else STEPS
        def step(t, h):
            outputs = tf.raw_ops.GRUBlockCell(x=tf.gather(x, t), h_prev=h, w_ru=tf.constant(w_ru), w_c=tf.constant(w_c),
                                              b_ru=tf.constant(b_ru), b_c=tf.constant(b_c))
            return t + 1, outputs[3]

        _, h = tf.while_loop(lambda t, h: t < count, step, [tf.constant(0), tf.zeros([BATCH, HIDDEN], np.float32)])
        return {"h": h}

    return gru_block


def frozen(function, path: Path) -> dict[str, str]:
    """FUNCTION as a frozen graph at PATH; returns each of its output keys' graph tensor name (a dict
    of outputs is flattened in key order: {"h", "c"} gives c Identity:0 and h Identity_1:0)."""
    original = function.get_concrete_function()
    concrete = convert_variables_to_constants_v2(original)
    path.write_bytes(concrete.graph.as_graph_def().SerializeToString())
    packed = tf.nest.pack_sequence_as(original.structured_outputs, concrete.outputs)  # key -> graph tensor
    return {key: tensor.name for key, tensor in packed.items()}


def save_io(name: str, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
    np.savez(OUT / f"{name}.inputs.npz", **inputs)
    np.savez(OUT / f"{name}.outputs.npz", **outputs)


def port_name(port) -> str:
    """The name irtool keys a port by: any of its tensor names, else its node's friendly name."""
    return port.get_any_name() if port.get_names() else port.get_node().get_friendly_name()


def by_converted_names(path: Path, outputs: dict[str, np.ndarray], tensors: dict[str, str]) -> dict[str, np.ndarray]:
    """OUTPUTS (by TensorFlow's keys) keyed by the names the model OpenVINO converts from PATH gives
    them: the output port holding each key's graph tensor."""
    ports = ov.convert_model(str(path)).outputs
    named = {key: next(port_name(p) for p in ports if tensors[key] in p.get_names()) for key in outputs}
    return {named[key]: value for key, value in outputs.items()}


def keras_layer(kind: str, hidden: int = HIDDEN, **options):
    """A Keras recurrent layer with random biases (Keras starts them at zero, and a converter then
    drops the bias: the cell's bias would go unread)."""
    return getattr(tf.keras.layers, kind)(hidden, bias_initializer=tf.keras.initializers.RandomUniform(-0.5, 0.5),
                                          **options)


def keras_model(layer, steps: int = STEPS, batch: int = BATCH, size: int = SIZE):
    tf.keras.utils.set_random_seed(5)
    inputs = tf.keras.Input((steps, size), batch_size=batch)
    return tf.keras.Model(inputs, layer(inputs))


def keras_outputs(keras, x: np.ndarray) -> list[np.ndarray]:
    outputs = keras(x)
    return [o.numpy() for o in (outputs if isinstance(outputs, (list, tuple)) else [outputs])]


def save_keras_io(stem: str, path: Path, x: np.ndarray, outputs: list[np.ndarray]) -> None:
    """The inputs and outputs keyed by the names of the model OpenVINO converts from PATH, outputs
    matched by rank (the sequence and the last state)."""
    model = ov.convert_model(str(path))
    assert len(model.inputs) == 1 and len(model.outputs) == len(outputs)
    by_rank = {o.ndim: o for o in outputs}
    assert len(by_rank) == len(outputs), "outputs of one rank cannot be matched"
    save_io(stem, {port_name(model.inputs[0]): x},
            {port_name(p): by_rank[p.get_partial_shape().rank.get_length()] for p in model.outputs})


def keras_files(name: str, layer, x: np.ndarray, saved_model: bool) -> None:
    """LAYER in a Keras model as NAME.tflite (and the SavedModel folder NAME/), their inputs and
    outputs, and each one's copy with a fault planted (plant_bias_fault)."""
    keras = keras_model(layer)
    outputs = keras_outputs(keras, x)
    path = OUT / f"{name}.tflite"
    path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(keras).convert())
    save_keras_io(name, path, x, outputs)
    plant_bias_fault(path, OUT / f"{name}_fault.xml")
    if saved_model:
        folder = OUT / name
        keras.export(str(folder), input_signature=[tf.TensorSpec(x.shape, tf.float32)])
        save_keras_io(f"{name}.saved_model", folder, x, outputs)
        plant_bias_fault(folder, OUT / f"{name}.saved_model_fault.xml")


def keras_export_ir(name: str, layer, x: np.ndarray) -> None:
    """LAYER in a Keras model of dynamic batch exported by ``model.export`` (no input signature),
    converted by OpenVINO and saved as NAME.xml, with its inputs and Keras's outputs."""
    import tempfile

    tf.keras.utils.set_random_seed(5)
    inputs = tf.keras.Input(x.shape[1:])
    keras = tf.keras.Model(inputs, layer(inputs))
    with tempfile.TemporaryDirectory() as folder:
        keras.export(folder)
        ov.save_model(ov.convert_model(folder), str(OUT / f"{name}.xml"), compress_to_fp16=False)
        save_keras_io(name, Path(folder), x, keras_outputs(keras, x))


def plant_bias_fault(source: Path, xml: Path) -> None:
    """The model OpenVINO converts from SOURCE, saved as XML with a fault planted in its Loop body:
    the first Add of the cell's bias (a constant vector) adds, at iteration FAULT_STEP only, a vector
    with one value 0.5 (from the counter that reads x_t: B + v*(t == FAULT_STEP))."""
    import openvino.opset8 as ops

    model = ov.convert_model(str(source))
    loop = next(op for op in model.get_ordered_ops() if op.get_type_name() == "Loop")
    body = loop.get_function()
    counter = next(op.input_value(1) for op in body.get_ordered_ops() if op.get_type_name() == "Gather"
                   and op.input_value(1).get_node().get_type_name() == "Parameter"
                   and op.input_value(1).get_partial_shape().rank.get_length() == 0)
    add, port = next((op, k) for op in body.get_ordered_ops() if op.get_type_name() == "Add" for k in (0, 1)
                     if op.input_value(k).get_node().get_type_name() == "Constant"
                     and len(shape := list(op.input_value(k).get_shape())) > 0 and np.prod(shape) == shape[-1] > 1)
    bias = add.input_value(port)
    vector = np.zeros(list(bias.get_shape()), np.float32)
    vector.reshape(-1)[1] = 0.5
    at_fault = ops.convert(ops.equal(counter, ops.constant(np.array(FAULT_STEP, counter.get_element_type().to_dtype()))),
                           "f32")
    add.input(port).replace_source_output(ops.add(bias, ops.multiply(at_fault, ops.constant(vector))).output(0))
    model.validate_nodes_and_infer_types()
    ov.save_model(model, str(xml), compress_to_fp16=False)


def keras_int8_files(size: int) -> None:
    """A Keras LSTM (hidden and input SIZE, random biases) converted with dynamic-range quantization
    (Optimize.DEFAULT): its kernels stored as int8 (the converter quantizes a weight of 1024 elements
    or more, hence SIZE 32, not HIDDEN), its outputs the TFLite interpreter's (whose hybrid kernels
    quantize activations too)."""
    keras = keras_model(keras_layer("LSTM", size), size=size)
    converter = tf.lite.TFLiteConverter.from_keras_model(keras)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    path = OUT / "keras_lstm_int8.tflite"
    path.write_bytes(converter.convert())
    x = np.random.default_rng(2).standard_normal((BATCH, STEPS, size)).astype(np.float32)
    interpreter = tf.lite.Interpreter(model_path=str(path))
    interpreter.allocate_tensors()
    interpreter.set_tensor(interpreter.get_input_details()[0]["index"], x)
    interpreter.invoke()
    outputs = [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
    save_keras_io("keras_lstm_int8", path, x, outputs)
    plant_bias_fault(path, OUT / "keras_lstm_int8_fault.xml")


def main(names: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    x = np.random.default_rng(1).standard_normal((STEPS, BATCH, SIZE)).astype(np.float32)
    batch_first = x.transpose(1, 0, 2)
    wanted = set(names) or {"block_lstm_while", "gru_block_while", "block_lstm_steps", "gru_block_steps",
                            "keras_lstm", "keras_lstm_export", "keras_lstm_fused", "keras_gru", "keras_simple_rnn", "keras_lstm_unrolled",
                            "keras_gru_unrolled", "keras_simple_rnn_unrolled", "irfft", "keras_lstm_int8", "bench_lstm",
                            "keras_lstm_hard_sigmoid", "keras_gru_hard_sigmoid"}

    for name, make, steps in (("block_lstm_while", block_lstm_function, STEPS),
                              ("gru_block_while", gru_block_function, STEPS),
                              ("block_lstm_steps", block_lstm_function, None),
                              ("gru_block_steps", gru_block_function, None)):
        if name in wanted:
            function = make(steps)
            tensors = frozen(function, OUT / f"{name}.pb")
            save_io(name, {"x:0": x}, by_converted_names(
                OUT / f"{name}.pb", {k: v.numpy() for k, v in function(x).items()}, tensors))

    if "keras_lstm" in wanted:
        keras_files("keras_lstm", keras_layer("LSTM"), batch_first, saved_model=True)

    if "keras_lstm_export" in wanted:
        keras_export_ir("keras_lstm_export", keras_layer("LSTM"), batch_first)

    if "keras_lstm_fused" in wanted:  # Keras 2's LSTM: TFLiteConverter fuses it (Keras 3's it leaves a loop)
        import tf_keras

        tf_keras.utils.set_random_seed(5)
        keras = tf_keras.Sequential([tf_keras.Input((STEPS, SIZE), batch_size=BATCH), tf_keras.layers.LSTM(HIDDEN)])
        path = OUT / "keras_lstm_fused.tflite"
        path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(keras).convert())
        interpreter = tf.lite.Interpreter(model_path=str(path))  # OpenVINO cannot read it: TFLite's names
        save_io("keras_lstm_fused", {interpreter.get_input_details()[0]["name"]: batch_first},
                {interpreter.get_output_details()[0]["name"]: keras(batch_first).numpy()})

    if "irfft" in wanted:
        class Irfft(tf.Module):
            @tf.function(input_signature=[tf.TensorSpec([BATCH, 5], tf.complex64, name="z")])
            def __call__(self, z):
                return {"y": tf.signal.irfft(z)}

        tf.saved_model.save(Irfft(), str(OUT / "irfft"))

    if "keras_gru" in wanted:
        keras_files("keras_gru", keras_layer("GRU", return_sequences=True, return_state=True), batch_first,
                    saved_model=True)
    if "keras_simple_rnn" in wanted:
        keras = keras_model(keras_layer("SimpleRNN", return_sequences=True, return_state=True))
        path = OUT / "keras_simple_rnn.tflite"
        path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(keras).convert())
        save_keras_io("keras_simple_rnn", path, batch_first, keras_outputs(keras, batch_first))
    for kind, name in (("LSTM", "keras_lstm_unrolled"), ("GRU", "keras_gru_unrolled"),
                       ("SimpleRNN", "keras_simple_rnn_unrolled")):
        if name in wanted:
            keras = keras_model(keras_layer(kind, unroll=True))
            path = OUT / f"{name}.tflite"
            path.write_bytes(tf.lite.TFLiteConverter.from_keras_model(keras).convert())
            save_keras_io(name, path, batch_first, keras_outputs(keras, batch_first))
    for kind, name, options in (("LSTM", "keras_lstm_hard_sigmoid", {}),
                                ("GRU", "keras_gru_hard_sigmoid", {"return_sequences": True, "return_state": True})):
        if name in wanted:
            keras_files(name, keras_layer(kind, recurrent_activation="hard_sigmoid", **options), batch_first,
                        saved_model=True)
    if "keras_lstm_int8" in wanted:
        keras_int8_files(INT8_SIZE)
    if "bench_lstm" in wanted:
        keras = keras_model(keras_layer("LSTM", 128), steps=100, batch=16, size=32)
        (OUT / "keras_lstm_t100_h128.tflite").write_bytes(tf.lite.TFLiteConverter.from_keras_model(keras).convert())


if __name__ == "__main__":
    main(sys.argv[1:])
