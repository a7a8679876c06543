"""``irtool harness --reduce-failures``: reduce each failure of a run, within a time budget each."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from irtool.core.errors import IrtoolError
from irtool.jobs.records import Job
from irtool.jobs.worker import reproducer_name
from irtool.judge.compare import TolerancePolicy
from irtool.reduce.origin import Origin
from irtool.reduce.reducer import ReduceOptions, reduce_case


@dataclass(frozen=True)
class Reduced:
    job: str  # the job's name
    folder: Path | None  # the reduced reproducer; None when none was written
    summary: str  # the reduced sizes and how far it got, or why it was not reduced


def reduce_failures(jobs: Sequence[Job], folder: Path, *, config: Mapping[str, str], tolerance: TolerancePolicy,
                    timeout: float, budget: float, env: dict[str, str] | None = None,
                    pythons: Mapping[str | None, str] | None = None) -> tuple[list[Reduced], bool]:
    """Reduce each job into FOLDER/<its reproducer name>/; returns what each gave and whether the
    user interrupted (the reductions not started then are left out).  ``pythons``: the
    interpreter of each OpenVINO release (``Job.openvino``) of a run of several."""
    reduced = []
    for job in jobs:
        out_dir = folder / reproducer_name(job)
        options = ReduceOptions(device=job.device, out_dir=out_dir, precision=job.precision, config=config,
                                tolerance=tolerance, timeout=timeout, budget=budget, env=env,
                                python=(pythons or {}).get(job.openvino))
        try:
            outcome = reduce_case(Origin(job.case), options)
        except IrtoolError as error:
            reduced.append(Reduced(job.name, None, f"not reduced: {error.message}"))
            continue
        except KeyboardInterrupt:
            return reduced, True
        stopped = {"budget": " (budget used up)", "interrupted": " (interrupted)"}.get(outcome.stopped, "")
        reduced.append(Reduced(job.name, outcome.reproducer, f"{outcome.final}, {len(outcome.steps)} steps{stopped}"))
        if outcome.interrupted:
            return reduced, True
    return reduced, False
