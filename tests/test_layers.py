"""The layers point one way: what each part of irtool may import, checked on the source.

``LAYERS`` is the one statement of the package order (docs/architecture.md explains it): a
package imports only packages of the tiers below its own, never one beside or above it, and
no two modules import each other, directly or round a longer circle.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "irtool"

# Top to bottom; the packages of one tier do not import each other.
LAYERS = (
    ("cli",),
    ("harness", "reduce"),
    ("jobs",),
    ("pipeline",),
    ("judge", "validate"),
    ("onnx", "oracles", "runtime"),
    ("lowering",),
    ("reference", "ir"),
    ("specs",),
    ("core",),
)
TIER = {package: depth for depth, tier in enumerate(LAYERS) for package in tier}
OPENVINO_IMPORTERS = ("pipeline/build.py", "runtime/", "lowering/")


def imports(path: Path, typing_too: bool = False) -> list[tuple[int, str]]:
    """Every module a file imports, outside ``if TYPE_CHECKING:`` blocks unless ``typing_too``
    (line, module); ``from package import name`` is the module ``package.name`` where there is one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = set()
    for node in ast.walk(tree):
        if not typing_too and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(child) for stmt in node.body for child in ast.walk(stmt)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = [f"{node.module}.{alias.name}" for alias in node.names
                          if _module_path(f"{node.module}.{alias.name}") is not None]
            found += [(node.lineno, name) for name in submodules or [node.module]]
    return found


def _module_path(name: str) -> Path | None:
    if not name.startswith("irtool."):
        return None
    base = PACKAGE.joinpath(*name.split(".")[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = sorted(PACKAGE.rglob("*.py"))
# A circle through an import made for type hints only is a circle still: the two modules
# cannot be understood, or moved, one without the other.
GRAPH = {module_name(path): {name for _, name in imports(path, typing_too=True)
                             if _module_path(name) is not None} - {module_name(path)}
         for path in SOURCES}


def package_of(module: str) -> str | None:
    """The layer a module of irtool belongs to (None: irtool's own __init__ and __main__)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in TIER) else None


def test_the_top_of_irtool_holds_packages_only_and_each_is_a_layer():
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert not loose, f"modules at the top of irtool/: {loose}; each belongs in a package"
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(TIER), f"packages not in LAYERS: {packages - set(TIER)}; in LAYERS only: {set(TIER) - packages}"


@pytest.mark.parametrize("package", sorted(TIER))
def test_each_package_says_its_job_and_what_it_may_import(package):
    docstring = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text(encoding="utf-8")))
    assert docstring and "may import" in docstring.lower(), \
        f"irtool/{package}/__init__.py: say its job and what it may import"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_a_layer_above_or_beside_its_own(path):
    module = module_name(path)
    own = package_of(module)
    if own is None:  # irtool/__init__.py imports nothing of irtool; __main__.py is the program's entry
        return
    wrong = [(line, name) for line, name in imports(path)
             if _module_path(name) is not None and (other := package_of(name)) not in (None, own)
             and TIER[other] <= TIER[own]]
    assert not wrong, f"irtool/{path.relative_to(PACKAGE)} (layer {own}) imports {wrong}: see LAYERS"


def test_no_import_circle_between_modules():
    """Tarjan's strongly connected components of the module graph: each must be one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in GRAPH.get(module, ()):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert not circles, f"import circles: {circles}"


def test_the_checks_see_what_they_must(tmp_path):
    """Imports inside functions count, TYPE_CHECKING blocks do not, and ``from pkg import mod`` is mod."""
    sample = tmp_path / "m.py"
    sample.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import openvino\n"
                      "def f():\n    import openvino.opset1 as ops\n    from irtool.core import errors\n")
    assert imports(sample) == [(1, "typing"), (5, "openvino.opset1"), (6, "irtool.core.errors")]
    assert package_of("irtool.pipeline.run") == "pipeline" and package_of("irtool") is None


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_openvino_is_imported_only_by_build_and_the_runtime_package(path):
    relative = str(path.relative_to(PACKAGE))
    if relative.startswith(OPENVINO_IMPORTERS):
        return
    found = [(line, module) for line, module in imports(path) if module.split(".")[0] == "openvino"]
    assert not found, f"irtool/{relative} imports {found}: go through irtool.runtime"


# each framework runtime (an oracle, optional) and the one module that imports it, lazily
RUNTIMES = {"onnxruntime": "onnx/onnxruntime_run.py", "ai_edge_litert": "oracles/tflite_run.py",
            "tflite_runtime": "oracles/tflite_run.py", "tensorflow": "oracles/tensorflow_run.py",
            "tf_keras": None, "keras": None, "paddle": "oracles/paddle_run.py"}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_each_framework_runtime_is_imported_only_by_its_own_module(path):
    relative = str(path.relative_to(PACKAGE))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    for line, module in imports(path):
        root = module.split(".")[0]
        if root not in RUNTIMES:
            continue
        assert relative == RUNTIMES[root], \
            f"irtool/{relative} imports {module} (line {line}): {root} goes through irtool/{RUNTIMES[root]}"
    for node in ast.walk(tree):  # and there only inside functions: irtool runs without it
        if id(node) in top and any(name.split(".")[0] in RUNTIMES for name in _names(node)):
            raise AssertionError(f"irtool/{relative} imports a framework runtime at its top: import it lazily")


def _names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else []


@pytest.mark.parametrize("lower, upper", [
    ("harness/reports.py", "irtool.harness.html"), ("harness/reports.py", "irtool.harness.junit"),
    ("harness/reports.py", "irtool.harness.report_files"),  # the writers use the shared words, not back
    ("harness/html.py", "irtool.harness.report_files"), ("harness/junit.py", "irtool.harness.report_files"),
    ("jobs/frontends.py", "irtool.jobs.suite"),  # the suite reader uses the frontends, not back
    ("jobs/records.py", "irtool.jobs.suite"), ("jobs/records.py", "irtool.jobs.frontends"),
])
def test_modules_of_one_package_point_one_way(lower, upper):
    """Within a package, the modules that share words with others import none of them."""
    found = [(line, name) for line, name in imports(PACKAGE / lower) if name == upper or name.startswith(upper + ".")]
    assert not found, f"irtool/{lower} imports {found}"
