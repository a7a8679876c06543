"""``irtool run``: the pipeline's stages on one model, device and precision (or the model's
outputs against a second device), its inputs, verdict, reproducers and saved outputs.

A step that cannot go on raises RunError with one line naming the file, input or device and
what was expected; nothing here prints or exits, and openvino is touched only through
irtool.runtime.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from irtool.core.errors import RunError, RunSkipped, did_you_mean
from irtool.core.files import FileError, check_holds_no_input, check_not_input, writable_target
from irtool.core.npz import write_npz
from irtool.core.precisions import loosest_precision
from irtool.core.text import joined
from irtool.judge.compare import OutputDiff, TolerancePolicy, diff_outputs
from irtool.judge.expected import ExpectedJudgment, ExpectedOutputs, check_expected_names, load_expected
from irtool.judge.verdicts import FAIL, PASS, UNJUDGED, NodeResult, run_verdict, verdict_basis
from irtool.pipeline.device_run import Executed, compile_prepared, execute, weights_rounding_cost
from irtool.pipeline.inputs import case_inputs
from irtool.pipeline.judging import ProbeCheck, judge, unique_node_names, with_implementations
from irtool.pipeline.options import RunOptions
from irtool.pipeline.oracle import check_oracle, oracle_outputs
from irtool.pipeline.prepare import Prepared, read_and_prepare, validation_findings, with_validation
from irtool.pipeline.recording import ReplayBasis, load_recording, replayed_run, saved_outputs
from irtool.pipeline.replay import check_consistent, check_replay_inputs, replay_options
from irtool.pipeline.reproducer import ReproducerError, judged_ir_nodes, node_folder_name, write_judged_node_reproducer
from irtool.runtime.compile import DeviceRun
from irtool.runtime.devices import check_device, list_devices, skip_reason


@dataclass(frozen=True)
class InputSummary:
    name: str
    shape: tuple[int, ...]
    dtype: str
    value: Any = None  # a scalar input's value (a Loop's trip count, a flag): what decides which nodes run


@dataclass(frozen=True)
class RunResult:
    model: str
    op: str | None  # "GRUSequence-5 (layer 'gru')" for a model of one node fed by its inputs
    run: DeviceRun
    inputs_from: str  # "seed 0" or the .npz path
    inputs: tuple[InputSummary, ...]
    against: str | None  # "reference", a DeviceRun description, or None
    against_run: DeviceRun | None
    no_reference: str | None
    outputs: tuple[OutputDiff, ...]
    output_shapes: tuple[tuple[str, tuple[int, ...]], ...]
    verdict: str = UNJUDGED
    nodes: tuple[NodeResult, ...] = ()
    probe_check: ProbeCheck | None = None
    filled_defaults: tuple[str, ...] = ()
    saved_outputs: str | None = None
    shapes_chosen: Mapping[str, str] = field(default_factory=dict)
    input_notes: tuple[str, ...] = ()
    reproducers: Mapping[str, str] = field(default_factory=dict)  # node name -> reproducer folder
    second_opinion: Any = None  # irtool.judge.onnx_nodes.SecondOpinion with --compare-with onnxruntime
    oracle: ExpectedJudgment | None = None  # with --compare-with RUNTIME: the model's outputs against the runtime's
    oracle_refused: str | None = None  # the runtime would not run the model: why (nothing compared with it)
    unwritten: tuple[str, ...] = ()  # files asked for that could not be written (a full disk), and why
    reproducer_note: str | None = None  # with --reproducers: why none was written (no node failed)
    expected: ExpectedJudgment | None = None  # with --expected: the model's outputs against the file's
    narrowed: tuple[str, ...] = ()  # inputs the device changed before its nodes received them (int64 as int32)
    file_findings: str | None = None  # an IR file OpenVINO read though irtool validate finds errors or warnings
    replayed: str | None = None  # the outputs were recorded elsewhere: where from, and what says what ran
    replay: ReplayBasis | None = None  # in a replay: what was recorded and what assumed (nothing measured here)
    references: str | None = None  # at bf16 or f16: which reference the judged nodes were held to
    verdict_from: str = "nodes"  # "outputs": a comparison of the model's outputs decided it (verdict_basis)

    @property
    def passed(self) -> bool | None:
        """True or False when something was compared; None when nothing was."""
        return {PASS: True, FAIL: False}.get(self.verdict)


def run(options: RunOptions) -> RunResult:
    """``irtool run``: the pipeline's stages on one model, device and precision."""
    report = list_devices()
    asked = [(options.device, options.precision)] + ([options.compare_with] if options.compare_with else [])
    for device, _ in asked:  # a name OpenVINO does not know is a usage error, before any skip
        check_device(device, report)
    replaying = options.device_outputs is not None  # the device ran elsewhere: it need not be here
    for device, precision in asked if not replaying else ():
        reason = skip_reason(device, precision, report)
        if reason:
            raise RunSkipped(f"{reason}: nothing was run")
    inputs_read = run_inputs(options)
    if options.expected is not None and options.compare_with:
        raise RunError("--expected judges the model's outputs against a file and --compare-with DEVICE against a "
                       "second device: give one of them")
    if replaying and options.compare_with:
        raise RunError("--device-outputs judges outputs a device gave elsewhere; --compare-with DEVICE2 needs the "
                       "device here: give one of them")
    recording = load_recording(options.device_outputs) if replaying else None
    if recording is not None:
        options = replay_options(options, recording)
    expected = load_expected(options.expected) if options.expected is not None else None
    if options.save_outputs is not None:
        check_not_input(options.save_outputs, inputs_read, "--save-outputs file")
        writable_target(options.save_outputs, "outputs file")
    if options.oracle is not None:
        check_oracle(options.oracle, options.model)
    try:
        prepared = read_and_prepare(options.model, options.fill_defaults, options.shapes, options.inputs,
                                    options.sizes.get("batch_size"))
    except RunError as error:
        raise with_validation(error, options.model) from None
    if options.reproducers is not None:  # a node's folder is replaced whole: it must hold no input
        for name in prepared.node_names:
            check_holds_no_input(Path(options.reproducers) / node_folder_name(name), inputs_read,
                                 f"reproducer folder of node '{name}'")
    if expected is not None:
        check_expected_names(prepared.labels, expected)
    seed = options.seed if options.seed is not None else 0
    inputs, chosen, notes = case_inputs(prepared, options.inputs, seed, options.shapes, options.sizes)
    if recording is not None:
        inputs_said = check_replay_inputs(recording, inputs, options)
    _check_tolerance_names(prepared, options.tolerance)
    # --compare-with judges the model's outputs only: no probed copy to compile or infer
    try:
        if recording is not None:
            compiled, executed, said, basis = replayed_run(recording, prepared, options.device, options.precision,
                                                           options.config, options.precision_given, inputs)
            basis = dataclasses.replace(basis, inputs=inputs_said)
        else:
            compiled = compile_prepared(prepared, options.device, options.precision, options.config,
                                        probe=options.compare_with is None)
            executed = execute(compiled, inputs, options.device)
    except RunError as error:
        raise with_validation(error, options.model) from None
    single = prepared.single
    common = dict(model=str(options.model), op=f"{single.spec.key} (layer '{single.name}')" if single else None,
                  run=compiled.run, inputs_from=str(options.inputs) if options.inputs is not None else
                  f"seed {seed}",
                  inputs=tuple(InputSummary(name, tuple(a.shape), a.dtype.name, a.item() if a.ndim == 0 else None)
                               for name, a in inputs.items()),
                  output_shapes=tuple((names[0], tuple(a.shape)) for names, a in zip(prepared.labels, executed.outputs)),
                  filled_defaults=prepared.filled_defaults, shapes_chosen=chosen, input_notes=tuple(notes),
                  narrowed=executed.narrowed, file_findings=validation_findings(options.model),
                  replayed=said if recording is not None else None, replay=basis if recording is not None else None)
    result = _judged_run(options, prepared, compiled, inputs, executed, common, expected)
    # written after the verdict: a file that cannot be written (a full disk) is a note beside it
    unwritten = list(result.unwritten)
    saved = None
    if options.save_outputs is not None:
        try:
            generated = None if options.inputs is not None else {
                "seed": seed, "shapes": {k: list(v) for k, v in options.shapes.items()}, "sizes": dict(options.sizes)}
            saved = str(write_npz(options.save_outputs, saved_outputs(prepared, compiled, executed, inputs, generated,
                                                                      recording), "outputs file"))
        except FileError as error:
            unwritten.append(error.message)
    return dataclasses.replace(result, saved_outputs=saved, unwritten=tuple(unwritten))


