"""IR files: safe lxml parsing into an IRModel. The only package that imports lxml.

May import specs and core; never reference (a sibling) or a layer above.
"""
from irtool.ir.model import Body, Edge, IRModel, Layer, MapEntry, Port
from irtool.ir.parse import DEFAULT_MAX_BYTES, IRParseError, make_parser, parse_ir, parse_ir_bytes, read_ir_bytes

__all__ = ["Body", "DEFAULT_MAX_BYTES", "Edge", "MapEntry", "IRModel", "IRParseError", "Layer", "Port", "make_parser",
           "parse_ir", "parse_ir_bytes", "read_ir_bytes"]
