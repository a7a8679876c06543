"""Cases x devices x precisions -> jobs; what cannot run here is a skip with its reason.

The order keeps the jobs of one model together (all its seeds, devices and precisions),
so that a worker builds each model once and compiles it once per device and precision.
``--shard K/N`` takes every N-th job from the K-th on: deterministic, and balanced
whatever the suite's shape; under several releases a job's releases go to one shard together.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from irtool.core.diagnostics import clipped
from irtool.core.errors import IrtoolError, did_you_mean
from irtool.core.numbers import NumberSyntaxError, parse_int
from irtool.core.precisions import PRECISION_CHOICES
from irtool.jobs.records import Job, SuiteCase, case_to_json


class MatrixError(IrtoolError):
    """A device list, precision list or shard that cannot make a matrix."""


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


MAX_SHARDS = 10_000  # N of --shard K/N: more slices than a CI matrix ever has


def parse_shard(text: str, what: str = "--shard") -> Shard:
    """``2/4`` -> Shard(2, 4): K and N numbers in ASCII digits, 1 <= K <= N <= MAX_SHARDS."""
    index, sep, count = text.partition("/")
    try:
        shard = Shard(parse_int(index, 1, MAX_SHARDS), parse_int(count, 1, MAX_SHARDS)) if sep else None
    except NumberSyntaxError:
        shard = None
    if shard is None or shard.index > shard.count:
        raise MatrixError(f"{what} {clipped(text, 40)}: expected K/N with 1 <= K <= N <= {MAX_SHARDS}, e.g. 2/4")
    return shard


def parse_list(text: str, option: str) -> list[str]:
    """``f32,bf16`` -> ["f32", "bf16"] (duplicates dropped).  Device lists: irtool.core.device_names.parse_device_list."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise MatrixError(f"{option} {text!r}: expected a comma-separated list")
    return list(dict.fromkeys(items))


def check_precisions(precisions: Iterable[str]) -> list[str]:
    precisions = list(precisions)
    unknown = [p for p in precisions if p not in PRECISION_CHOICES]
    if unknown:
        raise MatrixError(f"--precision {unknown[0]}: expected one of {', '.join(PRECISION_CHOICES)}"
                          f"{did_you_mean(unknown[0], PRECISION_CHOICES)}")
    return precisions


def make_jobs(cases: Sequence[SuiteCase], devices: Sequence[str], precisions: Sequence[str],
              shard: Shard | None = None, releases: Sequence[str | None] = (None,)) -> list[Job]:
    """Every case on every device at every precision (under every OpenVINO release of
    ``--openvino``, one release's jobs after another's), one model's jobs together."""
    by_model: dict[str, list[SuiteCase]] = {}
    for case in cases:
        by_model.setdefault(case.model_key, []).append(case)
    cells = [(case, device, precision) for group in by_model.values() for device in devices
             for precision in precisions for case in group]
    if shard is not None:  # a job's releases stay in one shard, so that each shard compares them
        cells = cells[shard.index - 1::shard.count]
    return [Job(case, device, precision, release) for release in releases for case, device, precision in cells]


def matrix_digest(jobs: Sequence[Job]) -> str:
    """What a run means, as a digest: the set of its jobs (each case's full definition, device and
    precision), independent of their order and of the paths the suites were named by."""
    lines = sorted(json.dumps([case_to_json(job.case), job.device, job.precision]
                              + ([job.openvino] if job.openvino else []), sort_keys=True) for job in jobs)
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def case_ops(cases: Sequence[SuiteCase]) -> set[str] | None:
    """The op types of ``cases`` (``GRUSequence``), or None when a case's model is not known to be
    one op (a model file of several ops, or one irtool reads only through OpenVINO)."""
    ops = set()
    for case in cases:
        op = case.op if case.file is None else file_op(case.file) if case.file.endswith(".xml") else None
        if not op:
            return None
        ops.add(re.sub(r"-[0-9]+$", "", op))
    return ops


@lru_cache(maxsize=1024)
def file_op(path: str) -> str | None:
    """The op an IR file is (``GRUSequence-5``) when it holds exactly one op of the recurrent
    family, read from the XML (no OpenVINO): what a job that did not run still knows of its file."""
    from irtool.ir import parse_ir
    from irtool.specs import registry

    try:
        model = parse_ir(path)
    except (IrtoolError, OSError):
        return None
    specs = [registry().for_ir(layer.type, layer.version) for layer in model.layers if layer.type]
    family = [spec for spec in specs if spec is not None and spec.family]
    return family[0].key if len(family) == 1 else None
