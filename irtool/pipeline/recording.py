"""Device outputs recorded in one place and judged in another (``irtool run --device-outputs``).

``irtool run --save-outputs OUT.npz`` writes the model's outputs by name and, beside them in the
same file, what the run was: the device, the precision it ran at, the OpenVINO release, what each
recurrent node ran as (``RECORD``: JSON as bytes, so the file holds numbers only) and, where
irtool compiled a probed copy, every tensor it captured (``CAPTURED`` + index): the inputs and
outputs of nodes deep in the model.  A replay reads them back and the pipeline judges them as if
the device had just given them: how a lab's or a customer's outputs are judged on a laptop, and
how the precision model is checked on a CPU that does not compute bf16.

Keys under ``irtool:`` are the record's, never a model output's (irtool.judge.expected skips them).
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from irtool.core.device_names import device_family
from irtool.core.documents import load_json
from irtool.core.errors import RunError
from irtool.core.npz import RECORD_PREFIX, read_npz
from irtool.runtime.compile import DeviceRun
from irtool.runtime.what_ran import Implementation, contradicts, with_body_precision

RECORD = RECORD_PREFIX + "run"
CAPTURED = RECORD_PREFIX + "captured:"
REPLAYED = RECORD_PREFIX + "replayed"  # outputs a replay wrote (--save-outputs with --device-outputs): from where
VERSION = 1


def saved_outputs(prepared: Any, compiled: Any, executed: Any, inputs: Mapping[str, np.ndarray] | None = None,
                  generated: Mapping[str, Any] | None = None,
                  replayed: "Recording | None" = None) -> dict[str, np.ndarray]:
    """What ``--save-outputs`` writes of a run (and ``irtool harness --keep-outputs`` of each job): the
    model's outputs by name and the record of the run, with the probed copy's tensors where it ran one,
    and what the inputs were (their digest; how they were generated, where they were: ``generated``).
    Of a replay (``replayed``), the outputs as they were read, with the record they came with (or none)
    and a note that they are a replay's (``REPLAYED``): what was assumed here is never written as recorded."""
    outputs = {names[0]: array for names, array in zip(prepared.labels, executed.outputs)}
    if replayed is not None:
        note = {"from": replayed.source, "recorded": replayed.run is not None}
        return {**outputs, **{k: v for k, v in replayed.kept.items() if k != REPLAYED},
                REPLAYED: np.frombuffer(json.dumps(note, sort_keys=True).encode(), dtype=np.uint8)}
    captured = executed.captured if executed.captured is not executed.outputs else None
    said = None if inputs is None else {"digest": inputs_digest(inputs), **({"generated": dict(generated)}
                                                                            if generated is not None else {})}
    return {**outputs, **record_arrays(compiled.run, recorded_names(prepared, compiled.implementations), captured,
                                       said)}


def inputs_digest(inputs: Mapping[str, np.ndarray]) -> str:
    """The digest of a run's inputs (names, dtypes, shapes and values, in name order): what a replay
    checks its inputs by."""
    import hashlib

    digest = hashlib.blake2b(digest_size=12)
    for name in sorted(inputs):
        array = np.ascontiguousarray(inputs[name])
        digest.update(f"{name}\0{array.dtype.str}{array.shape}\0".encode("utf-8", "surrogatepass"))
        digest.update(array.tobytes())
    return digest.hexdigest()


def record_arrays(run: DeviceRun, implementations: Mapping[str, Implementation],
                  captured: Sequence[np.ndarray] | None, inputs: Mapping[str, Any] | None = None) -> dict[str, np.ndarray]:
    """What ``--save-outputs`` keeps beside the outputs: the run and what each node ran as, the
    probed copy's tensors (None: the model was run without one) and what the inputs were (None: not
    known)."""
    record = {"version": VERSION, "device": run.device, "requested_precision": run.requested_precision,
              "effective_precision": dict(run.effective_precision), "execution_devices": list(run.execution_devices),
              "config": dict(run.config), "openvino": run.openvino,
              "dynamic_quantization": run.dynamic_quantization,
              "implementations": {name: _implementation_json(ran) for name, ran in implementations.items()},
              "captured": None if captured is None else len(captured),
              **({"inputs": dict(inputs)} if inputs is not None else {})}
    arrays = {RECORD: np.frombuffer(json.dumps(record, sort_keys=True).encode(), dtype=np.uint8)}
    for k, array in enumerate(captured or ()):
        arrays[f"{CAPTURED}{k}"] = np.asarray(array)
    return arrays


