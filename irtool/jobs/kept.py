"""What ``irtool harness --keep-outputs`` keeps of every job that ran, and the recording a job is
judged from again without its device (``irtool report rejudge``).

``REPORT_DIR/kept/<job folder>/`` holds ``job.json`` (the job: its case, device and precision, and
the results it made, which the re-judgment is compared with) and ``outputs.npz`` (the device's
outputs with the record of the run, as ``irtool run --save-outputs`` writes them:
irtool.pipeline.recording).  What the jobs of one case share is kept once, by the digest of its
content, under ``kept/shared/``: the inputs it was fed (one file for every device and precision),
its model file (and .bin) and its expected-outputs file.  A case built from its op (no model file)
is kept as the case: irtool builds the same model from it again (its weights are seeded by
``model_seed``).  Paths in job.json are relative to ``kept/``.

A reproducer folder (case.json, model.xml, inputs.npz, actual.npz) is replayed the same way; an
actual.npz written before ``--save-outputs`` wrote records takes its record from case.json.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from irtool.core.errors import RunError
from irtool.core.files import FileError
from irtool.core.npz import write_npz
from irtool.jobs.records import CaseResult, Job, case_to_json, result_to_json

KEPT = "kept"  # the folder under the report dir
SHARED = "shared"  # under kept/: inputs, model files and expected outputs, by digest
JOB_FILE = "job.json"
OUTPUTS = "outputs.npz"
ACTUAL = "actual.npz"  # a reproducer folder's device outputs
FORMAT = 1


class KeepError(FileError):
    """What --keep-outputs could not write for a job: one line naming the file and why."""


def keep_job(report_dir: str | Path, folder_name: str, job: Job, prepared: Any, inputs: Mapping[str, np.ndarray],
             compiled: Any, executed: Any, results: Sequence[CaseResult], runs: int = 1) -> None:
    """Keep what a replay of ``job`` needs under ``report_dir/kept/``; what could not be kept (a
    full disk, a model of several files, several shapes inferred in order) is said beside the first
    result's verdict, which stands."""
    why = f"--keep-outputs: not kept: the job infers {runs} shapes in order (infer_sizes)" if runs > 1 else None
    try:
        if why is None:
            _keep(Path(report_dir) / KEPT, folder_name, job, prepared, inputs, compiled, executed, results)
    except KeepError as error:
        why = error.message
    if why is not None and results:
        results[0].unwritten = "; ".join(filter(None, [results[0].unwritten, why]))


def _keep(kept: Path, folder_name: str, job: Job, prepared: Any, inputs: Mapping[str, np.ndarray], compiled: Any,
          executed: Any, results: Sequence[CaseResult]) -> None:
    from irtool.pipeline.recording import saved_outputs

    folder = kept / folder_name
    try:
        case = dataclasses.replace(job.case, inputs=_shared_inputs(kept, inputs),
                                   file=_shared_file(kept, job.case.file) if job.case.file else None,
                                   expected=_shared_file(kept, job.case.expected) if job.case.expected else None)
        folder.mkdir(parents=True, exist_ok=True)
        write_npz(folder / OUTPUTS, saved_outputs(prepared, compiled, executed, inputs), "kept outputs file")
        record = {"format": FORMAT, "case": case_to_json(case), "device": job.device, "precision": job.precision,
                  "openvino": job.openvino, "results": [result_to_json(result) for result in results],
                  "model_digest": _model_digest(prepared, inputs) if job.case.file is None else None}
        _write_whole(folder / JOB_FILE, json.dumps(record, indent=1, allow_nan=False).encode())
    except (OSError, ValueError, FileError) as error:
        why = error.message if isinstance(error, FileError) else \
            f"{error.filename or folder}: {error.strerror}" if isinstance(error, OSError) and error.strerror \
            else f"{folder}: {error}"
        raise KeepError(f"--keep-outputs: not kept: {why}") from None


