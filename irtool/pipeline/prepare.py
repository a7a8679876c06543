"""Stage 1 of the pipeline: a model read and prepared for a run.

Its recurrent nodes are found and the probed copy that exposes their inputs and outputs is made
(irtool.runtime.probe); an .onnx model keeps its ONNX graph beside it, whose nodes are judged in
ONNX semantics.  A model OpenVINO cannot convert is said with the features its nodes use that
OpenVINO lacks, or the known faults of its frontend.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Sequence

from irtool.core import activity
from irtool.core.errors import IrtoolBug, IrtoolError, OpenVINOFailed, RunError, Unsupported
from irtool.core.formats import model_format
from irtool.core.text import counted
from irtool.judge import known_faults
from irtool.runtime.iterations import check_iterations
from irtool.runtime.model import InputInfo, check_element_types, model_inputs, read_model, tensor_name
from irtool.runtime.nodes import ProbedModel, RecurrentNode, stored_precision
from irtool.runtime.probe import probe_model


@dataclass(frozen=True)
class Prepared:
    """A model ready to run: the ov.Model, its recurrent nodes and probed copy, its inputs and
    output names."""

    model: Any
    name: str  # what messages call it (the file name)
    probed: ProbedModel
    infos: tuple[InputInfo, ...]
    labels: tuple[tuple[str, ...], ...]  # per model output: its names, the spec's port name first
    filled_defaults: tuple[str, ...] = ()
    onnx: Any = None  # an .onnx model's irtool.onnx.graph.OnnxGraph: its nodes are judged in ONNX semantics
    stored: str | None = None  # the coarsest type the model's constants are stored as behind a Convert (f16, bf16)
    # input name -> the sizes irtool converted it at and why (a frontend that converts it only with shapes)
    converted_at: Mapping[str, str] = dataclasses.field(default_factory=dict)

    @property
    def nodes(self) -> tuple[RecurrentNode, ...]:
        return self.probed.nodes

    @property
    def node_names(self) -> tuple[str, ...]:
        """The names of the nodes a run judges: an .onnx model's ONNX nodes (its subgraphs' too), else
        the recurrent nodes OpenVINO holds."""
        if self.onnx is not None:
            return tuple(node.name for node in self.onnx.all_nodes) + \
                tuple(node.key for node in self.nodes if node.lowered is not None)
        return tuple(node.key for node in self.nodes)

    @cached_property
    def single(self) -> RecurrentNode | None:
        """The node of a model that is one recurrent node fed by its inputs and Consts (what
        ``irtool build`` writes), else None; read from the graph once (a worker asks per job)."""
        nodes = self.probed.nodes
        if len(nodes) != 1 or not nodes[0].fed_by_model_inputs:
            return None
        ops = {op.get_type_name() for op in self.probed.model.get_ordered_ops()}
        return nodes[0] if ops <= {"Parameter", "Constant", "Convert", "Result", nodes[0].spec.type} else None


def prepare(model: Any, name: str, filled_defaults: tuple[str, ...] = (), onnx: Any = None,
            generated_names: bool = False) -> Prepared:
    """``onnx``: the OnnxGraph the model was converted from; its recurrent nodes' tensors are
    probed by their ONNX names, and those nodes are what :func:`judge` judges.  ``generated_names``:
    a frontend converted the model in this process, and names OpenVINO made by its counter are
    keyed by the node's place (irtool.runtime.nodes.stable_keys)."""
    check_element_types(model, name)
    check_iterations(model, name, activity.step_limit())  # a Loop known to outrun --timeout, before any compile
    # an ONNX model's nodes in subgraphs are judged as ONNX nodes, through their tensors' ONNX names
    # in OpenVINO's bodies: the nodes OpenVINO converted them to there need no probes of their own
    probed = probe_model(model, onnx.computed_tensors() if onnx is not None else (), generated_names,
                         body_nodes=onnx is None)
    single = probed.nodes[0] if len(probed.nodes) == 1 and probed.nodes[0].fed_by_model_inputs else None
    return Prepared(model, name, probed, tuple(model_inputs(model, name)),
                    tuple(output_labels(model, single if onnx is None else None)), filled_defaults, onnx,
                    stored_precision(model))


