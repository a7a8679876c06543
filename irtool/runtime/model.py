"""Reading models, and what their inputs and outputs are called."""
from __future__ import annotations

import errno
import os
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from irtool.core.activity import doing
from irtool.core.element_types import NOT_ARRAYS
from irtool.core.errors import OpenVINOFailed, RunError
from irtool.core.formats import SAVED_MODEL_FILE, WEIGHTS_BESIDE, formats_text, model_format
from irtool.core.shapes import Dim, Interval, format_shape
from irtool.runtime.core import core, openvino_message
from irtool.runtime.frontends import (WANTS_SHAPES, convert_alone, first_failure, ir_reader_takes, last_useful_line,
                                     quiet_stderr, unsupported_op)
from irtool.specs import default_batch, registry


@dataclass
class LoadedModel:
    path: Path
    model: Any  # ov.Model
    filled_defaults: tuple[str, ...] = ()  # "layer 'name' (GRUSequence): activations=sigmoid,tanh"
    # input name -> the sizes irtool converted it at, and why, where its frontend needs shapes and none were given
    converted_at: Mapping[str, str] = field(default_factory=dict)


Shapes = Mapping[str, Sequence[int]]


def read_model(xml_path: str | Path, fill_defaults: bool = False,
               shapes: Callable[[], Shapes] | None = None, batch: int | None = None) -> LoadedModel:
    """Read a model (IR .xml + .bin, or any format of irtool.core.formats); with ``fill_defaults`` write
    the spec's defaults for omitted attributes into the XML first (OpenVINO leaves an omitted
    activations list empty).

    A model a frontend converts only with input shapes (an ONNX Conv needs its input's rank,
    which an If branch or an undeclared input does not give) is converted again with
    ``shapes()`` (the --shape and --inputs shapes, input name -> shape), as ``ovc --input`` and
    ``ov.convert_model(input=...)`` do; without any, at sizes irtool chooses (every input's rank
    declared: :func:`_converted_at_sizes`, ``batch`` (--batch) or the default batch for each
    dynamic dim, said in ``converted_at``), else the error names the inputs to give.  Only
    then: a model OpenVINO reads as it is keeps the dynamic dims its file declares (the code
    path deployments compile, where shapes are given at inference), whatever --shape says."""
    xml_path = Path(xml_path)
    bin_path = xml_path.with_suffix(".bin")
    check_model_path(xml_path)
    if fill_defaults and xml_path.suffix != ".xml":
        raise RunError(f"{xml_path}: --fill-defaults writes into IR XML; it does not apply to {xml_path.suffix} files")
    found = model_format(xml_path)
    reader = "IR reader" if found is None or found.frontend == "ir" else f"{found.label} frontend"
    with doing(xml_path, f"reading it with OpenVINO's {reader}"):
        return LoadedModel(xml_path, *_read(xml_path, bin_path, found, fill_defaults, shapes, batch))


