"""One description of each operator's DML desc (ep/dml_fields.py, written in each operator's module), laid out as the
runner's descriptor bytes (ep/dml_descriptor.py).

Expectations come from DirectML.h (the Microsoft.AI.DirectML 1.15 package, DML_TARGET_VERSION 0x6400): each desc's
fields in the header's order with their C types, the DML_OPERATOR_TYPE values, and the x64 offsets computed by hand
from the C rules (a field at the next multiple of its size, the struct padded to its largest field's)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from conformance.cases.layouts import Layout, input_layouts, output_layouts
from conformance.cases.suite import collect
from conformance.ep import dml_abi as abi
from conformance.ep import dml_fields as dml
from conformance.ep.dml_descriptor import desc_struct
from conformance.ep.operators import OPERATORS
from conformance.model import Case, Operator

REPO = Path(__file__).resolve().parent.parent
POINTER = "const DML_TENSOR_DESC*"
MAYBE_NULL = "_Maybenull_ const DML_TENSOR_DESC*"

# DirectML.h: each desc's DML_OPERATOR_TYPE value and its fields, in order, with their C types and x64 offsets; the
# struct's size.
HEADER: Mapping[str, tuple[int, tuple[tuple[str, str, int], ...], int]] = {
    "DML_OPERATOR_TOP_K1": (
        112,
        (
            ("InputTensor", POINTER, 0),
            ("OutputValueTensor", POINTER, 8),
            ("OutputIndexTensor", POINTER, 16),
            ("Axis", "UINT", 24),
            ("K", "UINT", 28),
            ("AxisDirection", "DML_AXIS_DIRECTION", 32),
        ),
        40,
    ),
    "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1": (
        115,
        (
            ("InputTensor", POINTER, 0),
            ("ScaleTensor", MAYBE_NULL, 8),
            ("BiasTensor", MAYBE_NULL, 16),
            ("OutputTensor", POINTER, 24),
            ("AxisCount", "UINT", 32),
            ("Axes", "const UINT*", 40),
            ("NormalizeVariance", "BOOL", 48),
            ("Epsilon", "FLOAT", 52),
            ("FusedActivation", "_Maybenull_ const DML_OPERATOR_DESC*", 56),
        ),
        64,
    ),
    "DML_OPERATOR_SLICE1": (
        111,
        (
            ("InputTensor", POINTER, 0),
            ("OutputTensor", POINTER, 8),
            ("DimensionCount", "UINT", 16),
            ("InputWindowOffsets", "const UINT*", 24),
            ("InputWindowSizes", "const UINT*", 32),
            ("InputWindowStrides", "const INT*", 40),
        ),
        48,
    ),
}
# The same facts by the case format's operator.
DESC_OF = {
    Operator.TOP_K1: "DML_OPERATOR_TOP_K1",
    Operator.MEAN_VARIANCE_NORMALIZATION1: "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1",
    Operator.SLICE1: "DML_OPERATOR_SLICE1",
}
ENUMS = {"DML_AXIS_DIRECTION_INCREASING": 0, "DML_AXIS_DIRECTION_DECREASING": 1}
DATA_TYPES = {"FLOAT32": 1, "FLOAT16": 2, "UINT32": 3, "UINT16": 4, "UINT8": 5, "INT32": 6, "INT16": 7, "INT8": 8}


def _c_type(field: dml.Field) -> str:
    """How DirectML.h spells the field's type."""
    match field:
        case dml.Tensor():
            return POINTER
        case dml.OptionalTensor():
            return MAYBE_NULL
        case dml.Uint():
            return "UINT"
        case dml.Int():
            return "INT"
        case dml.Float():
            return "FLOAT"
        case dml.Bool():
            return "BOOL"
        case dml.Enum():
            return field.enum.name
        case dml.UintArray():
            return "const UINT*"
        case dml.IntArray():
            return "const INT*"
        case dml.FusedActivation():
            return "_Maybenull_ const DML_OPERATOR_DESC*"


def _layouts(case: Case) -> dict[str, Layout]:
    return input_layouts(case) | output_layouts(case)


def _library() -> list[Case]:
    return [entry for entry in collect([str(REPO / "cases")]).entries if isinstance(entry, Case)]


def _first_of_each_operator() -> list[Case]:
    found: dict[Operator, Case] = {}
    for case in _library():
        found.setdefault(case.operator, case)
    return [found[operator] for operator in Operator]


@pytest.mark.parametrize("case", _first_of_each_operator(), ids=lambda case: case.operator.value)
def test_each_desc_is_directml_h_s_fields_in_order_at_its_x64_offsets(case: Case) -> None:
    entry = OPERATORS[case.operator]
    value, fields, size = HEADER[DESC_OF[case.operator]]
    assert (entry.dml_operator.name, entry.dml_operator.value) == (DESC_OF[case.operator], value)
    described = entry.dml_fields(case.descriptor, _layouts(case))
    assert [(field.name, _c_type(field)) for field in described] == [(name, kind) for name, kind, _ in fields]
    laid_out = desc_struct(entry.dml_operator, described)
    assert [getattr(laid_out, name).offset for name, _, _ in fields] == [offset for _, _, offset in fields]
    assert abi.ctypes.sizeof(laid_out) == size
