"""Per-layer checks: which spec applies, attributes, ports, dims and element types."""
from __future__ import annotations

from irtool.core import element_types
from irtool.core.diagnostics import clipped
from irtool.core.text import shown
from irtool.core.errors import closest, did_you_mean
from irtool.core.jsonable import quoted
from irtool.core.shapes import DYNAMIC, ShapeSyntaxError, parse_dim
from irtool.ir import Layer, Port
from irtool.specs import DimProblem, OpSpec, RankProblem, unify
from irtool.specs.values import format_value
from irtool.validate.attributes import check_attributes
from irtool.validate.context import Context, LayerFacts
from irtool.validate.readers import port_dim, read_id


def check_layer(ctx: Context, layer: Layer) -> LayerFacts:
    """Check one layer.  A net repeats layers that differ only in names, ids and attributes
    that no port depends on (a Const's offset); once such a layer is found clean, the
    next one like it gets only its attribute check, and shares the dims read for the first."""
    spec = ctx.registry.for_ir(layer.type, layer.version) if layer.type is not None else None
    key = _signature(layer, spec) if spec is not None else None
    clean = ctx.memo.get(key) if key is not None else None
    if clean is not None:
        return LayerFacts(layer, spec, _attributes(ctx, layer, spec), *clean)
    before = len(ctx.diagnostics)
    facts = _check_layer(ctx, layer)
    if key is not None and len(ctx.diagnostics) == before:
        ctx.memo[key] = (facts.input_dims, facts.output_dims)
    return facts


def _attributes(ctx: Context, layer: Layer, spec: OpSpec) -> dict:
    """check_attributes, once for each set of attribute texts that is found clean; the layers
    that repeat it share its values (which nothing changes)."""
    key = ("attributes", spec.key, tuple(layer.data.items()))
    values = ctx.memo.get(key)
    if values is None:
        before = len(ctx.diagnostics)
        values = check_attributes(ctx, layer, spec)
        if len(ctx.diagnostics) == before:
            ctx.memo[key] = values
    return values


def _signature(layer: Layer, spec: OpSpec) -> tuple:
    """Everything but the attribute values that the checks of a layer read (see check_layer)."""
    data = layer.data
    return ("layer", layer.id is None, layer.type, layer.version,
            tuple([(p.id, p.precision, p.dims) for p in layer.inputs]),
            tuple([(p.id, p.precision, p.dims) for p in layer.outputs]),
            tuple([data.get(name) for name in spec.shape_attributes]),
            tuple([data.get(name) for name in spec.type_attributes]))


def _check_layer(ctx: Context, layer: Layer) -> LayerFacts:
    facts = LayerFacts(layer, input_dims=tuple([_dims(ctx, layer, p) for p in layer.inputs]),
                       output_dims=tuple([_dims(ctx, layer, p) for p in layer.outputs]))
    _check_identity(ctx, layer)
    _check_port_ids(ctx, layer)
    spec = _resolve_spec(ctx, layer)
    if spec is None:
        return facts
    facts.spec = spec
    facts.attributes = _attributes(ctx, layer, spec)
    if _check_port_counts(ctx, layer, spec):
        _check_shapes(ctx, facts)
        _check_types(ctx, layer, spec, facts.attributes)
    return facts


def _check_identity(ctx: Context, layer: Layer) -> None:
    required = ("id", "type", "version") if ctx.model.is_net else ("type",)
    for field in required:
        if getattr(layer, field) is None:
            ctx.report("IR013", f"<layer> has no {field} attribute", layer=layer, expected=field, attribute=field,
                       on_layer=True)
    if ctx.model.is_net and layer.id is not None and read_id(layer.id) is None:
        ctx.report("IR017", f"{quoted(layer.id, 40)} is not a layer id: OpenVINO's reader takes a decimal integer "
                            f"from 0 to 2**63-1 only, and refuses the file", layer=layer, attribute="id", on_layer=True,
                   expected="an integer from 0 to 2**63-1", found=layer.id)


def _check_port_ids(ctx: Context, layer: Layer) -> None:
    seen: dict[str, Port] = {}
    for port in layer.inputs + layer.outputs:
        if port.id is None:
            if ctx.model.is_net:
                ctx.report("IR031", "port has no id", layer=layer, port=port)
            continue
        if read_id(port.id) is None:
            ctx.report("IR031", f"port id {quoted(port.id, 40)} is not a non-negative integer OpenVINO reads (0 to 2**63-1)"
                                + (" (OpenVINO refuses the file)" if ctx.model.is_net else ""), layer=layer, port=port,
                       found=port.id)
        if port.id in seen:
            ctx.report("IR031", f"port id {port.id} is used twice in this layer (first at line "
                                f"{seen[port.id].line})", layer=layer, port=port, found=port.id)
        seen.setdefault(port.id, port)


