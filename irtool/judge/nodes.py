"""A recurrent node of a model judged against irtool's reference on its captured inputs: at every
iteration it ran in a loop body, the first one outside tolerance (or the worst within), per
output and step, with the hints of the known OpenVINO faults its failure matches.

A node that ran at bf16 or f16 is judged against the reference rounding where its implementation
path rounds (irtool.judge.precision: an ``Emulation``), with a bound of one unit of that type,
and compared with the ideal reference too (``NodeResult.ideal``), so that a report shows rounding
apart from faults.  A node that fails is looked at again with the growth of a change through its
recurrence measured on its inputs: the steps where differences of rounding alone may reach the
tolerance get a bound that allows for them, and the steps no reference can judge are left out,
said in the result (never a bare FAIL, never a silent PASS).
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from irtool.core.errors import IrtoolBug
from irtool.core.precisions import LARGEST
from irtool.core.text import joined
from irtool.judge import known_faults
from irtool.judge.compare import OutputDiff, Tolerance, TolerancePolicy, compare_output, output_tolerance
from irtool.judge.precision import Emulation, StepBounds, step_bounds, step_unit
from irtool.judge.quantized import Quantization, node_quantization
from irtool.judge.verdicts import ERROR, FAIL, PASS, UNJUDGED, NodeResult, iteration_words
from irtool.reference.rounding import EXACT, Rounding
from irtool.runtime.captured import node_iterations, why_not_reached
from irtool.runtime.nodes import RecurrentNode

# A node's reference outputs from its input arrays, rounding as ``rounding`` says (a worker passes a
# cached one): reference(node, arrays) is the ideal reference, reference(node, arrays, rounding) an
# emulation of a device.
Reference = Callable[..., tuple[np.ndarray, ...]]


def one_set_of_activations(node: RecurrentNode) -> dict[str, Any]:
    """A node's attributes with a per-direction activations list (OpenVINO's ONNX frontend writes
    one set per direction for a bidirectional node) made the spec's one set.  Equal halves mean
    the same thing; different halves are refused with what OpenVINO does with them (measured: the
    first half for both directions), since the op's spec has no way to say them.  Alphas and betas
    past the activations are dropped: OpenVINO reads them by the activation's position and ignores
    the rest (irtool validate: IR027)."""
    attributes = dict(node.attributes)
    spec = node.spec.attributes.get("activations")
    given = attributes.get("activations")
    if spec is not None and spec.length is not None and isinstance(given, list) and len(given) == 2 * spec.length:
        first, second = given[:spec.length], given[spec.length:]
        if [a.lower() for a in first] != [a.lower() for a in second]:
            raise ValueError(f"activations {given} has one set per direction and the halves differ; OpenVINO applies "
                             f"the first half to both directions (irtool validate: IR029), so this node cannot be "
                             f"judged as the IR says; judge the ONNX model itself with irtool run MODEL.onnx")
        attributes["activations"] = given = first
    if isinstance(given, list):
        for key in ("activations_alpha", "activations_beta"):
            values = attributes.get(key)
            if isinstance(values, list) and len(values) > len(given):
                attributes[key] = values[:len(given)]
    return attributes


def evaluate_node(node: RecurrentNode, arrays: Sequence[np.ndarray], rounding: Rounding = EXACT,
                  accumulate: str | None = None, given_states: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """The reference's outputs (every output port) on a node's input arrays, rounding as ``rounding``
    says, each step from ``given_states``' previous hidden state where given (a device's Y);
    ValueError if the reference refuses them."""
    from irtool.reference import evaluate

    outputs = evaluate(node.spec.type, list(arrays), one_set_of_activations(node), version=node.spec.version,
                       rounding=None if rounding.exact else rounding, accumulate=accumulate, given_states=given_states)
    if not isinstance(outputs, tuple) or len(outputs) != len(node.spec.outputs):
        raise IrtoolBug(f"the reference of {node.spec.key} returned {type(outputs).__name__} "
                        f"instead of {len(node.spec.outputs)} arrays")
    return outputs


def judge_node(node: RecurrentNode, inputs: Mapping[str, np.ndarray], captured: Sequence[np.ndarray],
               policy: TolerancePolicy, precision: str, reference: Reference = evaluate_node,
               emulation: Emulation | None = None, dynamic_quantization: int | None = None) -> NodeResult:
    """The reference on a node's captured inputs against its captured outputs.  A tolerance can be
    given per node and port (``--atol NODE:Y:1e-3``) or per port (``--atol Y:1e-3``).  A node in
    a body is judged at every iteration it ran; its result holds the first iteration outside
    tolerance (else the one farthest from the reference) and how many were judged.  With
    ``emulation`` (the node ran at bf16 or f16 on a path the precision model knows) the reference
    rounds as the device does.  ``dynamic_quantization``: the device's DYNAMIC_QUANTIZATION_GROUP_SIZE,
    where a cell whose weights are stored as an integer type is judged against the reference with
    its product inputs quantized so too (irtool.judge.quantized)."""
    head = (node.key, node.spec.type, node.spec.version, node.where)
    quantization = None if emulation is not None else node_quantization(
        node.spec.type, [port.name for port in node.spec.inputs],
        {feed.port.name: feed.stored for feed in node.feeds if feed.stored}, dynamic_quantization, precision)
    result = _judge_node(node, head, inputs, captured,
                         _Criteria(node, policy, precision, emulation, reference, quantization), reference)
    if node.in_body or node.stable:
        # a node keyed by its place runs as its OpenVINO name (what the device's layers are found by)
        result = dataclasses.replace(result, container=node.container, converted_to=node.name if node.stable else None)
    if node.lowered is not None:
        result = dataclasses.replace(result, lowered=node.lowered.description)
    return result


class _Criteria:
    """How one node's outputs are judged: the reference it is compared with (the ideal one, or an
    emulation of the device's rounding), and each output's tolerance."""

    def __init__(self, node: RecurrentNode, policy: TolerancePolicy, precision: str, emulation: Emulation | None,
                 reference: Reference = evaluate_node, quantization: Quantization | None = None):
        self.node, self.policy, self.precision, self.emulation = node, policy, precision, emulation
        self.quantization = quantization
        self.range_limit = LARGEST.get(precision)
        self.compares = emulation is not None and not emulation.bound_only  # with the emulation itself
        self._reference = reference

    @property
    def stepwise(self) -> bool:
        """Whether each step is judged from the device's own previous hidden state: a sequence judged
        against an emulation, whose Y holds that state (a one-unit difference the device makes at one
        step then never carries into the next, where a recurrence could amplify it past any bound)."""
        y = self.node.spec.outputs[0]
        return self.compares and y.name == "Y" and self.node.spec.time_axis(y) is not None \
            and any(port.role == "state" for port in self.node.spec.inputs)

    def reference(self, reference: Reference) -> Callable[[RecurrentNode, Sequence[np.ndarray], Sequence[np.ndarray]],
                                                          tuple[np.ndarray, ...]]:
        """The reference the verdict compares with: (node, arrays, the device's outputs) -> expected: the
        emulation of its path (of its two roundings, the closer), else the ideal one and, where the device
        may quantize a product's inputs, the one with them quantized so: the closer."""
        if not self.compares:
            quantization = self.quantization
            if quantization is None:
                return lambda node, arrays, actual: reference(node, arrays)
            return lambda node, arrays, actual: _closest(
                [reference(node, arrays)] + ([reference(node, quantization.quantized(arrays))] if len(actual) else []),
                actual)
        roundings = [r for r in (self.emulation.rounding, self.emulation.alternative) if r is not None]
        if self.stepwise:
            def one(node: RecurrentNode, arrays: Sequence[np.ndarray], actual: Sequence[np.ndarray],
                    rounding: Rounding) -> tuple[np.ndarray, ...]:
                stepped = evaluate_node(node, arrays, rounding, given_states=actual[0])
                if not any(np.isnan(values).any() for values in stepped):
                    return stepped
                # a NaN the device's own states carry in is no value the model computes: where the run
                # from the node's inputs alone is a number, that number is expected
                own = reference(node, arrays, rounding)
                return tuple(np.where(np.isnan(s) & ~np.isnan(o), o, s) for s, o in zip(stepped, own))
        else:
            def one(node: RecurrentNode, arrays: Sequence[np.ndarray], actual: Sequence[np.ndarray],
                    rounding: Rounding) -> tuple[np.ndarray, ...]:
                return reference(node, arrays, rounding)

        def closest(node: RecurrentNode, arrays: Sequence[np.ndarray],
                    actual: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
            """The emulation's outputs; where the path has an alternative rounding, those of the two
            closer to the device's (the one it followed)."""
            return _closest([one(node, arrays, actual, rounding) for rounding in roundings], actual)
        return closest

    def tolerance(self, port: Any, dtype: Any) -> Tolerance:
        """The policy's tolerance of an output; against an emulation, where the policy gives none, the
        bound of its path (schemas/precision.json)."""
        derived = Tolerance(*self.emulation.bound()) if self.emulation is not None else None
        return output_tolerance(self.policy, (f"{self.node.key}:{port.name}", port.name), self.precision, dtype, derived)

    def diffs(self, actual: Sequence[np.ndarray], expected: Sequence[np.ndarray],
              bounds: StepBounds | None = None, arrays: Sequence[np.ndarray] | None = None) -> tuple[OutputDiff, ...]:
        """Each output against its expected values; with ``bounds``, the steps no reference can judge
        left out, and the others allowed what rounding carries there; for a node the emulation only
        bounds (its ``arrays`` given), twice the most the emulation's rounding moves each output by
        (unless the policy sets the output's tolerance: then it is held to that)."""
        found = []
        moved = self._rounding_moves(arrays, expected) if arrays is not None and self.emulation is not None \
            and self.emulation.bound_only else None
        for k, (port, got, want) in enumerate(zip(self.node.spec.outputs, actual, expected)):
            allowance, judged = _allowance(self.node, port, got, bounds)
            if moved is not None:
                allowance = np.array(2 * moved[k]) if allowance is None else allowance + 2 * moved[k]
            if self.policy.given((f"{self.node.key}:{port.name}", port.name)):
                allowance = None
            found.append(compare_output(port.name, got, want, self.tolerance(port, got.dtype),
                                        self.node.spec.time_axis(port), allowance, judged, self.range_limit))
        return tuple(found)

    def _rounding_moves(self, arrays: Sequence[np.ndarray], ideal: Sequence[np.ndarray]) -> list[float]:
        """Per output, the most the emulation's rounding moves it by on these inputs (0 where the
        reference refuses the emulation)."""
        try:
            emulated = self._reference(self.node, arrays, self.emulation.rounding)
        except ValueError:
            return [0.0] * len(ideal)
        return [float(np.max(np.abs(e.astype(np.float64) - i), initial=0.0)) for e, i in zip(emulated, ideal)]


def _judge_node(node: RecurrentNode, head: tuple, inputs: Mapping[str, np.ndarray], captured: Sequence[np.ndarray],
                criteria: _Criteria, reference: Reference) -> NodeResult:
    if node.lowered is not None and node.lowered.refused:
        return NodeResult(*head, UNJUDGED, f"not recognized as a lowered {node.spec.type}: {node.lowered.refused}")
    if node.never:
        return NodeResult(*head, UNJUDGED, f"not reached on these inputs ({node.never})", tensors=node.tensors,
                          reached=False)
    if node.unprobed:
        return NodeResult(*head, UNJUDGED, f"inside the {node.where}: not judged ({node.unprobed})",
                          tensors=node.tensors)
    iterations = node_iterations(node, inputs, captured)
    indices, per_iteration = iterations.indices, iterations.arrays
    if not indices:
        why = why_not_reached(node.conditions, node.loops, captured)
        return NodeResult(*head, UNJUDGED, f"not reached on these inputs ({why})",
                          tensors=node.tensors, reached=False)
    chosen: tuple[int, tuple[OutputDiff, ...]] | None = None
    compared = criteria.reference(reference)
    batched = None if criteria.stepwise else _batched_reference(
        node, [arrays for arrays, _ in per_iteration], lambda node, arrays: compared(node, arrays, ()))
    order = list(enumerate(zip(indices, per_iteration)))
    worst = _worst_of_passing_iterations(node, per_iteration, batched, criteria)
    if worst is not None:  # every iteration within tolerance, seen at once: only the worst is diffed in full
        order = [order[worst]]
    for k, (index, (arrays, actual)) in order:
        try:
            # the batched outputs are the ideal reference's alone: a node the device may quantize compares
            # each iteration with the closer of two
            expected = batched[k] if batched is not None and criteria.quantization is None else \
                compared(node, arrays, actual)
        except ValueError as error:
            return NodeResult(*head, ERROR, f"{_at(node, index)}the reference refuses it: {error}",
                              tensors=node.tensors, iteration=index or None, at=iteration_words(index, node.loops),
                              iterations=len(indices))
        diffs = criteria.diffs(actual, expected, arrays=arrays)
        if not all(d.passed for d in diffs):
            chosen = (k, diffs)
            break
        if chosen is None or max(d.max_abs for d in diffs) > max(d.max_abs for d in chosen[1]):
            chosen = (k, diffs)
    position, diffs = chosen
    index, (arrays, actual) = indices[position], per_iteration[position]
    notes: tuple[str, ...] = ()
    if criteria.stepwise:
        steps = _steps(node, arrays)
        notes = (f"{f'each of its {steps} steps' if steps != 1 else 'its one step'} judged from the device's own "
                 f"previous hidden state"
                 + (" (its cell state: the emulation's own)" if len(node.spec.outputs) > 2 else ""),)
    elif not all(d.passed for d in diffs):
        bounds = _bounds(node, arrays, criteria)
        bounded = criteria.diffs(actual, expected, bounds, arrays) if bounds is not None else diffs
        # a recurrence that carries differences: judged with what it carries, said where that decides
        if bounds is not None and (bounds.unjudgeable_from is not None or all(d.passed for d in bounded)):
            diffs, notes = bounded, (bounds.says(_steps(node, arrays)),)
    if iterations.own:  # weights that change at every step: no recurrence of one set, each step its own
        step = "step" if node.lowered else "iteration"
        notes += (f"the model computes each {step} with {' and '.join(iterations.own)} of its own (no value more "
                  f"than half its {step}s share): each {step} judged with its own",)
    if criteria.quantization is not None:
        followed, effect = _follows_quantized(node, arrays, actual, criteria.quantization, reference)
        agreed = all(d.passed for d in diffs)
        notes += (criteria.quantization.says([port.name for port in node.spec.inputs], followed if agreed else None,
                                             effect),)
    where = dict(iteration=index or None, at=iteration_words(index, node.loops),
                 iterations=len(indices) if node.in_body or node.depth else None)
    extra = dict(against=criteria.emulation.describe() if criteria.emulation else None,
                 ideal=_ideal(node, arrays, actual, criteria, reference), weights=_stored(node))
    failed = [d for d in diffs if not d.passed]
    if not failed:
        if diffs and all(d.unjudged == d.total for d in diffs if not d.problem):
            return NodeResult(*head, UNJUDGED, notes[0], diffs, node.tensors, notes=notes, **where, **extra)
        return NodeResult(*head, PASS, None, diffs, node.tensors, notes=notes, **where, **extra)
    reason = _at(node, index) + "outside tolerance: " + joined(
        f"{d.name} (max abs {d.max_abs:.3g}, {d.outside}/{d.total})" if not d.problem else f"{d.name} ({d.problem})"
        for d in failed)
    notes += _known_faults(node, arrays, actual, expected, diffs)
    if position in iterations.departures:
        notes += (f"the model computes this {'step' if node.lowered else 'iteration'} with "
                  f"{' and '.join(iterations.departures[position])} other than the ones most of its "
                  f"{'steps' if node.lowered else 'iterations'} compute with (judged against those)",)
    reason += "".join(f"; {note}" for note in notes)
    return NodeResult(*head, FAIL, reason, diffs, node.tensors, notes=notes, **where, **extra)


def _closest(found: Sequence[tuple[np.ndarray, ...]], actual: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Of the references' outputs, those closest to the device's (the path it followed); the first
    where there is one, or no device's outputs to choose by."""
    if len(found) == 1 or not len(actual):
        return found[0]
    return min(found, key=lambda outputs: _gap(actual, outputs))


def _gap(actual: Sequence[np.ndarray], expected: Sequence[np.ndarray]) -> float:
    return max(float(np.max(np.abs(a - e), initial=0.0)) for a, e in zip(actual, expected))


def _follows_quantized(node: RecurrentNode, arrays: Sequence[np.ndarray], actual: Sequence[np.ndarray],
                       quantization: Quantization, reference: Reference) -> tuple[bool | None, float | None]:
    """Whether the device's outputs are closer to the reference on quantized product inputs than to the
    exact one (None: as close to both), and how far apart the two are; (None, None) where the reference
    refuses."""
    try:
        exact, moved = reference(node, arrays), reference(node, quantization.quantized(arrays))
    except ValueError:
        return None, None
    to_exact, to_quantized = _gap(actual, exact), _gap(actual, moved)
    return (None if to_exact == to_quantized else to_quantized < to_exact), _gap(exact, moved)


def _ideal(node: RecurrentNode, arrays: Sequence[np.ndarray], actual: Sequence[np.ndarray], criteria: _Criteria,
           reference: Reference) -> tuple[OutputDiff, ...]:
    """The device against the ideal reference, where the verdict compared it with an emulation: what
    the report shows beside the verdict, with the precision's default tolerance."""
    if not criteria.compares:
        return ()
    try:
        expected = reference(node, arrays)
    except ValueError:
        return ()
    plain = _Criteria(node, TolerancePolicy(), criteria.precision, None)
    return plain.diffs(actual, expected)


def _stored(node: RecurrentNode) -> str | None:
    """"W, R, B stored as f16 (decompressed by a Convert)": what the device computes with is the stored
    values, which the reference is fed too; said, since it is what keeps a model from its framework's
    outputs."""
    kinds: dict[str, list[str]] = {}
    for feed in node.feeds:
        if feed.stored:
            kinds.setdefault(feed.stored, []).append(feed.port.name)
    return "; ".join(f"{', '.join(ports)} stored as {kind} (decompressed by a Convert)"
                     for kind, ports in kinds.items()) or None


def _steps(node: RecurrentNode, arrays: Sequence[np.ndarray]) -> int:
    port = next((p for p in node.spec.outputs if node.spec.time_axis(p) is not None), None)
    x = node.spec.inputs[0]
    axis = node.spec.time_axis(x)
    return int(np.shape(arrays[0])[axis]) if port is not None and axis is not None else 1


def _bounds(node: RecurrentNode, arrays: Sequence[np.ndarray], criteria: _Criteria) -> StepBounds | None:
    """How far differences of rounding carry through this node's recurrence, on its inputs; None for a
    node without states and steps (a cell), or where the reference cannot run in float64."""
    states = [k for k, port in enumerate(node.spec.inputs) if port.role == "state" and k < len(arrays)]
    outputs = [k for k, port in enumerate(node.spec.outputs) if node.spec.time_axis(port) is not None]
    directions = node.spec.directions(node.attributes)
    if not states or not outputs or not directions:
        return None
    y = outputs[0]
    try:
        return step_bounds(lambda wide: evaluate_node(node, wide, accumulate="float64"), arrays, states, y,
                           node.spec.time_axis(node.spec.outputs[y]), directions,
                           step_unit(criteria.precision, criteria.emulation))
    except ValueError:
        return None


def _allowance(node: RecurrentNode, port: Any, actual: np.ndarray,
               bounds: StepBounds | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The allowance a derived bound adds to an output and which of its elements it can judge: per
    step along Y's time axis; for a final state, those of the last step."""
    if bounds is None or actual.ndim < 2:
        return None, None
    noise = bounds.noise  # [dirs, steps], time order
    steps = noise.shape[1]
    processing = np.arange(steps)
    judged = np.ones_like(noise, dtype=bool)
    if bounds.unjudgeable_from is not None:
        for d in range(noise.shape[0]):
            forward = processing < bounds.unjudgeable_from
            judged[d] = forward[::-1] if _reverse(node, d) else forward
    axis = node.spec.time_axis(port)
    if axis is not None and actual.ndim == 4 and actual.shape[1:3] == noise.shape:  # Y [batch, dirs, seq, H]
        return noise[None, :, :, None], judged[None, :, :, None]
    if actual.ndim == 3 and actual.shape[1] == noise.shape[0]:  # Ho, Co [batch, dirs, H]: the last step
        last = np.array([noise[d, 0 if _reverse(node, d) else -1] for d in range(noise.shape[0])])
        done = np.array([judged[d, 0 if _reverse(node, d) else -1] for d in range(noise.shape[0])])
        return last[None, :, None], done[None, :, None]
    return None, None


def _reverse(node: RecurrentNode, direction: int) -> bool:
    flags = node.spec.directions(node.attributes) or ()
    return direction < len(flags) and flags[direction]


# Iterations that _worst_of_passing_iterations compares at a time, as float64 elements per output:
# 512 KB of scratch, reused block after block, where all iterations at once take megabytes of
# fresh pages per run (measured in judged runs of the 100-iteration Loop of bench_run_overhead.py,
# median of 8: 2.4 ms, against 5.8 ms all at once and 10.7 ms with a float64 temporary per step).
WORST_BLOCK_ELEMENTS = 1 << 16


def _worst_of_passing_iterations(node: RecurrentNode, per_iteration: Sequence[tuple[Sequence[np.ndarray],
                                                                                 Sequence[np.ndarray]]],
                                  batched: Sequence[Sequence[np.ndarray]] | None, criteria: _Criteria) -> int | None:
    """The iteration farthest from the reference when every iteration of a body node is within
    tolerance, found with one comparison per output over blocks of iterations stacked (diffing
    each iteration alone costs a call per iteration and output: most of judging a Loop of 100
    steps, measured); None when some iteration is not (or the iterations cannot be stacked):
    then each is diffed in turn, to find the first that fails."""
    if batched is None or len(per_iteration) < 2:
        return None
    count = len(per_iteration)
    worst = np.zeros(count)
    for k, port in enumerate(node.spec.outputs):
        try:
            got = [actual[k] for _, actual in per_iteration]
            want = [expected[k] for expected in batched]
        except IndexError:
            return None
        shape = got[0].shape
        if len(want) != count or any(array.shape != shape for array in got + want):
            return None
        tolerance = criteria.tolerance(port, got[0].dtype)
        block = max(1, min(count, WORST_BLOCK_ELEMENTS // max(got[0].size, 1)))
        gaps, limits = np.empty((block, *shape)), np.empty((block, *shape))
        for first in range(0, count, block):
            last = min(first + block, count)
            gap, limit = gaps[:last - first], limits[:last - first]
            np.stack(got[first:last], out=gap)  # float64, as compare_output computes
            np.stack(want[first:last], out=limit)
            np.abs(np.subtract(gap, limit, out=gap), out=gap)  # compare_output's test, where every value is finite
            np.multiply(np.abs(limit, out=limit), tolerance.rtol, out=limit)
            np.add(limit, tolerance.atol, out=limit)
            each = gap.reshape(last - first, -1).max(axis=1) if gap.size else worst[first:last]
            if not np.isfinite(each).all() or (gap > limit).any():  # NaN or Inf anywhere: not finite in each
                return None
            np.maximum(worst[first:last], each, out=worst[first:last])
    return int(np.argmax(worst))


def _known_faults(node: RecurrentNode, arrays: Sequence[np.ndarray], actual: Sequence[np.ndarray],
                  expected: Sequence[np.ndarray], diffs: Sequence[OutputDiff]) -> tuple[str, ...]:
    """The hints of the known OpenVINO faults whose signature a failing node has (irtool.judge.known_faults)."""
    names = [port.name for port in node.spec.inputs]
    lengths = arrays[names.index("sequence_lengths")] if "sequence_lengths" in names and \
        names.index("sequence_lengths") < len(arrays) else None
    outputs = [port.name for port in node.spec.outputs]
    tolerance = diffs[0].tolerance
    return known_faults.hints(known_faults.Failure(
        node.spec.type, str(node.attributes.get("direction", "forward")),
        None if lengths is None else np.asarray(lengths), dict(zip(outputs, actual)), dict(zip(outputs, expected)),
        tolerance.atol, tolerance.rtol))


def _batched_reference(node: RecurrentNode, per_iteration: Sequence[Sequence[np.ndarray]],
                       reference: Reference) -> list[tuple[np.ndarray, ...]] | None:
    """The reference's outputs at every iteration from one call, or None where that cannot be
    done (then each iteration is evaluated alone).  A recurrent op computes each batch element
    on its own, so the iterations' inputs stacked along the batch axis give each iteration's
    outputs, with one matrix product per step instead of one per step and iteration; inputs
    without a batch axis (weights) must then be equal at every iteration."""
    count = len(per_iteration)
    in_axes = [_batch_axis(port) for port in node.spec.inputs[:len(per_iteration[0])]] if count > 1 else []
    out_axes = [_batch_axis(port) for port in node.spec.outputs]
    batch_ports = [k for k, axis in enumerate(in_axes) if axis is not None]
    if count < 2 or not batch_ports or None in out_axes:
        return None
    stacked = []
    for k, axis in enumerate(in_axes):
        column = [arrays[k] for arrays in per_iteration]
        if axis is None:
            if not all(array is column[0] or np.array_equal(array, column[0]) for array in column[1:]):
                return None
            stacked.append(column[0])
        elif column[0].ndim > axis:
            stacked.append(np.concatenate(column, axis=axis))
        else:
            return None
    try:
        outputs = reference(node, stacked)
    except ValueError:  # said by the iteration it concerns, one by one
        return None
    if any(out.ndim <= axis or out.shape[axis] % count for out, axis in zip(outputs, out_axes)):
        return None
    parts = [np.split(out, count, axis=axis) for out, axis in zip(outputs, out_axes)]
    return [tuple(part[k] for part in parts) for k in range(count)]


def _batch_axis(port: Any) -> int | None:
    texts = port.dim_texts or ()
    return texts.index("batch_size") if "batch_size" in texts else None


def _at(node: RecurrentNode, index: tuple[int, ...]) -> str:
    """"at iteration 3 of Loop 'l': " for a node in a loop body."""
    return f"at {iteration_words(index, node.loops)}: " if index else ""


def arrays_digest(arrays: Sequence[np.ndarray]) -> str:
    """Equal for equal arrays (dtype, shape and bytes): a worker's key for a node's reference outputs."""
    digest = hashlib.blake2b(digest_size=16)
    for array in arrays:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.data)
    return digest.hexdigest()
