"""ONNX's own description of GRU, LSTM and RNN, read from onnx's schema registry.

``onnx.defs.get_schema`` is the one source of the ops' versions, attribute names, types and
defaults, input and output names, which of them are optional, and their element types;
nothing here lists them again.  What the registry holds only as prose (the allowed values
of ``direction`` and ``layout``, ``hidden_size`` > 0, ``clip`` > 0) is checked in
``check_attributes`` too; the equations' default activations are in
irtool.onnx.semantics, the dims in irtool.onnx.shapes.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np
import onnx
from onnx import AttributeProto, defs, helper

from irtool.core.errors import did_you_mean

OPS = ("GRU", "LSTM", "RNN")
DOMAIN = ""
DIRECTIONS = ("forward", "reverse", "bidirectional")
# Defaults the registry misspells, and what the op's page means: GRU-1's direction defaults to
# "foward" in onnx's defs (onnx/defs/rnn/old.cc), which no node could run with.
MISSPELT_DEFAULTS = {("GRU", 1, "direction"): ("foward", "forward")}
_KINDS = {AttributeProto.INT: "int", AttributeProto.FLOAT: "float", AttributeProto.STRING: "string",
          AttributeProto.INTS: "ints", AttributeProto.FLOATS: "floats", AttributeProto.STRINGS: "strings"}
# numpy dtype name -> ONNX type string (what the type constraints list)
_TENSOR_TYPES = {"float16": "tensor(float16)", "bfloat16": "tensor(bfloat16)", "float32": "tensor(float)",
                 "float64": "tensor(double)", "int32": "tensor(int32)", "int64": "tensor(int64)"}


@dataclass(frozen=True)
class Attribute:
    """One attribute as the registry gives it: ``kind`` int, float, string, ints, floats or strings."""

    name: str
    kind: str
    required: bool
    default: Any  # None: no default
    description: str

    def __post_init__(self) -> None:
        if self.kind not in _KINDS.values():
            raise ValueError(f"irtool bug: attribute {self.name} has kind {self.kind!r}")


@dataclass(frozen=True)
class Port:
    """One input or output: its name, whether it is optional, its type parameter and allowed types."""

    name: str
    optional: bool
    type_param: str
    allowed: tuple[str, ...]


@dataclass(frozen=True)
class OpSchema:
    """One ONNX op version (``version`` is its since-version; ``opset`` the opset asked for)."""

    op_type: str
    version: int
    opset: int
    attributes: Mapping[str, Attribute]
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]

    def __post_init__(self) -> None:
        if self.op_type not in OPS:
            raise ValueError(f"irtool bug: schema of {self.op_type!r}")

    @property
    def key(self) -> str:
        return f"{self.op_type}-{self.version}"

    def input(self, name: str) -> Port:
        return next(p for p in self.inputs if p.name == name)


class SchemaError(ValueError):
    """No schema for the op type or opset asked for."""


def _value(proto: AttributeProto) -> Any:
    value = helper.get_attribute_value(proto)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    return value


@functools.lru_cache(maxsize=None)
def versions(op_type: str) -> tuple[int, ...]:
    """Every since-version of ``op_type`` in the default domain that this onnx package knows."""
    return tuple(sorted({s.since_version for s in defs.get_all_schemas_with_history()
                         if s.name == op_type and s.domain == DOMAIN}))


@functools.lru_cache(maxsize=None)
def get(op_type: str, opset: int) -> OpSchema:
    """The schema of ``op_type`` in ``opset`` (the highest version not above it), from onnx.defs."""
    if op_type not in OPS:
        raise SchemaError(f"op type is {op_type!r}{did_you_mean(op_type, OPS)}; expected one of {', '.join(OPS)}")
    if isinstance(opset, bool) or not isinstance(opset, (int, np.integer)) or opset < 1:
        raise SchemaError(f"opset is {opset!r}; expected a positive integer")
    if opset > defs.onnx_opset_version():
        raise SchemaError(f"opset is {opset}; onnx {onnx.__version__} knows opsets up to {defs.onnx_opset_version()}")
    try:
        schema = defs.get_schema(op_type, int(opset), DOMAIN)
    except defs.SchemaError:
        raise SchemaError(f"{op_type} has no schema at opset {opset}; its versions are "
                          f"{', '.join(map(str, versions(op_type)))} (onnx {onnx.__version__})") from None
    constraints = {c.type_param_str: tuple(c.allowed_type_strs) for c in schema.type_constraints}

    def ports(formals: Any) -> tuple[Port, ...]:
        return tuple(Port(f.name, f.option == defs.OpSchema.FormalParameterOption.Optional, f.type_str,
                          constraints.get(f.type_str, (f.type_str,))) for f in formals)

    attributes = {}
    for name, attribute in sorted(schema.attributes.items()):
        default = _value(attribute.default_value) if attribute.default_value.type != AttributeProto.UNDEFINED else None
        misspelt, meant = MISSPELT_DEFAULTS.get((op_type, schema.since_version, name), (None, None))
        attributes[name] = Attribute(name, _KINDS[attribute.type], attribute.required,
                                     meant if default is not None and default == misspelt else default,
                                     " ".join(attribute.description.split()))
    return OpSchema(op_type, schema.since_version, int(opset), MappingProxyType(attributes), ports(schema.inputs),
                    ports(schema.outputs))


def node_attributes(node: onnx.NodeProto) -> dict[str, Any]:
    """A node's attributes as plain Python values (strings decoded)."""
    return {a.name: _value(a) for a in node.attribute}