@dataclass(frozen=True)
class Recording:
    """Outputs a device gave elsewhere, read back: by model output name, and what the record says."""

    source: str
    outputs: Mapping[str, np.ndarray]
    run: DeviceRun | None  # None: the file holds outputs only (no record: not written by --save-outputs)
    implementations: Mapping[str, Implementation]
    captured: tuple[np.ndarray, ...] | None  # the probed copy's tensors, where recorded
    inputs: Mapping[str, Any] | None = None  # the record's word on the inputs: digest, how generated
    kept: Mapping[str, np.ndarray] = field(default_factory=dict)  # the file's irtool: arrays, as read
    replay_of: str | None = None  # the file was written by a replay of this one (REPLAYED)

    def describe(self) -> str:
        """``OUT.npz (recorded on CPU at bf16, openvino 2026.4.1)`` or ``OUT.npz (no record of the run)``."""
        replay = f", written by a replay of {self.replay_of}" if self.replay_of is not None else ""
        if self.run is None:
            return f"{self.source} (no record of the run: outputs only{replay})"
        return f"{self.source} (recorded on {self.run.device} at {self.precision_said()}, openvino " \
               f"{self.run.openvino or 'unknown'}{replay})"

    def precision_said(self) -> str:
        """The precision the record says the device ran at (``bf16``, ``bf16/f32``)."""
        assert self.run is not None
        return recorded_precision(self.run)


def recorded_precision(run: DeviceRun) -> str:
    """The precision a recorded run ran at, as a replay says it (``bf16``, ``bf16/f32``)."""
    return "/".join(sorted(set(run.effective_precision.values()))) or run.requested_precision


def load_recording(path: str | Path) -> Recording:
    """The outputs and record of a --save-outputs file (or of any .npz of outputs by name)."""
    arrays = read_npz(path, "--device-outputs file")
    outputs = {key: array for key, array in arrays.items() if not key.startswith(RECORD_PREFIX)}
    if not outputs:
        raise RunError(f"{path}: holds no outputs; expected the model's outputs by name, as irtool run "
                       f"--save-outputs writes them")
    kept = {key: array for key, array in arrays.items() if key.startswith(RECORD_PREFIX)}
    replay_of = None
    if REPLAYED in arrays:
        try:
            replay_of = str(load_json(np.asarray(arrays[REPLAYED], dtype=np.uint8).tobytes())["from"])
        except (ValueError, KeyError, TypeError) as error:
            raise RunError(f"{path}: its note of the replay that wrote it ({REPLAYED}) cannot be read "
                           f"({type(error).__name__}: {error}); expected what irtool run --save-outputs writes") from None
    raw = arrays.get(RECORD)
    if raw is None:  # outputs (and captured tensors) without the record of the run
        count = next(k for k in range(len(arrays) + 1) if f"{CAPTURED}{k}" not in arrays)
        captured = tuple(arrays[f"{CAPTURED}{k}"] for k in range(count)) if count else None
        return Recording(str(path), outputs, None, {}, captured, None, kept, replay_of)
    try:
        record = load_json(np.asarray(raw, dtype=np.uint8).tobytes())
        run = DeviceRun(str(record["device"]), str(record["requested_precision"]),
                        {str(k): str(v) for k, v in record["effective_precision"].items()},
                        tuple(str(d) for d in record["execution_devices"]),
                        {str(k): str(v) for k, v in record["config"].items()}, str(record.get("openvino", "")),
                        None if record.get("dynamic_quantization") is None else int(record["dynamic_quantization"]))
        implementations = {str(name): _implementation(value) for name, value in record["implementations"].items()}
        count = record["captured"]
        captured = None if count is None else tuple(arrays[f"{CAPTURED}{k}"] for k in range(int(count)))
        inputs = record.get("inputs")
        if inputs is not None and not (isinstance(inputs, dict) and isinstance(inputs.get("digest"), str)
                                       and isinstance(inputs.get("generated", {}), dict)):
            raise TypeError(f"inputs is {str(inputs)[:80]}, not an object with a digest")
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as error:
        raise RunError(f"{path}: its record of the run ({RECORD}) cannot be read ({type(error).__name__}: {error}); "
                       f"expected what irtool run --save-outputs writes") from None
    return Recording(str(path), outputs, run, implementations, captured, inputs, kept, replay_of)


