"""``irtool build onnx-gru | onnx-lstm | onnx-rnn --opset N [options] -o FILE.onnx``.

A single-node ONNX model.  The attribute options, their types, help and defaults come from
onnx's schema registry (irtool.onnx.schema), one option per attribute of any version of the
op; an attribute the chosen opset does not have is refused by name.  Sizes are the dims no
attribute fixes (--batch, --seq-length, --input-size); hidden_size is the attribute.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from irtool.cli.common import UsageError, fail
from irtool.cli.options import SYMBOL_ALIASES, dynamic_symbols, option

_PARSERS: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "string": str}


def register(ops: argparse._SubParsersAction) -> None:
    """Add onnx-gru, onnx-lstm and onnx-rnn beside the IR ops."""
    from irtool.onnx import schema

    for op_type in schema.OPS:
        _add_op_parser(ops, op_type, schema)


def _attribute_help(attribute: Any, since: list[int], latest: int) -> str:
    text = attribute.description.split(". ")[0].rstrip(".")
    if attribute.default is not None:
        default = ",".join(map(str, attribute.default)) if isinstance(attribute.default, list) else attribute.default
        text += f" (default {default})"
    if since[0] > 1:
        text += f" (opset {since[0]} and later)"
    elif len(since) and since[-1] < latest:
        text += f" (opsets up to {since[-1]})"
    return text


def _list_type(kind: str) -> Callable[[str], list[Any]]:
    def parse(text: str) -> list[Any]:
        try:
            return [_PARSERS[kind](item.strip()) for item in text.split(",") if item.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {kind}s, got {text!r}") from None
    return parse


def _add_op_parser(ops: argparse._SubParsersAction, op_type: str, schema: Any) -> None:
    versions = schema.versions(op_type)
    latest = schema.get(op_type, versions[-1])
    parser = ops.add_parser(f"onnx-{op_type.lower()}", help=f"a single-node ONNX {op_type} model (options from onnx.defs)",
                            description=f"Write a model of one ONNX {op_type} node. Attribute options come from "
                                        f"onnx's schema registry ({op_type} versions {', '.join(map(str, versions))}).")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.onnx", help="model file to write")
    parser.add_argument("--opset", type=int, default=versions[-1], metavar="N",
                        help=f"opset of the model (default {versions[-1]}); the op's version is the highest of "
                             f"{', '.join(map(str, versions))} not above it")
    group = parser.add_argument_group("attributes (from onnx.defs)")
    by_name: dict[str, tuple[Any, list[int]]] = {}
    for version in versions:
        for name, attribute in schema.get(op_type, version).attributes.items():
            by_name[name] = (attribute, by_name.get(name, (None, []))[1] + [version])
    for name, (attribute, since) in sorted(by_name.items()):
        kind = attribute.kind
        parse = _list_type(kind[:-1]) if kind.endswith("s") else _PARSERS[kind]
        metavar = "A,B" if kind.endswith("s") else kind.upper()
        group.add_argument(option(name), dest=f"attr_{name}", type=parse, metavar=metavar,
                           help=_attribute_help(attribute, since, versions[-1]))
    sizes = parser.add_argument_group("sizes of the dims no attribute fixes")
    default_sizes = _default_sizes(op_type)
    for name, default in default_sizes.items():
        flags = [option(name)] + ([option(SYMBOL_ALIASES[name])] if name in SYMBOL_ALIASES else [])
        sizes.add_argument(*flags, dest=f"size_{name}", type=int, default=default, metavar="N",
                           help=f"{name} (default {default})")
    optional = [p.name for p in latest.inputs if p.optional]
    default_optional = [n for n in optional if n != "P"]
    data = parser.add_argument_group("inputs, outputs and data")
    data.add_argument("--optional-inputs", default=",".join(default_optional), metavar="NAMES",
                      help=f"the optional inputs the node takes, of {', '.join(optional)} "
                           f"(default {','.join(default_optional)}; '' for none)")
    data.add_argument("--sequence-lens", type=_list_type("int"), metavar="N,N",
                      help="values of sequence_lens, one per batch element (default: ragged, drawn from the seed)")
    outputs = [p.name for p in latest.outputs]
    data.add_argument("--outputs", default=",".join(outputs), metavar="NAMES",
                      help=f"the outputs the node produces, of {', '.join(outputs)} (default all)")
    data.add_argument("--weights-as-inputs", action="store_true",
                      help="W, R, B (and P) as graph inputs instead of initializers")
    data.add_argument("--element-type", choices=("f32", "f16", "f64"), default="f32")
    data.add_argument("--seed", type=int, default=0, help="seed of the weights and inputs (default 0)")
    data.add_argument("--dynamic", default="", metavar="DIMS",
                      help="comma-separated dims to leave symbolic in the graph (batch, seq_length, input_size)")
    data.add_argument("--save-inputs", type=Path, metavar="FILE.npz",
                      help="also write the graph inputs' values, keyed by ONNX input name")
    parser.set_defaults(handler=handle, onnx_op=op_type, size_names=list(default_sizes))


def _default_sizes(op_type: str) -> dict[str, int]:
    """The default sizes of the IR sequence op of the same family (GRUSequence's for GRU)."""
    from irtool.specs import registry

    spec = next(s for s in reversed(list(registry())) if s.family == op_type.lower() and s.form == "sequence")
    return spec.default_sizes


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def handle(args: argparse.Namespace) -> int:
    from irtool.onnx import schema
    from irtool.onnx.model import ModelError, generate, save, save_inputs

    attributes = {key[len("attr_"):]: value for key, value in vars(args).items()
                  if key.startswith("attr_") and value is not None}
    try:
        spec = schema.get(args.onnx_op, args.opset)
    except schema.SchemaError as error:
        raise UsageError(f"--opset {args.opset}: {error}") from None
    for name in attributes:
        if name not in spec.attributes:
            raise UsageError(f"{option(name)}: {spec.key} (opset {args.opset}) has no attribute {name}")
    try:
        generated = generate(args.onnx_op, args.opset, attributes, batch=args.size_batch_size,
                             seq_length=args.size_seq_length, input_size=args.size_input_size,
                             optional_inputs=_names(args.optional_inputs), sequence_lens=args.sequence_lens,
                             outputs=_names(args.outputs), weights_as_inputs=args.weights_as_inputs,
                             element_type=args.element_type, seed=args.seed,
                             dynamic=dynamic_symbols(args.dynamic, args.size_names))
        path = save(generated.model, args.output)
        if args.save_inputs:
            save_inputs(generated.feeds, args.save_inputs)
    except ModelError as error:
        fail(error.message)
        return 2
    graph = generated.model.graph
    node = graph.node[0]
    shown = " ".join(f"{a.name}={_shown(schema.node_attributes(node)[a.name])}" for a in node.attribute)
    inputs = ", ".join(f"{i.name}[{','.join(d.dim_param or str(d.dim_value) for d in i.type.tensor_type.shape.dim)}]"
                       for i in graph.input)
    initializers = ", ".join(t.name for t in graph.initializer) or "none"
    outputs = ", ".join(o.name for o in graph.output)
    print(f"wrote {path}: {spec.key} (opset {args.opset}) {shown}; inputs {inputs}; initializers {initializers}; "
          f"outputs {outputs}; onnx.checker: valid"
          + (f"; input values in {args.save_inputs}" if args.save_inputs else ""))
    return 0


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)
