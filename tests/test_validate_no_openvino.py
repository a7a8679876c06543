"""`irtool validate` must not import openvino unless --with-openvino asks for it.

Importing openvino costs more than validating a large file, and starts thread pools;
the CLI imports the library lazily so that `validate` stays light.  Each case runs in a
fresh interpreter, since this test process has imported openvino long ago.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "ir"

PROBE = """\
import sys, irtool.cli.program
rc = irtool.cli.program.main(sys.argv[1:])
print(f"rc={rc} openvino={'openvino' in sys.modules} lxml={'lxml.etree' in sys.modules}", file=sys.stderr)
"""


def probe(*argv: str) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("argv, rc", [
    (["validate", str(SAMPLES / "valid")], 0),
    (["validate", "--format", "json", str(SAMPLES / "broken")], 1),
    (["validate", "--format", "sarif", str(SAMPLES / "spec-examples")], 1),
], ids=["valid text", "broken json", "spec examples sarif"])
def test_validate_does_not_import_openvino(argv, rc):
    assert probe(*argv) == f"rc={rc} openvino=False lxml=True"


def test_with_openvino_does_import_it():
    """The probe can see openvino when it is imported: the negative above is not vacuous."""
    assert probe("validate", "--with-openvino", str(SAMPLES / "valid" / "gru_cell.xml")) == \
        "rc=0 openvino=True lxml=True"
