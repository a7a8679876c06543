"""What the device ran for each recurrent node, read from the compiled model's runtime graph."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from irtool.pipeline.build import build_model
from irtool.pipeline.device_run import compile_prepared
from irtool.pipeline.prepare import prepare
from irtool.runtime.what_ran import Implementation, meets, what_ran
from irtool.specs.cases import OpCase

SIZES = {"batch_size": 2, "seq_length": 5, "input_size": 3}


def cpu_flags() -> set[str]:
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))


def implementation(case: OpCase) -> tuple[Implementation, object]:
    prepared = prepare(build_model(case), case.op_type)
    compiled = compile_prepared(prepared, "CPU", "f32", {})
    return compiled.implementations[prepared.nodes[0].name], compiled


def runtime_layers(compiled, name: str) -> list[str]:
    """The runtime graph read here independently: the layer types whose original names are ``name``."""
    found = []
    for op in compiled.plain.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        if name in info["originalLayersNames"].astype(str).split(","):
            found.append(info["layerType"].astype(str))
    return found


def test_static_and_dynamic_sequence_length_are_recorded_as_what_ran():
    static, compiled_static = implementation(OpCase("GRUSequence", {"hidden_size": 4, "direction": "forward"}, SIZES))
    dynamic, compiled_dynamic = implementation(OpCase("GRUSequence", {"hidden_size": 4, "direction": "forward"}, SIZES,
                                                      dynamic=("seq_length",)))
    assert list(static.layer_types) == runtime_layers(compiled_static, "GRUSequence") != []
    assert list(dynamic.layer_types) == runtime_layers(compiled_dynamic, "GRUSequence") != []
    assert static.precisions == ("f32",) and dynamic.precisions == ("f32",)
    for impl in (static, dynamic):
        assert impl.decomposed == ("TensorIterator" in impl.layer_types)
        assert impl.describe().startswith(impl.layer_types[0])
    if "avx512f" not in cpu_flags():  # measured with openvino 2026.4.1 on an AVX2 AMD EPYC
        assert static.describe() == "TensorIterator (f32; decomposed)"
        assert dynamic.describe() == "RNNSeq (f32)"


def bidirectional_gru(lengths: str, dynamic: bool):
    """A bidirectional GRUSequence built with the opset API, sequence_lengths a Parameter or a Const
    of full lengths, the time axis static or dynamic."""
    import openvino as ov
    import openvino.opset5 as ops

    batch, steps, size, hidden = 2, 5, 3, 4
    rng = np.random.default_rng(0)
    x = ops.parameter([batch, -1 if dynamic else steps, size], np.float32, name="X")
    h = ops.parameter([batch, 2, hidden], np.float32, name="H")
    params = [x, h]
    if lengths == "parameter":
        params.append(ops.parameter([batch], np.int32, name="L"))
        lengths_node = params[-1]
    else:
        lengths_node = ops.constant(np.full([batch], steps, np.int32))
    weights = [ops.constant(rng.uniform(-1, 1, shape).astype(np.float32))
               for shape in ([2, 3 * hidden, size], [2, 3 * hidden, hidden], [2, 3 * hidden])]
    gru = ops.gru_sequence(x, h, lengths_node, *weights, hidden, "bidirectional", name="gru")
    return ov.Model(gru.outputs(), params)


def kernels(compiled) -> list[str]:
    """The runtime graph read here independently: the layer types that compute a recurrence."""
    return [op.get_rt_info()["layerType"].astype(str) for op in compiled.get_runtime_model().get_ordered_ops()
            if op.get_rt_info()["layerType"].astype(str) in ("RNNSeq", "TensorIterator", "Loop")]


@pytest.mark.parametrize("lengths, dynamic", [("parameter", False), ("const", False), ("parameter", True)])
def test_a_split_bidirectional_node_names_what_each_direction_ran_as(lengths, dynamic):
    """The CPU splits a bidirectional sequence into one kernel per direction under new names; each
    direction's kernel is found through the joins named after the node's outputs."""
    import openvino as ov

    compiled = ov.Core().compile_model(bidirectional_gru(lengths, dynamic), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    impl = what_ran(compiled, ["gru"])["gru"]
    found = kernels(compiled)
    if len(found) != 2:  # a plugin that runs the node as one kernel names it by the node's own name
        assert impl.directions == ()
        return
    assert [d.layer_types for d in impl.directions] == [(found[0],), (found[1],)]
    assert impl.describe() == "; ".join(f"{name}: {kind} (f32{'; decomposed' if kind == 'TensorIterator' else ''})"
                                        for name, kind in zip(("forward", "reverse"), found))
    assert impl.decomposed == ("TensorIterator" in found)
    assert meets(impl.describe(), found[0]) == (found[0] == found[1])


def test_a_bidirectional_dynamic_sequence_compiled_again_in_one_process_is_read_the_same(cpu_precisions):
    """At bf16 the CPU plugin's runtime graph of a bidirectional dynamic LSTM was read as one RNNSeq, or
    as the Concatenation joining the directions, in some compiles of one worker: each compile, at each
    precision this CPU runs and at its default, twice, is read as one kernel per direction."""
    from irtool.runtime.compile import compile_on

    model = build_model(OpCase("LSTMSequence", {"hidden_size": 4, "direction": "bidirectional"},
                               {"batch_size": 2, "seq_length": 3, "input_size": 5}, dynamic=("batch_size",)))
    read = []
    for precision in [*(p for p in cpu_precisions if p in ("f32", "bf16", "f16")), "default"] * 2:
        compiled, _ = compile_on(model, "CPU", precision, {}, Path("lstm.xml"))
        read.append(what_ran(compiled, ["LSTMSequence"])["LSTMSequence"].describe())
    found = kernels(compiled)
    assert len(found) == 2 and len(set(read)) <= 2  # f32 and bf16 runs differ in their precisions only
    assert all(text.startswith("forward: RNNSeq (") and "; reverse: RNNSeq (" in text for text in read), read


def test_a_converted_bidirectional_lstm_names_both_directions(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from real_models import OnnxCase, convert_onnx

    from irtool.pipeline.prepare import read_and_prepare

    prepared = read_and_prepare(convert_onnx(OnnxCase("LSTM", bidirectional=True), tmp_path))
    compiled = compile_prepared(prepared, "CPU", "f32", {})
    (impl,) = compiled.implementations.values()
    assert "only its outputs" not in impl.describe() and impl.describe() != "not reported"
    assert len(impl.directions) in (0, 2) and all(d.layer_types for d in impl.directions)


@pytest.mark.parametrize("description, expected, result", [
    ("RNNSeq (f32)", "RNNSeq", True),
    ("TensorIterator (f32; decomposed)", "RNNSeq", False),
    ("forward: RNNSeq (f32); reverse: RNNSeq (f32)", "RNNSeq", True),
    ("forward: RNNSeq (f32); reverse: TensorIterator (f32; decomposed)", "RNNSeq", False),
    ("forward: RNNSeq (f32); reverse: TensorIterator (f32; decomposed)", "f32", True),
])
def test_an_expected_implementation_must_hold_in_every_direction(description, expected, result):
    assert meets(description, expected) is result


@pytest.mark.parametrize("impl, text", [
    (Implementation(()), "not reported"),
    (Implementation(("RNNSeq",), ("jit_avx2",), ("bf16",)), "RNNSeq [jit_avx2] (bf16)"),
    (Implementation(("TensorIterator",), (), ("f32",)), "TensorIterator (f32; decomposed)"),
    (Implementation((), directions=(Implementation(("RNNSeq",), (), ("f32",)),
                                    Implementation(("TensorIterator",), (), ("f32",)))),
     "forward: RNNSeq (f32); reverse: TensorIterator (f32; decomposed)"),
])
def test_descriptions(impl, text):
    assert impl.describe() == text


def test_a_loop_is_said_at_its_bodys_precision_in_each_direction_and_a_kernel_as_reported():
    from irtool.runtime.what_ran import from_description, with_body_precision

    split = from_description("forward: TensorIterator (f32; decomposed); reverse: RNNSeq (f32)")
    assert with_body_precision(split, "bf16").describe() == \
        "forward: TensorIterator (bf16; decomposed); reverse: RNNSeq (f32)"
    assert with_body_precision(from_description("RNNSeq (f32)"), "bf16").describe() == "RNNSeq (f32)"


@pytest.mark.parametrize("described, direction, family, contradicted", [
    ("RNNSeq (bf16)", "bidirectional", "CPU", True),
    ("Concatenation (f32)", "bidirectional", "CPU", True),
    ("forward: RNNSeq (bf16); reverse: RNNSeq (bf16)", "bidirectional", "CPU", False),
    ("RNNSeq (bf16)", "forward", "CPU", False),
    ("RNNSeq (f16)", "bidirectional", "GPU", False),
    ("not reported", "bidirectional", "CPU", False),
])
def test_a_record_of_one_layer_for_a_bidirectional_sequence_contradicts_the_cpu(described, direction, family,
                                                                              contradicted):
    from irtool.runtime.what_ran import contradicts, from_description

    assert contradicts(from_description(described), direction, family) is contradicted
