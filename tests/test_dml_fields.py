"""One description of each operator's DML desc (ep/dml_fields.py, written in each operator's module), two spellings:
the runner's descriptor bytes (ep/dml_descriptor.py) and the DxDispatch model's desc (ep/dxdispatch.py).

Expectations come from DirectML.h (the Microsoft.AI.DirectML 1.15 package, DML_TARGET_VERSION 0x6400): each desc's
fields in the header's order with their C types, the DML_OPERATOR_TYPE and enum values, and the x64 offsets computed
by hand from the C rules (a field at the next multiple of its size, the struct padded to its largest field's). The
bytes are then read back by those offsets alone, never through the code under test's layout, and must say what the
DxDispatch desc says, for every case of the library."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any, assert_never

import numpy as np
import pytest

from conformance.cases.layouts import Layout, case_layouts, input_layouts, output_layouts
from conformance.cases.suite import collect
from conformance.ep import dml_abi as abi
from conformance.ep import dml_fields as dml
from conformance.ep.dml_descriptor import desc_struct, describe_operator
from conformance.ep.dml_fields import Inexpressible
from conformance.ep.dxdispatch import dxdispatch_model, operator_desc
from conformance.ep.operators import OPERATORS
from conformance.model import AxisDirection, Case, DataType, FeatureLevel, Operator, TensorSpec, TopK1Desc

REPO = Path(__file__).resolve().parent.parent
POINTER = "const DML_TENSOR_DESC*"
MAYBE_NULL = "_Maybenull_ const DML_TENSOR_DESC*"
FUSED = "_Maybenull_ const DML_OPERATOR_DESC*"

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
DESC_OF = {operator: OPERATORS[operator].dml_operator.name for operator in Operator}
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
            return FUSED
        case _:
            assert_never(field)


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


def _at(block: bytes, at: int, fmt: str) -> Any:
    return struct.unpack_from(fmt, block, at)[0]


def _tensor_from_bytes(block: bytes, at: int) -> dict[str, Any] | None:
    """A DML_TENSOR_DESC* read back: the DML_BUFFER_TENSOR_DESC's fields (None: NULL)."""
    if at == 0:
        return None
    assert _at(block, at, "<I") == 1  # DML_TENSOR_TYPE_BUFFER
    buffer = _at(block, at + 8, "<Q")
    data_type, flags, rank = struct.unpack_from("<III", block, buffer)
    sizes, strides = _at(block, buffer + 16, "<Q"), _at(block, buffer + 24, "<Q")
    return {
        "DataType": data_type,
        "Flags": flags,
        "Sizes": list(struct.unpack_from(f"<{rank}I", block, sizes)) if rank else [],
        "Strides": list(struct.unpack_from(f"<{rank}I", block, strides)) if strides else None,
        "TotalTensorSizeInBytes": _at(block, buffer + 32, "<Q"),
        "GuaranteedBaseOffsetAlignment": _at(block, buffer + 40, "<I"),
    }


def _same_tensor(read: dict[str, Any] | None, written: Any, layout: Layout | None) -> None:
    if written is None:
        assert read is None and layout is None
        return
    assert read is not None and layout is not None and written["Type"] == "DML_TENSOR_TYPE_BUFFER"
    desc = written["Desc"]
    assert read["DataType"] == DATA_TYPES[desc["DataType"].removeprefix("DML_TENSOR_DATA_TYPE_")]
    assert (read["Flags"], desc["Flags"], read["GuaranteedBaseOffsetAlignment"]) == (0, "DML_TENSOR_FLAG_NONE", 0)
    assert read["Sizes"] == desc["Sizes"] and desc["DimensionCount"] == len(desc["Sizes"])
    assert read["Strides"] == desc.get("Strides")
    # TotalTensorSizeInBytes: the runner's is the binding's size; DxDispatch's is written where the case gives it.
    assert read["TotalTensorSizeInBytes"] == desc.get("TotalTensorSizeInBytes", layout.buffer_bytes)


def _same_field(block: bytes, at: int, kind: str, written: Any, layout: Layout | None) -> None:
    """The field of C type ``kind`` at ``at`` in the runner's bytes says what DxDispatch's desc says (``written``;
    None: left out)."""
    if kind in (POINTER, MAYBE_NULL):
        _same_tensor(_tensor_from_bytes(block, _at(block, at, "<Q")), written, layout)
    elif kind in ("UINT", "INT", "BOOL"):
        assert _at(block, at, "<i" if kind != "UINT" else "<I") == int(written)
    elif kind == "FLOAT":
        assert np.float32(_at(block, at, "<f")) == np.float32(written)
    elif kind == "DML_AXIS_DIRECTION":
        assert _at(block, at, "<I") == ENUMS[written]
    elif kind in ("const UINT*", "const INT*"):
        target = _at(block, at, "<Q")
        assert (target == 0) == (not written)
        kind_char = "I" if kind == "const UINT*" else "i"
        assert not written or list(struct.unpack_from(f"<{len(written)}{kind_char}", block, target)) == written
    else:  # a fused activation: its DML_OPERATOR_DESC, its desc's two NULL tensors, then its FLOATs in order
        assert kind == FUSED, f"no reading of a {kind} field: add one here"
        target = _at(block, at, "<Q")
        assert (target == 0) == (written is None)
        if written is not None:
            kind_name = written["Type"].removeprefix("DML_OPERATOR_ACTIVATION_")
            assert _at(block, target, "<I") == abi.ACTIVATIONS[kind_name][0]
            activation = _at(block, target + 8, "<Q")
            values = list(written["Desc"].values())
            assert struct.unpack_from("<QQ", block, activation) == (0, 0)
            read = struct.unpack_from(f"<{len(values)}f", block, activation + 16) if values else ()
            assert [np.float32(v) for v in read] == [np.float32(v) for v in values]


def test_the_runner_s_bytes_and_the_dxdispatch_desc_say_the_same_for_every_library_case() -> None:
    compared = 0
    for case in _library():
        layouts = _layouts(case)
        try:
            op = describe_operator(case, layouts)
        except Inexpressible as refused:
            with pytest.raises(Inexpressible) as again:
                operator_desc(case, layouts)
            assert str(again.value) == str(refused)
            continue
        name, written = operator_desc(case, layouts)
        value, fields, _ = HEADER[name]
        assert op.operator == name and _at(op.block, op.desc_at, "<I") == value
        desc = _at(op.block, op.desc_at + 8, "<Q")
        for field, kind, offset in fields:
            _same_field(op.block, desc + offset, kind, written.get(field), layouts.get(field))
        compared += 1
    assert compared > 1000


def test_a_value_its_c_type_cannot_hold_is_refused_by_both_spellings() -> None:
    data = TensorSpec((1, 4), DataType.FLOAT32, data=(3.0, 1.0, 4.0, 1.5), data_shape=(1, 4))
    desc = TopK1Desc(data, -1, 2, AxisDirection.DECREASING)
    carried = case_layouts(Operator.TOP_K1, desc)
    case = Case("t.yaml::t", "t.yaml", Operator.TOP_K1, FeatureLevel(5, 0), desc, layouts=carried)
    layouts = _layouts(case)
    with pytest.raises(Inexpressible, match="Axis -1 cannot be written in a DML descriptor: it is a UINT"):
        describe_operator(case, layouts)
    with pytest.raises(Inexpressible, match="Axis -1 cannot be written in a DML descriptor: it is a UINT"):
        dxdispatch_model(case, layouts, {"InputTensor": np.zeros((1, 4), np.float32)})
