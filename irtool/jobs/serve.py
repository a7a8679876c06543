"""The worker process's loop: requests in, answers out, a :class:`irtool.jobs.worker.Runner` between.

A worker is started as ``python -m irtool.jobs.lifeline`` (or forked from the pool's zygote,
:mod:`irtool.jobs.zygote`), which binds it to its pool and calls :func:`main`.  It answers on
a private copy of its stdout (fd 1 itself is pointed at stderr, so nothing a plugin prints can
corrupt the protocol): first ``{"ready": {...}}``, then for each request line one answer line.
Requests: ``{"options": {...}}`` once, then ``{"job": {...}}`` (answer ``{"results": [...]}``),
``{"devices": true}`` (answer ``{"devices": ...}``: what the device report says, for the
harness, which imports no openvino) or ``{"reproduce": {...}}`` (answer ``{"reproducer":
path}``: write the reproducer of a job whose worker crashed or hung, without compiling it).
"""
from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any, Mapping

from irtool.core import activity
from irtool.jobs.job_results import base_result
from irtool.jobs.records import result_from_json, result_to_json
from irtool.jobs.worker import Runner, RunnerOptions, job_from_json


def serve(requests: Any, answers: Any) -> None:
    """Answer requests (JSON lines) until the input ends."""
    from irtool.runtime.core import core, openvino_version

    core()
    _send(answers, {"ready": {"pid": os.getpid(), "openvino": openvino_version()}})
    runner = Runner()
    for line in requests:
        request = json.loads(line)
        if "options" in request:
            runner = Runner(RunnerOptions.from_json(request["options"]))
        elif "job" in request:
            job = job_from_json(request["job"])
            print(f"irtool worker {os.getpid()}: running {job.name}", file=sys.stderr, flush=True)
            try:
                results = runner.run(job)
            except Exception as error:  # irtool's own bug: say so for this job, keep serving
                result = base_result(job)
                result.message = f"internal error (an irtool bug): {type(error).__name__}: {error}"
                result.stderr = traceback.format_exc().splitlines()[-20:]
                results = [result]
            _send(answers, {"results": [result_to_json(result) for result in results]})
        elif "devices" in request:
            from irtool.runtime.devices import list_devices, report_to_json

            _send(answers, {"devices": report_to_json(list_devices())})
        elif "reproduce" in request:
            unwritten: list[str] = []
            try:
                lost = result_from_json(request["result"]) if "result" in request else None
                folder = runner.reproduce_only(job_from_json(request["reproduce"]), unwritten, lost)
            except Exception:  # irtool's own bug: the job is recorded without a reproducer
                traceback.print_exc()
                folder = None
            _send(answers, {"reproducer": folder, "unwritten": unwritten[0] if unwritten else None})


def _send(answers: Any, message: Mapping[str, Any]) -> None:
    answers.write(json.dumps(message, allow_nan=False) + "\n")
    answers.flush()


def main() -> None:
    """Requests and answers go through private copies of fds 0 and 1: what plugins and libraries
    print goes to stderr, and a process a library forks (openvino's telemetry) that closes
    its stdin cannot block on the lock of the stream the worker is reading."""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull, encoding="utf-8")
    sys.stdout = sys.stderr
    activity.share_from_environment()  # the step a job is in, for its pool to say if this process dies
    serve(requests, answers)
