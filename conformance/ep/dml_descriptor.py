"""A case as the DirectML operator descriptor it describes: DML_TOP_K1_OPERATOR_DESC,
DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC (with its fused activation) or DML_SLICE1_OPERATOR_DESC, every field
as the case writes it (dml_abi.py lays the structs out), and the buffers DirectML binds: one per tensor, in the
operator's binding order (an absent optional tensor stays unbound).

Nothing is lowered or rewritten: TOP_K1's OutputIndexTensor is UINT32, NormalizeVariance false stays false, any Axes
go through, Scale without Bias too, GELU is fused. A value a field's C type cannot hold (a negative Axis in a UINT)
makes the case NOT_EXPRESSIBLE here: no descriptor can say it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from conformance.dtypes import numpy_dtype
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
    TensorSpec,
    TopK1Desc,
)


class Inexpressible(ValueError):
    """A case no DML descriptor can say (one line: which field, which value, its C type)."""


@dataclass(frozen=True)
class Binding:
    """One tensor's DML_BUFFER_TENSOR_DESC and buffer: ``strides`` as the case gives them (None: packed, the desc's
    Strides NULL); ``total_bytes``: TotalTensorSizeInBytes, the binding's size."""

    tensor: str
    sizes: tuple[int, ...]
    data_type: DataType
    strides: tuple[int, ...] | None
    total_bytes: int

    @property
    def dtype(self) -> np.dtype:
        return numpy_dtype(self.data_type)


@dataclass(frozen=True)
class DmlOperator:
    """The descriptor block (dml_abi.Block's bytes and pointer offsets), where its DML_OPERATOR_DESC is, and the
    bindings in the operator's order (None: an optional input the case leaves out)."""

    operator: str  # "DML_OPERATOR_TOP_K1"
    block: bytes
    pointers: tuple[int, ...]
    desc_at: int
    inputs: tuple[Binding | None, ...]
    outputs: tuple[Binding, ...]


def buffer_bytes(sizes: Sequence[int], strides: Sequence[int] | None, element_size: int) -> int:
    """DMLCalcBufferTensorSize: the bytes up to the last element's end, rounded up to 4 (0 for an empty tensor)."""
    if any(size == 0 for size in sizes):
        return 0
    if strides is None:
        last = math.prod(sizes) - 1
    else:
        last = sum((size - 1) * stride for size, stride in zip(sizes, strides, strict=True))
    return ((last + 1) * element_size + 3) & ~3


def _binding(name: str, sizes: Sequence[int], data_type: DataType, strides: Sequence[int] | None) -> Binding:
    for size in sizes:
        _uint(f"{name}.Sizes", size)
    if strides is not None:
        for stride in strides:
            _uint(f"{name}.Strides", stride)
    total = buffer_bytes(sizes, strides, numpy_dtype(data_type).itemsize)
    return Binding(name, tuple(sizes), data_type, None if strides is None else tuple(strides), total)


def _input(name: str, spec: TensorSpec) -> Binding:
    return _binding(name, spec.sizes, spec.data_type, None)


def output_bindings(case: Case) -> tuple[Binding, ...]:
    """Each output's binding: the Sizes and DataType the case writes, else those the spec derives."""
    d = case.descriptor
    derived: dict[str, tuple[tuple[int, ...], DataType]]
    if isinstance(d, TopK1Desc):
        derived = {
            OUTPUT_VALUE_TENSOR: (d.output_sizes, d.input.data_type),
            OUTPUT_INDEX_TENSOR: (d.output_sizes, DataType.UINT32),
        }
    elif isinstance(d, Slice1Desc):
        derived = {OUTPUT_TENSOR: (d.output_sizes, d.input.data_type)}
    else:
        derived = {OUTPUT_TENSOR: (d.input.sizes, d.input.data_type)}
    bindings = []
    for name in OUTPUT_NAMES[case.operator]:
        sizes, data_type = derived[name]
        given = case.outputs.get(name)
        if given is not None:
            sizes = given.sizes if given.sizes is not None else sizes
            data_type = given.data_type if given.data_type is not None else data_type
        bindings.append(_binding(name, sizes, data_type, None))
    return tuple(bindings)


def _uint(field: str, value: int) -> int:
    if not 0 <= value <= abi.UINT_MAX:
        raise Inexpressible(f"{field} {value} cannot be written in a DML descriptor: it is a UINT")
    return value


def _int(field: str, value: int) -> int:
    if not abi.INT_MIN <= value <= abi.INT_MAX:
        raise Inexpressible(f"{field} {value} cannot be written in a DML descriptor: it is an INT")
    return value


def _tensor(block: abi.Block, binding: Binding) -> int:
    desc = abi.BufferTensorDesc(
        DataType=abi.DATA_TYPES[binding.data_type],
        Flags=0,
        DimensionCount=len(binding.sizes),
        Sizes=block.uints(binding.sizes),
        Strides=block.uints(binding.strides) if binding.strides is not None else 0,
        TotalTensorSizeInBytes=binding.total_bytes,
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


def describe_operator(case: Case) -> DmlOperator:
    """The case's DML operator descriptor and bindings; Inexpressible where a field cannot hold the case's value."""
    d = case.descriptor
    inputs: list[Binding | None] = [_input(INPUT_TENSOR, d.input)]
    if isinstance(d, Mvn1Desc):
        inputs.append(None if d.scale is None else _input(SCALE_TENSOR, d.scale))
        inputs.append(None if d.bias is None else _input(BIAS_TENSOR, d.bias))
    outputs = output_bindings(case)
    block = abi.Block()
    ins = [0 if binding is None else _tensor(block, binding) for binding in inputs]
    outs = {binding.tensor: _tensor(block, binding) for binding in outputs}
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
    return DmlOperator(name, bytes(block.data), tuple(block.pointers), at, tuple(inputs), outputs)
