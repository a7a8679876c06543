"""The harness's overhead per case, against running the same cases in a plain loop with openvino.

Both sides run the smoke suite's jobs (cases x devices x precisions) with one process
doing the work (``-j 1``), each timed as a whole fresh process, so start-up counts on
both sides:

  (a) ``irtool harness SUITE -d DEVICES --precision LIST -j 1``: parent + one worker;
      builds, compiles (with an explicit INFERENCE_PRECISION_HINT), infers, runs the
      numpy reference, compares, stores each result in results.jsonl, writes the reports.
  (b) a plain loop: ``python -c`` that imports openvino and numpy and, for each job, reads
      the case's IR, compiles it with the same hint and infers on the same inputs (the IRs
      and inputs are written beforehand, outside the timing).  It checks nothing.

Rounds are interleaved (the machines have 2 cores and other work on them); the script
prints each side's median over rounds and the overhead (a - b) / b, in all and per job.

    python benchmarks/bench_harness.py [--rounds 5] [--suite samples/suites/smoke.toml]
        [-d CPU,AUTO:CPU,HETERO:CPU] [--precision f32,bf16]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PLAIN_LOOP = r"""
import json, sys
import numpy as np
import openvino as ov
core = ov.Core()
for job in json.load(open(sys.argv[1])):
    model = core.read_model(job["xml"])
    compiled = core.compile_model(model, job["device"], {"INFERENCE_PRECISION_HINT": job["precision"]})
    with np.load(job["inputs"]) as data:
        feed = [data[name] for name in data.files]
    request = compiled.create_infer_request()
    request.infer(feed)
    outputs = [request.get_output_tensor(i).data.copy() for i in range(len(compiled.outputs))]
"""


def prepare(suite: Path, devices: list[str], precisions: list[str], folder: Path) -> tuple[Path, int]:
    """Write each case's IR and inputs; return the plain loop's job list and the job count."""
    import numpy as np

    from irtool.harness.matrix import make_jobs
    from irtool.jobs.suite import load_suite
    from irtool.jobs.worker import Runner
    from irtool.pipeline.build import save_model
    from irtool.pipeline.inputs import case_inputs

    cases = load_suite(suite).cases
    runner = Runner()
    written = {}
    for index, case in enumerate(cases):
        prepared = runner.prepare(case)
        xml = Path(case.file) if case.file else save_model(prepared.model, folder / f"case{index}.xml")[0]
        inputs, _, _ = case_inputs(prepared, seed=case.seed, sizes=case.sizes)
        np.savez(folder / f"case{index}.npz", **inputs)  # model input order, as the loop feeds them
        written[case.id] = (str(xml), str(folder / f"case{index}.npz"))
    jobs = [{"xml": written[job.case.id][0], "inputs": written[job.case.id][1], "device": job.device,
             "precision": job.precision} for job in make_jobs(cases, devices, precisions)]
    path = folder / "jobs.json"
    path.write_text(json.dumps(jobs))
    return path, len(jobs)


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--suite", type=Path, default=ROOT / "samples" / "suites" / "smoke.toml")
    parser.add_argument("-d", "--device", default="CPU,AUTO:CPU,HETERO:CPU")
    parser.add_argument("--precision", default="f32,bf16")
    args = parser.parse_args()
    devices, precisions = args.device.split(","), args.precision.split(",")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        jobs_file, count = prepare(args.suite, devices, precisions, folder)
        harness = [sys.executable, "-m", "irtool", "harness", str(args.suite), "-d", args.device, "--precision",
                   args.precision, "-j", "1", "--report-dir", str(folder / "report"), "--no-progress", "--force"]
        plain = [sys.executable, "-c", PLAIN_LOOP, str(jobs_file)]
        times: dict[str, list[float]] = {"harness": [], "plain": []}
        for round_ in range(args.rounds):
            times["plain"].append(timed(plain))
            times["harness"].append(timed(harness))
            print(f"round {round_ + 1}: plain {times['plain'][-1]:.2f} s, harness {times['harness'][-1]:.2f} s",
                  file=sys.stderr)
    a, b = statistics.median(times["harness"]), statistics.median(times["plain"])
    print(f"suite {args.suite.name}: {count} jobs on {args.device} at {args.precision}, -j 1, {args.rounds} rounds")
    print(f"{'':<28}{'median s':>10}{'per job ms':>12}")
    print(f"{'plain openvino loop':<28}{b:>10.2f}{1000 * b / count:>12.1f}")
    print(f"{'irtool harness':<28}{a:>10.2f}{1000 * a / count:>12.1f}")
    print(f"overhead: {100 * (a - b) / b:+.1f}% ({1000 * (a - b) / count:+.1f} ms per job)")


if __name__ == "__main__":
    main()