def _model_digest(prepared: Any, inputs: Mapping[str, np.ndarray]) -> str | None:
    """What a case kept as its case is checked by when it is built again: the digest of its node's
    arrays (its weights with the kept inputs), which another build of the case would change."""
    from irtool.judge.nodes import arrays_digest
    from irtool.runtime.captured import input_arrays

    return arrays_digest(input_arrays(prepared.single, inputs)) if prepared.single is not None else None


def _shared_inputs(kept: Path, inputs: Mapping[str, np.ndarray]) -> str:
    """The inputs as kept/shared/<digest>.npz (written once): their path relative to kept/."""
    digest = hashlib.blake2b(digest_size=12)
    for name, array in inputs.items():
        array = np.ascontiguousarray(array)
        digest.update(f"{name}\0{array.dtype.str}{array.shape}\0".encode("utf-8", "surrogatepass"))
        digest.update(array.data)
    relative = f"{SHARED}/{digest.hexdigest()}.npz"
    if not (kept / relative).is_file():
        (kept / SHARED).mkdir(parents=True, exist_ok=True)
        write_npz(kept / relative, inputs, "kept inputs file")
    return relative


def _shared_file(kept: Path, path: str) -> str:
    """A model or expected-outputs file copied once into kept/shared/<digest of its content>/ (an IR
    file with its .bin): its path relative to kept/."""
    source = Path(path)
    if not source.is_file():
        raise ValueError(f"{path} is not a file: only a model of one file (an IR with its .bin, an .onnx) is kept")
    companions = [source.with_suffix(".bin")] if source.suffix.lower() == ".xml" else []
    companions = [p for p in companions if p.is_file()]
    digest = hashlib.blake2b(digest_size=12)
    for each in [source, *companions]:
        with open(each, "rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    target = kept / SHARED / digest.hexdigest()
    if not (target / source.name).is_file():
        target.mkdir(parents=True, exist_ok=True)
        for each in companions + [source]:  # the model file last: once it is there, so is its .bin
            _copy_whole(each, target / each.name)
    return f"{SHARED}/{digest.hexdigest()}/{source.name}"


def _copy_whole(source: Path, target: Path) -> None:
    """Copy by a temporary file renamed into place: two workers keeping one file leave it whole."""
    handle, scratch = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    os.close(handle)
    try:
        shutil.copyfile(source, scratch)
        os.replace(scratch, target)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)


def _write_whole(target: Path, data: bytes) -> None:
    handle, scratch = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(scratch, target)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)


def replayed_job(job: Job, prepared: Any, config: Mapping[str, str]) -> tuple[Any, Any, str]:
    """The compiled run and outputs of a job replayed from its recording (``job.replay``: a kept job's
    folder or a reproducer folder), as the pipeline judges them, and where they came from."""
    from irtool.core.documents import load_json
    from irtool.core.npz import read_npz
    from irtool.pipeline.recording import replayed_run

    folder = Path(str(job.replay))
    inputs = read_npz(job.case.inputs) if job.case.inputs else None
    if (folder / JOB_FILE).is_file() and inputs is not None:
        digest = load_json((folder / JOB_FILE).read_bytes()).get("model_digest")
        if digest and digest != _model_digest(prepared, inputs):
            raise RunError(f"{folder / JOB_FILE}: the model this irtool builds from the case is not the one the "
                           f"device ran (its weights differ: another irtool built it); re-judge it with the irtool "
                           f"that ran it")
    return replayed_run(replay_recording(folder, prepared), prepared, job.device, job.precision, config,
                        inputs=inputs)[:3]


def replay_recording(folder: Path, prepared: Any) -> Any:
    """The recording a job is judged from: a kept job's outputs.npz, or a reproducer folder's
    actual.npz (with its case.json's record where the file has none)."""
    from irtool.core.documents import load_json
    from irtool.pipeline.recording import load_recording, with_case_record

    kept = folder / OUTPUTS
    recording = load_recording(kept if kept.is_file() else folder / ACTUAL)
    if recording.run is None and (folder / "case.json").is_file():
        try:
            case_json = load_json((folder / "case.json").read_bytes())
        except (OSError, ValueError) as error:
            raise RunError(f"{folder / 'case.json'}: cannot be read ({error})") from None
        recording = with_case_record(recording, case_json, prepared)
    return recording
