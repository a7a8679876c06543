"""Safe parsing of IR XML with lxml: no entities, no DTD, no network, bounded size.

A file is read whole (after a size check), refused if it declares a DTD, and parsed
with entity resolution and network access off, so an XXE payload reads nothing and an
entity bomb expands nothing.  Besides ``<net>`` documents it reads a lone ``<layer>``
as the op spec pages show them, ``...`` placeholders included.
"""
from __future__ import annotations

import errno
import io
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from irtool.core.errors import IrtoolError
from irtool.ir.encodings import EncodingError, as_utf8, place
from irtool.ir.model import Body, Edge, IRModel, Layer, MapEntry, Port, SourceLines

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX; Windows has no FIFOs to block on
_PLACEHOLDER = re.compile(rb"(?<=\s)\.\.\.(?=[\s/>])")
_TAG = re.compile(rb"<[A-Za-z][^<>]*>")
_SPACE = re.compile(rb"[ \t\r\n]*")
_NAME = re.compile(rb"[A-Za-z_][\w.-]*")


@dataclass
class IRParseError(IrtoolError):
    """The file is not IR that can be read at all; ``kind`` selects the diagnostic code."""

    kind: str  # "syntax", "dtd", "too-large", "root", "binary", "encoding", "limit"
    message: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        return self.message


def make_parser() -> etree.XMLParser:
    """The one lxml parser configuration irtool uses for IR (the streamed read uses its options too)."""
    return etree.XMLParser(**_PARSER_OPTIONS)


# Not collect_ids=False: with lxml 6.1 / libxml2 2.14 that option makes libxml2 load an
# external DTD (<!DOCTYPE net SYSTEM "file:...">) and external parameter entities,
# whatever load_dtd and resolve_entities say (measured: a FIFO named there blocks the parse).
# Keep the white space between elements (no remove_blank_text): libxml2 keeps the line
# numbers above 65535 in the text node that follows an element.
_PARSER_OPTIONS = dict(resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
                       huge_tree=False, remove_blank_text=False)


