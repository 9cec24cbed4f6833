"""DML_SLICE1_OPERATOR_DESC (spec: DML_SLICE1_OPERATOR_DESC.md) written with NumPy.

Follows the spec's pseudo-code::

    CopyStart = InputWindowOffsets
    for dimension i: if InputWindowStrides[i] < 0: CopyStart[i] += InputWindowSizes[i] - 1
    OutputTensor[OutputCoordinates] = InputTensor[CopyStart + InputWindowStrides * OutputCoordinates]

as one basic (view) slice per dimension, then a copy: elements are copied, never recomputed, so the output is
bit-exact (-0.0 and NaN payloads survive).

MaxCopiedElements: the spec writes ``1 + (InputWindowSize[i] - 1) / InputWindowStrides[i]``, which for a negative
stride would be <= 1 and contradict its own Example 2 (size 4, stride -2 copies 2 elements). The stride's magnitude
is what limits the count ("The magnitude of the stride indicates how many elements to advance"), so this oracle uses
``1 + (size - 1) // |stride|``.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray


def slice1(
    input: NDArray[Any],
    offsets: Sequence[int],
    sizes: Sequence[int],
    strides: Sequence[int],
    output_sizes: Sequence[int] | None = None,
) -> NDArray[Any]:
    """The operator's OutputTensor; ``output_sizes`` None means MaxCopiedElements in every dimension."""
    x = np.asarray(input)
    starts = _as_ints(offsets, "InputWindowOffsets", x.ndim)
    extents = _as_ints(sizes, "InputWindowSizes", x.ndim)
    steps = _as_ints(strides, "InputWindowStrides", x.ndim)
    maxima = [_check_window(i, x.shape[i], starts[i], extents[i], steps[i]) for i in range(x.ndim)]
    counts = maxima if output_sizes is None else _check_output_sizes(output_sizes, maxima)
    window = tuple(_dimension_slice(starts[i], extents[i], steps[i], counts[i]) for i in range(x.ndim))
    return x[window].copy()


def _as_ints(values: Sequence[int], name: str, ndim: int) -> list[int]:
    checked = [operator.index(value) for value in values]
    # spec: DimensionCount "must match the DimensionCount of the input and output tensors."
    if len(checked) != ndim:
        raise ValueError(f"{name} has {len(checked)} value(s), the input has {ndim} dimension(s)")
    return checked


def _check_window(dim: int, input_size: int, offset: int, size: int, stride: int) -> int:
    """Validate dimension ``dim``'s window; return its MaxCopiedElements."""
    # spec: "The input window mustn't be empty in any dimension"
    if size < 1:
        raise ValueError(f"dimension {dim}: InputWindowSizes {size} makes an empty window")
    # spec: "InputWindowOffsets[i] + InputWindowSizes[i] <= InputTensor.Sizes[i]" (offsets are UINT)
    if offset < 0 or offset + size > input_size:
        raise ValueError(f"dimension {dim}: window [{offset}, {offset + size}) is outside the input size {input_size}")
    # spec: "Strides may not be 0."
    if stride == 0:
        raise ValueError(f"dimension {dim}: InputWindowStrides is 0")
    # spec: "MaxCopiedElements[i] = 1 + (InputWindowSize[i] - 1) / InputWindowStrides[i]" (by |stride|: see above)
    return 1 + (size - 1) // abs(stride)


def _check_output_sizes(output_sizes: Sequence[int], maxima: list[int]) -> list[int]:
    counts = _as_ints(output_sizes, "OutputTensor.Sizes", len(maxima))
    for dim, (count, maximum) in enumerate(zip(counts, maxima, strict=True)):
        # spec: "The slice is valid so long as 1 <= OutputSizes[i] <= MaxCopiedElements[i]."
        if not 1 <= count <= maximum:
            raise ValueError(f"dimension {dim}: output size {count} is outside 1..MaxCopiedElements ({maximum})")
    return counts


def _dimension_slice(offset: int, size: int, stride: int, count: int) -> slice:
    """The basic slice reading ``count`` elements of one dimension's window."""
    # spec: "if InputWindowStrides[i] < 0: CopyStart[i] += InputWindowSizes[i] - 1 // start at the end of the window"
    start = offset + size - 1 if stride < 0 else offset
    # spec: "InputTensor[CopyStart + InputWindowStrides * OutputCoordinates]", OutputCoordinates in 0..count-1
    stop = start + stride * count  # one step past the last element read
    return slice(start, stop if stop >= 0 else None, stride)
