"""Safe parsing of IR XML with lxml: no entities, no DTD, no network, bounded size.

A file is read whole (after a size check), refused if it declares a DTD, and parsed
with entity resolution and network access off, so an XXE payload reads nothing and an
entity bomb expands nothing.  Besides ``<net>`` documents it reads a lone ``<layer>``
as the op spec pages show them, ``...`` placeholders included.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from irtool.ir.model import Dim, Edge, IRModel, Layer, Port

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
_PLACEHOLDER = re.compile(rb"(?<=\s)\.\.\.(?=[\s/>])")
_TAG = re.compile(rb"<[A-Za-z][^<>]*>")
_SPACE = re.compile(rb"[ \t\r\n]*")
_NAME = re.compile(rb"[A-Za-z_][\w.-]*")


@dataclass
class IRParseError(Exception):
    """The file is not IR that can be read at all; ``kind`` selects the diagnostic code."""

    kind: str  # "syntax", "dtd", "too-large", "root", "binary"
    message: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        return self.message


def make_parser() -> etree.XMLParser:
    """The one lxml parser configuration irtool uses for IR."""
    # Not collect_ids=False: with lxml 6.1 / libxml2 2.14 that option makes libxml2 load an
    # external DTD (<!DOCTYPE net SYSTEM "file:...">) and external parameter entities,
    # whatever load_dtd and resolve_entities say (measured: a FIFO named there blocks the parse).
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
                           huge_tree=False, remove_blank_text=False)


def read_ir_bytes(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Read a file whole after checking its size; OSError for an unreadable path."""
    size = os.stat(path).st_size
    if size > max_bytes:
        raise IRParseError("too-large", f"file is {size} bytes, over the limit of {max_bytes} bytes "
                                        f"(raise it with --max-size)")
    with open(path, "rb") as handle:
        return handle.read(max_bytes + 1)


