"""Writes samples/models/paddle: PaddlePaddle models as their users have them, saved by
``paddle.jit.save`` as .pdmodel + .pdiparams, which OpenVINO's Paddle frontend reads directly
(not run by CI: paddle is not a test dependency; its files are committed).

- lstm.pdmodel: paddle.nn.LSTM (hidden 8) on x [2, 6, 3] (batch first), static shapes.
- lstm_lengths.pdmodel: the same layer given ``sequence_length`` (lengths [6, 3] as int64),
  with a dynamic batch: OpenVINO makes it an LSTMSequence with sequence_lengths on the CPU
  plugin's dynamic path.

Each has NAME.inputs.npz and NAME.outputs.npz (Paddle's own outputs on those inputs), keyed by
the names the converted model gives its inputs and outputs, for
``irtool run NAME.pdmodel --inputs NAME.inputs.npz --expected NAME.outputs.npz``.

    python -m venv /tmp/paddleenv && /tmp/paddleenv/bin/pip install paddlepaddle==3.0.0 openvino
    /tmp/paddleenv/bin/python samples/make_paddle_models.py      # from the repository root

The program is saved in the old .pdmodel format (FLAGS_enable_pir_api=0): Paddle 3 otherwise
writes its PIR .json.
"""
from __future__ import annotations

import os
from pathlib import Path

os.environ["FLAGS_enable_pir_api"] = "0"

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
import paddle  # noqa: E402
from paddle.static import InputSpec  # noqa: E402

OUT = Path(__file__).resolve().parent / "models" / "paddle"
BATCH, STEPS, SIZE, HIDDEN = 2, 6, 3, 8
LENGTHS = [6, 3]


class LSTM(paddle.nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = paddle.nn.LSTM(SIZE, HIDDEN)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y, h, c


class LSTMWithLengths(LSTM):
    def forward(self, x, lengths):
        y, (h, c) = self.lstm(x, sequence_length=lengths)
        return y, h, c


def port_name(port) -> str:
    """The name irtool keys a port by: any of its tensor names, else its node's friendly name."""
    return port.get_any_name() if port.get_names() else port.get_node().get_friendly_name()


def save(name: str, layer: paddle.nn.Layer, inputs: dict[str, np.ndarray], specs: list[InputSpec]) -> None:
    layer.eval()
    outputs = [t.numpy() for t in layer(*[paddle.to_tensor(v) for v in inputs.values()])]
    paddle.jit.save(layer, str(OUT / name), input_spec=specs)
    (OUT / f"{name}.pdiparams.info").unlink()  # Paddle's own bookkeeping; OpenVINO needs no part of it
    model = ov.Core().read_model(OUT / f"{name}.pdmodel")
    assert len(model.inputs) == len(inputs) and len(model.outputs) == len(outputs)
    by_name = {port_name(p): p for p in model.inputs}
    np.savez(OUT / f"{name}.inputs.npz", **{next(k for k, p in by_name.items() if spec in p.get_names()): v
                                              for spec, v in inputs.items()})
    np.savez(OUT / f"{name}.outputs.npz", **{port_name(p): v for p, v in zip(model.outputs, outputs)})


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    paddle.set_device("cpu")
    paddle.seed(3)
    x = np.random.default_rng(2).standard_normal((BATCH, STEPS, SIZE)).astype(np.float32)
    save("lstm", LSTM(), {"x": x}, [InputSpec([BATCH, STEPS, SIZE], "float32", "x")])
    save("lstm_lengths", LSTMWithLengths(), {"x": x, "lengths": np.array(LENGTHS, np.int64)},
         [InputSpec([None, STEPS, SIZE], "float32", "x"), InputSpec([None], "int64", "lengths")])


if __name__ == "__main__":
    main()