def _resolve_spec(ctx: Context, layer: Layer) -> OpSpec | None:
    if layer.type is None:
        return None
    in_openvino = _check_opset(ctx, layer)
    spec = ctx.registry.for_ir(layer.type, layer.version)
    if spec is None and in_openvino:
        ctx.unspecified(layer, known=[s.key for s in ctx.registry.versions(layer.type)])
    return spec


def _check_opset(ctx: Context, layer: Layer) -> bool:
    """Whether OpenVINO's opsets have this type in this version, as its reader looks it up
    (a pasted <layer> without version: in some opset); what they lack is an error."""
    opsets, op_type, version = ctx.opsets, layer.type, layer.version
    name = opsets.canonical(op_type)
    if name is None:
        close = closest(op_type, opsets.ops)
        ctx.report("IR015", f"no OpenVINO opset has an op of type {quoted(op_type)}{did_you_mean(op_type, opsets.ops)}",
                   layer=layer, found=op_type, expected=close, attribute="type", on_layer=True)
        return False
    if version is None:
        return True
    if opsets.opset_number(version) is None:
        ctx.report("IR014", f"{quoted(version)} is not one of OpenVINO's opsets (opset1 to "
                            f"opset{opsets.count}, written so); {name} exists in {opsets.where(op_type)}",
                   layer=layer, expected=opsets.where(op_type), found=version, attribute="version", on_layer=True)
        return False
    if opsets.op_version(op_type, version) is None:
        ctx.report("IR012", f"OpenVINO's {version} has no {name}; {name} exists in {opsets.where(op_type)}",
                   layer=layer, expected=opsets.where(op_type), found=version, attribute="version", on_layer=True)
        return False
    return True


def _check_port_counts(ctx: Context, layer: Layer, spec: OpSpec) -> bool:
    """Port counts, each finding at the first port too many, or naming the first one missing.
    A missing port is named by the ids written (IR numbers inputs from 0, outputs after the
    inputs): ports 0, 2, 3 written means port 1 is the one missing, whatever comes last."""
    ok = True
    low, high = spec.required_inputs, len(spec.inputs)
    if not low <= len(layer.inputs) <= high:
        names = ", ".join(p.name for p in spec.inputs)
        count = str(high) if low == high else f"{low} to {high}"
        extra = layer.inputs[high] if len(layer.inputs) > high else None
        index = None if extra else _first_missing(layer.inputs, len(spec.inputs), 0)
        missing = None if extra else spec.inputs[index]
        what = (f"input port {extra.id} is one too many" if extra else
                f"input {missing.index} ({missing.name}) is missing")
        ctx.report("IR030", f"{what}: the layer has {len(layer.inputs)} input ports{_ids(layer.inputs)}, "
                            f"{spec.key} takes {count} ({names})", layer=layer, port=extra,
                   port_id=None if extra else str(missing.index), expected=count, found=len(layer.inputs))
        ok = False
    if len(layer.outputs) != len(spec.outputs):
        given = len(spec.outputs)
        base = _output_base(layer)
        extra = layer.outputs[given] if len(layer.outputs) > given else None
        index = None if extra else _first_missing(layer.outputs, given, base)
        missing = None if extra else spec.outputs[index]
        what = (f"output port {extra.id} is one too many" if extra else
                f"output {missing.index} ({missing.name}) is missing")
        ctx.report("IR030", f"{what}: the layer has {len(layer.outputs)} output ports{_ids(layer.outputs)}, "
                            f"{spec.key} gives {given}"
                            + (f" ({', '.join(p.name for p in spec.outputs)})" if given else ""),
                   layer=layer, port=extra, port_id=None if extra else str(base + missing.index),
                   expected=given, found=len(layer.outputs))
        ok = False
    for port_spec in spec.inputs[len(layer.inputs):]:
        if port_spec.openvino_requires:
            ctx.report("IR032", f"input {port_spec.index} ({port_spec.name}) is optional in {spec.key}, but "
                                f"OpenVINO rejects the layer without it; connect {port_spec.name} "
                                f"(zeros for no bias)", layer=layer, port_id=str(port_spec.index),
                       expected=port_spec.name)
    return ok


