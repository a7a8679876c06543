"""A node's verdict, as every judge gives it: irtool's reference on an IR node (irtool.judge.nodes),
an ONNX node in ONNX semantics (irtool.judge.onnx_nodes).  Below both, so that they import each other
in neither direction."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from irtool.core.errors import IrtoolBug
from irtool.judge.compare import OutputDiff

PASS, FAIL, UNJUDGED, ERROR = "pass", "fail", "unjudged", "error"


@dataclass(frozen=True)
class NodeResult:
    """The verdict on one recurrent node: the reference on its captured inputs against its captured outputs."""

    name: str
    type: str
    version: int
    where: str  # "top level", or the body of a TensorIterator/Loop it sits in
    verdict: str  # pass | fail | unjudged | error
    reason: str | None = None
    outputs: tuple[OutputDiff, ...] = ()
    tensors: tuple[str, ...] = ()  # its output tensors' names, or what feeds and reads it
    implementation: str | None = None  # what the device ran for it (unprobed compile), e.g. "RNNSeq (f32)"
    semantics: str = "OpenVINO"  # whose op definition the reference applied: "OpenVINO" (IR ops) or "ONNX"
    notes: tuple[str, ...] = ()  # what explains a failure (a known frontend fault, which direction is off)
    # the OpenVINO node the device runs for it, where that is named otherwise: the node an ONNX node was
    # converted to, or the node itself where ``name`` was made unique (see :func:`unique_node_names`)
    converted_to: str | None = None
    reached: bool = True  # False: in an If branch not taken or a Loop that ran no iteration on these inputs
    iteration: tuple[int, ...] | None = None  # a body node: the iteration its diffs are of (per loop, outermost first)
    at: str | None = None  # that iteration in words: "iteration 2 of TensorIterator 'ti'"
    iterations: int | None = None  # a body node: how many iterations were judged
    container: str | None = None  # a body node: the top-level TensorIterator, Loop or If it runs inside
    # what the outputs were compared with where it is not the ideal reference: the emulation of the
    # device's rounding at bf16 or f16 (irtool.judge.precision), and then the device against the
    # ideal reference too, for the report
    against: str | None = None
    ideal: tuple[OutputDiff, ...] = ()
    weights: str | None = None  # how its constant inputs are stored where not as computed: "W, R, B stored as f16"
    lowered: str | None = None  # a cell recognized in plain ops: the pattern and the ops it is made of

    @property
    def runs_as(self) -> str:
        """The name of the node the device runs: its own, or the one an ONNX node was converted to."""
        return self.converted_to or self.name

    def __post_init__(self) -> None:
        if self.verdict not in (PASS, FAIL, UNJUDGED, ERROR):
            raise IrtoolBug(f"node verdict {self.verdict!r}")

    @property
    def max_abs(self) -> float | None:
        """The largest difference measured (an output of the wrong shape has none)."""
        return max((d.max_abs for d in self.outputs if not d.problem), default=None)

    @property
    def first_step_outside(self) -> int | None:
        """The first time step outside tolerance: of a sequence's outputs, or of a lowered cell's
        recurrence (the step it failed at: its innermost iteration)."""
        if self.lowered is not None and self.verdict == FAIL and self.iteration:
            return self.iteration[-1]
        steps = [d.first_step_outside for d in self.outputs if d.first_step_outside is not None]
        return min(steps) if steps else None


def iteration_words(index: tuple[int, ...] | None, loops: tuple[str, ...]) -> str | None:
    """"iteration 3 of Loop 'l'" (per loop around a body node, outermost first); None at the top level."""
    return ", ".join(f"iteration {k} of {loop}" for k, loop in zip(index, loops)) if index else None


def judged_every_output(outputs: Sequence[OutputDiff]) -> bool:
    """Whether a comparison of the model's outputs (against --expected, a framework's runtime or a
    second device) judged each of them: an output with a problem (missing, of another shape) fails,
    and one whose every element is left out (unjudged) judged nothing."""
    return bool(outputs) and all(d.problem or not d.total or d.unjudged < d.total for d in outputs)


def run_verdict(nodes: Sequence[NodeResult], probe_passed: bool = True,
                comparisons: Sequence[Sequence[OutputDiff]] = ()) -> str:
    """The verdict of a run, the one rule every report follows (irtool run's text and JSON, a
    harness job's results, junit.xml, report.html); ``comparisons``: the model's outputs against
    given values, each a sequence of diffs (--expected, --compare-with RUNTIME or DEVICE2).

    fail if a judged node fails, probing changed the model's outputs, or a comparison fails.  Else,
    where a comparison judged every output of the model, its verdict (pass): what the model computes
    was compared and agreed, and the nodes not judged on their own (a chain that looks like a cell
    but is not matched, a node that could not be judged) are listed beside it, never turning the run
    into NOT JUDGED.  Else the nodes decide: error if one could not be judged for an error,
    unjudged if a node the inputs reached was not judged (a pass would overstate) or nothing was
    judged, pass when every reached node was judged and passed."""
    verdicts = {node.verdict for node in nodes}
    if FAIL in verdicts or not probe_passed or any(not all(d.passed for d in c) for c in comparisons):
        return FAIL
    if any(judged_every_output(c) for c in comparisons):
        return PASS
    if ERROR in verdicts:
        return ERROR
    if not_judged(nodes):
        return UNJUDGED
    return PASS if PASS in verdicts else UNJUDGED


def verdict_basis(nodes: Sequence[NodeResult], comparisons: Sequence[Sequence[OutputDiff]]) -> str:
    """What a run's verdict rests on: "outputs" where a comparison judged every output of the model
    and some node the inputs reached was not judged on its own (or could not be), so that the
    comparison alone decides a pass; else "nodes"."""
    alone = any(node.verdict == ERROR or (node.verdict == UNJUDGED and node.reached) for node in nodes)
    return "outputs" if alone and any(judged_every_output(c) for c in comparisons) else "nodes"


def not_judged(nodes: Sequence[NodeResult]) -> tuple[NodeResult, ...]:
    """The nodes the inputs reached that were not judged (what keeps a verdict from pass unless the
    model's outputs were judged)."""
    return tuple(node for node in nodes if node.verdict == UNJUDGED and node.reached)


def not_reached(nodes: Sequence[NodeResult]) -> tuple[NodeResult, ...]:
    """The nodes these inputs did not reach (an If branch not taken, a Loop that ran no iteration)."""
    return tuple(node for node in nodes if not node.reached)
