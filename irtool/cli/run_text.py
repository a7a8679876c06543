"""The text ``irtool run`` prints: a run's header, its node table and notes, each output's diff
(with a long series of steps in a few bounded lines), and the verdict line, WIDTH columns wide.
"""
from __future__ import annotations

import math
import re
import textwrap
from typing import Any, Sequence

import numpy as np

from irtool.core.formats import model_format
from irtool.core.precisions import DEVICE_DEFAULT
from irtool.core.text import cut, escaped_lines, shown
from irtool.judge.compare import OutputDiff, shown_pair
from irtool.runtime.core import release_label
from irtool.runtime.sizes import GIVEN
from irtool.runtime.what_ran import in_plain_words


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def render_text(result: Any) -> str:
    """run's text: every line within WIDTH columns (a longer one wrapped under its own indent); its
    last line is the verdict (with any input the device narrowed before its nodes received it), with
    what could not be written just above it."""
    lines = [line for text in _render(result).split("\n") for line in _fitted(text)]
    notes = [f"  {result.reproducer_note}"] if result.reproducer_note else []
    verdict = lines[-1] + "".join(f"; {shown(note)}" for note in result.narrowed)
    return "\n".join(lines[:-1] + notes + [shown(f"NOT WRITTEN: {what}") for what in result.unwritten] + [verdict])


def _fitted(line: str) -> list[str]:
    """A line within WIDTH columns, wrapped if need be; not the first line and the verdict (the
    lines not indented), which scripts read whole (``tail -1``).  A line of fields (a statistic
    and its value, ``outside 0/48 (0.0%)``) set apart by two spaces breaks between fields, never
    inside one; a field longer than a line, and prose, break between words."""
    if len(line) <= WIDTH or not line.startswith(" "):
        return [line]
    indent = line[:len(line) - len(line.lstrip(" "))]
    more = indent + "    "
    rows: list[str] = []
    parts = _FIELD_GAP.split(line.strip())  # field, gap, field, ...: a gap kept as it is (it aligns columns)
    for gap, field in zip([""] + parts[1::2], parts[::2]):
        if rows and len(rows[-1]) + len(gap) + len(field) <= WIDTH:
            rows[-1] += gap + field
        else:
            rows.append((more if rows else indent) + field)
    return [part for row in rows for part in ([row] if len(row) <= WIDTH else
                                               _wrapped(row.strip(), row[:len(row) - len(row.lstrip(" "))], more))]


_FIELD_GAP = re.compile(r"( {2,})")  # what sets the fields of a line apart (one space is inside a field)


