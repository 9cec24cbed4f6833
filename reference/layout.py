"""DirectML's buffer-tensor layout (DML_BUFFER_TENSOR_DESC) as NumPy code: where each element of a tensor lies in
its buffer, how large the buffer must be, and writing and reading a tensor through its strides.

From DirectML's documentation:

* DML_BUFFER_TENSOR_DESC.Strides: "the number of elements (not bytes) to linearly traverse in order to reach the
  next element in that dimension"; "Strides can be used to express broadcasting (by specifying a stride of 0) as
  well as padding"; "If Strides is not specified, each dimension in the tensor is considered to be contiguously
  packed, with no additional padding."
* TotalTensorSizeInBytes "must be at least as large as the minimum implied size given the sizes, strides, and data
  type of the tensor", which DMLCalcBufferTensorSize (DirectML helper functions) computes:
  ``IndexOfLastElement = dot(Sizes - 1, Strides)``, ``roundup((IndexOfLastElement + 1) * ElementSizeInBytes, 4)``,
  because "all bound buffers must have a total size that is DWORD-aligned".
* DML_BUFFER_BINDING.Offset "must be aligned to a multiple of DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT" (16).

Element offsets are in elements from the start of the buffer (the binding's Offset); byte offsets are element
offsets times the element size. Sizes are assumed valid (every size at least 1): the validator checks them first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16  # DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT, bytes: a binding's Offset
BUFFER_SIZE_ALIGNMENT = 4  # "a total size that is DWORD-aligned" (DMLCalcBufferTensorSize's roundup)
UINT_MAX = 2**32 - 1  # DMLCalcBufferTensorSize sums IndexOfLastElement in a UINT


def packed_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """The strides of a tensor "contiguously packed, with no additional padding": row-major, the last dimension
    innermost (what DirectML assumes when Strides is not given)."""
    strides = []
    step = 1
    for size in reversed(sizes):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def index_of_last_element(sizes: Sequence[int], strides: Sequence[int] | None) -> int:
    """DMLCalcBufferTensorSize's ``IndexOfLastElement = dot(Sizes - 1, Strides)``: the largest element offset."""
    steps = packed_strides(sizes) if strides is None else strides
    return sum((size - 1) * stride for size, stride in zip(sizes, steps, strict=True))


