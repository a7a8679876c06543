"""``irtool harness --cluster``'s Dask client process (:mod:`irtool.jobs.cluster_client`), started
before the command line is parsed: its import of dask and its connection (about a second of CPU)
then run on another core while this process builds its parser, reads its suites and expands its
jobs; the harness's own start-up is shorter than that second.  The options are read from the
words as written (``--cluster ADDRESS``, ``--scheduler-file=FILE``); what argparse reads otherwise
(an abbreviation) starts it when the command's handler runs."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

OPTIONS = ("--cluster", "--scheduler-file")


def start_from_words(words: Sequence[str]) -> None:
    """Start the client process of the scheduler the harness's command line names, if it names one."""
    found: dict[str, str] = {}
    for index, word in enumerate(words):
        for option in OPTIONS:
            if word == option and index + 1 < len(words):
                found[option] = words[index + 1]
            elif word.startswith(option + "="):
                found[option] = word.split("=", 1)[1]
    if found:
        start_client(found.get("--cluster"), found.get("--scheduler-file"))


def start_client(address: str | None, scheduler_file: str | Path | None) -> None:
    """The client process of the scheduler at ``address`` (or named in ``scheduler_file``) begun now;
    a scheduler named wrongly is said later, by the run."""
    from irtool.jobs.cluster import ClusterError, scheduler_address
    from irtool.jobs.cluster_client import start

    try:
        start(scheduler_address(address, scheduler_file))
    except ClusterError:
        pass