def _render(result: Any) -> str:
    run = result.run
    lines = [f"{result.model}: {cut(result.op) if result.op else _node_count(result)} on {run.device}"]
    effective = ", ".join(f"{precision} on {device}" for device, precision in run.effective_precision.items())
    requested = "the device's default requested (no hint)" if run.requested_precision == DEVICE_DEFAULT else \
        f"{run.requested_precision} requested"
    if result.replay is not None and result.replay.run == "assumed":  # nothing of it recorded, nor measured here
        lines.append(f"  precision: assumed {run.requested_precision} on {run.device} (-d and --precision: the file "
                     f"has no record of the run); openvino not recorded")
    elif result.replay is not None:
        from irtool.pipeline.recording import recorded_precision

        lines.append(f"  precision: recorded on {run.device} at {recorded_precision(run)} ({requested}); execution "
                     f"devices: {', '.join(run.execution_devices) or '?'}; openvino {release_label(run.openvino)}")
    else:
        lines.append(f"  precision: {requested}, {effective or 'effective one not reported'}; execution devices: "
                     f"{', '.join(run.execution_devices) or '?'}; openvino {release_label(run.openvino)}")
    if result.replayed:
        lines.append(f"  replayed: {result.replayed}")
    if result.replay is not None and result.replay.inputs:
        lines.append(f"  inputs of the outputs: {result.replay.inputs}")
    if result.file_findings:
        lines.append(f"  warning: {result.file_findings}")
    for filled in result.filled_defaults:
        lines.append(f"  filled default: {filled}")
    for note in result.input_notes:
        lines.append(f"  converted: {note}")
    lines.append(f"  inputs ({result.inputs_from}): " + ", ".join(
        f"{i.name} {i.dtype}{list(i.shape)}" + (f" = {_scalar(i.value, i.dtype)}" if i.value is not None else "")
        + _chosen(result.shapes_chosen.get(i.name)) for i in result.inputs))
    if result.saved_outputs:
        lines.append(f"  outputs saved to {result.saved_outputs}")
    judgments = _model_judgments(result)
    if result.against is None and judgments:  # no node judged: the expected outputs, the runtime's, judge
        whose = " and ".join(f"the outputs of {j.source}" if oracle else f"the expected outputs in {j.source}"
                             for j, oracle in judgments)
        why = "no node judged on its own: each is listed below with why" if any(
            node.reason and node.verdict in ("unjudged", "error") for node in result.nodes) else \
            f"no reference applies: {result.no_reference}"
        lines.append(f"  against: {whose} ({why})")
        lines.extend(_node_table(result.nodes, run.device))
        lines.extend(f"  {node.verdict.upper()} node '{node.name}' ({node.type}-{node.version}): {node.reason}"
                     for node in result.nodes if node.reason and node.verdict in ("unjudged", "error"))
        lines.extend(_render_model_judgments(result))
        summary = "; ".join(j.summary() for j, _ in judgments)
        unjudged = _names(n for n in result.nodes if n.verdict in ("unjudged", "error"))
        word = "NOT JUDGED" if result.verdict == "unjudged" else result.verdict.upper()
        return escaped_lines(lines + [f"{word}: {summary}" + (f"; not judged on their own: {unjudged}"
                                                              if unjudged else "")])
    if result.against is None:
        lines.append(f"  no reference applies: {result.no_reference}")
        lines.append("  outputs: " + ", ".join(f"{name}{list(shape)}" for name, shape in result.output_shapes))
        lines.extend(_node_table(result.nodes, run.device))
        lines.extend(_render_model_judgments(result))
        word = "ERROR: a node could not be judged" if result.verdict == "error" else "NOT JUDGED: nothing was compared"
        lines.append(f"{word} ({result.no_reference}){_would_judge(result)}")
        return escaped_lines(lines)
    single = result.nodes[0] if result.op is not None and result.nodes else None
    if single is not None and single.against:
        lines.append(f"  against: {single.against}")
    else:
        lines.append(f"  against: {result.against}" + (f"; {result.references}" if result.references else ""))
    if result.op is None and result.against.startswith("reference"):
        return escaped_lines(lines + _render_nodes(result))
    width = max(len(d.name) for d in result.outputs) if result.outputs else 0
    for diff in result.outputs:
        lines.extend(_render_diff(diff, width))
    if single is not None:
        lines.extend(_node_notes(single, indent="  "))
    failed = [d.name for d in result.outputs if not d.passed]
    unjudged = [d.name for d in result.outputs if _diff_word(d) == "NOT JUDGED"]
    total = len(result.outputs) - len(unjudged)
    said = f"{len(failed)} of {total} outputs outside tolerance ({', '.join(failed)})" if failed \
        else f"{total} of {total} outputs within tolerance"
    if unjudged or any(d.unjudged for d in result.outputs):
        said += f" at the steps that can be judged ({', '.join(unjudged) or 'no output'} not judged at all: see the note)"
    lines.extend(_render_model_judgments(result))
    # with the model's outputs judged too, each judgment is named, the failing one first
    parts = [(bool(failed), f"{result.against.split(' (')[0]}: {said}" if judgments else said)]
    parts += [_judgment_part(judgment, oracle) for judgment, oracle in judgments]
    word = "FAIL" if failed or result.verdict == "fail" else "PASS"
    lines.append(f"{word}: {_failing_first(parts)}")
    return escaped_lines(lines)


def _judgment_part(judgment: Any, oracle: bool) -> tuple[bool, str]:
    """A judgment of the model's outputs (--expected, --compare-with RUNTIME) as a part of the verdict
    line: (failed, words)."""
    return not judgment.passed, f"{'' if oracle else 'expected outputs: '}{judgment.summary()}"


