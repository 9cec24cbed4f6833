"""A case as a DxDispatch model (ep/dxdispatch.py): the operator desc as DirectML.h names it, inputs DxDispatch reads
back bit for bit, outputs, and the commands; and its place in a DirectML failure's --artifacts folder.

Expectations come from Microsoft's DxDispatch (github.com/microsoft/DirectML, DxDispatch/doc/Guide.md, its
models/_schema.json, src/model/JsonParsers.cpp) and from DirectML.h (the Microsoft.AI.DirectML 1.15 package,
DML_TARGET_VERSION 0x6400), never from the code under test."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from conformance.cases.generate import case_inputs
from conformance.cases.layouts import Layout, case_layouts, input_layouts, output_layouts
from conformance.cases.suite import collect
from conformance.ep.dml_fields import Inexpressible
from conformance.ep.dxdispatch import dxdispatch_model, dxdispatch_text, initial_values, save_dxdispatch, tensor_desc
from conformance.model import (
    ACTIVATION_PARAMS,
    Activation,
    Case,
    DataType,
    FeatureLevel,
    Mvn1Desc,
    Operator,
    Status,
    TensorSpec,
)
from conformance.results import Result
from conformance.run.artifacts import save_artifacts

REPO = Path(__file__).resolve().parent.parent

# DirectML.h, "Operator descriptions": each fusable activation's DML_ACTIVATION_*_OPERATOR_DESC fields besides its
# InputTensor and OutputTensor (null when fused). PARAMETERIZED_RELU's only other field is a tensor (SlopeTensor).
HEADER_FIELDS: Mapping[str, tuple[str, ...]] = {
    "IDENTITY": (),
    "RELU": (),
    "SIGMOID": (),
    "TANH": (),
    "SOFTSIGN": (),
    "GELU": (),
    "ELU": ("Alpha",),
    "CELU": ("Alpha",),
    "LEAKY_RELU": ("Alpha",),
    "THRESHOLDED_RELU": ("Alpha",),
    "HARD_SIGMOID": ("Alpha", "Beta"),
    "LINEAR": ("Alpha", "Beta"),
    "SCALED_TANH": ("Alpha", "Beta"),
    "PARAMETRIC_SOFTPLUS": ("Alpha", "Beta"),
    "SCALED_ELU": ("Alpha", "Gamma"),
    "SOFTPLUS": ("Steepness",),
    "SHRINK": ("Bias", "Threshold"),
    "SWISH": ("SigmoidInputScale",),
    "HARD_SWISH": ("Alpha", "Beta"),
}
# The case format's spelling of each field (docs/case-format.md: `FusedActivation: {Type: ELU, Alpha: 0.5}`), as the
# oracle's keys hold it.
CASE_KEY = {
    "Alpha": "alpha",
    "Beta": "beta",
    "Gamma": "gamma",
    "Steepness": "steepness",
    "Bias": "bias",
    "Threshold": "threshold",
    "SigmoidInputScale": "sigmoid_input_scale",
}

# What DxDispatch accepts, written from its Guide.md and models/_schema.json (resources with an array or a constant
# initializer, DML dispatchables with a desc and DML_EXECUTION_FLAG names, commands) plus the writeFile command the
# Guide documents and JsonParsers.cpp parses (with "dimensions") but the published schema's enum predates.
DATA_TYPES = [f"DML_TENSOR_DATA_TYPE_{t}" for t in ("FLOAT16", "FLOAT32", "UINT8", "UINT16", "UINT32")]
DATA_TYPES += [f"DML_TENSOR_DATA_TYPE_{t}" for t in ("INT8", "INT16", "INT32")]
MODEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["resources", "dispatchables", "commands"],
    "properties": {
        "resources": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["initialValues", "initialValuesDataType"],
                "properties": {
                    "initialValuesDataType": {"enum": DATA_TYPES},
                    "initialValues": {
                        "oneOf": [
                            {"type": "array", "minItems": 1, "items": {"type": ["number", "string"]}},
                            {
                                "type": "object",
                                "required": ["valueCount", "value"],
                                "additionalProperties": False,
                                "properties": {
                                    "valueCount": {"type": "integer", "exclusiveMinimum": 0},
                                    "value": {"type": ["number", "string"]},
                                },
                            },
                        ]
                    },
                },
            },
        },
        "dispatchables": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["type", "desc"],
                "properties": {
                    "type": {"type": "string", "pattern": "^DML_OPERATOR_"},
                    "desc": {"type": "object"},
                    "executionFlags": {
                        "type": "array",
                        "items": {
                            "enum": [
                                "DML_EXECUTION_FLAG_NONE",
                                "DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION",
                                "DML_EXECUTION_FLAG_DISABLE_META_COMMANDS",
                                "DML_EXECUTION_FLAG_DESCRIPTORS_VOLATILE",
                            ]
                        },
                    },
                },
            },
        },
        "commands": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type"],
                "oneOf": [
                    {
                        "properties": {"type": {"const": "dispatch"}, "bindings": {"type": "object"}},
                        "required": ["dispatchable", "bindings"],
                    },
                    {
                        "properties": {"type": {"const": "print"}, "resource": {"type": "string"}},
                        "required": ["resource"],
                    },
                    {
                        "properties": {
                            "type": {"const": "writeFile"},
                            "dimensions": {"type": "array", "items": {"type": "integer", "minimum": 1}},
                        },
                        "required": ["resource", "targetPath"],
                    },
                ],
            },
        },
    },
}


def _spec_case(path: str, case_id: str) -> Case:
    """One case of a committed spec-example file, as the harness reads it."""
    for entry in collect([str(REPO / path)]).entries:
        if isinstance(entry, Case) and entry.id.endswith(f"::{case_id}"):
            return entry
    raise AssertionError(f"{path}::{case_id} not found")


def _layouts(case: Case) -> dict[str, Layout]:
    return input_layouts(case) | output_layouts(case)


def _model(case: Case, inputs: Mapping[str, np.ndarray], flags: list[str] | None = None) -> dict[str, object]:
    """The case's DxDispatch model over its layouts as the run stage gives them."""
    return dxdispatch_model(case, _layouts(case), inputs, flags or ())


