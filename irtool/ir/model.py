"""The parsed IR: layers, ports, dims and edges as written, each with its source line.

Values are kept as the text the file holds; the validator reads them against the specs,
so one unreadable dim or attribute becomes a diagnostic instead of a parse failure.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Sequence

# what IRModel.locate finds on a line: a start tag (<layer) or an attribute name (hidden_size=)
_TOKEN = re.compile(r"(<[A-Za-z_][\w.:-]*)|([A-Za-z_][\w.:-]*)\s*=")


@dataclass(slots=True)
class Port:
    """A port as written: ``dims`` holds the text of each ``<dim>`` (stripped), ``dim_lines`` their lines."""

    id: str | None
    precision: str | None
    dims: tuple[str, ...]
    dim_lines: tuple[int | None, ...]
    line: int | None
    names: str | None = None

    @property
    def label(self) -> str:
        return f"port {self.id}" if self.id is not None else "port (no id)"


@dataclass(slots=True)
class Layer:
    id: str | None
    name: str | None
    type: str | None
    version: str | None
    line: int | None
    data: dict[str, str] = field(default_factory=dict)
    data_line: int | None = None
    inputs: list[Port] = field(default_factory=list)
    outputs: list[Port] = field(default_factory=list)
    rt_info: dict[str, str] = field(default_factory=dict)
    # a TensorIterator's or Loop's: its <body> (None: none written), <port_map> entries (None: no
    # <port_map>) and <back_edges> (None: none); ``parent`` is the layer whose body holds this one
    body: Body | None = None
    port_map: list[MapEntry] | None = None
    back_edges: list[Edge] | None = None
    parent: Layer | None = field(default=None, repr=False)

    @property
    def label(self) -> str:
        parts = ["layer"]
        if self.id is not None:
            parts.append(self.id)
        if self.name is not None:
            parts.append(f"'{self.name}'")
        elif self.type is not None and self.id is None:
            parts.append(f"<{self.type}>")
        if self.parent is not None:
            parts.append(f"in the body of {self.parent.label}")
        return " ".join(parts)

    def port(self, port_id: str) -> tuple[str, Port] | None:
        """Find a port by id: ("input" or "output", port)."""
        for side, ports in (("input", self.inputs), ("output", self.outputs)):
            for port in ports:
                if port.id == port_id:
                    return side, port
        return None


@dataclass(slots=True)
class Edge:
    from_layer: str | None
    from_port: str | None
    to_layer: str | None
    to_port: str | None
    line: int | None


@dataclass(slots=True)
class MapEntry:
    """An <input> or <output> of a TensorIterator's or Loop's <port_map>: its attributes as written."""

    kind: str  # "input" or "output"
    attributes: dict[str, str]
    line: int | None


@dataclass(slots=True)
class Body:
    """A TensorIterator's or Loop's <body>: its own layers and edges (None: no <layers> in it)."""

    layers: list[Layer] | None
    edges: list[Edge]
    line: int | None


class SourceLines(Sequence[bytes]):
    """The lines of a file, split when first asked for: only diagnostics need them."""

    __slots__ = ("_data", "_lines")

    def __init__(self, data: bytes):
        self._data = data
        self._lines: list[bytes] | None = None

    def _split(self) -> list[bytes]:
        if self._lines is None:
            self._lines = self._data.split(b"\n")
        return self._lines

    def __len__(self) -> int:
        return len(self._split())

    def __getitem__(self, index):
        return self._split()[index]

    def __bool__(self) -> bool:
        return True  # as the list of a split, which always holds at least one line

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (SourceLines, list)) else NotImplemented

    def __repr__(self) -> str:
        return f"SourceLines({len(self._data)} bytes)"


@dataclass(slots=True)
class IRModel:
    """A whole ``<net>``, or a lone ``<layer>`` pasted from a spec page (``kind`` "layer")."""

    path: str
    kind: str
    layers: list[Layer]
    edges: list[Edge] = field(default_factory=list)
    name: str | None = None
    ir_version: str | None = None
    line: int | None = None
    rt_info: dict[str, str] = field(default_factory=dict)
    source_lines: Sequence[bytes] = field(default_factory=list, repr=False)
    # <layer> elements outside any <layers>, <edge> outside any <edges>: (tag, line, id), which OpenVINO ignores
    strays: list[tuple[str, int | None, str | None]] = field(default_factory=list)
    # what the reading found: (code, message, line, column), e.g. an encoding OpenVINO does not decode
    notices: list[tuple[str, str, int | None, int | None]] = field(default_factory=list)
    _lines: dict[int, _LineIndex] = field(default_factory=dict, repr=False, compare=False)
    _found: dict[tuple[int, str], tuple[int | None, int | None]] = field(default_factory=dict, repr=False,
                                                                          compare=False)

    @property
    def is_net(self) -> bool:
        return self.kind == "net"

    def locate(self, line: int | None, token: str, after: int = 1, nth: int = 0) -> tuple[int | None, int | None]:
        """The line and 1-based column where ``token`` (``<layer``, ``hidden_size=``, ``<``) starts:
        its ``nth`` occurrence (from 0) at or after column ``after`` of the line, so that each of
        several elements on one line (``<dim>2</dim><dim>3</dim>``) has its own column.

        lxml reports the line where a start tag ends; a tag spread over several lines
        starts earlier, so search back a few lines for the token.  Each line is decoded once
        and each token searched on it once (see _LineIndex): a one-line file with 30,000
        findings would otherwise be searched and decoded from its start 30,000 times.
        """
        if line is None or not self.source_lines:
            return line, None
        key = (line, token, after, nth)
        found = self._found.get(key)
        if found is None:
            if len(self._found) > 65536:
                self._found.clear()
            found = self._found[key] = self._locate(line, token, after, nth)
        return found

    def _locate(self, line: int, token: str, after: int, nth: int) -> tuple[int | None, int | None]:
        for candidate in range(line, max(line - 20, 0), -1):
            if candidate > len(self.source_lines):
                continue
            index = self._line(candidate)
            column = index.column(token, after, nth) if candidate == line else index.column(token)
            if column is None and candidate == line and (after, nth) != (1, 0):
                column = index.column(token)  # the anchor was misjudged: the first occurrence, as before
            if column is not None:
                return candidate, column
        return line, None

    def _line(self, number: int) -> _LineIndex:
        index = self._lines.get(number)
        if index is None:
            if len(self._lines) > 4096:
                self._lines.clear()
            index = self._lines[number] = _LineIndex(self.source_lines[number - 1].decode("utf-8", "replace"))
        return index


class _LineIndex:
    """The columns of tokens on one line, each token's found once: by a search for each of the
    first few tokens asked, then (a line asked for many: 100,000 attributes of one element) by
    one pass that indexes every tag and attribute name on it."""

    __slots__ = ("text", "columns", "searches", "indexed")
    SEARCHES = 64

    def __init__(self, text: str):
        self.text = text
        self.columns: dict[str, list[int]] = {}  # token -> the 1-based columns where it starts, ascending
        self.searches = 0
        self.indexed = False

    def column(self, token: str, after: int = 1, nth: int = 0) -> int | None:
        """1-based column of the token's ``nth`` occurrence (from 0), as a tag or an attribute name,
        at or after column ``after``; None if there is none."""
        columns = self._columns(token)
        at = bisect_left(columns, after) + nth
        return columns[at] if at < len(columns) else None

    def _columns(self, token: str) -> list[int]:
        found = self.columns.get(token)
        if found is not None:
            return found
        if self.indexed:
            return []
        if self.searches >= self.SEARCHES:
            self._index()
            return self.columns.get(token, [])
        self.searches += 1
        if token == "<":
            pattern = "<"
        else:
            pattern = (r"(?<![\w.:-])" + re.escape(token[:-1]) + r"\s*=" if token.endswith("=")
                       else re.escape(token) + r"(?![\w.:-])")
        found = self.columns[token] = [match.start() + 1 for match in re.finditer(pattern, self.text)]
        return found

    def _index(self) -> None:
        columns: dict[str, list[int]] = {}
        for match in _TOKEN.finditer(self.text):
            columns.setdefault(match.group(1) or match.group(2) + "=", []).append(match.start() + 1)
        columns["<"] = [match.start() + 1 for match in re.finditer("<", self.text)]
        self.columns = columns
        self.indexed = True
