"""Replay device recordings through irtool's judging: bf16 verdicts checked against what a real bf16
device computed, on any CPU (irtool run --device-outputs, in-process).

A recordings folder (../shared/recordings/<device>/, or the compact subset the tests replay,
tests/data/recordings/<device>/) holds ``single-op/manifest.json`` with its cases and, where
present, ``suites/<suite>/<job>/`` reproducer folders (model.xml, inputs.npz, actual.npz).

What is counted:
- clean single-op cases: the device's bf16 outputs judged against the model: every one must PASS;
- planted faults: the device's outputs at a reduced precision of a model whose weights were changed,
  judged against the clean model: each one OpenVINO's own CPU-test thresholds catch (at bf16 abs
  2^-7 and rel 1e-2, at f16 abs 2^-10 and rel 1e-3: an element off by more than both, against the
  clean model's f32 outputs; only where the clean model's outputs pass them) must FAIL;
- the suites' recorded jobs: none may FAIL (their models are correct);
- with --expected, the model-level judgment: each clean case's outputs against its own f32 outputs
  must pass, each weight fault's (run as its faulty model) against the clean model's f32 outputs
  must fail where OpenVINO's thresholds catch it.

    python benchmarks/replay_recordings.py ../shared/recordings/cpu-bf16-avx512-openvino-2026.4.1
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# OpenVINO's CPU tests' thresholds against f32: (abs, rel) per precision
OPENVINO_THRESHOLDS = {"bf16": (2.0 ** -7, 1e-2), "f16": (2.0 ** -10, 1e-3)}


@dataclass(frozen=True)
class Replayed:
    case: str
    kind: str  # clean, fault, suite
    verdict: str  # pass, fail, unjudged, error
    path: str  # the precision path the node was judged by (the run's "against")
    must_fail: bool = False  # a fault OpenVINO's thresholds catch
    message: str = ""
    # the device against what it was compared with, in units in the last place of bf16 at the element
    # farthest from it (0: bit for bit; None: not compared)
    ulps: float | None = None


def openvino_catches(actual: dict, expected: dict, thresholds: tuple[float, float] = OPENVINO_THRESHOLDS["bf16"]
                     ) -> bool:
    """Whether OpenVINO's thresholds (abs, rel) fail ``actual`` against ``expected`` (any output, any
    element off by more than both the absolute and the relative threshold)."""
    absolute, relative = thresholds
    for name, want in expected.items():
        got = actual[name].astype(np.float64)
        want = want.astype(np.float64)
        gap = np.abs(got - want)
        if np.any((gap > absolute) & (gap > relative * np.abs(want))):
            return True
    return False


def judge(model: Path, inputs: Path, outputs: Path, precision: str = "bf16",
          expected: Path | None = None) -> tuple[str, str, str]:
    """irtool run MODEL --inputs IN --device-outputs OUT -d CPU --precision P [--expected EXP]:
    (verdict, path, message); with ``expected`` the verdict of the model's outputs against it."""
    from irtool.core.errors import IrtoolError
    from irtool.pipeline.run import RunOptions, run

    try:
        result = run(RunOptions(model=model, device="CPU", precision=precision, inputs=inputs,
                                device_outputs=outputs, expected=expected))
    except IrtoolError as error:
        return "error", "", error.message, None
    against = next((n.against for n in result.nodes if n.against), None) or "ideal reference"
    path = against.split(" (")[0].replace(f"the {precision} emulation of ", "")
    if expected is not None:
        return result.expected.verdict, path, result.expected.summary(), None
    message = "; ".join(f"{n.name}: {n.reason}" for n in result.nodes if n.reason)
    return result.verdict, path, message, farthest_ulps(result.nodes)


def farthest_ulps(nodes) -> float | None:
    """How many units in the last place of bf16 the device's outputs are from what they were compared
    with, at each output's element of largest difference (each step of a sequence computed from the
    device's own previous state: where the two first differ), the most over the outputs."""
    found = []
    for diff in (d for n in nodes for d in n.outputs if not d.problem):
        if diff.max_abs == 0:
            found.append(0.0)
        elif diff.worst_expected is not None and diff.worst_actual is not None:
            found.append(abs(diff.worst_actual - diff.worst_expected) / bf16_ulp(diff.worst_expected))
    return max(found) if found else None


# Below this magnitude an element is measured in the ulp of bf16 at it, 2^-12: the native paths' absolute
# bound (a sixteenth of bf16's unit roundoff).  Values near 0 come from cancellation (LSTM's o * tanh(c)
# with c = f * c' + i * g near 0): their difference is one of the operands' f32 rounding, which their
# own ulp would count in thousands.
ULP_FLOOR = 2.0 ** -5


