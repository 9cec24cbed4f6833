"""DML_TOP_K1_OPERATOR_DESC (spec: DML_TOP_K1_OPERATOR_DESC.md; both revisions agree on behaviour, the newer one
widens the dimension counts to 1..8) written with NumPy.

TopK does no arithmetic: the output values are elements of the input gathered by index, so they are bit-exact
(-0.0 and NaN payloads survive). Elements are ranked by one total order, in the input's own precision (integers
as int32 keys, or int64 for UINT32 and FLOAT64; FLOAT16 widened exactly to float32 first):

* DECREASING selects the largest K in descending order, INCREASING the smallest K in ascending order.
* Equal values tie, and ties are ordered by ascending element index in both directions; when ties straddle the
  K boundary the lowest indices are the ones selected (spec Example 3: row [6, 6, 6, 6], K = 3 -> [0, 1, 2]).
* +0.0 and -0.0 are equal, hence a tie.
* NaN -- the spec is silent; this oracle's choice: every NaN (any sign or payload) is larger than every number,
  +inf included, and all NaNs tie with each other. DECREASING therefore puts NaNs first, INCREASING puts them last.

For speed on long axes with a small K, a full stable sort is avoided: np.argpartition finds the K-th key, the
candidates (strictly better keys, plus the lowest-index elements equal to that boundary key) are picked with
linear passes, and only those K are sorted.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from numpy.typing import NDArray

_SUPPORTED_DTYPES = frozenset(
    np.dtype(name) for name in ("float16", "float32", "float64", "int8", "int16", "int32", "uint8", "uint16", "uint32")
)
_DIRECTIONS = ("DECREASING", "INCREASING")
_NEGATIVE_FLIP = np.int64(0x7FFF_FFFF_FFFF_FFFF)
_NEGATIVE_FLIP_32 = np.int32(0x7FFF_FFFF)
_WIDE_INTEGERS = frozenset({np.dtype("uint32")})  # integer types whose values do not all fit int32
# Below this K/axis ratio the partition path is used; above it one stable argsort is cheaper.
_PARTITION_MAX_RATIO = 0.25


def top_k1(
    input: NDArray[Any], axis: int, k: int, axis_direction: str = "DECREASING"
) -> tuple[NDArray[Any], NDArray[np.uint32]]:
    """Values (input's dtype) and indices (uint32) of the top ``k`` elements of every sequence along ``axis``."""
    x = np.asarray(input)
    axis, k, decreasing = _check_arguments(x, axis, k, axis_direction)
    n = x.shape[axis]
    moved = np.moveaxis(x, axis, -1)
    # spec: "A sequence refers to one of the sets of elements that exist along the Axis dimension"
    sequences = moved.reshape(-1, n)
    chosen = _top_k_indices(_order_keys(sequences, decreasing), k)
    # spec: "This tensor must have sizes equal to the InputTensor, except for ... Axis ... equal to K"
    out_shape = (*moved.shape[:-1], k)
    values = np.take_along_axis(sequences, chosen, axis=-1).reshape(out_shape)
    # spec: "The indices returned in this tensor are measured relative to the beginning of their sequence"
    indices = chosen.astype(np.uint32).reshape(out_shape)
    return (
        np.ascontiguousarray(np.moveaxis(values, -1, axis)),
        np.ascontiguousarray(np.moveaxis(indices, -1, axis)),
    )


def _check_arguments(x: NDArray[Any], axis: int, k: int, axis_direction: str) -> tuple[int, int, bool]:
    if x.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(f"TOP_K1 does not support dtype {x.dtype} (supported: FLOAT32, FLOAT16, (U)INT8/16/32)")
    axis = operator.index(axis)
    k = operator.index(k)
    # spec: "This value must be less than the DimensionCount of the InputTensor."
    if not 0 <= axis < x.ndim:
        raise ValueError(f"Axis {axis} out of range for an input of {x.ndim} dimension(s)")
    n = x.shape[axis]
    # spec: "K must be greater than 0, but less than the number of elements ... along the dimension specified by
    # Axis." K == axis size is accepted here: whether a case may use it is the validator's policy, not the oracle's.
    if not 1 <= k <= n:
        raise ValueError(f"K {k} out of range: the axis {axis} has {n} element(s); K must be in 1..{n}")
    # spec: OutputIndexTensor "Supported data types: UINT32"
    if n > 2**32:
        raise ValueError(f"axis size {n} does not fit UINT32 indices")
    return axis, k, _is_decreasing(axis_direction)


def _is_decreasing(axis_direction: str) -> bool:
    name = str(axis_direction).upper().removeprefix("DML_AXIS_DIRECTION_")
    if name not in _DIRECTIONS:
        raise ValueError(f"AxisDirection {axis_direction!r} is neither DECREASING nor INCREASING")
    # spec: "If set to DML_AXIS_DIRECTION_INCREASING, then this operator returns the smallest K elements in order of
    # increasing value. Otherwise, it returns the largest K elements in decreasing order."
    return name == "DECREASING"


def _order_keys(sequences: NDArray[Any], decreasing: bool) -> NDArray[np.signedinteger[Any]]:
    """Integer keys whose ascending order is the selection order (ties: equal keys): int32 where every value fits
    (half the memory and time of int64 for the partition), int64 for FLOAT64 and UINT32."""
    if sequences.dtype.kind == "f":
        keys = _float_keys(sequences)
    else:
        keys = sequences.astype(np.int64 if sequences.dtype in _WIDE_INTEGERS else np.int32)
    if decreasing:
        # ~v == -v - 1 reverses the order of a signed integer without any overflow.
        np.invert(keys, out=keys)
    return keys


def _float_keys(sequences: NDArray[Any]) -> NDArray[np.signedinteger[Any]]:
    """Map floats to integers preserving order: -inf < ... < -0 == +0 < ... < +inf < NaN (all NaNs equal)."""
    # FLOAT16 widens exactly to float32, whose bits fit int32 keys; FLOAT64 keeps int64 keys.
    width = np.float64 if sequences.dtype == np.float64 else np.float32
    signed, flip = (np.int64, _NEGATIVE_FLIP) if width is np.float64 else (np.int32, _NEGATIVE_FLIP_32)
    widened: NDArray[Any] = sequences.astype(width)
    widened += width(0.0)  # -0.0 + 0.0 == +0.0: the two zeros become one key (a tie)
    widened[np.isnan(widened)] = np.nan  # one canonical positive NaN, whose bits sort above +inf's
    bits: NDArray[Any] = widened.view(signed)
    # Negative floats: flip the magnitude bits so that a larger magnitude gives a smaller integer.
    # (bits >> (width - 1)) is -1 (all ones) for a negative float and 0 otherwise.
    bits ^= (bits >> (bits.itemsize * 8 - 1)) & flip
    return bits


def _top_k_indices(keys: NDArray[np.signedinteger[Any]], k: int) -> NDArray[np.intp]:
    """Per row, the positions of the ``k`` smallest keys, ordered by (key, position)."""
    n = keys.shape[-1]
    if k > _PARTITION_MAX_RATIO * n:
        # spec: ties "are guaranteed to be ordered by ascending element index ... irrespective of the value of
        # AxisDirection": a stable sort keeps equal keys in index order.
        return np.argsort(keys, axis=-1, kind="stable")[:, :k]
    candidates = _select_unordered(keys, k)  # ascending positions within each row
    order = np.argsort(np.take_along_axis(keys, candidates, axis=-1), axis=-1, kind="stable")
    return np.take_along_axis(candidates, order, axis=-1)


def _select_unordered(keys: NDArray[np.signedinteger[Any]], k: int) -> NDArray[np.intp]:
    """Per row, in ascending position order, the ``k`` positions with the smallest (key, position)."""
    # The K-th smallest key of each row (the partition itself is a temporary, freed at once).
    boundary = np.take_along_axis(keys, np.argpartition(keys, k - 1, axis=-1)[:, k - 1 : k], axis=-1)
    better = keys < boundary
    still_needed = k - np.count_nonzero(better, axis=-1, keepdims=True)
    tied = keys == boundary
    # spec Example 3 (row [6, 6, 6, 6], K = 3 -> indices [0, 1, 2]): among ties the lowest indices win.
    take_tied = tied & (np.cumsum(tied, axis=-1) <= still_needed)
    positions = np.nonzero(better | take_tied)[1]  # row-major: exactly k per row, ascending within a row
    return positions.reshape(keys.shape[0], k)
