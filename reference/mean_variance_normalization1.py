"""DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC (spec: DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC.md)
written with NumPy.

    Output = FusedActivation(Scale * ((Input - Mean) / sqrt(Variance + Epsilon)) + Bias)

Everything is computed in float64 and cast to the input's dtype once, at the end. Mean and Variance are taken over
``axes`` (kept as size-1 dimensions so that they broadcast back); Variance is the population variance, computed in
two passes as mean((x - mean)^2), which does not cancel the way E[x^2] - E[x]^2 does. Epsilon is a FLOAT field of
the descriptor, so it is rounded to float32 first (the value the operator receives).

Groups are worked on a block of rows at a time (about _BLOCK elements), on a thread per core (reference/_blocks.py)
with one float64 scratch block per worker. A block is the same whatever the threads, so is every result bit; with no
Scale, Bias or FusedActivation the division writes the output's dtype directly (still divided in float64, rounded
once).

Scale and Bias broadcast NumPy-style against the input (same rank). A missing Scale counts as 1 and a missing Bias
as 0; the spec's pairing rule ("This tensor is required if the BiasTensor is used") is the validator's concern.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._blocks import run_shares
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
    operands = [
        _broadcast_operand(t, x.shape, n) if t is not None else None
        for t, n in ((scale, "ScaleTensor"), (bias, "BiasTensor"))
    ]
    # Each group (one Mean and one Variance) becomes a row: kept axes first, reduced axes last. Rows are then worked
    # on a block at a time, so the float64 temporaries stay near the cache's size instead of the input's.
    order = [a for a in range(x.ndim) if a not in reduce_axes] + list(reduce_axes)
    group = int(np.prod([x.shape[a] for a in reduce_axes]))
    rows = _rows(x, order, group)
    scales, biases = (None if t is None else _rows(np.broadcast_to(t, x.shape), order, group) for t in operands)
    out = np.empty(rows.shape, dtype=x.dtype)
    step = max(1, _BLOCK // group)
    plain = scales is None and biases is None and fused_activation is None

    def task(share: Sequence[slice]) -> None:
        # One worker's float64 block, reused: no page faults block after block (and no larger than the rows).
        scratch = np.empty(min(step, rows.shape[0]) * group)
        for block in share:
            values = _float64(rows[block], scratch)
            # spec: "Axes: The axes along which to calculate the Mean and Variance."
            values -= values.mean(axis=1, keepdims=True)
            # spec: "If FALSE, then normalization equation is Output = FusedActivation(Scale * (Input - Mean) + Bias)."
            if normalize_variance:
                variance = np.einsum("ij,ij->i", values, values)[:, None] / group
                # spec: "(Input - Mean) / sqrt(Variance + Epsilon)"; "Epsilon Type: FLOAT".
                deviation = np.sqrt(variance + float(np.float32(epsilon)))
                if plain:  # the last step: divide in float64 and round once to the output's dtype, in one pass
                    np.divide(values, deviation, out=out[block])
                    continue
                values /= deviation
            if scales is not None:
                values *= scales[block]
            if biases is not None:
                values += biases[block]
            # spec: "FusedActivation: An optional fused activation layer to apply after the normalization."
            out[block] = apply_activation(values, fused_activation)

    run_shares(task, [slice(first, first + step) for first in range(0, rows.shape[0], step)])
    # Back to the input's layout: undo the reshape, then the axis order.
    moved_shape = [x.shape[a] for a in order]
    return np.ascontiguousarray(np.moveaxis(out.reshape(moved_shape), range(x.ndim), order))


_BLOCK = 1 << 18  # elements per block of rows: 2 MiB of float64, about a core's share of the cache


def _float64(source: NDArray[Any], scratch: NDArray[np.float64]) -> NDArray[np.float64]:
    """``source.astype(np.float64)``, in ``scratch`` when ``source`` is C-contiguous. astype keeps the memory order of
    a strided ``source`` (rows that are columns of the input), and the order the reductions then add in decides their
    last bits: so a strided source keeps astype's own copy and layout."""
    if not source.flags.c_contiguous:
        return source.astype(np.float64)
    values = scratch[: source.size].reshape(source.shape)
    np.copyto(values, source)
    return values


def _rows(array: NDArray[Any], order: list[int], group: int) -> NDArray[Any]:
    """``array`` with axes in ``order``, as (groups, group size) rows (a copy only when the layout needs one)."""
    return np.transpose(array, order).reshape(-1, group)


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
