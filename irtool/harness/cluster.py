"""``irtool harness --cluster ADDRESS``: a run's jobs placed on the workers of a Dask scheduler.

:class:`Cluster` stands where the session's pool stands (:meth:`Cluster.run` takes jobs and
calls back with each result).  It talks to the scheduler through a client in a process of its
own (:mod:`irtool.jobs.cluster_client`), so this process never imports dask.  Before the run
it looks at the workers connected (:mod:`irtool.jobs.cluster`: what each offers and
published): a worker of another irtool version is refused by name (its resources name its
version, so no task reaches it), and a job that no worker offers is a skip naming the workers
looked at (:meth:`Cluster.skip_reason`).

Jobs go out in Dask tasks (:func:`irtool.jobs.cluster_task.run_group`) of whole groups of jobs
that share a compiled model, a few tasks per lane (:func:`_task_jobs`), in the run's order
whatever their device (:func:`_next_resource`), placed by their resource (device, precision,
release), at most as many at a time per resource as the workers offer lanes of it and one more
each (a worker runs a task beside its lanes', set up and waiting for the next lane that frees),
and in all at most one more per worker than the workers have lanes (a task held on a worker that
dies is charged for its death). Results are recorded as each task ends, each job once, its
reproducers unpacked into the report dir, and the task released. A worker lost mid-run (killed,
frozen, its network gone: the scheduler drops it after its worker-ttl) takes its tasks with it;
Dask runs them on another worker that offers their resource. When none has offered a resource
for ``lost_after`` seconds, its jobs are given up as lost (:attr:`Cluster.lost`: job name and
why): the run is partial, and ``--resume`` runs them, on whichever workers have joined since.
The scheduler lost ends the run at once, every job without a result lost.

With ``--openvino``, the releases are the workers' (``irtool worker --openvino``): each job goes
to a worker that offers its release (:meth:`Cluster.releases` says what the workers published of
each).  The files a job names (a ``[[models]]`` case's model, its weights and .npz files) go
with its task (:mod:`irtool.jobs.cluster_files`): the workers need not share this machine's disk.
"""
from __future__ import annotations

import itertools
import time
from collections import Counter, deque
from pathlib import Path
from typing import Any, Callable, Sequence

import irtool
from irtool.jobs.cluster import WAITING, offered, resource, scheduler_address
from irtool.jobs.cluster_client import POLL, connect
from irtool.jobs.cluster_files import MAX_BYTES, files_size, pack, too_big
from irtool.jobs.cluster_task import results_of, unpack
from irtool.jobs.environments import CURRENT, Environment, ensure, release_order
from irtool.jobs.pool import groups_of
from irtool.jobs.records import CaseResult, Job, RecordError, result_from_json
from irtool.jobs.worker import RunnerOptions

CHUNKS_PER_LANE = 2  # a resource's jobs go out in at least this many tasks per lane offering it (_task_jobs)
MAX_TASK_JOBS = 32  # jobs of one task at most: its results come back when all of them end (_task_jobs)


