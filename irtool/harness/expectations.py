"""Known failures: a TOML file that turns a failure it names into XFAIL, and reports XPASS
when such a case passes again.

    [[xfail]]
    case = "gru-dyn[*]"       # a glob on the case id (only * and ? are wildcards)
    device = "CPU"            # glob, default "*"
    precision = "*"           # glob, default "*"
    openvino = "2026.*"       # glob on the release (2026.4.1), default "*"
    verdict = "fail"          # the failure it is: fail (default), error, crash, timeout, or several
    reason = "CPU ignores sequence_lengths with Const weights and a dynamic dim"
    issue = "https://github.com/openvinotoolkit/openvino/issues/..."   # optional

An entry covers only the failure it names: a case known to give wrong numbers (fail) that
crashes or stops with an error instead is that crash or error, not a known failure (measured:
openvino 2024.6.0's CPU cannot compile the ONNX LSTMs with peepholes or input_forget=1 that
2026.4.1 runs with wrong numbers).

A model's job gives one result per recurrent node (case ``MODEL[seed=0]::NODE``).  A pattern
that names the model's case (``gru_lengths[*]``) covers the failures of its nodes too; a node
of it that passes stays a pass (the entry names the model, and this node is not what fails),
and an entry whose models' nodes all passed is named in a note, to be removed.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from irtool.core.documents import load_toml
from irtool.core.errors import IrtoolError, did_you_mean
from irtool.core.files import read_text
from irtool.core.globs import glob_matches
from irtool.jobs.records import FAILED, PASS, XFAIL, XPASS, CaseResult

KEYS = frozenset({"case", "device", "precision", "openvino", "verdict", "reason", "issue"})


class ExpectationsError(IrtoolError):
    """A known-failures file that cannot be read."""


@dataclass(frozen=True)
class Expected:
    case: str
    device: str = "*"
    precision: str = "*"
    reason: str = ""
    issue: str | None = None
    openvino: str = "*"
    verdict: str = "fail"
    source: str = field(default="", compare=False)  # the known-failures file it was read from

    @property
    def verdicts(self) -> tuple[str, ...]:
        return tuple(v.strip() for v in self.verdict.split(",") if v.strip())

    def matches(self, result: CaseResult) -> bool:
        return self.match(result) is not None

    def match(self, result: CaseResult) -> str | None:
        """How the entry names the result: "case" (its case id), "job" (a node's result, through its
        model's case id: ``gru_lengths[*]`` for ``gru_lengths[seed=0]::GRU_1``), or None."""
        if not (glob_matches(self.device, result.device) and glob_matches(self.precision, result.precision)
                and glob_matches(self.openvino, result.release)):
            return None
        if glob_matches(self.case, result.case):
            return "case"
        return "job" if result.node and glob_matches(self.case, result.job_key[0]) else None


def load_expectations(path: str | Path) -> list[Expected]:
    path = Path(path)
    try:
        data = load_toml(read_text(path, "known-failures file"))
    except tomllib.TOMLDecodeError as error:
        raise ExpectationsError(f"{path}: not valid TOML: {error}") from None
    entries = data.get("xfail", [])
    if set(data) - {"xfail"} or not isinstance(entries, list):
        raise ExpectationsError(f"{path}: expected only [[xfail]] tables")
    expected = []
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise ExpectationsError(f"{path}: xfail entry {number} is {entry!r:.40}; expected an [[xfail]] table "
                                    f"with case and reason")
        unknown = sorted(set(entry) - KEYS)
        if unknown:
            raise ExpectationsError(f"{path}: [[xfail]] {number}: unknown key {unknown[0]!r}"
                                    f"{did_you_mean(unknown[0], KEYS)}; "
                                    f"expected {', '.join(sorted(KEYS))}")
        if not isinstance(entry.get("case"), str) or not isinstance(entry.get("reason"), str):
            raise ExpectationsError(f"{path}: [[xfail]] {number}: 'case' (a glob) and 'reason' are required")
        if not all(isinstance(entry.get(k, ""), str) for k in KEYS):
            raise ExpectationsError(f"{path}: [[xfail]] {number}: every value is a string")
        made = Expected(**entry, source=str(path))
        wrong = [v for v in made.verdicts if v not in FAILED] or ([] if made.verdicts else [made.verdict])
        if wrong:
            raise ExpectationsError(f"{path}: [[xfail]] {number}: verdict {wrong[0]!r}; expected one or more of "
                                    f"{', '.join(sorted(FAILED))}, comma-separated")
        expected.append(made)
    return expected


def apply(expected: Sequence[Expected], result: CaseResult) -> CaseResult:
    """The result with a known failure as XFAIL and a known failure that passed as XPASS.

    What the job found stays in the result (``raw_verdict`` and ``raw_message``, set where an
    entry matched), and any entry applied before is taken back first: applying another file
    (``--resume`` after the file was edited, ``irtool report render --xfail``) gives the verdicts
    that file says, whatever the results were reported with before."""
    raw(result)
    entry, how = next(((e, how) for e in expected if (how := e.match(result)) is not None), (None, None))
    if entry is None or not (result.verdict in FAILED or result.verdict == PASS):
        return result
    if how == "job" and result.verdict == PASS:  # a node of the model the entry names that is not what fails
        return result
    result.known, result.raw_verdict, result.raw_message = entry.reason, result.verdict, result.message
    if result.verdict in FAILED and result.verdict not in entry.verdicts:  # another failure than the known one
        result.message = (f"{result.message} (not the known failure of this case, which is verdict "
                          f"{entry.verdict}: {entry.reason})")
    elif result.verdict in FAILED:
        result.message = f"{entry.reason} (known failure; {result.verdict}: {result.message})"
        result.verdict, result.issue = XFAIL, entry.issue
    else:
        result.message = f"known to fail ({entry.reason}) but passed: remove it from the known failures"
        result.verdict, result.issue = XPASS, entry.issue
    return result


def unmatched(expected: Sequence[Expected], results: Iterable[CaseResult]) -> list[str]:
    """A note for each entry that matches no result of a run (a typo in its glob, a case since
    renamed, or a device not run now: a note, not an error), naming the entry and its file."""
    left = list(dict.fromkeys(expected))
    passed_nodes: set[Expected] = set()  # entries that named only models whose every node passed
    for result in results:
        if not left:
            break
        still = []
        for entry in left:
            how = entry.match(result)
            if how == "job" and (result.raw_verdict or result.verdict) == PASS:
                passed_nodes.add(entry)
                still.append(entry)
            elif how is None:
                still.append(entry)
        left = still
    notes = []
    for entry in left:
        where = [f"{key} {getattr(entry, key)}" for key in ("device", "precision", "openvino")
                 if getattr(entry, key) != "*"]
        found = ("names models whose every node passed in this run: remove it from the known failures"
                 if entry in passed_nodes else "matched no job of this run")
        notes.append(f"known failure {entry.case!r}{' (' + ', '.join(where) + ')' if where else ''} "
                     f"({entry.source or 'known-failures file'}) {found}")
    return notes


def raw(result: CaseResult) -> CaseResult:
    """The result as its job found it: a known-failures entry applied to it taken back.  (A result
    stored by an older irtool, without ``raw_verdict``, keeps the xfail or xpass it was stored with.)"""
    if result.raw_verdict is not None:
        result.verdict, result.message = result.raw_verdict, result.raw_message or ""
        result.issue = result.known = result.raw_verdict = result.raw_message = None
    return result