def bf16_ulp(value: float) -> float:
    """The spacing of bfloat16 numbers (8 significant bits) at ``value``, at least at ULP_FLOOR."""
    return 2.0 ** (int(np.floor(np.log2(max(abs(value), ULP_FLOOR)))) - 7)


def faulty_model(clean_xml: Path, fault: dict, target: Path) -> Path | None:
    """The model a fault's device ran: its clean model with the fault applied to the weights (rows
    gate*hidden to (gate+1)*hidden of B for a bias, all of R or W for a scale); None for a fault
    that is not in the weights (clip ignored)."""
    import openvino as ov

    if fault["what"] not in ("bias", "R", "W"):
        return None
    model = ov.Core().read_model(clean_xml)
    node = next(op for op in model.get_ordered_ops() if op.get_type_name().endswith(("Sequence", "Cell")))
    port = {"W": -3, "R": -2, "bias": -1}[fault["what"]] % node.get_input_size()
    constant = node.input_value(port).get_node()
    values = constant.get_data().copy()
    if fault["what"] == "bias":
        hidden = int(node.get_attributes()["hidden_size"])
        values[..., fault["gate"] * hidden:(fault["gate"] + 1) * hidden] += np.float32(fault["e"])
    else:
        values *= np.float32(1 + fault["e"])
    node.input(port).replace_source_output(ov.op.Constant(values).output(0))
    ov.save_model(model, target, compress_to_fp16=False)
    return target


def replay_single_op(folder: Path) -> list[Replayed]:
    """Every case at every reduced precision the manifest recorded."""
    manifest = json.loads((folder / "manifest.json").read_text())
    cases = {case["id"]: case for case in manifest["cases"]}
    found = []
    for precision in [p for p in manifest["precisions"] if p != "f32"] or ["f32"]:
        outputs = f"outputs-{precision}"
        thresholds = OPENVINO_THRESHOLDS.get(precision)
        for case in manifest["cases"]:
            files = case["files"]
            xml = folder / (files.get("xml") or files["clean_xml"])
            verdict, path, message, ulps = judge(xml, folder / files["inputs"], folder / files[outputs], precision)
            if case["fault_of"] is None:
                found.append(Replayed(case["id"], "clean", verdict, path, message=message, ulps=ulps))
                continue
            clean = cases[case["fault_of"]]["files"]
            f32 = dict(np.load(folder / clean["outputs-f32"]))
            clean_reduced = dict(np.load(folder / clean[outputs]))
            faulty = dict(np.load(folder / files[outputs]))
            must = thresholds is not None and openvino_catches(faulty, f32, thresholds) \
                and not openvino_catches(clean_reduced, f32, thresholds)
            found.append(Replayed(case["id"], "fault", verdict, path, must, message))
    return found


def replay_expected(folder: Path) -> list[Replayed]:
    """--expected: each clean case's outputs at a reduced precision against its own f32 outputs
    (must pass), and each weight fault's, run as the faulty model, against the clean model's f32
    outputs (the framework's, as it were: must fail where OpenVINO's thresholds catch it)."""
    manifest = json.loads((folder / "manifest.json").read_text())
    cases = {case["id"]: case for case in manifest["cases"]}
    found = []
    for precision in [p for p in manifest["precisions"] if p != "f32"]:
        outputs, thresholds = f"outputs-{precision}", OPENVINO_THRESHOLDS[precision]
        for case in manifest["cases"]:
            files = case["files"]
            clean = cases[case["fault_of"]]["files"] if case["fault_of"] else files
            with tempfile.TemporaryDirectory() as scratch:
                model = folder / files["xml"] if not case["fault_of"] else \
                    faulty_model(folder / clean["xml"], case["fault"], Path(scratch) / "model.xml")
                if model is None:
                    continue
                verdict, path, message, _ = judge(model, folder / files["inputs"], folder / files[outputs],
                                                  precision, folder / clean["outputs-f32"])
            if not case["fault_of"]:
                found.append(Replayed(case["id"], "clean --expected", verdict, path, message=message))
                continue
            f32, reduced = (dict(np.load(folder / clean[key])) for key in ("outputs-f32", outputs))
            must = openvino_catches(dict(np.load(folder / files[outputs])), f32, thresholds) \
                and not openvino_catches(reduced, f32, thresholds)
            found.append(Replayed(case["id"], "fault --expected", verdict, path, must, message))
    return found


