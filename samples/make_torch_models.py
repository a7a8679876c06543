"""Writes samples/models/torch: PyTorch models as their users have them, converted by
``ov.convert_model`` (with example_input) and saved as IR (not run by CI: torch is not a test
dependency; its files are committed).

- packed_lstm.xml: nn.LSTM (hidden 8) fed by ``pack_padded_sequence`` with ragged lengths
  [6, 3, 5] (``enforce_sorted=False``), unpacked by ``pad_packed_sequence(total_length=6)``;
  inputs x [3, 6, 3] (batch first) and lengths [3] (int64; the IR names it "8"). OpenVINO's PyTorch frontend makes
  it an LSTMSequence whose sequence_lengths and batch come through the lengths' sort
  (TopK/Gather), with dynamic dims: the path on which the CPU plugin of openvino 2026.4.1
  mishandles sequence_lengths.
- gru.xml: a plain nn.GRU (hidden 8, batch first) on x [3, 6, 3], for contrast.
- gru_cell_loop.xml: an nn.GRUCell (hidden 8) applied once per step in a Python loop over x [6, 3, 3]
  (time first) from a zero state, returning every h_t and the last: traced, the loop is unrolled
  and no recurrent op survives (a GRU cell written out per step, which irtool recognizes: its
  steps linked by their state, docs/lowered.md).  Converted with the input's shape fixed (the
  trace holds 6 steps whatever the shape says).  gru_cell_loop_fault.xml: the same with the
  cell of step FAULT_STEP a copy whose input bias has one value changed: a fault in that step's
  arithmetic alone.

- export_gru.xml, export_lstm.xml, export_bilstm.xml (bidirectional), export_rnn_relu.xml (nn.RNN,
  relu): the layers (hidden 8, batch first, x [3, 6, 3]) through torch.export.export with a dynamic
  batch, then ov.convert_model of the ExportedProgram.  torch.export decomposes the layer: no
  recurrent op survives, the input's product X·W + b is computed for all steps at once and each
  step takes its rows with a Slice (the reverse direction: of a flipped copy), the state is
  [1, batch, 8], and the first step's product of the zero state is folded into constants.  Each
  has a twin NAME_fault.xml whose recurrent bias at step FAULT_STEP (the Add after that step's
  h·R) has one value changed by 0.5.
- export_bigru2.xml: a two-layer bidirectional nn.GRU (hidden 8) the same way; the second layer reads
  both directions of the first, its input's product split into one per direction.  Its twin
  export_bigru2_fault.xml has the fault in the second layer's forward direction, at step FAULT_STEP.
- export_gru_h0.xml: a GRU through torch.export given its initial state as a model input
- export_static_gru.xml: export_gru's layer through torch.export.export with its default settings
  (no dynamic_shapes, as a new user writes it): the IR's input is [?,?,?] all the same, but the
  graph holds batch 3 and 6 steps in its constants (docs/run.md, Sizes for dynamic dims).

- sliced_lstm.xml, sliced_gru.xml: an LSTM and a GRU cell written by hand as tutorials write them
  (one nn.Linear of the input and one of the state give all gates at once; each gate is a slice
  of their sum, ``gates[:, H:2 * H]``), applied once per step of x [3, 6, 3] (batch first) in a
  Python loop from a zero state, through torch.export (dynamic batch): each gate is a Slice of a
  MatMul's output, not a Split.  NAME_fault.xml: the same with the cell of step FAULT_STEP a copy
  whose state bias has one value of the second gate changed by 0.5.

Each has NAME.inputs.npz and NAME.outputs.npz (torch's own outputs on those inputs), keyed by
the names the converted model gives its inputs and outputs (as ``irtool run --inputs`` takes
them and ``--save-outputs`` writes them), for ``irtool run --inputs ... --expected ...``.

    python -m venv --system-site-packages /tmp/torchenv && /tmp/torchenv/bin/pip install torch openvino
    /tmp/torchenv/bin/python samples/make_torch_models.py [NAME ...]  # from the repository root

NAMEs (packed_lstm, gru, gru_cell_loop, export, export_stacked, export_static, export_h0, sliced) rewrite only
those (default: all).
"""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import openvino as ov
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

