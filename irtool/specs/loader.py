"""Load schemas/ops/*.json into OpSpec records and pick the version an IR layer asks for."""
from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from types import MappingProxyType
from typing import Any

from irtool.core.errors import InputError
from irtool.specs.expressions import parse_expression
from irtool.specs.model import AttributeSpec, OpSpec, PortSpec, SizeSpec, SpecError, SymbolSpec


def _schema_dir() -> Traversable:
    """schemas/ of the repository, which pyproject.toml installs as the package irtool._schemas:
    read through importlib.resources in an editable install, a wheel or a zip.  irtool run from a
    source tree that was not installed (on PYTHONPATH, as the workers of other openvino releases
    run it) finds the folder beside its package."""
    try:
        return files("irtool._schemas")
    except ModuleNotFoundError as error:
        if error.name != "irtool._schemas":
            raise
        return Path(__file__).resolve().parent.parent.parent / "schemas"


SCHEMA_DIR: Traversable = _schema_dir()
OPS_DIR: Traversable = SCHEMA_DIR / "ops"
SPEC_FILE = re.compile(r"^[^.].*-.*\.json$")  # Type-version.json (common.json is the shared pieces)
EXTRA_SPECS_VARIABLE = "IRTOOL_EXTRA_SPECS"  # folders of further op spec files (os.pathsep-separated)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_OPSET = re.compile(r"^opset(\d{1,9})$", re.ASCII)  # ASCII digits: int() takes any Unicode digit, and refuses 4300 of them