def read_ir_bytes(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Read a file whole after checking its size; OSError for an unreadable path, and for one
    that is not a regular file (opened without blocking, so a FIFO is refused, not waited on)."""
    with open(os.open(path, os.O_RDONLY | _NONBLOCK), "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        size = info.st_size
        if size > max_bytes:
            raise IRParseError("too-large", f"file is {size} bytes, over the limit of {max_bytes} bytes "
                                            f"(raise it with --max-size)")
        data = handle.read(size + 1)  # read(max_bytes + 1) would first allocate all of max_bytes
        if len(data) > size:  # the file grew since stat
            data += handle.read(max_bytes + 1 - len(data))
        return data


def parse_ir(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> IRModel:
    """Parse an IR file; raises IRParseError for unreadable XML and OSError for an unreadable path."""
    return parse_ir_bytes(read_ir_bytes(path, max_bytes), str(path))


def parse_ir_bytes(data: bytes, path: str = "<bytes>") -> IRModel:
    try:
        data, notices = as_utf8(data)
    except EncodingError as error:
        raise IRParseError("encoding", str(error), 1, 1) from None
    data, namespaces = _without_default_namespaces(data)
    model = _parse(data, path)
    model.notices = notices + namespaces
    return model


def _parse(data: bytes, path: str) -> IRModel:
    if b"\x00" in data[:8192]:
        raise IRParseError("binary", "file holds binary data, not XML (is it the .bin?)", 1, 1)
    if not data or data.isspace():  # as `not data.strip()`, without copying the file
        raise IRParseError("syntax", "file is empty", 1, 1)
    doctype, first = _prolog(data)
    if doctype is not None:
        line = data.count(b"\n", 0, doctype) + 1
        raise IRParseError("dtd", "the file declares a DTD (<!DOCTYPE>); IR has none, and irtool never "
                                  "loads DTDs or expands entities", line, doctype - data.rfind(b"\n", 0, doctype))
    snippet = first == b"layer"
    if snippet:
        data = _blank_placeholders(data)
    elif first == b"net":
        model = _net_streamed(data, path)
        if model is not None:
            return model
    try:
        root = etree.fromstring(data, make_parser())
    except etree.XMLSyntaxError as error:
        line, column = error.position if error.position else (None, None)
        message = re.sub(r",? line \d+, column \d+$", "", error.msg or "not well-formed XML")
        if "Excessive depth" in message or "huge" in message.lower() or "too long" in message.lower():
            raise IRParseError("limit", f"the file holds {_LIMITS.get(message.split(':')[0], 'more')} than irtool "
                                        f"reads (libxml2 without huge_tree: {message}); not checked (OpenVINO's "
                                        f"reader has no such limit)", line, column)
        if message.startswith("Invalid bytes in character encoding"):  # the file is UTF-8 here
            message += (" (bytes that are not UTF-8; OpenVINO reads the file nonetheless, keeping the bytes in "
                        "names and values as they are, and its Python API then fails on such a name)")
        elif (line is not None and line >= data.count(b"\n") + 1 - int(data.endswith(b"\n"))
                and "Extra content" not in message and not _ends_with_root_end(data, first)):
            message += " (the file ends inside the XML: is it truncated?)"
        raise IRParseError("syntax", f"XML is not well-formed: {message}", line, column) from None
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None:
        raise IRParseError("dtd", "the file declares a DTD (<!DOCTYPE>); IR has none, and irtool never "
                                  "loads DTDs or expands entities", 1, 1)
    lines = SourceLines(data)
    if root.tag == "net":
        return _net(root, path, lines)
    if root.tag == "layer":
        return IRModel(path=path, kind="layer", layers=[_layer(root)], line=_line(root), source_lines=lines)
    raise IRParseError("root", f"root element is <{root.tag}>, expected <net> or a single <layer>",
                       _line(root), None)


_LIMITS = {"Excessive depth in document": "nesting deeper", "Resource limit exceeded": "a text run longer"}
_XMLNS = re.compile(rb"""(?<=[ \t\r\n])xmlns[ \t\r\n]*=[ \t\r\n]*("[^"<]*"|'[^'<]*')""")


def _without_default_namespaces(data: bytes) -> tuple[bytes, list[tuple]]:
    """The file with each default namespace declaration (``xmlns="..."``) blanked, offsets kept, and a
    warning (IR007) at the first: OpenVINO's reader knows no namespaces (``<net xmlns="http://x">`` is
    a <net> to it), while libxml2 would put every element below in the namespace."""
    if b"xmlns" not in data:
        return data, []
    found: list[tuple[int, bytes]] = []

    def blank(tag: re.Match) -> bytes:
        def each(declaration: re.Match) -> bytes:
            found.append((tag.start() + declaration.start(), declaration.group(1)))
            return b" " * len(declaration.group(0))
        return _XMLNS.sub(each, tag.group(0))

    blanked = _TAG.sub(blank, data)
    if not found:
        return data, []
    offset, uri = found[0]
    line, column = place(data, offset)
    more = f" ({len(found)} declarations; the first here)" if len(found) > 1 else ""
    return blanked, [("IR007", f"a default XML namespace, xmlns={uri.decode('utf-8', 'replace')}{more}: the IR format "
                               f"writes none, and OpenVINO's reader ignores it (it reads the names as written), as "
                               f"irtool does", line, column)]


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
    # Plain child iteration with a tag test: several times faster than find/iterfind (which
    # go through ElementPath in Python), and faster than iterchildren(tag), on 100,000 elements.
    layers_element = _first(root, "layers")
    edges_element = _first(root, "edges")
    layers = [_layer(e) for e in layers_element if e.tag == "layer"] if layers_element is not None else []
    edges = _edges(edges_element) if edges_element is not None else []
    strays = [_stray(e) for e in root.iter("layer", "edge") if _is_stray(e)]
    return IRModel(path=path, kind="net", layers=layers, edges=edges, name=root.get("name"),
                   ir_version=root.get("version"), line=_line(root),
                   rt_info=_rt_info(_first(root, "rt_info")), source_lines=lines, strays=strays)