def with_case_record(recording: Recording, case_json: Mapping[str, Any], prepared: Any) -> Recording:
    """A reproducer folder's actual.npz written before ``--save-outputs`` wrote records, with the
    record its case.json gives: the device, the precision it ran at, its config and release, and
    what each node ran as (by node name, or by op type, as a harness result says it)."""
    from irtool.core.precisions import DEVICE_DEFAULT
    from irtool.runtime.what_ran import from_description

    try:
        result = case_json["result"]
        described = result.get("implementations") or {}
        implementations = {node.name: from_description(described[key]) for node in prepared.nodes
                           for key in [node.name if node.name in described else node.spec.type] if key in described}
        device, precision = str(case_json["device"]), str(case_json["precision"])
        # a folder irtool run --reproducers wrote before it kept these: the device at the precision asked
        effective = result.get("effective_precision") or ({device: precision} if precision != DEVICE_DEFAULT else None)
        run = DeviceRun(device, precision, {str(k): str(v) for k, v in effective.items()},
                        tuple(map(str, result.get("execution_devices") or (device,))),
                        {str(k): str(v) for k, v in (case_json.get("config") or {}).items()},
                        str(case_json.get("openvino") or ""))
    except (KeyError, TypeError, AttributeError) as error:
        raise RunError(f"{recording.source}: its case.json does not say how the job ran ({type(error).__name__}: "
                       f"{error}); expected what irtool harness writes in a reproducer folder") from None
    return dataclasses.replace(recording, run=run, implementations=implementations)


def recorded_outputs(recording: Recording, prepared: Any,
                     inputs: Mapping[str, np.ndarray] | None = None) -> list[np.ndarray]:
    """The recorded array of each model output (known by any of its names), in output order; each
    checked, where ``inputs`` are given, against the output: the shape the model gives it on them (as
    far as shape inference tells) and a dtype of its kind (RunError naming the file, the key, what it
    holds and what was expected: outputs the device cannot have given are never judged)."""
    from irtool.core.npz import describe_dtype

    found = []
    for names in prepared.labels:
        key = next((name for name in names if name in recording.outputs), None)
        if key is None:
            raise RunError(f"{recording.source}: has no array for the model's output {names[0]} (by any of its "
                           f"names: {', '.join(names)}); it holds {', '.join(sorted(recording.outputs))}")
        found.append((key, names[0], recording.outputs[key]))
    if inputs is not None:
        from irtool.runtime.output_shapes import output_shapes

        kinds = {"f": "float", "c": "complex", "b": "bool", "i": "int", "u": "int"}
        for (key, name, array), (shape, kind) in zip(found, output_shapes(prepared.model, inputs)):
            held = f"{describe_dtype(array.dtype)}{list(array.shape)}" if array.dtype.kind != "O" else "objects"
            wrong_kind = kind and kinds.get(array.dtype.kind) != kind
            wrong_shape = shape is not None and (len(array.shape) != len(shape) or any(
                want is not None and have != want for have, want in zip(array.shape, shape)))
            if wrong_kind or wrong_shape:
                want = "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]" if shape is not None else ""
                raise RunError(f"{recording.source}: {key} holds {held}; expected the model's output {name} as it "
                               f"gives it on these inputs: a{'n' if kind == 'int' else ''} {kind or 'numeric'} "
                               f"array{' ' + want if want else ''}")
    return [array for _, _, array in found]