def tensor_type(dtype: np.dtype) -> str:
    """``tensor(float)`` for float32, and so on: the spelling of the type constraints."""
    return _TENSOR_TYPES.get(np.dtype(dtype).name, f"tensor({np.dtype(dtype).name})")


# --- attribute values -------------------------------------------------------------------

PROBLEM_KINDS = ("unknown", "missing", "type", "value")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an attribute: its kind (PROBLEM_KINDS), a message that names it, the values."""

    kind: str
    name: str
    message: str
    expected: str | None = None
    found: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in PROBLEM_KINDS:
            raise ValueError(f"irtool bug: attribute problem of kind {self.kind!r}")


_WORDING = {"int": "an integer", "float": "a number", "string": "a string", "ints": "a list of integers",
            "floats": "a list of numbers", "strings": "a list of strings"}


def _scalar(kind: str, item: Any) -> Any:
    """``item`` as an ONNX int, float or string; TypeError if it is none of that kind."""
    if kind == "int":
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, (int, np.integer)):
            raise TypeError
        return int(item)
    if kind == "float":
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, (int, float, np.integer, np.floating)):
            raise TypeError
        return float(item)
    if isinstance(item, bytes):
        return item.decode("utf-8", "replace")
    if not isinstance(item, str):
        raise TypeError
    return item


def _typed(attribute: Attribute, value: Any) -> Any:
    """``value`` in the attribute's kind (a list kind takes any iterable but a string); TypeError if not."""
    if attribute.kind.endswith("s"):
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise TypeError
        return [_scalar(attribute.kind[:-1], item) for item in value]
    return _scalar(attribute.kind, value)


def check_attributes(schema: OpSchema, attributes: Mapping[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """The attributes typed and completed with the registry's defaults, and every problem found.

    Unknown names, wrong types, and the values the ONNX page allows only in prose: direction,
    layout 0 or 1, hidden_size > 0, clip > 0, input_forget 0 or 1 (linear_before_reset is any
    integer: the equations test it against 0).
    An attribute with no default and not given is absent from the result (hidden_size, clip,
    activations and their parameters: the op's equations say what that means).
    """
    problems: list[Problem] = []
    values: dict[str, Any] = {}
    for name in attributes:
        if name not in schema.attributes:
            problems.append(Problem("unknown", name, f"{schema.key} has no attribute {name!r}"
                                          f"{did_you_mean(name, schema.attributes)}; its attributes are "
                                          f"{', '.join(schema.attributes)}", ", ".join(schema.attributes), name))
    for name, attribute in schema.attributes.items():
        if name in attributes and attributes[name] is not None:
            try:
                values[name] = _typed(attribute, attributes[name])
            except TypeError:
                expected = _WORDING[attribute.kind]
                problems.append(Problem("type", name, f"{name} is {attributes[name]!r}; expected {expected} "
                                              f"(its type in {schema.key})", expected, repr(attributes[name])))
        elif attribute.required:
            problems.append(Problem("missing", name, f"{name} is missing; {schema.key} requires it", attribute.kind))
        elif attribute.default is not None:
            values[name] = attribute.default
    problems += _value_problems(values)
    return values, problems


def _value_problems(values: Mapping[str, Any]) -> list[Problem]:
    problems = []

    def require(name: str, ok: bool, expected: str) -> None:
        if name in values and not ok:
            hint = did_you_mean(values[name], DIRECTIONS) if name == "direction" else ""
            problems.append(Problem("value", name, f"{name} is {values[name]!r}{hint}; expected {expected}", expected,
                                    repr(values[name])))

    require("direction", values.get("direction") in DIRECTIONS, " | ".join(DIRECTIONS))
    require("layout", values.get("layout") in (0, 1), "0 (time-major) or 1 (batch-major)")
    require("hidden_size", isinstance(values.get("hidden_size"), int) and values.get("hidden_size", 0) > 0,
            "a positive integer")
    require("clip", isinstance(values.get("clip"), float) and values.get("clip", 0.0) > 0, "a positive number")
    require("input_forget", values.get("input_forget") in (0, 1), "0 or 1")
    return problems
