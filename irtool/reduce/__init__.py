"""``irtool reduce``: shrink a failing case to its smallest reproducer.

:func:`load_origin` reads what to start from (an IR file, a harness reproducer folder, or a
suite case), :func:`reduce_case` shrinks it along the axes its op's spec allows
(:mod:`irtool.reduce.axes`) while it keeps failing by the criterion
(:mod:`irtool.reduce.criterion`), writing the best reproducer so far after every step.

May import jobs, the pipeline and every layer below them; never harness (a sibling) or cli.
"""
from __future__ import annotations

from irtool.pipeline.concrete import ConcreteCase
from irtool.reduce.check_script import load_check_script
from irtool.reduce.criterion import parse_check
from irtool.reduce.errors import ReduceError
from irtool.reduce.origin import Origin, load_origin
from irtool.reduce.reducer import LOG, REPRODUCER, NothingToReduce, ReduceOptions, ReduceOutcome, reduce_case

__all__ = ["ConcreteCase", "LOG", "NothingToReduce", "Origin", "REPRODUCER", "ReduceError", "ReduceOptions",
           "ReduceOutcome", "load_check_script", "load_origin", "parse_check", "reduce_case"]
