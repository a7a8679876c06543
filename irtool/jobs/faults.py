"""Fault injection, to test what the harness and ``reduce`` do when a plugin crashes or hangs.

``IRTOOL_FAULT`` holds faults separated by ``;``, each ``ACTION:KEY=VALUE,...``.  A worker
about to run a job whose fields all match a fault does ACTION instead: ``abort``
(SIGABRT, as a failed assertion in a plugin), ``segfault`` (SIGSEGV), ``hang`` (sleeps
past any timeout) or ``exit`` (exit code 3); ``slow:SECONDS`` (also ``slow:SECONDS,KEY=VALUE``)
runs the job but sleeps SECONDS inside its compile step, which the job's compile time then
includes: a slowdown for the baseline diff to catch.  Keys: ``case`` (a glob on the case id),
``device``, ``precision``, ``op``, ``openvino`` (the release of a run under several), and any attribute or dim size of the case's op, as
given or as found in its model (``hidden_size=7``, ``batch_size=3``; compared as IR text,
so ``true``, not ``True``).
Without the variable nothing happens; it exists for tests and for rehearsing a triage.
"""
from __future__ import annotations

import math
import os
import signal
import time
from dataclasses import dataclass
from typing import Any, Mapping

from irtool.errors import IrtoolError
from irtool.jobs.records import Job, pattern_matches
from irtool.specs.values import format_value

ENV = "IRTOOL_FAULT"
ACTIONS = ("abort", "segfault", "hang", "exit", "slow")


class FaultError(IrtoolError):
    """An IRTOOL_FAULT value that cannot be read."""


@dataclass(frozen=True)
class Fault:
    action: str
    when: Mapping[str, str]
    seconds: float = 0.0  # slow: how long compile sleeps

    def matches(self, job: Job, found: Mapping[str, Any] | None = None) -> bool:
        fields = job_fields(job, found or {})
        for key, want in self.when.items():
            have = fields.get(key)
            if have is None or not (pattern_matches(want, have) if key == "case" else have == want):
                return False
        return True


def job_fields(job: Job, found: Mapping[str, Any]) -> dict[str, str]:
    """The fields a fault can name: the case's own, and ``found`` in its model (the op's
    attributes and dim sizes, so that a fault can name the shape of an IR file's op)."""
    case = job.case
    fields = {name: format_value(value) for name, value in {**found, **case.attributes, **case.sizes}.items()}
    fields.update(case=case.id, device=job.device, precision=job.precision, op=case.op or "",
                  openvino=job.openvino or "")
    return fields


def parse_faults(text: str) -> list[Fault]:
    faults = []
    for item in filter(None, (part.strip() for part in text.split(";"))):
        action, _, conditions = item.partition(":")
        if action not in ACTIONS:
            raise FaultError(f"{ENV}={text!r}: {action!r} is not one of {', '.join(ACTIONS)}")
        when = {}
        parts = [c.strip() for c in conditions.split(",") if c.strip()]
        seconds = 0.0
        if action == "slow":
            try:
                seconds = float(parts.pop(0)) if parts else math.nan
            except ValueError:
                seconds = math.nan
            if not 0 < seconds < 3600:
                raise FaultError(f"{ENV}={text!r}: slow takes seconds first (0 < S < 3600), "
                                 "e.g. slow:2,op=GRUSequence-5")
        for condition in parts:
            key, sep, value = condition.partition("=")
            if not sep:
                raise FaultError(f"{ENV}={text!r}: {condition!r} is not KEY=VALUE")
            when[key.strip()] = value.strip()
        faults.append(Fault(action, when, seconds))
    return faults


def faults_from_environment() -> list[Fault]:
    return parse_faults(os.environ.get(ENV, ""))


def inject(faults: list[Fault], job: Job, found: Mapping[str, Any] | None = None) -> float:
    """Do the first matching fault's action (this never returns when one matches), except ``slow``:
    its seconds are returned, for the compile step to sleep (0.0 when none matches)."""
    for fault in faults:
        if fault.matches(job, found):
            if fault.action == "slow":
                return fault.seconds
            _do(fault.action)
    return 0.0


def _do(action: str) -> None:  # pragma: no cover - the process ends here
    if action == "abort":
        os.abort()
    if action == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if action == "exit":
        os._exit(3)
    while True:
        time.sleep(3600)