_PARENTS = {"layer": ("layers",), "edge": ("edges", "back_edges")}  # back_edges: a TensorIterator's or Loop's


def _is_stray(element: etree._Element) -> bool:
    """A <layer> whose parent is no <layers> (a TensorIterator's body has its own), an <edge> outside
    <edges> and <back_edges>."""
    parent = element.getparent()
    return parent is not None and parent.tag not in _PARENTS[element.tag]


def _stray(element: etree._Element) -> tuple[str, int | None, str | None]:
    return element.tag, _line(element), element.get("id") if element.tag == "layer" else None


def _net_streamed(data: bytes, path: str) -> IRModel | None:
    """What _net reads, while lxml parses: each layer as soon as it ends, then dropped.

    A whole tree takes some 17 times the file's size, and a first touch of each 4 KiB of
    it costs a page fault (about 3 microseconds in these VMs: 60 ms for a 10,000-layer net).
    Streamed, the tree's memory is reused from layer to layer.  The layers read are the
    children of the first <layers> under the root, the edges those of the first <edges>,
    as in _net.  None when the file is not a well-formed <net>: the caller then parses it
    whole, for its exact error (or, should it read after all, the same model).
    """
    events = etree.iterparse(io.BytesIO(data), events=("end",), tag=("layer", "edges", "edge"), **_PARSER_OPTIONS)
    layers: list[Layer] = []
    edges: list[Edge] = []
    strays: list[tuple[str, int | None, str | None]] = []
    first_layers = first_edges = root = None
    try:
        for _, element in events:
            if root is None:
                root = element.getroottree().getroot()
            parent = element.getparent()
            if parent is None:
                continue
            if element.tag != "edges" and _is_stray(element):
                strays.append(_stray(element))
                continue
            if element.tag == "edge":
                continue
            if element.tag == "layer":
                if parent.tag != "layers" or parent.getparent() is not root:
                    continue
                if first_layers is None:
                    first_layers = _first(root, "layers")
                if parent is not first_layers:
                    continue
                layers.append(_layer(element))
                while element.getprevious() is not None:  # what is read can go
                    del parent[0]
            elif element.tag == "edges" and parent is root:
                if first_edges is None:
                    first_edges = _first(root, "edges")
                if element is first_edges:
                    edges = _edges(element)
        root = events.root
    except Exception:  # XMLSyntaxError and the like: the whole-tree parse reports it as it does
        return None
    docinfo = root.getroottree().docinfo
    if root.tag != "net" or docinfo.doctype or docinfo.internalDTD is not None:
        return None
    return IRModel(path=path, kind="net", layers=layers, edges=edges, name=root.get("name"),
                   ir_version=root.get("version"), line=_line(root),
                   rt_info=_rt_info(_first(root, "rt_info")), source_lines=SourceLines(data), strays=strays)


def _edges(element: etree._Element) -> list[Edge]:
    return [Edge(e.get("from-layer"), e.get("from-port"), e.get("to-layer"), e.get("to-port"),
                 line if (line := e.sourceline) is None or line < 65535 else _big_line(e, line))
            for e in element if e.tag == "edge"]


def _first(element: etree._Element, tag: str) -> etree._Element | None:
    """The first child with this tag, as ``element.find(tag)`` gives it."""
    for child in element:
        if child.tag == tag:
            return child
    return None


def _layer(element: etree._Element) -> Layer:
    data = inputs = outputs = rt_info = body = port_map = back_edges = None
    for child in element:
        tag = child.tag
        if tag == "data":
            if data is None:
                data = child
        elif tag == "input":
            if inputs is None:
                inputs = child
        elif tag == "output":
            if outputs is None:
                outputs = child
        elif tag == "rt_info":
            if rt_info is None:
                rt_info = child
        elif tag == "body":  # a TensorIterator's or Loop's; OpenVINO reads the first of each, as here
            if body is None:
                body = child
        elif tag == "port_map":
            if port_map is None:
                port_map = child
        elif tag == "back_edges" and back_edges is None:
            back_edges = child
    get = element.get
    line = element.sourceline
    if line is not None and line >= 65535:
        line = _big_line(element, line)
    data_line = data.sourceline if data is not None else None
    if data_line is not None and data_line >= 65535:
        data_line = _big_line(data, data_line)
    # positional: a dataclass __init__ takes keywords at twice the cost, 10,000 times here
    layer = Layer(get("id"), get("name"), get("type"), get("version"), line,
                  _attributes(data) if data is not None else {}, data_line,
                  [_port(p) for p in inputs if p.tag == "port"] if inputs is not None else [],
                  [_port(p) for p in outputs if p.tag == "port"] if outputs is not None else [],
                  _rt_info(rt_info) if rt_info is not None else {})
    if body is not None or port_map is not None or back_edges is not None:
        _subgraph(layer, body, port_map, back_edges)
    return layer


