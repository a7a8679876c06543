"""irtool.reference against torch.nn.GRU / nn.LSTM / nn.RNN, in float32 and float64.

torch's GRU is the linear_before_reset form (n = tanh(W_in x + b_in + r * (W_hn h + b_hn))),
its gate orders are r, z, n (GRU) and i, f, g, o (LSTM), and it sums nothing: b_ih and b_hh
are kept apart.  Ragged lengths go through pack_padded_sequence (torch refuses a length of
0, so these cases start at 1); the padded output is 0 past each length, h_n is the last
valid state, and the reverse direction walks only the first len steps, as OpenVINO does.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest_reference import Case, assert_close

# torch gate blocks in OpenVINO's order: GRU z, r, h from torch r, z, n; LSTM f, i, c, o from i, f, g, o
TORCH_GATES = {"GRU": (1, 0, 2), "LSTM": (1, 0, 2, 3), "RNN": (0,)}


def _torch_blocks(array: np.ndarray, family: str) -> np.ndarray:
    """OpenVINO gate-major rows -> torch's gate order (the permutations are their own inverse)."""
    blocks = np.split(array, len(TORCH_GATES[family]), axis=0)
    return np.concatenate([blocks[k] for k in TORCH_GATES[family]], axis=0)


def torch_outputs(case: Case, inputs: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    # imported here, not when the module is collected: every pytest-xdist worker collects every
    # module, and importing torch costs each 2.7 s of CPU
    torch = pytest.importorskip("torch", reason="torch is an optional oracle; these tests need it installed")
    family, hidden = case.family, case.hidden
    x, *states, lengths, w, r, b = inputs
    module_type = {"GRU": torch.nn.GRU, "LSTM": torch.nn.LSTM, "RNN": torch.nn.RNN}[family]
    options = {"nonlinearity": case.activations[0]} if family == "RNN" and case.activations else {}
    module = module_type(case.input_size, hidden, batch_first=True, bidirectional=case.directions == 2, **options)
    module = module.to(torch.float64 if x.dtype == np.float64 else torch.float32)
    with torch.no_grad():
        for d, suffix in enumerate(["", "_reverse"][:case.directions]):
            gates = len(TORCH_GATES[family])
            if family == "GRU":  # B = [Wbz+Rbz, Wbr+Rbr, Wbh, Rbh]: put the sums in b_ih
                b_ih = b[d, :3 * hidden]
                b_hh = np.concatenate([np.zeros(2 * hidden, dtype=b.dtype), b[d, 3 * hidden:]])
            else:
                b_ih, b_hh = b[d], np.zeros(gates * hidden, dtype=b.dtype)
            for name, value in (("weight_ih", w[d]), ("weight_hh", r[d]), ("bias_ih", b_ih), ("bias_hh", b_hh)):
                getattr(module, f"{name}_l0{suffix}").copy_(torch.from_numpy(_torch_blocks(value, family)))
        lengths_tensor = torch.from_numpy(lengths.astype(np.int64))
        packed = torch.nn.utils.rnn.pack_padded_sequence(torch.from_numpy(x), lengths_tensor, batch_first=True,
                                                         enforce_sorted=False)
        initial = [torch.from_numpy(np.ascontiguousarray(s.transpose(1, 0, 2))) for s in states]
        out, final = module(packed, tuple(initial) if family == "LSTM" else initial[0])
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=case.seq)
    finals = final if family == "LSTM" else (final,)
    y = y.numpy().reshape(case.batch, case.seq, case.directions, hidden).transpose(0, 2, 1, 3)
    return (y, *(f.numpy().transpose(1, 0, 2) for f in finals))


def grid() -> list[Case]:
    cases, counter = [], itertools.count()
    shapes = [(1, 1, None), (3, 4, (5, 1, 3)), (2, 6, (2, 5))]
    for family, direction in itertools.product(("GRU", "LSTM", "RNN"), ("forward", "bidirectional")):
        for activations in ((None, ("relu",)) if family == "RNN" else (None,)):
            k = next(counter)
            batch, hidden, lengths = shapes[k % len(shapes)]
            cases.append(Case(family, batch=batch, seq=5, hidden=hidden, direction=direction, lengths=lengths,
                              linear_before_reset=family == "GRU", activations=activations, seed=300 + k, scale=1.5))
    return cases


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", grid(), ids=str)
def test_matches_torch(case: Case, dtype: type) -> None:
    inputs = case.inputs(dtype)
    expected = torch_outputs(case, inputs)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for index, (mine, theirs) in enumerate(zip(case.reference(inputs), expected)):
        assert mine.dtype == dtype
        assert_close(mine, theirs, f"{case} output {index}", tolerance)