def _port_numbers(ports: list[Port]) -> list[int] | None:
    """The ports' ids as numbers, or None when one is absent or no number."""
    numbers = []
    for port in ports:
        if port.id is None or not (port.id.isascii() and port.id.isdigit()) or len(port.id) > 9:
            return None
        numbers.append(int(port.id))
    return numbers


def _first_missing(ports: list[Port], count: int, base: int) -> int:
    """The position (in the spec's list of ``count`` ports) of the first port not written: by the
    ids, when they are distinct and all of the spec's numbering (``base`` to ``base + count - 1``),
    else the position after the last port written."""
    numbers = _port_numbers(ports)
    if numbers is not None and len(set(numbers)) == len(numbers) and all(base <= n < base + count for n in numbers):
        written = set(numbers)
        return next(i for i in range(count) if base + i not in written)
    return len(ports)


def _output_base(layer: Layer) -> int:
    """The id IR gives the first output: the number of inputs, as the input ids count them
    (an input missing in the middle leaves the ids after it as they were)."""
    numbers = _port_numbers(layer.inputs)
    return max(len(layer.inputs), max(numbers) + 1) if numbers else len(layer.inputs)


def _ids(ports: list[Port]) -> str:
    """`` (ids 0, 2, 3)``: the ids written, a few of them."""
    if not ports or len(ports) > 12:
        return ""
    return " (ids " + ", ".join("?" if p.id is None else clipped(p.id, 12) for p in ports) + ")"


def _dims(ctx: Context, layer: Layer, port: Port) -> tuple | None:
    try:
        dims = tuple([parse_dim(text) for text in port.dims])
    except ShapeSyntaxError:
        return _dims_reported(ctx, layer, port)
    for index, text in enumerate(port.dims):  # what irtool's grammar takes and OpenVINO's does not: ?, ..5
        if text.startswith("+") and port_dim(text) is not None:
            ctx.report("IR046", f"dim {index}: {shown(text)} is not how the IR format writes a dim; OpenVINO reads "
                                f"it as {port_dim(text)}, and so does irtool", layer=layer, port=port, dim=index,
                       expected=str(port_dim(text)), found=text)
        elif not text.isdigit() and port_dim(text) is None:
            hint = ": write -1 (? belongs in a Parameter's shape attribute)" if text == "?" else \
                " (it takes a dim's leading integer: -1 for a dynamic dim, 2..5 for an interval)"
            ctx.report("IR043", f"dim {index} is {shown(text)}, which OpenVINO refuses in a port's <dim>{hint}",
                       layer=layer, port=port, dim=index, expected="-1" if text == "?" else "a size, -1 or a..b",
                       found=text)
    return dims


def _dims_reported(ctx: Context, layer: Layer, port: Port) -> tuple | None:
    """_dims for a port with a dim irtool's grammar does not take: what OpenVINO's reader makes of
    each (see readers.port_dim).  A dim it refuses is an error, and the port's dims unread; one it
    reads as the number written (``4.0``, ``+4``) a warning, and read so; one it reads as another
    number (``4.5`` as 4, ``1e2`` as 1) an error saying so, and read as OpenVINO reads it."""
    dims = []
    for i, text in enumerate(port.dims):
        try:
            dims.append(parse_dim(text))
            continue
        except ShapeSyntaxError as error:
            problem = str(error)
        value = port_dim(text)
        if value is None:
            hint = (": write -1 (? belongs in a Parameter's shape attribute)" if text == "?" else
                    " (it takes a dim's leading integer, from -1 to 2**63-1)")
            ctx.report("IR043", f"dim {i}: {problem}; OpenVINO refuses it in a port's <dim>{hint}", layer=layer,
                       port=port, dim=i, expected="a size, -1 or a..b", found=text)
            return None
        if _same_number(text, value):
            ctx.report("IR046", f"dim {i}: {shown(text)} is not how the IR format writes a dim; OpenVINO reads it "
                                f"as {value}, and so does irtool", layer=layer, port=port, dim=i,
                       expected=str(value), found=text)
        else:
            ctx.report("IR043", f"dim {i}: {problem}; OpenVINO reads only its leading integer, {value}, without "
                                f"a word", layer=layer, port=port, dim=i, expected=str(value), found=text)
        dims.append(DYNAMIC if value == -1 else value)
    return tuple(dims)


def _same_number(text: str, value: int) -> bool:
    """Whether ``text`` is a decimal number equal to ``value`` (``4.0``, ``+4``, ``4.``)."""
    try:
        number = float(text) if len(text) < 64 and text.isascii() else None
    except ValueError:
        return False
    return number == value and not any(c in text for c in "xXeEnN_")


