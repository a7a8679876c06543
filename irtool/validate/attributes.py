"""Attribute checks: missing, unknown, ill-typed, disallowed, out of range, wrong length,
and defaults that OpenVINO does not apply."""
from __future__ import annotations

from irtool.core.errors import closest
from irtool.ir import Layer
from irtool.specs import OpSpec
from irtool.specs.values import format_value
from irtool.validate.context import Context

_PROBLEM_CODES = {"type": "IR022", "allowed": "IR023", "range": "IR024", "length": "IR025", "static": "IR045"}


def check_attributes(ctx: Context, layer: Layer, spec: OpSpec) -> dict:
    """Report every attribute problem; return the valid typed values with defaults filled."""
    values = {}
    known = spec.attributes
    per_direction = None  # an activations list written once per direction, judged once direction is known
    unknown = [name for name in layer.data if name not in known]
    if unknown:
        _report_unknown(ctx, layer, spec, unknown)
    for name, text in layer.data.items():
        attribute = known.get(name)
        if attribute is None:
            continue
        value, problems = attribute.read(text)
        if name == "activations" and _doubled(attribute, value, problems):
            per_direction = value
            continue
        if problems:
            for problem in problems:
                ctx.report(_PROBLEM_CODES[problem.kind], problem.message, layer=layer, attribute=name,
                           expected=problem.expected, found=problem.found)
        elif value is not None:
            values[name] = list(value) if type(value) is list else value  # read() shares its lists
            if attribute.type == "element_type" and value != text:
                ctx.report("IR054", f"{text!r} is not written as the IR format writes an element type; OpenVINO "
                                    f"reads it as {value}, and so does irtool", layer=layer, attribute=name,
                           expected=value, found=text)
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
    if per_direction is not None:
        _check_per_direction(ctx, layer, spec, per_direction, values)
    if "activations" in values:
        _check_activation_parameters(ctx, layer, values)
    return spec.fill_defaults(values)


_UNKNOWN_SHOWN = 10  # unknown attributes of one layer reported one by one; the rest in one finding


def _report_unknown(ctx: Context, layer: Layer, spec: OpSpec, names: list[str]) -> None:
    known = f"known: {spec.attribute_names or 'none'}"
    for name in names[:_UNKNOWN_SHOWN]:
        meant = closest(name, [n for n in spec.attributes if n not in layer.data])
        ctx.report("IR021", f"unknown attribute of {spec.key}"
                            + (f" (did you mean {meant}?)" if meant else "")
                            + f": OpenVINO ignores it, so a misspelt one silently gives another model; {known}",
                   layer=layer, attribute=name, found=layer.data[name], expected=meant)
    rest = names[_UNKNOWN_SHOWN:]
    if rest:
        shown = ", ".join(rest[:5])
        ctx.report("IR021", f"and {len(rest)} more unknown attributes of {spec.key} ({shown}"
                            f"{', ...' if len(rest) > 5 else ''}); {known}", layer=layer, attribute=rest[0],
                   found=len(rest))


def _doubled(attribute, value, problems) -> bool:
    """Whether an activations list has twice its length and nothing else wrong: written once per
    direction, as OpenVINO's ONNX frontend writes a bidirectional node's."""
    return (attribute.length is not None and isinstance(value, list) and len(value) == 2 * attribute.length
            and all(p.kind == "length" for p in problems))


def _check_per_direction(ctx: Context, layer: Layer, spec: OpSpec, activations: list, values: dict) -> None:
    half = len(activations) // 2
    forward, backward = activations[:half], activations[half:]
    direction = layer.data.get("direction", "").strip().lower()
    shown = format_value(activations)
    if direction != "bidirectional":
        ctx.report("IR025", f"has {len(activations)} items, expected {half} (a list per direction is for "
                            f"direction=bidirectional)", layer=layer, attribute="activations",
                   expected=f"{half} items", found=shown)
    elif forward == backward:
        values["activations"] = list(forward)
        ctx.report("IR028", f"{shown} is written once per direction; the halves are equal, and OpenVINO reads "
                            f"only the first half ({format_value(forward)})", layer=layer,
                   attribute="activations", found=shown)
    else:
        values["activations"] = list(forward)
        ctx.report("IR029", f"{shown} gives the backward direction {format_value(backward)}, but OpenVINO "
                            f"applies the first half ({format_value(forward)}) to both directions: the backward "
                            f"outputs are not what the file says", layer=layer, attribute="activations",
                   expected=format_value(forward + forward), found=shown)


def _check_activation_parameters(ctx: Context, layer: Layer, values: dict) -> None:
    """alpha or beta given to activations that take none.  ``values`` holds only values the spec
    allows, and the activations it allows (relu, sigmoid, tanh) take no parameters."""
    activations = values.get("activations")
    if activations is None:
        return
    for name in ("activations_alpha", "activations_beta"):
        if values.get(name):
            ctx.report("IR027", f"{format_value(values[name])} is given, but none of the activations "
                                f"({format_value(activations)}) takes parameters; it has no effect",
                       layer=layer, attribute=name, found=format_value(values[name]))
