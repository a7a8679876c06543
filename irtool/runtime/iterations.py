"""How many iterations a model's Loops run where that is known before anything runs, checked
against the time a step may take, before the model is compiled.

A Loop's trip count that is a Constant, or computed from Constants alone (what OpenVINO computes
for it, :func:`irtool.runtime.bodies.constant_controls`), is known from the file: a Loop of
10^15 iterations would otherwise hold an inference until ``run --timeout`` (600 s by default)
stops it, though it was clear from the start that it cannot end in time.  A Loop inside another
runs its count at every iteration of the outer one: the counts multiply.  One iteration costs
OpenVINO at least :data:`SECONDS_PER_ITERATION` (measured with openvino 2026.4.1 on the CPU: a
Loop whose body is one Add of a [2, 3] tensor takes 3 to 9 µs an iteration), so a count whose
iterations at that floor exceed the step limit is refused, naming the Loop, its count and where
the count comes from.  A trip count of -1 (none) with an execution condition that is true and a
body condition that is a true Constant runs forever: refused too.
"""
from __future__ import annotations

from typing import Any

from irtool.core.errors import RunError

SECONDS_PER_ITERATION = 1e-6  # the least one iteration of a Loop costs (see the module docstring)
DEFAULT_STEP_LIMIT = 600.0  # seconds, as irtool run's --timeout: when no step limit is set (the library, a worker)


def check_iterations(model: Any, name: str, step_limit: float | None = None) -> None:
    """RunError if a Loop of ``model`` (at any depth) is known to run more iterations than
    ``step_limit`` seconds allow at :data:`SECONDS_PER_ITERATION` each, or to run forever."""
    limit = DEFAULT_STEP_LIMIT if step_limit is None else step_limit
    most = int(limit / SECONDS_PER_ITERATION)
    for label, count, source in _known_counts(model, 1, ""):
        if count is None:
            raise RunError(f"{name}: {label} runs forever: {source}; OpenVINO would run it until --timeout "
                           f"({limit:g} s) stops it")
        if count > most:
            raise RunError(f"{name}: {label} runs {count} iterations ({source}): at no less than "
                           f"{SECONDS_PER_ITERATION * 1e6:g} µs each, more than the {limit:g} s a step may take "
                           f"(--timeout); make its trip count smaller, or give it more time")


def _known_counts(graph: Any, outer: int, where: str) -> list[tuple[str, int | None, str]]:
    """Each Loop of ``graph`` and of its containers' bodies whose iterations are known: its label, the
    iterations it runs in all (``outer`` times its own count; None: forever) and where the count comes from."""
    from irtool.runtime.bodies import constant_controls
    from irtool.runtime.nodes import CONTAINERS, body_of

    found: list[tuple[str, int | None, str]] = []
    for op in graph.get_ordered_ops():
        kind = op.get_type_name()
        if kind not in CONTAINERS:
            continue
        label = f"{kind} '{op.get_friendly_name()}'" + (f" in the body of {where}" if where else "")
        times = outer
        if kind == "Loop":
            trip, condition = (None if data is None or not data.size else data.reshape(-1)[0]
                               for data in constant_controls(op))
            source = ("its trip count, a Constant" if op.input_value(0).get_node().get_type_name() == "Constant"
                      else "its trip count, computed from Constants")
            if condition is not None and not bool(condition) or trip is not None and int(trip) == 0:
                continue  # it never runs (irtool.runtime.bodies says so where it matters)
            if trip is not None and int(trip) > 0:
                times = outer * int(trip)
                found.append((label, times, source + (f", times {outer} of the loops around it" if outer > 1 else "")))
            elif trip is not None and condition is not None and _always_continues(op):
                found.append((label, None, "its trip count is -1 (none), its execution condition is true and its "
                                           "body's condition is a true Constant"))
        bodies = [op.get_then_body(), op.get_else_body()] if kind == "If" else [body_of(op)]
        for body in bodies:
            if body is not None:
                found += _known_counts(body, times, label)
    return found


def _always_continues(loop: Any) -> bool:
    """Whether a Loop's body condition (the Result that decides the next iteration) is a true Constant."""
    from irtool.lowering.graph import constant_data

    condition = loop.get_special_body_ports()[1]
    if condition < 0:
        return False
    data = constant_data(loop.get_function().get_results()[condition].input_value(0).get_node())
    return data is not None and data.size > 0 and bool(data.reshape(-1)[0])
