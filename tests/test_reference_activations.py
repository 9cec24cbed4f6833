"""reference.apply_activation against scalar ``math`` formulas (DirectML's documented definitions), on a grid from
-1e300 to 1e300, with every floating-point warning turned into an error."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest

from reference import ACTIVATION_PARAMS, apply_activation

GRID = [-1e300, -3.4e38, -1e4, -800.0, -100.0, -30.0, -5.0, -1.0, -0.5, -1e-3, -0.0, 0.0, 1e-3, 0.5, 1.0, 2.5]
GRID += [5.0, 30.0, 100.0, 800.0, 1e4, 3.4e38, 1e300]

# The project-wide defaults, written out again from the brief (not read from the code under test).
DEFAULTS: Mapping[str, Mapping[str, float]] = {
    "IDENTITY": {}, "RELU": {}, "SIGMOID": {}, "TANH": {}, "SOFTSIGN": {}, "GELU": {},
    "ELU": {"alpha": 1.0}, "CELU": {"alpha": 1.0}, "LEAKY_RELU": {"alpha": 0.01},
    "PARAMETERIZED_RELU": {"alpha": 0.01}, "THRESHOLDED_RELU": {"alpha": 1.0},
    "HARD_SIGMOID": {"alpha": 0.2, "beta": 0.5}, "LINEAR": {"alpha": 1.0, "beta": 0.0},
    "SCALED_TANH": {"alpha": 1.0, "beta": 1.0}, "PARAMETRIC_SOFTPLUS": {"alpha": 1.0, "beta": 1.0},
    "SCALED_ELU": {"alpha": 1.6732632423543772, "gamma": 1.0507009873554805}, "SOFTPLUS": {"steepness": 1.0},
    "SHRINK": {"bias": 0.0, "threshold": 0.5}, "SWISH": {"sigmoid_input_scale": 1.0},
    "HARD_SWISH": {"alpha": 1.0 / 6.0, "beta": 0.5},
}  # fmt: skip

# Non-default parameters, to be sure each one is used.
CUSTOM: Mapping[str, dict[str, float]] = {
    "ELU": {"alpha": 0.7}, "CELU": {"alpha": 0.5}, "LEAKY_RELU": {"alpha": 0.1},
    "PARAMETERIZED_RELU": {"alpha": 0.25}, "THRESHOLDED_RELU": {"alpha": 0.5},
    "HARD_SIGMOID": {"alpha": 0.3, "beta": 0.4}, "LINEAR": {"alpha": -1.5, "beta": 0.3},
    "SCALED_TANH": {"alpha": 1.7, "beta": 0.6}, "PARAMETRIC_SOFTPLUS": {"alpha": 0.8, "beta": 3.0},
    "SCALED_ELU": {"alpha": 1.1, "gamma": 2.1}, "SOFTPLUS": {"steepness": 2.0},
    "SHRINK": {"bias": 0.2, "threshold": 1.0}, "SWISH": {"sigmoid_input_scale": 1.702},
    "HARD_SWISH": {"alpha": 0.2, "beta": 0.4},
}  # fmt: skip


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def _softplus(z: float) -> float:  # ln(1 + exp(z)) without overflow
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


def _hard_sigmoid(x: float, a: float, b: float) -> float:
    return max(0.0, min(a * x + b, 1.0))


def _shrink(x: float, p: Mapping[str, float]) -> float:
    if x > p["threshold"]:
        return x - p["bias"]
    return x + p["bias"] if x < -p["threshold"] else 0.0


SCALAR: Mapping[str, Callable[[float, Mapping[str, float]], float]] = {
    "IDENTITY": lambda x, p: x,
    "RELU": lambda x, p: x if x > 0 else 0.0,
    "SIGMOID": lambda x, p: _sigmoid(x),
    "TANH": lambda x, p: math.tanh(x),
    "SOFTSIGN": lambda x, p: x / (1.0 + abs(x)),
    "GELU": lambda x, p: 0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))),
    "ELU": lambda x, p: x if x >= 0 else p["alpha"] * math.expm1(x),
    "CELU": lambda x, p: x if x > 0 else p["alpha"] * math.expm1(x / p["alpha"]),  # alpha > 0
    "LEAKY_RELU": lambda x, p: x if x >= 0 else p["alpha"] * x,
    "PARAMETERIZED_RELU": lambda x, p: x if x >= 0 else p["alpha"] * x,
    "THRESHOLDED_RELU": lambda x, p: x if x > p["alpha"] else 0.0,
    "HARD_SIGMOID": lambda x, p: _hard_sigmoid(x, p["alpha"], p["beta"]),
    "LINEAR": lambda x, p: p["alpha"] * x + p["beta"],
    "SCALED_TANH": lambda x, p: p["alpha"] * math.tanh(p["beta"] * x),
    "PARAMETRIC_SOFTPLUS": lambda x, p: p["alpha"] * _softplus(p["beta"] * x),
    "SCALED_ELU": lambda x, p: p["gamma"] * (x if x > 0 else p["alpha"] * math.expm1(x)),
    "SOFTPLUS": lambda x, p: _softplus(p["steepness"] * x) / p["steepness"],
    "SHRINK": _shrink,
    "SWISH": lambda x, p: x * _sigmoid(p["sigmoid_input_scale"] * x),
    "HARD_SWISH": lambda x, p: x * _hard_sigmoid(x, p["alpha"], p["beta"]),
}


def _f32(params: Mapping[str, float]) -> dict[str, float]:
    """The descriptors' FLOAT fields: what the operator receives."""
    return {key: float(np.float32(value)) for key, value in params.items()}


