"""``irtool worker ADDRESS``: join a Dask scheduler and run the harness jobs this machine offers.

It offers each device OpenVINO sees here (and AUTO and HETERO over each), at each precision
that device computes, under each release of ``--openvino`` (made and cached as ``irtool harness
--openvino`` makes them), as Dask resources (``--devices``/``--precisions`` offer less), runs
``--lanes`` jobs at a time, and publishes its name, irtool and OpenVINO versions and device report
to the harness (``irtool harness --cluster ADDRESS``).  It works until the scheduler closes
(exit 0) or it is interrupted (130).  Needs the ``cluster`` extra; docs/cluster.md.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from irtool.cli.options import add_release_options


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "worker", help="join a Dask scheduler and run the harness jobs this machine offers (irtool[cluster])",
        description="Join the Dask scheduler at ADDRESS and offer what this machine runs to irtool harness "
                    "--cluster: each device here at each precision it computes, under each --openvino release. "
                    "Anyone who can reach the "
                    "scheduler can run code on this machine: use a trusted network or tls:// (docs/cluster.md).")
    parser.add_argument("address", nargs="?", metavar="ADDRESS", help="the scheduler: tcp://HOST:8786 (or tls://...)")
    parser.add_argument("--scheduler-file", type=Path, metavar="FILE", help="the scheduler named in this file instead")
    parser.add_argument("--name", help="what the harness and the results call this worker (default: the host name)")
    parser.add_argument("--lanes", type=int, default=1, metavar="N",
                        help="jobs this worker runs at a time, each in its own process (default 1)")
    parser.add_argument("--devices", metavar="LIST",
                        help="offer only these devices, comma-separated (default: every device here, and "
                             "AUTO:X and HETERO:X over each)")
    parser.add_argument("--precisions", metavar="LIST",
                        help="offer only these precisions, comma-separated (default: each one a device computes)")
    add_release_options(parser, "offer the devices", " (default: the openvino installed here); the worker's own "
                        "openvino also runs the jobs of a harness run without --openvino")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from irtool.core.device_names import parse_device_list
    from irtool.harness.matrix import parse_list
    from irtool.jobs.cluster import offer, scheduler_address, serve_worker
    from irtool.jobs.environments import parse_releases

    _quiet()  # and the extra's message before anything else
    address = scheduler_address(args.address, args.scheduler_file)
    plan = offer(args.name, args.lanes, parse_device_list(args.devices, "--devices") if args.devices else None,
                 parse_list(args.precisions, "--precisions") if args.precisions else None,
                 parse_releases(args.openvino) if args.openvino is not None else None, args.openvino_cache,
                 lambda line: print(line, file=sys.stderr, flush=True))
    print(f"irtool worker {plan.name}: irtool {plan.info['irtool']}, openvino {plan.info['openvino']}; "
          f"offers {', '.join(plan.pairs)}; {plan.lanes} at a time", flush=True)
    serve_worker(address, plan, lambda joined: print(f"joined {joined}", flush=True))
    print("the scheduler closed", file=sys.stderr, flush=True)
    return 0


def _quiet() -> None:
    """Dask's own log lines (INFO: every connection) left out; its warnings and errors stay."""
    import logging

    from irtool.jobs.cluster import distributed

    distributed()  # its loggers exist once it is imported; without it, the extra's message
    for name in list(logging.root.manager.loggerDict):
        if name.split(".")[0] == "distributed":
            logging.getLogger(name).setLevel(logging.WARNING)
