"""``validate --with-openvino``: OpenVINO's own reader beside irtool's verdict.

The one module of the validator that asks OpenVINO (through irtool.runtime), lazily and
only when asked.
For layers that have no spec here, it compares the declared output dims with the
shapes OpenVINO infers, since nothing else checks them.
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from irtool.core.diagnostics import CODES, Diagnostic, FileReport, sorted_diagnostics
from irtool.core.shapes import ShapeSyntaxError, dims_compatible, format_shape, parse_dim
from irtool.ir import IRModel, IRParseError, parse_ir
from irtool.specs import registry


def check_with_openvino(report: FileReport, path: str | Path) -> FileReport:
    """Add OpenVINO's verdict (IR080/IR081) and its shape disagreements (IR082) to a report."""
    from irtool.runtime.core import openvino_release
    from irtool.runtime.frontends import read_ir_frontend
    from irtool.runtime.model import undecodable_name

    version = openvino_release()

    def add(code: str, message: str, **where) -> None:
        report.diagnostics.append(Diagnostic(code, CODES[code].severity, message, path=str(path), **where))

    try:
        ir = parse_ir(path)
    except IRParseError:
        ir = None
    if ir is not None and not ir.is_net:
        add("IR083", "OpenVINO reads whole nets only; a lone <layer> was not given to it")
        return replace(report, diagnostics=sorted_diagnostics(report.diagnostics))
    weights = Path(path).with_suffix(".bin")
    if os.path.lexists(weights):  # OpenVINO would wait forever on a FIFO, or read a link out of the folder
        from irtool.core.model_files import ModelFileError, check_model_file

        try:
            check_model_file(path, weights.name, "its weights file")
        except ModelFileError as error:
            add("IR083", f"OpenVINO was not asked: {weights.name} is not a regular file inside the model's folder "
                         f"({error.message})")
            return replace(report, diagnostics=sorted_diagnostics(report.diagnostics))
    model, problem = read_ir_frontend(path)
    if model is None:
        add("IR080", f"OpenVINO {version} cannot read the file: {problem}")
        return replace(report, diagnostics=sorted_diagnostics(report.diagnostics))
    add("IR081", f"OpenVINO {version} read the file")
    if ir is not None and undecodable_name(model) is None:  # (its names, as OpenVINO gives them, are compared)
        _compare_unspecified(ir, model, add)
    return replace(report, diagnostics=sorted_diagnostics(report.diagnostics))


def _compare_unspecified(ir: IRModel, model, add) -> None:
    nodes = {op.get_friendly_name(): op for op in model.get_ordered_ops()}
    specs = registry()
    for layer in ir.layers:
        if layer.type is None or specs.for_ir(layer.type, layer.version) is not None:
            continue
        node = nodes.get(layer.name)
        if node is None:
            continue
        for index, port in enumerate(layer.outputs[: node.get_output_size()]):
            inferred = node.get_output_partial_shape(index)
            try:
                declared = tuple(parse_dim(text) for text in port.dims)
            except ShapeSyntaxError:
                continue
            if inferred.rank.is_dynamic:
                continue
            ov_dims = tuple(parse_dim(str(d)) for d in inferred)
            if len(declared) != len(ov_dims) or not all(dims_compatible(a, b) for a, b in zip(declared, ov_dims)):
                line, column = ir.locate(port.line, "<port")
                add("IR082", f"{layer.label} port {port.id}: declares {format_shape(declared)}, OpenVINO infers "
                             f"{format_shape(ov_dims)}", line=line, column=column, layer_id=layer.id,
                    layer_name=layer.name, port_id=port.id, expected=format_shape(ov_dims),
                    found=format_shape(declared))
