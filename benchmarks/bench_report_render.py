"""`irtool report render` of N results: time and peak memory per result must not grow with N.

A run's results.jsonl of N results is made (RESULTS below: 4 ops x 2 devices x 2 precisions,
90% pass, 5% fail with two outputs and a 20-step error curve each, the rest error, crash,
skip, xfail and xpass; each result is the size the harness writes, about 2 KB), then rendered
into results.json, junit.xml and report.html in a fresh process.  Its peer, in the same round,
is a fresh process that json-loads every line of the same file and keeps the records (what any
reader of the file pays at least).  Rounds are interleaved; the best median of each is kept.

Linear means the render's seconds and peak memory per result stay flat from the smallest N to
the largest, and its ratio to the peer too.

    python benchmarks/bench_report_render.py [--sizes 10000,50000,200000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OPS = ("GRUSequence-5", "LSTMSequence-5", "RNNSequence-5", "GRUCell-3")
COLUMNS = [(d, p) for d in ("CPU", "GPU") for p in ("f32", "bf16")]

# One process's work and its own peak RSS: "seconds max_rss_kib" on stdout.
TIMED = """
import resource, sys, time
start = time.perf_counter()
{work}
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
RENDER = "from irtool.cli.program import main\ncode = main(['report', 'render', sys.argv[1], '-o', sys.argv[2]])\nassert code == 0"
JSON_LOAD = ("import json\nwith open(sys.argv[1], encoding='utf-8') as f:\n    records = [json.loads(line) for line in f]\n"
             "assert len(records) > 1")


def _output(name: str, k: int, failing: bool) -> dict:
    steps = [round(1e-7 * (1 + (k * 7 + s) % 13), 12) for s in range(20)]
    if failing:
        steps[-1] = 0.05
    return {"name": name, "shape": [3, 1, 20, 8], "passed": not failing, "max_abs": max(steps), "max_rel": 1e-5,
            "mean_abs": 2e-8, "outside": 3 if failing else 0, "total": 480, "worst_index": [0, 0, 19, 3],
            "worst_actual": 0.123456, "worst_expected": 0.123455, "needed_atol": max(steps), "needed_rtol": 1e-4,
            "actual_nan": 0, "actual_inf": 0, "expected_nan": 0, "expected_inf": 0, "nonfinite_mismatch": 0,
            "step_max_abs": steps, "atol": 1e-5, "rtol": 1e-4, "tolerance_source": "f32 default"}


def result(k: int) -> dict:
    """The k-th result of a run: a mix of verdicts over 4 ops and 4 (device, precision) columns."""
    op = OPS[k % len(OPS)]
    device, precision = COLUMNS[(k // len(OPS)) % len(COLUMNS)]
    verdict = ("fail" if k % 20 == 7 else "error" if k % 200 == 13 else "crash" if k % 500 == 17 else
               "skip" if device == "GPU" and k % 3 == 0 else "xfail" if k % 100 == 23 else
               "xpass" if k % 300 == 29 else "pass")
    failing = verdict in ("fail", "xfail")
    message = {"fail": "Y: 3 of 480 elements outside tolerance", "error": "CPU cannot compile model.xml: bad",
               "crash": "worker died: signal 6 (SIGABRT)", "skip": "device GPU is not available here",
               "xfail": "bf16 drift", "xpass": "known bad"}.get(verdict, "")
    return {"case": f"{op.lower()}-{k // 16}[hidden_size=8,direction=forward,seed={k}]", "suite": "bench",
            "device": device, "precision": precision, "verdict": verdict, "op": op, "file": None,
            "attributes": {"hidden_size": 8, "direction": "forward", "clip": 0.0},
            "shapes": {"X": [3, 20, 6], "H_t": [3, 1, 8]}, "element_type": "f32", "seed": k,
            "effective_precision": {device: precision}, "execution_devices": [device], "message": message,
            "stderr": ["terminate called", "Aborted"] if verdict == "crash" else [],
            "outputs": [] if verdict in ("skip", "error", "crash") else [_output("Y", k, failing), _output("Ho", k, False)],
            "max_abs": 0.05 if failing else 1e-7, "time": 0.25, "compile_time": 0.04, "infer_time": 0.01,
            "implementations": {"gru": "RNNSeq (f32)"}, "node": None,
            "reproducer": f"reproducers/r{k}" if verdict == "fail" else None,
            "issue": "BUG-1" if verdict in ("xfail", "xpass") else None, "openvino": None,
            "openvino_version": "2026.4.1-22982"}


def write_results(path: Path, count: int) -> None:
    meta = {"irtool_version": "0.1.0", "openvino_version": "2026.4.1", "suites": ["bench.toml"],
            "devices": ["CPU", "GPU"], "precisions": ["f32", "bf16"], "shard": None, "started": "2026-01-01T00:00:00+00:00",
            "finished": None}
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"run": meta}) + "\n")
        for k in range(count):
            handle.write(json.dumps(result(k)) + "\n")


def timed(work: str, *argv: str) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of ``work`` in a fresh process."""
    done = subprocess.run([sys.executable, "-c", TIMED.format(work=work), *argv], capture_output=True, text=True,
                          cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"failed: {done.stderr.strip()[-2000:]}")
    seconds, rss = done.stdout.split()[-2:]
    return float(seconds), int(rss) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,50000,200000", help="numbers of results (default 10000,50000,200000)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="irtool-bench-") as tmp:
        folder = Path(tmp)
        files = {}
        for count in sizes:
            files[count] = folder / f"r{count}" / "results.jsonl"
            files[count].parent.mkdir()
            write_results(files[count], count)
        times: dict[tuple[int, str], list[tuple[float, float]]] = {}
        for _ in range(args.rounds):
            for count in sizes:
                out = folder / f"out{count}"
                times.setdefault((count, "render"), []).append(timed(RENDER, str(files[count]), str(out)))
                times.setdefault((count, "json"), []).append(timed(JSON_LOAD, str(files[count])))
        print(f"{'results':>8} {'MB':>6} {'render s':>9} {'us/result':>9} {'peak MiB':>9} {'KiB/result':>10} "
              f"{'json s':>7} {'json MiB':>8} {'render/json':>11}")
        for count in sizes:
            render = times[(count, "render")]
            peer = times[(count, "json")]
            seconds, peak = statistics.median(t for t, _ in render), min(m for _, m in render)
            peer_s, peer_m = statistics.median(t for t, _ in peer), min(m for _, m in peer)
            size = files[count].stat().st_size / 1e6
            print(f"{count:>8} {size:>6.0f} {seconds:>9.2f} {seconds / count * 1e6:>9.1f} {peak:>9.0f} "
                  f"{peak * 1024 / count:>10.2f} {peer_s:>7.2f} {peer_m:>8.0f} {seconds / peer_s:>11.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
