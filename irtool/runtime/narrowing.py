"""Model inputs a device narrows before any node receives them: measured on the device, never assumed.

OpenVINO's CPU plugin computes int64 and uint64 as int32 (and float64 as float32): an int64
sequence_lengths of 2^32+3 reaches the node as 3 (measured with openvino 2026.4.1; values wrap
as numpy's cast does).  A value such a type holds exactly changes nothing; one it does not
(beyond int32, or a float64 that float32 rounds) is what the node never receives.  What a
device does is measured once per device and type with a model of one Add: an input that
comes back changed is narrowed.  :func:`received` gives the inputs as the device's nodes
receive them (so a node fed straight by such an input is judged on what it received) and
names each narrowing, for the verdict to say.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

import numpy as np

# A wide type, and the type a device may compute it in instead.
NARROWER = {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.int32),
            np.dtype(np.float64): np.dtype(np.float32)}


@dataclass(frozen=True)
class Narrowing:
    """An input the device received changed: its type, the type it ran as, a value and what it became."""

    input: str
    dtype: str
    ran_as: str
    given: object
    became: object
    count: int  # the input's values that changed

    def says(self, device: str) -> str:
        more = f" and {self.count - 1} more" if self.count > 1 else ""
        return (f"{device} runs input {self.input} ({self.dtype}) as {self.ran_as}: {self.given} became "
                f"{self.became}{more}; nodes are judged on the values they received")


def received(device: str, inputs: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], tuple[Narrowing, ...]]:
    """The inputs the device changes before its nodes receive them, as they receive them, and what
    changed; nothing where the device computes the input's own type, or its values fit the narrower one."""
    changed: dict[str, np.ndarray] = {}
    said = []
    for name, array in inputs.items():
        narrow = NARROWER.get(array.dtype)
        if narrow is None or array.size == 0:
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            view = array.astype(narrow).astype(array.dtype)
        same = (view == array) | (np.isnan(view) & np.isnan(array)) if array.dtype.kind == "f" else view == array
        differs = ~same
        if not differs.any() or not device_narrows(device, array.dtype.name):
            continue
        changed[name] = view
        first = int(np.flatnonzero(differs)[0])
        said.append(Narrowing(name, array.dtype.name, narrow.name, array.reshape(-1)[first].item(),
                              view.reshape(-1)[first].item(), int(differs.sum())))
    return changed, tuple(said)


@lru_cache(maxsize=64)
def device_narrows(device: str, dtype: str) -> bool:
    """Whether ``device`` computes ``dtype`` inputs in the narrower type (as numpy's cast makes them):
    an Add of two values that type holds and the narrower one does not, compiled and inferred."""
    import openvino as ov
    import openvino.opset1 as ops

    from irtool.runtime.core import core

    wide = np.dtype(dtype)
    values, step = {"f": (np.array([1 + 2.0 ** -30, 1 / 3], wide), 2.0 ** -30)}.get(
        wide.kind, (np.array([2 ** 32 + 3, 2 ** 31], wide), 1))
    parameter = ops.parameter([2], wide, name="x")
    model = ov.Model([ops.add(parameter, ops.constant(np.array([step], wide)))], [parameter], "narrowing")
    try:
        out = np.asarray(core().compile_model(model, device)({"x": values})[0])
    except RuntimeError:  # a device that cannot run the probe: nothing known, nothing said
        return False
    return not np.array_equal(out, values + np.array(step, wide))
