"""``irtool report rejudge DIR``: the jobs of a lab's run judged again here, without their device.

DIR is a report dir written by ``irtool harness --keep-outputs`` (its ``kept/`` folder:
irtool.jobs.kept) or any tree of reproducer folders (case.json, model.xml, inputs.npz,
actual.npz).  Each job goes through the harness's own workers with its recording in place of
its device (``Job.replay``): the worker judges the recorded outputs as ``irtool run
--device-outputs`` does (irtool.pipeline.recording.replayed_run), and makes the harness's
results from them.  The run is written as a harness run is (results.json, junit.xml,
report.html, a reproducer per failure), each result saying where its outputs came from, and
compared with the verdicts the jobs were recorded with: what changed is the point of a
re-judgment (a new irtool, other tolerances, a tampered file).
"""
from __future__ import annotations

import dataclasses
import shutil
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from irtool.core.errors import IrtoolError
from irtool.core.text import counted
from irtool.harness import expectations as known
from irtool.harness.session import HarnessOutcome
from irtool.harness.store import RunResults, now, run_meta
from irtool.jobs.kept import ACTUAL, JOB_FILE, KEPT, OUTPUTS
from irtool.jobs.records import CaseResult, Job, case_from_json, result_from_json
from irtool.jobs.worker import REPRODUCERS
from irtool.judge.compare import TolerancePolicy
from irtool.pipeline.reproducer import ONNX_MODEL

CASE_FILE = "case.json"  # a reproducer folder's record of its job (irtool.pipeline.reproducer)


class RejudgeError(IrtoolError):
    """A folder that cannot be re-judged: not one irtool wrote, or with a file missing."""


@dataclass(frozen=True)
class RejudgeOptions:
    source: Path  # a report dir written with --keep-outputs, its kept/ folder, or a tree of reproducer folders
    report_dir: Path
    jobs: int = 1
    timeout: float = 120.0  # seconds per job
    tolerance: TolerancePolicy = field(default_factory=TolerancePolicy)
    expected_failures: Sequence[Path] = ()
    force: bool = False
    only: str = ""  # re-judge only the jobs whose folder name holds this text


@dataclass(frozen=True)
class Replay:
    """One job to judge from its recording, and the results it was recorded with."""

    job: Job  # job.replay: its folder
    recorded: tuple[CaseResult, ...]
    reproducer: bool = False  # a reproducer folder: its result is named as recorded (its one node's, or its case's)
    tolerances: dict[str, tuple[float, float]] = field(default_factory=dict)  # its case.json's: output -> (atol, rtol)


@dataclass(frozen=True)
class Change:
    """A job whose verdict is not the one it was recorded with (verdicts as the job found them,
    before any known-failures file)."""

    name: str
    recorded: str  # "none": the recording holds no result of it
    now: str
    message: str  # the new result's
    recorded_message: str = ""
    tolerances: str = ""  # where the outputs were judged at other tolerances than recorded: which, both ways

    def to_json(self) -> dict[str, str]:
        return dataclasses.asdict(self)


@dataclass
class Rejudged:
    outcome: HarnessOutcome  # the run, as a harness run's (its verdict, exit code and reports)
    source: str  # what was re-judged: "a report dir's kept outputs" or "reproducer folders"
    changes: list[Change]
    unchanged: int
    not_replayable: list[str] = field(default_factory=list)  # reproducer folders without device outputs


def find_replays(source: Path, only: str = "") -> tuple[list[Replay], str, list[str]]:
    """The jobs under ``source``, what it is, and the reproducer folders that hold no device outputs
    (a job that errored or crashed before it gave any)."""
    source = Path(source)
    if not source.is_dir():
        raise RejudgeError(f"{source}: {_not_a_folder(source)}; expected a report dir written by irtool harness "
                           f"--keep-outputs, or a folder of reproducer folders")
    kept = source / KEPT if (source / KEPT).is_dir() else source if any(source.glob(f"*/{JOB_FILE}")) else None
    if kept is not None:
        folders = sorted(path.parent for path in kept.glob(f"*/{JOB_FILE}") if only in path.parent.name)
        return [_kept(folder, kept) for folder in folders], f"{kept} (kept by irtool harness --keep-outputs)", []
    replays, empty = [], []
    for path in sorted(source.rglob(CASE_FILE)):
        folder = path.parent
        if only not in folder.name:
            continue
        if not (folder / ACTUAL).is_file():
            empty.append(str(folder))
            continue
        replays.append(_reproducer(folder))
    if not replays:
        said = f" ({counted(len(empty), 'reproducer folder')} without device outputs, {ACTUAL})" if empty else ""
        raise RejudgeError(f"{source}: nothing to re-judge{said}; expected a report dir written by irtool harness "
                           f"--keep-outputs (with a {KEPT}/ folder) or a tree of reproducer folders, each with "
                           f"{CASE_FILE} and {ACTUAL}" + (f" whose name holds {only!r}" if only else ""))
    return replays, f"{source} ({counted(len(replays), 'reproducer folder')})", empty