def _read(xml_path: Path, bin_path: Path, found: Any, fill_defaults: bool,
          shapes: Callable[[], Shapes] | None, batch: int | None) -> tuple[Any, tuple[str, ...], dict[str, str]]:
    """read_model's work: the ov.Model and the defaults written into the XML."""
    import openvino as ov

    filled: tuple[str, ...] = ()
    chosen: dict[str, str] = {}
    try:
        if found is not None and found.frontend not in ("ir", "onnx"):  # TensorFlow, TFLite, Paddle
            with quiet_stderr():  # their parsers log to the process's stderr (TensorFlow's text-format retry)
                model, whole = convert_alone(xml_path, found.frontend)
            problem = last_useful_line(whole)
            lacks = unsupported_op(str(xml_path), whole, found.label) if model is None else None
            if lacks is not None:
                raise lacks
            if model is None:
                model = _read_with_shapes(xml_path, found, problem, shapes, chosen, batch)
            if model is None:
                raise RunError(f"{xml_path}: OpenVINO's {found.label} frontend cannot read it: {problem}")
        elif fill_defaults:
            from irtool.core.files import GIB, read_bytes
            from irtool.core.memory import memory_limit
            from irtool.core.model_files import read_model_file
            from irtool.ir.defaults import DefaultsError
            from irtool.ir.defaults import fill_defaults as write_defaults
            from irtool.ir.parse import DEFAULT_MAX_BYTES

            try:
                result = write_defaults(read_bytes(xml_path, "model file", DEFAULT_MAX_BYTES))
            except DefaultsError as error:
                raise RunError(f"{xml_path}: {error.message}") from None
            filled = tuple(f.describe() for f in result.filled)
            weights = (np.frombuffer(read_model_file(xml_path, bin_path.name, "its weights file",
                                                     limit=memory_limit() or 64 * GIB), np.uint8)
                       if os.path.lexists(bin_path) else np.empty(0, np.uint8))
            model = core().read_model(model=result.xml.decode("utf-8"), weights=ov.Tensor(weights))
        else:
            ir = found is None or found.frontend == "ir"
            try:  # an IR the IR reader does not take: read_model tries the others, which print as they fail
                with quiet_stderr() if ir and not ir_reader_takes(xml_path) else nullcontext():
                    model = core().read_model(str(xml_path))
            except RuntimeError as error:
                if ir:
                    raise
                model = _read_with_shapes(xml_path, found, openvino_message(error), shapes, chosen, batch)
                if model is None:
                    raise
    except RuntimeError as error:
        raise (unsupported_op(str(xml_path), str(error), found.label if found is not None else "IR")
               or OpenVINOFailed(_read_failure(xml_path, bin_path, error))) from None
    if not model.outputs:  # a frontend that reads a broken file as an empty model
        raise RunError(f"{xml_path}: OpenVINO reads it as a model without outputs, so nothing would run (a cut-off "
                       f"or broken file?)")
    if (problem := undecodable_name(model)) is not None:
        raise RunError(f"{xml_path}: {problem}; name it in UTF-8")
    return model, filled, chosen


def undecodable_name(model: Any) -> str | None:
    """Where a name irtool reads (an op's, at any depth, or its outputs') is not UTF-8, what it is and
    whose; else None.  OpenVINO keeps a name's bytes as the file gives them (a file in an encoding
    its reader does not decode, or with bytes that are not UTF-8), and its Python API fails on such a
    name wherever it is asked for (a Parameter's, as --inputs are matched, or any node's judged)."""
    from irtool.runtime.bodies import all_ops

    for position, op in enumerate(all_ops(model), 1):
        try:
            op.get_friendly_name()
            for output in op.outputs():
                output.get_names()
        except UnicodeDecodeError as error:
            text = error.object.decode("utf-8", "backslashreplace") if isinstance(error.object, bytes) else "?"
            return (f"the name '{text}' (of a {op.get_type_name()}, op {position} in OpenVINO's order, or of its "
                    f"output) is not UTF-8 text: OpenVINO keeps its bytes, and neither its Python API nor irtool "
                    f"can read it")
    return None


