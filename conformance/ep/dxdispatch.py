"""A case as a model of DxDispatch, Microsoft's command-line tool that runs DirectML operators from JSON
(github.com/microsoft/DirectML, DxDispatch/doc/Guide.md): the operator's DML_*_OPERATOR_DESC exactly as the case
writes it (the fields its operator's module describes, dml_fields.py, that the runner's descriptor is laid out from
too, by DirectML.h's names; a NULL optional field is left out), its inputs with the case's exact values, its
outputs, then a dispatch, a print and a writeFile of each output. A Windows user runs a failing case with
`dxdispatch.exe dxdispatch.json --dml_feature_level X.Y`, without the harness and without onnxruntime, so that a
mismatch is shown to be DirectML's own.

Exact inputs: DxDispatch reads a JSON number as a double (rapidjson, full precision) and casts it to float, then
to half for FLOAT16 (JsonParsers.cpp, ParseFloatingPointNumber / ParseFloat16). The shortest decimal of a float16 or
float32 value's double (Python's repr) reads back as that double exactly, and every cast after it is exact, so a
float tensor is written as numbers (readable), infinities as "inf"/"-inf". NaN is the one value no decimal holds:
"nan" gives the quiet NaN (0x7FC00000, 0x7E00 as half), so a tensor holding any other NaN (a sign or a payload) is
written as its bit patterns under the unsigned type of the same width instead, which DxDispatch copies as they are
("initializers don't restrict the usage of the resource", Guide.md). Integers are exact as JSON integers.

Outputs start as NaN (floats) or the type's largest value (integers), so that an element DirectML never wrote stands
out in the print. Each tensor is written as the case lays it out (the layouts the run stage gives, cases/layouts.py:
Sizes, DataType, Strides and TotalTensorSizeInBytes, a negative case's own output Sizes included): a strided input's
resource holds its buffer's elements as the strides place them, and a strided output is written to its .npy as its
whole buffer, flat.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import assert_never

import numpy as np

from conformance.dtypes import numpy_dtype
from conformance.ep.dml_abi import EXECUTION_FLAGS as DML_EXECUTION_FLAGS
from conformance.ep.dml_fields import (
    Bool,
    Enum,
    Field,
    Float,
    FusedActivation,
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
from conformance.model import OUTPUT_NAMES, Case, DataType, FeatureLevel
from conformance.results import write_text_atomic

DXDISPATCH_FILE = "dxdispatch.json"
# DML_EXECUTION_FLAGS a dispatchable may carry ("executionFlags": DxDispatch's models/_schema.json), by DirectML.h's
# names: ep/dml_abi.py's table.
EXECUTION_FLAGS = tuple(DML_EXECUTION_FLAGS)
# The NaN DxDispatch writes for "nan": std::numeric_limits<float>::quiet_NaN(), and that float as half_float's half.
_CANONICAL_NAN = {DataType.FLOAT32: 0x7FC00000, DataType.FLOAT16: 0x7E00}
_BITS = {DataType.FLOAT32: DataType.UINT32, DataType.FLOAT16: DataType.UINT16}


def data_type_name(data_type: DataType) -> str:
    """DirectML.h's name of a DML_TENSOR_DATA_TYPE, which DxDispatch reads (as it does the name without prefix)."""
    return f"DML_TENSOR_DATA_TYPE_{data_type.value}"


def tensor_desc(
    data_type: DataType, sizes: Sequence[int], strides: Sequence[int] | None = None, total_bytes: int | None = None
) -> dict[str, object]:
    """A DML_TENSOR_DESC of type DML_TENSOR_TYPE_BUFFER as DxDispatch reads it: the DML_BUFFER_TENSOR_DESC's fields
    (Guide.md, "DML_TENSOR_DESC"). ``strides`` (in elements) and ``total_bytes`` (TotalTensorSizeInBytes) where the
    case gives them; left out, DxDispatch derives them as DirectML does for a packed tensor (no Strides,
    DMLCalcBufferTensorSize), and GuaranteedBaseOffsetAlignment is 0."""
    desc: dict[str, object] = {
        "DataType": data_type_name(data_type),
        "Flags": "DML_TENSOR_FLAG_NONE",
        "DimensionCount": len(sizes),
        "Sizes": list(sizes),
    }
    if strides is not None:
        desc["Strides"] = list(strides)
    if total_bytes is not None:
        desc["TotalTensorSizeInBytes"] = total_bytes
    return {"Type": "DML_TENSOR_TYPE_BUFFER", "Desc": desc}


