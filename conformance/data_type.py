"""DML_TENSOR_DATA_TYPE: the data types a case's tensors may have, the core's leaf, importing nothing.

It is a module of its own so that the core modules that need it share it without an import cycle: model.py (the
cases), layout.py (a tensor's buffer layout, which model.py names for ``Case.layouts``) and dtypes.py (their NumPy
types, which layout.py uses). model.py re-exports it, where the rest of the package imports it from.
"""

from __future__ import annotations

import enum


class DataType(enum.StrEnum):
    """DML_TENSOR_DATA_TYPE names used by the three spec pages' tensor-support tables."""

    FLOAT32 = "FLOAT32"
    FLOAT16 = "FLOAT16"
    INT32 = "INT32"
    INT16 = "INT16"
    INT8 = "INT8"
    UINT32 = "UINT32"
    UINT16 = "UINT16"
    UINT8 = "UINT8"

    @property
    def is_float(self) -> bool:
        return self in (DataType.FLOAT32, DataType.FLOAT16)
