"""Each tensor of a case as DirectML holds it: Sizes, DataType, Strides and TotalTensorSizeInBytes, inputs and outputs
alike (an output's Sizes and DataType derived from the descriptor as the spec pages say), and its buffer's size.

What a buffer tensor's layout means is reference/layout.py's; what layouts a case may give, validate_layout.py's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from conformance.cases.operators import OPERATORS
from conformance.dtypes import numpy_dtype
from conformance.model import Case, DataType, TensorSpec
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


def input_tensors(case: Case) -> dict[str, TensorSpec]:
    """The case's input tensors by DML name: InputTensor, then those of its operator's others that it gives."""
    return OPERATORS[case.operator].inputs(case.descriptor)


def input_layouts(case: Case) -> dict[str, Layout]:
    """Every input tensor's layout, by DML name."""
    return {
        name: Layout(name, t.sizes, t.data_type, t.strides, t.total_bytes) for name, t in input_tensors(case).items()
    }


def output_layouts(case: Case) -> dict[str, Layout]:
    """Every output tensor's layout, by DML name: the Sizes and DataType the case writes, else those the descriptor
    gives it (its operator's ``outputs``: the spec page's rules; a valid case's written ones are these), with the
    Strides and TotalTensorSizeInBytes the case writes."""
    derived = OPERATORS[case.operator].outputs(case.descriptor)
    layouts = {}
    for name, output in derived.items():
        given = case.outputs.get(name)
        if given is None:
            layouts[name] = Layout(name, tuple(output.sizes), output.data_type)
            continue
        # The case's own where it writes them (a negative case's may differ from the descriptor's), else derived.
        sizes = given.sizes if given.sizes is not None else output.sizes
        data_type = given.data_type if given.data_type is not None else output.data_type
        layouts[name] = Layout(name, tuple(sizes), data_type, given.strides, given.total_bytes)
    return layouts


def has_layouts(case: Case) -> bool:
    """Whether any tensor of the case, input or output, has a layout of its own."""
    return any(layout.given for layout in (*input_layouts(case).values(), *output_layouts(case).values()))


def packed_note(case: Case) -> str:
    """What an execution through onnxruntime (whose tensors are packed) leaves out of a case with layouts: its inputs
    were given as the logical arrays its strides read, and no output's layout or padding was checked. "" without."""
    inputs = [name for name, layout in input_layouts(case).items() if layout.given]
    outputs = [name for name, layout in output_layouts(case).items() if layout.given]
    parts = []
    if inputs:
        parts.append(f"{', '.join(inputs)} fed packed (the values read through the strides)")
    if outputs:
        parts.append(f"{', '.join(outputs)} read packed (strides and padding not checked)")
    return f"layouts not exercised through onnxruntime: {'; '.join(parts)}" if parts else ""
