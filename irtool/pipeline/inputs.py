"""Stage 2 of the pipeline: the inputs of a run, loaded from an .npz or generated from a seed,
their dynamic dims sized from the nodes they reach (irtool.runtime.sizes).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from irtool.core.element_types import PACKED, packed_range
from irtool.core.errors import RunError
from irtool.core.npz import describe_dtype
from irtool.core.shapes import format_shape
from irtool.pipeline.prepare import Prepared, prepare
from irtool.runtime.probe import loop_controls
from irtool.specs.cases import DataKind, generic_tensor, port_tensor, sequence_lengths


def case_inputs(prepared: Prepared, inputs_file: str | Path | None = None, seed: int = 0,
                shapes: Mapping[str, Sequence[int]] | None = None, sizes: Mapping[str, int] | None = None,
                data: DataKind = DataKind()) -> tuple[dict[str, np.ndarray], dict[str, str], list[str]]:
    """The inputs of a run: the arrays, how dynamic dims were sized (input -> how), and notes
    on what was converted (an .npz of float64 for an f32 input)."""
    if inputs_file is not None:
        arrays, notes = load_inputs(inputs_file, prepared)
        chosen: dict[str, str] = {}
    else:
        (arrays, chosen), notes = generate_inputs(prepared, seed, shapes or {}, sizes or {}, data), []
        chosen = {**prepared.converted_at, **chosen}  # sizes it was converted at, where a frontend needed them
    check_nodes_memory(prepared, arrays)
    return arrays, chosen, notes


def check_nodes_memory(prepared: Prepared, arrays: Mapping[str, np.ndarray]) -> None:
    """MemoryLimitError (irtool.core.memory) when judging the nodes the inputs feed directly would
    take more memory than irtool may use: each such node's case, sized by the arrays it gets, as
    irtool.specs.cases.OpCase.memory_needed estimates it (its outputs held by the device, the
    reference and the comparison), summed over the nodes.  A node fed by other ops' outputs has no
    size before the device runs, and is not counted."""
    from irtool.core.memory import check_memory
    from irtool.specs import check_shapes
    from irtool.specs.cases import OpCase

    needed, named = 0, []
    for node in prepared.probed.judgeable:
        shapes = [None] * len(node.spec.inputs)
        for feed in node.feeds:
            source = feed.constant if feed.constant is not None else arrays.get(feed.parameter) \
                if feed.parameter is not None else None
            if source is None:
                break
            shapes[feed.port.index] = tuple(source.shape)
        else:
            try:
                symbols = check_shapes(node.spec, node.attributes, shapes[:len(node.feeds)])
                case = OpCase(node.spec.type, node.spec.typed_attributes(node.attributes),
                              {name: symbols[name] for name in node.spec.sizes if name in symbols},
                              version=node.spec.version)
                needed += case.memory_needed()
            except (ValueError, KeyError):  # the reference will say what does not fit the spec
                continue
            named.append(f"{node.key} ({', '.join(f'{k} {v}' for k, v in symbols.items())})")
    if named:
        check_memory(needed, f"{prepared.name}: judging node{'s' if len(named) > 1 else ''} {', '.join(named[:3])}"
                             + (f" and {len(named) - 3} more" if len(named) > 3 else ""))


def seeded_inputs(model: Any, seed: int = 0, sizes: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
    """The seeded inputs ``irtool run`` would make for an ov.Model (for scripts and benchmarks)."""
    return case_inputs(prepare(model, "model"), seed=seed, sizes=sizes)[0]


def generate_inputs(prepared: Prepared, seed: int, shapes: Mapping[str, Sequence[int]],
                    sizes: Mapping[str, int], data: DataKind = DataKind()) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Seeded inputs for any model: each dynamic dim sized so that the recurrent nodes are valid
    (``sizes`` for batch_size and seq_length, else each node's spec's defaults); an input that a
    node takes directly gets data for its port's role (weights scaled by hidden_size), one that
    feeds sequence lengths valid lengths (ragged, unless ``data`` asks for others), any other
    uniform floats or small ints (a Loop's trip count at least 1, its condition true)."""
    from irtool.core.memory import check_memory
    from irtool.runtime.sizes import plan_inputs

    plan = plan_inputs(prepared.model, shapes, sizes, prepared.name)  # a dim it cannot size: what to give
    # float64 draws before the cast, then the array itself
    check_memory(sum(int(np.prod(plan.shapes[info.name], dtype=np.float64)) * (8 + info.dtype.itemsize)
                     for info in prepared.infos), f"the inputs of {prepared.name}")
    roles = {}
    for node in prepared.probed.judgeable:
        symbols = node.spec.attribute_symbols(node.spec.fill_defaults(node.spec.typed_attributes(node.attributes)))
        for feed in node.feeds:
            if feed.parameter is not None:
                roles.setdefault(feed.parameter, (feed.port, symbols, node.spec.time_symbol))
    rng = np.random.default_rng(seed)
    arrays = {}
    controls = loop_controls(prepared.model)
    for info in prepared.infos:
        shape = plan.shapes[info.name]
        if controls.get(info.name) == "trip":  # 2: a state carried once, within what most bodies index
            arrays[info.name] = np.full(shape, 2, info.dtype)
        elif controls.get(info.name) == "condition":
            arrays[info.name] = np.ones(shape, info.dtype)
        elif info.name in plan.lengths:
            arrays[info.name] = sequence_lengths(shape, plan.lengths[info.name], rng, data.lengths).astype(info.dtype)
        elif info.name in roles:
            port, symbols, time_symbol = roles[info.name]
            arrays[info.name] = port_tensor(port.role, shape, info.dtype, rng, symbols, time_symbol, data)
        else:
            arrays[info.name] = generic_tensor(shape, info.dtype, rng)
    return arrays, dict(plan.chosen)


