"""What the validator's tests compare with: OpenVINO's own verdict on an IR file."""
from __future__ import annotations

from pathlib import Path


def openvino_reads(path: Path) -> bool:
    """Core.read_model's verdict (the IR frontend alone reads a <net> without version; read_model
    does not, since no frontend then claims the file)."""
    import openvino as ov

    try:
        ov.Core().read_model(str(path))
    except RuntimeError:  # OpenVINO's verdict is whether it raises
        return False
    return True
