"""What reduce starts from: an IR file, a harness reproducer folder, or ``SUITE.toml::CASE-ID``.

Each becomes an :class:`Origin`: the case as a harness :class:`SuiteCase` (runnable as given,
in a worker, exactly as the harness runs it) and what the reproducer folder recorded about
its run (device, precision, config, per-output tolerances), which the command line may override.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from irtool.core.documents import load_json
from irtool.core.files import read_text
from irtool.core.formats import model_format
from irtool.core.jsonable import quoted_json
from irtool.core.model_files import ModelFileError, check_folder_file
from irtool.jobs.records import SuiteCase, case_from_json, is_tolerance
from irtool.judge.compare import TolerancePolicy
from irtool.pipeline.concrete import ConcreteCase, from_node
from irtool.pipeline.reproducer import safe_config
from irtool.reduce.errors import ReduceError
from irtool.runtime.captured import input_arrays

SUITE_SEPARATOR = "::"
SUITE_NAME = "reduce"


@dataclass(frozen=True)
class Origin:
    case: SuiteCase
    device: str | None = None
    precision: str | None = None
    config: Mapping[str, str] = field(default_factory=dict)
    tolerance: TolerancePolicy = field(default_factory=TolerancePolicy)
    timeout: float | None = None  # the suite's per-case timeout
    notes: tuple[str, ...] = ()  # what was not taken from a reproducer's case.json, and why


def load_origin(text: str, inputs: Path | None = None, seed: int = 0) -> Origin:
    """The origin a CASE argument names; ReduceError names the path and what was expected.

    ``inputs`` (an .npz by model input name) and ``seed`` apply to an IR file only: a
    reproducer folder has its inputs.npz and a suite case its seed.
    """
    if SUITE_SEPARATOR in text:
        suite, _, case_id = text.partition(SUITE_SEPARATOR)
        origin = _suite_case(Path(suite), case_id)
    else:
        path = Path(text)
        if path.is_dir() and model_format(path) is None:
            origin = _reproducer(path)
        elif path.suffix == ".xml":
            if not path.is_file():
                raise ReduceError(f"{path}: no such model file")
            return Origin(SuiteCase(id=path.stem, suite=SUITE_NAME, file=str(path.resolve()),
                                    inputs=str(Path(inputs).resolve()) if inputs else None, seed=seed))
        elif not path.exists():
            raise ReduceError(f"{path}: no such file or folder; expected an IR .xml file, a reproducer folder "
                              f"or SUITE.toml{SUITE_SEPARATOR}CASE-ID")
        else:
            found = model_format(path)
            other = ("" if found is None else f" (an ONNX model's nodes are ONNX nodes: convert it to IR (ovc "
                     f"{path.name}) and reduce the node OpenVINO made of it)" if found.frontend == "onnx" else
                     f" (a model of another format, {found.label}, is reduced one node at a time: --node NAME)")
            raise ReduceError(f"{path}: expected an IR .xml file, a reproducer folder or "
                              f"SUITE.toml{SUITE_SEPARATOR}CASE-ID{other}")
    if inputs is not None:
        raise ReduceError(f"{text}: --inputs applies to an IR file; this case brings its own inputs")
    return origin


def node_origin(model: Path, node: str, device: str, precision: str, tolerance: TolerancePolicy,
                config: Mapping[str, str], folder: Path, inputs: Path | None = None, seed: int = 0) -> Origin:
    """The origin of one node of any model: the model runs on ``device`` through the pipeline,
    and the node's reproducer (a single-op IR with the inputs the device gave the node) is
    written into ``folder`` and read back as a reproducer folder.  ReduceError if the model has
    no such node; NothingToReduce's message if the node does not fail."""
    from irtool.pipeline.run import RunOptions, run

    if not (Path(model).is_file() or model_format(model) is not None):
        raise ReduceError(f"{model}: no such model file")
    if Path(model).suffix.lower() == ".onnx":
        raise ReduceError(f"{model}: reduce shrinks a single-op IR of an OpenVINO node, and an .onnx model's nodes are "
                          f"judged as ONNX nodes; convert it to IR (ovc {Path(model).name}, or ov.save_model of "
                          f"ov.convert_model) and reduce the node OpenVINO made of it there")
    result = run(RunOptions(model=Path(model), device=device, precision=precision, inputs=inputs, seed=seed,
                            tolerance=tolerance, config=config, reproducers=folder))
    found = next((n for n in result.nodes if n.name == node), None)
    if found is None:
        names = ", ".join(repr(n.name) for n in result.nodes) or "none"
        raise ReduceError(f"{model}: no recurrent node named {node!r}; its recurrent nodes: {names}")
    if node not in result.reproducers:
        raise NodePasses(f"node {node!r} of {Path(model).name} on {device} at {precision}: {found.verdict}"
                         + (f" ({found.reason})" if found.reason else "") + "; it does not fail, so there is "
                         "nothing to reduce")
    origin = _reproducer(Path(result.reproducers[node]))
    return Origin(origin.case, origin.device, origin.precision, origin.config, origin.tolerance,
                  notes=origin.notes)


