"""Helpers shared by the tests of the harness reports (imported by them; not a pytest conftest).

``sample_run()`` is a synthetic run with every verdict, on CPU at f32 and bf16 and on an
absent GPU; ``result`` and ``output`` make single records in the shape the worker stores.
"""
from __future__ import annotations

from typing import Any, Sequence

from irtool.harness.store import RunResults
from irtool.jobs.records import CaseResult

GRU, LSTM = "GRUSequence-5", "LSTMSequence-5"
HOSTILE = '<script>alert("x")</script>&'
GPU_REASON = "device GPU is not available here (GPU: no OpenCL)"
STEPS = (1e-7, 3e-6, 2e-4, 5e-2)  # spans decades: a log-scale plot


def output(name: str = "Y", max_abs: float = 1e-7, steps: Sequence[float] | None = None, outside: int = 0,
           **fields: Any) -> dict[str, Any]:
    data = {"name": name, "shape": [2, 1, len(steps or (1,) * 4), 8], "passed": outside == 0, "problem": None,
            "max_abs": max_abs, "max_rel": max_abs * 10, "mean_abs": max_abs / 10, "outside": outside, "total": 64,
            "worst_index": [0, 0, 3, 1], "worst_actual": 0.5 + max_abs, "worst_expected": 0.5,
            "needed_atol": max_abs, "needed_rtol": max_abs * 2, "step_max_abs": list(steps) if steps else None,
            "actual_nan": 0, "actual_inf": 0, "expected_nan": 0, "expected_inf": 0, "nonfinite_mismatch": 0,
            "atol": 1e-5, "rtol": 1e-4, "tolerance_source": "f32 default"}
    data.update(fields)
    return data


def result(case: str, verdict: str, device: str = "CPU", precision: str = "f32", op: str | None = GRU,
           max_abs: float | None = None, **fields: Any) -> CaseResult:
    if max_abs is not None and "outputs" not in fields:
        fields["outputs"] = [output(max_abs=max_abs)]
    return CaseResult(case=case, suite="smoke", device=device, precision=precision, verdict=verdict, op=op,
                      max_abs=max_abs, time=0.25, **fields)


def sample_run() -> RunResults:
    """CPU f32: GRU 2 pass + 1 fail + 1 (IR file of one GRU) pass; LSTM 1 pass, 1 error, 1 crash,
    1 timeout; a file that is not one op: unjudged.  CPU bf16: GRU 1 pass, 1 xfail; LSTM 1 xpass.
    GPU f32: 3 skipped."""
    results = [
        result("gru-a", "pass", max_abs=1e-7),
        result("gru-b", "pass", max_abs=2e-7),
        result("gru-fail", "fail", max_abs=5e-2, message="Y: 3 of 64 elements outside tolerance",
               outputs=[output("Y", 5e-2, STEPS, outside=3), output("Ho", 5e-2, outside=1)],
               reproducer="reproducers/gru-fail-CPU-f32"),
        result("ir/gru.xml", "pass", file="samples/ir/valid/gru.xml", max_abs=1e-7),
        result("lstm-a", "pass", op=LSTM, max_abs=1e-7),
        result("lstm-error", "error", op=LSTM, message="CPU cannot compile model.xml: bad"),
        result("lstm-crash", "crash", op=LSTM, message="worker died: signal 6 (SIGABRT)",
               stderr=["terminate called", "Aborted \x00\x1b[0m"]),
        result("lstm-hang", "timeout", op=LSTM, message="ran past 5 s", stderr=["still going"]),
        result("ir/two-ops.xml", "unjudged", op=None, file="samples/ir/valid/two.xml",
               message="no reference applies: 2 RNN-family ops"),
        result("gru-a", "pass", precision="bf16", max_abs=3e-3),
        result("gru-fail", "xfail", precision="bf16", max_abs=4e-2, message="bf16 drift",
               issue="https://example.com/issues/1"),
        result("lstm-a", "xpass", precision="bf16", op=LSTM, max_abs=1e-3, message="lstm bf16 known bad",
               issue="BUG-7"),
    ] + [result(case, "skip", device="GPU", op=op, message=GPU_REASON)
         for case, op in (("gru-a", GRU), ("gru-b", GRU), ("lstm-a", LSTM))]
    meta = {"irtool_version": "0.1.0", "openvino_version": "2026.4.1", "host": {"name": "host-1", "platform": "Linux",
            "python": "3.11", "cpu": "Xeon"}, "suites": ["smoke"], "devices": ["CPU", "GPU"],
            "precisions": ["f32", "bf16"], "shard": None, "started": "2026-01-01T10:00:00+00:00",
            "finished": "2026-01-01T10:05:00+00:00"}
    return RunResults(meta, results)


def hostile_run() -> RunResults:
    """One failing job whose every text is hostile HTML."""
    return RunResults({"suites": [HOSTILE], "devices": ["CPU"], "precisions": ["f32"]}, [
        result(HOSTILE, "fail", max_abs=1.0, message=HOSTILE, reproducer=f"javascript:{HOSTILE}",
               outputs=[output(HOSTILE, 1.0, (0.5, 1.0), outside=1)]),
        result(HOSTILE, "skip", device="GPU", message=HOSTILE),
        result("x", "xfail", message=HOSTILE, issue=f'javascript:{HOSTILE}')])
