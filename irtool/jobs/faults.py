"""Fault injection, to test what the harness and ``reduce`` do when a plugin crashes or hangs.

``IRTOOL_FAULT`` holds faults separated by ``;``, each ``ACTION:KEY=VALUE,...``.  A worker
about to run a job whose fields all match a fault does ACTION instead: ``abort``
(SIGABRT, as a failed assertion in a plugin), ``segfault`` (SIGSEGV), ``hang`` (sleeps
past any timeout) or ``exit`` (exit code 3); ``slow:SECONDS`` (also ``slow:SECONDS,KEY=VALUE``)
runs the job but sleeps SECONDS inside its compile step, which the job's compile time then
includes: a slowdown for the baseline diff to catch.  Keys: ``case`` (a glob on the case id),
``device``, ``precision``, ``op``, ``openvino`` (the release of a run under several), and any attribute or dim size of the case's op, as
given or as found in its model (``hidden_size=7``, ``batch_size=3``; compared as IR text,
so ``true``, not ``True``).  A key that is none of these is an error when the value is read.
Faults are applied per job, in the workers, and some fields are known only once a worker has
read the job's model (an IR file's attributes); so a command that knows its jobs before it
starts (``harness``) refuses a fault that matches none of them on the fields it knows
(:func:`unmatched`), and ``reduce``, whose jobs are made as it goes, says at its end which
fault matched none of the jobs it ran.
Without the variable nothing happens; it exists for tests and for rehearsing a triage.
"""
from __future__ import annotations

import math
import os
import signal
import time
from dataclasses import dataclass
from typing import Any, Mapping

from irtool.errors import IrtoolError, did_you_mean
from irtool.jobs.records import Job, pattern_matches
from irtool.specs.values import format_value

ENV = "IRTOOL_FAULT"
ACTIONS = ("abort", "segfault", "hang", "exit", "slow")
JOB_KEYS = ("case", "device", "precision", "op", "openvino")  # besides an op's attributes and sizes


class FaultError(IrtoolError):
    """An IRTOOL_FAULT value that cannot be read."""


@dataclass(frozen=True)
class Fault:
    action: str
    when: Mapping[str, str]
    seconds: float = 0.0  # slow: how long compile sleeps
    text: str = ""  # as written in IRTOOL_FAULT

    def may_match(self, job: Job) -> bool:
        """Whether the fault can match the job, judged on the fields known before its model is
        read: a key the job does not hold yet (an IR file's attribute) may still match."""
        fields = job_fields(job, {})
        for key, want in self.when.items():
            have = fields.get(key)
            if have is not None and not (pattern_matches(want, have) if key == "case" else have == want):
                return False
        return True

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
            raise FaultError(f"{ENV}={text!r}: {action!r} is not one of {', '.join(ACTIONS)}"
                             f"{did_you_mean(action, ACTIONS)}")
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
            key = key.strip()
            if key not in condition_keys():
                raise FaultError(f"{ENV}={text!r}: {key!r} is no condition a fault can name"
                                 f"{did_you_mean(key, condition_keys())}; conditions: {', '.join(JOB_KEYS)}, or an "
                                 f"op's attribute or dim size (hidden_size=7, batch_size=3)")
            when[key] = value.strip()
        faults.append(Fault(action, when, seconds, item))
    return faults


def condition_keys() -> frozenset[str]:
    """What a fault's condition can name: the job's fields, and every attribute, symbol and size of
    the ops irtool has specs of (IR) or schemas of (ONNX)."""
    global _CONDITION_KEYS
    if _CONDITION_KEYS is None:
        from irtool.specs import registry

        keys = set(JOB_KEYS) | {"num_directions"}
        for spec in registry():
            keys |= set(spec.attributes) | set(spec.symbols) | set(spec.sizes)
        keys |= _ONNX_ATTRIBUTES
        _CONDITION_KEYS = frozenset(keys)
    return _CONDITION_KEYS


_CONDITION_KEYS: frozenset[str] | None = None
# the attributes of ONNX GRU, LSTM and RNN beyond those of the IR ops (onnx.defs, without importing onnx)
_ONNX_ATTRIBUTES = frozenset({"activation_alpha", "activation_beta", "layout", "input_forget", "output_sequence"})


def unmatched(faults: list[Fault], jobs: list[Job]) -> list[Fault]:
    """The faults that can match none of ``jobs`` (see Fault.may_match)."""
    return [fault for fault in faults if not any(fault.may_match(job) for job in jobs)]


def unmatched_error(fault: Fault, jobs: list[Job], where: str) -> FaultError:
    """The one line that says a fault matches nothing, with what the jobs hold for its keys."""
    fields = [job_fields(job, {}) for job in jobs]
    held = []
    for key in fault.when:
        values = sorted({f[key][:60] for f in fields if key in f})
        if values:
            shown = ", ".join(values[:6]) + (f", ... ({len(values)} values)" if len(values) > 6 else "")
            held.append(f"{key}: {shown}{did_you_mean(fault.when[key], values)}")
    return FaultError(f"{ENV}: {fault.text!r} matches no job {where}"
                      + (f" ({'; '.join(held)})" if held else "") + "; it would change nothing")


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