class Cluster:
    """The workers of one scheduler, for one run: ``run`` places jobs, ``lost`` says what was given up."""

    def __init__(self, address: str | None, scheduler_file: Path | None, options: RunnerOptions, timeout: float,
                 report_dir: Path, fault: str | None, lost_after: float):
        self.client = connect(scheduler_address(address, scheduler_file))
        self.options = {key: value for key, value in options.to_json().items() if key != "report_dir"}
        self.timeout, self.report_dir, self.fault, self.lost_after = timeout, report_dir, fault, lost_after
        self.lost: list[tuple[str, str]] = []  # (job name, why) of each job given up
        self.openvino_versions: list[str] = []  # of the workers accepted, each once
        self.notes: list[str] = []
        self._last: dict[str, list[str]] = {}  # resource -> the workers that offered it when last seen
        workers = self.client.workers
        self.looked = sorted(_name(workers.get(address, {}), address) for address in self.client.published)
        self.offers: set[str] = set()  # the resources of the workers accepted
        self.published: dict[str, dict] = {}  # release label -> what the first worker offering it published of it
        for address, info in self.client.published.items():
            name = _name(workers.get(address, {}), address)
            if not isinstance(info, dict):
                self.notes.append(f"cluster: worker {name} refused: it is not an irtool worker (irtool worker ADDRESS)")
            elif info.get("irtool") != irtool.__version__:
                self.notes.append(f"cluster: worker {name} refused: it runs irtool {info.get('irtool')}, "
                                  f"this harness irtool {irtool.__version__}")
            else:
                self.offers.update(workers.get(address, {}).get("resources", {}))
                if info.get("openvino") and info["openvino"] not in self.openvino_versions:
                    self.openvino_versions.append(str(info["openvino"]))
                for label, release in (info.get("releases") or {}).items():
                    self.published.setdefault(label, release)

    def releases(self, asked: Sequence[str], cache: Path | None = None, log: Any = None) -> dict[str, Environment]:
        """Label -> the release of each of ``asked`` (``--openvino``: versions, and ``current``, this
        machine's openvino) as the workers published it (its exact version), or with why none runs it;
        what :func:`irtool.jobs.environments.environments` gives a run on one machine, made by the
        workers (``cache`` and ``log`` are theirs).  A wheel or an environment is a worker's own
        (HarnessOptions refuses them here): the worker names it, the harness asks for its version."""
        found: dict[str, Environment] = {}
        for release in asked:
            label = ensure(CURRENT, Path()).label if release == CURRENT else release
            said = self.published.get(label)
            found[label] = Environment(release, "", said.get("openvino_version"), distribution=label) if said else \
                Environment(release, "", problem=f"no worker of the cluster offers it (looked at: "
                                                 f"{', '.join(self.looked) or 'none connected'})")
        return dict(sorted(found.items(), key=lambda item: release_order(item[0])))

    def skip_reason(self, job: Job) -> str | None:
        """Why no worker of the cluster runs ``job`` (decided before the run), or None."""
        if resource(job.device, job.precision, job.openvino) not in self.offers:
            looked = ", ".join(self.looked) or "none connected"
            return (f"no worker of the cluster offers {job.device} at {job.precision}"
                    + (f" under openvino {job.openvino}" if job.openvino else "") + f" (looked at: {looked})")
        return too_big(job.case)

    def run(self, jobs: Sequence[Job], on_result: Callable[[CaseResult], None]) -> None:
        """Run ``jobs`` on the workers, ``on_result`` told each result as its task ends."""
        waiting: dict[str, deque] = {}
        position: dict[str, int] = {}  # a group's first job -> the group's place in the run's order
        for group in groups_of(jobs):
            first = group[0]
            position[first.key] = len(position)
            waiting.setdefault(resource(first.device, first.precision, first.openvino), deque()).append(group)
        running: dict[int, tuple[str, list[Job], dict[str, str]]] = {}  # task -> (resource, jobs, their folders)
        missing_since: dict[str, float] = {}
        recorded: set = set()
        tasks = itertools.count()
        try:
            while any(waiting.values()) or running:
                lanes, room, slots = self._lanes()
                now = time.monotonic()
                for name in waiting:
                    if lanes.get(name):
                        missing_since.pop(name, None)
                    else:
                        missing_since.setdefault(name, now)
                busy = Counter(held for held, *_ in running.values())
                while len(running) < slots and (name := _next_resource(waiting, position, busy, room)) is not None:
                    group = _task_jobs(waiting[name], lanes[name])
                    shipment = pack(group)
                    task = next(tasks)
                    self.client.submit(task, name, (shipment.jobs, shipment.files, self.options, self.timeout,
                                                    self.fault))
                    running[task] = (name, group, shipment.folders)
                    busy[name] += 1
                for name, since in missing_since.items():
                    if now - since >= self.lost_after:
                        self._give_up(name, waiting, running)
                for end in self.client.events(POLL):
                    if end[0] in ("lost", "cancelled"):  # the scheduler is gone: what has no result is lost
                        raise _SchedulerLost(end[-1])
                    if end[1] in running:
                        _, group, folders = running.pop(end[1])
                        self._collect(end, group, folders, on_result, recorded)
        except _SchedulerLost as error:
            why = f"the scheduler was lost mid-run ({error})"
            groups = [group for queue in waiting.values() for group in queue] + [g for _, g, _ in running.values()]
            self.lost += [(job.name, why) for group in groups for job in group]
            running.clear()
        finally:
            for task in running:
                self.client.cancel(task)

    def _lanes(self) -> tuple[dict[str, float], dict[str, float], int]:
        """Resource -> lanes the connected workers offer of it now (the client process's last view,
        sent every POLL); resource -> tasks of it they may hold (a unit of the resource each: their
        lanes and WAITING each); and the tasks to hold at most in all (their Dask threads: lanes and
        WAITING each; a task held on a worker that dies is charged for its death).  Who offers a
        resource is kept for _give_up."""
        lanes: dict[str, float] = {}
        room: dict[str, float] = {}
        offering: dict[str, list[str]] = {}
        slots = 0
        for address, worker in self.client.workers.items():
            resources = worker.get("resources") or {}
            ours = [name for name in resources if name in self.offers]
            for name in ours:
                room[name] = room.get(name, 0) + resources[name]
                lanes[name] = lanes.get(name, 0) + max(resources[name] - WAITING, 1)
                offering.setdefault(name, []).append(_name(worker, address))
            slots += int(worker.get("nthreads") or 1) if ours else 0
        self._last.update(offering)
        return lanes, room, slots

    def _give_up(self, name: str, waiting: dict[str, deque], running: dict[int, tuple]) -> None:
        """Every job of resource ``name``, waiting or running: lost, with why."""
        _, device, precision, release = offered(name) or ("", "?", "?", CURRENT)
        who = ", ".join(self._last.get(name, [])) or "none"
        why = (f"no worker has offered {device} at {precision}"
               + (f" under openvino {release}" if release != CURRENT else "")
               + f" for {self.lost_after:g} s (it was offered by: {who})")
        groups = list(waiting[name])
        waiting[name].clear()
        for task, (held, group, _) in list(running.items()):
            if held == name:
                self.client.cancel(task)
                del running[task]
                groups.append(group)
        self.lost += [(job.name, why) for group in groups for job in group]

    def _collect(self, end: tuple, group: list[Job], folders: dict[str, str], on_result: Callable[[CaseResult], None],
                 recorded: set) -> None:
        """A task's results recorded (each job once, the worker's paths of its files said as this machine's)
        and what it wrote (reproducers, kept outputs) unpacked; or its jobs lost, with why."""
        if end[0] == "failed":  # KilledWorker: its workers died allowed-failures times; or a task that failed
            kind, message = end[2:]
            why = "its workers died while running it, too many times" if kind == "KilledWorker" \
                else f"its task failed: {kind}: {message}"
            self.lost += [(job.name, why) for job in group]
            return
        answer = end[2]
        try:
            results = [result_from_json(data) for data in results_of(answer, folders)]
        except RecordError as error:  # not what an irtool worker sends
            self.lost += [(job.name, f"the worker's answer cannot be read: {error}") for job in group]
            return
        try:
            unpack(answer["written"], self.report_dir)
            unwritten = None
        except OSError as error:  # a full disk: the verdicts stand, what was not written is said to be missing
            unwritten = f"its reproducer or kept outputs, sent back by the worker: {error.strerror or error}"
        keys = {job.key for job in group}
        for result in results:
            if unwritten and (result.reproducer or self.options.get("keep_outputs")):
                result.reproducer, result.unwritten = None, unwritten
            if result.job_key in keys and result.job_key not in recorded:
                on_result(result)
        recorded |= keys

    def close(self) -> None:
        self.client.close()


