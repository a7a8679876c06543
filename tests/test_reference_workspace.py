"""The reference's scratch memory (irtool.reference.workspace) and the chunked time loop.

Runs split into chunks of steps (input gates per chunk, states carried across chunk borders)
are checked against OpenVINO's CPU plugin at f32 with chunks of one step and of an odd
number of steps; outputs must never share memory with the scratch arena that the next run
overwrites; threads running at once each get their own arena.
"""
from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest_reference import GATES, Case, assert_close
from test_reference_openvino import openvino_outputs

from irtool.reference import recurrence, workspace

# Long enough to span several chunks; ragged lengths with 0 and full; every state ping-pongs.
CHUNKED = [
    Case("LSTM", batch=3, seq=7, hidden=4, direction="bidirectional", lengths=(7, 0, 4), seed=11),
    Case("GRU", batch=2, seq=6, hidden=3, direction="reverse", lengths=(5, 6), seed=12),
    Case("GRU", batch=1, seq=7, hidden=2, linear_before_reset=True, clip=0.75, seed=13),
    Case("RNN", batch=2, seq=5, hidden=3, direction="bidirectional", lengths=(2, 5), seed=14),
]


def _step_bytes(case: Case) -> int:
    """Bytes of input gates per step, as recurrence._chunk_steps counts them (float32)."""
    return case.directions * GATES[case.family] * case.hidden * case.batch * 4


@pytest.mark.parametrize("steps_per_chunk", [1, 3])
@pytest.mark.parametrize("case", CHUNKED, ids=str)
def test_chunked_runs_match_openvino(case: Case, steps_per_chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recurrence, "CHUNK_BYTES", steps_per_chunk * _step_bytes(case))
    monkeypatch.setattr(recurrence, "MIN_COLUMNS", 0)  # the chunk is CHUNK_BYTES
    chunks = []
    fill = recurrence._InputGates.fill
    monkeypatch.setattr(recurrence._InputGates, "fill", lambda self, *steps: chunks.append(steps) or fill(self, *steps))
    inputs = case.inputs()
    expected = openvino_outputs(case, inputs)
    actual = case.reference(inputs)
    longest = max(case.lengths or [case.seq])
    assert chunks == [(first, min(first + steps_per_chunk, longest)) for first in range(0, longest, steps_per_chunk)]
    for index, (mine, theirs) in enumerate(zip(actual, expected)):
        assert_close(mine, theirs, f"{case} output {index}, {steps_per_chunk} step(s) per chunk")


@pytest.mark.parametrize("case", [CHUNKED[0], CHUNKED[2], Case("LSTM", "cell", batch=1, hidden=3)], ids=str)
def test_outputs_are_not_scratch(case: Case) -> None:
    first = case.reference()
    kept = [array.copy() for array in first]
    Case(**{**case.__dict__, "seed": case.seed + 1}).reference()  # same shapes, other values
    arena = workspace._local.workspace._arena
    assert arena.size > 0
    for index, (array, copy) in enumerate(zip(first, kept)):
        assert not np.shares_memory(array, arena), f"output {index} is a view of the scratch arena"
        np.testing.assert_array_equal(array, copy, err_msg=f"output {index} changed by a later run")


def test_threads_run_at_once_with_their_own_scratch() -> None:
    cases = [Case("LSTM", batch=4, seq=30, input_size=8, hidden=16, direction="bidirectional", seed=k)
             for k in range(4)]
    alone = [case.reference() for case in cases]
    results: dict[int, list[tuple[np.ndarray, ...]]] = {k: [] for k in range(len(cases))}
    start = threading.Barrier(len(cases))

    def work(k: int) -> None:
        start.wait()
        for _ in range(20):
            results[k].append(cases[k].reference())

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for k, runs in results.items():
        assert len(runs) == 20
        for outputs in runs:
            for mine, expected in zip(outputs, alone[k]):
                np.testing.assert_array_equal(mine, expected)


def test_take_is_aligned_and_reused_after_growth() -> None:
    space = workspace.Workspace()
    first = [space.take((3, 5), np.float32), space.take((7,), np.float64)]  # the arena is empty: fresh arrays
    space.reset()
    assert space._arena.size >= sum(a.nbytes for a in first)
    again = [space.take((3, 5), np.float32), space.take((7,), np.float64)]
    for array in again:
        assert np.shares_memory(array, space._arena)
        assert array.ctypes.data % workspace.ALIGN == 0
        assert array.flags.c_contiguous and array.flags.writeable
    assert not np.shares_memory(again[0], again[1])


def test_arena_above_the_cap_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workspace, "KEEP_BYTES", 1024)
    space = workspace.Workspace()
    space.take((100,), np.float32)
    space.reset()
    assert 400 <= space._arena.size <= 1024
    space.take((1000,), np.float32)
    space.reset()
    assert space._arena.size == 0


def test_nested_use_gets_a_private_workspace() -> None:
    with workspace.scratch() as outer, workspace.scratch() as inner:
        assert inner is not outer
        a, b = outer.take((4,), np.float32), inner.take((4,), np.float32)
        a[:] = 1
        b[:] = 2
        assert not np.shares_memory(a, b) and a.sum() == 4
