"""The error of reduce's own input: a case it cannot start from, or a criterion it cannot read."""
from __future__ import annotations

from irtool.core.errors import IrtoolError


class ReduceError(IrtoolError):
    """A case that reduce cannot start from (or a criterion it cannot read)."""
