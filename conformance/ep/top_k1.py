"""TOP_K1 in the ep stage: its ONNX form (top_k1_lowering.py), DML_TOP_K1_OPERATOR_DESC field by field, what its ONNX
form reaches on DirectML, and the scratch DirectML holds for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from conformance.ep import dml_fields as dml
from conformance.ep.dml_abi import AXIS_DIRECTION, OperatorType
from conformance.ep.entry import EpEntry, always
from conformance.model import (
    INPUT_TENSOR,
    OUTPUT_INDEX_TENSOR,
    OUTPUT_VALUE_TENSOR,
    Descriptor,
    Operator,
    TopK1Desc,
)

if TYPE_CHECKING:
    from conformance.ep.graph import Array, LoweredGraph

DML_TOP_K1 = OperatorType("DML_OPERATOR_TOP_K1", 112)


def _lower(desc: Descriptor, inputs: Mapping[str, Array], ep_name: str) -> LoweredGraph:
    from conformance.ep.top_k1_lowering import lower_top_k1  # onnx: only where a case is lowered

    return lower_top_k1(desc, inputs, ep_name)


def _dml_fields(desc: Descriptor, tensors: Mapping[str, dml.TensorLayout]) -> tuple[dml.Field, ...]:
    """DML_TOP_K1_OPERATOR_DESC: OutputIndexTensor as the case lays it out (UINT32, not onnxruntime's int64)."""
    assert isinstance(desc, TopK1Desc)
    return (
        dml.Tensor(INPUT_TENSOR, tensors[INPUT_TENSOR]),
        dml.Tensor(OUTPUT_VALUE_TENSOR, tensors[OUTPUT_VALUE_TENSOR]),
        dml.Tensor(OUTPUT_INDEX_TENSOR, tensors[OUTPUT_INDEX_TENSOR]),
        dml.Uint("Axis", desc.axis),
        dml.Uint("K", desc.k),
        dml.Enum("AxisDirection", AXIS_DIRECTION, desc.axis_direction.value),
    )


ENTRY = EpEntry(
    operator=Operator.TOP_K1,
    lower=_lower,
    same_for_every_ep=True,
    dml_operator=DML_TOP_K1,
    dml_fields=_dml_fields,
    # DmlOperatorTopk.cpp: TopK (opsets 10, 11) always builds DML_OPERATOR_TOP_K1 (largest -> AxisDirection).
    dml_rules={"TopK": always(DML_TOP_K1)},
    fused_activations=frozenset(),
    # DirectML's TOP_K1 asks for 16 bytes of temporary resource per input element (twice each element's value and
    # UINT32 index: 16, 12 and 10 bytes for 4-, 2- and 1-byte types, as --ep dmlop's binding properties say).
    session_scratch=16,
    dispatch_scratch=16,
)
