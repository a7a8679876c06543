"""Devices: what OpenVINO sees here, what a device string names, and what cannot run here and why."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from irtool.core import device_names as syntax
from irtool.core.device_names import PHYSICAL_FAMILIES, VIRTUAL_DEVICES, physical_devices, same_device
from irtool.core.precisions import DEVICE_DEFAULT
from irtool.runtime.core import core, openvino_message, openvino_version

# OPTIMIZATION_CAPABILITIES entries that are precisions, by the names irtool uses.
PRECISION_HINT = "INFERENCE_PRECISION_HINT"
CAPABILITY_PRECISIONS = {"FP32": "f32", "BF16": "bf16", "FP16": "f16", "INT8": "i8", "INT16": "i16",
                         "U8": "u8", "BIN": "u1", "FP64": "f64"}


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    full_name: str
    precisions: tuple[str, ...]
    capabilities: tuple[str, ...]
    default_precision: str = ""  # what it runs at without a hint: its INFERENCE_PRECISION_HINT ("" if unsaid)


@dataclass(frozen=True)
class AbsentDevice:
    name: str
    reason: str


@dataclass(frozen=True)
class DeviceReport:
    available: tuple[DeviceInfo, ...]
    virtual: tuple[str, ...]
    absent: tuple[AbsentDevice, ...]
    openvino: str = ""  # the release that saw them (openvino.get_version())

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.available)


def list_devices() -> DeviceReport:
    """What OpenVINO sees: physical devices with names and precisions, the virtual ones, and
    the physical families that are absent here with the reason."""
    ov_core = core()
    available = []
    for name in ov_core.available_devices:
        capabilities = tuple(str(c) for c in _device_property(name, "OPTIMIZATION_CAPABILITIES", ()))
        precisions = tuple(CAPABILITY_PRECISIONS[c] for c in capabilities if c in CAPABILITY_PRECISIONS)
        default = _device_property(name, PRECISION_HINT, None)
        available.append(DeviceInfo(name, str(_device_property(name, "FULL_DEVICE_NAME", name)),
                                    precisions, capabilities, "" if default is None else precision_name(default)))
    names = [d.name for d in available]
    absent = tuple(AbsentDevice(family, _absence_reason(family)) for family in PHYSICAL_FAMILIES
                   if not any(same_device(family, name) for name in names))
    return DeviceReport(tuple(available), VIRTUAL_DEVICES, absent, openvino_version())


def report_to_json(report: DeviceReport) -> dict:
    """A DeviceReport as JSON: what another release's openvino sees, sent to the harness (below)."""
    return {"available": [{"name": d.name, "full_name": d.full_name, "precisions": list(d.precisions),
                           "capabilities": list(d.capabilities), "default_precision": d.default_precision}
                          for d in report.available],
            "virtual": list(report.virtual), "absent": [{"name": a.name, "reason": a.reason} for a in report.absent],
            "openvino": report.openvino}


def report_from_json(data: dict) -> DeviceReport:
    return DeviceReport(tuple(DeviceInfo(d["name"], d["full_name"], tuple(d["precisions"]), tuple(d["capabilities"]),
                                         d.get("default_precision", "")) for d in data["available"]),
                        tuple(data["virtual"]), tuple(AbsentDevice(a["name"], a["reason"]) for a in data["absent"]),
                        data["openvino"])


def precision_name(value: Any) -> str:
    """An INFERENCE_PRECISION_HINT value (an openvino Type) by irtool's name: ``bf16``, ``f32``."""
    return value.get_type_name() if hasattr(value, "get_type_name") else str(value)


def _device_property(device: str, key: str, fallback: Any) -> Any:
    try:
        return core().get_property(device, key)
    except RuntimeError:
        return fallback


def _absence_reason(family: str) -> str:
    try:
        core().get_versions(family)
    except RuntimeError as error:
        return openvino_message(error)
    return "its plugin loads but finds no device"


def check_device(device: str, report: DeviceReport | None = None) -> None:
    """DeviceError for a name OpenVINO does not know (with a suggestion) or a bare MULTI: a usage
    error.  A known device that is absent here is no error: :func:`skip_reason` says why it is
    skipped, the same in ``run``, ``reduce``, the harness and the pytest plugin."""
    report = report or list_devices()
    syntax.check_device(device, "-d", known=report.names)


def skip_reason(device: str, precision: str, report: DeviceReport | None = None) -> str | None:
    """Why ``device`` cannot run at ``precision`` here, or None: it is absent (with OpenVINO's
    reason), or one of the physical devices it names does not list the precision among its
    OPTIMIZATION_CAPABILITIES.

    The one rule for ``run``, ``run --openvino``, ``reduce``, the harness and the pytest plugin:
    a skip, never an error (exit 3 where nothing else was judged).  A device asked for a
    precision it lacks does not refuse: it runs at another one (a CPU without bf16 runs a bf16
    request at f32; a CPU with AVX512_BF16 but no FP16 runs f16 as bf16, measured on an AMD EPYC,
    while an Intel Xeon with AMX-FP16 lists FP16 and computes f16), so a job at that precision
    would only repeat another; it is skipped.
    A virtual device needs every physical device it names (bare AUTO, MULTI...: every available
    one) to support the precision.  ``default`` (no hint: the device's own choice) is never
    skipped for its precision.
    """
    report = report or list_devices()
    names = physical_devices(device) or list(report.names)
    missing = [name for name in names if not any(same_device(name, have) for have in report.names)]
    if missing:
        return "; ".join(f"{name} is not available here: {_why_absent(name, report)}" for name in missing)
    if precision == DEVICE_DEFAULT:
        return None
    for info in report.available:
        if any(same_device(name, info.name) for name in names) and precision not in info.precisions:
            return (f"{info.name} does not support {precision} (its precisions: "
                    f"{', '.join(info.precisions) or 'none reported'})")
    return None


def _why_absent(name: str, report: DeviceReport) -> str:
    """OpenVINO's reason a device is not here: its family's (GPU.0 is absent as GPU is)."""
    for absent in report.absent:
        if same_device(absent.name, name):
            return absent.reason
    return "not known to OpenVINO"


if __name__ == "__main__":  # run by irtool.jobs.environments.device_report in another release's environment
    import json
    import sys

    json.dump(report_to_json(list_devices()), sys.stdout)
