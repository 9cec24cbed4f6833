"""A tensor's DirectML buffer layout as a case carries it (``Layout``: DML_BUFFER_TENSOR_DESC's Sizes, DataType,
Strides and TotalTensorSizeInBytes, and its buffer's size), in the core so that ``model.Case`` can carry each of its
tensors' layouts, derived once when the case is built (cases/layouts.py says how).

What a buffer tensor's layout means is reference/layout.py's arithmetic, which this module applies. It loads NumPy,
so model.py names ``Layout`` for type checking only: importing model.py (the pytest plugin's import) stays light,
and the layouts a case carries are built by the cases stage, which imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from conformance.data_type import DataType
from conformance.dtypes import numpy_dtype
from reference.layout import buffer_size, calc_buffer_tensor_size, index_of_last_element, read_strided, write_strided


@dataclass(frozen=True)
class Layout:
    """One tensor's DML_BUFFER_TENSOR_DESC: ``strides`` None is packed, ``total_bytes`` None is
    DMLCalcBufferTensorSize's minimum (``buffer_bytes`` is the size either way)."""

    name: str
    sizes: tuple[int, ...]
    data_type: DataType
    strides: tuple[int, ...] | None = None
    total_bytes: int | None = None

    @property
    def element_size(self) -> int:
        return numpy_dtype(self.data_type).itemsize

    @property
    def buffer_bytes(self) -> int:
        """TotalTensorSizeInBytes as DirectML is given it: the case's, else the minimum."""
        return buffer_size(self.element_size, self.sizes, self.strides, self.total_bytes)

    @property
    def minimum_bytes(self) -> int:
        """DMLCalcBufferTensorSize's minimum for these Sizes and Strides."""
        return calc_buffer_tensor_size(self.element_size, self.sizes, self.strides)

    @property
    def spanned_elements(self) -> int:
        """The elements from the buffer's first to its last element's, both included (packed: the element count)."""
        return index_of_last_element(self.sizes, self.strides) + 1

    def buffer(self, array: np.ndarray, fill: bytes = b"\0") -> bytes:
        """The tensor's buffer (``buffer_bytes`` long) holding ``array`` (shape Sizes) through the strides; the bytes
        no element addresses hold ``fill`` repeated from the buffer's start. Several elements at one address (a zero
        stride): the first in row-major order is written (reference/layout.py)."""
        if array.shape != self.sizes or array.dtype.itemsize != self.element_size:
            raise ValueError(f"{self.name}: an array {array.dtype}{array.shape} for Sizes {list(self.sizes)}")
        size = self.buffer_bytes
        pattern = np.frombuffer((fill * (size // max(len(fill), 1) + 1))[:size], dtype=np.uint8).copy()
        return write_strided(pattern, array, self.strides).tobytes()

    def read(self, buffer: bytes | np.ndarray) -> np.ndarray:
        """The tensor (shape Sizes, the DataType's NumPy dtype) that ``buffer``'s bytes hold through the strides;
        bytes past ``buffer_bytes`` (a guard region) are ignored."""
        raw = np.frombuffer(buffer, dtype=np.uint8) if isinstance(buffer, bytes | bytearray) else buffer
        return read_strided(raw[: self.buffer_bytes], numpy_dtype(self.data_type), self.sizes, self.strides)

    @property
    def given(self) -> bool:
        """Whether the case gives this tensor a layout of its own (Strides or TotalTensorSizeInBytes)."""
        return self.strides is not None or self.total_bytes is not None