class NodePasses(ReduceError):
    """The node named for reduce does not fail."""


def concrete_case(case: SuiteCase) -> ConcreteCase:
    """The case's op with its arrays: the model read or built, and its inputs loaded or seeded,
    in this process exactly as a worker does it."""
    from irtool.jobs.worker import Runner

    runner = Runner()
    prepared = runner.prepare(case)
    node = prepared.single
    if node is None:
        names = ", ".join(prepared.node_names) or "none"
        raise ReduceError(f"{case.file or case.id}: cannot reduce it: the model is not a single recurrent op fed by "
                          f"Parameters and Consts (its recurrent nodes: {names}); reduce one node with "
                          f"irtool reduce MODEL --node NAME -d DEVICE, or reduce a node's reproducer folder (the "
                          f"harness and irtool run --reproducers write them)")
    inputs = runner.data(case, prepared).inputs
    return from_node(node, input_arrays(node, inputs))


def _suite_case(path: Path, case_id: str) -> Origin:
    from irtool.jobs.suite import load_suite

    suite = load_suite(path)
    for case in suite.cases:
        if case.id == case_id:
            return Origin(case, timeout=suite.timeout)
    ids = [case.id for case in suite.cases]
    shown = ", ".join(ids[:5]) + (f" (and {len(ids) - 5} more)" if len(ids) > 5 else "")
    model, sep, node = case_id.partition("::")
    if sep and model in ids:
        raise ReduceError(f"{path}: {case_id!r} is node {node!r} of case {model!r}: reduce its reproducer folder "
                          f"(REPORT_DIR/reproducers/...), or irtool reduce MODEL --node {node} -d DEVICE")
    raise ReduceError(f"{path}: no case {case_id!r}; its cases are {shown}")


def _reproducer(folder: Path) -> Origin:
    missing = [name for name in ("case.json", "model.xml", "inputs.npz") if not os.path.lexists(folder / name)]
    if missing == ["model.xml"] and os.path.lexists(folder / "model.onnx"):
        raise ReduceError(f"{folder}: an ONNX node's reproducer (model.onnx): reduce shrinks IR; run it with "
                          f"irtool run {folder / 'model.onnx'} -d DEVICE --inputs {folder / 'inputs.npz'}")
    if missing:
        raise ReduceError(f"{folder}: not a reproducer folder (no {', '.join(missing)}); irtool harness writes "
                          f"them under REPORT_DIR/reproducers/")
    for name in ("case.json", "model.xml", "model.bin", "inputs.npz"):  # its own regular files, no link out
        if os.path.lexists(folder / name):
            try:
                check_folder_file(folder, name, f"the reproducer's {name}")
            except ModelFileError as error:
                raise ReduceError(error.message) from None
    path = folder / "case.json"
    record = _read_json(path)
    for key, kind, words in (("case", dict, "an object"), ("device", str, "a string"), ("precision", str, "a string"),
                             ("config", dict, "an object"), ("tolerances", dict, "an object")):
        if key not in record and key != "config":
            raise ReduceError(f"{path}: not a reproducer's case.json: no {key!r}; expected case, device, precision, "
                              f"config and tolerances")
        if not isinstance(record.get(key, {}), kind):
            raise ReduceError(f"{path}: {key!r} is {quoted_json(record[key])}; expected {words}")
    tolerances = {}
    for name, pair in record["tolerances"].items():
        if not (isinstance(pair, list) and len(pair) == 2 and all(is_tolerance(v) for v in pair)):
            raise ReduceError(f"{path}: tolerances[{name!r}] is {quoted_json(pair)}; expected [atol, rtol], two numbers >= 0")
        tolerances[name] = (float(pair[0]), float(pair[1]))
    config = record.get("config", {})
    if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in config.values()):
        raise ReduceError(f"{path}: 'config' is {quoted_json(config)}; expected an object of strings")
    config, notes = safe_config(config, str(path))
    device, precision = record["device"], record["precision"]
    try:
        original = case_from_json(record["case"])
    except (TypeError, ValueError) as error:
        raise ReduceError(f"{path}: 'case' is not a case irtool wrote ({error})") from None
    case = SuiteCase(id=original.id, suite=original.suite, file=str((folder / "model.xml").resolve()),
                     inputs=str((folder / "inputs.npz").resolve()), atol=original.atol, rtol=original.rtol)
    policy = TolerancePolicy(output_atol={name: pair[0] for name, pair in tolerances.items()},
                             output_rtol={name: pair[1] for name, pair in tolerances.items()})
    return Origin(case, device, precision, config, policy, notes=tuple(notes))


def _read_json(path: Path) -> Any:
    try:
        data = load_json(read_text(path, "reproducer's case.json"))
    except json.JSONDecodeError as error:
        raise ReduceError(f"{path}: cannot read it as JSON ({error})") from None
    if not isinstance(data, dict):
        raise ReduceError(f"{path}: expected a JSON object")
    return data