def _failing_first(parts: Sequence[tuple[bool, str]]) -> str:
    """The parts of a verdict line, those that failed first: the verdict's reason leads, and what
    passed beside it never reads as the verdict (``FAIL: 2 of 2 outputs within tolerance; ...``)."""
    return "; ".join(text for failed, text in sorted(parts, key=lambda part: not part[0]))


def _chosen(how: str | None) -> str:
    """How an input's dynamic dims were sized, as the header says it (nothing for --shape)."""
    if not how or how == GIVEN:
        return ""
    return f" (dynamic dims sized {how})" if how == "from the recurrent nodes" else f" (dynamic dims sized: {how})"


def _model_judgments(result: Any) -> list[tuple[Any, bool]]:
    """The judgments of the model's outputs: against --expected, and against the framework's
    runtime (--compare-with RUNTIME; True)."""
    return [(j, oracle) for j, oracle in ((result.expected, False), (result.oracle, True)) if j is not None]


def _render_model_judgments(result: Any) -> list[str]:
    """Each judgment of the model's outputs (--expected, --compare-with RUNTIME), or why the runtime
    would not run the model."""
    lines = []
    for judgment, oracle in _model_judgments(result):
        lines.extend(_render_expected(judgment, result.inputs_from, oracle))
    if result.oracle_refused is not None:
        lines.append(f"  {result.oracle_refused}")
    return lines


def _would_judge(result: Any) -> str:
    """For a model with no recurrent node and nothing else asked: what would judge it."""
    if result.oracle_refused:
        return f"; {result.oracle_refused}"
    if result.nodes or result.expected is not None or result.oracle is not None:
        return ""
    found = model_format(result.model)
    if found is not None and found.oracle:
        return (f"; --compare-with {found.oracle} would judge its outputs against {found.label}'s own runtime "
                f"(or --expected OUT.npz against given values)")
    return "; --expected OUT.npz would judge its outputs against its framework's"


def _render_expected(expected: Any, inputs_from: str, oracle: bool = False) -> list[str]:
    """The model's outputs against the expected ones (or a framework runtime's: ``oracle``): a diff
    per output, as a node's are shown.  Expected outputs judged on seeded inputs hold only if they
    were made from those very inputs (irtool run --save-outputs with the same seed): a failure says so."""
    lines = [f"  against {expected.source}: the model's outputs, OpenVINO against it" if oracle else
             f"  expected outputs ({expected.source}): the model's outputs against them"]
    if expected.bound:
        lines += _wrapped(f"bound: {expected.bound}", "    ", "      ")
    if expected.note:
        lines += _wrapped(f"note: {expected.note}", "    ", "      ")
    width = max((len(d.name) for d in expected.outputs), default=0)
    for diff in expected.outputs:
        lines.extend("  " + line for line in _render_diff(diff, width))
    if not expected.passed and inputs_from.startswith("seed") and not oracle:
        lines.append(f"  note: the inputs were seeded ({inputs_from}), not given: expected outputs hold only for the "
                     f"inputs they were made from; a framework's outputs need its inputs (--inputs IN.npz), and "
                     f"irtool's own (--save-outputs) the same --seed")
    return lines


def _scalar(value: Any, dtype: str) -> str:
    """A scalar input's value in its own type's digits (a float32 1.7, not 1.7000000476837158)."""
    import numpy as np

    try:
        return str(np.array(value, dtype=dtype))
    except (TypeError, ValueError):
        return str(value)


