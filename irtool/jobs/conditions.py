"""What decides the implementation a device picks for a node, read from the node as it ran:
whether its shapes are static, where its sequence lengths and weights come from, and what the
lengths hold (measured with openvino 2026.4.1: the CPU runs a static sequence op as its native
RNNSeq only when sequence_lengths is a Const of full lengths).  Recorded with each result, so
that a report can say which conditions led to each implementation (irtool.harness.coverage)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from irtool.specs.model import WEIGHT_ROLES


def node_conditions(node: Any, arrays: Sequence[np.ndarray]) -> dict[str, str]:
    """``shapes`` (static or dynamic), ``sequence_lengths`` (its source and content: full,
    ragged or zero), ``weights`` (their sources) and ``direction``, for a node with its input
    arrays in port order (irtool.runtime.captured.input_arrays)."""
    feeds = list(node.feeds)
    conditions = {"shapes": "dynamic" if any(feed.dynamic for feed in feeds) else "static"}
    by_role = {feed.port.role: (feed, array) for feed, array in zip(feeds, arrays)}
    if "lengths" in by_role and "data" in by_role:
        feed, lengths = by_role["lengths"]
        data_feed, data = by_role["data"]
        axis = node.spec.time_axis(data_feed.port)
        steps = data.shape[axis] if axis is not None and axis < data.ndim else None
        conditions["sequence_lengths"] = f"{_source(feed)} {_content(np.asarray(lengths), steps)}"
    weights = [(feed.port.name, _source(feed)) for feed in feeds if feed.port.role in WEIGHT_ROLES]
    if weights:
        kinds = {source for _, source in weights}
        conditions["weights"] = kinds.pop() if len(kinds) == 1 else ", ".join(f"{n} {s}" for n, s in weights)
    direction = node.attributes.get("direction") if isinstance(node.attributes, Mapping) else None
    if direction:
        conditions["direction"] = str(direction)
    return conditions


def _source(feed: Any) -> str:
    return "const" if feed.constant is not None else "parameter" if feed.parameter is not None else "computed"


def _content(lengths: np.ndarray, steps: int | None) -> str:
    if lengths.size and not lengths.any():
        return "zero"
    if steps is not None and lengths.size and bool(np.all(lengths == steps)):
        return "full"
    return "ragged"