def run_inputs(options: RunOptions) -> list[tuple[str, Path]]:
    """The files ``irtool run`` reads, by what they are to it: nothing it writes may replace them."""
    model = Path(options.model)
    found = [("the model", model)]
    if model.suffix.lower() == ".xml":
        found.append(("the model's weights", model.with_suffix(".bin")))
    if options.inputs is not None:
        found.append(("the --inputs file", Path(options.inputs)))
    if options.expected is not None:
        found.append(("the --expected file", Path(options.expected)))
    if options.device_outputs is not None:
        found.append(("the --device-outputs file", Path(options.device_outputs)))
    return found


def _judged_run(options: RunOptions, prepared: Prepared, compiled: Any, inputs: Mapping[str, np.ndarray],
                executed: Executed, common: dict, expected: ExpectedOutputs | None = None) -> RunResult:
    """The verdict of a run (and its reproducers, each written after the verdict it belongs to)."""
    if options.compare_with:
        other = compile_prepared(prepared, *options.compare_with, options.config, probe=False)
        expected = execute(other, inputs, options.compare_with[0]).outputs
        precision = loosest_precision([compiled.run.precision, other.run.precision])
        diffs = diff_outputs(prepared.labels, executed.outputs, expected, options.tolerance, precision)
        said = "--compare-with judges the model's outputs device against device"
        nodes = unique_node_names(
            (NodeResult(n.name, n.op_type, n.version, n.where, UNJUDGED, said, semantics="ONNX")
             for n in prepared.onnx.all_nodes) if prepared.onnx is not None else
            (NodeResult(n.key, n.spec.type, n.spec.version, n.where, UNJUDGED, said, tensors=n.tensors,
                        converted_to=n.name if n.stable else None) for n in prepared.nodes))
        return RunResult(**common, against=other.run.describe(), against_run=other.run, no_reference=None,
                         outputs=diffs, verdict=run_verdict(nodes, comparisons=[diffs]), nodes=nodes,
                         verdict_from=verdict_basis(nodes, [diffs]))
    oracle = oracle_outputs(options.oracle, options.model, prepared, inputs, options.tolerance) \
        if options.oracle is not None else None
    # a framework's outputs come from f32 weights: what rounding them to the model's f16 or bf16 ones costs is measured
    cost = weights_rounding_cost(prepared, compiled, inputs, options.config) \
        if (expected is not None or oracle is not None) and options.device_outputs is None else None
    judgment = judge(prepared, inputs, executed, options.tolerance, compiled.run.precision, expected=expected,
                     oracle=oracle.expected if oracle is not None else None, runs=compiled.runs,
                     dynamic_quantization=compiled.run.dynamic_quantization, weights_cost=cost)
    if judgment.expected is not None and judgment.expected.mismatch is not None:
        raise RunError(judgment.expected.mismatch)
    if options.device_outputs is not None:
        check_consistent(judgment, str(options.device_outputs))
    judgment = with_implementations(judgment, compiled)
    reproducers, unwritten = _write_reproducers(options, prepared, judgment, inputs, executed, compiled)
    note = None
    if options.reproducers is not None and not reproducers and not unwritten:
        note = f"no reproducer written to {options.reproducers}: no node failed"
    against = "reference" + (" (ONNX semantics: each ONNX node as its ONNX page defines it)"
                             if prepared.onnx is not None and prepared.onnx.all_nodes else "")

    return RunResult(**common, against=against if judgment.why_unjudged is None else None, against_run=None,
                     no_reference=judgment.why_unjudged, outputs=judgment.outputs, verdict=judgment.verdict,
                     nodes=judgment.nodes, probe_check=judgment.probe_check, reproducers=reproducers,
                     second_opinion=oracle.second_opinion if oracle is not None else None,
                     unwritten=tuple(unwritten), expected=judgment.expected, reproducer_note=note,
                     oracle=judgment.oracle, oracle_refused=oracle.refused if oracle is not None else None,
                     references=_references_used(judgment.nodes, compiled.run.precision),
                     verdict_from=judgment.verdict_from)


