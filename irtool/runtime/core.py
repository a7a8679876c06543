"""The one OpenVINO Core of a process, and OpenVINO's error text made into one line."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import openvino as ov

_SOURCE = re.compile(r"Exception from \S+:\d+:\s*")  # where in OpenVINO's sources, inside a line
_NODE = re.compile(r"^While validating node '.*' with friendly_name '([^']*)':$")
# a plugin's install path says nothing to the user (openvino 2026 quotes it with ", 2025 with ')
_LIBRARY_PATH = re.compile(r"""(["'])/[^"']*/([^/"']+)\1""")


def openvino_message(error: BaseException) -> str:
    """What an OpenVINO exception says is wrong, on one line, without its source locations."""
    lines = [_LIBRARY_PATH.sub(r'"\2"', line.strip()) for line in str(error).splitlines() if line.strip()]
    useful = [_SOURCE.sub("", _NODE.sub(r"layer '\1':", line)).strip() for line in lines
              if not line.startswith(("Exception from", "Check '"))]
    if any(useful):
        return " ".join(filter(None, useful))
    return lines[-1] if lines else type(error).__name__


@lru_cache(maxsize=1)
def core() -> "ov.Core":
    """One OpenVINO Core per process: creating one loads the plugin registry."""
    import openvino as ov

    return ov.Core()



def openvino_version() -> str:
    import openvino as ov

    return ov.get_version()


def installed_openvino() -> tuple[str | None, str]:
    """(openvino's full version, "") when it imports, else (None, why not): missing, or broken (a
    library it needs, a half-removed install), which ``irtool --version`` says instead of failing."""
    try:
        return openvino_version(), ""
    except Exception as error:  # whatever importing it raised is the answer
        return None, f"{type(error).__name__}: {error}"


def release_label(version: str) -> str:
    """``2026.4.1-22982-e213a147257-releases/2026/4`` -> ``2026.4.1``: what results and reports call a release."""
    return version.split("-")[0]


def openvino_release() -> str:
    """The release this process's openvino is, as results name it: ``2026.4.1``."""
    return release_label(openvino_version())
