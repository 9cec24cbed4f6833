"""DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC (spec: DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC.md)
written with NumPy.

    Output = FusedActivation(Scale * ((Input - Mean) / sqrt(Variance + Epsilon)) + Bias)

Everything is computed in float64 and cast to the input's dtype once, at the end. Mean and Variance are taken over
``axes`` (kept as size-1 dimensions so that they broadcast back); Variance is the population variance, computed in
two passes as mean((x - mean)^2), which does not cancel the way E[x^2] - E[x]^2 does. Epsilon is a FLOAT field of
the descriptor, so it is rounded to float32 first (the value the operator receives).

Scale and Bias broadcast NumPy-style against the input (same rank). A missing Scale counts as 1 and a missing Bias
as 0; the spec's pairing rule ("This tensor is required if the BiasTensor is used") is the validator's concern.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .activations import apply_activation


def mean_variance_normalization1(
    input: NDArray[Any],
    axes: Iterable[int],
    scale: NDArray[Any] | None = None,
    bias: NDArray[Any] | None = None,
    normalize_variance: bool = True,
    epsilon: float = 1e-5,
    fused_activation: Mapping[str, Any] | None = None,
) -> NDArray[Any]:
    """The operator's OutputTensor, same dtype and shape as ``input``."""
    x = np.asarray(input)
    # spec: "Supported data types: FLOAT32, FLOAT16" (float64 accepted as well).
    if x.dtype.kind != "f":
        raise ValueError(f"MEAN_VARIANCE_NORMALIZATION1 needs a floating-point input, got {x.dtype}")
    reduce_axes = _check_axes(axes, x.ndim)
    out = x.astype(np.float64)
    # spec: "Axes: The axes along which to calculate the Mean and Variance."
    out -= out.mean(axis=reduce_axes, keepdims=True)
    # spec: "If FALSE, then normalization equation is Output = FusedActivation(Scale * (Input - Mean) + Bias)."
    if normalize_variance:
        variance = np.square(out).mean(axis=reduce_axes, keepdims=True)
        # spec: "(Input - Mean) / sqrt(Variance + Epsilon)"; "Epsilon Type: FLOAT".
        out /= np.sqrt(variance + float(np.float32(epsilon)))
    if scale is not None:
        out *= _broadcast_operand(scale, x.shape, "ScaleTensor")
    if bias is not None:
        out += _broadcast_operand(bias, x.shape, "BiasTensor")
    # spec: "FusedActivation: An optional fused activation layer to apply after the normalization."
    return apply_activation(out, fused_activation).astype(x.dtype)


def _check_axes(axes: Iterable[int], ndim: int) -> tuple[int, ...]:
    checked = tuple(operator.index(axis) for axis in axes)
    for axis in checked:
        if not 0 <= axis < ndim:
            raise ValueError(f"axis {axis} out of range for an input of {ndim} dimension(s)")
    if len(set(checked)) != len(checked):
        raise ValueError(f"Axes {list(checked)} repeat an axis")
    return checked


def _broadcast_operand(operand: NDArray[Any], shape: tuple[int, ...], name: str) -> NDArray[np.float64]:
    values = np.asarray(operand, dtype=np.float64)
    # spec: "BiasTensor, InputTensor, OutputTensor, and ScaleTensor must have the same ... DimensionCount."
    if values.ndim != len(shape):
        raise ValueError(f"{name} has {values.ndim} dimension(s), the input has {len(shape)}")
    # spec (DML_FEATURE_LEVEL_4_0): "any dimension can be set to 1, and be automatically broadcast to match
    # InputTensor."
    if any(size not in (1, target) for size, target in zip(values.shape, shape, strict=True)):
        raise ValueError(f"{name} sizes {values.shape} do not broadcast to the input sizes {shape}")
    return values