def _references_used(nodes: Sequence[NodeResult], precision: str) -> str | None:
    """At a reduced precision, which reference the judged nodes were held to: the emulation of their
    path (irtool.judge.precision), the ideal one within what that emulation's rounding moves them by
    (a cell lowered to plain ops), or the ideal one with the precision's default tolerance."""
    judged = [node for node in nodes if node.verdict in (PASS, FAIL)]
    if precision == "f32" or not judged:
        return None
    groups: dict[str, list[str]] = {}
    for node in judged:
        path = node.against.split(" (")[0].rpartition(" of ")[2] if node.against else ""
        kind = ("bounded" if node.against.startswith("the ideal reference") else "emulated") if path else "ideal"
        groups.setdefault(kind, []).append(path)
    words = {"emulated": f"against the {precision} emulation of their path",
             "bounded": f"against the ideal reference within what the {precision} emulation of their path moves "
                        f"them by (cells lowered to plain ops)",
             "ideal": f"against the ideal reference with {precision}'s default tolerance (no path of the "
                      f"precision model describes how they ran)"}
    return ", ".join(f"{len(paths)} node(s) {words[kind]}"
                            + (f" ({', '.join(sorted(set(paths)))})" if kind != "ideal" else "")
                            for kind, paths in groups.items())


def _write_reproducers(options: RunOptions, prepared: Prepared, judgment: Any, inputs: Mapping[str, np.ndarray],
                       executed: Executed, compiled: Any) -> tuple[dict[str, str], list[str]]:
    """A reproducer folder per failing node (an IR node's single-op IR, an ONNX node's single-node
    model), by node name, and what could not be written."""
    reproducers: dict[str, str] = {}
    unwritten = []
    if options.reproducers is None:
        return reproducers, unwritten
    ir_nodes = judged_ir_nodes(prepared, judgment.nodes)
    for result in judgment.nodes:
        if result.verdict != FAIL:
            continue
        folder = Path(options.reproducers) / node_folder_name(result.name)
        try:
            write_judged_node_reproducer(folder, prepared, ir_nodes.get(result.name), result, inputs, executed,
                                         compiled.run, options.config)
            reproducers[result.name] = str(folder)
        except ReproducerError as error:
            unwritten.append(error.message)
    return reproducers, unwritten


def _check_tolerance_names(prepared: Prepared, policy: TolerancePolicy) -> None:
    names = {name for names in prepared.labels for name in names}
    names |= {f"{prefix}{port.name}" for node in prepared.nodes for port in node.spec.outputs
              for prefix in ("", f"{node.key}:")}
    if prepared.onnx is not None:
        names |= prepared.onnx.tolerance_names()
    unknown = policy.unknown_outputs(names)
    if unknown:
        raise RunError(f"--atol/--rtol name output {unknown[0]}, which {prepared.name} does not have"
                       f"{did_you_mean(unknown[0], names)}; it names "
                       f"{joined(sorted(names), listed=12)}")