def probe_line(check: Any, replayed: bool = False) -> str:
    """The probed copy's check in one line: whether the model's outputs agree with the unprobed
    compile's, by how much, and where one has NaN or inf the other has not; of a replay (nothing
    compiled here), the file's outputs against its own captured tensors of the same values."""
    worst = max((d.max_abs for d in check.outputs if d.max_abs is not None), default=0.0)
    mismatched = sum(d.nonfinite_mismatch for d in check.outputs)
    said = [f"max abs {_num(worst)}"] + ([f"{mismatched} value(s) NaN or infinite in one and not the other"]
                                         if mismatched else [])
    said += [f"{d.name}: {d.problem}" for d in check.outputs if d.problem]
    if replayed:  # one that differs is refused before any verdict (irtool.pipeline.replay.check_consistent)
        return f"  recorded outputs: agree with the file's own captured tensors of the same values ({'; '.join(said)})"
    return (f"  probed copy: the model's own outputs {'agree with' if check.passed else 'DIFFER from'} the unprobed "
            f"compile ({'; '.join(said)})" + ("" if check.passed else
                                             "; the nodes judged may not be what the unprobed model runs"))


def _node_count(result: Any) -> str:
    count = len(result.nodes)
    return f"{count} recurrent node{'s' if count != 1 else ''}"


WIDTH = 120  # columns of run's text
_NAME_COLUMN = 26  # a node's name in the table, at most; the whole name is in the lines below it
_RAN_AS_COLUMN = 30


def _node_table(nodes: Any, device: str) -> list[str]:
    """A table that fits WIDTH columns (names and implementations cut short in it), then the long
    text of each node below it: where it sits and what it was fed and read by, and what its
    implementation means where the words need explaining (a footnote each, said once)."""
    if not nodes:
        return []
    rows = [("#", "node", "type", "ran as", "verdict", "max abs", "first bad step")]
    notes: dict[str, str] = {}  # explanation -> its mark
    details = []
    for number, node in enumerate(nodes, 1):
        ran_as, explanation = in_plain_words(node.implementation, device) if node.implementation else ("-", None)
        if explanation is not None:
            ran_as += f" [{notes.setdefault(explanation, chr(ord('a') + len(notes) % 26))}]"
        rows.append((str(number), _cut(node.name, _NAME_COLUMN), f"{node.type}-{node.version}",
                     _cut(ran_as, _RAN_AS_COLUMN), node.verdict.upper(), _num(node.max_abs),
                     "-" if node.first_step_outside is None else str(node.first_step_outside)))
        where = node.where + (f" ({', '.join(node.tensors)})" if node.tensors else "") + \
            (f", {node.semantics} semantics" if node.semantics != "OpenVINO" else "")
        name = f" '{node.name}'" if len(node.name) > _NAME_COLUMN else ""
        details += _wrapped(f"{number}{name}: {where}", "    ", "      ")
        if node.lowered:
            details += _wrapped(node.lowered, "      ", "      ")
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    lines = ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    lines.append("  where each node sits:")
    lines += details
    for explanation, mark in notes.items():
        lines += _wrapped(f"[{mark}] {explanation}", "  ", "      ")
    return lines


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _wrapped(text: str, indent: str, more: str) -> list[str]:
    """``text`` in lines of at most WIDTH columns (a word longer than a line is cut, never the
    width exceeded)."""
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=more, break_on_hyphens=False) or [indent]


def _render_second_opinion(second: Any) -> list[str]:
    if second.refused or not (second.nodes or second.in_subgraphs):  # refused: said with the model's judgment
        return []
    lines = [f"  second opinion of each ONNX node: {second.tool}'s outputs of it against the spec:"]
    lines.extend(f"    node '{opinion.name}': {opinion.describe()}" for opinion in second.nodes)
    if second.in_subgraphs:
        lines.append(f"    no opinion of the nodes in subgraphs ({', '.join(repr(n) for n in second.in_subgraphs)}): "
                     f"onnxruntime exposes no tensor of a subgraph")
    return lines


