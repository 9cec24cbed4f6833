"""A case as the DirectML operator descriptor it describes: its operator's DML_*_OPERATOR_DESC (each operator's
module gives its fields, dml_fields.py), laid out by ctypes as DirectML.h lays it out (dml_abi.py), every field as
the case writes it, and the buffers DirectML binds: one per tensor, in the operator's binding order (an absent
optional tensor stays unbound).

Nothing is lowered or rewritten. A value a field's C type cannot hold (a negative Axis in a UINT) makes the case
NOT_EXPRESSIBLE (Inexpressible, raised where the field is made): no descriptor can say it.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, assert_never

from conformance.ep import dml_abi as abi
from conformance.ep.dml_fields import (
    Bool,
    Enum,
    Field,
    Float,
    FusedActivation,
    Inexpressible,
    Int,
    IntArray,
    OptionalTensor,
    Tensor,
    TensorLayout,
    Uint,
    UintArray,
    bindings,
)
from conformance.ep.operators import OPERATORS
from conformance.model import CONSTANT_INPUTS, OUTPUT_NAMES, Case

# run/runner.py takes Inexpressible from here, where describe_operator raises it.
__all__ = ["DmlOperator", "Inexpressible", "desc_struct", "describe_operator"]


@dataclass(frozen=True)
class DmlOperator:
    """The descriptor block (dml_abi.Block's bytes and pointer offsets), where its DML_OPERATOR_DESC is, and the
    tensors in the operator's binding order (None: an optional input the case leaves out)."""

    operator: str  # the DML_OPERATOR_TYPE's name
    block: bytes
    pointers: tuple[tuple[int, int], ...]  # (a pointer field's offset, its target's size): dml_abi.Block.relocations
    desc_at: int
    inputs: tuple[TensorLayout | None, ...]
    outputs: tuple[TensorLayout, ...]
    owned: frozenset[str] = frozenset()  # the inputs whose descs are flagged DML_TENSOR_FLAG_OWNED_BY_DML


def _c_type(field: Field) -> Any:
    """The field's C type as ctypes lays it out (x64)."""
    match field:
        case Tensor() | OptionalTensor() | UintArray() | IntArray() | FusedActivation():
            return abi.Pointer
        case Uint() | Enum():
            return ctypes.c_uint32
        case Int() | Bool():
            return ctypes.c_int32
        case Float():
            return ctypes.c_float
        case _:
            assert_never(field)


def _tensor(block: abi.Block, layout: TensorLayout | None, owned: frozenset[str]) -> int:
    if layout is None:
        return 0
    desc = abi.BufferTensorDesc(
        DataType=abi.DATA_TYPES[layout.data_type],
        Flags=abi.TENSOR_FLAG_OWNED_BY_DML if layout.name in owned else abi.TENSOR_FLAG_NONE,
        DimensionCount=len(layout.sizes),
        Sizes=block.uints(layout.sizes),
        Strides=block.uints(layout.strides) if layout.strides is not None else 0,
        TotalTensorSizeInBytes=layout.buffer_bytes,
        GuaranteedBaseOffsetAlignment=0,
    )
    return block.add(abi.TensorDesc(Type=abi.TENSOR_TYPE_BUFFER, Desc=block.add(desc)))


def _activation(block: abi.Block, field: FusedActivation) -> int:
    if field.activation is None:
        return 0
    parameters = field.parameters
    desc = abi.activation_struct([name for name, _ in parameters])(**dict(parameters))
    return block.add(abi.OperatorDesc(Type=field.operator_type, Desc=block.add(desc)))


def _value(block: abi.Block, field: Field, tensors: Mapping[str, int]) -> int | float:
    """The field's value in the struct; what it points to placed in ``block`` first (its tensor's already are)."""
    match field:
        case Tensor() | OptionalTensor():
            return tensors[field.name]
        case Uint(value=value) | Int(value=value):
            return value
        case Float(value=number):
            return number
        case Bool(value=flag):
            return int(flag)
        case Enum():
            return field.enum.values[field.member]
        case UintArray(values=values):
            return block.uints(values)
        case IntArray(values=values):
            return block.ints(values)
        case FusedActivation():
            return _activation(block, field)
        case _:
            assert_never(field)


def desc_struct(operator: abi.OperatorType, fields: Sequence[Field]) -> type[ctypes.Structure]:
    """The operator's DML_*_OPERATOR_DESC struct: its fields in order, each of its C type."""
    return abi.struct(operator.name, [(field.name, _c_type(field)) for field in fields])


def describe_operator(case: Case, layouts: Mapping[str, TensorLayout], owned_by_dml: bool = False) -> DmlOperator:
    """The case's DML operator descriptor over its tensors' ``layouts`` (by DML name; an optional input absent);
    Inexpressible where a field cannot hold the case's value. The block holds the tensors' descs first, in the
    desc's order, then what the other fields point to, then the desc and its DML_OPERATOR_DESC. ``owned_by_dml``:
    the operator's constant inputs that the case gives (model.CONSTANT_INPUTS) flagged
    DML_TENSOR_FLAG_OWNED_BY_DML."""
    entry = OPERATORS[case.operator]
    fields = entry.dml_fields(case.descriptor, layouts)
    inputs, outputs = bindings(fields, OUTPUT_NAMES[case.operator])
    given = {layout.name for layout in inputs if layout is not None}
    owned = frozenset(given & set(CONSTANT_INPUTS[case.operator])) if owned_by_dml else frozenset()
    block = abi.Block()
    tensors = {f.name: _tensor(block, f.layout, owned) for f in fields if isinstance(f, Tensor | OptionalTensor)}
    values = {f.name: _value(block, f, tensors) for f in fields}
    desc = block.add(desc_struct(entry.dml_operator, fields)(**values))
    at = block.add(abi.OperatorDesc(Type=entry.dml_operator.value, Desc=desc))
    return DmlOperator(entry.dml_operator.name, bytes(block.data), block.relocations(), at, inputs, outputs, owned)
