"""What ``irtool run`` is asked to do (:class:`RunOptions`), apart from the pipeline that does it:
``irtool run --openvino ...`` checks its options with it before any release is made, without
importing the pipeline (irtool.pipeline.run) that each release's own process runs."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from irtool.core.errors import RunError
from irtool.judge.compare import TolerancePolicy


@dataclass(frozen=True)
class RunOptions:
    model: Path
    device: str
    precision: str = "f32"
    precision_given: bool = True  # False: the CLI's default (a replay then takes the record's)
    inputs: Path | None = None
    seed: int | None = None  # of the generated inputs; None: not given (0, or in a replay the record's)
    save_outputs: Path | None = None
    tolerance: TolerancePolicy = field(default_factory=TolerancePolicy)
    config: Mapping[str, str] = field(default_factory=dict)
    compare_with: tuple[str, str] | None = None  # (device, precision)
    oracle: str | None = None  # --compare-with onnxruntime|tflite|tensorflow|paddle: the framework's runtime
    fill_defaults: bool = False
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # --shape NAME=[...]
    sizes: Mapping[str, int] = field(default_factory=dict)  # batch_size, seq_length for dynamic dims
    reproducers: Path | None = None  # a folder for one reproducer per failing node
    expected: Path | None = None  # an .npz of the model's expected outputs (keyed as --save-outputs writes them)
    device_outputs: Path | None = None  # replay: outputs the device gave elsewhere (--save-outputs), judged here

    def __post_init__(self) -> None:
        for name, size in self.sizes.items():
            if not (isinstance(size, int) and size >= 1):
                raise RunError(f"--{name.replace('_size', '').replace('_', '-')} {size}: expected a whole number >= 1")
