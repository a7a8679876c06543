"""``irtool scheduler``: a Dask scheduler with irtool's settings, for ``irtool worker`` and
``irtool harness --cluster`` (``dask scheduler`` serves as well, with its own settings).

A worker silent for ``--worker-ttl`` seconds (frozen, its network gone) is dropped and its jobs
go elsewhere; a job whose workers died ``--allowed-failures`` times is given up.  It listens on
127.0.0.1 unless ``--host`` says otherwise: anyone who reaches it runs code on every worker
(docs/cluster.md).  Needs the ``cluster`` extra.
"""
from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    from irtool.cli.options import seconds

    parser = subparsers.add_parser(
        "scheduler", help="a Dask scheduler with irtool's settings, for irtool worker and harness --cluster",
        description="Run a Dask scheduler for irtool worker and irtool harness --cluster until interrupted. "
                    "Anyone who can reach it can run code on every worker: a trusted network only "
                    "(docs/cluster.md).")
    parser.add_argument("--host", default="127.0.0.1",
                        help="the address to listen on (default 127.0.0.1: this machine only; 0.0.0.0: every network)")
    parser.add_argument("--port", type=int, default=8786, help="the port (default 8786; 0: any free one)")
    parser.add_argument("--scheduler-file", type=Path, metavar="FILE",
                        help="write the scheduler's address here, for --scheduler-file of worker and harness")
    parser.add_argument("--worker-ttl", type=seconds, default=60.0, metavar="S",
                        help="drop a worker silent for S seconds; its jobs run elsewhere (default 60)")
    parser.add_argument("--allowed-failures", type=int, default=3, metavar="N",
                        help="give up a job whose workers died N times running it (default 3)")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from irtool.cli.common import UsageError
    from irtool.cli.worker_cmd import _quiet
    from irtool.jobs.cluster import serve_scheduler

    if not 0 <= args.port < 65536 or args.allowed_failures < 0:
        raise UsageError(f"scheduler: --port {args.port} --allowed-failures {args.allowed_failures}: expected "
                         "a port from 0 to 65535 and failures >= 0")
    if args.scheduler_file:  # Dask says only "Scheduler failed to start" when it cannot write the file
        from irtool.core.files import writable_target

        writable_target(args.scheduler_file, "scheduler file")
    _quiet()
    serve_scheduler(args.host, args.port, str(args.scheduler_file) if args.scheduler_file else None,
                    args.worker_ttl, args.allowed_failures,
                    lambda address: print(f"scheduler at {address}", flush=True))
    return 0
