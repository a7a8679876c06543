"""A file's bytes as OpenVINO's reader (pugixml) decodes them, measured with openvino 2026.4.1.

pugixml tells UTF-32 and UTF-16 by a byte order mark or by markup whose bytes are zero around
``<``, and decodes them.  Of the encodings an 8-bit file may declare it decodes ISO-8859-1 only,
declared exactly ``ISO-8859-1`` or ``latin1`` in any case; every other declaration (``latin-1``,
``ISO-8859-2``, ``windows-1252``, ``ISO-8859-1 `` with a space) leaves the bytes as they are, read
as UTF-8, so a name or value past ASCII is not what the file says, and bytes that are not UTF-8
make OpenVINO's Python API fail on the name.  irtool decodes the file as it declares (with Python's
codecs: libxml2 knows fewer names), and reports (IR006) a file whose bytes OpenVINO reads otherwise;
a name no codec has is read as UTF-8, as OpenVINO reads it.
"""
from __future__ import annotations

import codecs
import re

_DECLARATION = re.compile(rb"""^(?:\xef\xbb\xbf)?<\?xml[^>]*?encoding\s*=\s*(["'])([^"']*)\1""")
_DECLARED_ENCODING = re.compile(rb"""^(<\?xml[^>]*?encoding\s*=\s*)(["'])[^"']*\2""")
_PAST_ASCII = re.compile(rb"[\x80-\xff]")
_PUGIXML_LATIN1 = {"iso-8859-1", "latin1"}  # compared lowered, as written: no space, no other alias

Notice = tuple  # (code, message, line, column)


class EncodingError(ValueError):
    """Bytes that start as UTF-16 or UTF-32 and are not."""


def as_utf8(data: bytes) -> tuple[bytes, list[Notice]]:
    """The file as UTF-8 XML, its declaration saying so, with what OpenVINO reads otherwise (IR006).

    A UTF-32 or UTF-16 file is decoded (OpenVINO reads it).  An 8-bit file that declares another
    encoding than UTF-8 is decoded by irtool as it declares (libxml2 knows fewer names than Python:
    ``latin-1``), or, where the name is no encoding irtool knows, read as UTF-8 as OpenVINO reads it.
    Lines stay where they were.  EncodingError for bytes the declared encoding does not hold."""
    encoding = _wide_encoding(data)
    if encoding is not None:
        return _transcoded(data, encoding, f"the file starts as {encoding.upper()[:6]}"), []
    match = _DECLARATION.match(data)
    if match is None:
        return data, []
    declared = match.group(2).decode("ascii", "replace")
    if _is_utf8(declared):
        return data, []
    first = _PAST_ASCII.search(data, match.end())
    known = _ascii_compatible(declared)
    if first is None or not known:  # read as UTF-8, as OpenVINO reads it
        as_read = _DECLARED_ENCODING.sub(rb'\1"UTF-8"', data, count=1)
        if first is None:
            return as_read, []
        return as_read, [_notice(data, first.start(), f"the file declares encoding {declared!r}, which neither "
                                                   f"OpenVINO's reader nor irtool decodes: both read the bytes as UTF-8, "
                                                   f"and bytes past ASCII, the first here, may not be what the file means")]
    text = _transcoded(data, known, f"the file declares encoding {declared!r}")
    if declared.lower() in _PUGIXML_LATIN1:
        return text, []
    return text, [_notice(data, first.start(), f"the file declares encoding {declared!r}, which OpenVINO's reader "
                                               f"does not decode (it decodes UTF-8, UTF-16, UTF-32 and ISO-8859-1 "
                                               f"declared as 'ISO-8859-1' or 'latin1'): it reads the bytes as UTF-8, "
                                               f"so names and values past ASCII, the first here, read otherwise than "
                                               f"the file says")]


def _transcoded(data: bytes, encoding: str, what: str) -> bytes:
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise EncodingError(f"{what}, but byte {error.start} is not {encoding}") from None
    return _DECLARED_ENCODING.sub(rb'\1"UTF-8"', text.lstrip("\ufeff").encode("utf-8"), count=1)


def _notice(data: bytes, offset: int, message: str) -> Notice:
    return ("IR006", message, *place(data, offset))


def place(data: bytes, offset: int) -> tuple[int, int]:
    """The line and column (both from 1) of byte ``offset`` of ``data``."""
    return data.count(b"\n", 0, offset) + 1, offset - data.rfind(b"\n", 0, offset)


def _ascii_compatible(name: str) -> str | None:
    """Python's codec of this name if it writes ASCII as ASCII (not UTF-16, not EBCDIC), else None."""
    try:
        codec = codecs.lookup(name)
        return codec.name if "<?xml encoding\n".encode(codec.name) == b"<?xml encoding\n" else None
    except (LookupError, UnicodeError):
        return None


def _wide_encoding(data: bytes) -> str | None:
    head = data[:16]
    if head[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):  # before UTF-16's, which begins the same
        return "utf-32"
    if head[:1] == b"<" and head[1:4] == b"\x00\x00\x00":
        return "utf-32-le"
    if head[:4] == b"\x00\x00\x00<":
        return "utf-32-be"
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    if head[:1] == b"<" and head[1:8:2] == b"\x00" * 4:
        return "utf-16-le"
    if head[1:2] == b"<" and head[0:8:2] == b"\x00" * 4:
        return "utf-16-be"
    return None


def _is_utf8(name: str) -> bool:
    try:
        return codecs.lookup(name).name == "utf-8"
    except LookupError:
        return False
