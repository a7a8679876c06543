"""Join the results of shards (``--shard K/N`` runs, or one run per device) into one run.

Shards must come from one OpenVINO version and one set of suites; their devices and
precisions are joined (a CI matrix may give each device its own machine).  A job present
in two shards is an error unless both records are identical (the same file given twice).
The merged meta lists every shard (``shards``: shard, host, started, finished, results),
starts at the earliest start and finishes at the latest finish; the run is partial if
any shard is.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, Mapping, Sequence

from irtool.core.errors import IrtoolError
from irtool.harness.matrix import MatrixError, Shard, parse_shard
from irtool.harness.store import RunResults
from irtool.jobs.records import CaseResult

MUST_AGREE = ("openvino_version", "suites")


class MergeError(IrtoolError):
    """Shards that cannot be joined."""


def merge_runs(runs: Sequence[RunResults], names: Sequence[str] | None = None) -> RunResults:
    """One run holding every shard's results; ``names`` (e.g. the files read) label the shards in errors."""
    if not runs:
        raise MergeError("no results to merge")
    names = list(names or (f"shard {k + 1}" for k in range(len(runs))))
    for key in MUST_AGREE:
        values = {_text(run.meta.get(key)) for run in runs}
        if len(values) > 1:
            found = "; ".join(f"{name}: {_text(run.meta.get(key))}" for name, run in zip(names, runs))
            raise MergeError(f"the shards differ in {key} ({found}); merge only shards of one run, "
                             f"with one OpenVINO version and the same suites")
    results: dict[tuple[str, str, str], tuple[str, CaseResult]] = {}
    for name, run in zip(names, runs):
        for result in run.results:
            seen = results.get(result.key)
            if seen is not None and seen[1] != result:
                raise MergeError(f"{result.name} is in {seen[0]} and in {name} with different results; "
                                 f"shards of one run never share a job")
            results.setdefault(result.key, (name, result))
    meta: dict[str, Any] = dict(runs[0].meta)
    meta.update(devices=_union(run.meta.get("devices") for run in runs),
                precisions=_union(run.meta.get("precisions") for run in runs),
                shard=None, matrix=None, shards=[shard for run in runs for shard in _shards(run)],
                started=_edge([run.meta.get("started") for run in runs], min),
                finished=_edge([run.meta.get("finished") for run in runs], max))
    missing = missing_shards(meta["shards"])
    if missing:
        meta["missing_shards"] = missing
    return RunResults(meta, [result for _, result in results.values()],
                      partial=any(run.partial for run in runs) or bool(missing))


def missing_shards(shards: Sequence[Mapping[str, Any]]) -> list[str]:
    """The K/N slices of a --shard run that no merged shard brought (a merge of only some is partial)."""
    given = set()
    for text in (str(entry.get("shard")) for entry in shards if entry.get("shard")):
        try:  # as a results file names it: K/N of at most MAX_SHARDS slices, else not counted
            given.add(parse_shard(text))
        except MatrixError:
            continue
    counts = {shard.count for shard in given}
    return [str(Shard(k, n)) for n in sorted(counts) for k in range(1, n + 1) if Shard(k, n) not in given]


def _text(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _union(lists: Iterable[Sequence[str] | None]) -> list[str]:
    return list(dict.fromkeys(item for items in lists for item in items or ()))


def _shards(run: RunResults) -> list[dict[str, Any]]:
    """The shards a run is made of: itself, or those it lists (a merge of merges stays flat)."""
    if run.meta.get("shards"):
        return list(run.meta["shards"])
    return [{"shard": run.meta.get("shard"), "host": (run.meta.get("host") or {}).get("name"),
             "started": run.meta.get("started"), "finished": run.meta.get("finished"),
             "results": len(run.results), "partial": run.partial}]


def _edge(stamps: list[str | None], pick: Any) -> str | None:
    """The earliest (min) or latest (max) of ISO 8601 times, compared as times; None if none is given."""
    known = [s for s in stamps if s]
    try:
        return pick(known, key=datetime.fromisoformat) if known else None
    except (TypeError, ValueError):  # a stamp irtool did not write, or naive mixed with aware
        raise MergeError(f"the shards' start/finish times cannot be compared: {', '.join(known)}") from None
