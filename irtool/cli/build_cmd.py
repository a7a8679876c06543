"""``irtool build OP [options] -o FILE.xml``: write a single-op IR model.

(``irtool build onnx-gru | onnx-lstm | onnx-rnn ... -o FILE.onnx`` writes a single-node ONNX
model instead: irtool/cli/build_onnx.py.)

One sub-command per RNN-family op (gru-sequence, lstm-cell, ...).  Its options are made
from the op's spec: one per attribute (typed, with the spec's default and allowed values)
and one per dim symbol that no attribute fixes (--batch, --seq-length, --input-size).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from irtool.cli.common import UsageError
from irtool.cli.options import SYMBOL_ALIASES, dynamic_symbols, option, seed
from irtool.specs import AttributeSpec, OpSpec, registry, snake_case
from irtool.specs.cases import ELEMENT_TYPES, free_symbols
from irtool.specs.values import format_value


def command_name(op_type: str) -> str:
    """GRUSequence -> gru-sequence, LSTMCell -> lstm-cell."""
    return snake_case(op_type).replace("_", "-")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "build", help="write a single-op IR model (options from the op's spec)",
        description="Write a model of one recurrent op (its .xml and .bin) through OpenVINO's own op "
                    "factories. Each op's options (attributes, sizes) come from its spec file; "
                    "'irtool build OP --help' lists them. Example: irtool build gru-sequence --hidden-size 16 "
                    "--direction forward -o gru.xml. Exit 0 when written, 2 on a bad option.")
    ops = parser.add_subparsers(dest="op", metavar="OP", parser_class=type(parser))
    for op_type in registry().types():
        spec = registry().get(op_type)
        if spec is not None and spec.family:
            _add_op_parser(ops, spec)
    from irtool.cli import build_onnx

    build_onnx.register(ops)
    parser.set_defaults(handler=lambda args: _missing_op(parser))


def _missing_op(parser: argparse.ArgumentParser) -> int:
    parser.print_usage()
    raise UsageError("build: name an op, e.g. irtool build gru-sequence --hidden-size 16 --direction forward -o gru.xml")


def _add_op_parser(ops: argparse._SubParsersAction, spec: OpSpec) -> None:
    # Only the versions whose spec names an openvino factory are offered (LSTMSequence-1 is
    # validated, but OpenVINO 2026 cannot load it: asked for anyway, the build says why).
    versions = [s.version for s in registry().versions(spec.type) if s.factory is not None]
    parser = ops.add_parser(command_name(spec.type), help=f"{spec.type}: {spec.description}",
                            description=f"{spec.key}: {spec.description} Options come from {Path(spec.path).name}.")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.xml",
                        help="model file to write (its .bin goes beside it)")
    parser.add_argument("--op-version", type=int, default=spec.version, metavar="{" + ",".join(map(str, versions)) + "}",
                        help=f"op version to build (default {spec.version})")
    group = parser.add_argument_group("attributes (from the op's spec)")
    for attribute in spec.attributes.values():
        _add_attribute(group, attribute)
    sizes = parser.add_argument_group("sizes of the dims no attribute fixes")
    symbols = free_symbols(spec)
    for name in symbols:
        flags = [option(name)] + ([option(SYMBOL_ALIASES[name])] if name in SYMBOL_ALIASES else [])
        sizes.add_argument(*flags, dest=f"size_{name}", type=int, metavar="N",
                           help=f"{name} (default {spec.default_sizes[name]})")
    data = parser.add_argument_group("data")
    data.add_argument("--element-type", choices=tuple(ELEMENT_TYPES), default="f32")
    data.add_argument("--seed", type=seed, default=0, help="seed of the Const weights (default 0)")
    data.add_argument("--weights-as-parameters", action="store_true", help="W, R, B as model inputs, not Consts")
    dynamic_names = ", ".join(SYMBOL_ALIASES.get(n, n) for n in symbols)
    data.add_argument("--dynamic", default="", metavar="DIMS",
                      help=f"comma-separated dims to leave dynamic ({dynamic_names})")
    parser.set_defaults(handler=handle, op_type=spec.type, symbols=symbols)


def _add_attribute(group: argparse._ArgumentGroup, attribute: AttributeSpec) -> None:
    help_text = attribute.description or attribute.name
    if attribute.allowed:
        help_text += f"; one of {', '.join(attribute.allowed)}"
    if attribute.default is not None:
        help_text += f" (default {format_value(attribute.default) or 'empty'})"
    dest = f"attr_{attribute.name}"
    if attribute.type == "bool":
        group.add_argument(option(attribute.name), dest=dest, action=argparse.BooleanOptionalAction,
                           default=None, help=help_text)
        return
    metavar = _list_metavar(attribute.length) if attribute.type.endswith("_list") else attribute.type.upper()
    group.add_argument(option(attribute.name), dest=dest, type=_attribute_type(attribute), metavar=metavar,
                       required=attribute.required, help=help_text)


def _list_metavar(length: int | None) -> str:
    """``A,B,C`` for a list of three (LSTM's activations), ``A,B,...`` for a list of any length."""
    return ",".join("ABCDEFGH"[:length]) if length and length <= 8 else "A,B,..."


def _attribute_type(attribute: AttributeSpec) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value, problems = attribute.parse(text)
        if problems:
            raise argparse.ArgumentTypeError(problems[0].message)
        return value
    return parse


def handle(args: argparse.Namespace) -> int:
    from irtool.pipeline.build import build_and_save
    from irtool.specs.cases import OpCase

    attributes = {key[len("attr_"):]: value for key, value in vars(args).items()
                  if key.startswith("attr_") and value is not None}
    sizes = {key[len("size_"):]: value for key, value in vars(args).items()
             if key.startswith("size_") and value is not None}
    case = OpCase(args.op_type, attributes, sizes, version=args.op_version, element_type=args.element_type,
                  seed=args.seed, weights_as_parameters=args.weights_as_parameters,
                  dynamic=dynamic_symbols(args.dynamic, args.symbols))
    xml_path, bin_path = build_and_save(case, args.output)
    attributes_text = " ".join(f"{k}={format_value(v)}" for k, v in case.filled_attributes.items() if v != [])
    inputs = ", ".join(f"{p.name}[{','.join(str(d) if d >= 0 else '?' for d in case.partial_shape(p))}]"
                       for p in case.ports if case.is_parameter(p))
    print(f"wrote {xml_path} and {bin_path.name}: {case.spec.key} {attributes_text}; inputs {inputs}; "
          f"weights as {'Parameters' if case.weights_as_parameters else 'Consts'}")
    return 0
