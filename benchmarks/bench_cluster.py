"""The overhead of ``irtool harness --cluster`` with two local workers, against ``-j 2`` on one machine.

Both sides run the smoke suite's jobs on CPU and AUTO:CPU at f32, each timed as a whole fresh
``irtool harness`` process (its start-up, the reports and, for ``-j 2``, its two worker
processes' start-up count):

  (a) ``irtool harness SUITE -d CPU,AUTO:CPU --precision f32 -j 2``
  (b) the same with ``--scheduler-file F``: an ``irtool scheduler`` and two ``irtool worker``
      processes on 127.0.0.1, each offering CPU and AUTO:CPU at f32, one lane each, started
      once before the rounds (a lab's workers stay up between runs).  Their first round
      starts each worker's pool process, and is shown apart; the median is over the others.

Rounds are interleaved (the machines have 2 cores and other work on them); the script prints
each side's median and the overhead (b - a) / a.

    python benchmarks/bench_cluster.py [--rounds 5] [--suite samples/suites/smoke.toml]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IRTOOL = [sys.executable, "-m", "irtool"]
START_LIMIT = 120.0  # seconds for the scheduler and a worker to say they are up


def started(command: list[str], lines: int) -> subprocess.Popen:
    """A process, once it has written ``lines`` lines to stdout (it is up)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env={**os.environ, "CI": "true"})
    deadline = time.monotonic() + START_LIMIT
    for _ in range(lines):
        if not process.stdout.readline() or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"{' '.join(command)}: did not start")
    return process


def timed(command: list[str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--suite", type=Path, default=ROOT / "samples" / "suites" / "smoke.toml")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "scheduler.json"
        processes = [started([*IRTOOL, "scheduler", "--port", "0", "--scheduler-file", str(file)], 1)]
        try:
            processes += [started([*IRTOOL, "worker", "--scheduler-file", str(file), "--name", name,
                                  "--devices", "CPU,AUTO:CPU", "--precisions", "f32"], 2) for name in ("w1", "w2")]
            run = [*IRTOOL, "harness", str(args.suite), "-d", "CPU,AUTO:CPU", "--precision", "f32", "--force",
                   "--no-progress", "--report-dir"]
            local, cluster = [], []
            for round_ in range(args.rounds + 1):
                local.append(timed([*run, f"{folder}/local", "-j", "2"]))
                cluster.append(timed([*run, f"{folder}/cluster", "--scheduler-file", str(file)]))
                print(f"round {round_}: -j 2 {local[-1]:.2f} s, --cluster {cluster[-1]:.2f} s", flush=True)
        finally:
            for process in reversed(processes):
                process.kill()
                process.wait()
    a, b = statistics.median(local[1:] or local), statistics.median(cluster[1:] or cluster)
    print(f"first round (the workers' pools start): -j 2 {local[0]:.2f} s, --cluster {cluster[0]:.2f} s")
    print(f"median of {len(local[1:]) or 1}: -j 2 {a:.2f} s, --cluster {b:.2f} s: overhead {(b - a) / a:+.1%}")


if __name__ == "__main__":
    main()