def _check_shapes(ctx: Context, facts: LayerFacts) -> None:
    spec, layer = facts.spec, facts.layer
    # Layers of one op with the same dims and shape attributes unify alike: do it once.
    key = ("unify", spec.key, tuple((name, _frozen(facts.attributes.get(name))) for name in spec.shape_attributes),
           facts.input_dims, facts.output_dims)
    report = ctx.memo.get(key)
    if report is None:
        report = ctx.memo[key] = unify(spec, facts.attributes, facts.input_dims, facts.output_dims)
    for problem in report.problems:
        ports = layer.inputs if problem.side == "input" else layer.outputs
        port = ports[problem.index]
        port_spec = (spec.inputs if problem.side == "input" else spec.outputs)[problem.index]
        if isinstance(problem, RankProblem):
            ctx.report("IR040", problem.message, layer=layer, port=port, port_name=port_spec.name,
                       expected=f"{problem.expected} {problem.expected_text}", found=problem.found)
            continue
        assert isinstance(problem, DimProblem)
        code = ("IR044" if port_spec.shape_attribute or port_spec.same_as else
                "IR041" if problem.side == "input" else "IR042")
        ctx.report(code, problem.message, layer=layer, port=port, port_name=port_spec.name, dim=problem.dim,
                   expected=problem.expected, found=problem.found)


def _frozen(value: object) -> object:
    """A hashable stand-in for an attribute value, its type included (True == 1, but not as an attribute)."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    return (type(value).__name__, value)


def _check_types(ctx: Context, layer: Layer, spec: OpSpec, attributes: dict) -> None:
    # A combination of precisions found clean once is clean on every layer of this op.
    key = ("types", spec.key, tuple([p.precision for p in layer.inputs]), tuple([p.precision for p in layer.outputs]),
           tuple([_frozen(attributes.get(name)) for name in spec.type_attributes]))
    if key in ctx.memo:
        return
    before = len(ctx.diagnostics)
    _check_types_of(ctx, layer, spec, attributes)
    if len(ctx.diagnostics) == before:
        ctx.memo[key] = True


def _check_types_of(ctx: Context, layer: Layer, spec: OpSpec, attributes: dict) -> None:
    bound: dict[str, tuple] = {}  # type variable -> (element type, port, port name)
    # OpenVINO reads the precision of output ports only, as written (f32 or FP32, not fp32 or F32)
    pairs = ([(p, q, element_types.from_text) for p, q in zip(spec.inputs, layer.inputs)]
             + [(p, q, element_types.from_precision) for p, q in zip(spec.outputs, layer.outputs)])
    for port_spec, port, read in pairs:
        if port.precision is None:
            continue
        element_type = read(port.precision)
        if element_type is None:
            meant = element_types.from_text(port.precision)
            hint = f"; OpenVINO reads {meant.name} or {_LEGACY.get(meant.name, meant.name.upper())}" if meant else ""
            ctx.report("IR052", f"unknown precision {quoted(port.precision)}{hint}", layer=layer, port=port,
                       port_name=port_spec.name, found=port.precision)
            continue
        if port_spec.type_attribute is not None:
            declared = element_types.from_text(format_value(attributes.get(port_spec.type_attribute)))
            if declared is not None and declared.name not in ("dynamic", "undefined") and declared != element_type:
                ctx.report("IR053", f"precision {port.precision} is not the layer's "
                                    f"{port_spec.type_attribute}={declared.name}", layer=layer, port=port,
                           port_name=port_spec.name, expected=declared.name, found=port.precision)
            continue
        type_class = spec.types[port_spec.type]
        if not element_types.matches(element_type, type_class):
            ctx.report("IR050", f"precision {port.precision} is not {_CLASS_TEXT[type_class]} "
                                f"(type {port_spec.type} of {spec.key})", layer=layer, port=port,
                       port_name=port_spec.name, expected=f"{type_class} ({port_spec.type})", found=port.precision)
            continue
        if type_class == "any":
            continue
        first = bound.setdefault(port_spec.type, (element_type, port, port_spec.name))
        if first[0] != element_type:
            ctx.report("IR051", f"precision {port.precision} differs from {first[1].precision} of "
                                f"{first[1].label} ({first[2]}); both are type {port_spec.type}",
                       layer=layer, port=port, port_name=port_spec.name, expected=first[1].precision,
                       found=port.precision)


_LEGACY = {"f64": "FP64", "f32": "FP32", "f16": "FP16", "boolean": "BOOL"}
_CLASS_TEXT = {"float": "a floating-point type", "int": "an integer type", "any": "any type"}
