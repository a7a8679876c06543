"""Explicit registration of reference ops by (op type, version), and ``evaluate``.

``@register("GRUSequence", 5)`` records a function; a second registration of the same key
is refused.  One rule picks a version: the highest registered version not above the one
asked for (None asks for the highest).  A registered function's positional parameters are
the op's input ports (a default other than ``REQUIRED`` makes a port optional) and its keyword-only parameters
are the op's attributes (no default, or ``REQUIRED``: required), so ``evaluate`` checks the input count and
the attribute names against the function itself before calling it.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from irtool.errors import InputError, IrtoolBug
from irtool.reference.checks import REQUIRED, direction, flag, hidden_size
from irtool.specs import get_spec

Op = Callable[..., tuple[np.ndarray, ...]]
_PASS_THROUGH = ("accumulate",)


@dataclass(frozen=True)
class Registered:
    op_type: str
    version: int
    function: Op
    ports: tuple[str, ...]
    required_ports: int
    attributes: tuple[str, ...]
    required_attributes: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.op_type}-{self.version}"


_REGISTRY: dict[str, dict[int, Registered]] = {}


def _required(parameter: inspect.Parameter) -> bool:
    return parameter.default is parameter.empty or parameter.default is REQUIRED


def _describe(op_type: str, version: int, function: Op) -> Registered:
    parameters = inspect.signature(function).parameters.values()
    positional = [p for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    keywords = [p for p in parameters if p.kind is p.KEYWORD_ONLY and p.name not in _PASS_THROUGH]
    return Registered(op_type, version, function,
                      ports=tuple(p.name for p in positional),
                      required_ports=sum(map(_required, positional)),
                      attributes=tuple(p.name for p in keywords),
                      required_attributes=tuple(p.name for p in keywords if _required(p)))


def register(op_type: str, version: int) -> Callable[[Op], Op]:
    """Decorator: record ``function`` as the reference of ``op_type``-``version``."""
    def decorate(function: Op) -> Op:
        versions = _REGISTRY.setdefault(op_type, {})
        if version in versions:
            raise IrtoolBug(f"{op_type}-{version} is registered twice "
                               f"({versions[version].function.__qualname__} and {function.__qualname__})")
        versions[version] = _describe(op_type, version, function)
        return function
    return decorate


def registered() -> list[str]:
    """Every registered op as "Type-version", sorted."""
    return sorted(r.key for versions in _REGISTRY.values() for r in versions.values())


def lookup(op_type: str, version: int | None = None) -> Registered:
    """The highest registered version of ``op_type`` not above ``version`` (None: the highest)."""
    versions = _REGISTRY.get(op_type)
    if not versions:
        raise InputError(f"no reference implementation for op type {op_type!r}; implemented: {', '.join(registered())}")
    usable = [v for v in versions if version is None or v <= version]
    if not usable:
        raise InputError(f"no reference implementation for {op_type} at version {version} or below; "
                         f"implemented versions: {', '.join(map(str, sorted(versions)))}")
    return versions[max(usable)]


def _bind_inputs(op: Registered, inputs: Sequence[Any]) -> list[Any]:
    if not op.required_ports <= len(inputs) <= len(op.ports):
        count = str(len(op.ports)) if op.required_ports == len(op.ports) else f"{op.required_ports} to {len(op.ports)}"
        raise InputError(f"{op.key} takes {count} inputs ({', '.join(op.ports)}); got {len(inputs)}")
    return [*inputs, *([None] * (len(op.ports) - len(inputs)))]


def _check_attribute_names(op: Registered, attributes: Mapping[str, Any]) -> None:
    unknown = sorted(set(attributes) - set(op.attributes))
    if unknown:
        raise InputError(f"{op.key} has no attribute {unknown[0]!r}; its attributes are {', '.join(op.attributes)}")
    missing = [name for name in op.required_attributes if attributes.get(name) is None]
    if missing:
        raise InputError(f"{op.key} requires attribute {missing[0]!r}")


def _spec_checked(op: Registered, inputs: Sequence[Any], attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Fill the spec's defaults and check the input shapes against the spec (irtool.specs).

    The spec is the single description of the op's ports and dims; an op without a spec
    file is still checked by its own function.  Attribute values are left to the function,
    which also accepts ONNX's extra activations.
    """
    try:
        spec = get_spec(op.op_type, op.version)
    except KeyError:
        return dict(attributes)
    filled = spec.fill_defaults(attributes)
    typed = dict(filled, hidden_size=hidden_size(filled.get("hidden_size")))  # the values that size dims
    if "direction" in filled:
        direction(filled["direction"])
        typed["direction"] = str(filled["direction"]).strip().lower()
    if "linear_before_reset" in filled:
        typed["linear_before_reset"] = flag("linear_before_reset", filled["linear_before_reset"])
    spec.check_shapes(typed, [None if a is None else np.shape(a) for a in inputs])
    return filled


def evaluate(op_type: str, inputs: Sequence[Any], attributes: Mapping[str, Any], version: int | None = None,
             *, accumulate: Any = None) -> tuple[np.ndarray, ...]:
    """Run the reference of ``op_type`` on ``inputs`` (port order) with ``attributes`` (spec names).

    ``accumulate="float64"`` computes in float64; outputs keep the inputs' dtype.  Bad input
    raises one ValueError naming the input or attribute and what was expected.
    """
    op = lookup(op_type, version)
    bound = _bind_inputs(op, inputs)
    _check_attribute_names(op, attributes)
    filled = _spec_checked(op, bound, attributes)
    outputs = op.function(*bound, **filled, accumulate=accumulate)
    if not isinstance(outputs, tuple) or not all(isinstance(o, np.ndarray) for o in outputs):
        raise IrtoolBug(f"the reference of {op.key} returned {type(outputs).__name__}, "
                           "not a tuple of arrays")
    return outputs
