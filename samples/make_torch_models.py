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

Each has NAME.inputs.npz and NAME.outputs.npz (torch's own outputs on those inputs), keyed by
the names the converted model gives its inputs and outputs (as ``irtool run --inputs`` takes
them and ``--save-outputs`` writes them), for ``irtool run --inputs ... --expected ...``.

    python -m venv --system-site-packages /tmp/torchenv && /tmp/torchenv/bin/pip install torch openvino
    /tmp/torchenv/bin/python samples/make_torch_models.py      # from the repository root
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import openvino as ov
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

OUT = Path(__file__).resolve().parent / "models" / "torch"
BATCH, STEPS, SIZE, HIDDEN = 3, 6, 3, 8
LENGTHS = [6, 3, 5]


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


def port_name(port) -> str:
    """The name irtool keys a port by: any of its tensor names, else its node's friendly name."""
    return port.get_any_name() if port.get_names() else port.get_node().get_friendly_name()


def save(name: str, module: nn.Module, inputs: dict[str, torch.Tensor]) -> None:
    """Converts with the inputs given by argument name.  The frontend names x for it but the lengths
    input "8" (a traced value's number): the .npz files take whatever names the IR has."""
    module.eval()
    with torch.no_grad():
        outputs = module(**inputs)
        model = ov.convert_model(module, example_input=inputs)
    ov.save_model(model, OUT / f"{name}.xml", compress_to_fp16=False)
    model = ov.Core().read_model(OUT / f"{name}.xml")  # the names as the saved IR has them
    assert len(model.inputs) == len(inputs) and len(model.outputs) == len(outputs)
    np.savez(OUT / f"{name}.inputs.npz", **{port_name(p): t.numpy() for p, t in zip(model.inputs, inputs.values())})
    np.savez(OUT / f"{name}.outputs.npz", **{port_name(p): t.numpy() for p, t in zip(model.outputs, outputs)})


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    x = torch.randn(BATCH, STEPS, SIZE)
    save("packed_lstm", PackedLSTM(), {"x": x, "lengths": torch.tensor(LENGTHS, dtype=torch.int64)})
    save("gru", PlainGRU(), {"x": x})


if __name__ == "__main__":
    main()