OUT = Path(__file__).resolve().parent / "models" / "torch"
BATCH, STEPS, SIZE, HIDDEN = 3, 6, 3, 8
LENGTHS = [6, 3, 5]
FAULT_STEP = 2


class PackedLSTM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(SIZE, HIDDEN, batch_first=True)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        y, (h, c) = self.lstm(packed)
        y, _ = pad_packed_sequence(y, batch_first=True, total_length=x.shape[1])
        return y, h, c


class PlainGRU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(SIZE, HIDDEN, batch_first=True)

    def forward(self, x: torch.Tensor):
        return self.gru(x)


class GRUCellLoop(nn.Module):
    """A GRUCell once per step of x [T, batch, size] in a Python loop, from a zero state; at step
    FAULT_STEP, ``changed`` (a copy of the cell with another value) where one is given."""

    def __init__(self, cell: nn.GRUCell, changed: nn.GRUCell | None = None) -> None:
        super().__init__()
        self.cell, self.changed = cell, changed

    def forward(self, x: torch.Tensor):
        h = torch.zeros(x.shape[1], HIDDEN)
        states = []
        for t in range(x.shape[0]):
            h = (self.changed if self.changed is not None and t == FAULT_STEP else self.cell)(x[t], h)
            states.append(h)
        return torch.stack(states), h


class Layer(nn.Module):
    """A recurrent layer's output sequence alone."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor):
        return self.layer(x)[0]


class SlicedCell(nn.Module):
    """An LSTM (``kind`` "lstm") or GRU cell written by hand: gates sliced from two Linear layers' outputs."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind
        gates = 4 if kind == "lstm" else 3
        self.input = nn.Linear(SIZE, gates * HIDDEN)
        self.state = nn.Linear(HIDDEN, gates * HIDDEN)

    def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor | None):
        H = HIDDEN
        if self.kind == "lstm":
            gates = self.input(x) + self.state(h)
            i, f = torch.sigmoid(gates[:, :H]), torch.sigmoid(gates[:, H:2 * H])
            g, o = torch.tanh(gates[:, 2 * H:3 * H]), torch.sigmoid(gates[:, 3 * H:])
            c = f * c + i * g
            return o * torch.tanh(c), c
        xs, hs = self.input(x), self.state(h)
        r = torch.sigmoid(xs[:, :H] + hs[:, :H])
        z = torch.sigmoid(xs[:, H:2 * H] + hs[:, H:2 * H])
        n = torch.tanh(xs[:, 2 * H:] + r * hs[:, 2 * H:])
        return (1 - z) * n + z * h, None


class SlicedLoop(nn.Module):
    """A SlicedCell once per step of x [batch, T, size], from a zero state; every h_t stacked
    (batch first); at step FAULT_STEP, ``changed`` where one is given."""

    def __init__(self, cell: SlicedCell, changed: SlicedCell | None = None) -> None:
        super().__init__()
        self.cell, self.changed = cell, changed

    def forward(self, x: torch.Tensor):
        h = x.new_zeros(x.shape[0], HIDDEN)
        c = x.new_zeros(x.shape[0], HIDDEN) if self.cell.kind == "lstm" else None
        states = []
        for t in range(x.shape[1]):
            h, c = (self.changed if self.changed is not None and t == FAULT_STEP else self.cell)(x[:, t], h, c)
            states.append(h)
        return torch.stack(states, dim=1)


