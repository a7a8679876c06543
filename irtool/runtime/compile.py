"""Compiling with an explicit precision, reading back what the device runs at, and inferring."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from irtool.core.activity import doing
from irtool.core.element_types import PACKED, pack, unpack
from irtool.core.errors import IrtoolBug, OpenVINOFailed, RunError
from irtool.core.precisions import DEVICE_DEFAULT, loosest_precision
from irtool.runtime.core import core, openvino_message, openvino_version
from irtool.runtime.devices import PRECISION_HINT, VIRTUAL_DEVICES, physical_devices, precision_name
from irtool.runtime.model import tensor_name
from irtool.runtime.nodes import node_spec


DYNAMIC_QUANTIZATION = "DYNAMIC_QUANTIZATION_GROUP_SIZE"


@dataclass(frozen=True)
class DeviceRun:
    device: str
    requested_precision: str
    effective_precision: Mapping[str, str]  # execution device -> precision read back
    execution_devices: tuple[str, ...]
    config: Mapping[str, str]
    openvino: str = ""  # the release that compiled it (openvino.get_version())
    # the compiled model's DYNAMIC_QUANTIZATION_GROUP_SIZE (a CPU's; 0 where it quantizes no activations
    # at run time, None where the device has no such property): see irtool.judge.quantized
    dynamic_quantization: int | None = None

    @property
    def precision(self) -> str:
        """The precision the tolerance is chosen by: the loosest one any device runs at."""
        values = list(self.effective_precision.values())
        return loosest_precision(values) if values else self.requested_precision

    def describe(self) -> str:
        effective = sorted(set(self.effective_precision.values()))
        return f"{self.device} ({'/'.join(effective) or 'precision unknown'})"


def support_note(model: Any, device: str, listed: int = 8) -> str | None:
    """What the device says (query_model) it does not support of a model it could not compile,
    as a note for the compile's own error (which names the op and the cause; the query alone may
    list every op of a subgraph the plugin gave up on: openvino 2024.6.0 lists the Constants and
    ShapeOfs around an LSTMSequence it cannot take), or None when it lists nothing.

    A query that fails outright (the model cannot be transformed for the device) says nothing
    beyond the compile's error.
    """
    query_device = device if physical_devices(device) or device not in VIRTUAL_DEVICES else \
        f"{device}:{','.join(core().available_devices)}"
    try:
        supported = core().query_model(model, query_device)
    except RuntimeError:
        return None
    unsupported = [f"{op.get_friendly_name()} ({op.get_type_name()})" for op in model.get_ordered_ops()
                   if op.get_friendly_name() not in supported]
    if not unsupported:
        return None
    more = f", and {len(unsupported) - listed} more" if len(unsupported) > listed else ""
    return f"query_model: {device} does not support {len(unsupported)} op(s): {', '.join(unsupported[:listed])}{more}"


def compile_on(model: Any, device: str, precision: str, config: Mapping[str, str], xml_path: Path) -> tuple[Any, DeviceRun]:
    """Compile with an explicit precision hint, or with none for ``default`` (the precision the
    device picks for itself: bf16 on a CPU with AVX512_BF16 or AMX, f32 on one without, as its
    INFERENCE_PRECISION_HINT property says), and read back what the device really runs at.
    A ``default`` compile whose precision cannot be read back is a RunError: its tolerance
    would be a guess.

    Measured with openvino 2026.4.1: CPU, AUTO, HETERO, MULTI and BATCH all accept the hint as
    a top-level property and pass it on; CPU and BATCH report it back directly, AUTO, HETERO and
    MULTI only per device under DEVICE_PROPERTIES (and BATCH refuses DEVICE_PROPERTIES).
    """
    full_config = dict(config) if precision == DEVICE_DEFAULT else {PRECISION_HINT: precision, **config}
    try:
        with doing(None, f"compiling it for {device}"):
            compiled = core().compile_model(model, device, full_config)
    except RuntimeError as error:
        raise OpenVINOFailed(explain_failure(model, device, xml_path, error)) from None
    execution = tuple(str(d) for d in _compiled_property(compiled, "EXECUTION_DEVICES", ()))
    effective = _effective_precision(compiled, execution)
    if precision == DEVICE_DEFAULT and not effective:
        raise RunError(f"{device} does not say which precision it chose for {xml_path.name} (no {PRECISION_HINT} "
                       f"on the compiled model): --precision default cannot be judged there; give a precision")
    # the CPU's run-time quantization is what irtool emulates (a GPU quantizes otherwise)
    group = _compiled_property(compiled, DYNAMIC_QUANTIZATION, None) if set(execution) == {"CPU"} else None
    return compiled, DeviceRun(device, precision, effective, execution, dict(full_config), openvino_version(),
                               int(group) if group is not None else None)


def _compiled_property(compiled: Any, key: str, fallback: Any) -> Any:
    try:
        return compiled.get_property(key)
    except RuntimeError:
        return fallback


def _effective_precision(compiled: Any, execution: tuple[str, ...]) -> dict[str, str]:
    direct = _compiled_property(compiled, PRECISION_HINT, None)
    if direct is not None:
        return {name: precision_name(direct) for name in execution or ("?",)}
    per_device = _compiled_property(compiled, "DEVICE_PROPERTIES", {}) or {}
    return {name: precision_name(props[PRECISION_HINT]) for name, props in per_device.items()
            if isinstance(props, Mapping) and PRECISION_HINT in props}


def explain_failure(model: Any, device: str, xml_path: Path, error: RuntimeError) -> str:
    """One line for a device that cannot compile a model, with the cause where irtool knows it."""
    for op in model.get_ordered_ops():
        spec = node_spec(op)
        if spec is None:
            continue
        attributes = op.get_attributes()
        for name, attribute in spec.attributes.items():
            if attribute.openvino_applies_default or attribute.default in (None, [], ""):
                continue
            if attributes.get(name) in ([], "", None):
                from irtool.specs.values import format_value

                default = format_value(attribute.default)
                return (f"{device} cannot compile {xml_path.name}: layer '{op.get_friendly_name()}' ({op.get_type_name()}) "
                        f"omits {name}, which OpenVINO reads as empty instead of the spec default {default} "
                        f"(vector::_M_range_check); rerun with --fill-defaults or write {name}=\"{default}\" in the layer")
    return f"{device} cannot compile {xml_path.name}: {openvino_message(error)}"


def infer(compiled: Any, inputs: Mapping[str, np.ndarray], device: str,
          names: Sequence[str] | None = None) -> list[np.ndarray]:
    """One inference; the outputs in model output order, copied out of the request.  ``names``: the
    model's own name of each input, in order (a compiled model may have dropped one of an input's
    names, measured with openvino 2026.4.1), else the compiled model's."""
    request = compiled.create_infer_request()
    feed = {}
    names = list(names) if names is not None else [tensor_name(port) for port in compiled.inputs]
    for index, name in enumerate(names):
        if name not in inputs:
            raise IrtoolBug(f"no input array for {name}")
        feed[index] = _tensor(inputs[name], compiled.inputs[index].get_element_type(), name)
    try:
        with doing(None, f"running it on {device}"):
            request.infer(feed)
    except RuntimeError as error:
        raise OpenVINOFailed(f"inference on {device} failed: {openvino_message(error)}") from None
    return [_array(request.get_output_tensor(i)) for i in range(len(compiled.outputs))]


def _tensor(values: np.ndarray, element_type: Any, name: str) -> Any:
    """What feeds an input: the array, or for a packed type (i4, u4, u1) a tensor of its bytes."""
    kind = element_type.get_type_name()
    if kind not in PACKED:
        return values
    import openvino as ov

    try:
        return ov.Tensor(pack(values, kind), ov.Shape(list(values.shape)), element_type)
    except ValueError as error:
        raise RunError(f"input {name} is {kind}: it {error}; give values within its range (--inputs), or "
                       f"smaller dims (its values are sizes: sequence lengths up to --seq-length)") from None


def _array(tensor: Any) -> np.ndarray:
    """An output tensor's values, copied out: a packed type's one value an element."""
    kind = tensor.get_element_type().get_type_name()
    if kind in PACKED:
        return unpack(tensor.data, kind, tuple(tensor.get_shape()))
    return np.array(tensor.data, copy=True)


