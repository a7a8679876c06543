"""Where results live: results.jsonl while a run goes on, results.json when it ends.

results.jsonl holds one JSON object per line: first ``{"run": META}``, then one
:class:`~irtool.jobs.records.CaseResult` per finished job, appended and flushed as the
job finishes, so a killed run loses at most the line being written.  A torn last line is
dropped when the file is read back, and ``--resume`` skips every job already in the file.

results.json is ``{"format": FORMAT, **META, "partial": bool, "summary": {verdict: count},
"results": [...]}`` and is written whole (temporary name, then rename).  META holds
``irtool_version``, ``openvino_version``, ``host`` (name, platform, python, cpu),
``suites``, ``devices``, ``precisions``, ``shard``, ``started`` and ``finished`` (ISO 8601).
"""
from __future__ import annotations

import errno
import json
import os
import platform
import re
import socket
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Callable, Container, Iterable, Mapping

from irtool import __version__
from irtool.core.documents import load_json
from irtool.core.errors import IrtoolError
from irtool.core.files import RESULTS_LIMIT, atomic_writer, open_regular, read_bytes, writable_target
from irtool.core.jsonable import json_text, quoted_json
from irtool.jobs.records import VERDICTS, CaseResult, RecordError, result_from_json, result_to_json

FORMAT = "irtool-results/1"
# Keys of results.json that are not the run's META: computed from the results when written.
DERIVED = ("format", "partial", "summary", "results", "openvino_diffs", "baseline_diff", "coverage")
JSONL_NAME = "results.jsonl"
JSON_NAME = "results.json"
_NONFINITE = re.compile(r'"(?:-?inf|nan)"')  # how irtool writes a non-finite number: a line without it has none


class StoreError(IrtoolError):
    """A results file that cannot be read or written."""


@dataclass
class RunResults:
    meta: dict[str, Any]
    results: list[CaseResult] = field(default_factory=list)
    partial: bool = False

    @property
    def summary(self) -> dict[str, int]:
        counts = Counter(r.verdict for r in self.results)
        return {verdict: counts[verdict] for verdict in VERDICTS if counts[verdict]}

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, **self.meta, "partial": self.partial, "summary": self.summary,
                "results": [result_to_json(r) for r in self.results]}


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def host_info() -> dict[str, str]:
    return {"name": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version(),
            "cpu": _cpu_name()}


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_meta(suites: Iterable[str], devices: Iterable[str], precisions: Iterable[str], shard: str | None,
             openvino_version: str) -> dict[str, Any]:
    return {"irtool_version": __version__, "openvino_version": openvino_version, "host": host_info(),
            "suites": list(suites), "devices": list(devices), "precisions": list(precisions), "shard": shard,
            "started": now(), "finished": None}


class JsonlWriter:
    """Appends results to results.jsonl, one flushed line each.  A write that fails (a full
    disk) raises StoreError saying so; what was written before it stays readable (a torn
    last line is dropped when the file is read)."""

    def __init__(self, path: Path, meta: Mapping[str, Any] | None, append: bool, ended: bool = False):
        self.path = path
        self.ended = ended  # the file's last line ends the run (appending to a whole run's file)
        self._failed = False
        writable_target(path, "results file")  # a FIFO there would block the open until a reader came
        try:
            self._handle: IO[str] = open(path, "a" if append else "w", encoding="utf-8")
        except OSError as error:
            raise StoreError(f"{path}: cannot write results ({error.strerror})") from None
        if meta is not None:
            self._write({"run": dict(meta)})

    def append(self, result: CaseResult) -> None:
        self.ended = False
        self._write(result_to_json(result))

    def end(self, results: int, finished: str) -> None:
        """The line that says the run ran every job, how many results the file holds and when it
        finished (a results.jsonl without it, or with results after it, is of a partial run)."""
        if not self.ended:
            self._write({"end": {"results": results, "finished": finished}})
            self.ended = True

    def _write(self, data: Mapping[str, Any]) -> None:
        try:
            self._handle.write(json_text(data, allow_nan=False) + "\n")
            self._handle.flush()
        except OSError as error:
            self._failed = True
            raise StoreError(_write_failure(self.path, error)) from None

    def close(self) -> None:
        try:
            if not self._failed:
                self._handle.flush()
                os.fsync(self._handle.fileno())
        except OSError as error:
            self._failed = True
            raise StoreError(_write_failure(self.path, error)) from None
        finally:
            try:
                self._handle.close()
            except OSError:  # the buffer that could not be written: already said
                pass


