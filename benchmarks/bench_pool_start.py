"""What a worker's start costs, forked from the pool's zygote against started as a process of its
own (``Pool(fork=False)``, as every worker was before irtool.jobs.zygote), in one run.

Three measures, each a fresh process per round so that nothing is warm but the OS's file cache,
rounds interleaved (the machines have 2 cores and other work on them); each side's median:

  start N   a pool of N workers (``-j N``) from nothing running N small jobs (an RNNCell each,
            one per worker), then closed: wall clock, and CPU time of the pool's processes (this
            one excluded).
  crashes   a pool of one worker in a ``with`` block (as ``irtool reduce`` keeps it) running K
            one-job batches whose job aborts the worker (``IRTOOL_FAULT=abort``): each needs a
            new worker, as each crashing candidate of a reduction does.

    python benchmarks/bench_pool_start.py [--rounds 5] [--workers 1,2] [--crashes 10]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MEASURE = r"""
import json, os, resource, sys, time
from irtool.jobs.pool import Pool
from irtool.jobs.records import Job, SuiteCase
from irtool.jobs.worker import RunnerOptions

fork, what, count = sys.argv[1] == "fork", sys.argv[2], int(sys.argv[3])


def job(hidden):
    return Job(SuiteCase(id=f"cell{hidden}", suite="bench", op="RNNCell", version=0, attributes={"hidden_size": hidden}),
               "CPU", "f32")


began = time.monotonic()
verdicts = []
if what == "start":
    Pool(count, 60, RunnerOptions(), fork=fork).run([job(2 + i) for i in range(count)],
                                                    lambda result: verdicts.append(result.verdict))
    assert verdicts == ["pass"] * count, verdicts
else:
    with Pool(1, 60, RunnerOptions(), dict(os.environ, IRTOOL_FAULT="abort:hidden_size=2"), fork=fork) as pool:
        for _ in range(count):
            pool.run([job(2)], lambda result: verdicts.append(result.verdict))
    assert verdicts == ["crash"] * count, verdicts
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": time.monotonic() - began, "cpu": used.ru_utime + used.ru_stime}))
"""


def measure(fork: bool, what: str, count: int) -> dict:
    done = subprocess.run([sys.executable, "-c", MEASURE, "fork" if fork else "alone", what, str(count)],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "CI": "true"}, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", default="1,2", help="pool sizes to start (comma-separated)")
    parser.add_argument("--crashes", type=int, default=10, help="crashing one-job batches in one pool")
    args = parser.parse_args()
    rows = [("start", int(n)) for n in args.workers.split(",")] + [("crashes", args.crashes)]
    times: dict = {(row, fork): [] for row in rows for fork in (True, False)}
    for _ in range(args.rounds):
        for row in rows:
            for fork in (True, False):
                times[row, fork].append(measure(fork, *row))
    print(f"{'measure':<12} {'forked wall':>11} {'alone wall':>10} {'ratio':>6}   {'forked CPU':>10} "
          f"{'alone CPU':>9} {'ratio':>6}")
    for row in rows:
        forked, alone = times[row, True], times[row, False]
        wall = [statistics.median(r["wall"] for r in side) for side in (forked, alone)]
        cpu = [statistics.median(r["cpu"] for r in side) for side in (forked, alone)]
        print(f"{row[0] + ' ' + str(row[1]):<12} {wall[0]:>10.2f}s {wall[1]:>9.2f}s {wall[0] / wall[1]:>6.2f}   "
              f"{cpu[0]:>9.2f}s {cpu[1]:>8.2f}s {cpu[0] / cpu[1]:>6.2f}")


if __name__ == "__main__":
    main()