def _read_back(resource: Mapping[str, Any]) -> np.ndarray:
    """The bytes DxDispatch puts in a buffer from an initializer, as JsonParsers.cpp reads it: a number is read as a
    double and cast to float (then to half for FLOAT16); "nan"/"inf"/"-inf" are quiet_NaN and the infinities; an
    integer type takes the integers as they are. Every cast must be exact (else AssertionError), so that the result
    does not hang on a rounding mode (DxDispatch's half.hpp truncates by default)."""
    data_type = resource["initialValuesDataType"].removeprefix("DML_TENSOR_DATA_TYPE_")
    values = resource["initialValues"]
    assert isinstance(values, list), "inputs are written element by element"
    if data_type in ("UINT16", "UINT32", "INT32", "INT16", "INT8", "UINT8"):
        assert all(isinstance(v, int) for v in values)
        return np.array(values, dtype=np.dtype(data_type.lower()))
    floats = []
    for value in values:
        if isinstance(value, str):
            words = {"nan": np.float32(np.nan), "inf": np.float32(np.inf), "-inf": np.float32(-np.inf)}
            single = words[value.lower()]
        else:
            single = np.float32(value)
            assert float(single) == value and math.copysign(1, float(single)) == math.copysign(1, value), value
        floats.append(single)
    as_float = np.array(floats, dtype=np.float32)
    if data_type == "FLOAT32":
        return as_float
    half = as_float.astype(np.float16)
    finite = np.isfinite(as_float)
    assert np.array_equal(half[finite].astype(np.float32), as_float[finite]), "a value no half holds"
    return half


def _bits(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array).tobytes()


# TOP_K1 ----------------------------------------------------------------------------------------------------------


