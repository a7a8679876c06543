"""A precision path of f32 runs: products by integer weights whose activations a CPU quantizes at run time.

A model whose weights are stored as i8, u8, i4 or u4 and decompressed by a Convert (then a zero
point subtracted and a scale multiplied: TFLite's dynamic-range quantization, NNCF's weight
compression) reaches OpenVINO's CPU plugin as FullyConnected layers with compressed weights.
Where the compiled model's DYNAMIC_QUANTIZATION_GROUP_SIZE is not 0 (32 by default, 2026.4.1),
the plugin may quantize such a layer's f32 input at run time, to use integer dot products: each
row, per group of that many values along the reduced axis, to int8, symmetric, scale = max|x| / 127,
q = x * (1 / scale) rounded to nearest even (``jit_brgemm_src_quantization_kernel.cpp`` of
openvinotoolkit/openvino's CPU plugin); on x86 only with AVX2_VNNI or AVX512_VNNI
(``useDynamicQuantizationImpl`` in ``dnnl_fullyconnected_primitive.cpp``), and only for an f32
input.  A DTLN denoiser's lowered LSTM cell differed so from the exact reference by 0.013 on an
AVX512_BF16 EPYC, and by 6e-7 with the property 0.

Such a node is judged against two references, the exact one and one whose product inputs (X for an
integer W, the hidden state for an integer R) are quantized as the CPU quantizes them, each with
the f32 tolerance, and passes where the device agrees with either: whether a device quantizes is
read from what it computed, not assumed from its ISA.  This covers a lowered cell (whose weights
irtool reads through their decompression, irtool.lowering.graph.integer_storage) judged on one
step's inputs; a recurrent op fed such weights is fed them by a probe, and a sequence's
recurrence would carry the quantization through its steps, which this does not emulate.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

INTEGER_TYPES = ("i8", "u8", "i4", "u4")
_PRODUCT_INPUT = {"W": "X", "R": "initial_hidden_state"}  # the weights -> the input its product reads


@dataclass(frozen=True)
class Quantization:
    """The activations a device may quantize at run time for one node: the input ports quantized
    (by index), the group size, and the weights behind them (port name -> stored type)."""

    ports: tuple[int, ...]
    group: int
    weights: Mapping[str, str]

    def quantized(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The node's input arrays with each quantized port as the CPU quantizes it."""
        return [quantized_rows(array, self.group) if k in self.ports else array for k, array in enumerate(arrays)]

    def says(self, port_names: Sequence[str], followed: bool | None, effect: float | None) -> str:
        """The note of a judged node: what the device may do, by how much that moves the outputs, and
        which reference the device agreed with (None: not said, as where it agreed with neither)."""
        products = ", ".join(self.weights)
        read = ", ".join(port_names[k] for k in self.ports)
        moved = f" (which moves its outputs by up to {effect:.3g} here)" if effect is not None else ""
        which = "" if followed is None else \
            ("; the device agrees with the quantized one (it quantized them)" if followed else
             "; the device agrees with the exact one (it did not quantize them here)")
        return (f"a CPU may quantize at run time what its products by {products} read (DYNAMIC_QUANTIZATION_GROUP_SIZE="
                f"{self.group}: int8 per group of {self.group} values of a row, symmetric): judged against the reference "
                f"with {read} so quantized{moved} and against the exact one{which}; --config "
                f"DYNAMIC_QUANTIZATION_GROUP_SIZE=0 compares exactly")


def node_quantization(op_type: str, port_names: Sequence[str], stored: Mapping[str, str], group: int | None,
                      precision: str) -> Quantization | None:
    """The quantization a node may see: a cell run at f32 whose W (or, but for a GRU, R) is stored as
    an integer type, on a device whose DYNAMIC_QUANTIZATION_GROUP_SIZE is not 0 (None: the device
    has no such property); None otherwise (the node is judged as any f32 node).  A GRU's hidden
    state is read by its interpolation too, which the CPU does not quantize: its R is not emulated."""
    weights = {port: kind for port, kind in stored.items() if port in _PRODUCT_INPUT and kind in INTEGER_TYPES
               and not (port == "R" and op_type == "GRUCell")}
    if not group or precision != "f32" or not op_type.endswith("Cell") or not weights:
        return None
    ports = tuple(port_names.index(_PRODUCT_INPUT[port]) for port in weights if _PRODUCT_INPUT[port] in port_names)
    return Quantization(ports, int(group), weights) if ports else None


def quantized_rows(values: np.ndarray, group: int) -> np.ndarray:
    """``values`` (float32) as the CPU's run-time quantization gives them back: each row (the last axis),
    per group of ``group`` values (the last one may be shorter), q = rint(x * (1 / s)) with
    s = max|x| / 127 in float32, times s; a group of zeros stays zeros."""
    values = np.asarray(values, dtype=np.float32)
    if values.ndim == 0 or values.shape[-1] == 0:
        return values
    width = values.shape[-1]
    rows = values.reshape(-1, width)
    out = np.empty_like(rows)
    for start in range(0, width, group):
        block = rows[:, start:start + group]
        scale = np.abs(block).max(axis=1, keepdims=True) / np.float32(127)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.rint(block * (np.float32(1) / scale))
        out[:, start:start + group] = np.where(scale > 0, q * scale, np.float32(0))
    return out.reshape(values.shape)
