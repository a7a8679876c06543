"""Write the spec's defaults into IR XML for attributes a layer omits.

OpenVINO does not always apply a spec default: a GRUSequence or LSTMSequence without
``activations`` loads with an empty list and then fails to compile on CPU.  Writing the
defaults into the XML before OpenVINO reads it (``irtool run --fill-defaults``) makes such
a file mean what the spec says it means.  Parsing is irtool's safe configuration: no
entities, no DTD, no network.
"""
from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from irtool.core.errors import IrtoolError
from irtool.ir.parse import make_parser
from irtool.specs import registry
from irtool.specs.values import format_value


class DefaultsError(IrtoolError, ValueError):
    """XML that cannot be read to fill defaults in; ``message`` is one line."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class FilledDefault:
    layer_id: str | None
    layer_name: str | None
    layer_type: str
    attribute: str
    value: str

    def describe(self) -> str:
        return f"layer '{self.layer_name or self.layer_id}' ({self.layer_type}): {self.attribute}={self.value}"


@dataclass(frozen=True)
class DefaultsResult:
    xml: bytes
    filled: tuple[FilledDefault, ...]


def fill_defaults(xml: bytes) -> DefaultsResult:
    """The XML with the spec's default written for every omitted optional attribute of every
    layer whose (type, version) has a spec, and the list of what was written."""
    try:
        root = etree.fromstring(xml, make_parser())
    except etree.XMLSyntaxError as error:
        raise DefaultsError(f"not well-formed XML: {error}") from None
    if root.getroottree().docinfo.doctype:
        raise DefaultsError("declares a DTD, which IR never has; refusing to read it")
    filled = []
    for layer in root.iter("layer"):
        spec = registry().for_ir(layer.get("type", ""), layer.get("version"))
        if spec is None or not spec.attributes:
            continue
        data = layer.find("data")
        for name, attribute in spec.attributes.items():
            if attribute.required or attribute.default is None:
                continue
            if data is not None and name in data.attrib:
                continue
            if data is None:
                data = etree.Element("data")
                layer.insert(0, data)
            value = format_value(attribute.default)
            data.set(name, value)
            filled.append(FilledDefault(layer.get("id"), layer.get("name"), spec.type, name, value))
    return DefaultsResult(etree.tostring(root, xml_declaration=True, encoding="utf-8"), tuple(filled))