def _write_failure(path: Path, error: OSError) -> str:
    if error.errno == errno.ENOSPC:
        return f"{path}: disk full (no space left on device); results written before this one are kept"
    return f"{path}: cannot write results ({error.strerror or error})"


def read_jsonl(path: Path, repair: bool = False, jobs: Container[tuple] | None = None,
               header: Callable[[dict[str, Any]], None] | None = None) -> RunResults:
    """A results.jsonl as written so far, without a torn last line (a killed writer); with
    ``repair`` that line is also cut off the file, so that appending goes on from a line end.

    Every line is checked: the first is ``{"run": {...}}``, every other one a result with the
    fields and types irtool writes, of a job no earlier line has a result of (a duplicated line
    would count twice) and, given ``jobs`` (job keys), of one of those jobs, or the end of a run
    ``{"end": {"results": N, "finished": TIME}}`` (JsonlWriter.end); anything else is a StoreError
    naming the line.  The run is whole where the last line is an end whose N is the results read
    (its TIME is then the run's ``finished``).  ``header`` is called with the run header once it
    is read, before any result (to refuse another run's file before reading it all).  The file is
    read a line at a time: memory holds the results, never the file's text as well.
    """
    meta: dict[str, Any] | None = None
    results = []
    lines: dict[tuple, int] = {}  # result key -> the line that holds it
    complete = 0  # bytes up to the end of the last whole line
    torn = False
    ended = False  # the last line is the end of a run that ran every job
    with open_regular(path, "results file", RESULTS_LIMIT) as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.endswith(b"\n"):  # only the last line can lack its end: a writer killed mid-line
                torn = True
                break
            complete += len(raw)
            if complete > RESULTS_LIMIT:  # grown past the limit while it was read (a run still writing)
                raise StoreError(f"{path}: more than {RESULTS_LIMIT >> 30} GiB of results; irtool reads no more")
            line = raw.decode("utf-8", errors="replace")
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                record = load_json(line)
            except json.JSONDecodeError as error:
                raise StoreError(f"{where}: not a JSON line ({error.msg}); the file is not a results.jsonl irtool "
                                 "wrote") from None
            if not isinstance(record, dict):
                raise StoreError(f"{where}: {quoted_json(record)} is not a JSON object; each line of a results.jsonl "
                                 "is the run header or one result")
            if "run" in record:
                if meta is not None:
                    raise StoreError(f"{where}: a second run header; a results.jsonl holds one run")
                meta = check_meta(record["run"], where)
                if header is not None:
                    header(meta)
                continue
            if meta is None:
                raise StoreError(f"{where}: expected the run header {{\"run\": {{...}}}} first")
            if set(record) == {"end"}:
                end = record["end"]
                count = end.get("results") if isinstance(end, dict) and set(end) <= {"results", "finished"} else None
                finished = end.get("finished") if isinstance(end, dict) else None
                if not isinstance(count, int) or isinstance(count, bool) or count < 0 or \
                        not isinstance(finished, (str, type(None))):
                    raise StoreError(f"{where}: the end of the run holds {quoted_json(end)}; expected "
                                     "{\"results\": N, \"finished\": TIME}, N the results before it")
                ended = count == len(results)
                if ended and finished is not None:
                    meta["finished"] = finished
                continue
            ended = False
            try:
                result = result_from_json(record, nonfinite=_NONFINITE.search(line) is not None)
            except RecordError as error:
                raise StoreError(f"{where}: {error}") from None
            first = lines.setdefault(result.key, number)
            if first != number:
                raise StoreError(f"{where}: a second result of {result.name} (the first is on line {first}); a "
                                 "results.jsonl holds one result per job, so this file was edited or joined")
            if jobs is not None and result.job_key not in jobs:
                raise StoreError(f"{where}: a result of {result.name}, which is not a job of this run (its suites "
                                 "and devices make no such job); the file was edited or joined")
            results.append(result)
    if repair and torn:
        with open(path, "r+b") as handle:
            handle.truncate(complete)
    return RunResults(meta or {}, results, partial=torn or not ended)


