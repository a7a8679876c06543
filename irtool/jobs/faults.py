"""Fault injection, to test what the harness and ``reduce`` do when a plugin crashes or hangs.

``IRTOOL_FAULT`` holds faults separated by ``;``, each ``ACTION:KEY=VALUE,...``.  A worker
about to run a job whose fields all match a fault does ACTION instead: ``abort``
(SIGABRT, as a failed assertion in a plugin), ``segfault`` (SIGSEGV), ``hang`` (sleeps
past any timeout) or ``exit`` (exit code 3).  Three more run the job but change what it
finds, each a regression for the baseline diff to catch: ``slow:SECONDS`` (also
``slow:SECONDS,KEY=VALUE``) sleeps SECONDS inside its compile step, which the job's compile
time then includes; ``skew:DELTA`` adds DELTA to every value of every output the device
returns (accuracy drift, or a failure when DELTA is past the tolerance; meant for single-op
cases: a whole model's probed node outputs are shifted too, and with them the inputs of the
nodes they feed); ``impl:TEXT`` records TEXT as what the device ran for every recurrent node
(a changed implementation; the device runs what it always runs).  These three add up across
the faults that match; the first matching fault of the others ends the worker.  Keys: ``case`` (a glob on the case id),
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

import dataclasses
import math
import os
import signal
import time
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from irtool.core.errors import IrtoolError, did_you_mean
from irtool.core.globs import glob_matches
from irtool.jobs.records import Job
from irtool.specs.values import format_value

ENV = "IRTOOL_FAULT"
ACTIONS = ("abort", "segfault", "hang", "exit", "slow", "skew", "impl")
CHANGES = ("slow", "skew", "impl")  # the actions that let the job run
JOB_KEYS = ("case", "device", "precision", "op", "openvino")  # besides an op's attributes and sizes


class FaultError(IrtoolError):
    """An IRTOOL_FAULT value that cannot be read."""


@dataclass(frozen=True)
class Fault:
    action: str
    when: Mapping[str, str]
    seconds: float = 0.0  # slow: how long compile sleeps; skew: what is added to the outputs
    text: str = ""  # impl: the implementation recorded
    written: str = ""  # as written in IRTOOL_FAULT

    def may_match(self, job: Job) -> bool:
        """Whether the fault can match the job, judged on the fields known before its model is
        read: a key the job does not hold yet (an IR file's attribute) may still match."""
        fields = job_fields(job, {})
        for key, want in self.when.items():
            have = fields.get(key)
            if have is not None and not (glob_matches(want, have) if key == "case" else have == want):
                return False
        return True

    def matches(self, job: Job, found: Mapping[str, Any] | None = None) -> bool:
        fields = job_fields(job, found or {})
        for key, want in self.when.items():
            have = fields.get(key)
            if have is None or not (glob_matches(want, have) if key == "case" else have == want):
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
        seconds, what = 0.0, ""
        if action in ("slow", "skew"):
            try:
                seconds = float(parts.pop(0)) if parts else math.nan
            except ValueError:
                seconds = math.nan
            if action == "slow" and not 0 < seconds < 3600:
                raise FaultError(f"{ENV}={text!r}: slow takes seconds first (0 < S < 3600), "
                                 "e.g. slow:2,op=GRUSequence-5")
            if action == "skew" and not (math.isfinite(seconds) and seconds != 0):
                raise FaultError(f"{ENV}={text!r}: skew takes the number to add first (finite, not 0), "
                                 "e.g. skew:1e-5,direction=forward")
        if action == "impl":
            what = parts.pop(0) if parts and "=" not in parts[0] else ""
            if not what:
                raise FaultError(f"{ENV}={text!r}: impl takes the implementation to record first, "
                                 "e.g. impl:TensorIterator (f32),direction=forward (no comma or semicolon in TEXT)")
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
        faults.append(Fault(action, when, seconds, what, item))
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
    return FaultError(f"{ENV}: {fault.written!r} matches no job {where}"
                      + (f" ({'; '.join(held)})" if held else "") + "; it would change nothing")


def faults_from_environment() -> list[Fault]:
    return parse_faults(os.environ.get(ENV, ""))


@dataclass(frozen=True)
class Changes:
    """What the matching ``slow``, ``skew`` and ``impl`` faults do to a job that runs."""

    slow: float = 0.0  # seconds its compile sleeps
    skew: float = 0.0  # added to every output value
    implementation: str | None = None  # recorded as what ran for every recurrent node


def inject(faults: list[Fault], job: Job, found: Mapping[str, Any] | None = None) -> Changes:
    """Do the first matching fault's action if it ends the worker (this then never returns); the
    matching ``slow``, ``skew`` and ``impl`` faults before it are returned, for the job to apply."""
    slow = skew = 0.0
    implementation = None
    for fault in faults:
        if fault.matches(job, found):
            if fault.action not in CHANGES:
                _do(fault.action)
            slow += fault.seconds if fault.action == "slow" else 0.0
            skew += fault.seconds if fault.action == "skew" else 0.0
            implementation = fault.text if fault.action == "impl" else implementation
    return Changes(slow, skew, implementation)


def skewed(executed: Any, skew: float) -> Any:
    """An execution's outputs (irtool.pipeline.device_run.Executed) with ``skew`` added to every floating value."""
    if not skew:
        return executed

    def shift(arrays: list) -> list:
        return [a + np.asarray(skew, dtype=a.dtype) if np.issubdtype(a.dtype, np.floating) else a for a in arrays]

    outputs = shift(executed.outputs)
    captured = outputs if executed.captured is executed.outputs else shift(executed.captured)
    return dataclasses.replace(executed, outputs=outputs, captured=captured)


def _do(action: str) -> None:  # pragma: no cover - the process ends here
    if action == "abort":
        os.abort()
    if action == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if action == "exit":
        os._exit(3)
    while True:
        time.sleep(3600)