def _not_a_folder(path: Path) -> str:
    """What a path given as DIR is, where it is not a folder."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError as error:
        return "no such folder" if isinstance(error, FileNotFoundError) else f"cannot be read ({error.strerror})"
    if stat.S_ISREG(mode):
        if path.name in ("results.json", "results.jsonl", CASE_FILE, JOB_FILE):
            return f"is a file ({path.name}), not a folder: give the folder that holds it ({path.parent})"
        return "is a file, not a folder"
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"))
    return f"is {next((words for test, words in kinds if test(mode)), 'not a regular file')}, not a folder"


def _kept(folder: Path, kept: Path) -> Replay:
    data = _read_json(folder / JOB_FILE)
    where = folder / JOB_FILE
    with _read_as(where, "irtool harness --keep-outputs writes"):
        case = case_from_json(data["case"])
        paths = {name: _existing(kept / getattr(case, name), where, what)
                 for name, what in (("file", "model file"), ("inputs", "inputs"), ("expected", "expected outputs"))
                 if getattr(case, name)}
        case = dataclasses.replace(case, **paths)
        job = Job(case, str(data["device"]), str(data["precision"]), data.get("openvino"), str(folder))
        recorded = tuple(result_from_json(result) for result in data["results"])
    _existing(folder / OUTPUTS, where, "device outputs")
    return Replay(job, recorded)


def _reproducer(folder: Path) -> Replay:
    """A reproducer folder's job: its model file and inputs in place of its case's, one shape."""
    where = folder / CASE_FILE
    data = _read_json(where)
    model = next((folder / name for name in ("model.xml", ONNX_MODEL) if (folder / name).is_file()), None)
    if model is None:
        raise RejudgeError(f"{folder}: holds no model.xml or model.onnx; a reproducer folder holds the model its "
                           f"{ACTUAL} was computed by")
    with _read_as(where, "irtool harness or irtool run --reproducers writes in a reproducer folder"):
        case = dataclasses.replace(case_from_json(data["case"]), file=str(model),
                                   inputs=_existing(folder / "inputs.npz", where, "inputs"), expected=None,
                                   compare_with=None, shapes={}, infer_sizes=())
        job = Job(case, str(data["device"]), str(data["precision"]), None, str(folder))
        # irtool run's folders (suite "run") say the job beside the result, not in it
        said = {"case": case.id, "suite": case.suite, "device": job.device, "precision": job.precision}
        recorded = (result_from_json({**said, **data["result"]}),)
        tolerances = {str(name): (float(pair[0]), float(pair[1]))
                      for name, pair in (data.get("tolerances") or {}).items()}
    return Replay(job, recorded, reproducer=True, tolerances=tolerances)


@contextmanager
def _read_as(where: Path, writer: str) -> Iterator[None]:
    """A record that is not what ``writer`` writes, or whose case irtool refuses: RejudgeError naming it."""
    try:
        yield
    except (KeyError, TypeError, AttributeError, ValueError) as error:  # ValueError: RecordError too
        raise RejudgeError(f"{where}: not what {writer} ({type(error).__name__}: {error})") from None
    except RejudgeError:
        raise
    except IrtoolError as error:
        raise RejudgeError(f"{where}: {error.message}") from None


def _read_json(path: Path) -> Any:
    from irtool.core.documents import load_json

    try:
        data = load_json(path.read_bytes())
    except OSError as error:
        raise RejudgeError(f"{path}: cannot be read ({error.strerror})") from None
    except ValueError as error:
        raise RejudgeError(f"{path}: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise RejudgeError(f"{path}: expected a JSON object, as irtool writes it")
    return data


def _existing(path: Path, where: Path, what: str) -> str:
    if not path.is_file():
        raise RejudgeError(f"{where}: its {what} {path} are missing" if what.endswith("s")
                           else f"{where}: its {what} {path} is missing")
    return str(path)


def rejudge(options: RejudgeOptions, progress: Callable[[CaseResult, int, int], None] | None = None) -> Rejudged:
    """Every job under ``options.source`` judged again from its recording, into a harness report."""
    from irtool.harness.lock import ReportDirLock
    from irtool.harness.marker import check_owned, record_owned
    from irtool.harness.report_files import make_folder, write_reports
    from irtool.harness.reports import REPORT_NAMES
    from irtool.jobs.pool import Pool, worker_count
    from irtool.jobs.worker import RunnerOptions
    from irtool.runtime.core import openvino_version

    began = time.monotonic()
    replays, source, empty = find_replays(options.source, options.only)
    expected = [entry for path in options.expected_failures for entry in known.load_expectations(path)]
    out, given = Path(options.report_dir).resolve(), Path(options.source).resolve()
    if out == given or out in given.parents:
        raise RejudgeError(f"-o {options.report_dir}: would write over what is re-judged ({options.source}); "
                           f"give another folder")
    report_dir = make_folder(options.report_dir)
    lock = ReportDirLock.acquire(report_dir, "report rejudge", "-o")
    try:
        check_owned(report_dir, REPORT_NAMES, (REPRODUCERS,), options.force, option="-o")
        shutil.rmtree(report_dir / REPRODUCERS, ignore_errors=True)
        record_owned(report_dir, folders=(REPRODUCERS,))
        by_job = {replay.job.key: replay for replay in replays}
        results: list[CaseResult] = []
        named: set = set()  # reproducer folders whose result took its recorded name

        def record(result: CaseResult) -> None:
            replay = by_job.get(result.job_key)
            if replay is not None:
                result = _as_recorded(result, replay, replay.job.key in named)
                named.add(replay.job.key)
            result = known.apply(expected, result)
            results.append(result)
            if progress:
                progress(result, len({r.job_key for r in results}), len(replays))

        meta = run_meta(sorted({r.job.case.suite for r in replays}), sorted({r.job.device for r in replays}),
                        sorted({r.job.precision for r in replays}), None, "")
        workers, note = worker_count(options.jobs, len(replays))
        outcome = HarnessOutcome(RunResults(meta, results, partial=True), jobs=len(replays), reran=len(replays),
                                 notes=[note] if note else [])
        pool = Pool(workers, options.timeout, RunnerOptions({}, options.tolerance, str(report_dir)))
        try:
            pool.start(workers)
            said = pool.devices()  # the workers' openvino, as they say it: this process need not import one
            meta["openvino_version"] = said["openvino"] if said else openvino_version()
            pool.run([replay.job for replay in replays], record)
            outcome.run.partial = False
        except KeyboardInterrupt:
            outcome.interrupted = True
        finally:
            pool.close()
        order = {replay.job.key: index for index, replay in enumerate(replays)}
        results.sort(key=lambda r: order.get(r.job_key, len(order)))
        changes, unchanged = _changes(replays, results)
        meta["finished"] = now()
        meta["rejudged"] = {"source": str(options.source), "jobs": len(replays), "unchanged": unchanged,
                            "changed": [change.to_json() for change in changes]}
        write_reports(report_dir, outcome.run, force=True)  # checked above
    finally:
        lock.release()
    if not outcome.interrupted:
        outcome.notes += known.unmatched(expected, results)
    outcome.seconds = time.monotonic() - began
    return Rejudged(outcome, source, changes, unchanged, empty)


def _as_recorded(result: CaseResult, replay: Replay, named: bool) -> CaseResult:
    """A replayed result saying where its outputs came from (a job whose worker crashed or hung never
    said); a reproducer folder's under the name its job was recorded with: the model's CASE::NODE of
    a node taken out of a model, or the case of a model judged node by node (a cell lowered to plain
    ops), once."""
    if replay.reproducer and not named:
        recorded = replay.recorded[0]
        result = dataclasses.replace(result, case=recorded.case, node=recorded.node)
    if not result.replayed:
        result = dataclasses.replace(result, replayed=f"outputs from {replay.job.replay}")
    return result


def _changes(replays: Sequence[Replay], results: Sequence[CaseResult]) -> tuple[list[Change], int]:
    """The results whose verdict (as the job found it) is not the recorded one, and how many are."""
    def found(result: CaseResult) -> str:
        return result.raw_verdict or result.verdict

    recorded = {result.key: result for replay in replays for result in replay.recorded}
    tolerances = {result.key: replay.tolerances for replay in replays for result in replay.recorded}
    now_ = {result.key: result for result in results}
    changes, unchanged = [], 0
    for key in list(dict.fromkeys([*recorded, *now_])):
        old, new = recorded.get(key), now_.get(key)
        if old is not None and new is not None and found(old) == found(new):
            unchanged += 1
            continue
        name = new.name if new is not None else old.name if old is not None else ""
        changes.append(Change(name, found(old) if old else "none", found(new) if new else "none",
                              (new.raw_message or new.message) if new else "no result now",
                              (old.raw_message or old.message) if old else "",
                              _other_tolerances(old, new, tolerances.get(key) or {})
                              if old is not None and new is not None else ""))
    return changes, unchanged


def _other_tolerances(old: CaseResult, new: CaseResult, recorded: dict[str, tuple[float, float]]) -> str:
    """``Y at atol 0, rtol 0 then, atol 1e-05, rtol 0.0001 now (f32 default)`` for each output judged at
    other tolerances than recorded (in the old result's outputs, else its reproducer's case.json:
    ``recorded``): the options of this re-judgment, which alone may change a verdict; else ""."""
    then = {**recorded, **{o.get("name"): (o.get("atol"), o.get("rtol")) for o in old.outputs}}
    said = []
    for output in new.outputs:
        before, now = then.get(output.get("name")), (output.get("atol"), output.get("rtol"))
        if before is None or None in (*before, *now) or tuple(before) == now:
            continue
        source = f" ({output['tolerance_source']})" if output.get("tolerance_source") else ""
        said.append(f"{output.get('name')} at atol {before[0]:.3g}, rtol {before[1]:.3g} then, atol {now[0]:.3g}, "
                    f"rtol {now[1]:.3g} now{source}")
    return "; ".join(said)