def prepare_equivalent(judged: Any, runs: Any, name: str) -> Prepared:
    """A model that runs in place of a single-op model it computes the same as (a cell decomposed
    into plain ops): the device compiles and runs ``runs``, whose outputs are judged as those of
    ``judged``'s node, on the same inputs.  The two must have the same inputs and outputs."""
    prepared = prepare(judged, name)
    same_inputs = [p.get_friendly_name() for p in judged.get_parameters()] == \
        [p.get_friendly_name() for p in runs.get_parameters()]
    if prepared.single is None or not same_inputs or len(judged.outputs) != len(runs.outputs):
        raise IrtoolBug(f"{name}: the model run in its place does not have its inputs and outputs")
    return dataclasses.replace(prepared, model=runs)


def read_and_prepare(path: str | Path, fill_defaults: bool = False,
                     shapes: Mapping[str, Sequence[int]] | None = None,
                     inputs_file: str | Path | None = None, batch: int | None = None) -> Prepared:
    """A model file read and prepared; ``shapes`` and the arrays of ``inputs_file`` give its input
    shapes to a frontend that converts it only with them, else ``batch`` (--batch) sizes its
    dynamic dims there (irtool.runtime.model.read_model)."""
    graph = None
    if Path(path).suffix.lower() == ".onnx":
        from irtool.ir.parse import DEFAULT_MAX_BYTES
        from irtool.onnx.graph import load_graph
        from irtool.runtime.model import check_model_path

        check_model_path(Path(path))
        graph = load_graph(path, DEFAULT_MAX_BYTES)
    try:
        loaded = read_model(path, fill_defaults, lambda: conversion_shapes(shapes, inputs_file), batch)
    except RunError as error:
        raise onnx_failure(graph, error) from None
    found = model_format(path)
    prepared = prepare(loaded.model, loaded.path.name, loaded.filled_defaults, graph,
                       generated_names=found is not None and found.frontend != "ir")
    return dataclasses.replace(prepared, converted_at=dict(loaded.converted_at)) if loaded.converted_at else prepared


def with_validation(error: RunError, path: str | Path | None) -> RunError:
    """An IR file OpenVINO could not read, compile or run, said with the first error ``irtool
    validate`` finds in it, where it finds one: OpenVINO reads some files leniently and fails
    later for a reason it does not name (a Parameter shape ``2,-5,3`` is read as ``2,0,3``, and
    the compile then fails on a time loop of -1 steps).  The error's own class is kept."""
    if not isinstance(error, OpenVINOFailed) or "irtool validate finds" in error.message:
        return error
    from irtool.core.diagnostics import ERROR

    report = _ir_report(path)  # None: the file cannot be read again, and the error stands as it is
    first = next((d for d in report.diagnostics if d.severity == ERROR), None) if report is not None else None
    if first is None:
        return error
    return type(error)(f"{error.message}; irtool validate finds an error in the file: {_said(report, first)}")


def validation_findings(path: str | Path) -> str | None:
    """What ``irtool validate`` finds wrong in an IR file OpenVINO read anyway, for run to say beside
    its verdict (what ran is what OpenVINO made of the file: of an attribute given twice, it took
    one): the counts of errors and warnings and the first of the worst; None where it finds
    neither, or the file is not IR XML."""
    from irtool.core.diagnostics import ERROR, SEVERITIES, WARNING

    report = _ir_report(path)
    found = [d for d in report.diagnostics if d.severity in (ERROR, WARNING)] if report is not None else []
    if not found:
        return None
    first = min(found, key=lambda d: SEVERITIES.index(d.severity))  # the first error, else the first warning
    counts = " and ".join(counted(report.count(severity), severity) for severity in (ERROR, WARNING)
                          if report.count(severity))
    return (f"irtool validate finds {counts} in the file, which OpenVINO read as it could; the first: "
            f"{_said(report, first)}")


