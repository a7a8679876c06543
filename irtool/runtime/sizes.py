"""Sizes for the dynamic dims of any model's inputs, chosen so that its recurrent nodes are valid.

A converted model often has every input dim dynamic (PyTorch with default settings:
``[?,?,?]``), and a recurrent node several ops below its inputs.  Each dynamic dim of each
model input gets an OpenVINO symbol; shape inference carries the symbols through Transpose,
ShapeOf, Gather, Concat, Broadcast and the recurrent ops themselves (which make the batch
dims of X, the states and sequence_lengths one symbol).  Each recurrent node's input dims
then say which input dims are its ``batch_size``, ``seq_length`` or ``input_size``; those
take the node's own values (``input_size`` and ``hidden_size`` are static in W and R) or
the chosen batch and sequence length.  A dim that reaches no node is not guessed: the user
names it with ``--shape``.

Model inputs that feed a node's sequence_lengths (directly or through a Convert) are
reported too, so that their values can be made valid (1..seq_length).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from irtool.errors import RunError, Unsupported, did_you_mean
from irtool.runtime.core import openvino_release
from irtool.specs.expressions import Sym

# Ops that pass a tensor's values through unchanged in what matters for sequence lengths.
VALUE_PRESERVING = ("Convert", "Reshape", "Squeeze", "Unsqueeze")


@dataclass(frozen=True)
class InputPlan:
    """The concrete shape of every model input, and which inputs are sequence lengths (and of what
    seq_length)."""

    shapes: Mapping[str, tuple[int, ...]]
    lengths: Mapping[str, int]  # input name -> the seq_length its values must not exceed
    chosen: Mapping[str, str]  # input name -> how its dynamic dims were chosen, for the report


def plan_inputs(model: Any, given: Mapping[str, Sequence[int]], sizes: Mapping[str, int],
                source: str) -> InputPlan:
    """Shapes for the model's inputs: ``given`` (``--shape NAME=[...]``) as they are, dynamic dims of
    the others from the recurrent nodes they reach, with ``sizes`` for batch_size and seq_length."""
    import openvino as ov

    from irtool.runtime.model import tensor_name
    from irtool.runtime.nodes import node_spec

    if not hasattr(ov, "Symbol"):  # openvino before 2024.1 labelled dims with numbers instead
        raise Unsupported(f"openvino {openvino_release()} has no symbolic shapes (openvino.Symbol, "
                          f"from openvino 2024.1 on), which irtool sizes a model's inputs with")
    copy = model.clone()
    parameters = list(copy.get_parameters())
    names = [tensor_name(p.output(0)) for p in parameters]
    aliases = {alias: name for p, name in zip(parameters, names)
               for alias in set(p.output(0).get_names()) | {p.get_friendly_name(), name}}
    unknown = [key for key in given if key not in aliases]
    if unknown:
        raise RunError(f"--shape {unknown[0]}: {source} has no input of that name"
                       f"{did_you_mean(unknown[0], names)}; its inputs are {', '.join(names)}")
    given = {aliases[key]: tuple(value) for key, value in given.items()}
    symbols: dict[tuple[str, int], Any] = {}
    for parameter, name in zip(parameters, names):
        declared = parameter.get_partial_shape()
        if name in given:
            _check_given(name, declared, given[name])
            parameter.set_partial_shape(ov.PartialShape(list(given[name])))
            continue
        if declared.rank.is_dynamic:
            raise RunError(f"input {name} of {source} has a dynamic rank: give its shape with --shape {name}=[...]")
        dims = []
        for k, dim in enumerate(declared):
            if dim.is_static:
                dims.append(ov.Dimension(dim.get_length()))
                continue
            dim = ov.Dimension(dim.get_min_length(), dim.get_max_length())
            symbol = ov.Symbol()
            dim.set_symbol(symbol)
            symbols[(name, k)] = symbol
            dims.append(dim)
        parameter.set_partial_shape(ov.PartialShape(dims))
    try:
        copy.validate_nodes_and_infer_types()
    except RuntimeError as error:
        from irtool.runtime.core import openvino_message

        raise RunError(f"{source}: the given shapes do not fit the model: {openvino_message(error)}") from None

    # One size per class of equal symbols: a symbol compares equal to those OpenVINO merged with
    # it, not by hash, so the classes are kept in a list; the first size given to a class holds.
    representatives: list[tuple[Any, int]] = []

    def assign(symbol: Any, size: int) -> None:
        if not any(known == symbol for known, _ in representatives):
            representatives.append((symbol, size))

    lengths: dict[str, int] = {}
    ops, outer = _ops_with_bodies(copy)
    for op in ops:
        spec = node_spec(op)
        if spec is None:
            continue
        node_sizes = _node_sizes(op, spec, sizes)
        for port, value in zip(spec.inputs, (i.get_source_output() for i in op.inputs())):
            shape = value.get_partial_shape()
            for expr, dim in zip(port.dims or (), shape if shape.rank.is_static else ()):
                if isinstance(expr, Sym) and dim.has_symbol() and expr.name in node_sizes:
                    assign(dim.get_symbol(), node_sizes[expr.name])
            if port.role == "lengths":
                feeder = _through(value.get_node())
                while feeder.get_type_name() == "Parameter" and feeder.get_instance_id() in outer:  # a body's
                    feeder = _through(outer[feeder.get_instance_id()].get_node())  # the container's input
                if feeder.get_type_name() == "Parameter":
                    lengths[tensor_name(feeder.output(0))] = node_sizes.get(spec.time_symbol or "", 1)
    shapes: dict[str, tuple[int, ...]] = {}
    chosen: dict[str, str] = {}
    for parameter, name in zip(parameters, names):
        if name in given:
            shapes[name] = given[name]
            chosen[name] = "--shape"
            continue
        shape = []
        for k, dim in enumerate(parameter.get_partial_shape()):
            if dim.is_static:
                shape.append(dim.get_length())
                continue
            size = next((value for known, value in representatives if known == symbols[(name, k)]), None)
            if size is None:
                raise RunError(f"input {name} of {source} has a dynamic dim {k} that reaches no recurrent node, so "
                               f"irtool cannot choose its size: give it with --shape {name}=[...]")
            shape.append(size)
        shapes[name] = tuple(shape)
        if any(dim.is_dynamic for dim in parameter.get_partial_shape()):
            chosen[name] = "from the recurrent nodes"
    return InputPlan(shapes, lengths, chosen)


def _ops_with_bodies(model: Any) -> tuple[list[Any], dict[int, Any]]:
    """Every op of ``model`` and of the bodies of its TensorIterators, Loops and Ifs at any depth
    (OpenVINO's shape inference carries the inputs' symbols into bodies), and for each body
    Parameter (by its node's instance id) the container input it gets."""
    ops: list[Any] = []
    outer: dict[int, Any] = {}
    pending = [model]
    while pending:
        graph = pending.pop()
        for op in graph.get_ordered_ops():
            ops.append(op)
            kind = op.get_type_name()
            if kind not in ("TensorIterator", "Loop", "If"):
                continue
            bodies = [(op.get_then_body(), op.get_input_descriptions(0)), (op.get_else_body(), op.get_input_descriptions(1))] \
                if kind == "If" else [(op.get_function(), op.get_input_descriptions())]
            for body, descriptions in bodies:
                parameters = list(body.get_parameters())
                for description in descriptions:
                    parameter = parameters[description.body_parameter_index]
                    outer[parameter.get_instance_id()] = op.input_value(description.input_index)
                pending.append(body)
    return ops, outer


def _node_sizes(op: Any, spec: Any, sizes: Mapping[str, int]) -> dict[str, int]:
    """A node's dim sizes: its attributes' (hidden_size, num_directions), its static input dims
    (input_size in W), and ``sizes`` (else the spec's defaults) for the rest (batch_size, seq_length)."""
    from irtool.runtime.nodes import node_attributes

    found = {**spec.default_sizes, **sizes}
    found.update(spec.attribute_symbols(spec.fill_defaults(node_attributes(op, spec))))
    for port, value in zip(spec.inputs, (i.get_source_output() for i in op.inputs())):
        shape = value.get_partial_shape()
        for expr, dim in zip(port.dims or (), shape if shape.rank.is_static else ()):
            if isinstance(expr, Sym) and dim.is_static:
                found[expr.name] = dim.get_length()
    return found


def _through(node: Any) -> Any:
    while node.get_type_name() in VALUE_PRESERVING:
        node = node.input_value(0).get_node()
    return node


def _check_given(name: str, declared: Any, shape: tuple[int, ...]) -> None:
    if any(size < 0 for size in shape):
        raise RunError(f"--shape {name}={list(shape)}: sizes must be >= 0")
    if declared.rank.is_static and len(declared) != len(shape):
        raise RunError(f"--shape {name}={list(shape)}: input {name} has rank {len(declared)} ({declared})")
    if declared.rank.is_static:
        for k, (dim, size) in enumerate(zip(declared, shape)):
            if (dim.is_static and dim.get_length() != size) or (
                    dim.is_dynamic and not dim.get_min_length() <= size <= (
                        dim.get_max_length() if dim.get_max_length() >= 0 else size)):
                raise RunError(f"--shape {name}={list(shape)}: dim {k} must be {dim} (input {name} is {declared})")
