"""The task a harness sends to an ``irtool worker``: some groups of jobs, run in irtool's own pool.

:func:`run_group` runs on a Dask worker's thread (one per lane, and one more: the task the
worker holds beside its lanes' unpacks its files and reads its jobs, then waits for the first
lane that frees, :func:`_turns`, so that a lane goes from task to task without waiting for the
worker's and the scheduler's event loops).  Each lane keeps a
:class:`irtool.jobs.pool.Pool` of one isolated worker process between tasks (a process costs
about a second to start; the worker keeps at most one idle per lane, the last used, whatever
the harnesses' options), so a job that segfaults or hangs is one ``crash`` or ``timeout``
result, as in ``irtool harness``, and the Dask worker goes on.  The pool writes reproducers
into the lane's own folder; the task sends them back packed (tar), with the results, each
result naming the worker that ran it (``host``); the harness unpacks them into its report
dir (:func:`unpack`).  A job of a release (``--openvino``) runs in that release's environment,
made when the worker started (:func:`irtool.jobs.cluster.offer`); the files the jobs name come
with the task and are unpacked into a folder of the task's own (:mod:`irtool.jobs.cluster_files`).
The lane's folder and the task's are in memory where the worker has room (:func:`_scratch`).
"""
from __future__ import annotations

import atexit
import io
import os
import shutil
import tarfile
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from irtool.core.documents import load_json
from irtool.core.jsonable import json_text
from irtool.jobs import faults
from irtool.jobs.cluster import published
from irtool.jobs.cluster_files import GZIP_LEVEL, extract, land, unland
from irtool.jobs.kept import KEPT
from irtool.jobs.pool import Pool
from irtool.jobs.records import CaseResult, RecordError, result_to_json
from irtool.jobs.worker import REPRODUCERS, RunnerOptions, job_from_json

SENT_BACK = (REPRODUCERS, KEPT)  # the folders of the lane's report dir a task sends back
MEMORY = Path("/dev/shm")  # Linux's folder in memory
MEMORY_FREE = 1 << 30  # bytes it must have free to hold a task's files and what its jobs write (_scratch)


@dataclass
class _Lane:
    key: tuple
    pool: Pool
    folder: str  # its report dir: reproducers go to FOLDER/reproducers/


_free: list[_Lane] = []  # the lanes no task is using, kept for the next task
_lock = threading.Lock()
_lanes: list[threading.Semaphore] = []  # the worker's lanes (_turns), made by its first task


def _take(key: tuple, options: Mapping[str, Any], timeout: float, fault: str | None, python: str | None) -> _Lane:
    with _lock:
        for index, lane in enumerate(_free):
            if lane.key == key:
                lane.pool.timeout = timeout  # per job, read as each starts: the suites of one lab differ in it
                return _free.pop(index)
    folder = tempfile.mkdtemp(prefix="irtool-lane-", dir=_scratch())
    atexit.register(shutil.rmtree, folder, True)  # when the worker ends (a killed one leaves it, and its last task's)
    env = None if fault is None else {**os.environ, faults.ENV: fault}
    pool = Pool(1, timeout, RunnerOptions.from_json({**options, "report_dir": folder}), env, python)
    pool.__enter__()  # keeps its worker process between tasks
    return _Lane(key, pool, folder)


def _scratch() -> str | None:
    """Where a task's files and what its jobs write go for the moment they live: memory (MEMORY),
    where it has MEMORY_FREE bytes free, else the temp folder (None).  A file costs a disk about a
    millisecond of CPU to write and remove (a run's 1,064 reproducer files: 1.3-1.6 s on a
    disk, 0.12 s in memory), which a cluster pays twice (the lane's folder, then the harness's
    report dir) where a run on one machine pays it once."""
    try:
        free = os.statvfs(MEMORY)
    except OSError:  # not Linux
        return None
    return str(MEMORY) if free.f_bavail * free.f_frsize >= MEMORY_FREE and os.access(MEMORY, os.W_OK) else None


def _drop(lane: _Lane) -> None:
    lane.pool.close()
    shutil.rmtree(lane.folder, ignore_errors=True)


