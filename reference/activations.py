"""Fused activations of DML_MEAN_VARIANCE_NORMALIZATION1 ("FusedActivation"), in float64.

Each formula is the one on the activation's own DirectML page (DML_ACTIVATION_<NAME>_OPERATOR_DESC,
learn.microsoft.com/windows/win32/api/directml/); where a numerically safer identity is used, the comment says which.

* The parameters are ``FLOAT`` fields of the DML descriptors, so each is rounded to float32 before use: the value
  the operator actually receives (``{"alpha": 0.1}`` means alpha = float32(0.1)).
* Defaults, when a parameter is omitted, are the project-wide table (``conformance/model.py`` ACTIVATION_PARAMS,
  duplicated in ``ACTIVATION_PARAMS`` below because ``reference`` depends on nothing but NumPy).
  DirectML's own pages suggest other "typical defaults" for two of them: SCALED_TANH Beta 0.5 (table: 1.0) and
  HARD_SWISH Alpha 0.2 (table: 1/6, ONNX HardSwish's constant); the table wins, cases can always set them.
* NaN propagates through arithmetic; where a page defines a piece by a comparison ("if x > Alpha"), a NaN input
  takes the "otherwise" branch, exactly as the comparison reads (THRESHOLDED_RELU and SHRINK give 0).
* No formula overflows for finite inputs: exp only ever sees non-positive arguments (expm1 on min(x, 0),
  logaddexp for softplus, exp(-|x|) for sigmoid); underflow to 0 is the correct result and is not reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]
_Params = Mapping[str, float]

ACTIVATION_PARAMS: Mapping[str, Mapping[str, float]] = MappingProxyType(
    {
        name: MappingProxyType(params)
        for name, params in {
            "IDENTITY": {},
            "RELU": {},
            "SIGMOID": {},
            "TANH": {},
            "SOFTSIGN": {},
            "GELU": {},
            "ELU": {"alpha": 1.0},
            "CELU": {"alpha": 1.0},
            "LEAKY_RELU": {"alpha": 0.01},
            "PARAMETERIZED_RELU": {"alpha": 0.01},
            "THRESHOLDED_RELU": {"alpha": 1.0},
            "HARD_SIGMOID": {"alpha": 0.2, "beta": 0.5},
            "LINEAR": {"alpha": 1.0, "beta": 0.0},
            "SCALED_TANH": {"alpha": 1.0, "beta": 1.0},
            "PARAMETRIC_SOFTPLUS": {"alpha": 1.0, "beta": 1.0},
            "SCALED_ELU": {"alpha": 1.6732632423543772, "gamma": 1.0507009873554805},
            "SOFTPLUS": {"steepness": 1.0},
            "SHRINK": {"bias": 0.0, "threshold": 0.5},
            "SWISH": {"sigmoid_input_scale": 1.0},
            "HARD_SWISH": {"alpha": 1.0 / 6.0, "beta": 0.5},
        }.items()
    }
)

_ERFC_CHUNK = 1 << 16


def _sigmoid(x: Array) -> Array:
    # 1 / (1 + exp(-x)), evaluated through e = exp(-|x|) <= 1 so that nothing overflows.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _erfc(x: Array) -> Array:
    """math.erfc element by element (correctly rounded to ~1 ulp), in chunks to bound the Python-object overhead."""
    flat = x.reshape(-1)
    out = np.empty(flat.shape, dtype=np.float64)
    for start in range(0, flat.size, _ERFC_CHUNK):
        chunk = flat[start : start + _ERFC_CHUNK]
        out[start : start + chunk.size] = np.fromiter(map(math.erfc, chunk.tolist()), np.float64, chunk.size)
    return out.reshape(x.shape)


def _elu(x: Array, alpha: float) -> Array:
    # DML_ACTIVATION_ELU: "f(x) = x, if x >= 0; Alpha * (exp(x) - 1), otherwise" (expm1 on min(x, 0): no overflow).
    return np.where(x >= 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


def _celu(x: Array, p: _Params) -> Array:
    # DML_ACTIVATION_CELU: "f(x) = max(0, x) + min(0, Alpha * (exp(x / Alpha) - 1))".
    alpha = p["alpha"]
    if alpha == 0.0:
        raise ValueError("CELU alpha must be non-zero (the formula divides by it)")
    t = x / alpha
    if alpha > 0:
        # For t > 0 the min() picks 0 either way; clamping keeps exp from overflowing.
        t = np.minimum(t, 0.0)
    with np.errstate(over="ignore"):  # alpha < 0: the term really does head to -inf
        return np.maximum(x, 0.0) + np.minimum(0.0, alpha * np.expm1(t))


def _softplus(x: Array, p: _Params) -> Array:
    # DML_ACTIVATION_SOFTPLUS: "f(x) = ln(1 + exp(Steepness * x)) / Steepness" (logaddexp(0, z) = ln(1 + exp(z))).
    steepness = p["steepness"]
    if steepness == 0.0:
        raise ValueError("SOFTPLUS steepness must be non-zero (the formula divides by it)")
    return np.logaddexp(0.0, steepness * x) / steepness


def _shrink(x: Array, p: _Params) -> Array:
    # DML_ACTIVATION_SHRINK: "x - Bias, if x > Threshold; x + Bias, if x < -Threshold; 0, otherwise".
    bias, threshold = p["bias"], p["threshold"]
    return np.where(x > threshold, x - bias, np.where(x < -threshold, x + bias, 0.0))


def _hard_sigmoid(x: Array, alpha: float, beta: float) -> Array:
    # DML_ACTIVATION_HARD_SIGMOID: "f(x) = max(0, min(Alpha * x + Beta, 1))".
    return np.maximum(0.0, np.minimum(alpha * x + beta, 1.0))


_FUNCTIONS: Mapping[str, Callable[[Array, _Params], Array]] = MappingProxyType(
    {
        "IDENTITY": lambda x, p: x,
        "RELU": lambda x, p: np.maximum(x, 0.0),  # "f(x) = max(0, x)"
        "SIGMOID": lambda x, p: _sigmoid(x),  # "f(x) = 1 / (1 + exp(-x))"
        "TANH": lambda x, p: np.tanh(x),
        "SOFTSIGN": lambda x, p: x / (1.0 + np.abs(x)),  # "f(x) = x / (1 + abs(x))"
        # DML_ACTIVATION_GELU: "f(x) = 0.5 * x * (1.0 + erf(x / sqrt(2)))"; 1 + erf(z) == erfc(-z), which keeps
        # full relative precision for negative x where 1 + erf(z) would cancel.
        "GELU": lambda x, p: 0.5 * x * _erfc(-x / math.sqrt(2.0)),
        "ELU": lambda x, p: _elu(x, p["alpha"]),
        "CELU": _celu,
        # DML_ACTIVATION_LEAKY_RELU: "f(x) = x, if x >= 0; Alpha * x, otherwise".
        "LEAKY_RELU": lambda x, p: np.where(x >= 0, x, p["alpha"] * x),
        # DML_ACTIVATION_PARAMETERIZED_RELU: "x, if x >= 0; slope * x, otherwise" (one scalar slope when fused).
        "PARAMETERIZED_RELU": lambda x, p: np.where(x >= 0, x, p["alpha"] * x),
        # DML_ACTIVATION_THRESHOLDED_RELU: "f(x) = x, if x > Alpha; 0, otherwise".
        "THRESHOLDED_RELU": lambda x, p: np.where(x > p["alpha"], x, 0.0),
        "HARD_SIGMOID": lambda x, p: _hard_sigmoid(x, p["alpha"], p["beta"]),
        "LINEAR": lambda x, p: p["alpha"] * x + p["beta"],  # "f(x) = Alpha * x + Beta"
        "SCALED_TANH": lambda x, p: p["alpha"] * np.tanh(p["beta"] * x),  # "f(x) = Alpha * tanh(Beta * x)"
        # DML_ACTIVATION_PARAMETRIC_SOFTPLUS: "f(x) = Alpha * ln(1 + exp(Beta * x))".
        "PARAMETRIC_SOFTPLUS": lambda x, p: p["alpha"] * np.logaddexp(0.0, p["beta"] * x),
        # DML_ACTIVATION_SCALED_ELU: "Gamma * x, if x > 0; Gamma * (Alpha * exp(x) - Alpha), otherwise".
        "SCALED_ELU": lambda x, p: p["gamma"] * np.where(x > 0, x, p["alpha"] * np.expm1(np.minimum(x, 0.0))),
        "SOFTPLUS": _softplus,
        "SHRINK": _shrink,
        # DML_ACTIVATION_SWISH: "f(x) = x * Sigmoid(SigmoidInputScale * x)".
        "SWISH": lambda x, p: x * _sigmoid(p["sigmoid_input_scale"] * x),
        # DML_ACTIVATION_HARD_SWISH: "f(x) = x * HardSigmoid(x, Alpha, Beta)".
        "HARD_SWISH": lambda x, p: x * _hard_sigmoid(x, p["alpha"], p["beta"]),
    }
)


def activation_params(activation: Mapping[str, Any]) -> dict[str, float]:
    """The full parameter set of ``activation`` ({"type": NAME, <lower-case params>}), defaults filled in,
    each rounded to float32 (the descriptors' FLOAT). Raises ValueError for an unknown type or parameter."""
    if "type" not in activation:
        raise ValueError(f"activation {dict(activation)!r} has no 'type'")
    name = activation["type"]
    if name not in ACTIVATION_PARAMS:
        raise ValueError(f"unknown activation type {name!r}; known: {', '.join(ACTIVATION_PARAMS)}")
    defaults = ACTIVATION_PARAMS[name]
    given = {key: value for key, value in activation.items() if key != "type"}
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        known = ", ".join(defaults) or "none"
        raise ValueError(f"unknown parameter(s) {', '.join(unknown)} for activation {name} (known: {known})")
    merged = {**defaults, **given}
    return {key: float(np.float32(float(value))) for key, value in merged.items()}


def apply_activation(x: NDArray[Any], activation: Mapping[str, Any] | None) -> Array:
    """``activation`` applied to ``x`` in float64; None means no fused activation (``x`` as float64)."""
    values = np.asarray(x, dtype=np.float64)
    if activation is None:
        return values
    params = activation_params(activation)
    with np.errstate(under="ignore"):
        return np.asarray(_FUNCTIONS[str(activation["type"])](values, params), dtype=np.float64)
