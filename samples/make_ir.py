"""Writes samples/ir/valid: small IR nets in the layout a person writes by hand.

Every input, weights included, is a Parameter, so the nets need no .bin, except
gru_sequence_const.xml, whose weights are Consts in gru_sequence_const.bin. Run it from
the repository root (python samples/make_ir.py); the files it writes are committed.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent / "ir" / "valid"
PRECISION = {"f32": "FP32", "i32": "I32", "f16": "FP16"}


def port(pid, dims, et, indent="\t\t\t\t"):
    inner = "".join(f"{indent}\t<dim>{d}</dim>\n" for d in dims)
    return f'{indent}<port id="{pid}" precision="{PRECISION[et]}">\n{inner}{indent}</port>\n'


class Net:
    def __init__(self, name, comment):
        self.name, self.comment, self.layers, self.edges, self.weights = name, comment, [], [], bytearray()

    def add(self, type_, name, version, data, inputs, outputs):
        lid = len(self.layers)
        attrs = "".join(f' {k}="{v}"' for k, v in data.items())
        text = f'\t\t<layer id="{lid}" name="{name}" type="{type_}" version="{version}">\n'
        if data:
            text += f"\t\t\t<data{attrs}/>\n"
        if inputs:
            text += "\t\t\t<input>\n" + "".join(port(i, d, et) for i, (d, et, _) in enumerate(inputs)) + "\t\t\t</input>\n"
        if outputs:
            first = len(inputs)
            text += "\t\t\t<output>\n" + "".join(port(first + i, d, et) for i, (d, et) in enumerate(outputs)) + "\t\t\t</output>\n"
        text += "\t\t</layer>\n"
        self.layers.append(text)
        for i, (_, _, src) in enumerate(inputs):
            self.edges.append((src[0], src[1], lid, i))
        return lid

    def parameter(self, name, dims, et="f32"):
        shape = ",".join(str(d) for d in dims)
        return (self.add("Parameter", name, "opset1", {"shape": shape, "element_type": et}, [], [(dims, et)]), 0)

    def const(self, name, array):
        offset, array = len(self.weights), array.astype(np.float32)
        self.weights += array.tobytes()
        data = {"element_type": "f32", "shape": ",".join(map(str, array.shape)), "offset": offset, "size": array.nbytes}
        return (self.add("Const", name, "opset1", data, [], [(list(array.shape), "f32")]), 0)

    def result(self, name, src, dims, et="f32"):
        self.add("Result", name, "opset1", {}, [(dims, et, src)], [])

    def write(self):
        edges = "".join(f'\t\t<edge from-layer="{a}" from-port="{b}" to-layer="{c}" to-port="{d}"/>\n'
                        for a, b, c, d in self.edges)
        text = (f'<?xml version="1.0"?>\n<!-- {self.comment} -->\n<net name="{self.name}" version="11">\n'
                f"\t<layers>\n{''.join(self.layers)}\t</layers>\n\t<edges>\n{edges}\t</edges>\n</net>\n")
        (HERE / f"{self.name}.xml").write_text(text)
        if self.weights:
            (HERE / f"{self.name}.bin").write_bytes(bytes(self.weights))


GATES = {"GRU": 3, "LSTM": 4, "RNN": 1}
ACTS = {"GRU": "sigmoid,tanh", "LSTM": "sigmoid,tanh,tanh", "RNN": "tanh"}


def sequence(kind, direction, batch=2, seq=5, inp=3, hidden=4, lbr=False, const=False, extra=None, name=None,
             batch_dim=None):
    nd = 2 if direction == "bidirectional" else 1
    gates = GATES[kind]
    name = name or f"{kind.lower()}_sequence_{direction}"
    net = Net(name, f"{kind}Sequence-5, direction={direction}, batch {batch}, seq_length {seq}, "
                    f"input_size {inp}, hidden_size {hidden}" + (", linear_before_reset" if lbr else ""))
    b = batch_dim if batch_dim is not None else batch
    x = net.parameter("X", [b, seq, inp])
    h = net.parameter("H0", [b, nd, hidden])
    ins = [([b, seq, inp], "f32", x), ([b, nd, hidden], "f32", h)]
    if kind == "LSTM":
        ins.append(([b, nd, hidden], "f32", net.parameter("C0", [b, nd, hidden])))
    ins.append(([b], "i32", net.parameter("seq_lengths", [b], "i32")))
    bias = (4 if lbr else 3) * hidden if kind == "GRU" else gates * hidden
    shapes = {"W": [nd, gates * hidden, inp], "R": [nd, gates * hidden, hidden], "B": [nd, bias]}
    rng = np.random.default_rng(7)
    for wname, dims in shapes.items():
        src = net.const(wname, rng.uniform(-0.5, 0.5, dims)) if const else net.parameter(wname, dims)
        ins.append((dims, "f32", src))
    data = {"hidden_size": hidden, "direction": direction, "activations": ACTS[kind], "clip": 0}
    if kind == "GRU":
        data["linear_before_reset"] = "true" if lbr else "false"
    data.update(extra or {})
    outs = [([b, nd, seq, hidden], "f32"), ([b, nd, hidden], "f32")]
    if kind == "LSTM":
        outs.append(([b, nd, hidden], "f32"))
    lid = net.add(f"{kind}Sequence", f"{kind.lower()}_sequence", "opset5", data, ins, outs)
    for i, (dims, _) in enumerate(outs):
        net.result(["Y", "Ho", "Co"][i], (lid, len(ins) + i), dims)
    net.write()


def cell(kind, batch=2, inp=3, hidden=4, lbr=False, name=None):
    gates = GATES[kind]
    version = {"GRU": "opset3", "LSTM": "opset4", "RNN": "opset1"}[kind]
    name = name or f"{kind.lower()}_cell" + ("_lbr" if lbr else "")
    net = Net(name, f"{kind}Cell, batch {batch}, input_size {inp}, hidden_size {hidden}"
                    + (", linear_before_reset" if lbr else ""))
    ins = [([batch, inp], "f32", net.parameter("X", [batch, inp])),
           ([batch, hidden], "f32", net.parameter("H", [batch, hidden]))]
    if kind == "LSTM":
        ins.append(([batch, hidden], "f32", net.parameter("C", [batch, hidden])))
    bias = (4 if lbr else 3) * hidden if kind == "GRU" else gates * hidden
    for wname, dims in {"W": [gates * hidden, inp], "R": [gates * hidden, hidden], "B": [bias]}.items():
        ins.append((dims, "f32", net.parameter(wname, dims)))
    data = {"hidden_size": hidden, "activations": ACTS[kind], "clip": 0}
    if kind == "GRU":
        data["linear_before_reset"] = "true" if lbr else "false"
    outs = [([batch, hidden], "f32")] * (2 if kind == "LSTM" else 1)
    lid = net.add(f"{kind}Cell", f"{kind.lower()}_cell", version, data, ins, outs)
    for i, (dims, _) in enumerate(outs):
        net.result(["Ho", "Co"][i], (lid, len(ins) + i), dims)
    net.write()


def main():
    HERE.mkdir(parents=True, exist_ok=True)
    for kind in ("GRU", "LSTM", "RNN"):
        for direction in ("forward", "reverse", "bidirectional"):
            sequence(kind, direction)
        cell(kind)
    sequence("GRU", "bidirectional", lbr=True, name="gru_sequence_linear_before_reset")
    sequence("GRU", "forward", const=True, name="gru_sequence_const")
    sequence("LSTM", "forward", extra={"clip": "2.5", "activations": "tanh,relu,sigmoid"}, name="lstm_sequence_clip_activations")
    sequence("GRU", "reverse", batch_dim=-1, name="gru_sequence_dynamic_batch")
    cell("GRU", lbr=True)


if __name__ == "__main__":
    main()
