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

The work goes a block of sequences at a time (about _BLOCK elements; blocks may cut across the dimensions after
the axis), on a thread per core (reference/_blocks.py), each worker reusing its own scratch buffers: every temporary
is sized by a block, not by the input. Per block:

* keys: one pass widens (float) or copies (integer) into the key buffer; for floats 0.0 is added, or for DECREASING
  the value negated as 0.0 - v (exact), and NaNs are made one canonical NaN only when the block's max is NaN; an
  integer DECREASING key is ~v. Then the float bits become order-preserving integers.
* for a small K (up to a quarter of the axis), np.partition of a copy of the keys (no index array) finds each row's
  K-th smallest key, the boundary. The positions of the keys up to the boundary are found in one pass; from then on
  only those candidates are looked at: all below the boundary are chosen, and the ties (keys equal to it) in
  position order until K are reached. Only the K chosen per row are sorted, by (key, position).
* for a larger K, one stable argsort of the block's keys.

The result does not depend on the blocks or the threads: each sequence is worked on alone.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._blocks import run_shares

_SUPPORTED_DTYPES = frozenset(
    np.dtype(name) for name in ("float16", "float32", "float64", "int8", "int16", "int32", "uint8", "uint16", "uint32")
)
_DIRECTIONS = ("DECREASING", "INCREASING")
_NEGATIVE_FLIP = np.int64(0x7FFF_FFFF_FFFF_FFFF)
_NEGATIVE_FLIP_32 = np.int32(0x7FFF_FFFF)
_WIDE_INTEGERS = frozenset({np.dtype("uint32")})  # integer types whose values do not all fit int32
# Below this K/axis ratio the partition path is used; above it one stable argsort is cheaper.
_PARTITION_MAX_RATIO = 0.25
# Elements per block of sequences: every temporary (keys, masks, positions) is sized by a block, not the input.
_BLOCK = 1 << 18


