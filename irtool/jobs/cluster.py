"""A harness run across machines on Dask distributed: the scheduler and the worker's side.

``irtool scheduler`` (:func:`serve_scheduler`) is a Dask scheduler with irtool's settings: a
worker silent for ``worker_ttl`` seconds is dropped, a task whose workers died
``allowed_failures`` times is given up.  ``irtool worker`` (:func:`offer`, then
:func:`serve_worker`) joins it and offers what this machine runs: each device at each
precision it computes under each OpenVINO release asked for (environments made as
``irtool harness --openvino`` makes them), as one Dask resource per triple (:func:`resource`,
carrying irtool's version, so that no task of one irtool lands on a worker of another), running ``lanes`` jobs
at a time in all (a Dask thread each, each with its own isolated process, and a thread more whose
task waits, set up, for the next lane that frees: :data:`WAITING`); and
publishes what it is (its name, irtool and OpenVINO versions, device report) for the harness
(:mod:`irtool.harness.cluster`) to read.  Each task the harness sends is
:func:`irtool.jobs.cluster_task.run_group`.

Dask runs whatever code any client that reaches the scheduler sends: a scheduler belongs on a
trusted network, or behind ``tls://`` (docs/cluster.md).  distributed is imported here only,
when a cluster command runs (the ``cluster`` extra).
"""
from __future__ import annotations

import asyncio
import functools
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import irtool
from irtool.core.errors import IrtoolError
from irtool.jobs.environments import CURRENT  # a job without a release axis runs under the worker's own openvino

EXTRA = "pip install 'irtool[cluster]'"
PLUGIN = "irtool"  # the worker plugin that holds what the worker published
WORKER_TTL = 60.0  # seconds: a worker silent this long (frozen, its network gone) is dropped
ALLOWED_FAILURES = 3  # deaths of the workers running one task before it is given up
CONNECT_TIMEOUT = 30.0  # seconds to reach a scheduler
DEATH_TIMEOUT = 60.0  # seconds a worker waits for its scheduler (at start, or once lost) before it ends
# Tasks a worker runs beside its lanes' (a Dask thread, and a unit of each resource, more than its lanes): the
# task's files unpacked and jobs read while the lanes work, it takes the first lane that frees
# (irtool.jobs.cluster_task._turns).  A lane then goes from task to task in a few milliseconds, not in the
# 50 to 90 that a task's end and the next one's start took on a busy machine (the event loops of the worker
# and the scheduler, and the worker's thread waiting for the GIL meanwhile).
WAITING = 1


class ClusterError(IrtoolError):
    """A cluster that cannot be used: distributed missing, a scheduler out of reach, a worker that cannot offer."""


def distributed() -> Any:
    """The distributed package, set as irtool uses it (:func:`_quieted`), or ClusterError naming the
    extra that installs it."""
    try:
        import distributed as module
    except ImportError:
        raise ClusterError(f"the cluster needs dask distributed, which is not installed here: {EXTRA}") from None
    _quieted()
    return module


@functools.cache
def _quieted() -> None:
    """Dask set, once per process, to take as little CPU as irtool's use allows: the jobs run in the
    lanes' own processes, often on the same cores.  Dask's sampling profiler (every 10 ms) profiles
    nothing of theirs; its event-loop health check (every 20 ms) and system monitor (every 0.5 s)
    only feed warnings and a dashboard irtool does not open.  Idle, a scheduler and two workers
    took 0.09 s of CPU a second with Dask's settings, 0.03 s with these."""
    import dask

    dask.config.set({"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s",
                     "distributed.admin.system-monitor.interval": "2s"})


def scheduler_address(address: str | None, scheduler_file: str | Path | None) -> str:
    """The scheduler's address: ``address``, or the one ``scheduler_file`` names (Dask's scheduler file,
    written by irtool scheduler or dask scheduler); ClusterError for a file that names none, or for
    both or neither given."""
    if (address is None) == (scheduler_file is None):
        raise ClusterError("name the scheduler once: its ADDRESS (--cluster for harness) or --scheduler-file FILE")
    if address is not None:
        return address
    from irtool.core.documents import load_json
    from irtool.core.files import read_bytes

    try:
        named = load_json(read_bytes(Path(str(scheduler_file)), "scheduler file")).get("address")
    except (IrtoolError, ValueError, AttributeError) as error:
        raise ClusterError(getattr(error, "message", None) or f"--scheduler-file {scheduler_file}: {error}") from None
    if not isinstance(named, str):
        raise ClusterError(f"--scheduler-file {scheduler_file}: names no scheduler address")
    return named


def resource(device: str, precision: str, release: str | None = None) -> str:
    """The Dask resource of one device at one precision under one release, for this irtool version."""
    return f"irtool {irtool.__version__}|{device}|{precision}|{release or CURRENT}"


def offered(name: str) -> tuple[str, str, str, str] | None:
    """(irtool version, device, precision, release) of a resource :func:`resource` made, else None."""
    head, *rest = name.split("|")
    if not head.startswith("irtool ") or len(rest) != 3:
        return None
    return (head.removeprefix("irtool "), *rest)  # type: ignore[return-value]


@dataclass
class WorkerPlan:
    """What a worker offers (resource -> lanes) and publishes (``info``: with ``releases``, label ->
    what each release's environment is, its Python included, which the worker's tasks run jobs in)."""

    name: str
    lanes: int
    resources: dict[str, float]
    info: dict[str, Any]

    @property
    def pairs(self) -> list[str]:
        """``CPU f32`` of each device and precision offered under the worker's own openvino, and
        ``CPU f32 on openvino 2025.4.1`` under each other release, in order."""
        own = {label for label, env in self.info["releases"].items() if env["release"] == CURRENT}
        return [f"{found[1]} {found[2]}" + ("" if found[3] == CURRENT else f" on openvino {found[3]}")
                for found in map(offered, self.resources) if found and found[3] not in own]