def sliced(kind: str, x: torch.Tensor) -> None:
    """sliced_KIND.xml and its _fault twin, through torch.export with a dynamic batch."""
    cell = SlicedCell(kind).eval()
    changed = copy.deepcopy(cell)
    with torch.no_grad():
        changed.state.bias[HIDDEN + 2] += 0.5  # a value of the second gate's (f; z) state bias
    batch = torch.export.Dim("batch", min=1, max=64)
    name = f"sliced_{kind}"
    for suffix, module in (("", SlicedLoop(cell)), ("_fault", SlicedLoop(cell, changed))):
        program = torch.export.export(module.eval(), (x,), dynamic_shapes={"x": {0: batch}})
        ov.save_model(ov.convert_model(program), OUT / f"{name}{suffix}.xml", compress_to_fp16=False)
    with torch.no_grad():
        outputs = [SlicedLoop(cell)(x)]
    model = ov.Core().read_model(OUT / f"{name}.xml")
    np.savez(OUT / f"{name}.inputs.npz", **{port_name(model.inputs[0]): x.numpy()})
    np.savez(OUT / f"{name}.outputs.npz", **{port_name(p): t.numpy() for p, t in zip(model.outputs, outputs)})


EXPORTED = {"export_gru": lambda: nn.GRU(SIZE, HIDDEN, batch_first=True),
            "export_lstm": lambda: nn.LSTM(SIZE, HIDDEN, batch_first=True),
            "export_bilstm": lambda: nn.LSTM(SIZE, HIDDEN, batch_first=True, bidirectional=True),
            "export_rnn_relu": lambda: nn.RNN(SIZE, HIDDEN, nonlinearity="relu", batch_first=True)}
STACKED = {"export_bigru2": lambda: nn.GRU(SIZE, HIDDEN, num_layers=2, batch_first=True, bidirectional=True)}
FAULTED_FROM = {"export_bigru2": 14}  # the number of the faulted layer's input product (linear_14: layer 2's forward)


def exported_static(x: torch.Tensor) -> None:
    """export_gru's layer through torch.export with its default settings: the shapes of ``x`` fixed."""
    module = Layer(EXPORTED["export_gru"]()).eval()
    program = torch.export.export(module, (x,))
    with torch.no_grad():
        outputs = [module(x)]
    ov.save_model(ov.convert_model(program), OUT / "export_static_gru.xml", compress_to_fp16=False)
    model = ov.Core().read_model(OUT / "export_static_gru.xml")
    np.savez(OUT / "export_static_gru.inputs.npz", **{port_name(model.inputs[0]): x.numpy()})
    np.savez(OUT / "export_static_gru.outputs.npz",
             **{port_name(p): t.numpy() for p, t in zip(model.outputs, outputs)})


class WithState(nn.Module):
    """A GRU layer given its initial state as a second input (h0 [1, batch, hidden])."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.GRU(SIZE, HIDDEN, batch_first=True)

    def forward(self, x: torch.Tensor, h0: torch.Tensor):
        return self.layer(x, h0)[0]


def exported_h0(x: torch.Tensor, h0: torch.Tensor) -> None:
    """export_gru_h0.xml: a GRU through torch.export whose initial state is a model input (both inputs
    of dynamic dims once converted)."""
    module = WithState().eval()
    program = torch.export.export(module, (x, h0))
    with torch.no_grad():
        outputs = [module(x, h0)]
    ov.save_model(ov.convert_model(program), OUT / "export_gru_h0.xml", compress_to_fp16=False)
    model = ov.Core().read_model(OUT / "export_gru_h0.xml")
    np.savez(OUT / "export_gru_h0.inputs.npz", **{port_name(p): t.numpy() for p, t in zip(model.inputs, (x, h0))})
    np.savez(OUT / "export_gru_h0.outputs.npz", **{port_name(p): t.numpy() for p, t in zip(model.outputs, outputs)})


def exported(name: str, x: torch.Tensor) -> None:
    """A layer through torch.export (dynamic batch) and ov.convert_model, and its twin with a fault at
    step FAULT_STEP: the bias the step adds to its h·R (PyTorch names that Add linear_<step + 1>)."""
    module = Layer({**EXPORTED, **STACKED}[name]()).eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    program = torch.export.export(module, (x,), dynamic_shapes={"x": {0: batch}})
    with torch.no_grad():
        outputs = [module(x)]
    for suffix in ("", "_fault"):
        model = ov.convert_model(program)
        if suffix:
            (add,) = [op for op in model.get_ordered_ops()
                      if op.get_friendly_name() ==
                      f"linear_{FAULTED_FROM.get(name, 0) + FAULT_STEP + 1}/aten.linear.default/Add"]
            bias = add.input_value(1).get_node().get_data().copy()
            bias.reshape(-1)[2] += 0.5
            add.input(1).replace_source_output(ov.opset8.constant(bias).output(0))
        ov.save_model(model, OUT / f"{name}{suffix}.xml", compress_to_fp16=False)
    model = ov.Core().read_model(OUT / f"{name}.xml")
    np.savez(OUT / f"{name}.inputs.npz", **{port_name(model.inputs[0]): x.numpy()})
    np.savez(OUT / f"{name}.outputs.npz", **{port_name(p): t.numpy() for p, t in zip(model.outputs, outputs)})


def port_name(port) -> str:
    """The name irtool keys a port by: any of its tensor names, else its node's friendly name."""
    return port.get_any_name() if port.get_names() else port.get_node().get_friendly_name()