def test_top_k1_spec_example_as_dxdispatch_reads_it() -> None:
    case = _spec_case("cases/top_k1/spec_examples.yaml", "example-1")
    model = _model(case, case_inputs(case))
    jsonschema.validate(model, MODEL_SCHEMA)
    (name, dispatchable), *others = model["dispatchables"].items()  # type: ignore[attr-defined]
    assert not others
    assert dispatchable["type"] == "DML_OPERATOR_TOP_K1"
    desc = dispatchable["desc"]
    # DML_TOP_K1_OPERATOR_DESC's fields, DirectML.h's names and order.
    assert list(desc) == ["InputTensor", "OutputValueTensor", "OutputIndexTensor", "Axis", "K", "AxisDirection"]
    assert (desc["Axis"], desc["K"], desc["AxisDirection"]) == (3, 2, "DML_AXIS_DIRECTION_DECREASING")
    buffer = {key: value["Desc"] for key, value in desc.items() if key.endswith("Tensor")}
    assert all(desc[key]["Type"] == "DML_TENSOR_TYPE_BUFFER" for key in buffer)
    assert buffer["InputTensor"]["Sizes"] == [1, 1, 3, 4]
    assert buffer["OutputValueTensor"]["DataType"] == "DML_TENSOR_DATA_TYPE_FLOAT32"
    # The spec: "OutputIndexTensor ... UINT32", of the outputs' sizes (K along Axis).
    assert buffer["OutputIndexTensor"] == {
        "DataType": "DML_TENSOR_DATA_TYPE_UINT32",
        "Flags": "DML_TENSOR_FLAG_NONE",
        "DimensionCount": 4,
        "Sizes": [1, 1, 3, 2],
    }
    # The page's input, element by element.
    resources = model["resources"]
    assert _read_back(resources["InputTensor"]).tolist() == [0, 1, 10, 11, 3, 2, 9, 8, 4, 5, 6, 7]  # type: ignore[index]
    assert resources["OutputIndexTensor"]["initialValues"]["valueCount"] == 6  # type: ignore[index]
    assert resources["OutputIndexTensor"]["initialValuesDataType"] == "DML_TENSOR_DATA_TYPE_UINT32"  # type: ignore[index]
    commands = model["commands"]
    assert commands[0] == {  # type: ignore[index]
        "type": "dispatch",
        "dispatchable": name,
        "bindings": {t: t for t in ("InputTensor", "OutputValueTensor", "OutputIndexTensor")},
    }
    assert {(c["type"], c["resource"]) for c in commands[1:]} == {  # type: ignore[index]
        (kind, out) for kind in ("print", "writeFile") for out in ("OutputValueTensor", "OutputIndexTensor")
    }
    assert all(c["dimensions"] == [1, 1, 3, 2] for c in commands if c["type"] == "writeFile")  # type: ignore[attr-defined]
    assert model["dmlconf"]["run"] == "dxdispatch.exe dxdispatch.json --dml_feature_level 2.1"  # type: ignore[index]


def test_execution_flags_are_written_and_unknown_ones_refused() -> None:
    case = _spec_case("cases/top_k1/spec_examples.yaml", "example-1")
    flags = ["DML_EXECUTION_FLAG_DISABLE_META_COMMANDS", "DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION"]
    model = _model(case, case_inputs(case), flags)
    assert model["dispatchables"]["TOP_K1"]["executionFlags"] == flags  # type: ignore[index]
    assert _model(case, case_inputs(case))["dispatchables"]["TOP_K1"]["executionFlags"] == [  # type: ignore[index]
        "DML_EXECUTION_FLAG_NONE"
    ]
    with pytest.raises(ValueError, match="DISABLE_METACOMMANDS"):
        _model(case, case_inputs(case), ["DML_EXECUTION_FLAG_DISABLE_METACOMMANDS"])


# SLICE1 ----------------------------------------------------------------------------------------------------------


