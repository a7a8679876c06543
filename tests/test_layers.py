"""The layers point one way: what each part of irtool may import, checked on the source."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "irtool"
OPENVINO_IMPORTERS = ("build.py", "runtime/")


def imports(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports, outside ``if TYPE_CHECKING:`` blocks (line, module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for stmt in node.body for child in ast.walk(stmt)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_openvino_is_imported_only_by_build_and_the_runtime_package(path):
    relative = str(path.relative_to(PACKAGE))
    if relative.startswith(OPENVINO_IMPORTERS):
        return
    found = [(line, module) for line, module in imports(path) if module.split(".")[0] == "openvino"]
    assert not found, f"irtool/{relative} imports {found}: go through irtool.runtime"


def test_the_check_sees_imports_inside_functions_and_skips_type_checking(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import openvino\n"
                      "def f():\n    import openvino.opset1 as ops\n")
    assert imports(sample) == [(1, "typing"), (5, "openvino.opset1")]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_onnxruntime_is_imported_only_by_its_own_module(path):
    relative = str(path.relative_to(PACKAGE))
    found = [(line, module) for line, module in imports(path) if module.split(".")[0] == "onnxruntime"]
    if relative == "onnx/onnxruntime_run.py":
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not any("onnxruntime" in ast.unparse(n).split("irtool")[0] for n in top), "imported lazily only"
        return
    assert not found, f"irtool/{relative} imports {found}: onnxruntime goes through irtool.onnx.onnxruntime_run"


@pytest.mark.parametrize("package, forbidden", [("harness", "reduce"), ("reduce", "harness"),
                                                ("jobs", "harness"), ("jobs", "reduce"), ("jobs", "cli"),
                                                ("runtime", "harness"), ("runtime", "jobs"), ("runtime", "cli")])
def test_layers_point_one_way(package, forbidden):
    """cli -> harness, reduce -> jobs -> the pipeline (execute, build, runtime) -> reference, specs, ir:
    harness and reduce do not import each other, nothing below them imports them or the CLI."""
    found = [(str(path.relative_to(PACKAGE)), line, module) for path in (PACKAGE / package).rglob("*.py")
             for line, module in imports(path) if module.startswith(f"irtool.{forbidden}")]
    assert not found, f"irtool.{package} imports irtool.{forbidden}: {found}"


@pytest.mark.parametrize("module", ["execute", "build", "concrete", "reproducer"])
def test_the_pipeline_imports_no_layer_above_it(module):
    found = [(line, name) for line, name in imports(PACKAGE / f"{module}.py")
             if name.startswith(("irtool.harness", "irtool.reduce", "irtool.jobs", "irtool.cli"))]
    assert not found, f"irtool/{module}.py imports {found}"


@pytest.mark.parametrize("lower, upper", [
    ("judge_onnx.py", "irtool.execute"),  # the pipeline calls the ONNX judge; both take NodeResult from verdicts
    ("judge_expected.py", "irtool.execute"),
    ("harness/reports.py", "irtool.harness.html"), ("harness/reports.py", "irtool.harness.junit"),
    ("harness/reports.py", "irtool.harness.report_files"),  # the writers use the shared words, not back
    ("harness/html.py", "irtool.harness.report_files"), ("harness/junit.py", "irtool.harness.report_files"),
    ("jobs/frontends.py", "irtool.jobs.suite"),  # the suite reader uses the frontends, not back
    ("jobs/records.py", "irtool.jobs.suite"), ("jobs/records.py", "irtool.jobs.frontends"),
])
def test_modules_that_once_imported_each_other_point_one_way(lower, upper):
    """Import circles once joined these modules (each side importing the other inside functions);
    the lower one now imports nothing of the upper, inside functions or not."""
    found = [(line, name) for line, name in imports(PACKAGE / lower) if name == upper or name.startswith(upper + ".")]
    assert not found, f"irtool/{lower} imports {found}"
