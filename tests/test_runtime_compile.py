"""runtime/compile.py: the arrays an inference returns."""
from __future__ import annotations

import numpy as np

from irtool.execute import case_inputs, compile_prepared, execute, read_and_prepare
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