def load_inputs(path: str | Path, prepared: Prepared) -> tuple[dict[str, np.ndarray], list[str]]:
    """Inputs from an .npz whose keys are the model's input names, checked against the model.

    Every problem is reported at once.  numpy's default float64 and int64 arrays are converted
    to the model's f32/f16 and i32 where every value fits (and the notes say so); values that
    do not fit, NaN or Inf in integer-valued inputs, and sequence lengths outside
    1..seq_length are refused.
    """
    from irtool.core.npz import read_npz

    path = Path(path)
    stored = read_npz(path, "inputs file")
    infos = prepared.infos
    arrays, used, problems, notes = {}, set(), [], []
    for info in infos:
        key = next((k for k in stored if k in info.names), None)
        if key is None:
            problems.append(f"no array for input {info.name} (expected {info.describe()})")
            continue
        used.add(key)
        array = stored[key]
        if not info.accepts(array.shape):
            problems.append(f"input {info.name} has shape {list(array.shape)}, expected {format_shape(info.dims)}")
            continue
        converted, problem = _convert(array, info.dtype)
        if not problem and info.element_type in PACKED:  # i4: an int8 array whose values must fit 4 bits
            low, high = packed_range(info.element_type)
            if converted.size and (converted.min() < low or converted.max() > high):
                problem = f"values beyond {info.element_type}'s range [{low}, {high}]"
        if problem:
            problems.append(f"input {info.name}: {problem}")
            continue
        if converted.dtype != array.dtype:
            notes.append(f"{info.name}: {describe_dtype(array.dtype)} converted to {info.dtype.name} (every value fits)")
        arrays[info.name] = converted
    extra = sorted(set(stored) - used)
    if extra:
        problems.append(f"{'arrays' if len(extra) > 1 else 'array'} {', '.join(extra)} "
                        f"{'match' if len(extra) > 1 else 'matches'} no model input")
    if not problems:
        problems += _length_problems(prepared, arrays)
    if problems:
        names = ", ".join(f"{info.name} {info.describe()}" for info in infos)
        raise RunError(f"{path}: {'; '.join(problems)} (the model's inputs: {names})")
    return arrays, notes


def _convert(array: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, str | None]:
    """``array`` as ``dtype`` where numpy's defaults should become the model's type and every value
    fits; else the array unchanged and what is wrong."""
    if array.dtype == dtype:
        return array, None
    found, want = array.dtype, np.dtype(dtype)
    expected = f"dtype {describe_dtype(found)}, expected {want.name}"
    if found.kind == want.kind == "f" and found.itemsize >= want.itemsize or (found.kind == "f" and found.name == want.name):
        finite = array[np.isfinite(array)]
        if finite.size and np.abs(finite).max() > np.finfo(want).max:
            return array, f"{expected}: values beyond {want.name}'s range (max abs {np.abs(finite).max():.3g})"
        return array.astype(want), None
    if found.kind in "iu" and want.kind in "iu":
        info = np.iinfo(want)
        if array.size and (array.min() < info.min or array.max() > info.max):
            return array, f"{expected}: values beyond {want.name}'s range [{info.min}, {info.max}]"
        return array.astype(want), None
    if found.kind == "f" and want.kind in "iu":
        if not np.all(np.isfinite(array)):
            return array, f"{expected}: NaN or Inf where whole numbers are expected"
        return array, f"{expected}: floats where whole numbers are expected"
    return array, expected


def _length_problems(prepared: Prepared, arrays: Mapping[str, np.ndarray]) -> list[str]:
    """Sequence lengths a node takes straight from a model input must be within 1..seq_length
    (OpenVINO's own check only says "Incorrect input 'seq_lengths' values!")."""
    problems = []
    for node in prepared.probed.judgeable:
        feeds = {feed.port.role: feed for feed in reversed(node.feeds)}  # the first feed of each role
        lengths, data = feeds.get("lengths"), feeds.get("data")
        if lengths is None or lengths.parameter is None or data is None:
            continue
        x = data.constant if data.constant is not None else arrays.get(data.parameter) if data.parameter else None
        values = arrays.get(lengths.parameter)
        axis = node.spec.time_axis(data.port)
        if x is None or values is None or axis is None or values.size == 0:
            continue
        bad = values[(values < 0) | (values > x.shape[axis])]
        if bad.size:
            problems.append(f"input {lengths.parameter} holds sequence lengths {sorted(set(bad.tolist()))[:5]} outside "
                            f"0..{x.shape[axis]} (the {node.spec.time_symbol} of node '{node.name}')")
    return problems