# The run header's fields that reports read, with their types.
DIFF_RULES = ("drift_factor", "drift_floor", "time_factor", "time_floor")  # of a run's diff between releases
META_FIELDS: dict[str, tuple[Any, str]] = {
    "suites": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings"),
    "devices": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings"),
    "precisions": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings"),
    "suite_digests": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v), "a list of strings"),
    "host": (lambda v: v is None or isinstance(v, dict), "an object"),
    "shards": (lambda v: v is None or (isinstance(v, list) and all(isinstance(x, dict) for x in v)),
               "a list of objects"),
    "openvino_releases": (lambda v: isinstance(v, dict) and all(isinstance(x, dict) for x in v.values()),
                          "an object of objects (release -> its environment)"),
    "diff_rules": (lambda v: isinstance(v, dict) and set(v) <= set(DIFF_RULES) and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) for x in v.values()),
                   f"an object of numbers ({', '.join(DIFF_RULES)})"),
    **{name: (lambda v: v is None or isinstance(v, str), "a string or null")
       for name in ("irtool_version", "openvino_version", "shard", "started", "finished", "matrix")},
}


def check_meta(meta: Any, where: str) -> dict[str, Any]:
    """A run header, checked: StoreError naming the first field of a wrong type."""
    if not isinstance(meta, dict):
        raise StoreError(f"{where}: the run header holds {quoted_json(meta)}; expected an object")
    for name, (check, words) in META_FIELDS.items():
        if name in meta and not check(meta[name]):
            raise StoreError(f"{where}: run field {name!r} is {quoted_json(meta[name])}; expected {words}")
    return dict(meta)


def write_json(path: Path, run: RunResults, extra: Mapping[str, Any] | None = None) -> None:
    """results.json; ``extra`` adds keys that are derived from the results (read back, they are dropped).

    Written as it goes: the run's fields indented, then ``"results"`` last, one result per line,
    so that a run of 200,000 results is never one string in memory."""
    head = {"format": FORMAT, **run.meta, "partial": run.partial, "summary": run.summary, **(extra or {})}
    head.pop("results", None)
    text = json_text(head, indent=1, allow_nan=False)
    with atomic_writer(path, "results file") as handle:
        handle.write(text[:-2].encode("utf-8") + b',\n "results": [')  # the head without its closing "\n}"
        for index, result in enumerate(run.results):
            line = json_text(result_to_json(result), allow_nan=False)  # ASCII: escapes whatever a name holds
            handle.write(((",\n  " if index else "\n  ") + line).encode("ascii"))
        handle.write(b"\n ]\n}\n" if run.results else b"]\n}\n")


def load_results(path: str | Path) -> RunResults:
    """A results.json (or a report dir holding one, or a results.jsonl) read back and checked."""
    path = Path(path)
    if path.is_dir():
        path = path / JSON_NAME if (path / JSON_NAME).is_file() else path / JSONL_NAME
    if path.suffix == ".jsonl":
        return read_jsonl(path)
    text = read_bytes(path, "results file", RESULTS_LIMIT)
    try:
        data = load_json(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise StoreError(f"{path}: not a results.json ({error})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StoreError(f"{path}: not a results.json irtool wrote (format {data.get('format') if isinstance(data, dict) else None!r}, "
                         f"expected {FORMAT!r})")
    stored = data.get("results", [])
    if not isinstance(stored, list):
        raise StoreError(f"{path}: 'results' is {quoted_json(stored)}; expected a list of results")
    meta = check_meta({k: v for k, v in data.items() if k not in DERIVED}, str(path))
    results = []
    indexes: dict[tuple, int] = {}
    for index, record in enumerate(stored):
        try:
            results.append(result_from_json(record))
        except RecordError as error:
            raise StoreError(f"{path}: results[{index}]: {error}") from None
        first = indexes.setdefault(results[-1].key, index)
        if first != index:
            raise StoreError(f"{path}: results[{index}]: a second result of {results[-1].name} (the first is "
                             f"results[{first}]); a results.json holds one result per job")
    return RunResults(meta, results, bool(data.get("partial")))
