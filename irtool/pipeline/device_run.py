"""Stages 3 and 4 of the pipeline: the model (and its probed copy) compiled with an explicit
INFERENCE_PRECISION_HINT, the precision the device really runs at read back, and both inferred
on the same inputs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from irtool.core.errors import RunError
from irtool.judge.precision import Ran
from irtool.pipeline.prepare import Prepared, onnx_failure
from irtool.runtime.compile import DeviceRun, compile_on, infer, support_note
from irtool.runtime.narrowing import received
from irtool.runtime.what_ran import Implementation, what_ran


@dataclass(frozen=True)
class Compiled:
    """The model compiled on one device at one precision, and its probed copy when it needs one."""

    plain: Any
    probed: Any | None
    run: DeviceRun
    seconds: float
    implementations: Mapping[str, Implementation] = field(default_factory=dict)  # node name -> what ran
    input_names: tuple[str, ...] | None = None  # the model's own name of each input, in order

    @property
    def runs(self) -> dict[str, Ran]:
        """Per node name, what it ran as, for the precision model (irtool.judge.precision): on the first
        execution device."""
        run = self.run
        device = run.execution_devices[0] if run.execution_devices else run.device
        return {name: Ran(device, run.precision, ran.kinds, bool(ran.directions))
                for name, ran in self.implementations.items()}


def compile_prepared(prepared: Prepared, device: str, precision: str, config: Mapping[str, str],
                     probe: bool = True) -> Compiled:
    """Compile the model (and its probed copy, at the same time: OpenVINO's Core compiles from two
    threads, and compiling is mostly serial, so the pair costs about 1.4 plain compiles, measured,
    instead of 2); a device that cannot compile is asked which ops it does not support
    (query_model), so that is said rather than a crash text."""
    from concurrent.futures import ThreadPoolExecutor

    started = time.perf_counter()
    path = Path(prepared.name)
    try:
        probed = None
        if probe and prepared.probed.needs_probe and (prepared.probed.judgeable or prepared.onnx is not None):
            with ThreadPoolExecutor(2, thread_name_prefix="irtool-compile") as pool:
                copy = pool.submit(compile_on, prepared.probed.probed, device, precision, config, path)
                plain, device_run = compile_on(prepared.model, device, precision, config, path)
                probed, _ = copy.result()
        else:
            plain, device_run = compile_on(prepared.model, device, precision, config, path)
    except RunError as error:
        if prepared.onnx is not None and prepared.onnx.unsupported():
            raise onnx_failure(prepared.onnx, error) from None
        note = support_note(prepared.model, device)
        if note:
            raise RunError(f"{error.message}; {note}") from None
        raise
    seconds = time.perf_counter() - started
    # a body node runs inside its top-level container: what ran for that is what ran for it
    ran = what_ran(plain, list(prepared.probed.run_as), device_run.precision)
    return Compiled(plain, probed, device_run, seconds, ran, tuple(info.name for info in prepared.infos))


@dataclass(frozen=True)
class Executed:
    outputs: list[np.ndarray]  # the model's outputs, from the plain compile
    captured: list[np.ndarray]  # the probed copy's outputs (the model's own first), or ``outputs``
    seconds: float  # the plain inference
    # the inputs the device changed before its nodes received them (int64 run as int32), as received
    received: Mapping[str, np.ndarray] = field(default_factory=dict)
    narrowed: tuple[str, ...] = ()  # each such change, in words (irtool.runtime.narrowing)


def execute(compiled: Compiled, inputs: Mapping[str, np.ndarray], device: str) -> Executed:
    started = time.perf_counter()
    outputs = infer(compiled.plain, inputs, device, compiled.input_names)
    seconds = time.perf_counter() - started
    changed, narrowings = received(device, inputs)
    try:
        captured = infer(compiled.probed, inputs, device, compiled.input_names) if compiled.probed is not None \
            else outputs
    except RunError as error:  # the model ran: what failed is irtool's copy of it
        raise RunError(f"the probed copy (the model with every recurrent node's tensors as outputs, those in loop "
                       f"bodies kept for every iteration) failed where the model itself ran: {error.message}") from None
    return Executed(outputs, captured, seconds, changed, tuple(n.says(device) for n in narrowings))


ROUNDING_DRAWS = 2  # copies with the weights moved within their rounding, each compiled and inferred


def weights_rounding_cost(prepared: Prepared, compiled: Compiled, inputs: Mapping[str, np.ndarray],
                          config: Mapping[str, str]) -> dict[int, float]:
    """Per model output, what rounding the model's f16 or bf16 weights may move it by on these inputs:
    the most any of ROUNDING_DRAWS copies with its weights moved within half a unit of their type
    (irtool.runtime.model.weights_moved: one of the f32 weights that round to them, as a framework
    computing its expected outputs holds) moved it from what the model computes; empty where the
    model stores no weight so.  A framework's outputs differ from a compressed IR's by that much
    however right the device is: measured on a speech enhancer (GTCRN, 14 GRUs between convolutions)
    converted with ovc's defaults, the framework's own weights moved an output by 0.011 and random
    draws by 0.007 to 0.038, where f16's tolerance allowed 0.005."""
    from irtool.runtime.model import weights_moved

    cost: dict[int, float] = {}
    if prepared.stored is None:  # no f16 or bf16 weight behind a Convert (irtool.runtime.nodes.stored_precision)
        return cost
    # against the model's own outputs inferred again: ``executed`` may carry a fault a test planted after inference
    base = infer(compiled.plain, inputs, compiled.run.device, compiled.input_names)
    for seed in range(ROUNDING_DRAWS):
        copy = weights_moved(prepared.model, seed)
        if copy is None:
            return {}
        try:
            plain, _ = compile_on(copy, compiled.run.device, compiled.run.requested_precision, config,
                                  Path(prepared.name))
            outputs = infer(plain, inputs, compiled.run.device, compiled.input_names)
        except RunError:  # the copy is irtool's: the model ran, and is judged with the type's tolerance alone
            return {}
        for index, (moved, got) in enumerate(zip(outputs, base)):
            if np.dtype(got.dtype).kind != "f" or moved.shape != got.shape:
                continue
            change = np.abs(moved.astype(np.float64) - got.astype(np.float64))
            change = change[np.isfinite(change)]
            cost[index] = max(cost.get(index, 0.0), float(change.max()) if change.size else 0.0)
    return cost