def _render_nodes(result: Any) -> list[str]:
    from irtool.judge.verdicts import not_judged, not_reached

    lines = _node_table(result.nodes, result.run.device)
    check = result.probe_check
    if check is not None:
        lines.append(probe_line(check, result.replay is not None))
    for node in result.nodes:
        if node.verdict in ("fail", "error"):
            lines.append(f"  {node.verdict.upper()} node '{node.name}' ({node.type}-{node.version}): {node.reason}")
            if node.name in result.reproducers:
                folder = result.reproducers[node.name]
                then = f"irtool run {folder}/model.onnx -d {result.run.device} --inputs {folder}/inputs.npz" \
                    if node.semantics == "ONNX" else f"irtool reduce {folder}"
                lines.append(f"    reproducer: {folder} (python {folder}/reproduce.py; {then})")
            width = max((len(d.name) for d in node.outputs), default=0)
            for diff in node.outputs:
                lines.extend("  " + line for line in _render_diff(diff, width))
            lines.extend(_node_notes(node, notes=False))
        elif node.reason and (node.semantics == "ONNX" or node.verdict == "unjudged"):  # why not judged or reached
            lines.append(f"  {node.verdict.upper()} node '{node.name}' ({node.type}-{node.version}): {node.reason}")
        elif node.notes or node.against or node.weights:
            lines.append(f"  {node.verdict.upper()} node '{node.name}' ({node.type}-{node.version}):")
            lines.extend(_node_notes(node))
    if result.second_opinion is not None:
        lines.extend(_render_second_opinion(result.second_opinion))
    lines.extend(_render_model_judgments(result))
    judged = [n for n in result.nodes if n.verdict in ("pass", "fail")]
    failed = [n.name for n in result.nodes if n.verdict == "fail"]
    errors = [n.name for n in result.nodes if n.verdict == "error"]
    unjudged, unreached = _names(not_judged(result.nodes)), _names(not_reached(result.nodes))
    judgments = [_judgment_part(judgment, oracle) for judgment, oracle in _model_judgments(result)]
    extra = (f"; not judged: {unjudged}" if unjudged else "") + \
        (f"; not reached on these inputs: {unreached}" if unreached else "")
    if result.verdict == "fail":
        probe_failed = check is not None and not check.passed
        what = f"{len(failed)} of {len(judged)} judged nodes outside tolerance ({', '.join(failed)})" if failed else \
            "probing changed the model's outputs" if probe_failed else \
            f"{len(judged)} of {len(judged)} judged nodes within tolerance"
        lines.append(f"FAIL: {_failing_first([(bool(failed) or probe_failed, what)] + judgments)}{extra}")
        return lines
    if result.verdict == "pass" and result.verdict_from == "outputs":  # the model's outputs judged: they lead
        errors_said = f"; could not be judged: {_names(n for n in result.nodes if n.verdict == 'error')}" \
            if errors else ""
        lines.append(f"PASS: {'; '.join(words for _, words in judgments)}; {len(judged)} of {len(judged)} judged "
                     f"nodes within tolerance" + (f"; not judged on their own: {unjudged}" if unjudged else "")
                     + errors_said + (f"; not reached on these inputs: {unreached}" if unreached else ""))
        return lines
    extra = "".join(f"; {words}" for _, words in judgments) + extra
    if result.verdict == "error":
        lines.append(f"ERROR: {len(errors)} node(s) could not be judged ({', '.join(errors)}){extra}")
    elif result.verdict == "unjudged":
        lines.append(f"NOT JUDGED: {len(not_judged(result.nodes))} node(s) the inputs reached were not judged; "
                     f"{len(judged)} judged within tolerance{extra}")
    else:
        lines.append(f"PASS: {len(judged)} of {len(judged)} judged nodes within tolerance{extra}")
    return lines


def _node_notes(node: Any, notes: bool = True, indent: str = "    ") -> list[str]:
    """What a node's verdict rests on beyond its diffs: the emulation it was judged against and the
    device against the ideal reference then, and the notes (the steps a recurrence lets be judged)."""
    more = indent + "    "
    lines = _wrapped(f"weights: {node.weights}", indent, more) if node.weights else []
    if node.against and node.ideal:
        lines += _wrapped("against the ideal reference (what rounding at this precision costs): " + "; ".join(
            f"{d.name} max abs {_num(d.max_abs)}, max rel {_num(d.max_rel)}" for d in node.ideal if not d.problem),
            indent, more)
    for note in node.notes if notes else ():
        lines += _wrapped(f"note: {note}", indent, more)
    return lines


def _diff_word(diff: OutputDiff) -> str:
    if diff.total and diff.unjudged == diff.total and not diff.problem:
        return "NOT JUDGED"
    return "PASS" if diff.passed else "FAIL"


