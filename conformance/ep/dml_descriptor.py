"""A case as the DirectML operator descriptor it describes: DML_TOP_K1_OPERATOR_DESC,
DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC (with its fused activation) or DML_SLICE1_OPERATOR_DESC, every field
as the case writes it (dml_abi.py lays the structs out), and the buffers DirectML binds: one per tensor, in the
operator's binding order (an absent optional tensor stays unbound).

Nothing is lowered or rewritten: TOP_K1's OutputIndexTensor is UINT32, NormalizeVariance false stays false, any Axes
go through, Scale without Bias too, GELU is fused. A value a field's C type cannot hold (a negative Axis in a UINT)
makes the case NOT_EXPRESSIBLE here: no descriptor can say it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from conformance.ep import dml_abi as abi
from conformance.model import (
    BIAS_TENSOR,
    INPUT_TENSOR,
    OUTPUT_INDEX_TENSOR,
    OUTPUT_NAMES,
    OUTPUT_TENSOR,
    OUTPUT_VALUE_TENSOR,
    SCALE_TENSOR,
    Case,
    DataType,
    Mvn1Desc,
    Slice1Desc,
    TopK1Desc,
)


class Inexpressible(ValueError):
    """A case no DML descriptor can say (one line: which field, which value, its C type)."""


class TensorLayout(Protocol):
    """One tensor's DML_BUFFER_TENSOR_DESC as the run stage gives it (cases/layouts.py's Layout): ``strides`` None
    is packed (the desc's Strides NULL); ``buffer_bytes`` is TotalTensorSizeInBytes, the binding's size."""

    @property
    def name(self) -> str: ...
    @property
    def sizes(self) -> tuple[int, ...]: ...
    @property
    def data_type(self) -> DataType: ...
    @property
    def strides(self) -> tuple[int, ...] | None: ...
    @property
    def buffer_bytes(self) -> int: ...


@dataclass(frozen=True)
class DmlOperator:
    """The descriptor block (dml_abi.Block's bytes and pointer offsets), where its DML_OPERATOR_DESC is, and the
    tensors in the operator's binding order (None: an optional input the case leaves out)."""

    operator: str  # "DML_OPERATOR_TOP_K1"
    block: bytes
    pointers: tuple[tuple[int, int], ...]  # (a pointer field's offset, its target's size): dml_abi.Block.relocations
    desc_at: int
    inputs: tuple[TensorLayout | None, ...]
    outputs: tuple[TensorLayout, ...]


def _uint(field: str, value: int) -> int:
    if not 0 <= value <= abi.UINT_MAX:
        raise Inexpressible(f"{field} {value} cannot be written in a DML descriptor: it is a UINT")
    return value


def _int(field: str, value: int) -> int:
    if not abi.INT_MIN <= value <= abi.INT_MAX:
        raise Inexpressible(f"{field} {value} cannot be written in a DML descriptor: it is an INT")
    return value


def _tensor(block: abi.Block, layout: TensorLayout) -> int:
    if layout.strides is not None and len(layout.strides) != len(layout.sizes):
        raise Inexpressible(
            f"{layout.name}: {len(layout.strides)} Strides for {len(layout.sizes)} Sizes cannot be written in a "
            "DML_BUFFER_TENSOR_DESC: its one DimensionCount counts both"
        )
    for size in layout.sizes:
        _uint(f"{layout.name}.Sizes", size)
    for stride in layout.strides or ():
        _uint(f"{layout.name}.Strides", stride)
    desc = abi.BufferTensorDesc(
        DataType=abi.DATA_TYPES[layout.data_type],
        Flags=0,
        DimensionCount=len(layout.sizes),
        Sizes=block.uints(layout.sizes),
        Strides=block.uints(layout.strides) if layout.strides is not None else 0,
        TotalTensorSizeInBytes=layout.buffer_bytes,
        GuaranteedBaseOffsetAlignment=0,
    )
    return block.add(abi.TensorDesc(Type=abi.TENSOR_TYPE_BUFFER, Desc=block.add(desc)))


def _activation(block: abi.Block, case: Case, d: Mvn1Desc) -> int:
    if d.fused_activation is None:
        return 0
    kind = d.fused_activation.type
    if kind not in abi.ACTIVATIONS:
        raise Inexpressible(
            f"FusedActivation {kind} cannot be fused in a DML descriptor: its desc needs a tensor (a fused "
            "activation's tensors are NULL)"
        )
    type_value, fields = abi.ACTIVATIONS[kind]
    struct = abi.activation_struct([name for name, _ in fields])
    params = d.fused_activation.params
    desc = struct(**{name: params[key] for name, key in fields})
    return block.add(abi.OperatorDesc(Type=type_value, Desc=block.add(desc)))


def _top_k1(block: abi.Block, d: TopK1Desc, ins: Sequence[int], outs: Mapping[str, int]) -> abi.TopK1Desc:
    return abi.TopK1Desc(
        InputTensor=ins[0],
        OutputValueTensor=outs[OUTPUT_VALUE_TENSOR],
        OutputIndexTensor=outs[OUTPUT_INDEX_TENSOR],
        Axis=_uint("Axis", d.axis),
        K=_uint("K", d.k),
        AxisDirection=abi.AXIS_DIRECTIONS[d.axis_direction.value],
    )


def _slice1(block: abi.Block, d: Slice1Desc, ins: Sequence[int], outs: Mapping[str, int]) -> abi.Slice1Desc:
    return abi.Slice1Desc(
        InputTensor=ins[0],
        OutputTensor=outs[OUTPUT_TENSOR],
        DimensionCount=len(d.offsets),
        InputWindowOffsets=block.uints([_uint("InputWindowOffsets", v) for v in d.offsets]),
        InputWindowSizes=block.uints([_uint("InputWindowSizes", v) for v in d.sizes]),
        InputWindowStrides=block.ints([_int("InputWindowStrides", v) for v in d.strides]),
    )


def describe_operator(case: Case, layouts: Mapping[str, TensorLayout]) -> DmlOperator:
    """The case's DML operator descriptor over its tensors' ``layouts`` (by DML name; an optional input absent);
    Inexpressible where a field cannot hold the case's value."""
    d = case.descriptor
    names = (INPUT_TENSOR, SCALE_TENSOR, BIAS_TENSOR) if isinstance(d, Mvn1Desc) else (INPUT_TENSOR,)
    inputs = [layouts.get(name) for name in names]
    outputs = tuple(layouts[name] for name in OUTPUT_NAMES[case.operator])
    block = abi.Block()
    ins = [0 if layout is None else _tensor(block, layout) for layout in inputs]
    outs = {layout.name: _tensor(block, layout) for layout in outputs}
    if isinstance(d, TopK1Desc):
        name, desc = "DML_OPERATOR_TOP_K1", block.add(_top_k1(block, d, ins, outs))
    elif isinstance(d, Slice1Desc):
        name, desc = "DML_OPERATOR_SLICE1", block.add(_slice1(block, d, ins, outs))
    else:
        mvn = abi.Mvn1Desc(
            InputTensor=ins[0],
            ScaleTensor=ins[1],
            BiasTensor=ins[2],
            OutputTensor=outs[OUTPUT_TENSOR],
            AxisCount=len(d.axes),
            Axes=block.uints([_uint("Axes", axis) for axis in d.axes]),
            NormalizeVariance=int(d.normalize_variance),
            Epsilon=d.epsilon,
            FusedActivation=_activation(block, case, d),
        )
        name, desc = "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1", block.add(mvn)
    at = block.add(abi.OperatorDesc(Type=abi.OPERATOR_TYPES[name], Desc=desc))
    return DmlOperator(name, bytes(block.data), block.relocations(), at, tuple(inputs), outputs)