def _ir_report(path: str | Path | None) -> Any:
    """``irtool validate``'s FileReport of an IR XML file; None for another format, or a file that
    cannot be read again."""
    if path is None or Path(path).suffix.lower() != ".xml":
        return None
    from irtool.validate import validate_file

    try:
        return validate_file(path)
    except (OSError, IrtoolError):
        return None


def _said(report: Any, diagnostic: Any) -> str:
    """One diagnostic as ``irtool validate`` prints it: ``PATH:LINE:COL: severity[CODE] message``."""
    from irtool.core.diagnostics import FileReport, render_text

    return render_text([FileReport(report.path, [diagnostic])], summary=False).strip()


def conversion_shapes(shapes: Mapping[str, Sequence[int]] | None,
                      inputs_file: str | Path | None) -> dict[str, tuple[int, ...]]:
    """Input shapes for a conversion that needs them: the arrays' of ``inputs_file``, ``shapes``
    (--shape) over them."""
    found: dict[str, tuple[int, ...]] = {}
    if inputs_file is not None:
        from irtool.core.npz import read_npz

        found.update((key, tuple(array.shape)) for key, array in read_npz(Path(inputs_file), "inputs file").items())
    found.update((key, tuple(shape)) for key, shape in (shapes or {}).items())
    return found


def prepare_onnx(model: Any, name: str) -> Prepared:
    """An onnx.ModelProto held in memory (a harness case of the onnx frontend), read by OpenVINO's
    ONNX frontend; ``name`` is what messages call it."""
    from irtool.onnx.graph import graph_of
    from irtool.runtime.model import read_onnx_bytes

    graph = graph_of(model, Path(name))
    try:
        converted = read_onnx_bytes(model.SerializeToString(), name)
    except RunError as error:
        raise onnx_failure(graph, error) from None
    return prepare(converted, name, (), graph)


def onnx_failure(graph: Any, error: RunError) -> RunError:
    """An ONNX model OpenVINO could not read or compile: the activations it does not implement,
    named, when the nodes use any (an unsupported feature, not a wrong result); else the error
    with the frontend's known faults for its nodes (layout=1 read as layout 0 makes dims clash)."""
    said = graph.unsupported() if graph is not None else None
    if not said and isinstance(error, Unsupported):  # an op this release's ONNX frontend cannot convert
        return error
    if not said:
        limits = [f"node '{node.name}' ({node.key}): {limit}" for node in graph.all_nodes
                  for limit in known_faults.by_properties(node.frontend_properties({}))] if graph is not None else []
        return RunError(f"{error.message}; known faults of OpenVINO's ONNX frontend that may explain it: "
                        f"{'; '.join(limits)}") if limits else error
    tail = error.message
    for marker in ("CALLBACK HAS THROWN: ", "with a message: "):  # compile's, then the frontend's
        tail = tail.rpartition(marker)[2]
    return Unsupported(f"{graph.path}: {said} (OpenVINO: {tail})")


def output_labels(model: Any, node: RecurrentNode | None = None) -> list[tuple[str, ...]]:
    """For each model output, its names: first the spec's port name when ``node`` returns it."""
    ports = {index: node.spec.outputs[port].name for port, index in (node.model_outputs or {}).items()} if node else {}
    labels = []
    for k, output in enumerate(model.outputs):
        names = [tensor_name(output)] + sorted(output.get_names())
        if k in ports:
            names.insert(0, ports[k])
        labels.append(tuple(dict.fromkeys(names)))
    firsts = [names[0] for names in labels]
    if len(set(firsts)) != len(firsts):  # two Results of one port: number them
        labels = [(f"{names[0]}#{k}",) + names for k, names in enumerate(labels)]
    return labels
