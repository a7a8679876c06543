"""The files a job names, sent with its task to a worker that does not share the harness's disk.

A ``[[models]]`` or ``[[paths]]`` case names its model by an absolute path on the harness's
machine, with what OpenVINO reads beside it (an IR's ``.bin``, a ``.pdmodel``'s ``.pdiparams``,
an ONNX model's external data files; a SavedModel folder whole), and maybe ``.npz`` files of
inputs and expected outputs.  :func:`pack` puts the files of a task's jobs in one tar, each
folder they come from as a numbered folder (``0/lstm.xml``, ``0/lstm.bin``), and names them in
the jobs by those relative paths; the worker unpacks them into a folder of its own
(:func:`land`) and runs the jobs there; the harness reads the worker's paths in the results
back as its own (:func:`unland`), so that results, messages and reports name the harness's
files as a run without ``--cluster`` does.

A job's files are at most :data:`MAX_BYTES` in all (they travel through the scheduler with
the task); :func:`too_big` says why a job's are more, before the run, and the job is skipped
with that reason.  A file that is absent or not a regular file is not sent: the job meets its
absence on the worker, and says so as it would on the harness's machine.
"""
from __future__ import annotations

import io
import json
import os
import re
import tarfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from irtool.core.files import MIB, size_text
from irtool.core.formats import WEIGHTS_BESIDE
from irtool.jobs.records import Job, SuiteCase
from irtool.jobs.worker import job_to_json

MAX_BYTES = 64 * MIB  # a job's files, in all: more is skipped before the run (docs/cluster.md)
FIELDS = ("file", "inputs", "expected")  # the case fields that name files
GZIP_LEVEL = 1  # of the tars sent both ways: half level 9's CPU on a run's reproducers, a fifth more bytes


@dataclass(frozen=True)
class Shipment:
    """A task's jobs (job_to_json of each, their files named relative to the shipment), the files
    (a tar.gz; b"" for jobs that name none) and, by number, the harness's folder each came from."""

    jobs: list[dict[str, Any]]
    files: bytes
    folders: dict[str, str]


def _named(case: SuiteCase) -> list[Path]:
    return [Path(getattr(case, name)) for name in FIELDS if getattr(case, name)]


@lru_cache(maxsize=256)
def _files(path: Path) -> tuple[Path, ...]:
    """``path`` and what is read with it: the files of a SavedModel folder, a model's weights file
    beside it, an ONNX model's external data files inside its folder (regular files only)."""
    if path.is_dir():
        return tuple(sorted(found for found in path.rglob("*") if found.is_file()))
    if not path.is_file():
        return ()
    found = [path]
    weights = path.with_suffix(WEIGHTS_BESIDE.get(path.suffix.lower(), path.suffix))
    if weights != path and weights.is_file():
        found.append(weights)
    if path.suffix.lower() == ".onnx" and path.stat().st_size <= MAX_BYTES:
        found += _external_data(path)
    return tuple(found)


def _external_data(path: Path) -> list[Path]:
    """The files an ONNX model's external tensors name, inside its folder (where OpenVINO reads them)."""
    import onnx

    from irtool.onnx.external import external_tensors

    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # the job says what is wrong with the model, on the worker as here
        return []
    folder = path.parent.resolve()
    found = []
    for tensor in external_tensors(model):
        location = {entry.key: entry.value for entry in tensor.external_data}.get("location", "")
        candidate = (folder / location).resolve()
        if location and candidate.is_file() and candidate.is_relative_to(folder):
            found.append(candidate)
    return list(dict.fromkeys(found))


def files_size(jobs: Sequence[Job]) -> int:
    """The bytes of the files ``jobs`` name, each file once (what :func:`pack` sends of them)."""
    return _size(*(job.case for job in jobs))


def _size(*cases: SuiteCase) -> int:
    size = 0
    for file in dict.fromkeys(file for case in cases for path in _named(case) for file in _files(path)):
        try:
            size += file.stat().st_size
        except OSError:  # gone since: not sent, as an absent file
            pass
    return size


def too_big(case: SuiteCase) -> str | None:
    """Why ``case``'s files cannot go to a worker with its task (more than MAX_BYTES), or None."""
    size = _size(case)
    if size <= MAX_BYTES:
        return None
    return (f"its files are {size_text(size)}, more than the {size_text(MAX_BYTES)} a job sends to a worker of the "
            f"cluster (docs/cluster.md): run it without --cluster")


def pack(jobs: Sequence[Job]) -> Shipment:
    """``jobs`` as a task sends them: their files in one tar, named in the jobs relative to it."""
    folders: dict[Path, str] = {}
    members: dict[str, Path] = {}
    sent = []
    for job in jobs:
        data = job_to_json(job)
        for name in FIELDS:
            if data["case"].get(name):
                path = Path(data["case"][name])
                number = folders.setdefault(path.parent, str(len(folders)))
                data["case"][name] = f"{number}/{path.name}"
                for file in _files(path):
                    members[f"{number}/{file.relative_to(path.parent).as_posix()}"] = file
        sent.append(data)
    if not members:
        return Shipment(sent, b"", {})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=GZIP_LEVEL, dereference=True) as tar:
        for arcname, file in members.items():
            try:
                tar.add(file, arcname=arcname, recursive=False)
            except OSError:  # gone or unreadable since: the job meets that on the worker, as it would here
                pass
    return Shipment(sent, buffer.getvalue(), {number: str(folder) for folder, number in folders.items()})


def land(files: bytes, jobs: Sequence[dict[str, Any]], folder: Path) -> list[dict[str, Any]]:
    """A shipment's files unpacked into ``folder``, and its jobs naming them there."""
    extract(files, folder)
    landed = []
    for data in jobs:
        case = dict(data["case"])
        for name in FIELDS:
            if case.get(name):
                case[name] = str(folder / case[name])
        landed.append({**data, "case": case})
    return landed


def extract(packed: bytes, folder: Path, tops: Sequence[str] | None = None) -> None:
    """A tar.gz into ``folder``: only its files and folders (under one of ``tops``, if given), no
    link, no absolute path, no ``..``, whoever made it."""
    if not packed:
        return
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
        members = [m for m in tar.getmembers() if (m.isfile() or m.isdir()) and not os.path.isabs(m.name)
                   and ".." not in m.name.split("/") and (tops is None or m.name.split("/")[0] in tops)]
        tar.extractall(folder, members=members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))


def unland(text: str, landed: str, folders: dict[str, str]) -> str:
    """``text`` (results as JSON text) with each path under the worker's folder ``landed`` said as the
    harness's own: ``LANDED/0/lstm.xml`` -> ``/suites/models/lstm.xml`` (each as JSON spells it)."""
    if not folders:
        return text
    spelt = {number: json.dumps(folder)[1:-1] for number, folder in folders.items()}
    pattern = re.compile(re.escape(json.dumps(landed.rstrip("/") + "/")[1:-1]) + r"([0-9]+)(?![0-9])")
    return pattern.sub(lambda m: spelt.get(m.group(1), m.group(0)), text)
