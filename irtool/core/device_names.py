"""Device names as users write them: one syntax for ``run``, ``reduce``, ``harness`` and the
pytest plugin, parsed here and nowhere else (no openvino needed).

A *device list* (``harness -d``) separates devices with commas: ``CPU,AUTO:CPU,GPU``.  A
virtual device's own list of devices joins them with ``+``: ``HETERO:GPU+CPU``,
``AUTO:GPU+CPU``, ``MULTI:GPU+CPU``, ``AUTO:-GPU+-NPU``, ``BATCH:CPU(4)``.  So a comma always
separates devices, in every command; where one device is expected (``run -d``), a comma is
refused with the ``+`` spelling.  irtool hands OpenVINO its own spelling (``HETERO:GPU,CPU``):
that is the form stored in results and shown in reports.

A name that is no device OpenVINO knows (``GPUU``, ``cpu``) is an error with a suggestion; a
known device that is absent here (``GPU`` on a machine without one) is not, since the
harness records it as a skip with OpenVINO's reason.  ``MULTI``, ``HETERO`` and ``BATCH``
need a device list (bare ``AUTO`` picks among all devices by itself).
"""
from __future__ import annotations

import re
from typing import Iterable

from irtool.core.errors import IrtoolError, did_you_mean

VIRTUAL_DEVICES = ("AUTO", "HETERO", "MULTI", "BATCH")
NEED_A_LIST = ("HETERO", "MULTI", "BATCH")
PHYSICAL_FAMILIES = ("CPU", "GPU", "NPU")
_INSTANCE = re.compile(r"^(?P<family>[A-Z]+)(\.\d+)?$")  # GPU, GPU.1


class DeviceError(IrtoolError):
    """A device string that names no device OpenVINO knows, or is not written as irtool reads it."""


def parse_device_list(text: str, option: str = "-d", known: Iterable[str] = ()) -> list[str]:
    """``CPU,AUTO:CPU,HETERO:GPU+CPU`` -> ``["CPU", "AUTO:CPU", "HETERO:GPU,CPU"]`` (duplicates dropped).

    ``known`` adds device names OpenVINO reports here to the families every build knows.
    """
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise DeviceError(f"{option} {text!r}: expected a comma-separated list of devices, e.g. CPU,AUTO:CPU")
    return list(dict.fromkeys(_one(item, option, known) for item in items))


def parse_device(text: str, option: str = "-d", known: Iterable[str] = ()) -> str:
    """One device, in the syntax of :func:`parse_device_list`: ``HETERO:GPU+CPU`` -> ``HETERO:GPU,CPU``."""
    if "," in text:
        head, sep, rest = text.partition(":")
        if "," in head or head not in VIRTUAL_DEVICES:  # a list of devices, not one virtual device's list
            raise DeviceError(f"{option} {text}: one device expected, and a comma separates devices; give one "
                              f"(irtool harness takes a list: -d {text})")
        plus = f"{head}:{rest.replace(',', '+')}" if sep else text.replace(",", "+")
        hint = (f"; inside a virtual device's list write +, e.g. {plus}" if sep
                else "; a virtual device takes a list, e.g. HETERO:" + plus)
        raise DeviceError(f"{option} {text}: one device expected, and a comma separates devices{hint}")
    return _one(text.strip(), option, known)


def _one(item: str, option: str, known: Iterable[str]) -> str:
    head, sep, rest = item.partition(":")
    device = f"{head}:{','.join(name.strip() for name in rest.split('+'))}" if head in VIRTUAL_DEVICES and sep else item
    check_device(device, option, known, shown=item)
    return device


def check_device(device: str, option: str = "-d", known: Iterable[str] = (), shown: str | None = None) -> None:
    """DeviceError unless ``device`` (OpenVINO's spelling: ``HETERO:GPU,CPU``) names only devices
    OpenVINO knows, and a virtual device that needs a list has one.  ``shown`` is how the user wrote it."""
    shown = shown or device
    head, sep, rest = device.partition(":")
    if head in VIRTUAL_DEVICES:
        names = [name.strip() for name in rest.split(",")] if sep else []
        if head in NEED_A_LIST and not any(names):
            raise DeviceError(f"{option} {shown}: {head} needs a device list, e.g. {head}:CPU or {head}:GPU+CPU")
        if any(not name for name in names):
            raise DeviceError(f"{option} {shown}: an empty name in {head}'s device list; write e.g. {head}:GPU+CPU")
        for name in names:
            _check_name(_bare(name), shown, option, known)
    else:
        _check_name(device, shown, option, known)


def _bare(name: str) -> str:
    """The physical device a list entry names: ``-GPU`` (AUTO's exclusion) and ``CPU(4)`` (BATCH's size) -> the name."""
    return name.lstrip("-").split("(", 1)[0].strip()


def _check_name(name: str, item: str, option: str, known: Iterable[str]) -> None:
    known = set(known)
    match = _INSTANCE.match(name)
    if name in known or (match and match["family"] in PHYSICAL_FAMILIES):
        return
    candidates = sorted(set(PHYSICAL_FAMILIES) | set(VIRTUAL_DEVICES) | known)
    where = "" if name == item else f" in {item}"
    raise DeviceError(f"{option} {item}: {name!r}{where} is not a device OpenVINO knows{did_you_mean(name, candidates)}; "
                      f"known: {', '.join(PHYSICAL_FAMILIES)} (GPU.1 for a second GPU), and the virtual "
                      f"{', '.join(VIRTUAL_DEVICES)} (e.g. AUTO:CPU, HETERO:GPU+CPU)")


def physical_devices(device: str) -> list[str]:
    """The physical devices a device string (OpenVINO's spelling) names: ``HETERO:GPU,CPU`` -> GPU, CPU;
    ``AUTO:-GPU`` -> [] (an exclusion names nothing to run on); bare ``AUTO`` -> []."""
    head, _, rest = device.partition(":")
    if head not in VIRTUAL_DEVICES:
        return [device] if device else []
    return [_bare(item) for item in rest.split(",") if item.strip() and not item.strip().startswith("-")]


def device_family(device: str) -> str:
    """The family of the first physical device a device string names (``HETERO:GPU.1,CPU`` -> GPU;
    "" where it names none): what a device's facts (precision paths, what ran) are keyed by."""
    physical = physical_devices(device)
    return physical[0].split(".", 1)[0] if physical else ""


def same_device(asked: str, available: str) -> bool:
    """``GPU`` names ``GPU.0`` too; ``GPU.1`` names only itself."""
    return asked == available or available.startswith(asked + ".")
