"""Activation functions of the RNN op family, applied in place.

OpenVINO's RNN ops accept relu, sigmoid and tanh; ONNX's GRU/LSTM/RNN also list affine,
leakyrelu, thresholdedrelu, scaledtanh, hardsigmoid, elu, softsign and softplus, which take
``activations_alpha`` / ``activations_beta``.  Names are matched case-insensitively, as
OpenVINO lower-cases them when it builds the op.

Alpha and beta are positional, as in OpenVINO (``RNNCellBase::get_activation_function``):
``activations_alpha[k]`` belongs to ``activations[k]``; a list too short to reach position k
leaves activation k its ONNX default.  (onnxruntime instead consumes the lists sequentially,
only for the functions that take a parameter; ``irtool.onnx.semantics`` converts between the two.)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from irtool.core.errors import InputError, did_you_mean

Kernel = Callable[[np.ndarray, np.ndarray], None]  # (x, out); out may be x
KernelFactory = Callable[[float, float], Kernel]   # (alpha, beta) -> kernel

# 0-d arrays: cheaper per ufunc call than Python or numpy scalars, exact in any float dtype,
# and never widen a float32 computation.
_HALF, _ONE = np.array(0.5, dtype=np.float32), np.array(1.0, dtype=np.float32)


def _relu(alpha: float, beta: float) -> Kernel:
    return lambda x, out: np.maximum(x, 0, out=out)


def _tanh(alpha: float, beta: float) -> Kernel:
    return lambda x, out: np.tanh(x, out)


def _half_tanh_sigmoid(alpha: float, beta: float) -> Kernel:
    """sigmoid(2x) = 0.5 * tanh(x) + 0.5: the caller has already halved the argument."""
    def kernel(x: np.ndarray, out: np.ndarray) -> None:
        np.tanh(x, out)
        np.multiply(out, _HALF, out)
        np.add(out, _HALF, out)
    return kernel


def _affine(alpha: float, beta: float) -> Kernel:
    def kernel(x: np.ndarray, out: np.ndarray) -> None:
        np.multiply(x, alpha, out)
        np.add(out, beta, out)
    return kernel


def _leaky_relu(alpha: float, beta: float) -> Kernel:
    def kernel(x: np.ndarray, out: np.ndarray) -> None:
        negative = x < 0
        np.copyto(out, x)
        np.multiply(out, alpha, out, where=negative)
    return kernel


def _thresholded_relu(alpha: float, beta: float) -> Kernel:
    """ONNX's RNN pages: x if x >= alpha else 0."""
    def kernel(x: np.ndarray, out: np.ndarray) -> None:
        below = x < alpha
        np.copyto(out, x)
        out[below] = 0
    return kernel


def _scaled_tanh(alpha: float, beta: float) -> Kernel:
    def kernel(x: np.ndarray, out: np.ndarray) -> None:
        np.multiply(x, beta, out)
        np.tanh(out, out)
        np.multiply(out, alpha, out)
    return kernel


def _hard_sigmoid(alpha: float, beta: float) -> Kernel:
    affine = _affine(alpha, beta)

    def kernel(x: np.ndarray, out: np.ndarray) -> None:
        affine(x, out)
        np.clip(out, 0, 1, out=out)
    return kernel


def _elu(alpha: float, beta: float) -> Kernel:
    def kernel(x: np.ndarray, out: np.ndarray) -> None:
        negative = x < 0
        np.copyto(out, x)
        np.expm1(out, out, where=negative)
        np.multiply(out, alpha, out, where=negative)
    return kernel


def _softsign(alpha: float, beta: float) -> Kernel:
    def kernel(x: np.ndarray, out: np.ndarray) -> None:
        denominator = np.abs(x)
        np.add(denominator, _ONE, denominator)
        np.divide(x, denominator, out)
    return kernel


def _softplus(alpha: float, beta: float) -> Kernel:
    return lambda x, out: np.logaddexp(x, 0, out)


@dataclass(frozen=True)
class _Kind:
    """One activation function: its kernel factory and what parameters it takes."""

    factory: KernelFactory
    takes_alpha: bool = False
    takes_beta: bool = False
    default_alpha: float | None = None  # None: no default, the value must be given
    default_beta: float | None = None
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


@dataclass(frozen=True)
class Activation:
    """An activation function bound to its alpha and beta.

    ``input_scale`` is an exact power of two (0.5 for sigmoid): the recurrence multiplies the
    weights and biases of a gate by it once, up front, and ``scaled(x, out)`` then takes the
    scaled argument, which saves a pass over the gates at every step.  ``apply`` takes the
    plain argument.
    """

    name: str
    alpha: float
    beta: float
    scaled: Kernel
    input_scale: float

    def apply(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Activation of ``x``, written to ``out`` (default: in place)."""
        target = x if out is None else out
        if self.input_scale != 1.0:
            np.multiply(x, np.array(self.input_scale, dtype=np.float32), target)
            x = target
        self.scaled(x, target)
        return target


def _parameter(values: Sequence[float], index: int, default: float | None,
               attribute: str, name: str) -> float:
    if index < len(values):
        return float(values[index])
    if default is None:
        raise InputError(
            f"activations[{index}] is {name!r}, which has no default for its parameter: "
            f"{attribute} needs a value at position {index}")
    return default


def resolve(names: Sequence[str], alphas: Sequence[float] = (), betas: Sequence[float] = ()) -> list[Activation]:
    """Bind activation names (any case) to their kernels and positional alpha/beta."""
    for attribute, values in (("activations_alpha", alphas), ("activations_beta", betas)):
        if len(values) > len(names):
            raise InputError(f"{attribute} has {len(values)} values for {len(names)} activations; "
                             f"expected at most {len(names)} (one per activation, by position)")
    resolved = []
    for index, raw in enumerate(names):
        name = str(raw).strip().lower()
        kind = KINDS.get(name)
        if kind is None:
            raise InputError(f"activations[{index}] is {raw!r}{did_you_mean(name, KINDS)}; "
                             f"expected one of {', '.join(KINDS)}")
        alpha = _parameter(alphas, index, kind.default_alpha, "activations_alpha", name) if kind.takes_alpha else 0.0
        beta = _parameter(betas, index, kind.default_beta, "activations_beta", name) if kind.takes_beta else 0.0
        resolved.append(Activation(name, alpha, beta, kind.factory(alpha, beta), kind.input_scale))
    return resolved