def _number(value: float) -> float | str:
    """One float element as DxDispatch reads it back exactly: the shortest decimal, or its words for infinities and
    NaN (JSON has no literal for them)."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def initial_values(array: np.ndarray, data_type: DataType) -> dict[str, object]:
    """A buffer resource holding ``array`` (C order) bit for bit: numbers under its own type, or, for a float tensor
    with a NaN other than the one DxDispatch writes for "nan", each element's bits under the unsigned type of its
    width. An empty tensor is one zero element (DxDispatch refuses an empty initializer)."""
    flat = np.ascontiguousarray(array, dtype=numpy_dtype(data_type)).reshape(-1)
    if flat.size == 0:
        return {"initialValuesDataType": data_type_name(data_type), "initialValues": {"valueCount": 1, "value": 0}}
    if data_type.is_float:
        bits = flat.view(numpy_dtype(_BITS[data_type]))
        if np.any(np.isnan(flat) & (bits != _CANONICAL_NAN[data_type])):
            return {"initialValuesDataType": data_type_name(_BITS[data_type]), "initialValues": bits.tolist()}
        values: list[object] = [_number(float(v)) for v in flat.tolist()]
    else:
        values = [int(v) for v in flat.tolist()]
    return {"initialValuesDataType": data_type_name(data_type), "initialValues": values}


def _buffer_elements(layout: TensorLayout) -> int:
    """How many elements of the tensor's type its buffer holds (TotalTensorSizeInBytes, rounded up)."""
    return max(-(-layout.buffer_bytes // layout.element_size), 1)


def _tensor(layout: TensorLayout) -> dict[str, object]:
    """The tensor's desc as the case lays it out: Strides and TotalTensorSizeInBytes where the case gives them."""
    return tensor_desc(layout.data_type, layout.sizes, layout.strides, layout.total_bytes)


def _input_resource(layout: TensorLayout, array: np.ndarray) -> dict[str, object]:
    """An input's resource: its values, or, where it is laid out, its buffer's elements as the strides place them
    (the bytes no element addresses zero)."""
    if not layout.given:
        return initial_values(array, layout.data_type)
    dtype = numpy_dtype(layout.data_type)
    raw = layout.buffer(np.ascontiguousarray(array, dtype=dtype))
    raw += bytes(-len(raw) % dtype.itemsize)
    return initial_values(np.frombuffer(raw, dtype), layout.data_type)


def _output_resource(layout: TensorLayout) -> dict[str, object]:
    """An output buffer (its whole TotalTensorSizeInBytes) filled with NaN, or the largest value of an integer type
    (never an index TOP_K1 can return), so that an element DirectML never wrote shows."""
    count = _buffer_elements(layout) if layout.given else max(math.prod(layout.sizes), 1)
    data_type = layout.data_type
    fill: object = "nan" if data_type.is_float else int(np.iinfo(numpy_dtype(data_type)).max)
    return {"initialValuesDataType": data_type_name(data_type), "initialValues": {"valueCount": count, "value": fill}}


def activation_desc(field: FusedActivation) -> dict[str, object] | None:
    """The fused DML_OPERATOR_DESC, None where none is fused: the activation's type and its FLOAT fields (a fused
    activation's tensors are null, so none is written), by DirectML.h's names."""
    if field.activation is None:
        return None
    return {
        "Type": f"DML_OPERATOR_ACTIVATION_{field.activation.type}",
        "Desc": {name: _number(float(value)) for name, value in field.parameters},
    }


def _desc_value(field: Field) -> object | None:
    """The field as DxDispatch reads it (Guide.md: a desc's members by DirectML.h's names, an enum by its member's
    name, a tensor as its DML_TENSOR_DESC); None for a NULL optional field, which is left out."""
    match field:
        case Tensor(layout=layout):
            return _tensor(layout)
        case OptionalTensor(layout=maybe):
            return None if maybe is None else _tensor(maybe)
        case Uint(value=value) | Int(value=value):
            return value
        case Float(value=number):
            return _number(number)
        case Bool(value=flag):
            return flag
        case Enum():
            return field.enum.spelled(field.member)
        case UintArray(values=values) | IntArray(values=values):
            return list(values)
        case FusedActivation():
            return activation_desc(field)
        case _:
            assert_never(field)


def _desc(fields: Sequence[Field]) -> dict[str, object]:
    return {field.name: value for field in fields if (value := _desc_value(field)) is not None}


def operator_desc(case: Case, layouts: Mapping[str, TensorLayout]) -> tuple[str, dict[str, object]]:
    """The case's DML operator as a DxDispatch dispatchable names it: its DML_OPERATOR_TYPE and its desc."""
    entry = OPERATORS[case.operator]
    return entry.dml_operator.name, _desc(entry.dml_fields(case.descriptor, layouts))


def output_file(name: str) -> str:
    """The .npy DxDispatch's writeFile command writes an output to, beside the model."""
    return f"dxdispatch_{name}.npy"


def dxdispatch_model(
    case: Case,
    layouts: Mapping[str, TensorLayout],
    inputs: Mapping[str, np.ndarray],
    execution_flags: Sequence[str] = (),
) -> dict[str, object]:
    """The case as a DxDispatch model (Guide.md, "Models"): a resource per tensor named as the descriptor names it,
    one dispatchable (the operator desc, compiled with ``execution_flags``: DML_EXECUTION_FLAG_* names, NONE when
    empty), and the commands: dispatch, print each output, write each output as .npy in its shape.
    ``layouts`` are the case's tensors' layouts by DML name (an optional input absent), ``inputs`` the case's input
    arrays by tensor name (cases.generate.case_inputs). Raises dml_fields.Inexpressible for a case no DML desc can
    say, ValueError for an unknown execution flag."""
    unknown = [flag for flag in execution_flags if flag not in EXECUTION_FLAGS]
    if unknown:
        raise ValueError(f"unknown DML execution flag {unknown[0]!r} (known: {', '.join(EXECUTION_FLAGS)})")
    entry = OPERATORS[case.operator]
    fields = entry.dml_fields(case.descriptor, layouts)
    bound_or_not, outputs = bindings(fields, OUTPUT_NAMES[case.operator])
    bound = [layout for layout in bound_or_not if layout is not None]
    resources: dict[str, object] = {layout.name: _input_resource(layout, inputs[layout.name]) for layout in bound}
    resources.update({layout.name: _output_resource(layout) for layout in outputs})
    dispatchable = case.operator.value
    names = [layout.name for layout in (*bound, *outputs)]
    commands: list[object] = [{"type": "dispatch", "dispatchable": dispatchable, "bindings": {n: n for n in names}}]
    commands += [{"type": "print", "resource": layout.name} for layout in outputs]
    commands += [
        {
            "type": "writeFile",
            "resource": layout.name,
            "targetPath": output_file(layout.name),
            "dimensions": [_buffer_elements(layout)] if layout.given else list(layout.sizes),
        }
        for layout in outputs
    ]
    flags = list(execution_flags) or ["DML_EXECUTION_FLAG_NONE"]
    return {
        # DxDispatch reads the three members below by name and nothing else: this one says where the model came from
        # and how to run it (the feature level is DxDispatch's command-line option, not part of a model).
        "dmlconf": {"case": case.id, "featureLevel": str(case.feature_level), "run": dxdispatch_command(case)},
        "resources": resources,
        "dispatchables": {
            dispatchable: {"type": entry.dml_operator.name, "desc": _desc(fields), "executionFlags": flags}
        },
        "commands": commands,
    }


def dml_feature_level_option(level: FeatureLevel) -> str:
    """DxDispatch's --dml_feature_level value for a feature level: "major.minor" (CommandLineArgs.cpp reads it with
    atof), the level DirectML's device is created with."""
    return f"{level.major}.{level.minor}"


def dxdispatch_command(case: Case, model_file: str = DXDISPATCH_FILE) -> str:
    """The command line that runs a case's model with DxDispatch on Windows, at the case's feature level."""
    return f"dxdispatch.exe {model_file} --dml_feature_level {dml_feature_level_option(case.feature_level)}"


def _json(value: object, depth: int = 0) -> str:
    """``value`` as JSON, an object's members one a line and an array of numbers or texts on one line."""
    pad = "  " * (depth + 1)
    if isinstance(value, Mapping) and value:
        members = [f"{pad}{json.dumps(key)}: {_json(item, depth + 1)}" for key, item in value.items()]
        return "{\n" + ",\n".join(members) + "\n" + "  " * depth + "}"
    if isinstance(value, list) and any(isinstance(item, Mapping | list) for item in value):
        return "[\n" + ",\n".join(pad + _json(item, depth + 1) for item in value) + "\n" + "  " * depth + "]"
    return json.dumps(value, allow_nan=False)


def dxdispatch_text(model: Mapping[str, object]) -> str:
    """The model as the file holds it: JSON with the descriptor readable and each value array on one line."""
    return _json(model) + "\n"


def save_dxdispatch(
    folder: Path,
    case: Case,
    layouts: Mapping[str, TensorLayout],
    inputs: Mapping[str, np.ndarray],
    execution_flags: Sequence[str] = (),
) -> Path:
    """Write the case's DxDispatch model as ``folder``/dxdispatch.json; the file written. Raises
    dml_fields.Inexpressible where no DML desc can say the case (nothing is written then)."""
    text = dxdispatch_text(dxdispatch_model(case, layouts, inputs, execution_flags))
    path = Path(folder) / DXDISPATCH_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(str(path), text)
    return path


def dxdispatch_readme(case: Case, model_file: str = DXDISPATCH_FILE) -> str:
    """The artifacts README's paragraph on the DxDispatch model: what it holds and the line that runs it."""
    return f"""With DirectML alone, on Windows, through DxDispatch (Microsoft's tool: github.com/microsoft/DirectML,
folder DxDispatch): {model_file} is the case as the DML operator it describes, the descriptor as the case writes it
with the case's exact inputs, whatever an execution provider made of it. From this folder:

    {dxdispatch_command(case, model_file)}

It prints each output and writes it as {output_file("<output>")} in its shape: compare with expected_*.npy. Outputs
start as NaN, or an integer type's largest value (no index TOP_K1 can return), so an element never written shows.
"""