def test_slice1_negative_strides_stay_signed() -> None:
    case = _spec_case("cases/slice1/spec_examples.yaml", "example-2-negative-strides")
    model = _model(case, case_inputs(case))
    jsonschema.validate(model, MODEL_SCHEMA)
    dispatchable = model["dispatchables"]["SLICE1"]  # type: ignore[index]
    assert dispatchable["type"] == "DML_OPERATOR_SLICE1"
    desc = dispatchable["desc"]
    # DML_SLICE1_OPERATOR_DESC: InputWindowStrides is INT (the page's example 2: {1, 1, -2, 2}).
    assert list(desc) == [
        "InputTensor",
        "OutputTensor",
        "DimensionCount",
        "InputWindowOffsets",
        "InputWindowSizes",
        "InputWindowStrides",
    ]
    assert desc["InputWindowOffsets"] == [0, 0, 0, 1]
    assert desc["InputWindowSizes"] == [1, 1, 4, 3]
    assert desc["InputWindowStrides"] == [1, 1, -2, 2]
    assert desc["DimensionCount"] == 4 and desc["OutputTensor"]["Desc"]["Sizes"] == [1, 1, 2, 2]
    assert _read_back(model["resources"]["InputTensor"]).tolist() == list(range(1, 17))  # type: ignore[index]


# MVN1 ------------------------------------------------------------------------------------------------------------


def _mvn(activation: Activation | None) -> Case:
    data = tuple(float(v) for v in range(24))
    input_ = TensorSpec((1, 2, 3, 4), DataType.FLOAT16, data=data)
    scale = TensorSpec((1, 2, 1, 1), DataType.FLOAT16, data=(1.5, -2.0))
    desc = Mvn1Desc(input_, scale, None, (1, 3), False, 1e-5, activation)
    operator = Operator.MEAN_VARIANCE_NORMALIZATION1
    return Case("m.yaml::m", "m.yaml", operator, FeatureLevel(5, 2), desc, layouts=case_layouts(operator, desc))


def test_mvn1_scale_without_bias_axes_and_gelu() -> None:
    case = _mvn(Activation("GELU"))
    model = _model(case, case_inputs(case))
    jsonschema.validate(model, MODEL_SCHEMA)
    dispatchable = model["dispatchables"]["MEAN_VARIANCE_NORMALIZATION1"]  # type: ignore[index]
    assert dispatchable["type"] == "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1"
    desc = dispatchable["desc"]
    # DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC: BiasTensor is _Maybenull_, left out (DxDispatch: null).
    assert list(desc) == [
        "InputTensor",
        "ScaleTensor",
        "OutputTensor",
        "AxisCount",
        "Axes",
        "NormalizeVariance",
        "Epsilon",
        "FusedActivation",
    ]
    assert (desc["AxisCount"], desc["Axes"], desc["NormalizeVariance"]) == (2, [1, 3], False)
    assert np.float32(desc["Epsilon"]) == np.float32(1e-5)  # FLOAT, as the runner's (float) cast gives it
    assert desc["FusedActivation"] == {"Type": "DML_OPERATOR_ACTIVATION_GELU", "Desc": {}}
    bindings = model["commands"][0]["bindings"]  # type: ignore[index]
    assert bindings == {"InputTensor": "InputTensor", "ScaleTensor": "ScaleTensor", "OutputTensor": "OutputTensor"}
    assert _read_back(model["resources"]["ScaleTensor"]).tolist() == [1.5, -2.0]  # type: ignore[index]
    assert model["dmlconf"]["run"].endswith("--dml_feature_level 5.2")  # type: ignore[index]


@pytest.mark.parametrize("kind", sorted(HEADER_FIELDS))
def test_every_fused_activation_has_directml_h_fields(kind: str) -> None:
    # A distinct value per parameter, so that a value landing in another field shows.
    params = {key: 0.25 + index for index, key in enumerate(ACTIVATION_PARAMS[kind])}
    case = _mvn(Activation(kind, params))
    fused = _model(case, case_inputs(case))["dispatchables"]["MEAN_VARIANCE_NORMALIZATION1"]  # type: ignore[index]
    activation = fused["desc"]["FusedActivation"]
    assert activation["Type"] == f"DML_OPERATOR_ACTIVATION_{kind}"
    assert tuple(activation["Desc"]) == HEADER_FIELDS[kind]
    assert activation["Desc"] == {field: params[CASE_KEY[field]] for field in HEADER_FIELDS[kind]}


