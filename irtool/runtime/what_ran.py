"""What a device really ran for each recurrent node: read from the compiled model's runtime graph.

A plugin may run a sequence op as its own kernel or decompose it into a TensorIterator or
Loop over a cell (measured with openvino 2026.4.1 on an AMD EPYC CPU: a GRUSequence with a
static sequence length becomes a TensorIterator, one with a dynamic sequence length an
RNNSeq kernel).  Such a change gives the same numbers and another speed, so it is recorded
with every run: the runtime layers whose ``originalLayersNames`` name the node, with their
``layerType``, ``execType`` (where the plugin reports one) and ``runtimePrecision``.  A node
the plugin splits (a bidirectional sequence becomes one kernel per direction under new
names) is found only through the layers named after its outputs (``NAME.0``): that is said,
never passed off as its kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

DECOMPOSED = ("TensorIterator", "Loop")
SPLIT = "split; only its outputs are named ("  # how describe() starts for a split node (results store it)


def in_plain_words(described: str, device: str) -> tuple[str, str | None]:
    """What :meth:`Implementation.describe` said, for people: a short form for a table's column,
    and the explanation it needs, if any (None).  The stored text stays as it is: results and
    baselines compare it."""
    if described.startswith(SPLIT):
        kinds = described[len(SPLIT):].rstrip(")")
        return "split in parts", (f"{device} split the node into parts under new names (a bidirectional node: "
                                  f"one per direction); the implementation of each part is not reported, only "
                                  f"the {kinds} that joins their outputs")
    if described == "not reported":
        return "not reported", f"{device} reports no runtime layer that carries the node's name"
    if "decomposed" in described:
        return described, ("decomposed: the node runs as a loop over a cell (TensorIterator or Loop), "
                           "not as one sequence kernel")
    return described, None


@dataclass(frozen=True)
class Implementation:
    """The runtime layers one node became."""

    layer_types: tuple[str, ...]
    exec_types: tuple[str, ...] = ()
    precisions: tuple[str, ...] = ()
    outputs_only: bool = False  # only layers named after the node's outputs carry its name

    @property
    def decomposed(self) -> bool:
        return any(kind in DECOMPOSED for kind in self.layer_types)

    def describe(self) -> str:
        """``RNNSeq (f32)``, ``TensorIterator (f32; decomposed)``, or ``not reported``."""
        if not self.layer_types:
            return "not reported"
        kinds = "+".join(dict.fromkeys(self.layer_types))
        if self.outputs_only:
            return f"{SPLIT}{kinds})"
        if self.exec_types:
            kinds += f" [{'+'.join(dict.fromkeys(self.exec_types))}]"
        details = list(dict.fromkeys(self.precisions)) + (["decomposed"] if self.decomposed else [])
        return f"{kinds} ({'; '.join(details)})" if details else kinds


def what_ran(compiled: Any, names: Sequence[str]) -> Mapping[str, Implementation]:
    """For each node name, the runtime layers that carry it (empty where the device reports no
    runtime graph: a virtual device may not)."""
    try:
        runtime = compiled.get_runtime_model()
    except RuntimeError:
        return {name: Implementation(()) for name in names}
    own: dict[str, list[tuple[str, str, str]]] = {name: [] for name in names}
    outputs: dict[str, list[tuple[str, str, str]]] = {name: [] for name in names}
    for op in runtime.get_ordered_ops():
        info = op.get_rt_info()
        layer = (_text(info, "layerType"), _text(info, "execType"), _text(info, "runtimePrecision"))
        for original in _text(info, "originalLayersNames").split(","):
            base, dot, index = original.rpartition(".")
            if original in own:
                own[original].append(layer)
            elif dot and index.isdigit() and base in outputs:
                outputs[base].append(layer)
    return {name: _implementation(own[name] or outputs[name], outputs_only=not own[name]) for name in names}


def _implementation(layers: list[tuple[str, str, str]], outputs_only: bool) -> Implementation:
    return Implementation(tuple(t for t, _, _ in layers if t), tuple(e for _, e, _ in layers if e),
                          tuple(p for _, _, p in layers if p), outputs_only and bool(layers))


def _text(info: Any, key: str) -> str:
    if key not in info:
        return ""
    value = info[key]
    return value.astype(str) if hasattr(value, "astype") else str(value)