def _empty(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def _read_with_shapes(path: Path, found: Any, problem: str, shapes: Callable[[], Shapes] | None,
                      chosen: dict[str, str], batch: int | None) -> Any | None:
    """The model converted by its frontend with the given input shapes (static, as ``ovc --input``
    gives them), when reading it as it is failed saying ``problem``.  None when shapes cannot help:
    every input's shape is declared static, the frontend failed for another reason, or it has no
    conversion for an op.  Without shapes given, sizes irtool chooses (:func:`_converted_at_sizes`),
    said in ``chosen`` (input name -> the sizes and why); RunError when none converts (the error
    names the inputs to give, with their declared ranks, and what was tried), or when it fails with
    the shapes given."""
    import openvino as ov
    from openvino.frontend import FrontEndManager

    if unsupported_op(str(path), problem, found.label) is not None:  # no shape makes an op convertible
        return None
    try:
        with quiet_stderr():
            frontend = FrontEndManager().load_by_framework(found.frontend)
            loaded = frontend.load(str(path))
        places = list(loaded.get_inputs())
        declared = [loaded.get_partial_shape(place) for place in places]
    except Exception:  # the frontend cannot even load it: the first error says why
        return None
    names = [sorted(place.get_names())[0] if place.get_names() else "?" for place in places]
    inputs = ", ".join(f"{name} ({_rank_text(shape)})" for name, shape in zip(names, declared))
    wanted = [name for name, shape in zip(names, declared) if not shape.is_static]
    if not wanted or not WANTS_SHAPES.search(problem):
        return None
    given = dict(shapes() if shapes is not None else {})
    matched = {index: given[key] for index, place in enumerate(places) for key in given if key in place.get_names()}
    if not matched:
        wants = f"{path}: OpenVINO's {found.label} frontend converts it only with input shapes ({first_failure(problem)})"
        if given:
            raise RunError(f"{wants}, and the shapes given ({', '.join(given)}) name none of its inputs: {inputs}")
        model, tried = _converted_at_sizes(path, frontend, names, declared, chosen,
                                           f"OpenVINO's {found.label} frontend converts it only with input "
                                           f"shapes ({first_failure(problem)})", batch)
        if model is not None:
            return model
        raise RunError(f"{wants}: give them with --shape NAME=[...] (or shapes in a suite's [[models]] entry); "
                       f"its inputs: {inputs}" + (f"; irtool tried {tried}" if tried else ""))
    from irtool.core.memory import check_memory

    # a frontend may fold constants of the inputs' sizes: bounded like the inputs themselves
    check_memory(sum(int(np.prod(shape, dtype=np.float64)) * 8 for shape in matched.values()),
                 f"{path}: the input shapes given for its conversion")
    for index, shape in matched.items():
        loaded.set_partial_shape(places[index], ov.PartialShape([int(size) for size in shape]))
    try:
        with quiet_stderr(), doing(path, f"converting it with OpenVINO's {found.label} frontend and the input "
                                          f"shapes given"):
            return frontend.convert(loaded)
    except Exception as error:  # OpenVINO raises RuntimeError and friends; its verdict is the message
        message = openvino_message(error)
        unsupported = unsupported_op(str(path), str(error), found.label)
        if unsupported is not None:
            raise unsupported from None
        missing = [name for index, name in enumerate(names) if index not in matched and name in wanted]
        more = f"; give the shapes of {', '.join(missing)} too" if missing else ""
        used = ", ".join(f"{names[index]}={list(shape)}" for index, shape in matched.items())
        raise RunError(f"{path}: OpenVINO's {found.label} frontend cannot convert it with the input shapes "
                       f"{used}: {first_failure(message)}{more} (its inputs: {inputs})") from None


GROWN = tuple(2 ** k for k in range(5, 13))  # sizes a dim alone grows to, where small ones fail: 32 to 4096
def _converted_at_sizes(path: Path, frontend: Any, names: list[str], declared: list[Any], chosen: dict[str, str],
                        why: str, batch: int | None) -> tuple[Any | None, str]:
    """The model converted at sizes irtool chooses for its inputs' dynamic dims (every input's rank
    declared): ``batch`` each (--batch, else the default batch, 2: as a dim nothing sizes gets in
    irtool.runtime.sizes), else one dim at a time (the others the batch; dims past the first of an
    input before the first ones: an audio model's samples before its batch) at the smallest of 32,
    64, ... 4096 the frontend converts it at (Silero VAD's ONNX exports: a reflect Pad and an STFT
    Conv want 256 samples and more).  ``chosen`` gets each input's sizes and why; returns the
    model, or None and the first sizes tried with what the frontend said of them."""
    import openvino as ov

    if any(shape.rank.is_dynamic for shape in declared):
        return None, ""
    size = batch or default_batch()
    dims = [(index, k) for index, shape in enumerate(declared) for k, dim in enumerate(shape) if dim.is_dynamic]
    base = {key: size for key in dims}
    attempts = [base] + [{**base, key: larger} for key in sorted(dims, key=lambda key: (key[1] == 0, key))
                         for larger in GROWN if larger != size]
    first = ""
    for sizes in attempts:
        shapes = [[sizes.get((index, k), dim.get_length() if dim.is_static else 0) for k, dim in enumerate(shape)]
                  for index, shape in enumerate(declared)]
        loaded = frontend.load(str(path))
        for place, shape in zip(loaded.get_inputs(), shapes):
            loaded.set_partial_shape(place, ov.PartialShape(shape))
        try:
            with quiet_stderr(), doing(path, f"converting it at input shapes irtool chose ({shapes})"):
                model = frontend.convert(loaded)
        except Exception as error:  # OpenVINO raises RuntimeError and friends; its verdict is the message
            if not first:
                first = (", ".join(f"{name}={shape}" for name, shape in zip(names, shapes)) + ": "
                         + first_failure(openvino_message(error)))
            continue
        grown = [key for key in dims if sizes[key] != base[key]]
        how = (f"{why}: irtool converted it with {size} for each dynamic dim" + (" (--batch)" if batch else "")
               + "".join(f", {names[index]} dim {k} = {sizes[(index, k)]}, the smallest of {GROWN[0]}, "
                         f"{GROWN[1]}, ... {GROWN[-1]} it converts at (at {size}: "
                         f"{first.split(': ', 1)[1]})" for index, k in grown)
               + "; --shape or --inputs sets others")
        said = None
        for index, shape in enumerate(declared):
            sized = ", ".join(f"dim {k} = {sizes[(index, k)]}" for k, dim in enumerate(shape) if dim.is_dynamic)
            if sized:
                chosen[names[index]] = f"{sized} ({how if said is None else f'converted at these: see {said}'})"
                said = said or names[index]
        return model, first
    return None, first


def _rank_text(shape: Any) -> str:
    """'rank 3: [?,3,?]' or 'rank not declared', for a declared input shape."""
    return f"rank {len(shape)}: {shape}" if shape.rank.is_static else "rank not declared"


MAX_SAVED_MODEL_ENTRIES = 10_000  # files checked in a SavedModel folder before OpenVINO reads it


def check_model_path(path: Path) -> None:
    """RunError unless ``path`` is a model irtool reads (irtool.core.formats): a regular file of a
    known suffix (its weights file beside it a regular file too: OpenVINO would wait forever on
    a FIFO), or a SavedModel folder whose files are all regular.  Reading anything else would
    let OpenVINO try every frontend, each printing to stderr."""
    from irtool.core.files import FileError, check_readable

    if path.is_dir():
        if model_format(path) is None:
            raise RunError(f"{path}: is a folder without {SAVED_MODEL_FILE}; expected a model: {formats_text()}")
        _check_saved_model(path)
        return
    if not path.exists():
        try:
            path.stat()
        except OSError as error:  # a link in a loop, or too long a name: said as the system says it
            if path.is_symlink() or error.errno not in (errno.ENOENT, errno.ENOTDIR):
                raise RunError(f"{path}: cannot be read: {error.strerror}") from None
        raise RunError(f"{path}: no such model file")
    if not path.is_file():
        raise RunError(f"{path}: not a regular file; expected a model: {formats_text()}")
    from irtool.core.model_files import check_model_file

    try:
        check_readable(path, "model file")
        weights = path.with_suffix(WEIGHTS_BESIDE.get(path.suffix.lower(), path.suffix))
        if weights != path and os.path.lexists(weights):  # inside the model's folder, a regular file
            check_model_file(path, weights.name, "its weights file")
    except FileError as error:
        raise RunError(error.message) from None
    if path.suffix == ".bin":
        raise RunError(f"{path}: is an IR's weights file; give the .xml beside it ({path.with_suffix('.xml')})")
    if _empty(path):
        raise RunError(f"{path}: an empty file (0 bytes), not a model (a cut-off or broken file?)")
    if model_format(path) is None:
        raise RunError(f"{path}: irtool runs the models OpenVINO reads: {formats_text()}; "
                       f"convert others with ovc first")


def _check_saved_model(folder: Path) -> None:
    """Every entry of a SavedModel folder (saved_model.pb, variables/...) a regular file or a
    folder, and not too many of them."""
    from irtool.core.files import FileError, check_readable

    count = 0
    for root, folders, files in os.walk(folder):
        for name in files:
            count += 1
            if count > MAX_SAVED_MODEL_ENTRIES:
                raise RunError(f"{folder}: more than {MAX_SAVED_MODEL_ENTRIES} files; not a SavedModel irtool reads")
            try:
                check_readable(Path(root, name), "SavedModel file")
            except FileError as error:
                raise RunError(error.message) from None


def _read_failure(xml_path: Path, bin_path: Path, error: RuntimeError) -> str:
    message = openvino_message(error)
    weights_problem = "weights" in message.lower() or "bin file" in message
    if weights_problem and not bin_path.is_file():
        return f"{bin_path}: weights file not found; the Const layers of {xml_path.name} read their values from it"
    if weights_problem:
        return (f"{bin_path}: {bin_path.stat().st_size} bytes, too short for the Const layers of {xml_path.name} "
                f"(an offset + size points past its end)")
    if xml_path.suffix != ".xml":  # the notes below are about IR layers
        return f"{xml_path}: OpenVINO cannot read it: {message}"
    notes = [spec.openvino_note for spec in registry() if not spec.openvino_loads and spec.type in message]
    notes += _missing_required_inputs(xml_path)
    return f"{xml_path}: OpenVINO cannot read it: {message}" + "".join(f"; {note}" for note in notes)


def _missing_required_inputs(xml_path: Path) -> list[str]:
    """Layers that omit an input the spec calls optional but OpenVINO requires (GRUCell's B)."""
    from irtool.ir import IRParseError, parse_ir

    try:
        ir = parse_ir(xml_path)
    except (IRParseError, OSError):
        return []
    notes = []
    for layer in ir.layers:
        spec = registry().for_ir(layer.type or "", layer.version)
        for port in spec.inputs[len(layer.inputs):] if spec else ():
            if port.openvino_requires:
                notes.append(f"{layer.label} ({spec.type}) has no input {port.index} ({port.name}), which the spec "
                             f"makes optional but OpenVINO requires")
    return notes


def clone_model(model: Any) -> Any:
    """A copy of ``model`` whose inputs keep every name the model gives them: measured with openvino
    2026.4.1, ``Model.clone`` dropped one of a Parameter's two names (its ONNX frontend named an input
    after a Loop output it folded away), and a copy's inputs must be found by the model's names."""
    copy = model.clone()
    for ours, theirs in zip(copy.get_parameters(), model.get_parameters()):
        names = theirs.output(0).get_names()
        if names and ours.output(0).get_names() != names:
            ours.output(0).get_tensor().set_names(set(names))
    return copy


# An f16 whose 6 low significand bits are 0, a bf16 whose 5 are, is short: kept (2.0, 0.5, 6.0, 0)
SHORT_BITS = {"f16": 0x3F, "bf16": 0x1F}


def weights_moved(model: Any, seed: int) -> Any | None:
    """A copy of ``model`` whose weights stored as f16 or bf16 behind a Convert (as compress_to_fp16
    writes them, or a framework's bf16 weights arrive: irtool.runtime.nodes.stored_type; its bodies'
    too) are each moved by a random amount within half a unit of their type, in f32: one of the f32
    weights that round to the stored ones, as the framework's may be; None where the model stores
    none so.  Short values (at most 4 or 3 significant bits: 0, 2.0, 0.5, 6.0) and non-finite ones
    are kept: a framework's are exact (an exponent of 2 moved makes a power of a negative number
    NaN), where a rounded weight keeps its low bits 0 once in 64 (f16) or 32 (bf16).  What the copy
    computes against the model is what rounding its weights costs (a bias of 2 values too: a
    head's, which moves its output by up to half a unit)."""
    import openvino as ov

    from irtool.runtime.bodies import all_ops
    from irtool.runtime.nodes import stored_type

    copy = clone_model(model)
    rng = np.random.default_rng(seed)
    count = 0
    for op in all_ops(copy):
        kind = stored_type(op)
        if kind not in SHORT_BITS or op.get_output_element_type(0) != ov.Type.f32:
            continue
        values, unit = _stored_values(op.input_value(0).get_node(), kind)
        moved = values + rng.uniform(-0.5, 0.5, values.shape).astype(np.float32) * unit
        op.output(0).replace(ov.op.Constant(np.asarray(moved, np.float32).reshape(values.shape)).output(0))
        count += 1
    return copy if count else None


def _stored_values(constant: Any, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """A Constant's values stored as ``kind`` (f16 or bf16), as float32, and the unit of that type
    at each (0 where the value is short or not finite: kept as it is)."""
    bits = np.asarray(constant.get_data()).view(np.uint16)  # openvino gives a bf16 Constant's bits as float16
    if kind == "f16":
        values = bits.view(np.float16).astype(np.float32)
        unit = np.spacing(np.abs(bits.view(np.float16))).astype(np.float32)
    else:  # bf16: the high half of a float32, whose unit is 2^16 float32 units
        values = (bits.astype(np.uint32) << 16).view(np.float32)
        unit = np.spacing(np.abs(values)) * np.float32(1 << 16)
    keep = ~np.isfinite(values) | ((bits & SHORT_BITS[kind]) == 0)
    return values, np.where(keep, 0, unit).astype(np.float32)


def tensor_name(output: Any) -> str:
    """The name a model input or output goes by: its tensor name (the first in order, of several: a
    clone or a compiled model may give another as OpenVINO's "any" name, measured with 2026.4.1 on a
    Parameter its ONNX frontend named twice), else its node's name."""
    names = output.get_names()
    return min(names) if names else output.get_node().get_friendly_name()


@dataclass(frozen=True)
class InputInfo:
    name: str
    names: frozenset[str]
    dims: tuple[Dim, ...]
    dtype: np.dtype  # of the values (int8 for i4, whose tensor OpenVINO packs two to a byte)
    element_type: str = ""  # OpenVINO's name: f32, i4

    def describe(self) -> str:
        return f"{format_shape(self.dims)} {self.dtype.name}"

    def accepts(self, shape: tuple[int, ...]) -> bool:
        return len(shape) == len(self.dims) and all(
            d == s if isinstance(d, int) else d.contains(s) for d, s in zip(self.dims, shape))


def model_inputs(model: Any, name: str = "the model") -> list[InputInfo]:
    """The model's inputs; RunError for one of an element type no array holds (dynamic, string,
    nf4, f8e4m3: irtool can neither make nor read such an input), naming it."""
    infos = []
    for port in model.inputs:
        element_type = port.get_element_type().get_type_name()
        if element_type in NOT_ARRAYS:
            raise RunError(f"{name}: input {tensor_name(port)} has element type {element_type}, which irtool cannot "
                           f"make or read values of (no array type holds it"
                           + ("; no device compiles a Parameter without an element type" if
                              element_type in ("dynamic", "undefined") else "") +
                           "); give the input a concrete type (f32, i32, ...), with a Convert inside the model if need be")
        dims: list[Dim] = []
        for dim in port.get_partial_shape():
            if dim.is_static:
                dims.append(dim.get_length())
            else:
                upper = dim.get_max_length()
                dims.append(Interval(max(dim.get_min_length(), 0), upper if upper >= 0 else None))
        names = frozenset(port.get_names()) | {port.get_node().get_friendly_name()}
        infos.append(InputInfo(tensor_name(port), names, tuple(dims), np.dtype(port.get_element_type().to_dtype()),
                               element_type))
    return infos


def check_element_types(model: Any, name: str) -> None:
    """RunError naming the first Constant or Parameter of the model (its bodies' too) whose element
    type is dynamic: OpenVINO's IR reader takes ``element_type="dynamic"`` (and ``undefined``), but
    no device compiles it and its data has no type to be read as (irtool validate says IR023)."""
    from irtool.runtime.bodies import all_ops

    for op in all_ops(model):
        if op.get_type_name() in ("Constant", "Parameter") and op.get_output_element_type(0).is_dynamic():
            kind = "Const" if op.get_type_name() == "Constant" else "Parameter"
            raise RunError(f"{name}: layer '{op.get_friendly_name()}' ({kind}) has element type dynamic: OpenVINO "
                           f"reads it, but no device compiles a {kind} without an element type; expected one "
                           f"of OpenVINO's element types (f32, i32, ...)")


def read_onnx_bytes(data: bytes, name: str) -> Any:
    """An ONNX model held in memory (a harness case), read by OpenVINO's ONNX frontend as read_model
    reads an .onnx file; RunError naming ``name`` if the frontend cannot convert it."""
    import io

    from openvino.frontend import FrontEndManager

    try:
        frontend = FrontEndManager().load_by_framework("onnx")
        with doing(name, "reading it with OpenVINO's ONNX frontend"):
            return frontend.convert(frontend.load(io.BytesIO(data)))
    except Exception as error:  # OpenVINO raises RuntimeError and friends; its verdict is the message
        message = openvino_message(error)
        raise unsupported_op(name, str(error)) or RunError(f"{name}: OpenVINO cannot read it: {message}") from None
