"""A concrete case: one recurrent op with the array of every input port.

Unlike an :class:`irtool.specs.cases.OpCase` (sizes and a seed), a concrete case holds the data
itself: a node of any model with the inputs the device gave it (a node's reproducer), and
what reduce shrinks, so a candidate is the failing case with parts cut away, not a new
random case.
Ports fed by Consts in the original stay Consts, the others are model inputs named after
the spec's ports, and a dim the original model left dynamic stays dynamic.
"""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from irtool.core.errors import IrtoolError
from irtool.specs import OpSpec, PortSpec, check_shapes
from irtool.specs.cases import free_symbols
from irtool.specs.values import format_value

if TYPE_CHECKING:  # pragma: no cover
    import openvino as ov

    from irtool.runtime.nodes import RecurrentNode


class RebuildError(IrtoolError):
    """A concrete case that OpenVINO refuses to build, or whose arrays do not fit its op's spec."""


@dataclass(frozen=True)
class ConcreteCase:
    """One op, its attributes (spec defaults filled in) and its input arrays by port name.

    ``arrays`` holds the ports the op has, which are the first ports of the spec (a trailing
    optional port may be absent); ``constants`` names those fed by Consts; ``dynamic`` gives,
    per model-input port, the axes that the model declares dynamic.
    """

    spec: OpSpec
    attributes: Mapping[str, Any]
    arrays: Mapping[str, np.ndarray]
    constants: frozenset[str]
    dynamic: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def ports(self) -> tuple[PortSpec, ...]:
        return self.spec.inputs[:len(self.arrays)]

    @cached_property
    def symbols(self) -> dict[str, int]:
        """Every dim symbol's value (batch_size, hidden_size, ...); ValueError if the arrays do
        not fit the spec."""
        return check_shapes(self.spec, self.attributes, [self.arrays[port.name].shape for port in self.ports])

    @property
    def inputs(self) -> dict[str, np.ndarray]:
        """The arrays fed as model inputs, by input name (the port's name)."""
        return {port.name: self.arrays[port.name] for port in self.ports if port.name not in self.constants}

    @property
    def elements(self) -> int:
        return sum(int(array.size) for array in self.arrays.values())

    def replace(self, **changes: Any) -> "ConcreteCase":
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        """The sizes that reduce shrinks: ``batch_size 8, seq_length 50, ..., direction bidirectional``."""
        sizes = [f"{name} {self.symbols[name]}" for name in symbol_order(self.spec) if name in self.symbols]
        mapped = [f"{s.attribute} {self.attributes[s.attribute]}" for s in self.spec.symbols.values() if s.map]
        return ", ".join(sizes + mapped)

    def fingerprint(self) -> str:
        """Equal for equal cases: what reduce has already tried is not run again."""
        digest = hashlib.sha1(repr(sorted((k, format_value(v)) for k, v in self.attributes.items())).encode())
        for port in self.ports:
            array = np.ascontiguousarray(self.arrays[port.name])
            digest.update(f"{port.name}:{array.dtype}:{array.shape}:{port.name in self.constants}".encode())
            digest.update(array.tobytes())
        return digest.hexdigest()

    def to_model(self) -> "ov.Model":
        """The ov.Model of this case, through the op version's openvino factory."""
        from irtool.pipeline.build import BuildError, assemble, constant, parameter

        sources = []
        for port in self.ports:
            array = self.arrays[port.name]
            if port.name in self.constants:
                sources.append(constant(port.name, array))
            else:
                dynamic = self.dynamic.get(port.name, ())
                sources.append(parameter(port.name, [-1 if axis in dynamic else size
                                                     for axis, size in enumerate(array.shape)], array.dtype))
        try:
            return assemble(self.spec, sources, self.attributes)
        except BuildError as error:
            raise RebuildError(f"{error.message} (as rebuilt from the node's arrays)") from None

    def write(self, folder: Path) -> tuple[Path, Path, "ov.Model"]:
        """Write model.xml/.bin and inputs.npz into ``folder``; returns their paths and the model."""
        from irtool.core.npz import write_npz
        from irtool.pipeline.build import save_model

        model = self.to_model()
        xml, _ = save_model(model, folder / "model.xml")
        npz = folder / "inputs.npz"
        write_npz(npz, self.inputs, "inputs file")
        return xml, npz, model


def from_node(node: "RecurrentNode", arrays: Sequence[np.ndarray]) -> ConcreteCase:
    """The concrete case of a model's node on its input arrays (port order): ports fed by
    constant data stay Consts, the others become model inputs, dynamic where the node's
    input was dynamic in the model."""
    values, constants, dynamic = {}, set(), {}
    for feed, array in zip(node.feeds, arrays):
        name = feed.port.name
        values[name] = np.asarray(array)
        if feed.constant is not None:
            constants.add(name)
        elif feed.dynamic:
            dynamic[name] = feed.dynamic
    attributes = node.spec.fill_defaults(node.spec.typed_attributes(node.attributes))
    case = ConcreteCase(node.spec, attributes, values, frozenset(constants), dynamic)
    try:
        case.symbols  # noqa: B018 - the arrays must fit the spec before anything is built or cut
    except ValueError as error:
        raise RebuildError(f"node '{node.name}': {error}") from None
    return case


def symbol_order(spec: OpSpec) -> list[str]:
    """The dim symbols of an op: the free ones in the order its inputs name them (batch_size,
    seq_length, input_size), then those its attributes bind (hidden_size, num_directions)."""
    return free_symbols(spec) + [name for name in spec.symbols if name not in free_symbols(spec)]


def count_text(n: int) -> str:
    """80000 -> 80k, 2500000 -> 2.5M: element counts in the log."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.3g}M"
    if n >= 10_000:
        return f"{n / 1000:.3g}k"
    return str(n)
