"""ONNX tensors whose data lives in another file (``data_location = EXTERNAL``), read only from
the model's own folder (:mod:`irtool.core.model_files`), never from the working directory.

:func:`check_external` finds every refusal of a model's external data (location, file
kind, the bytes the tensor needs past the file's end) without reading any data;
:func:`tensor_array` reads one tensor's value, bounded; :func:`inlined` gives a copy of a
model with every external tensor's data held in the model (for onnxruntime, which would
otherwise resolve the locations against the working directory).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, numpy_helper

from irtool.core.model_files import ModelFileError, check_model_file, read_model_file
from irtool.core.text import shown


@dataclass(frozen=True)
class ExternalRefusal:
    """One tensor whose external data irtool will not read: its name and the one-line reason
    (without the model's path, which the caller puts first)."""

    tensor: str
    message: str


def uses_external(tensor: TensorProto) -> bool:
    return tensor.HasField("data_location") and tensor.data_location == TensorProto.EXTERNAL


def _graph_tensors(graph: onnx.GraphProto) -> Iterator[TensorProto]:
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield from (sparse.values, sparse.indices)
    for node in graph.node:
        for attribute in node.attribute:
            yield from _attribute_tensors(attribute)


def _attribute_tensors(attribute: AttributeProto) -> Iterator[TensorProto]:
    if attribute.HasField("t"):
        yield attribute.t
    yield from attribute.tensors
    if attribute.HasField("sparse_tensor"):
        yield from (attribute.sparse_tensor.values, attribute.sparse_tensor.indices)
    for sparse in attribute.sparse_tensors:
        yield from (sparse.values, sparse.indices)
    if attribute.HasField("g"):
        yield from _graph_tensors(attribute.g)
    for graph in attribute.graphs:
        yield from _graph_tensors(graph)


def all_tensors(model: onnx.ModelProto) -> Iterator[TensorProto]:
    """Every tensor a model holds: initializers, sparse ones, node attributes, subgraphs, functions."""
    yield from _graph_tensors(model.graph)
    for function in model.functions:
        for node in function.node:
            for attribute in node.attribute:
                yield from _attribute_tensors(attribute)


def external_tensors(model: onnx.ModelProto) -> list[TensorProto]:
    return [tensor for tensor in all_tensors(model) if uses_external(tensor)]


@dataclass(frozen=True)
class _Place:
    location: str
    offset: int
    length: int | None


def _what(tensor: TensorProto) -> str:
    return f"the external data of tensor '{shown(tensor.name)}'"


def _place(model: Path, tensor: TensorProto) -> _Place:
    entries = {entry.key: entry.value for entry in tensor.external_data}
    numbers = {}
    for key in ("offset", "length"):
        text = entries.get(key)
        if text is None:
            continue
        if not (text.isascii() and text.isdigit() and len(text) <= 19):
            raise ModelFileError(f"{shown(model)}: {_what(tensor)} has {key} '{shown(text)}'; expected a whole "
                                 f"number of bytes")
        numbers[key] = int(text)
    return _Place(entries.get("location", ""), numbers.get("offset", 0), numbers.get("length"))


_ITEM_SIZES = {TensorProto.FLOAT: 4, TensorProto.DOUBLE: 8, TensorProto.FLOAT16: 2, TensorProto.BFLOAT16: 2,
               TensorProto.INT8: 1, TensorProto.UINT8: 1, TensorProto.INT16: 2, TensorProto.UINT16: 2,
               TensorProto.INT32: 4, TensorProto.UINT32: 4, TensorProto.INT64: 8, TensorProto.UINT64: 8,
               TensorProto.BOOL: 1, TensorProto.COMPLEX64: 8, TensorProto.COMPLEX128: 16}


def _needed(tensor: TensorProto) -> int | None:
    """The bytes the tensor's dims and type take as raw data (None for the packed and string types,
    left to onnx)."""
    size = _ITEM_SIZES.get(tensor.data_type)
    return None if size is None else math.prod(tensor.dims) * size


def _check(model: Path, tensor: TensorProto) -> int:
    """The bytes of the tensor's data; ModelFileError naming the model, the tensor and the location."""
    place = _place(model, tensor)
    _, size = check_model_file(model, place.location, _what(tensor))
    length = size - place.offset if place.length is None else place.length
    if place.offset + max(length, 0) > size or length < 0:
        raise ModelFileError(f"{shown(model)}: {_what(tensor)} ('{shown(place.location)}'): bytes {place.offset}.."
                             f"{place.offset + max(length, 0)} lie past the end of the file ({size} bytes)")
    needed = _needed(tensor)
    if needed is not None and needed != length:
        raise ModelFileError(f"{shown(model)}: {_what(tensor)} ('{shown(place.location)}') is {length} bytes; its "
                             f"dims {list(tensor.dims)} and type need {needed}")
    return length


def check_external(model: onnx.ModelProto, path: str | Path) -> list[ExternalRefusal]:
    """Every external tensor of ``model`` (read from ``path``) whose data irtool will not read, and why."""
    found = []
    for tensor in external_tensors(model):
        try:
            _check(Path(path), tensor)
        except ModelFileError as error:
            head = f"{shown(path)}: "
            found.append(ExternalRefusal(tensor.name, error.message.removeprefix(head)))
    return found


def inline_tensor(tensor: TensorProto, path: str | Path, limit: int | None = None) -> TensorProto:
    """``tensor`` itself when its data is in the model, else a copy holding its external data
    (read from the folder of the model at ``path``, at most ``limit`` bytes)."""
    if not uses_external(tensor):
        return tensor
    path = Path(path)
    length = _check(path, tensor)
    place = _place(path, tensor)
    copy = TensorProto()
    copy.CopyFrom(tensor)
    del copy.external_data[:]
    copy.data_location = TensorProto.DEFAULT
    copy.raw_data = read_model_file(path, place.location, _what(tensor), place.offset, length, limit)
    return copy


def tensor_array(tensor: TensorProto, path: str | Path, limit: int | None = None) -> np.ndarray:
    """A tensor's value, its external data read from the folder of the model at ``path``."""
    return numpy_helper.to_array(inline_tensor(tensor, path, limit))


def inlined(model: onnx.ModelProto, path: str | Path, limit: int | None = None) -> onnx.ModelProto:
    """``model`` itself when no tensor is external, else a copy with every external tensor's data
    held in it (``limit`` bounds each tensor's bytes)."""
    if not external_tensors(model):
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for tensor in external_tensors(copy):
        tensor.CopyFrom(inline_tensor(tensor, path, limit))
    return copy
