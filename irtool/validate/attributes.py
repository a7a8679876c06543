"""Attribute checks: missing, unknown, ill-typed, disallowed, out of range, wrong length,
and defaults that OpenVINO does not apply."""
from __future__ import annotations

from irtool.ir import Layer
from irtool.specs import OpSpec
from irtool.specs.values import format_value
from irtool.validate.context import Context

_PROBLEM_CODES = {"type": "IR022", "allowed": "IR023", "range": "IR024", "length": "IR025"}
# activations that take activations_alpha / activations_beta; none of OpenVINO's three does
_PARAMETRIC = {"affine", "leakyrelu", "thresholdedrelu", "scaledtanh", "hardsigmoid", "elu", "softplus"}


def check_attributes(ctx: Context, layer: Layer, spec: OpSpec) -> dict:
    """Report every attribute problem; return the valid typed values with defaults filled."""
    values = {}
    known = spec.attributes
    for name, text in layer.data.items():
        attribute = known.get(name)
        if attribute is None:
            ctx.report("IR021", f"unknown attribute of {spec.key}: OpenVINO ignores it, so a misspelt one silently "
                                f"gives another model; "
                                f"known: {', '.join(spec.attributes) or 'none'}",
                       layer=layer, attribute=name, found=text)
            continue
        value, problems = attribute.read(text)
        if problems:
            for problem in problems:
                ctx.report(_PROBLEM_CODES[problem.kind], problem.message, layer=layer, attribute=name,
                           expected=problem.expected, found=problem.found)
        elif value is not None:
            values[name] = list(value) if type(value) is list else value  # read() shares its lists
    for name, attribute in spec.must_write:
        if name in layer.data:
            continue
        if attribute.required:
            ctx.report("IR020", f"required attribute of {spec.key} is missing"
                                + (" (OpenVINO reads it as 0)" if attribute.type == "int" else ""),
                       layer=layer, attribute=name, expected=f"{attribute.type}: {attribute.description}" if
                       attribute.description else attribute.type)
        elif not attribute.openvino_applies_default:
            default = format_value(attribute.default)
            ctx.report("IR026", f"omitted, so the spec's default {default} applies, but OpenVINO's reader "
                                f"does not apply it (the CPU plugin then fails to compile the layer); "
                                f"write {name}=\"{default}\"", layer=layer, attribute=name, expected=default)
    if "activations" in values:
        _check_activation_parameters(ctx, layer, values)
    return spec.fill_defaults(values)


def _check_activation_parameters(ctx: Context, layer: Layer, values: dict) -> None:
    activations = values.get("activations")
    if activations is None or not _PARAMETRIC.isdisjoint(activations):
        return
    for name in ("activations_alpha", "activations_beta"):
        if values.get(name):
            ctx.report("IR027", f"{format_value(values[name])} is given, but none of the activations "
                                f"({format_value(activations)}) takes parameters; it has no effect",
                       layer=layer, attribute=name, found=format_value(values[name]))