def calc_buffer_tensor_size(element_size: int, sizes: Sequence[int], strides: Sequence[int] | None = None) -> int:
    """DMLCalcBufferTensorSize: the minimum bytes of a buffer holding the tensor, rounded up to a multiple of 4.

    Without strides the helper multiplies the sizes; with them it takes the one-past-the-last element; both are the
    same number for packed strides."""
    implied = (index_of_last_element(sizes, strides) + 1) * element_size
    return -(-implied // BUFFER_SIZE_ALIGNMENT) * BUFFER_SIZE_ALIGNMENT


def buffer_size(
    element_size: int, sizes: Sequence[int], strides: Sequence[int] | None = None, total_bytes: int | None = None
) -> int:
    """The bytes of the tensor's buffer: its TotalTensorSizeInBytes where given, else DMLCalcBufferTensorSize's."""
    return calc_buffer_tensor_size(element_size, sizes, strides) if total_bytes is None else total_bytes


def element_offsets(sizes: Sequence[int], strides: Sequence[int] | None = None) -> np.ndarray:
    """Each element's offset in the buffer, in elements: an int64 array of shape ``sizes`` (logical order)."""
    steps = packed_strides(sizes) if strides is None else strides
    offsets = np.zeros(tuple(sizes), dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(sizes, steps, strict=True)):
        shape = [1] * len(sizes)
        shape[axis] = size
        offsets += (np.arange(size, dtype=np.int64) * stride).reshape(shape)
    return offsets


def _disjoint_by_extents(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """A quick proof that no two elements share an offset: ordered by stride, each dimension's stride reaches past
    everything the smaller ones span. (False proves nothing: interleaved layouts need the exact check.)"""
    span = 1
    for stride, size in sorted((stride, size) for size, stride in zip(sizes, strides, strict=True) if size > 1):
        if stride < span:
            return False
        span = stride * (size - 1) + span
    return True


def first_alias(sizes: Sequence[int], strides: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Two elements (indices, the first in logical order first) that the strides put at one offset; None when every
    element has an offset of its own. An output must have none (two results cannot be written to one place). With a
    zero stride, the first element and the next one along the innermost broadcast dimension; else the pair whose
    second element comes first in logical order."""
    if _disjoint_by_extents(sizes, strides):
        return None
    zero = [axis for axis, (size, stride) in enumerate(zip(sizes, strides, strict=True)) if size > 1 and not stride]
    if zero:  # the first element and the next along the innermost broadcast dimension: no need to list them all
        return (0,) * len(sizes), tuple(int(axis == zero[-1]) for axis in range(len(sizes)))
    flat = element_offsets(sizes, strides).ravel()
    order = np.argsort(flat, kind="stable")
    same = np.flatnonzero(flat[order][1:] == flat[order][:-1])
    if not same.size:
        return None
    # The pair whose later element comes first in logical order, so that the message names the earliest collision.
    later = order[same + 1]
    pick = int(np.argmin(later))
    first, second = int(order[same[pick]]), int(later[pick])
    shape = tuple(sizes)
    return tuple(map(int, np.unravel_index(first, shape))), tuple(map(int, np.unravel_index(second, shape)))


def _elements(buffer: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The buffer's whole elements of ``dtype``, a view that writes through to ``buffer``."""
    usable = buffer.size // dtype.itemsize * dtype.itemsize
    return buffer[:usable].view(dtype)


def strided_view(base: np.ndarray, sizes: Sequence[int], strides: Sequence[int] | None, unit: int = 1) -> np.ndarray:
    """The tensor of ``sizes`` through ``strides`` over ``base`` (a contiguous 1-D array of elements, or with ``unit``
    above 1 of the bytes of elements ``unit`` bytes wide): a NumPy view of shape ``sizes`` (``(*sizes, unit)`` with
    ``unit``), reading and writing ``base`` in place. No offset is listed: a tensor of 2^27 elements costs no 1 GiB of
    int64 offsets. ValueError where an element lies past ``base``'s end. Several elements at one offset (a zero
    stride) are one place in ``base``: a write through them leaves one value there, in no order NumPy promises."""
    if base.ndim != 1 or base.strides[0] != base.itemsize:
        raise ValueError(f"a strided view needs a contiguous 1-D array, got {base.dtype}{base.shape}")
    steps = packed_strides(sizes) if strides is None else tuple(strides)
    if any(stride < 0 for stride in steps):
        raise ValueError(f"strides {list(steps)}: DirectML's strides are UINTs, never negative")
    element = base.itemsize * unit
    shape, byte_strides = tuple(sizes), tuple(stride * element for stride in steps)
    if unit > 1:  # each element's bytes, one by one
        shape, byte_strides = (*shape, unit), (*byte_strides, base.itemsize)
    if not all(sizes):  # no element: nothing is addressed, and no offset need lie in ``base``
        return np.lib.stride_tricks.as_strided(base[:0], shape=shape, strides=byte_strides)
    end = (index_of_last_element(sizes, steps) + 1) * unit
    if end > base.size:
        raise ValueError(f"element offset {end // unit - 1} is past the buffer's {base.size // unit} elements")
    # as_strided checks no bounds: the test above is what keeps every element inside ``base``.
    return np.lib.stride_tricks.as_strided(base, shape=shape, strides=byte_strides)


def _first_of_each_address(array: np.ndarray, strides: Sequence[int]) -> np.ndarray | None:
    """Where strides put several elements at one offset only through zero strides (the other dimensions disjoint):
    ``array`` with each broadcast dimension cut to its first index, which keeps exactly the first element in logical
    order of each offset (elements at one offset then differ only in their broadcast indices, the first with all of
    them 0). None where other strides alias too (interleaved: the offsets must be listed)."""
    first = array[tuple(slice(0, 1) if stride == 0 else slice(None) for stride in strides)]
    return first if _disjoint_by_extents(first.shape, strides) else None


def write_strided(buffer: np.ndarray, array: np.ndarray, strides: Sequence[int] | None = None) -> np.ndarray:
    """Write ``array`` into ``buffer`` (a uint8 array, changed in place and returned) through ``strides``; bytes no
    element addresses keep what they held.

    Where strides put several elements at one offset (a zero stride: a broadcast input), the first of them in
    logical (row-major) order is written: the one value DirectML then reads for all of them."""
    if buffer.dtype != np.uint8 or buffer.ndim != 1:
        raise ValueError(f"a buffer is a flat uint8 array, got {buffer.dtype}{buffer.shape}")
    elements = _elements(buffer, array.dtype)
    if strides is None or _disjoint_by_extents(array.shape, strides):
        strided_view(elements, array.shape, strides)[...] = array  # every element has an offset of its own
        return buffer
    first = _first_of_each_address(array, strides)
    if first is not None:
        strided_view(elements, first.shape, strides)[...] = first
        return buffer
    # Interleaved strides that alias: the first element of each offset found by listing them all.
    flat = element_offsets(array.shape, strides).ravel()
    flat, first_index = np.unique(flat, return_index=True)
    if flat.size and int(flat.max()) >= elements.size:
        raise ValueError(f"element offset {int(flat.max())} is past the buffer's {elements.size} elements")
    elements[flat] = np.ascontiguousarray(array).ravel()[first_index]
    return buffer


def read_strided(
    buffer: np.ndarray | bytes, dtype: np.dtype | type, sizes: Sequence[int], strides: Sequence[int] | None = None
) -> np.ndarray:
    """The tensor of ``sizes`` and ``dtype`` that ``buffer``'s bytes hold through ``strides`` (a new array)."""
    raw = np.frombuffer(buffer, dtype=np.uint8) if isinstance(buffer, bytes | bytearray) else buffer
    tensor: np.ndarray = strided_view(_elements(raw, np.dtype(dtype)), sizes, strides).copy()
    return tensor


def addressed_view(
    buffer: np.ndarray, sizes: Sequence[int], strides: Sequence[int] | None, element_size: int
) -> np.ndarray:
    """The bytes of ``buffer`` (a flat array of one-byte items: uint8 or bool) that some element of the tensor
    covers, as a view (shape ``sizes``, and a last dimension of ``element_size`` where it is over 1): assigning
    through it marks (or clears) exactly the addressed bytes, at the cost of one pass over the tensor's bytes
    (several elements at one offset are one place)."""
    if buffer.itemsize != 1:
        raise ValueError(f"addressed bytes are over an array of bytes, got {buffer.dtype}")
    return strided_view(buffer, sizes, strides, unit=element_size)


def addressed_bytes(sizes: Sequence[int], strides: Sequence[int] | None, element_size: int, size: int) -> np.ndarray:
    """A bool mask over ``size`` bytes: True where some element of the tensor lies."""
    mask = np.zeros(size, dtype=bool)
    addressed_view(mask, sizes, strides, element_size)[...] = True
    return mask


def through_buffer(array: np.ndarray, strides: Sequence[int] | None, total_bytes: int | None = None) -> np.ndarray:
    """``array`` written into a buffer of its layout and read back through the same strides: what DirectML reads
    for this tensor (a broadcast dimension's elements all become the first one's value)."""
    size = buffer_size(array.dtype.itemsize, array.shape, strides, total_bytes)
    buffer = write_strided(np.zeros(size, dtype=np.uint8), array, strides)
    return read_strided(buffer, array.dtype, array.shape, strides)