def _subgraph(layer: Layer, body, port_map, back_edges) -> None:
    """A TensorIterator's or Loop's body, port map and back edges.  A body inside a body is read
    by the same call, so the recursion is as deep as the XML's nesting, which the parser bounds
    (lxml refuses more than 256 levels without huge_tree: some 60 bodies)."""
    if body is not None:
        layers_element, edges_element = _first(body, "layers"), _first(body, "edges")
        layers = [_layer(e) for e in layers_element if e.tag == "layer"] if layers_element is not None else None
        for each in layers or ():
            each.parent = layer
        layer.body = Body(layers, _edges(edges_element) if edges_element is not None else [], _line(body))
    if port_map is not None:
        layer.port_map = [MapEntry(e.tag, _attributes(e), _line(e)) for e in port_map if e.tag in ("input", "output")]
    if back_edges is not None:
        layer.back_edges = _edges(back_edges)


class _FirstAttributes:
    """A parser target that keeps the attributes of the first start tag, as a dict."""

    def __init__(self) -> None:
        self.attributes: dict[str, str] | None = None

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        if self.attributes is None:
            self.attributes = dict(attributes)

    def close(self) -> dict[str, str]:
        return self.attributes or {}


def _attributes(element: etree._Element) -> dict[str, str]:
    """An element's attributes.  lxml finds each attribute's value by a walk from the first
    (100,000 attributes take a minute through ``.items()``); past a few dozen, the element is
    written out and read back through a parser target, which gets them all at once."""
    attributes = element.attrib
    if len(attributes) <= 64:
        return dict(attributes.items())
    text = etree.tostring(element, with_tail=False)
    return etree.fromstring(text, etree.XMLParser(target=_FirstAttributes(), **_PARSER_OPTIONS))


def _port(element: etree._Element) -> Port:
    texts = []
    lines = []
    for dim in element:
        if dim.tag == "dim":
            text, line = dim.text, dim.sourceline
            if line is not None and line >= 65535:  # see _big_line; a dim's text is its first child
                line = line - text.count("\n") if text is not None else _big_line(dim, line)
            texts.append(text.strip(" \t\n\r\v\f") if text is not None else "")  # C white space, as OpenVINO skips
            lines.append(line)
    line = element.sourceline
    if line is not None and line >= 65535:
        line = _big_line(element, line)
    get = element.get
    return Port(get("id"), get("precision"), tuple(texts), tuple(lines), line, get("names"))


def _line(element: etree._Element) -> int | None:
    """The line of an element's start tag (where it ends, as libxml2 counts)."""
    line = element.sourceline
    return line if line is None or line < 65535 else _big_line(element, line)


def _big_line(element: etree._Element, line: int) -> int:
    """libxml2 keeps a line above 65535 on the text node that follows the element's start:
    its first child's text, else the text after it; and lxml's ``sourceline`` then gives
    the line where that text ends.  Count the text's line breaks back off."""
    if element.text is not None:
        return line - element.text.count("\n")
    if len(element) == 0 and element.tail is not None:
        return line - element.tail.count("\n")
    return line


def _rt_info(element: etree._Element | None) -> dict[str, str]:
    if element is None:
        return {}
    info = {}
    for child in element:
        if isinstance(child.tag, str) and child.get("name") is not None:
            info[child.get("name")] = child.get("value", child.get("version", ""))
    return info
