"""Names made unique: a model may repeat a node name (ONNX allows two nodes of one name, in one
graph or in two branches; so does IR), while every node's result is keyed by its name (results,
reports, baseline diffs, reproducers, ``--atol NODE:OUTPUT``)."""
from __future__ import annotations

from typing import Sequence


def unique_names(names: Sequence[str]) -> list[str]:
    """The names, each made one of its own: the first of a name keeps it; a later one is ``name#2``,
    ``name#3`` by its position (a name the list holds itself is skipped)."""
    taken = set(names)
    seen: set[str] = set()
    unique = []
    for name in names:
        if name in seen:
            count = 2
            while f"{name}#{count}" in taken:
                count += 1
            name = f"{name}#{count}"
            taken.add(name)
        seen.add(name)
        unique.append(name)
    return unique