def _check(name: str, given: Mapping[str, float]) -> None:
    effective = _f32({**DEFAULTS[name], **given})
    x = np.array(GRID, dtype=np.float64)
    with np.errstate(all="raise"):
        ours = apply_activation(x, {"type": name, **given})
    want = np.array([SCALAR[name](v, effective) for v in GRID])
    assert ours.dtype == np.float64 and ours.shape == x.shape
    # GELU's reference uses 1 + erf(), which cancels for negative x: an absolute floor for that one.
    atol = 1e-15 if name == "GELU" else 0.0
    np.testing.assert_allclose(ours, want, rtol=1e-13, atol=atol, err_msg=name)


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_defaults_match_scalar_formula(name: str) -> None:
    _check(name, {})


@pytest.mark.parametrize("name", sorted(CUSTOM))
def test_custom_parameters_match_scalar_formula(name: str) -> None:
    _check(name, CUSTOM[name])


def test_default_table() -> None:
    assert {name: dict(params) for name, params in ACTIVATION_PARAMS.items()} == DEFAULTS


def test_parameters_are_rounded_to_float32() -> None:
    out = apply_activation(np.array([-1.0]), {"type": "LEAKY_RELU", "alpha": 0.1})
    assert out[0] == -float(np.float32(0.1)) and out[0] != -0.1


def test_none_is_identity_in_float64() -> None:
    x = np.array([1.5, -2.0], dtype=np.float32)
    out = apply_activation(x, None)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, x)


def test_gelu_keeps_relative_precision_for_negative_inputs() -> None:
    out = apply_activation(np.array([-10.0]), {"type": "GELU"})
    # 0.5 * x * erfc(-x / sqrt(2)) with math.erfc(10 / sqrt(2)) ~ 1.5239706e-23 (1 + erf() would give 0 here).
    assert out[0] == pytest.approx(-10.0 * 0.5 * math.erfc(10.0 / math.sqrt(2.0)), rel=1e-14)
    assert out[0] != 0.0


def test_nan_follows_the_documented_comparisons() -> None:
    x = np.array([np.nan])
    assert np.isnan(apply_activation(x, {"type": "RELU"})[0])
    assert np.isnan(apply_activation(x, {"type": "SIGMOID"})[0])
    assert np.isnan(apply_activation(x, {"type": "ELU"})[0])
    assert apply_activation(x, {"type": "THRESHOLDED_RELU"})[0] == 0.0  # "x, if x > Alpha; 0, otherwise"
    assert apply_activation(x, {"type": "SHRINK"})[0] == 0.0


@pytest.mark.parametrize(
    ("activation", "match"),
    [
        ({"type": "SOFTMAX"}, "unknown activation type"),
        ({"type": "relu"}, "unknown activation type"),
        ({"alpha": 1.0}, "no 'type'"),
        ({"type": "RELU", "alpha": 0.1}, "unknown parameter"),
        ({"type": "ELU", "beta": 0.1}, "unknown parameter"),
        ({"type": "CELU", "alpha": 0.0}, "non-zero"),
        ({"type": "SOFTPLUS", "steepness": 0.0}, "non-zero"),
    ],
)
def test_invalid_activations(activation: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        apply_activation(np.zeros(2), activation)
