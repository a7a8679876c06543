"""Coverage: which implementations a run reached, per op, device and release, and the conditions
that led to each (irtool.jobs.conditions: static or dynamic shapes, where sequence_lengths and
the weights came from, what the lengths held).  A suite's ``expect_coverage`` (or
``--expect-coverage``) names implementations a run must reach; one it did not is a failure.

An implementation here is a runtime layer type (``RNNSeq``, ``TensorIterator``), read from a
result's description of what ran (irtool.runtime.what_ran): a node split per direction counts
under each direction's kind.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from irtool.core.errors import IrtoolError, did_you_mean
from irtool.jobs.records import CaseResult
from irtool.runtime.what_ran import CPU_LAYER_TYPES, direction_parts

RAN = ("pass", "fail", "xfail", "xpass")  # verdicts of jobs whose device ran the model
_KIND = re.compile(r"^([A-Za-z0-9_]+(?:\+[A-Za-z0-9_]+)*)")


NOT_CHECKED = "expect_coverage not checked: no job that ran reported its implementation"


class CoverageError(IrtoolError):
    """An expected implementation written so that it cannot be matched."""


@dataclass(frozen=True)
class CoverageRow:
    op: str
    device: str
    release: str
    implementation: str
    nodes: int  # node results that ran so (one per job for a single-op case)
    conditions: tuple[tuple[tuple[tuple[str, str], ...], int], ...]  # each set of conditions -> nodes, most first

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "device": self.device, "release": self.release, "implementation": self.implementation,
                "nodes": self.nodes, "conditions": [{**dict(items), "nodes": count}
                                                  for items, count in self.conditions]}

    def by_key(self) -> dict[str, Counter]:
        """Each condition's values with their node counts (shapes: static 24, dynamic 28)."""
        found: dict[str, Counter] = {}
        for items, count in self.conditions:
            for key, value in items:
                found.setdefault(key, Counter())[value] += count
        return found


def kinds(description: str) -> tuple[str, ...]:
    """The runtime layer types of a description: ``RNNSeq (f32)`` -> RNNSeq; ``forward: RNNSeq (f32);
    reverse: TensorIterator (f32; decomposed)`` -> RNNSeq, TensorIterator; ``in TensorIterator`` (a
    node in a body) -> TensorIterator; ``not reported`` -> none."""
    if description == "not reported":
        return ()
    if description.startswith("in "):  # a node in a body: the layer its container ran as
        description = description[len("in "):]
    found = [match.group(1) for match in map(_KIND.match, direction_parts(description)) if match]
    return tuple(dict.fromkeys(found))


ORDER = ("shapes", "direction", "sequence_lengths", "weights")


def _ordered(conditions: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    keys = [k for k in ORDER if k in conditions] + sorted(set(conditions) - set(ORDER))
    return tuple((key, conditions[key]) for key in keys)


def conditions_text(items: Sequence[tuple[str, str]]) -> str:
    """``static; direction forward; sequence_lengths const full; weights const``."""
    return "; ".join(value if key == "shapes" else f"{key} {value}" for key, value in items) or "-"


def coverage(results: Iterable[CaseResult]) -> list[CoverageRow]:
    """One row per op, device, release and implementation reached, with the conditions of the
    nodes that ran so; linear in the results."""
    nodes: Counter = Counter()
    conditions: dict[tuple[str, str, str, str], Counter] = {}
    for result in results:
        if result.verdict not in RAN:
            continue
        for node, description in result.implementations.items():
            op = result.op or "?"
            items = _ordered(result.conditions.get(node, {}))
            for kind in kinds(description):
                key = (op, result.device, result.release, kind)
                nodes[key] += 1
                conditions.setdefault(key, Counter())[items] += 1
    return [CoverageRow(*key, nodes[key], tuple(conditions[key].most_common())) for key in sorted(nodes)]


def parse_expected(items: Sequence[str], where: str,
                   ops: Iterable[str] | None = None) -> list[tuple[str | None, str]]:
    """``KIND`` (any op) or ``OP:KIND`` (``GRUSequence`` or ``GRUSequence-5``) items, checked before
    a run: the op must be one irtool knows (in a version it has) and, given ``ops`` (the op types
    of the run's cases; None: not known, a model file among them), one of those; a kind written
    as one of the CPU's layer types in another case is a typo.  A kind irtool does not know stays
    allowed: another device names its layer types otherwise."""
    parsed = []
    for item in items:
        op, sep, kind = item.rpartition(":")
        if not kind or not re.fullmatch(r"[A-Za-z0-9_]+", kind) or (sep and not re.fullmatch(r"[A-Za-z0-9_-]+", op)):
            raise CoverageError(f"{where}: {item!r}: expected an implementation such as RNNSeq, or OP:IMPLEMENTATION "
                                f"such as GRUSequence:RNNSeq")
        same = [known for known in CPU_LAYER_TYPES if known.lower() == kind.lower() and known != kind]
        if same:
            raise CoverageError(f"{where}: {item!r}: {kind}: did you mean {same[0]}? (the CPU's layer types are "
                                f"{', '.join(CPU_LAYER_TYPES)})")
        if op:
            _check_op(op, item, where, ops)
        parsed.append((op or None, kind))
    return parsed


def _check_op(op: str, item: str, where: str, ops: Iterable[str] | None) -> None:
    """CoverageError unless ``op`` (``GRUSequence``, ``GRUSequence-5``) is an op irtool knows, in a
    version it has, and (given ``ops``) one the run's cases have."""
    from irtool.specs import registry

    name, _, version = op.rpartition("-") if re.fullmatch(r".+-[0-9]+", op) else (op, "", "")
    types = registry().types()
    if name not in types:
        raise CoverageError(f"{where}: {item!r}: no op {name}{did_you_mean(name, types)}")
    versions = [spec.key for spec in registry().versions(name)]
    if version and registry().get(name, int(version)) is None:
        raise CoverageError(f"{where}: {item!r}: no version {version} of {name} (its versions: {', '.join(versions)})")
    if ops is not None:
        ops = sorted(set(ops))
        if name not in ops:
            raise CoverageError(f"{where}: {item!r}: no case of {name} in the suites; expect_coverage can name "
                                f"{', '.join(ops) or 'no op (no case is one op)'}")


def missing(rows: Sequence[CoverageRow], expected: Sequence[tuple[str | None, str]]) -> list[str]:
    """Each expected implementation that no job of the run reached, said in one line."""
    said = []
    for op, kind in expected:
        if not any(row.implementation == kind and (op is None or row.op == op or row.op.rpartition("-")[0] == op)
                   for row in rows):
            said.append(f"no job{' of ' + op if op else ''} ran as {kind}")
    return said


def render_text(rows: Sequence[CoverageRow]) -> list[str]:
    """The coverage for a terminal, one line per op and device (and release, where a run has
    several): each implementation reached with its node count; the conditions that led to each
    are in results.json and report.html."""
    if not rows:
        return []
    releases = len({row.release for row in rows}) > 1
    grouped: dict[tuple[str, str, str], list[CoverageRow]] = {}
    for row in rows:
        grouped.setdefault((row.op, row.device, row.release), []).append(row)
    lines = ["coverage (nodes per implementation reached; the conditions of each: report.html, results.json):"]
    for (op, device, release), each in grouped.items():
        where = f"{op} on {device}" + (f" ({release})" if releases else "")
        lines.append(f"  {where}: " + ", ".join(f"{row.implementation} {row.nodes}" for row in each))
    return lines
