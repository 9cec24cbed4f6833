"""DirectML's operator-descriptor ABI, from DirectML.h's public facts: enum values and the structs' layouts, laid out
by ctypes (Windows x64 and Linux x86-64 align these field types alike), into one block whose pointer fields hold
offsets into the block; the DirectML runner (ep/wine/dmlrunner.c) turns them into addresses and hands the block's
DML_OPERATOR_DESC to IDMLDevice::CreateOperator. So the descriptor DirectML receives is the one written here, field
by field, and the runner needs no DirectML header. An operator's own desc struct is laid out from its fields
(``struct``), as each operator's module describes them (dml_fields.py); the structs every desc shares are here.

Each enum value is DirectML.h's: DML_OPERATOR_TYPE counts from DML_OPERATOR_INVALID = 0 through the header's
``#if DML_TARGET_VERSION`` blocks (DML_OPERATOR_SCATTER is an alias and takes no value); an operator's own value is
in its module (``OperatorType``).
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.model import DataType


@dataclass(frozen=True)
class OperatorType:
    """One DML_OPERATOR_TYPE member: DirectML.h's name ("DML_OPERATOR_TOP_K1") and its value."""

    name: str
    value: int


@dataclass(frozen=True)
class DmlEnum:
    """A DirectML.h enum a desc field is typed with: its type name ("DML_AXIS_DIRECTION") and each member's value by
    its name without the prefix ("DECREASING"); a member's full name is the two joined by "_"."""

    name: str
    values: Mapping[str, int]

    def spelled(self, member: str) -> str:
        return f"{self.name}_{member}"


# DML_TENSOR_DATA_TYPE.
DATA_TYPES: Mapping[DataType, int] = {
    DataType.FLOAT32: 1,
    DataType.FLOAT16: 2,
    DataType.UINT32: 3,
    DataType.UINT16: 4,
    DataType.UINT8: 5,
    DataType.INT32: 6,
    DataType.INT16: 7,
    DataType.INT8: 8,
}
TENSOR_TYPE_BUFFER = 1  # DML_TENSOR_TYPE_BUFFER
TENSOR_FLAG_NONE, TENSOR_FLAG_OWNED_BY_DML = 0, 1  # DML_TENSOR_FLAGS
AXIS_DIRECTION = DmlEnum("DML_AXIS_DIRECTION", {"INCREASING": 0, "DECREASING": 1})
# DML_EXECUTION_FLAGS by DirectML.h's names (a DxDispatch model names them so too).
EXECUTION_FLAGS: Mapping[str, int] = {
    "DML_EXECUTION_FLAG_NONE": 0,
    "DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION": 0x1,
    "DML_EXECUTION_FLAG_DISABLE_META_COMMANDS": 0x2,
    "DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE": 0x4,
}
MINIMUM_BUFFER_TENSOR_ALIGNMENT = 16  # DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT

# Fusable activations: DML_OPERATOR_TYPE value, and the float fields after InputTensor and OutputTensor in its
# DML_ACTIVATION_*_OPERATOR_DESC, each with the key the case model (model.ACTIVATION_PARAMS) gives it.
# PARAMETERIZED_RELU is absent: its desc carries a SlopeTensor, which a fused activation (its tensors NULL) cannot.
ACTIVATIONS: Mapping[str, tuple[int, tuple[tuple[str, str], ...]]] = {
    "ELU": (35, (("Alpha", "alpha"),)),
    "HARD_SIGMOID": (37, (("Alpha", "alpha"), ("Beta", "beta"))),
    "IDENTITY": (38, ()),
    "LEAKY_RELU": (39, (("Alpha", "alpha"),)),
    "LINEAR": (40, (("Alpha", "alpha"), ("Beta", "beta"))),
    "PARAMETRIC_SOFTPLUS": (43, (("Alpha", "alpha"), ("Beta", "beta"))),
    "RELU": (44, ()),
    "SCALED_ELU": (45, (("Alpha", "alpha"), ("Gamma", "gamma"))),
    "SCALED_TANH": (46, (("Alpha", "alpha"), ("Beta", "beta"))),
    "SIGMOID": (47, ()),
    "SOFTPLUS": (49, (("Steepness", "steepness"),)),
    "SOFTSIGN": (50, ()),
    "TANH": (51, ()),
    "THRESHOLDED_RELU": (52, (("Alpha", "alpha"),)),
    "SHRINK": (90, (("Bias", "bias"), ("Threshold", "threshold"))),
    "CELU": (128, (("Alpha", "alpha"),)),
    "GELU": (157, ()),
    "SWISH": (167, (("SigmoidInputScale", "sigmoid_input_scale"),)),
    "HARD_SWISH": (168, (("Alpha", "alpha"), ("Beta", "beta"))),
}
UINT_MAX = 2**32 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


