"""``irtool devices``: the devices OpenVINO sees, with full names, supported precisions and default precision."""
from __future__ import annotations

import argparse
import dataclasses
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("devices", help="list OpenVINO devices and their precisions",
                                   description="List the devices OpenVINO sees here, with their full names and the "
                                               "precisions each supports, the one it runs at by default (no INFERENCE_PRECISION_HINT), the virtual devices, and the devices "
                                               "that are absent with the reason.")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from irtool.runtime.devices import list_devices

    report = list_devices()
    if args.format == "json":
        print(json.dumps(dataclasses.asdict(report), indent=2))
        return 0
    width = max((len(d.name) for d in report.available), default=0)
    for device in report.available:
        print(f"{device.name:<{width}}  {device.full_name}")
        print(f"{'':<{width}}  precisions: {', '.join(device.precisions) or '?'}  "
              f"(OPTIMIZATION_CAPABILITIES: {' '.join(device.capabilities)})")
        print(f"{'':<{width}}  default precision: {device.default_precision or '?'}  "
              f"(INFERENCE_PRECISION_HINT unset: what --precision default runs at)")
    example = report.available[0].name if report.available else "CPU"
    print(f"virtual: {', '.join(report.virtual)} (e.g. " + ", ".join(f"{v}:{example}" for v in report.virtual) + ")")
    for absent in report.absent:
        print(f"absent: {absent.name} ({absent.reason})")
    return 0
