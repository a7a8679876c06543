"""The overhead of ``irtool harness --cluster`` with two local workers, against ``-j 2`` on one machine.

Each suite's jobs run on CPU and AUTO:CPU at f32, each side timed as a whole fresh ``irtool
harness`` process (its start-up, the reports and, for ``-j 2``, its two worker processes'
start-up count):

  (a) ``irtool harness SUITE -d CPU,AUTO:CPU --precision f32 -j 2``
  (b) the same with ``--scheduler-file F``: an ``irtool scheduler`` and two ``irtool worker``
      processes on 127.0.0.1, each offering CPU and AUTO:CPU at f32, one lane each, started
      once before the rounds (a lab's workers stay up between runs).  Their first round
      starts each worker's pool process, and is shown apart; the median is over the others.

Rounds are interleaved (the machines have 2 cores and other work on them, and a minute's run
varies by several per cent from one to the next); the script prints each side's median, the
overhead (b - a) / a of the medians and the median of each round's own (b - a) / a, per suite,
and the CPU time each side took (a: the harness and its pool's processes; b: the harness, its
client process, and what the scheduler, the workers and their lanes' processes took meanwhile),
which is what the cluster adds on a machine with no core to spare.  The smoke suite (72 jobs, about
5 s) shows the fixed cost of a cluster run (the harness imports dask distributed, about 0.7 s
of CPU, and connects); full.toml (1,230 jobs, about a minute) is a lab-sized run.

    python benchmarks/bench_cluster.py [--rounds 5] [--suite samples/suites/smoke.toml ...]
"""
from __future__ import annotations

import argparse
import os
import resource
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


def timed(command: list[str], cluster: list[subprocess.Popen]) -> tuple[float, float, dict[str, float]]:
    """Seconds ``command`` took, the CPU seconds it, its processes and the ``cluster``'s took, and
    those CPU seconds by whose they were (the harness and its children; the scheduler; the workers'
    Dask processes; their lanes' processes)."""
    before, began = _cpu(cluster), time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    after = _cpu(cluster)
    used = {kind: after[kind] - before.get(kind, 0.0) for kind in after}
    return seconds, sum(used.values()), used


def _cpu(cluster: list[subprocess.Popen]) -> dict[str, float]:
    """CPU seconds of this process's children ended so far (the harness runs and theirs) and of the
    cluster's processes (scheduler first, then workers) and their descendants, by kind."""
    import psutil  # dask distributed's own dependency

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    totals = {"harness": used.ru_utime + used.ru_stime}
    for index, process in enumerate(cluster):
        root = psutil.Process(process.pid)
        for each in (root, *root.children(recursive=True)):
            kind = "scheduler" if index == 0 else "Dask workers" if each is root else "lanes"
            try:
                times = each.cpu_times()
            except psutil.Error:  # ended since it was listed
                continue
            totals[kind] = totals.get(kind, 0.0) + times.user + times.system + times.children_user \
                + times.children_system
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--suite", type=Path, action="append",
                        help="a suite to run (repeatable; default: samples/suites/smoke.toml and full.toml)")
    args = parser.parse_args()
    suites = args.suite or [ROOT / "samples" / "suites" / name for name in ("smoke.toml", "full.toml")]
    # irtool's bytecode, as an installed wheel has it: where PYTHONDONTWRITEBYTECODE is set, each
    # process would compile the modules changed since, and the cluster's are imported by one side only
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "irtool")], check=True)
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "scheduler.json"
        processes = [started([*IRTOOL, "scheduler", "--port", "0", "--scheduler-file", str(file)], 1)]
        try:
            processes += [started([*IRTOOL, "worker", "--scheduler-file", str(file), "--name", name,
                                  "--devices", "CPU,AUTO:CPU", "--precisions", "f32"], 2) for name in ("w1", "w2")]
            for suite in suites:
                compare(suite, args.rounds, folder, file, processes)
        finally:
            for process in reversed(processes):
                process.kill()
                process.wait()


def compare(suite: Path, rounds: int, folder: str, file: Path, processes: list[subprocess.Popen]) -> None:
    """Interleaved rounds of ``suite`` with -j 2 and on the cluster; the medians and the overhead."""
    run = [*IRTOOL, "harness", str(suite), "-d", "CPU,AUTO:CPU", "--precision", "f32", "--force", "--no-progress",
           "--report-dir"]
    local, cluster = [], []
    for round_ in range(rounds + 1):
        local.append(timed([*run, f"{folder}/local", "-j", "2"], []))
        cluster.append(timed([*run, f"{folder}/cluster", "--scheduler-file", str(file)], processes))
        split = ", ".join(f"{kind} {seconds:.1f}" for kind, seconds in cluster[-1][2].items())
        print(f"{suite.name} round {round_}: -j 2 {local[-1][0]:.2f} s ({local[-1][1]:.1f} CPU-s), "
              f"--cluster {cluster[-1][0]:.2f} s ({cluster[-1][1]:.1f} CPU-s: {split})", flush=True)
    print(f"{suite.name}: first round (a new pool's workers start): -j 2 {local[0][0]:.2f} s, "
          f"--cluster {cluster[0][0]:.2f} s")
    local, cluster = local[1:] or local, cluster[1:] or cluster
    for index, what in ((0, "wall"), (1, "CPU")):
        a, b = (statistics.median(side[index] for side in sides) for sides in (local, cluster))
        paired = statistics.median(c[index] / l[index] - 1 for l, c in zip(local, cluster))
        print(f"{suite.name}: {what}, median of {len(local)}: -j 2 {a:.2f} s, --cluster {b:.2f} s: "
              f"overhead {(b - a) / a:+.1%} (median of the rounds' own: {paired:+.1%})", flush=True)


if __name__ == "__main__":
    main()