def _implementation_json(ran: Implementation) -> dict[str, Any]:
    return {"layer_types": list(ran.layer_types), "exec_types": list(ran.exec_types),
            "precisions": list(ran.precisions), "directions": [_implementation_json(d) for d in ran.directions]}


def _implementation(value: Mapping[str, Any]) -> Implementation:
    return Implementation(tuple(map(str, value["layer_types"])), tuple(map(str, value.get("exec_types", ()))),
                          tuple(map(str, value.get("precisions", ()))),
                          tuple(_implementation(d) for d in value.get("directions", ())))


def recorded_names(prepared: Any, implementations: Mapping[str, Implementation]) -> dict[str, Implementation]:
    """What each node ran as, keyed as a record keeps it: by the node's key (its place, ``GRUSequence@0``,
    where OpenVINO named it by a process-wide counter, as it names the nodes of a model converted from
    ONNX: another process converts it to other names), else by name."""
    keys = {node.name: node.key for node in prepared.nodes}
    return {keys.get(name, name): ran for name, ran in implementations.items()}


def _by_name(prepared: Any, recorded: Mapping[str, Implementation]) -> dict[str, Implementation]:
    """A record's implementations keyed by this run's node names (:func:`recorded_names` read back)."""
    names = {node.key: node.name for node in prepared.nodes}
    return {names.get(key, key): ran for key, ran in recorded.items()}


@dataclass(frozen=True)
class ReplayBasis:
    """What a replay's judgment stands on, as it is said (text header, JSON ``replay``): nothing of
    it was measured here."""

    file: str
    run: str  # "recorded" (the file's record) or "assumed" (-d and --precision: the file has none)
    implementations: str  # "recorded", "assumed: ..." (the path this machine's CPU takes) or "unknown"
    inputs: str = ""  # how the inputs were matched with the outputs (set by the pipeline)


