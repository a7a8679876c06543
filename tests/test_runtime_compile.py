"""runtime/compile.py: the arrays an inference returns."""
from __future__ import annotations

import numpy as np
import pytest

from irtool.build import build_model
from irtool.cases import OpCase
from irtool.execute import case_inputs, compile_prepared, execute, read_and_prepare, seeded_inputs
from irtool.runtime.compile import compile_on, infer
from real_models import loop_gru_cell_model


def test_the_arrays_of_an_inference_stay_as_they_were_through_later_inferences(tmp_path):
    """infer returns arrays over the request's own output tensors (no copy): the plain outputs and
    the probed copy's captured tensors of one run must keep their values while the same compiled
    models infer other inputs, on new requests and after the run's requests are gone."""
    prepared = read_and_prepare(loop_gru_cell_model(tmp_path / "loop.xml"))
    inputs, _, _ = case_inputs(prepared, seed=0)
    compiled = compile_prepared(prepared, "CPU", "f32", {})
    assert compiled.probed is not None
    first = execute(compiled, inputs, "CPU")
    kept = [array.copy() for array in first.outputs + first.captured]
    other = {name: array * 0.5 + 0.25 for name, array in inputs.items()}
    later = [execute(compiled, other, "CPU") for _ in range(3)]
    assert all(np.array_equal(array, copy) for array, copy in zip(first.outputs + first.captured, kept))
    assert not all(np.array_equal(a, b) for a, b in zip(first.captured, later[-1].captured))


@pytest.mark.parametrize("device", ["CPU", "AUTO:CPU", "HETERO:CPU", "MULTI:CPU", "BATCH:CPU(2)"])
def test_each_device_leaves_an_inferences_arrays_alone(tmp_path, device):
    """The same on every device form that wraps the CPU's requests (BATCH gathers requests into
    batched ones): arrays returned by one inference are not the memory of the next."""
    model = build_model(OpCase("GRUSequence", {"hidden_size": 8, "direction": "forward"},
                               {"batch_size": 2, "seq_length": 4, "input_size": 8}))
    inputs = seeded_inputs(model)
    other = {name: array * 0.5 + 0.25 if array.dtype.kind == "f" else array for name, array in inputs.items()}
    compiled, _ = compile_on(model, device, "f32", {}, tmp_path / "gru.xml")
    first = infer(compiled, inputs, device)
    kept = [array.copy() for array in first]
    later = [infer(compiled, other, device) for _ in range(3)]
    assert all(np.array_equal(array, copy) for array, copy in zip(first, kept))
    assert not any(np.array_equal(a, b) for a, b in zip(first, later[-1]))