def run_group(jobs: Sequence[Mapping[str, Any]], files: bytes, options: Mapping[str, Any], timeout: float,
              fault: str | None) -> dict[str, Any]:
    """Run ``jobs`` (a :class:`irtool.jobs.cluster_files.Shipment`'s, with its ``files``) with the
    harness's runner ``options`` and ``timeout`` per job (``fault``: its IRTOOL_FAULT, for tests),
    under their release's openvino; their results (each with ``host``), what they wrote into the
    report dir (a tar of its reproducers/ and kept/: :func:`_pack`) and the folder the files were
    unpacked in.  The files are unpacked and the jobs read before the task waits for a lane
    (:func:`_turns`): a task the worker holds beside its lanes' is ready when a lane frees."""
    from distributed import get_worker

    worker = get_worker()
    info: dict[str, Any] = published(worker) or {}
    release = jobs[0].get("openvino") if jobs else None
    python = info["releases"][release]["python"] if release else None
    key = (repr(sorted(options.items())), fault, python)
    results: list[CaseResult] = []
    landed = tempfile.mkdtemp(prefix="irtool-files-", dir=_scratch())
    unused: list[_Lane] = []
    try:
        todo = [job_from_json(job) for job in land(files, jobs, Path(landed))]
        with _turns(int(info.get("lanes", 1))):
            lane = _take(key, options, timeout, fault, python)
            try:
                lane.pool.run(todo, results.append)
                packed = _pack(Path(lane.folder))
            except BaseException:
                _drop(lane)
                raise
            with _lock:
                _free.append(lane)
                unused = _free[:max(0, len(_free) - int(info.get("lanes", 1)))]  # the longest unused first
                del _free[:len(unused)]
    finally:
        shutil.rmtree(landed, ignore_errors=True)
    for old in unused:  # at most a process per lane: one per harness's options would pile up
        _drop(old)
    for result in results:
        result.host = str(worker.name)
    return {"results": json_text([result_to_json(result) for result in results], allow_nan=False), "written": packed,
            "landed": landed}


def _turns(lanes: int) -> threading.Semaphore:
    """The worker's lanes, one task on each at a time: the worker runs a thread more than it has
    lanes (:data:`irtool.jobs.cluster.WAITING`), whose task waits here, set up, for the next lane
    that frees, so that a lane goes from one task to the next without waiting for the scheduler."""
    with _lock:
        if not _lanes:
            _lanes.append(threading.Semaphore(lanes))
        return _lanes[0]


def _pack(folder: Path) -> bytes:
    """What the jobs wrote into the lane's report dir ``folder`` (reproducers/, and kept/ with
    --keep-outputs) as a tar, removed from ``folder``; b"" when they wrote nothing."""
    written = [folder / top for top in SENT_BACK if (folder / top).is_dir() and any((folder / top).iterdir())]
    if not written:
        return b""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=GZIP_LEVEL) as tar:
        for top in written:
            tar.add(top, arcname=top.name)
            shutil.rmtree(top, ignore_errors=True)
    return buffer.getvalue()


def results_of(answer: Mapping[str, Any], folders: dict[str, str]) -> list[dict[str, Any]]:
    """The results of a task's ``answer`` (JSON text: a size Dask reads at once, a string to pickle,
    where a list of dicts cost the worker's heartbeats a walk through every value) as JSON, the
    worker's paths of the files it was sent (``folders``: :class:`irtool.jobs.cluster_files.Shipment`'s)
    said as the harness's; RecordError for text that is not irtool's JSON."""
    try:
        return load_json(unland(answer["results"], answer["landed"], folders))
    except ValueError as error:  # json.JSONDecodeError: not what an irtool worker sends
        raise RecordError(f"its results are not irtool's JSON ({error})") from None


def unpack(packed: bytes, report_dir: Path) -> None:
    """A task's reproducers (and kept outputs) into ``report_dir``: only files and folders under
    reproducers/ and kept/ (no link, no absolute path, no ``..``), whatever the worker sent."""
    extract(packed, report_dir, SENT_BACK)