def replayed_run(recording: Recording, prepared: Any, device: str, precision: str,
                 config: Mapping[str, str], precision_given: bool = True,
                 inputs: Mapping[str, np.ndarray] | None = None) -> tuple[Any, Any, str, ReplayBasis]:
    """The compiled run and its outputs as the pipeline judges them, from a recording; where they
    came from and what says what each node ran as (the record; else, assumed, the path this machine's
    own device of that family takes, compiled at f32 to read it, at the precision given; else
    nothing: the ideal reference judges); and what of it was recorded and what assumed.  ``device``
    and a ``precision`` given explicitly must be the record's (RunError naming both); each output's
    array is checked against the model's output on ``inputs`` (:func:`recorded_outputs`)."""
    from irtool.core.precisions import DEVICE_DEFAULT
    from irtool.pipeline.device_run import Compiled, Executed

    outputs = recorded_outputs(recording, prepared, inputs)
    captured: Sequence[np.ndarray] = outputs
    if prepared.probed.needs_probe and prepared.probed.judgeable:
        if recording.captured is None:
            raise RunError(f"{recording.source}: holds the model's outputs only, and the recurrent nodes of "
                           f"{prepared.name} sit inside it: their inputs were not recorded; record with irtool run "
                           f"--save-outputs, which keeps every recurrent node's tensors")
        captured = list(recording.captured)
    if recording.run is not None:
        run, said = recording.run, "what each node ran as: the record's"
        _check_flags(recording, device, precision, precision_given)
        basis = ReplayBasis(recording.source, "recorded", "recorded")
        # a record written before a loop was said at its body's precision says its ports' (f32)
        implementations = {name: with_body_precision(ran, run.precision)
                           for name, ran in _by_name(prepared, recording.implementations).items()}
        family = device_family(run.execution_devices[0] if run.execution_devices else run.device)
        wrong = [node for node in prepared.nodes if not node.in_body and node.name in implementations
                 and contradicts(implementations[node.name], str(node.attributes.get("direction", "")), family)]
        if wrong:
            here, implementations_read = _here(prepared, config, run.precision), implementations
            implementations = {name: ran for name, ran in implementations.items()
                               if name not in {node.name for node in wrong}}
            implementations.update({node.name: here[node.name] for node in wrong if node.name in here})
            said += "; " + "; ".join(
                f"not {node.name}'s ({implementations_read[node.name].describe()}: one layer, where {family} "
                f"runs a bidirectional sequence as one kernel per direction, so the record misread what ran): "
                + ("read from this machine's CPU" if node.name in here else "unknown, so judged against the ideal reference")
                for node in wrong)
            basis = dataclasses.replace(basis, implementations="recorded, but for " + ", ".join(
                node.name for node in wrong) + ": assumed (the path this machine's CPU takes)")
    else:
        if precision == DEVICE_DEFAULT:
            raise RunError(f"{recording.source}: no record says which precision the device ran at; give it "
                           f"(--precision f32, bf16 or f16)")
        run = DeviceRun(device, precision, {device: precision}, (device,), dict(config), "not recorded")
        implementations, said = {}, "what each node ran as: unknown (no record), so each is judged against the ideal reference"
        basis = ReplayBasis(recording.source, "assumed", "unknown")
        if device_family(device) == "CPU":
            implementations = _here(prepared, config, precision)
            if implementations:
                said = (f"what each node ran as: assumed, the path this machine's CPU takes (read at f32), run at "
                        f"{precision} (the file has no record of the run)")
                basis = dataclasses.replace(basis, implementations=f"assumed: the path this machine's CPU takes "
                                                                   f"(read at f32), run at {precision}")
    compiled = Compiled(None, None, run, 0.0, implementations, tuple(info.name for info in prepared.infos))
    return compiled, Executed(list(outputs), list(captured), 0.0), f"outputs from {recording.describe()}; {said}", basis


def _check_flags(recording: Recording, device: str, precision: str, precision_given: bool) -> None:
    """-d, and --precision where given, against the record: a replay judges what the record says ran."""
    run = recording.run
    assert run is not None
    where = f"{recording.source}: recorded on {run.device} at {recording.precision_said()}"
    if device not in (run.device, *run.execution_devices):
        raise RunError(f"{where}; -d {device} contradicts the record: give -d {run.device} (a replay judges "
                       f"the outputs as the device that gave them ran)")
    if precision_given and precision not in (run.requested_precision, *run.effective_precision.values()):
        raise RunError(f"{where} ({run.requested_precision} requested); --precision {precision} contradicts the "
                       f"record: leave --precision out (the record's is used) or give {run.requested_precision}")


def _here(prepared: Any, config: Mapping[str, str], precision: str) -> Mapping[str, Implementation]:
    """What each node runs as on this machine's CPU, compiled at f32 to read the path the model takes
    there, said at ``precision`` (the one the judgment holds it to: what is shown is what judged it);
    empty where this machine has no CPU device OpenVINO can use."""
    from irtool.pipeline.device_run import compile_prepared
    from irtool.runtime.devices import list_devices, skip_reason

    if skip_reason("CPU", "f32", list_devices()) is not None:
        return {}
    return {name: _at(ran, precision)
            for name, ran in compile_prepared(prepared, "CPU", "f32", config, probe=False).implementations.items()}


def _at(ran: Implementation, precision: str) -> Implementation:
    """What ran at f32 here, said at the precision the judgment assumes it ran at there."""
    if not ran.layer_types and not ran.directions:
        return ran
    return Implementation(ran.layer_types, ran.exec_types, (precision,) if ran.layer_types else ran.precisions,
                          tuple(_at(d, precision) for d in ran.directions))
