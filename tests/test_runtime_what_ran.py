"""What the device ran for each recurrent node, read from the compiled model's runtime graph."""
from __future__ import annotations

from pathlib import Path

import pytest

from irtool.build import build_model
from irtool.cases import OpCase
from irtool.execute import compile_prepared, prepare
from irtool.runtime.what_ran import Implementation

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


def test_a_split_bidirectional_node_says_only_its_outputs_are_named(tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from real_models import OnnxCase, convert_onnx
    from irtool.execute import read_and_prepare

    prepared = read_and_prepare(convert_onnx(OnnxCase("LSTM", bidirectional=True), tmp_path))
    compiled = compile_prepared(prepared, "CPU", "f32", {})
    (impl,) = compiled.implementations.values()
    own = runtime_layers(compiled, prepared.nodes[0].name)
    assert impl.outputs_only == (own == [])
    if impl.outputs_only:
        assert impl.describe().startswith("split; only its outputs are named (")


@pytest.mark.parametrize("impl, text", [
    (Implementation(()), "not reported"),
    (Implementation(("RNNSeq",), ("jit_avx2",), ("bf16",)), "RNNSeq [jit_avx2] (bf16)"),
    (Implementation(("TensorIterator",), (), ("f32",)), "TensorIterator (f32; decomposed)"),
])
def test_descriptions(impl, text):
    assert impl.describe() == text