class Pointer(ctypes.c_uint64):
    """A pointer field: 8 bytes, 8-aligned, as on x64; it holds an offset into the block (0: NULL)."""


class BufferTensorDesc(ctypes.Structure):
    _fields_ = [
        ("DataType", ctypes.c_uint32),
        ("Flags", ctypes.c_uint32),
        ("DimensionCount", ctypes.c_uint32),
        ("Sizes", Pointer),
        ("Strides", Pointer),
        ("TotalTensorSizeInBytes", ctypes.c_uint64),
        ("GuaranteedBaseOffsetAlignment", ctypes.c_uint32),
    ]


class TensorDesc(ctypes.Structure):
    _fields_ = [("Type", ctypes.c_uint32), ("Desc", Pointer)]


class OperatorDesc(ctypes.Structure):
    _fields_ = [("Type", ctypes.c_uint32), ("Desc", Pointer)]


def struct(name: str, fields: Sequence[tuple[str, Any]]) -> type[ctypes.Structure]:
    """A C struct of ``fields`` (name, ctypes type) in order, aligned as x64 aligns them."""
    return type(name, (ctypes.Structure,), {"_fields_": list(fields)})


def activation_struct(fields: Sequence[str]) -> type[ctypes.Structure]:
    """A DML_ACTIVATION_*_OPERATOR_DESC: InputTensor, OutputTensor (NULL when fused), then its FLOAT fields."""
    layout: list[tuple[str, Any]] = [("InputTensor", Pointer), ("OutputTensor", Pointer)]
    layout += [(name, ctypes.c_float) for name in fields]
    return struct("ActivationDesc", layout)


class Block:
    """The descriptor's bytes: structs and arrays appended 8-aligned (16 for the first, after a reserved NULL), each
    pointer field noted (``pointers``: the offsets the runner relocates)."""

    def __init__(self) -> None:
        self.data = bytearray(16)  # offset 0 is NULL: nothing is placed there
        self.pointers: list[int] = []
        self.sizes: dict[int, int] = {}  # each placed struct's or array's offset -> its bytes

    def add(self, value: ctypes.Structure | ctypes.Array[Any]) -> int:
        """Append ``value``; its offset. Its pointer fields must already hold their targets' offsets."""
        self.data += bytes(-len(self.data) % 8)
        at = len(self.data)
        self.data += bytes(value)
        self.sizes[at] = ctypes.sizeof(value)
        if isinstance(value, ctypes.Structure):
            for name, kind, *_ in value._fields_:
                if kind is Pointer and getattr(value, name).value:
                    self.pointers.append(at + getattr(type(value), name).offset)
        return at

    def relocations(self) -> tuple[tuple[int, int], ...]:
        """Each pointer field's offset and the size of what it points to: the runner checks that the target lies in
        the block before it makes the offset an address."""
        found = []
        for at in self.pointers:
            target = int.from_bytes(self.data[at : at + 8], "little")
            found.append((at, self.sizes[target]))
        return tuple(found)

    def uints(self, values: Sequence[int]) -> int:
        return self.add((ctypes.c_uint32 * len(values))(*values)) if values else 0

    def ints(self, values: Sequence[int]) -> int:
        return self.add((ctypes.c_int32 * len(values))(*values)) if values else 0
