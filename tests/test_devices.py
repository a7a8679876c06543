"""irtool.core.device_names: the one device syntax of run, reduce, harness and the pytest plugin."""
from __future__ import annotations

import pytest

from irtool.core.device_names import DeviceError, check_device, parse_device, parse_device_list, physical_devices


@pytest.mark.parametrize("text, devices", [
    ("CPU", ["CPU"]),
    ("CPU, AUTO:CPU,CPU", ["CPU", "AUTO:CPU"]),  # spaces and duplicates
    ("GPU.1,NPU", ["GPU.1", "NPU"]),
    ("AUTO", ["AUTO"]),
    ("AUTO:GPU+CPU", ["AUTO:GPU,CPU"]),  # a virtual device's own list joins with +
    ("AUTO:GPU,CPU", ["AUTO:GPU", "CPU"]),  # a comma always separates devices
    ("HETERO:GPU+CPU,CPU", ["HETERO:GPU,CPU", "CPU"]),
    ("MULTI:GPU.1+CPU", ["MULTI:GPU.1,CPU"]),
    ("AUTO:-GPU+CPU", ["AUTO:-GPU,CPU"]),  # AUTO's exclusion
    ("BATCH:CPU(4)", ["BATCH:CPU(4)"]),  # BATCH's batch size
])
def test_each_form_of_a_device_list(text, devices):
    assert parse_device_list(text, "-d") == devices


@pytest.mark.parametrize("text, device", [
    ("CPU", "CPU"), ("AUTO", "AUTO"), ("AUTO:GPU+CPU", "AUTO:GPU,CPU"), ("HETERO:GPU+CPU", "HETERO:GPU,CPU"),
    ("BATCH:CPU(2)", "BATCH:CPU(2)"),
])
def test_one_device_is_the_same_syntax(text, device):
    assert parse_device(text, "-d") == device


@pytest.mark.parametrize("text, message", [
    ("HETERO:GPU,CPU", r"one device expected, and a comma separates devices; .* write \+, e.g. HETERO:GPU\+CPU"),
    ("CPU,GPU", "one device expected"),
])
def test_one_device_refuses_a_comma_with_the_plus_spelling(text, message):
    with pytest.raises(DeviceError, match=message):
        parse_device(text, "-d")


@pytest.mark.parametrize("text, message", [
    ("CPU,GPUU", r"-d GPUU: 'GPUU' is not a device OpenVINO knows \(did you mean GPU\?\)"),
    ("cpu", r"'cpu' is not a device OpenVINO knows \(did you mean CPU\?\)"),
    ("HETERO:GPUU+CPU", r"'GPUU' in HETERO:GPUU\+CPU is not a device OpenVINO knows \(did you mean GPU\?\)"),
    ("MULTI", r"-d MULTI: MULTI needs a device list, e.g. MULTI:CPU or MULTI:GPU\+CPU"),
    ("HETERO", "HETERO needs a device list"),
    ("BATCH", "BATCH needs a device list"),
    ("HETERO:", "HETERO needs a device list"),
    ("AUTO:GPU+", "an empty name in AUTO's device list"),
    (" , ", "expected a comma-separated list of devices"),
])
def test_names_no_device_knows_are_errors_with_a_suggestion(text, message):
    with pytest.raises(DeviceError, match=message):
        parse_device_list(text, "-d")


def test_a_device_openvino_reports_here_is_known_whatever_its_name():
    assert parse_device_list("MYDEV,HETERO:MYDEV+CPU", known=["MYDEV"]) == ["MYDEV", "HETERO:MYDEV,CPU"]
    check_device("HETERO:MYDEV,CPU", known=["MYDEV"])
    with pytest.raises(DeviceError):
        check_device("MYDEV")


@pytest.mark.parametrize("device, names", [
    ("CPU", ["CPU"]), ("GPU.1", ["GPU.1"]), ("AUTO", []), ("AUTO:GPU,CPU", ["GPU", "CPU"]),
    ("AUTO:-GPU,CPU", ["CPU"]), ("BATCH:CPU(4)", ["CPU"]), ("HETERO:CPU", ["CPU"]),
])
def test_physical_devices(device, names):
    assert physical_devices(device) == names
