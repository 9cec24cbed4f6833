"""DML data types as NumPy types, and each type's range (the ONNX element types are ep/graph.py's)."""

from __future__ import annotations

import numpy as np

from conformance.data_type import DataType

NUMPY_DTYPES: dict[DataType, np.dtype] = {
    DataType.FLOAT32: np.dtype(np.float32),
    DataType.FLOAT16: np.dtype(np.float16),
    DataType.INT32: np.dtype(np.int32),
    DataType.INT16: np.dtype(np.int16),
    DataType.INT8: np.dtype(np.int8),
    DataType.UINT32: np.dtype(np.uint32),
    DataType.UINT16: np.dtype(np.uint16),
    DataType.UINT8: np.dtype(np.uint8),
}


def numpy_dtype(data_type: DataType) -> np.dtype:
    return NUMPY_DTYPES[data_type]


def value_range(data_type: DataType) -> tuple[float, float]:
    """The finite range a value of ``data_type`` can hold (used to reject out-of-range Data)."""
    dtype = numpy_dtype(data_type)
    if data_type.is_float:
        info = np.finfo(dtype)
        return float(info.min), float(info.max)
    iinfo = np.iinfo(dtype)
    return float(iinfo.min), float(iinfo.max)