def test_every_activation_of_the_case_format_is_covered() -> None:
    assert set(ACTIVATION_PARAMS) == set(HEADER_FIELDS) | {"PARAMETERIZED_RELU"}


def test_a_scalar_parameterized_relu_has_no_dml_form() -> None:
    case = _mvn(Activation("PARAMETERIZED_RELU", {"alpha": 0.25}))
    with pytest.raises(Inexpressible, match="its desc needs a tensor"):
        _model(case, case_inputs(case))


# Exact inputs ----------------------------------------------------------------------------------------------------

_F32 = np.finfo(np.float32)
F32 = np.array(
    [0.0, -0.0, 1 / 3, -1.1, _F32.max, -_F32.max, _F32.tiny, _F32.smallest_subnormal, 3e-39, np.inf, -np.inf, np.nan],
    dtype=np.float32,
)
F16 = np.array(
    [0.0, -0.0, 1 / 3, -1.1, 65504, -65504, 2**-14, 2**-24, 3 * 2**-24, np.inf, -np.inf, np.nan, 2049.0, 0.1],
    dtype=np.float16,
)


@pytest.mark.parametrize(("array", "data_type"), [(F32, DataType.FLOAT32), (F16, DataType.FLOAT16)])
def test_float_inputs_read_back_bit_for_bit(array: np.ndarray, data_type: DataType) -> None:
    resource = json.loads(dxdispatch_text({"r": initial_values(array, data_type)}))["r"]
    assert resource["initialValuesDataType"] == f"DML_TENSOR_DATA_TYPE_{data_type.value}"  # readable numbers
    assert _bits(_read_back(resource)) == _bits(array)


@pytest.mark.parametrize(("array", "data_type"), [(F32, DataType.FLOAT32), (F16, DataType.FLOAT16)])
def test_a_nan_other_than_dxdispatchs_is_written_as_bits(array: np.ndarray, data_type: DataType) -> None:
    odd = np.where(np.isnan(array), -array, array)  # the NaN's sign bit set: "nan" would read back positive
    assert odd.dtype == array.dtype and _bits(odd) != _bits(array)
    resource = json.loads(dxdispatch_text({"r": initial_values(odd, data_type)}))["r"]
    assert resource["initialValuesDataType"] == (
        "DML_TENSOR_DATA_TYPE_UINT32" if odd.itemsize == 4 else "DML_TENSOR_DATA_TYPE_UINT16"
    )
    assert _bits(_read_back(resource)) == _bits(odd)


@pytest.mark.parametrize("data_type", [DataType.INT8, DataType.INT32, DataType.UINT32, DataType.UINT8])
def test_integer_inputs_read_back_exactly(data_type: DataType) -> None:
    info = np.iinfo(np.dtype(data_type.value.lower()))
    array = np.array([info.min, info.max, 0, 1], dtype=np.dtype(data_type.value.lower()))
    resource = json.loads(dxdispatch_text({"r": initial_values(array, data_type)}))["r"]
    assert _bits(_read_back(resource)) == _bits(array)


def test_generated_inputs_of_a_sweep_case_read_back_exactly() -> None:
    case = _spec_case(
        "cases/mean_variance_normalization1/library.yaml", "scale-bias-4_0[1x1x4x5,2x1x1x5-FLOAT16,FLOAT16,FLOAT16]"
    )
    inputs = case_inputs(case)
    model = json.loads(dxdispatch_text(_model(case, inputs)))
    for name, array in inputs.items():
        assert _bits(_read_back(model["resources"][name])) == _bits(array), name


# Artifacts -------------------------------------------------------------------------------------------------------


def _failure(case: Case, ep: str) -> Result:
    return Result(case.id, case.operator.value, ep, Status.FAIL, "values", message="forced")


