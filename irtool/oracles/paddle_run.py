"""Paddle Inference as an oracle of a .pdmodel (with its .pdiparams beside it).  The one module that
imports paddle."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from irtool.oracles.common import not_installed, refused


def _inference() -> Any | None:
    os.environ.setdefault("GLOG_minloglevel", "3")  # its C++ log lines would reach the terminal
    try:
        import warnings

        with warnings.catch_warnings():  # paddle warns at import of tools it looks for (ccache)
            warnings.simplefilter("ignore")
            import paddle
            import paddle.inference
    except ImportError:
        return None
    return paddle


def available() -> str | None:
    """Paddle's version ("paddlepaddle 3.3.1"), or None where it is not installed."""
    paddle = _inference()
    return f"paddlepaddle {paddle.__version__}" if paddle is not None else None


def run_paddle(path: str | Path, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The model's outputs by name (the names OpenVINO's Paddle frontend gives them), run by Paddle
    Inference on CPU on ``feeds`` (by input name)."""
    paddle = _inference()
    if paddle is None:
        raise not_installed("paddle", "Paddle Inference (paddlepaddle)")
    path = Path(path)
    try:
        config = paddle.inference.Config(str(path), str(path.with_suffix(".pdiparams")))
        config.disable_gpu()
        config.disable_glog_info()
        config.set_cpu_math_library_num_threads(1)
        predictor = paddle.inference.create_predictor(config)
        for name in predictor.get_input_names():
            if name not in feeds:
                raise ValueError(f"no value for its input {name}")
            predictor.get_input_handle(name).copy_from_cpu(np.ascontiguousarray(feeds[name]))
        predictor.run()
        return {name: predictor.get_output_handle(name).copy_to_cpu() for name in predictor.get_output_names()}
    except (RuntimeError, ValueError, OSError) as error:
        raise refused(error) from None
