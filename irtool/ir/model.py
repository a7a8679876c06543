"""The parsed IR: layers, ports, dims and edges as written, each with its source line.

Values are kept as the text the file holds; the validator reads them against the specs,
so one unreadable dim or attribute becomes a diagnostic instead of a parse failure.
"""
from __future__ import annotations

import re
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

    @property
    def label(self) -> str:
        parts = ["layer"]
        if self.id is not None:
            parts.append(self.id)
        if self.name is not None:
            parts.append(f"'{self.name}'")
        elif self.type is not None and self.id is None:
            parts.append(f"<{self.type}>")
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
    _token_columns: dict[int, dict[str, int]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def is_net(self) -> bool:
        return self.kind == "net"

    def locate(self, line: int | None, token: str) -> tuple[int | None, int | None]:
        """The line and 1-based column where ``token`` (``<layer``, ``hidden_size=``, ``<``) starts.

        lxml reports the line where a start tag ends; a tag spread over several lines
        starts earlier, so search back a few lines for the token.  Each line is read once,
        into the columns of every tag and attribute name on it: a one-line file with
        30,000 findings would otherwise be searched (and decoded) from its start 30,000 times.
        """
        if line is None or not self.source_lines:
            return line, None
        for candidate in range(line, max(line - 20, 0), -1):
            if candidate > len(self.source_lines):
                continue
            column = self._tokens(candidate).get(token)
            if column is not None:
                return candidate, column
        return line, None

    def _tokens(self, line: int) -> dict[str, int]:
        """Token -> 1-based column of its first occurrence on a line, for every token locate takes."""
        tokens = self._token_columns.get(line)
        if tokens is None:
            text = self.source_lines[line - 1].decode("utf-8", "replace")
            tokens = {}
            for match in _TOKEN.finditer(text):
                key = match.group(1) or match.group(2) + "="
                if key not in tokens:
                    tokens[key] = match.start() + 1
            first = text.find("<")
            if first >= 0:
                tokens.setdefault("<", first + 1)
            if len(self._token_columns) > 4096:
                self._token_columns.clear()
            self._token_columns[line] = tokens
        return tokens
