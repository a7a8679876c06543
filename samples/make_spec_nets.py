"""Writes samples/ir/spec-examples/*.net.xml: each spec page's example completed into a net.

The example layer is kept as the page gives it (its attributes and dims, defects
included); Parameters feed its inputs and Results take its outputs.  Run from the
repository root: python samples/make_spec_nets.py
"""
from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent / "ir" / "spec-examples"
PAGES = {"GRUSequence-5": ("opset5", 2), "LSTMSequence-1": ("opset1", 3), "GRUCell-3": ("opset3", None)}


def ports(block: str) -> list[tuple[str, list[str]]]:
    return [(pid, re.findall(r"<dim>(\d+)</dim>", body))
            for pid, body in re.findall(r'<port id="(\d+)">(.*?)</port>', block, re.S)]


def main() -> None:
    for page, (version, lengths_port) in PAGES.items():
        text = (HERE / f"{page}.page.xml").read_text()
        op_type = re.search(r'type="(\w+)"', text).group(1)
        data = re.search(r"<data[^>]*/>", text).group(0)
        inputs = ports(text.split("<output>")[0])
        outputs = ports(text.split("<output>")[1])
        layers, edges = [], []

        def port_xml(pid, dims, precision):
            body = "".join(f"\t\t\t\t\t<dim>{d}</dim>\n" for d in dims)
            return f'\t\t\t\t<port id="{pid}" precision="{precision}">\n{body}\t\t\t\t</port>\n'

        op_id = len(inputs)
        for index, (pid, dims) in enumerate(inputs):
            et, precision = ("i32", "I32") if index == lengths_port else ("f32", "FP32")
            layers.append(f'\t\t<layer id="{index}" name="input_{index}" type="Parameter" version="opset1">\n'
                          f'\t\t\t<data shape="{",".join(dims)}" element_type="{et}"/>\n\t\t\t<output>\n'
                          f'{port_xml(0, dims, precision)}\t\t\t</output>\n\t\t</layer>\n')
            edges.append(f'\t\t<edge from-layer="{index}" from-port="0" to-layer="{op_id}" to-port="{pid}"/>\n')
        op_inputs = "".join(port_xml(pid, dims, "I32" if i == lengths_port else "FP32")
                            for i, (pid, dims) in enumerate(inputs))
        op_outputs = "".join(port_xml(pid, dims, "FP32") for pid, dims in outputs)
        layers.append(f'\t\t<layer id="{op_id}" name="{op_type}" type="{op_type}" version="{version}">\n'
                      f"\t\t\t{data}\n\t\t\t<input>\n{op_inputs}\t\t\t</input>\n\t\t\t<output>\n{op_outputs}"
                      f"\t\t\t</output>\n\t\t</layer>\n")
        for k, (pid, dims) in enumerate(outputs):
            rid = op_id + 1 + k
            layers.append(f'\t\t<layer id="{rid}" name="output_{k}" type="Result" version="opset1">\n'
                          f"\t\t\t<input>\n{port_xml(0, dims, 'FP32')}\t\t\t</input>\n\t\t</layer>\n")
            edges.append(f'\t\t<edge from-layer="{op_id}" from-port="{pid}" to-layer="{rid}" to-port="0"/>\n')
        net = (f'<?xml version="1.0"?>\n<!-- The {page} page example as a net: the layer as the page gives it. -->\n'
               f'<net name="{page}-example" version="11">\n\t<layers>\n{"".join(layers)}\t</layers>\n'
               f'\t<edges>\n{"".join(edges)}\t</edges>\n</net>\n')
        (HERE / f"{page}.net.xml").write_text(net)


if __name__ == "__main__":
    main()
