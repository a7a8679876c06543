"""Activation functions of the RNN op family, applied in place.

OpenVINO's RNN ops accept relu, sigmoid and tanh; ONNX's GRU/LSTM/RNN also list affine,
leakyrelu, thresholdedrelu, scaledtanh, hardsigmoid, elu, softsign and softplus, which take
``activations_alpha`` / ``activations_beta``.  Names are matched case-insensitively, as
OpenVINO lower-cases them when it builds the op.

Alpha and beta are positional, as in OpenVINO (``RNNCellBase::get_activation_function``):
``activations_alpha[k]`` belongs to ``activations[k]``; a list too short to reach position k
leaves activation k its ONNX default.  (onnxruntime instead consumes the lists sequentially,
only for the functions that take a parameter; ``onnx_interop`` converts between the two.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

InPlace = Callable[[np.ndarray, np.ndarray, float, float], None]


def _relu(x: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> None:
    np.maximum(x, 0, out=out)


def _tanh(x: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> None:
    np.tanh(x, out=out)


def _half_tanh_sigmoid(x: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> None:
    """sigmoid(2x) = 0.5 * tanh(x) + 0.5: the caller has already halved the argument."""
    np.tanh(x, out=out)
    np.multiply(out, 0.5, out=out)
    np.add(out, 0.5, out=out)


def _affine(x: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> None:
    np.multiply(x, alpha, out=out)
    np.add(out, beta, out=out)


def _leaky_relu(x: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> None:
    negative = x < 0
    np.copyto(out, x)
    np.multiply(out, alpha, out=out, where=negative)


def _thresholded_relu(x: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> None:
    below = x < alpha
    np.copyto(out, x)
    out[below] = 0


def _scaled_tanh(x: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> None:
    np.multiply(x, beta, out=out)
    np.tanh(out, out=out)
    np.multiply(out, alpha, out=out)


def _hard_sigmoid(x: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> None:
    _affine(x, out, alpha, beta)
    np.clip(out, 0, 1, out=out)


def _elu(x: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> None:
    negative = x < 0
    np.copyto(out, x)
    np.expm1(out, out=out, where=negative)
    np.multiply(out, alpha, out=out, where=negative)


def _softsign(x: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> None:
    denominator = np.abs(x)
    denominator += 1
    np.divide(x, denominator, out=out)


def _softplus(x: np.ndarray, out: np.ndarray, alpha: float, beta: float) -> None:
    np.logaddexp(x, 0, out=out)


_NO_DEFAULT = None


@dataclass(frozen=True)
class _Kind:
    """One activation function: its in-place kernel and what parameters it takes."""

    kernel: InPlace
    takes_alpha: bool = False
    takes_beta: bool = False
    default_alpha: float | None = _NO_DEFAULT
    default_beta: float | None = _NO_DEFAULT
    input_scale: float = 1.0  # the kernel expects its argument multiplied by this (exactly)


# Defaults are those of the ONNX operators of the same name (Affine 1/0, LeakyRelu 0.01,
# ThresholdedRelu 1, HardSigmoid 0.2/0.5, Elu 1); ScaledTanh has none there, so its
# parameters must be given.
KINDS: dict[str, _Kind] = {
    "relu": _Kind(_relu),
    "tanh": _Kind(_tanh),
    "sigmoid": _Kind(_half_tanh_sigmoid, input_scale=0.5),
    "affine": _Kind(_affine, True, True, 1.0, 0.0),
    "leakyrelu": _Kind(_leaky_relu, True, False, 0.01),
    "thresholdedrelu": _Kind(_thresholded_relu, True, False, 1.0),
    "scaledtanh": _Kind(_scaled_tanh, True, True),
    "hardsigmoid": _Kind(_hard_sigmoid, True, True, 0.2, 0.5),
    "elu": _Kind(_elu, True, False, 1.0),
    "softsign": _Kind(_softsign),
    "softplus": _Kind(_softplus),
}
OPENVINO_ACTIVATIONS = ("relu", "sigmoid", "tanh")


@dataclass(frozen=True)
class Activation:
    """An activation function bound to its alpha and beta.

    ``input_scale`` is an exact power of two (0.5 for sigmoid): the recurrence multiplies the
    weights and biases of a gate by it once, up front, and ``apply_scaled`` then takes the
    scaled argument, which saves a pass over the gates at every step.  ``apply`` takes the
    plain argument.
    """

    name: str
    alpha: float
    beta: float
    kernel: InPlace
    input_scale: float

    def apply_scaled(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Activation of ``x / input_scale``, written to ``out`` (default: in place)."""
        target = x if out is None else out
        self.kernel(x, target, self.alpha, self.beta)
        return target

    def apply(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Activation of ``x``, written to ``out`` (default: in place)."""
        target = x if out is None else out
        if self.input_scale != 1.0:
            np.multiply(x, self.input_scale, out=target)
            x = target
        self.kernel(x, target, self.alpha, self.beta)
        return target


def _parameter(values: Sequence[float], index: int, default: float | None,
               attribute: str, name: str) -> float:
    if index < len(values):
        return float(values[index])
    if default is None:
        raise ValueError(
            f"activations[{index}] is {name!r}, which has no default for its parameter: "
            f"{attribute} needs a value at position {index}")
    return default


def resolve(names: Sequence[str], alphas: Sequence[float] = (), betas: Sequence[float] = ()) -> list[Activation]:
    """Bind activation names (any case) to their kernels and positional alpha/beta."""
    for attribute, values in (("activations_alpha", alphas), ("activations_beta", betas)):
        if len(values) > len(names):
            raise ValueError(f"{attribute} has {len(values)} values for {len(names)} activations; "
                             f"expected at most {len(names)} (one per activation, by position)")
    resolved = []
    for index, raw in enumerate(names):
        name = str(raw).strip().lower()
        kind = KINDS.get(name)
        if kind is None:
            raise ValueError(f"activations[{index}] is {raw!r}; expected one of {', '.join(KINDS)}")
        alpha = _parameter(alphas, index, kind.default_alpha, "activations_alpha", name) if kind.takes_alpha else 0.0
        beta = _parameter(betas, index, kind.default_beta, "activations_beta", name) if kind.takes_beta else 0.0
        resolved.append(Activation(name, alpha, beta, kind.kernel, kind.input_scale))
    return resolved