def test_a_directml_failure_keeps_its_dxdispatch_model(tmp_path: Path) -> None:
    case = _spec_case("cases/top_k1/spec_examples.yaml", "example-1")
    inputs = case_inputs(case)
    folder = Path(
        save_artifacts(
            str(tmp_path), _failure(case, "dml"), b"", inputs, {}, {}, "DmlExecutionProvider", None, case, inputs
        )
    )
    model = json.loads((folder / "dxdispatch.json").read_text(encoding="utf-8"))
    assert model["dispatchables"]["TOP_K1"]["type"] == "DML_OPERATOR_TOP_K1"
    readme = (folder / "README.txt").read_text(encoding="utf-8")
    assert "dxdispatch.exe dxdispatch.json --dml_feature_level 2.1" in readme
    # Another EP's failure is not DirectML's: no DxDispatch model.
    other = Path(
        save_artifacts(
            str(tmp_path), _failure(case, "cpu"), b"", inputs, {}, {}, "CPUExecutionProvider", None, case, inputs
        )
    )
    assert not (other / "dxdispatch.json").exists() and "dxdispatch" not in (other / "README.txt").read_text()


def test_save_dxdispatch_writes_the_model_file(tmp_path: Path) -> None:
    case = _spec_case("cases/slice1/spec_examples.yaml", "example-1-positive-strides")
    path = save_dxdispatch(tmp_path / "f", case, _layouts(case), case_inputs(case))
    assert path == tmp_path / "f" / "dxdispatch.json"
    jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), MODEL_SCHEMA)


def test_a_case_without_a_dml_form_keeps_its_other_files_and_says_why(tmp_path: Path) -> None:
    case = _mvn(Activation("PARAMETERIZED_RELU", {"alpha": 0.25}))
    inputs = case_inputs(case)
    result = _failure(case, "dml")
    folder = Path(
        save_artifacts(str(tmp_path), result, b"", inputs, {}, {}, "DmlExecutionProvider", None, case, inputs)
    )
    assert not (folder / "dxdispatch.json").exists() and (folder / "input_InputTensor.npy").exists()
    readme = (folder / "README.txt").read_text(encoding="utf-8")
    assert "No DxDispatch model: FusedActivation PARAMETERIZED_RELU cannot be fused in a DML descriptor" in readme


def test_a_tensor_desc_takes_strides_and_a_total_size() -> None:
    # Guide.md's "fully defined DML_TENSOR_DESC" example, field for field.
    assert tensor_desc(DataType.FLOAT32, (1, 1, 2, 3), (6, 6, 3, 1), 24) == {
        "Type": "DML_TENSOR_TYPE_BUFFER",
        "Desc": {
            "DataType": "DML_TENSOR_DATA_TYPE_FLOAT32",
            "Flags": "DML_TENSOR_FLAG_NONE",
            "DimensionCount": 4,
            "Sizes": [1, 1, 2, 3],
            "Strides": [6, 6, 3, 1],
            "TotalTensorSizeInBytes": 24,
        },
    }


def test_a_strided_case_is_written_as_it_is_laid_out() -> None:
    """Padded input rows and a strided output (cases/slice1/layouts.yaml): the descs carry Strides, the input's
    resource holds its buffer's elements where the strides put them, the output's resource its whole buffer."""
    case = next(e for e in collect([str(REPO / "cases/slice1/layouts.yaml")]).entries if e.id.endswith("[4x1]"))
    assert isinstance(case, Case)
    inputs = case_inputs(case)
    model = _model(case, inputs)
    desc = model["dispatchables"]["SLICE1"]["desc"]  # type: ignore[index]
    assert desc["OutputTensor"]["Desc"]["Strides"] == [4, 1] and "Strides" not in desc["InputTensor"]["Desc"]
    source = inputs["InputTensor"].reshape(-1)
    values = model["resources"]["InputTensor"]["initialValues"]  # type: ignore[index]
    assert values[: source.size] == [float(v) for v in source]  # packed input: its values as they are
    rows, columns = case.descriptor.output_sizes  # type: ignore[union-attr]
    last = (rows - 1) * 4 + (columns - 1)  # the last element's index through Strides [4, 1]
    buffer_bytes = ((last + 1) * 2 + 3) // 4 * 4  # FLOAT16, DMLCalcBufferTensorSize's rounding to 4 bytes
    count = model["resources"]["OutputTensor"]["initialValues"]["valueCount"]  # type: ignore[index]
    assert count == buffer_bytes // 2
