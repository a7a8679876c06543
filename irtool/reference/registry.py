"""Explicit registration of reference ops by (op type, version), and ``evaluate``.

``@register("GRUSequence", 5)`` records a function; a second registration of the same key
is refused.  One rule picks a version: the highest registered version not above the one
asked for (None asks for the highest).  A registered function's positional parameters are
the op's input ports (a default other than ``REQUIRED`` makes a port optional) and its keyword-only parameters
are the op's attributes (no default, or ``REQUIRED``: required), so ``evaluate`` checks the input count and
the attribute names against the function itself before calling it.

The decorator returns the function wrapped in the op's spec check (:func:`_spec_checked`): every
call, direct or through ``evaluate``, has its input shapes checked once, by the spec file
(irtool.specs.check_shapes), and gets the spec's defaults; the function itself checks only what
the spec does not say (dtypes, sequence length values, attribute values it computes with).
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from irtool.core.errors import InputError, IrtoolBug
from irtool.reference.checks import REQUIRED, choice, flag, positive_int
from irtool.specs import check_shapes, get_spec
from irtool.specs.model import SpecMismatch

Op = Callable[..., tuple[np.ndarray, ...]]
_PASS_THROUGH = ("accumulate", "rounding", "given_states")


@dataclass(frozen=True)
class Registered:
    op_type: str
    version: int
    function: Op  # the public function: ``core`` behind the spec's check
    core: Op  # the function as written, which only computes (and checks what the spec does not say)
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


def _describe(op_type: str, version: int, function: Op, core: Op) -> Registered:
    parameters = inspect.signature(core).parameters.values()
    positional = [p for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
    keywords = [p for p in parameters if p.kind is p.KEYWORD_ONLY and p.name not in _PASS_THROUGH]
    return Registered(op_type, version, function, core,
                      ports=tuple(p.name for p in positional),
                      required_ports=sum(map(_required, positional)),
                      attributes=tuple(p.name for p in keywords),
                      required_attributes=tuple(p.name for p in keywords if _required(p)))


def _run(op: Registered, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[np.ndarray, ...]:
    """Call an op's core as Python would (its own TypeError for a call that does not bind), after the
    spec's check of the input shapes, with the spec's defaults for omitted attributes."""
    given = inspect.signature(op.core).bind(*args, **kwargs).arguments
    inputs = [given.get(name) for name in op.ports]
    filled = _spec_checked(op, inputs, {name: given[name] for name in op.attributes if name in given})
    return op.core(*inputs, **filled, **{name: given[name] for name in _PASS_THROUGH if name in given})


def register(op_type: str, version: int) -> Callable[[Op], Op]:
    """Decorator: record ``function`` as the reference of ``op_type``-``version``.

    Returns it wrapped in the check of its spec (once: a function registered for two versions
    is one public function, checked by the spec of the highest)."""
    def decorate(function: Op) -> Op:
        versions = _REGISTRY.setdefault(op_type, {})
        core = inspect.unwrap(function)
        if version in versions:
            raise IrtoolBug(f"{op_type}-{version} is registered twice "
                               f"({versions[version].core.__qualname__} and {core.__qualname__})")
        public = function if function is not core else _public(op_type, core)
        versions[version] = _describe(op_type, version, public, core)
        return public
    return decorate


def _public(op_type: str, core: Op) -> Op:
    @functools.wraps(core)
    def checked(*args: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        op = max((r for r in _REGISTRY[op_type].values() if r.core is core), key=lambda r: r.version)
        return _run(op, args, kwargs)
    return checked


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
    """The attributes with the spec's defaults filled (those the function takes), after checking the
    input shapes against the spec (irtool.specs): the one description of the op's ports and dims.

    The attributes that size dims (OpSpec.shape_attributes) are read as the reference reads
    them (hidden_size 5.0, direction "FORWARD", linear_before_reset "1"); the function checks
    the others' values, and also accepts ONNX's extra activations.
    """
    try:
        spec = get_spec(op.op_type, op.version)
    except KeyError:  # an op without a spec file is checked by its own function
        return dict(attributes)
    filled = {name: value for name, value in spec.fill_defaults(attributes).items() if name in op.attributes}
    typed = dict(filled)
    for name in spec.shape_attributes:  # the values that size dims, checked before any shape
        attribute, value = spec.attributes[name], filled.get(name)
        if attribute.type == "int":
            typed[name] = positive_int(name, value)
        elif attribute.allowed is not None:
            typed[name] = choice(name, value, attribute.allowed)
        elif attribute.type == "bool" and name in filled:
            typed[name] = flag(name, value)
    for port, value in zip(spec.inputs, inputs):
        if (value is None or value is REQUIRED) and not port.optional:
            raise InputError(f"{port.name} is missing; it is a required input")
    present = list(inputs)
    while present and present[-1] is None:
        present.pop()
    try:
        check_shapes(spec, typed, [None if a is None else np.shape(a) for a in present])
    except SpecMismatch as error:
        raise InputError(str(error)) from None  # the reference's one error type
    return filled


def evaluate(op_type: str, inputs: Sequence[Any], attributes: Mapping[str, Any], version: int | None = None,
             *, accumulate: Any = None, rounding: Any = None, given_states: Any = None) -> tuple[np.ndarray, ...]:
    """Run the reference of ``op_type`` on ``inputs`` (port order) with ``attributes`` (spec names).

    ``accumulate="float64"`` computes in float64; outputs keep the inputs' dtype.  ``rounding``
    (irtool.reference.rounding.Rounding) rounds where a device does; ``given_states`` (a sequence
    op's: a device's Y) starts each step from that run's previous hidden state.  Bad input raises one
    ValueError naming the input or attribute and what was expected.
    """
    op = lookup(op_type, version)
    bound = _bind_inputs(op, inputs)
    _check_attribute_names(op, attributes)
    extra = {"given_states": given_states} if given_states is not None else {}
    outputs = _run(op, bound, {**attributes, "accumulate": accumulate, "rounding": rounding, **extra})
    if not isinstance(outputs, tuple) or not all(isinstance(o, np.ndarray) for o in outputs):
        raise IrtoolBug(f"the reference of {op.key} returned {type(outputs).__name__}, "
                           "not a tuple of arrays")
    return outputs