def parse_ir(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> IRModel:
    """Parse an IR file; raises IRParseError for unreadable XML and OSError for an unreadable path."""
    return parse_ir_bytes(read_ir_bytes(path, max_bytes), str(path))


def parse_ir_bytes(data: bytes, path: str = "<bytes>") -> IRModel:
    if b"\x00" in data[:8192]:
        raise IRParseError("binary", "file holds binary data, not XML (is it the .bin?)", 1, 1)
    if not data.strip():
        raise IRParseError("syntax", "file is empty", 1, 1)
    doctype, first = _prolog(data)
    if doctype is not None:
        line = data.count(b"\n", 0, doctype) + 1
        raise IRParseError("dtd", "the file declares a DTD (<!DOCTYPE>); IR has none, and irtool never "
                                  "loads DTDs or expands entities", line, doctype - data.rfind(b"\n", 0, doctype))
    snippet = first == b"layer"
    if snippet:
        data = _blank_placeholders(data)
    try:
        root = etree.fromstring(data, make_parser())
    except etree.XMLSyntaxError as error:
        line, column = error.position if error.position else (None, None)
        message = re.sub(r",? line \d+, column \d+$", "", error.msg or "not well-formed XML")
        if (line is not None and line >= data.count(b"\n") + 1 - int(data.endswith(b"\n"))
                and "Extra content" not in message and not _ends_with_root_end(data, first)):
            message += " (the file ends inside the XML: is it truncated?)"
        raise IRParseError("syntax", f"XML is not well-formed: {message}", line, column) from None
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None:
        raise IRParseError("dtd", "the file declares a DTD (<!DOCTYPE>); IR has none, and irtool never "
                                  "loads DTDs or expands entities", 1, 1)
    lines = data.split(b"\n")
    if root.tag == "net":
        return _net(root, path, lines)
    if root.tag == "layer":
        return IRModel(path=path, kind="layer", layers=[_layer(root)], line=root.sourceline, source_lines=lines)
    raise IRParseError("root", f"root element is <{root.tag}>, expected <net> or a single <layer>",
                       root.sourceline, None)


def _prolog(data: bytes) -> tuple[int | None, bytes | None]:
    """The offset of a <!DOCTYPE> in the prolog (None if there is none), and the root's tag name.

    Skips the XML declaration, comments, processing instructions and white space in one
    linear pass, so that a DTD is refused before libxml2 sees it.
    """
    pos = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    while True:
        pos = _SPACE.match(data, pos).end()
        if data.startswith(b"<!--", pos):
            end = data.find(b"-->", pos + 4)
            pos = end + 3
        elif data.startswith(b"<?", pos):
            end = data.find(b"?>", pos + 2)
            pos = end + 2
        elif data[pos:pos + 9].upper() == b"<!DOCTYPE":
            return pos, None
        else:
            name = _NAME.match(data, pos + 1) if data.startswith(b"<", pos) else None
            return None, name.group(0) if name else None
        if end < 0:
            return None, None


def _ends_with_root_end(data: bytes, root: bytes | None) -> bool:
    """Whether the file ends where its root element does (so an error on its last line is no truncation)."""
    tail = data.rstrip()
    if root is None:
        return False
    return tail.endswith(b"</" + root + b">") or (tail.endswith(b"/>") and tail.rfind(b"<") == tail.find(b"<" + root))


def _blank_placeholders(data: bytes) -> bytes:
    """Blank the ``...`` placeholders in start tags, keeping every offset in place."""
    return _TAG.sub(lambda m: _PLACEHOLDER.sub(b"   ", m.group(0)), data)


def _net(root: etree._Element, path: str, lines: list[bytes]) -> IRModel:
    # Direct child iteration (iterchildren with a tag runs in C); find/iterfind go through
    # ElementPath in Python, which was most of the time to read a 10,000-layer net.
    layers_element = _first(root, "layers")
    edges_element = _first(root, "edges")
    layers = [_layer(e) for e in layers_element.iterchildren("layer")] if layers_element is not None else []
    edges = [Edge(e.get("from-layer"), e.get("from-port"), e.get("to-layer"), e.get("to-port"), e.sourceline)
             for e in edges_element.iterchildren("edge")] if edges_element is not None else []
    return IRModel(path=path, kind="net", layers=layers, edges=edges, name=root.get("name"),
                   ir_version=root.get("version"), line=root.sourceline,
                   rt_info=_rt_info(_first(root, "rt_info")), source_lines=lines)


def _first(element: etree._Element, tag: str) -> etree._Element | None:
    """The first child with this tag, as ``element.find(tag)`` gives it."""
    return next(element.iterchildren(tag), None)


def _layer(element: etree._Element) -> Layer:
    get = element.get
    layer = Layer(id=get("id"), name=get("name"), type=get("type"), version=get("version"), line=element.sourceline)
    data = inputs = outputs = rt_info = None
    for child in element.iterchildren("data", "input", "output", "rt_info"):
        tag = child.tag
        if tag == "data":
            data = child if data is None else data
        elif tag == "input":
            inputs = child if inputs is None else inputs
        elif tag == "output":
            outputs = child if outputs is None else outputs
        elif rt_info is None:
            rt_info = child
    if data is not None:
        layer.data = dict(data.attrib)
        layer.data_line = data.sourceline
    if inputs is not None:
        layer.inputs = [_port(p) for p in inputs.iterchildren("port")]
    if outputs is not None:
        layer.outputs = [_port(p) for p in outputs.iterchildren("port")]
    layer.rt_info = _rt_info(rt_info)
    return layer


def _port(element: etree._Element) -> Port:
    get = element.get
    dims = [Dim((d.text or "").strip(), d.sourceline) for d in element.iterchildren("dim")]
    return Port(id=get("id"), precision=get("precision"), dims=dims, line=element.sourceline, names=get("names"))


def _rt_info(element: etree._Element | None) -> dict[str, str]:
    if element is None:
        return {}
    info = {}
    for child in element:
        if isinstance(child.tag, str) and child.get("name") is not None:
            info[child.get("name")] = child.get("value", child.get("version", ""))
    return info