def _resolve(node: Any, common: dict, where: str) -> Any:
    """Replace {"$ref": "common.json#/a/b", ...overrides} by the referenced object merged with overrides."""
    if isinstance(node, list):
        return [_resolve(item, common, where) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        ref = node["$ref"]
        prefix = "common.json#/"
        if not ref.startswith(prefix):
            raise SpecError(f"{where}: $ref {ref!r} must point into common.json")
        target: Any = common
        for part in ref[len(prefix):].split("/"):
            if not isinstance(target, dict) or part not in target:
                raise SpecError(f"{where}: $ref {ref!r} points at nothing")
            target = target[part]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _resolve(merged, common, where)
    return {key: _resolve(value, common, where) for key, value in node.items() if key != "$schema"}


def _port(data: dict, index: int, where: str) -> PortSpec:
    shape = data.get("shape")
    fields: dict[str, Any] = {}
    if isinstance(shape, list):
        fields["dims"] = tuple(parse_expression(d) for d in shape)
        fields["dim_texts"] = tuple(str(d) for d in shape)
    elif isinstance(shape, dict) and "attribute" in shape:
        fields["shape_attribute"] = shape["attribute"]
    elif isinstance(shape, dict) and "same_as" in shape:
        fields["same_as"] = shape["same_as"]
    elif shape is not None:
        raise SpecError(f"{where}: port {data.get('name')}: bad shape {shape!r}")
    return PortSpec(name=data["name"], index=index, type=data["type"], optional=data.get("optional", False),
                    openvino_requires=data.get("openvino_requires", False), role=data.get("role"),
                    description=data.get("description", ""), **fields)


def _attribute(name: str, data: dict) -> AttributeSpec:
    allowed = data.get("allowed")
    return AttributeSpec(
        name=name, type=data["type"], required=data.get("required", False), default=data.get("default"),
        allowed=tuple(allowed) if allowed is not None else None,
        case_insensitive=data.get("case_insensitive", False), minimum=data.get("minimum"),
        maximum=data.get("maximum"), length=data.get("length"),
        openvino_applies_default=data.get("openvino_applies_default", True), static=data.get("static", False),
        open_reads_as=data.get("open", {}).get("reads_as"), open_why=data.get("open", {}).get("why", ""),
        description=data.get("description", ""))


def snake_case(op_type: str) -> str:
    """GRUSequence -> gru_sequence, LSTMCell -> lstm_cell (OpenVINO's Python factory names)."""
    return _CAMEL.sub("_", op_type).lower()


def _factory(data: dict) -> str | None:
    """The openvino factory of an op: the spec's ``factory`` (null: none), else for an op of a family
    that OpenVINO loads, the rule OpenVINO's Python API follows: openvino.opsetN.snake_case_type."""
    if "factory" in data:
        return None if data["factory"] is None else f"openvino.{data['factory']}"
    if data.get("family") is None or not data.get("openvino_loads", True):
        return None
    return f"openvino.{data['opset']}.{snake_case(data['type'])}"


def build_spec(data: dict, common: dict, where: str = "<spec>") -> OpSpec:
    """Make an OpSpec from the JSON of one op file (with its $refs into ``common``)."""
    data = _resolve(data, common, where)
    try:
        return OpSpec(
            type=data["type"], version=data["version"], opset=data["opset"],
            attributes=MappingProxyType({n: _attribute(n, a) for n, a in data["attributes"].items()}),
            inputs=tuple(_port(p, i, where) for i, p in enumerate(data["inputs"])),
            outputs=tuple(_port(p, i, where) for i, p in enumerate(data["outputs"])),
            symbols=MappingProxyType({
                n: SymbolSpec(n, s["attribute"], MappingProxyType(s["map"]) if "map" in s else None,
                              tuple(s.get("backward", ())))
                for n, s in data.get("symbols", {}).items()}),
            types=MappingProxyType(dict(data.get("types", {}))),
            sizes=MappingProxyType({n: SizeSpec(n, s["default"], s.get("time", False))
                                    for n, s in data.get("sizes", {}).items()}),
            family=data.get("family"), form=data.get("form"), description=data.get("description", ""),
            source=data.get("source", ""), openvino_loads=data.get("openvino_loads", True),
            openvino_note=data.get("openvino_note", ""), factory=_factory(data), path=where)
    except (KeyError, ValueError, TypeError) as error:
        raise SpecError(f"{where}: " + (f"no key {error}" if isinstance(error, KeyError) else str(error))) from error


class SpecRegistry:
    """All op specs, by type and version."""

    def __init__(self, specs: list[OpSpec]):
        self._by_type: dict[str, list[OpSpec]] = {}
        self._for_ir: dict[tuple[str, str | None], OpSpec | None] = {}
        for spec in specs:
            versions = self._by_type.setdefault(spec.type, [])
            if any(s.version == spec.version for s in versions):
                raise SpecError(f"two spec files for {spec.key}")
            versions.append(spec)
        for versions in self._by_type.values():
            versions.sort(key=lambda s: (s.opset_number, s.version))

    def __iter__(self):
        for versions in self._by_type.values():
            yield from versions

    def types(self) -> list[str]:
        return sorted(self._by_type)

    def versions(self, op_type: str) -> list[OpSpec]:
        return list(self._by_type.get(op_type, []))

    def get(self, op_type: str, version: int | None = None) -> OpSpec | None:
        """The spec of ``op_type`` with exactly this op version (None: the newest)."""
        versions = self._by_type.get(op_type, [])
        if version is None:
            return versions[-1] if versions else None
        return next((s for s in versions if s.version == version), None)

    def for_ir(self, op_type: str, ir_version: str | None) -> OpSpec | None:
        """The spec an IR layer means: the newest one whose opset is not above the layer's.

        ``version="opset8"`` on a GRUSequence means GRUSequence-5, the GRUSequence that
        opset8 holds.  A version that is not ``opsetN`` (an extension's) has no spec; a
        missing one (a pasted documentation example) means the newest.
        """
        key = (op_type, ir_version)
        if key not in self._for_ir:
            if len(self._for_ir) > 4096:
                self._for_ir.clear()
            self._for_ir[key] = self._resolve_ir(op_type, ir_version)
        return self._for_ir[key]

    def _resolve_ir(self, op_type: str, ir_version: str | None) -> OpSpec | None:
        # OpenVINO's reader takes an op type in any case (grusequence is GRUSequence)
        versions = self._by_type.get(op_type) or next(
            (v for name, v in self._by_type.items() if name.lower() == op_type.lower()), [])
        if ir_version is None:
            return versions[-1] if versions else None
        match = _OPSET.match(ir_version.strip())
        if not match:
            return None
        number = int(match.group(1))
        candidates = [s for s in versions if s.opset_number <= number]
        return candidates[-1] if candidates else None


def _read_json(path: Traversable) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SpecError(f"{path}: {error}") from error


def spec_files(folder: Traversable) -> list[Traversable]:
    """The spec files (``Type-version.json``) of a folder, by name."""
    try:
        found = [entry for entry in folder.iterdir() if SPEC_FILE.match(entry.name) and entry.is_file()]
    except OSError as error:
        raise SpecError(f"{folder}: cannot list its spec files ({error.strerror or error})") from error
    return sorted(found, key=lambda entry: entry.name)


def load_registry(directory: Traversable = OPS_DIR, *extra: Traversable) -> SpecRegistry:
    """The spec files (``Type-version.json``) of ``directory`` and of each ``extra`` folder; their
    ``$ref``s point into ``directory``'s common.json.  Two files for one op version are refused,
    and so is a ``directory`` without spec files (an install that lost its data)."""
    common_path = directory / "common.json"
    common = _read_json(common_path) if common_path.is_file() else {}
    shipped = spec_files(directory)
    if not shipped:
        raise SpecError(f"{directory}: no op spec files (Type-version.json) there")
    specs = [build_spec(_read_json(path), common, str(path)) for path in shipped]
    known = {spec.key: spec.path for spec in specs}
    for folder in extra:
        for path in spec_files(folder):
            spec = _extra_spec(path, common)
            if spec.key in known:
                raise InputError(f"{EXTRA_SPECS_VARIABLE}: {path}: a second spec file for {spec.key} (the first: "
                                 f"{known[spec.key]}); a folder of extra specs adds op versions irtool has no spec "
                                 f"of, each in one file")
            known[spec.key] = spec.path
            specs.append(spec)
    return SpecRegistry(specs)


def _extra_spec(path: Traversable, common: dict) -> OpSpec:
    """A spec file of a folder IRTOOL_EXTRA_SPECS names: the user's file, read as any file a user
    hands irtool is (bounded: size, nesting, 64-bit integers), and refused in one line naming it
    (never as an irtool bug, as a shipped spec file that does not load is)."""
    from irtool.core.documents import load_json
    from irtool.core.files import FileError, read_text

    where = f"{EXTRA_SPECS_VARIABLE}: {path}"
    try:
        data = load_json(read_text(Path(str(path)), "spec file"))
    except FileError as error:
        raise InputError(f"{EXTRA_SPECS_VARIABLE}: {error.message}") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{where}: not JSON ({error})") from None
    if not isinstance(data, dict):
        raise InputError(f"{where}: expected a JSON object, an op spec (schemas/ops/op.schema.json)")
    try:
        return build_spec(data, common, str(path))
    except Exception as error:  # the user's file, of any shape: what build_spec met, said as such
        said = error.message.removeprefix("irtool bug: ").removeprefix(f"{path}: ") if isinstance(error, SpecError) \
            else f"{type(error).__name__}: {error}"
        raise InputError(f"{where}: not an op spec irtool reads ({said}); expected what "
                         f"schemas/ops/op.schema.json describes") from None


def registry() -> SpecRegistry:
    """The specs shipped in schemas/ops, and those in the folders that the environment variable
    IRTOOL_EXTRA_SPECS names (to try a new op version's spec file before adding it); loaded once
    per set of folders."""
    return _registry(os.environ.get(EXTRA_SPECS_VARIABLE, ""))


@lru_cache(maxsize=4)
def _registry(extra: str) -> SpecRegistry:
    folders = [Path(part) for part in extra.split(os.pathsep) if part]
    for folder in folders:
        if not folder.is_dir():
            raise InputError(f"{EXTRA_SPECS_VARIABLE} names {folder}, which is not a folder "
                             f"(expected folders of op spec files, separated by {os.pathsep!r})")
    return load_registry(OPS_DIR, *folders)