def _names(nodes: Any) -> str:
    return ", ".join(f"'{node.name}'" for node in nodes)


def _render_diff(diff: OutputDiff, width: int) -> list[str]:
    tol = diff.tolerance
    head = f"  {diff.name:<{width}} {list(diff.shape)} {_diff_word(diff)}"
    if diff.problem:
        return [f"{head}: {diff.problem}"]
    if diff.total and diff.unjudged == diff.total:
        return [f"{head}: every element is at a step no reference can judge (see the note)"]
    pad = " " * (width + 3)
    lines = [f"{head}  max abs {_num(diff.max_abs)}  max rel {_num(diff.max_rel)}  mean abs {_num(diff.mean_abs)}  "
             f"outside {diff.outside}/{diff.total} ({diff.outside_share:.1%})",
             f"{pad}atol {_num(tol.atol)} rtol {_num(tol.rtol)} ({tol.source})"
             + (f", plus up to {_num(diff.allowance)} at the steps where rounding carried through the recurrence "
                f"reaches it (see the note)" if diff.allowance > tol.atol else "")]
    if diff.worst_index is not None:
        actual, expected = shown_pair(diff.worst_actual, diff.worst_expected)
        lines += _wrapped(f"worst at {list(diff.worst_index)}: device {actual}, expected {expected}", pad, pad + "  ")
        if math.isfinite(diff.needed_atol):  # (not where a NaN or Inf differs: no tolerance passes that)
            lines.append(f"{pad}would pass with atol {_num(diff.needed_atol)} (rtol {_num(tol.rtol)}) or rtol "
                         f"{_num(diff.needed_rtol)} (atol {_num(tol.atol)})")
    if diff.step_max_abs is not None:
        lines += [pad + line for line in step_summary(diff.step_max_abs, diff.first_step_outside, tol.atol)]
    if diff.unjudged:
        lines.append(f"{pad}not judged: {diff.unjudged}/{diff.total} elements, at steps no reference can judge "
                     f"(see the note)")
    if diff.overflow:
        lines.append(f"{pad}overflow: {diff.overflow} element(s) beyond the range of the precision the device "
                     f"computed in, infinite on the device as they must be")
    if diff.actual_nan or diff.actual_inf or diff.expected_nan or diff.expected_inf:
        lines.append(f"{pad}NaN/Inf: device {diff.actual_nan}/{diff.actual_inf}, expected "
                     f"{diff.expected_nan}/{diff.expected_inf}, {diff.nonfinite_mismatch} where they differ")
    return lines


STEPS_SHOWN = 12  # a series this long is shown whole; a longer one, in a few bounded lines
_STEP_WINDOW = 6


def step_summary(steps: Sequence[float], first_outside: int | None, atol: float) -> list[str]:
    """The max abs error per time step, in at most three lines of bounded length whatever the
    number of steps: the whole series when short; else its worst step, how many steps exceed
    atol, its first steps and the steps around the first one outside tolerance (or the last)."""
    count = len(steps)
    if count <= STEPS_SHOWN:
        return ["max abs per time step: " + " ".join(_num(v) for v in steps)]
    values = np.asarray(steps, dtype=np.float64)
    finite = np.where(np.isnan(values), np.inf, values)  # a NaN step is the worst one
    worst = int(np.argmax(finite))
    above = int(np.count_nonzero(~(values <= atol)))
    lines = [f"max abs per time step, {count} steps: worst {_num(float(values[worst]))} at step {worst}; "
             f"{above} step{'s' if above != 1 else ''} above atol {_num(atol)}"]

    def window(start: int) -> str:
        start = max(0, min(start, count - _STEP_WINDOW))
        end = start + _STEP_WINDOW
        return f"steps {start}-{end - 1}: " + " ".join(_num(float(v)) for v in values[start:end])

    lines.append("  " + window(0))
    around = (first_outside if first_outside is not None else count) - _STEP_WINDOW // 2
    if around > 0:  # not the first steps again
        label = "first outside tolerance at " if first_outside is not None else "last "
        lines.append("  " + label + window(around))
    return lines