def replay_suites(folder: Path, only: str = "", jobs: int = 1) -> list[Replayed]:
    """Each recorded job of a suite (a reproducer folder), re-judged by irtool report rejudge's
    library; a job its suite's known-failures file (samples/suites/SUITE.xfail.toml) expects to fail
    is counted as known, not as a false FAIL."""
    import re

    from irtool.harness.rejudge import RejudgeOptions, rejudge

    suites = Path(__file__).resolve().parent.parent / "samples" / "suites"
    known = [suites / f"{suite.name}.xfail.toml" for suite in sorted(folder.iterdir())
             if (suites / f"{suite.name}.xfail.toml").is_file()]
    with tempfile.TemporaryDirectory() as scratch:
        found = rejudge(RejudgeOptions(folder, Path(scratch) / "rejudged", jobs, expected_failures=known, only=only))
    replayed = []
    for result in found.outcome.run.results:
        source = next((o.get("tolerance_source") or "" for o in result.outputs), "")
        derived = re.match(r"derived: (\S+?)'s ", source)
        verdict = "known" if result.verdict == "xfail" else result.verdict
        replayed.append(Replayed(f"{result.suite}/{result.name}", "suite", verdict,
                                 derived.group(1) if derived else "ideal reference", message=result.message))
    return replayed


def summary(results: list[Replayed]) -> dict:
    """Counts by kind and path: clean cases that did not pass, faults that should fail and did not,
    suite jobs that failed (false FAILs)."""
    table: Counter = Counter()
    for r in results:
        table[(r.kind, r.path, r.verdict, r.must_fail)] += 1
    clean_not_passed = [r for r in results if r.kind.startswith("clean") and r.verdict != "pass"]
    missed = [r for r in results if r.kind.startswith("fault") and r.must_fail and r.verdict != "fail"]
    false_fails = [r for r in results if r.kind.startswith(("clean", "suite")) and r.verdict == "fail"]
    agreement: dict[str, Counter] = {}  # per path, of the clean cases: bit for bit, within one ulp, all
    for r in results:
        if r.kind == "clean" and r.ulps is not None:
            counts = agreement.setdefault(r.path, Counter())
            counts["cases"] += 1
            counts["bit for bit"] += r.ulps == 0
            counts["within one ulp"] += r.ulps <= 1
    return {"table": table, "agreement": agreement, "clean_not_passed": clean_not_passed, "missed_faults": missed,
            "false_fails": false_fails,
            "faults_caught": sum(r.kind.startswith("fault") and r.must_fail and r.verdict == "fail" for r in results),
            "faults_to_catch": sum(r.kind.startswith("fault") and r.must_fail for r in results)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a recordings folder of one device")
    parser.add_argument("--suites", action="store_true", help="replay the suites' reproducer folders too (slow)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every case's result here")
    parser.add_argument("--only", default="", metavar="TEXT", help="replay only the suite jobs whose folder names it")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="workers replaying the suites' jobs")
    parser.add_argument("--expected", action="store_true",
                        help="judge the single-op cases' outputs with --expected too (faults as their faulty model)")
    args = parser.parse_args(argv)
    results = replay_single_op(args.folder / "single-op")
    if args.expected:
        results += replay_expected(args.folder / "single-op")
    if args.suites and (args.folder / "suites").is_dir():
        results += replay_suites(args.folder / "suites", args.only, args.jobs)
    found = summary(results)
    if args.json is not None:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=1))
    for (kind, path, verdict, must), count in sorted(found["table"].items()):
        print(f"{kind:16} {path:30} {verdict:9} {'(OpenVINO catches)' if must else '':19} {count}")
    print("clean single-op cases against the emulation of their path (each step from the device's own state):")
    for path, counts in sorted(found["agreement"].items()):
        share = counts["within one ulp"] / counts["cases"]
        print(f"  {path:30} bit for bit {counts['bit for bit']:3} of {counts['cases']:3}; within one bf16 ulp where "
              f"they first differ {counts['within one ulp']:3} ({share:.0%})")
    for key in ("clean_not_passed", "missed_faults", "false_fails"):
        print(f"{key}: {len(found[key])}")
        for r in found[key][:40]:
            print(f"  {r.case} [{r.path}] {r.verdict}: {r.message[:300]}")
    print(f"faults OpenVINO's thresholds catch, failed here: {found['faults_caught']} of {found['faults_to_catch']}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    sys.exit(main())
