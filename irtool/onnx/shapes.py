"""The dims of ONNX GRU, LSTM and RNN inputs and outputs, as the ONNX pages give them.

The schema registry describes shapes only in prose, so this is their one machine-readable
form: each dim is a symbol (seq_length, batch_size, input_size, num_directions,
hidden_size) times a factor (3 for GRU's W rows, ...).  ``check`` binds the symbols from
the first input that has them and reports every dim that disagrees, naming where the symbol
was bound.  Pure Python: the reference and the validator share it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

GATES = {"GRU": 3, "LSTM": 4, "RNN": 1}
# The activations of one direction when a node gives none (the pages say them in prose too).
DEFAULT_ACTIVATIONS = {"GRU": ("Sigmoid", "Tanh"), "LSTM": ("Sigmoid", "Tanh", "Tanh"), "RNN": ("Tanh",)}
INPUT_ORDER = ("X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P")
OUTPUT_ORDER = ("Y", "Y_h", "Y_c")


@dataclass(frozen=True)
class Dim:
    symbol: str
    factor: int = 1

    def __str__(self) -> str:
        return self.symbol if self.factor == 1 else f"{self.factor}*{self.symbol}"


SEQ, BATCH, INPUT, DIRS, HIDDEN = (Dim(s) for s in ("seq_length", "batch_size", "input_size", "num_directions",
                                                    "hidden_size"))
SIZE_SYMBOLS = ("batch_size", "seq_length", "input_size")  # the sizes no attribute fixes


def _state(layout: int) -> tuple[Dim, ...]:
    return (DIRS, BATCH, HIDDEN) if layout == 0 else (BATCH, DIRS, HIDDEN)


def input_dims(op: str, layout: int) -> dict[str, tuple[Dim, ...]]:
    """Each input's dims, by name, in ONNX's input order."""
    gates = GATES[op]
    dims = {
        "X": (SEQ, BATCH, INPUT) if layout == 0 else (BATCH, SEQ, INPUT),
        "W": (DIRS, Dim("hidden_size", gates), INPUT),
        "R": (DIRS, Dim("hidden_size", gates), HIDDEN),
        "B": (DIRS, Dim("hidden_size", 2 * gates)),
        "sequence_lens": (BATCH,),
        "initial_h": _state(layout),
    }
    if op == "LSTM":
        dims["initial_c"] = _state(layout)
        dims["P"] = (DIRS, Dim("hidden_size", 3))
    return dims


def output_dims(op: str, layout: int) -> dict[str, tuple[Dim, ...]]:
    """Each output's dims: Y [seq, dirs, batch, H] (layout 0) or [batch, seq, dirs, H] (layout 1)."""
    dims = {"Y": (SEQ, DIRS, BATCH, HIDDEN) if layout == 0 else (BATCH, SEQ, DIRS, HIDDEN), "Y_h": _state(layout)}
    if op == "LSTM":
        dims["Y_c"] = _state(layout)
    return dims


@dataclass(frozen=True)
class ShapeProblem:
    """A port whose rank or one of whose dims disagrees; ``dim`` is None for a wrong rank."""

    port: str
    dim: int | None
    message: str
    expected: str
    found: str


def _listed(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


@dataclass(frozen=True)
class ShapeCheck:
    """What ``check`` found: each symbol's size and where it was bound, and every problem."""

    sizes: dict[str, int]
    origins: dict[str, str]
    problems: list[ShapeProblem]


def check(dims: Mapping[str, tuple[Dim, ...]], shapes: Mapping[str, Sequence[int | None] | None],
          known: Mapping[str, int], known_from: str | Mapping[str, str] = "the attributes") -> ShapeCheck:
    """Check ``shapes`` (None: absent port; a None dim: unknown) against ``dims``.

    ``known`` symbols (num_directions from direction, hidden_size from its attribute, or the
    sizes an input check found) come first, bound where ``known_from`` says (one place for
    all, or one per symbol); the rest are bound by the first port, in ``dims`` order, that
    has them.
    """
    bound: dict[str, tuple[int, str]] = {
        name: (value, known_from if isinstance(known_from, str) else known_from.get(name, "the attributes"))
        for name, value in known.items()}
    problems: list[ShapeProblem] = []
    for port, expected in dims.items():
        shape = shapes.get(port)
        if shape is None:
            continue
        wanted = "[" + ", ".join(map(str, expected)) + "]"
        if len(shape) != len(expected):
            problems.append(ShapeProblem(port, None, f"{port} has shape {_listed(shape)}; expected {len(expected)} "
                                                     f"dims {wanted}", wanted, _listed(shape)))
            continue
        for index, (size, dim) in enumerate(zip(shape, expected)):
            if size is None:
                continue
            if dim.symbol not in bound:
                if size % dim.factor == 0:
                    bound[dim.symbol] = (size // dim.factor, f"{port} dim {index}")
                    continue
                problems.append(ShapeProblem(port, index, f"{port} dim {index} is {size}; expected {dim}, a multiple "
                                                          f"of {dim.factor}", str(dim), str(size)))
                continue
            value, where = bound[dim.symbol]
            if size != dim.factor * value:
                problems.append(ShapeProblem(
                    port, index, f"{port} dim {index} is {size}; expected {dim} = {dim.factor * value} "
                                 f"({dim.symbol} = {value} from {where})", f"{dim} = {dim.factor * value}", str(size)))
    return ShapeCheck({name: value for name, (value, _) in bound.items()},
                      {name: where for name, (_, where) in bound.items()}, problems)