def save(name: str, module: nn.Module, inputs: dict[str, torch.Tensor], static: bool = False) -> None:
    """Converts with the inputs given by argument name (``static``: with their shapes fixed).  The
    frontend names x for it but the lengths input "8" (a traced value's number): the .npz files
    take whatever names the IR has."""
    module.eval()
    with torch.no_grad():
        outputs = module(**inputs)
        shapes = {"input": [tuple(t.shape) for t in inputs.values()]} if static else {}
        model = ov.convert_model(module, example_input=inputs, **shapes)
    ov.save_model(model, OUT / f"{name}.xml", compress_to_fp16=False)
    model = ov.Core().read_model(OUT / f"{name}.xml")  # the names as the saved IR has them
    assert len(model.inputs) == len(inputs) and len(model.outputs) == len(outputs)
    np.savez(OUT / f"{name}.inputs.npz", **{port_name(p): t.numpy() for p, t in zip(model.inputs, inputs.values())})
    np.savez(OUT / f"{name}.outputs.npz", **{port_name(p): t.numpy() for p, t in zip(model.outputs, outputs)})


def main(names: list[str]) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    wanted = set(names) or {"packed_lstm", "gru", "gru_cell_loop", "export"}
    torch.manual_seed(0)
    x = torch.randn(BATCH, STEPS, SIZE)
    if "packed_lstm" in wanted:
        save("packed_lstm", PackedLSTM(), {"x": x, "lengths": torch.tensor(LENGTHS, dtype=torch.int64)})
    if "gru" in wanted:
        save("gru", PlainGRU(), {"x": x})
    if "gru_cell_loop" in wanted:
        torch.manual_seed(1)
        cell = nn.GRUCell(SIZE, HIDDEN)
        changed = copy.deepcopy(cell)
        with torch.no_grad():
            changed.bias_ih[HIDDEN + 2] += 0.5  # a value of the update gate's input bias
        steps = torch.randn(STEPS, BATCH, SIZE)
        save("gru_cell_loop", GRUCellLoop(cell), {"x": steps}, static=True)
        save("gru_cell_loop_fault", GRUCellLoop(cell, changed), {"x": steps}, static=True)
    if "export" in wanted:
        torch.manual_seed(2)
        x = torch.randn(BATCH, STEPS, SIZE)
        for name in EXPORTED:
            exported(name, x)
    if "export_stacked" in wanted:
        torch.manual_seed(6)
        x = torch.randn(BATCH, STEPS, SIZE)
        for name in STACKED:
            exported(name, x)
    if "export_static" in wanted:
        torch.manual_seed(3)
        exported_static(torch.randn(BATCH, STEPS, SIZE))
    if "sliced" in wanted:
        torch.manual_seed(5)
        x = torch.randn(BATCH, STEPS, SIZE)
        for kind in ("lstm", "gru"):
            sliced(kind, x)
    if "export_h0" in wanted:
        torch.manual_seed(4)
        exported_h0(torch.randn(BATCH, STEPS, SIZE), torch.randn(1, BATCH, HIDDEN))


if __name__ == "__main__":
    main(sys.argv[1:])
