"""Op specifications: schemas/ops/*.json loaded into frozen records, and the op cases made of them.

The spec file of an op is the single source of truth for its attributes, defaults,
ports and dims; the validator, the builder, the reference and the CLI read them here.
:mod:`.cases` holds an OpCase: an op of a spec with its attributes, sizes and inputs.

May import core only.
"""
from __future__ import annotations

from irtool.core.errors import did_you_mean
from irtool.specs.expressions import ExpressionError, parse_expression
from irtool.specs.loader import (
    EXTRA_SPECS_VARIABLE,
    OPS_DIR,
    SCHEMA_DIR,
    SpecError,
    SpecRegistry,
    load_registry,
    registry,
    snake_case,
)
from irtool.specs.model import AttributeProblem, AttributeSpec, OpSpec, PortSpec, SizeSpec, SymbolSpec
from irtool.specs.unify import DimProblem, Origin, RankProblem, ShapeReport, check_shapes, unify


def get_spec(op_type: str, version: int | None = None) -> OpSpec:
    """The spec of an op type (newest version unless one is named); KeyError if none."""
    spec = registry().get(op_type, version)
    if spec is None:
        known = ", ".join(s.key for s in registry())
        hint = did_you_mean(op_type, {s.type for s in registry()})
        raise KeyError(f"no spec for {op_type}{'' if version is None else f'-{version}'}{hint}; known: {known}")
    return spec


def default_batch() -> int:
    """The batch a dynamic batch dim gets when --batch does not say (the specs' default)."""
    return next(spec.default_sizes["batch_size"] for spec in registry() if "batch_size" in spec.default_sizes)


def default_steps() -> int:
    """The sequence length a dynamic time dim gets when --seq-length does not say (the specs' default)."""
    return next(spec.default_sizes[spec.time_symbol] for spec in registry() if spec.time_symbol)


__all__ = [
    "AttributeProblem", "AttributeSpec", "DimProblem", "EXTRA_SPECS_VARIABLE", "ExpressionError", "OpSpec", "OPS_DIR",
    "Origin", "PortSpec", "RankProblem", "SCHEMA_DIR", "ShapeReport", "SizeSpec", "SpecError", "SpecRegistry", "SymbolSpec",
    "check_shapes", "default_batch", "default_steps", "get_spec", "load_registry", "parse_expression", "registry", "snake_case", "unify",
]