class _SchedulerLost(Exception):
    """The client process lost the scheduler (or ended): the run's jobs without a result are lost."""


def _next_resource(waiting: dict[str, deque], position: dict[str, int], busy: Counter,
                   room: dict[str, float]) -> str | None:
    """The resource whose task goes out next: of those with groups ``waiting`` and room on the workers
    (fewer tasks ``busy`` than their ``room``), the one whose next group comes first in the run's
    order (``position``, by a group's first job); None if none.  Each device's jobs then go out as
    the run orders them, none waiting for another device's to end, and the lanes run jobs of
    different devices side by side as ``-j 2``'s do: two lanes compiling for CPU at once took 12-30%
    longer a job than a CPU and an AUTO:CPU compile side by side (full.toml, 2 cores)."""
    ready = [name for name, queue in waiting.items() if queue and busy[name] < room.get(name, 0)]
    return min(ready, key=lambda name: position[waiting[name][0][0].key], default=None)


def _task_jobs(queue: deque, lanes: float) -> list[Job]:
    """The jobs of the next task of a resource: whole groups from the front of its ``queue``, as
    many as make it one of CHUNKS_PER_LANE tasks per lane of what is left (at most MAX_TASK_JOBS,
    and files of at most MAX_BYTES unless one group has more).  A task costs tens of ms of the
    workers' and scheduler's CPU: a task per job of a few ms slowed a run by a tenth, and tasks of
    32 jobs at most took the scheduler and the workers a fifth less CPU than tasks of 16 (full.toml)."""
    budget = min(MAX_TASK_JOBS, max(1, -(-sum(map(len, queue)) // int(lanes * CHUNKS_PER_LANE))))
    jobs: list[Job] = []
    size = 0
    while queue and len(jobs) < budget:
        more = files_size(queue[0])
        if jobs and size + more > MAX_BYTES:
            break
        jobs += queue.popleft()
        size += more
    return jobs


def _name(worker: dict, address: str) -> str:
    """A worker as the run's notes and skips name it: its name (irtool worker --name), else its address."""
    return str(worker.get("name", address))