def top_k1(
    input: NDArray[Any], axis: int, k: int, axis_direction: str = "DECREASING"
) -> tuple[NDArray[Any], NDArray[np.uint32]]:
    """Values (input's dtype) and indices (uint32) of the top ``k`` elements of every sequence along ``axis``."""
    x = np.asarray(input)
    axis, k, decreasing = _check_arguments(x, axis, k, axis_direction)
    n = x.shape[axis]
    # spec: "A sequence refers to one of the sets of elements that exist along the Axis dimension"
    # As (outer, n, inner): sequence (o, i) is x3[o, :, i]. A view of a contiguous input, not a copy.
    outer, inner = math.prod(x.shape[:axis]), math.prod(x.shape[axis + 1 :])
    x3 = x.reshape(outer, n, inner)
    # spec: "This tensor must have sizes equal to the InputTensor, except for ... Axis ... equal to K"
    values = np.empty((outer, k, inner), dtype=x.dtype)
    indices = np.empty((outer, k, inner), dtype=np.uint32)
    blocks = _blocks(outer, inner, max(1, _BLOCK // n))

    def task(share: Sequence[tuple[slice, slice]]) -> None:
        most = max((outers.stop - outers.start) * (inners.stop - inners.start) for outers, inners in share)
        scratch = _Scratch(most * n, _key_dtype(x.dtype))  # sized by the largest block, never by more
        for where in share:
            sequences = np.moveaxis(x3[where[0], :, where[1]], 1, -1)  # (outers, inners, n), a view
            keys = _order_keys(sequences, decreasing, scratch)
            chosen = _top_k_indices(keys, k, scratch).reshape(*sequences.shape[:2], k)
            values[where[0], :, where[1]] = np.moveaxis(np.take_along_axis(sequences, chosen, axis=-1), -1, 1)
            # spec: "The indices returned in this tensor are measured relative to the beginning of their sequence"
            indices[where[0], :, where[1]] = np.moveaxis(chosen, -1, 1)

    run_shares(task, blocks)
    out_shape = (*x.shape[:axis], k, *x.shape[axis + 1 :])
    return values.reshape(out_shape), indices.reshape(out_shape)


def _blocks(outer: int, inner: int, rows: int) -> list[tuple[slice, slice]]:
    """(outer, inner) ranges of at most ``rows`` sequences each, covering every sequence once."""
    if not outer or not inner:
        return []
    inners = min(inner, rows)
    outers = max(1, rows // inners)
    return [
        (slice(o, min(o + outers, outer)), slice(i, min(i + inners, inner)))
        for o in range(0, outer, outers)
        for i in range(0, inner, inners)
    ]


class _Scratch:
    """One worker's buffers of ``size`` elements, reused by each of its blocks: a fresh allocation per block would
    have the kernel fault in and zero its pages again every time, which costs more than the work on them."""

    def __init__(self, size: int, key_dtype: type[np.signedinteger[Any]]) -> None:
        self.keys = np.empty(size, key_dtype)
        self.spare = np.empty(size, key_dtype)
        self.below = np.empty(size, np.bool_)

    @staticmethod
    def view(buffer: NDArray[Any], shape: tuple[int, ...]) -> NDArray[Any]:
        return buffer[: math.prod(shape)].reshape(shape)


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


def _key_dtype(dtype: np.dtype[Any]) -> type[np.signedinteger[Any]]:
    """int32 keys where every value fits (half the memory and time of int64), int64 for FLOAT64 and UINT32."""
    return np.int64 if dtype == np.float64 or dtype in _WIDE_INTEGERS else np.int32


def _order_keys(sequences: NDArray[Any], decreasing: bool, scratch: _Scratch) -> NDArray[np.signedinteger[Any]]:
    """(sequences, n) integer keys whose ascending order is the selection order (ties: equal keys)."""
    keys = scratch.view(scratch.keys, sequences.shape)
    if sequences.dtype.kind == "f":
        _float_keys(sequences, decreasing, keys, scratch)
    elif decreasing:
        # ~v == -v - 1 reverses the order of an integer without any overflow (in its own type, then widened).
        np.invert(sequences, out=keys)
    else:
        np.copyto(keys, sequences)
    return keys.reshape(-1, sequences.shape[-1])


def _float_keys(
    sequences: NDArray[Any], decreasing: bool, keys: NDArray[np.signedinteger[Any]], scratch: _Scratch
) -> None:
    """Map floats to integers preserving order: -inf < ... < -0 == +0 < ... < +inf < NaN (all NaNs equal); for
    DECREASING the order of the negated values, in which NaN comes first."""
    # FLOAT16 widens exactly to float32, whose bits fit int32 keys; FLOAT64 keeps int64 keys.
    width = np.float64 if keys.dtype == np.int64 else np.float32
    flip = _NEGATIVE_FLIP if width is np.float64 else _NEGATIVE_FLIP_32
    widened = keys.view(width)
    # One pass widens and adds 0.0 (or negates: 0.0 - v, exact): -0.0 and +0.0 both become +0.0, one key (a tie).
    if decreasing:
        np.subtract(width(0.0), sequences, out=widened, dtype=width)
    else:
        np.add(sequences, width(0.0), out=widened, dtype=width)
    if np.isnan(widened.max()):  # max propagates NaN: one cheap pass finds whether there is any
        # One canonical NaN, whose bits sort above +inf's (positive) or, negated for DECREASING, below -inf's.
        nan = np.isnan(widened, out=scratch.view(scratch.below, keys.shape))
        np.copyto(widened, -width(np.nan) if decreasing else width(np.nan), where=nan)
    # Negative floats: flip the magnitude bits so that a larger magnitude gives a smaller integer.
    # (bits >> (width - 1)) is -1 (all ones) for a negative float and 0 otherwise.
    sign = np.right_shift(keys, keys.itemsize * 8 - 1, out=scratch.view(scratch.spare, keys.shape))
    np.bitwise_and(sign, flip, out=sign)
    np.bitwise_xor(keys, sign, out=keys)


def _top_k_indices(keys: NDArray[np.signedinteger[Any]], k: int, scratch: _Scratch) -> NDArray[np.intp]:
    """Per row, the positions of the ``k`` smallest keys, ordered by (key, position)."""
    n = keys.shape[-1]
    if k > _PARTITION_MAX_RATIO * n:
        # spec: ties "are guaranteed to be ordered by ascending element index ... irrespective of the value of
        # AxisDirection": a stable sort keeps equal keys in index order.
        return np.argsort(keys, axis=-1, kind="stable")[:, :k]
    positions, chosen_keys = _select_unordered(keys, k, scratch)  # ascending positions within each row
    order = np.argsort(chosen_keys, axis=-1, kind="stable")
    return np.take_along_axis(positions, order, axis=-1)


def _select_unordered(
    keys: NDArray[np.signedinteger[Any]], k: int, scratch: _Scratch
) -> tuple[NDArray[np.intp], NDArray[np.signedinteger[Any]]]:
    """Per row, in ascending position order, the ``k`` positions with the smallest (key, position), and their keys."""
    rows, n = keys.shape
    # The K-th smallest key of each row: a partition of a copy of the keys (no index array).
    partitioned = scratch.view(scratch.spare, keys.shape)
    np.copyto(partitioned, keys)
    partitioned.partition(k - 1, axis=-1)
    boundary = partitioned[:, k - 1]
    # Candidates: the keys up to the boundary. All of those below it are chosen, and the ties (keys equal to it)
    # fill the rest. From here on the work is on the candidates only (K plus the ties past K, per row).
    flat = np.flatnonzero(np.less_equal(keys, boundary[:, None], out=scratch.view(scratch.below, keys.shape)))
    candidate_keys = keys.ravel()[flat]
    row = flat // n  # flat is row-major: ascending by row, then by position
    tied = candidate_keys == boundary[row]
    ties_before = np.concatenate(([0], np.cumsum(tied)))  # ties among the candidates before each one
    row_start = np.searchsorted(flat, np.arange(0, (rows + 1) * n, n))
    ties_in_row = np.diff(ties_before[row_start])
    still_needed = k - (np.diff(row_start) - ties_in_row)  # k minus the keys below the boundary
    # spec Example 3 (row [6, 6, 6, 6], K = 3 -> indices [0, 1, 2]): among ties the lowest indices win.
    tie_rank = ties_before[1:] - ties_before[row_start[row]]  # 1 for a row's first tie, 2 for its second, ...
    chosen = ~tied | (tie_rank <= still_needed[row])
    positions = (flat[chosen] - row[chosen] * n).reshape(rows, k)  # exactly k per row
    return positions, candidate_keys[chosen].reshape(rows, k)