def offer(name: str | None = None, lanes: int = 1, devices: Sequence[str] | None = None,
          precisions: Sequence[str] | None = None, releases: Sequence[str] | None = None,
          cache: str | Path | None = None, log: Callable[[str], None] | None = None) -> WorkerPlan:
    """What this machine offers: each device OpenVINO sees here (and AUTO and HETERO over each),
    or those of ``devices``, at each of ``precisions`` (default: all irtool knows) the device
    computes, under each of ``releases`` (:func:`irtool.jobs.environments.parse_releases`; default:
    the openvino installed here), each release made and cached as ``irtool harness --openvino``
    makes it (in ``cache``) and asked what it runs.  The worker's own openvino is offered as the
    release of jobs without one (``current``) and under its version, so a harness ``--openvino
    2026.4.1`` finds it too.  ClusterError for a device, precision or release asked for that
    cannot run here, or nothing to offer."""
    from irtool.core.precisions import PRECISION_CHOICES
    from irtool.jobs.environments import device_report, environments
    from irtool.runtime.devices import check_device, list_devices, report_to_json, skip_reason

    if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 1:
        raise ClusterError(f"--lanes {lanes}: expected at least 1")
    report = list_devices()
    asked = devices is not None
    for device in devices if asked else ():
        check_device(device, report)
    for precision in precisions or ():
        if precision not in PRECISION_CHOICES:
            raise ClusterError(f"--precisions {precision}: expected some of {', '.join(PRECISION_CHOICES)}")
    made = environments(list(releases or [CURRENT]), cache, log)
    resources: dict[str, float] = {}
    reasons: dict[str, list[str]] = {}  # device -> why it runs no precision asked, under each release
    for label, env in made.items():
        if not env.usable:
            raise ClusterError(f"--openvino {env.release}: cannot run here: {env.problem}")
        seen, problem = (report, None) if env.release == CURRENT else device_report(env)
        if seen is None:
            raise ClusterError(f"--openvino {env.release}: cannot run here: {problem}")
        names = list(devices) if asked else [f"{kind}{device}" for device in seen.names
                                              for kind in ("", "AUTO:", "HETERO:")]
        for device in names:
            said = [skip_reason(device, precision, seen) for precision in precisions or PRECISION_CHOICES]
            reasons.setdefault(device, []).append(next((reason for reason in said if reason), ""))
            for precision, reason in zip(precisions or PRECISION_CHOICES, said):
                if reason is None:
                    resources.update({resource(device, precision, release): float(lanes) for release in
                                      ([CURRENT, label] if env.release == CURRENT else [label])})
    for device in devices if asked else ():
        if not any(offered(name)[1] == device for name in resources):  # type: ignore[index]
            raise ClusterError(f"--devices {device}: cannot run here: {reasons[device][0]}")
    if not resources:
        raise ClusterError("this worker has nothing to offer: no device here runs any precision asked for")
    name = name or socket.gethostname()
    info = {"name": name, "irtool": irtool.__version__, "openvino": report.openvino, "host": socket.gethostname(),
            "lanes": lanes, "devices": report_to_json(report),
            "releases": {label: {"release": env.release, "openvino_version": env.openvino_version,
                                 "distribution": env.distribution, "python": env.python}
                         for label, env in made.items()}}
    return WorkerPlan(name, lanes, resources, info)


def _published(plan: WorkerPlan) -> Any:
    """A worker plugin holding what the worker publishes: read by the harness through Client.run."""
    from distributed import WorkerPlugin

    class Published(WorkerPlugin):
        name = PLUGIN

        def __init__(self, info: dict[str, Any]):
            self.info = info

    return Published(dict(plan.info))


def published(dask_worker: Any) -> dict[str, Any] | None:
    """What a worker published (run on each worker by the harness), None for a worker that is not irtool's."""
    plugin = dask_worker.plugins.get(PLUGIN)
    return getattr(plugin, "info", None)


def serve_worker(address: str, plan: WorkerPlan, joined: Callable[[str], None] | None = None) -> None:
    """Join the scheduler at ``address`` and work until the scheduler (for DEATH_TIMEOUT) or this
    process ends; ``joined`` is told the scheduler's address once joined."""
    dask = distributed()

    async def work() -> None:
        try:
            worker = await dask.Worker(address, name=plan.name, nthreads=plan.lanes + WAITING,
                                       death_timeout=DEATH_TIMEOUT, plugins=[_published(plan)],
                                       resources={name: lanes + WAITING for name, lanes in plan.resources.items()},
                                       dashboard=False, dashboard_address="127.0.0.1:0", memory_limit=0)
        except (OSError, TimeoutError) as error:
            raise ClusterError(f"cannot join the scheduler at {address}: {error}") from None
        if joined:
            joined(worker.scheduler.address)
        await worker.finished()

    asyncio.run(work())


def serve_scheduler(host: str, port: int, scheduler_file: str | None = None, worker_ttl: float = WORKER_TTL,
                    allowed_failures: int = ALLOWED_FAILURES, ready: Callable[[str], None] | None = None) -> None:
    """A Dask scheduler with irtool's settings, until this process ends; ``ready`` is told its address."""
    dask = distributed()

    async def schedule() -> None:
        try:
            scheduler = await dask.Scheduler(host=host, port=port, scheduler_file=scheduler_file, dashboard=False,
                                             dashboard_address=f"{host}:0", worker_ttl=f"{worker_ttl}s",
                                             allowed_failures=allowed_failures)
        except OSError as error:
            raise ClusterError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
        if ready:
            ready(scheduler.address)
        await scheduler.finished()

    asyncio.run(schedule())
