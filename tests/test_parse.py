"""Parsing case files into Case objects: field names, types, required fields, ids, tensor data.

Positions are counted by hand in each YAML snippet. The snippets share one layout: the file header takes lines
1-3, the case starts at line 4 ("  - id: a", the case's mapping at column 5), then one field per line.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conformance.cases.fields import as_number
from conformance.cases.load import load_document
from conformance.cases.parse import Entry, Rejected, parse_document
from conformance.model import AxisDirection, Case, DataType, FeatureLevel, Mvn1Desc, TopK1Desc

TOPK_HEADER = "operator: TOP_K1\nfeature_level: '3_1'\ncases:\n"
MVN_HEADER = "operator: MEAN_VARIANCE_NORMALIZATION1\nfeature_level: '3_1'\ncases:\n"
GOOD_TENSOR = "    InputTensor: {Sizes: [1, 4], DataType: FLOAT32, Data: [1, 2, 3, 4]}\n"
GOOD_TOPK = "  - id: a\n" + GOOD_TENSOR + "    Axis: 1\n    K: 2\n"
# The DML_FEATURE_LEVEL enumeration of DirectML.h (DirectML 1.15), written out here rather than taken from the code.
DIRECTML_H_LEVELS = (
    *("1_0", "2_0", "2_1", "3_0", "3_1", "4_0", "4_1", "5_0", "5_1", "5_2"),
    *("6_0", "6_1", "6_2", "6_3", "6_4"),
)


def parse(tmp_path: Path, text: str) -> tuple[str, list[Entry], list[str]]:
    path = tmp_path / "case.yaml"
    path.write_text(text)
    entries, problems = parse_document(load_document(path))
    return str(path), entries, [str(p) for p in problems]


def rejected(tmp_path: Path, text: str) -> tuple[str, list[str]]:
    """The problems of the file's single entry, which must be Rejected (and no file-level problems)."""
    path, entries, problems = parse(tmp_path, text)
    assert problems == []
    (entry,) = entries
    assert isinstance(entry, Rejected), entry
    lines = [str(p) for p in entry.problems]
    assert lines and all("\n" not in line for line in lines)
    return path, lines


def one_case(tmp_path: Path, text: str) -> Case:
    _, entries, problems = parse(tmp_path, text)
    assert problems == []
    (entry,) = entries
    assert isinstance(entry, Case), entry
    return entry


def test_a_good_case_reads_like_the_descriptor(tmp_path: Path) -> None:
    case = one_case(tmp_path, TOPK_HEADER + GOOD_TOPK + "    AxisDirection: DML_AXIS_DIRECTION_INCREASING\n")
    assert case.feature_level == FeatureLevel(3, 1)
    assert case.id.endswith("case.yaml::a")
    d = case.descriptor
    assert isinstance(d, TopK1Desc)
    assert (d.axis, d.k, d.axis_direction) == (1, 2, AxisDirection.INCREASING)
    assert (d.input.sizes, d.input.data_type, d.input.data) == ((1, 4), DataType.FLOAT32, (1, 2, 3, 4))


# --- unknown fields -----------------------------------------------------------------------------------------------


def test_unknown_top_level_field(tmp_path: Path) -> None:
    path, entries, problems = parse(tmp_path, "operator: TOP_K1\nextra: 1\ncases: []\n")
    assert (entries, problems) == (
        [],
        [f"{path}:2:1: extra: unknown field (expected one of: operator, feature_level, description, cases)"],
    )


def test_unknown_case_field(tmp_path: Path) -> None:
    path, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK + "    Bogus: 1\n")
    assert lines == [
        f"{path}:8:5: Bogus: unknown field (expected one of: id, description, feature_level, expected, "
        "tolerance, modes, expect, reason, matrix, InputTensor, Axis, K, AxisDirection, OutputValueTensor, "
        "OutputIndexTensor)"
    ]


def test_a_misspelt_field_is_named_with_the_field_it_is_near(tmp_path: Path) -> None:
    path, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK.replace("Axis:", "Axiz:"))
    assert lines[0] == (
        f"{path}:6:5: Axiz: unknown field, did you mean Axis? (expected one of: id, description, feature_level, "
        "expected, tolerance, modes, expect, reason, matrix, InputTensor, Axis, K, AxisDirection, OutputValueTensor, "
        "OutputIndexTensor)"
    )
    assert lines[1] == f"{path}:4:5: Axis: missing required field"
    _, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK.replace("Axis:", "axis:"))  # the wrong case
    assert "axis: unknown field, did you mean Axis? (" in lines[0]
    _, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK + "    Matrix: {K: [1]}\n")
    assert "Matrix: unknown field, did you mean matrix? (" in lines[0]


def test_a_misspelt_field_is_refused_in_a_negative_case_too(tmp_path: Path) -> None:
    """A typo is never what an ``expect: invalid`` case is meant to show: not read as "invalid as expected"."""
    negative = "    expect: invalid\n    reason: K must be below the axis size\n"
    _, entries, _ = parse(tmp_path, TOPK_HEADER + GOOD_TOPK.replace("K: 2", "K: 9") + negative)
    assert isinstance(entries[0], Case) and entries[0].expect_invalid is not None  # the validator's to reject
    path, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK.replace("K: 2", "Kk: 9") + negative)
    _, entries, _ = parse(tmp_path, TOPK_HEADER + GOOD_TOPK.replace("K: 2", "Kk: 9") + negative)
    assert isinstance(entries[0], Rejected) and entries[0].expect_invalid is None
    assert lines[0].startswith(f"{path}:7:5: Kk: unknown field, did you mean K? (")
    _, entries, _ = parse(tmp_path, TOPK_HEADER + GOOD_TOPK.replace("K: 2", "K: -1") + negative)
    assert isinstance(entries[0], Rejected) and entries[0].expect_invalid == "K must be below the axis size"


def test_a_misspelt_generator_parameter_is_refused_where_written_even_in_a_negative_case(tmp_path: Path) -> None:
    """A generator's parameters are its Kind's (uniform: Low and High): a misspelt one is an unknown field like any
    other key, named with the one it is near, and a negative case holding it is refused, not "invalid as expected"
    (else its real point, here a K above the axis size, would pass unchecked)."""
    tensor = GOOD_TENSOR.replace("Data: [1, 2, 3, 4]", "Generator: {Kind: uniform, Seed: 1, Lwo: 0, High: 1}")
    negative = "    expect: invalid\n    reason: K must be below the axis size\n"
    typo = TOPK_HEADER + GOOD_TOPK.replace(GOOD_TENSOR, tensor).replace("K: 2", "K: 9") + negative
    path, lines = rejected(tmp_path, typo)
    assert lines == [
        f"{path}:5:{tensor.index('Lwo') + 1}: InputTensor.Generator.Lwo: unknown field, did you mean Low? "
        "(expected one of: Kind, Seed, High, Low)"
    ]
    _, entries, _ = parse(tmp_path, typo)
    assert isinstance(entries[0], Rejected) and entries[0].expect_invalid is None
    # Spelt right, the case is the validator's to reject, as intended.
    _, entries, _ = parse(tmp_path, typo.replace("Lwo:", "Low:"))
    assert isinstance(entries[0], Case) and entries[0].expect_invalid is not None
    # Another kind's parameter is not this kind's; an unknown kind is the validator's to name.
    _, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK.replace(GOOD_TENSOR, tensor.replace("Lwo", "Mean")))
    assert "InputTensor.Generator.Mean: unknown field (expected one of: Kind, Seed, High, Low)" in lines[0]
    unknown_kind = TOPK_HEADER + GOOD_TOPK.replace(GOOD_TENSOR, tensor.replace("uniform", "unifrom"))
    assert isinstance(one_case(tmp_path, unknown_kind), Case)


@pytest.mark.parametrize("field", ["description", "reason"])
def test_a_description_or_reason_that_is_not_text_is_refused(tmp_path: Path, field: str) -> None:
    path, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK + f"    {field}: [not, text]\n")
    assert lines == [f"{path}:8:5: {field}: must be text"]
    path, _, problems = parse(tmp_path, TOPK_HEADER.replace("cases:", "description: {a: 1}\ncases:") + GOOD_TOPK)
    assert problems == [f"{path}:3:1: description: must be text"]


def test_unknown_tensor_field(tmp_path: Path) -> None:
    text = TOPK_HEADER + GOOD_TOPK.replace("Data: [1, 2, 3, 4]}", "Data: [1, 2, 3, 4], Foo: 1}")
    path, lines = rejected(tmp_path, text)
    allowed = "Sizes, DataType, Data, Generator, Strides, TotalTensorSizeInBytes"
    assert lines == [f"{path}:5:73: InputTensor.Foo: unknown field (expected one of: {allowed})"]


def test_unknown_expected_output(tmp_path: Path) -> None:
    path, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK + "    expected: {OutputTensor: [1]}\n")
    assert lines == [
        f"{path}:8:16: expected.OutputTensor: unknown field, did you mean OutputValueTensor? "
        "(expected one of: OutputValueTensor, OutputIndexTensor)"
    ]


# --- wrong types ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "where", "message"),
    [
        ("K: 2", "K: two", "7:5: K", "must be an integer (UINT), got 'two'"),
        ("K: 2", "K: '2'", "7:5: K", "must be an integer (UINT), got '2'"),
        ("K: 2", "K: -1", "7:5: K", "must be an integer (UINT) in [0, 4294967295], got -1"),
        ("K: 2", "K: 4294967296", "7:5: K", "must be an integer (UINT) in [0, 4294967295], got 4294967296"),
        ("K: 2", "K: true", "7:5: K", "must be an integer (UINT), got True"),
        ("K: 2", "K: 2.0", "7:5: K", "must be an integer (UINT), got 2.0"),
        ("K: 2", "K: 1:30", "7:5: K", "must be an integer (UINT), got '1:30'"),
        ("Axis: 1", "Axis: -1", "6:5: Axis", "must be an integer (UINT) in [0, 4294967295], got -1"),
        ("Sizes: [1, 4]", "Sizes: [1, 4.0]", "5:30: InputTensor.Sizes.1", "must be an integer (UINT), got 4.0"),
        (
            "Sizes: [1, 4]",
            "Sizes: [1, -4]",
            "5:30: InputTensor.Sizes.1",
            "must be an integer (UINT) in [0, 4294967295], got -4",
        ),
        ("Sizes: [1, 4]", "Sizes: 4", "5:19: InputTensor.Sizes", "must be a list of integers"),
        ("Sizes: [1, 4]", "Sizes: []", "5:19: InputTensor.Sizes", "must list at least one dimension"),
        (
            "DataType: FLOAT32",
            "DataType: FLOAT64",
            "5:34: InputTensor.DataType",
            "must be one of FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, UINT8, got 'FLOAT64'",
        ),
        ("Data: [1, 2, 3, 4]", "Data: 5", "5:53: InputTensor.Data", "must be a list (nested like Sizes, or flat)"),
    ],
)
def test_wrong_types(tmp_path: Path, old: str, new: str, where: str, message: str) -> None:
    path, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK.replace(old, new))
    assert lines == [f"{path}:{where}: {message}"]


def test_bool_field_refuses_an_integer(tmp_path: Path) -> None:
    text = MVN_HEADER + "  - id: a\n" + GOOD_TENSOR + "    Axes: [1]\n    NormalizeVariance: 1\n"
    path, lines = rejected(tmp_path, text)
    assert lines == [f"{path}:7:5: NormalizeVariance: must be true or false, got 1"]


def test_tensor_that_is_not_a_mapping(tmp_path: Path) -> None:
    path, lines = rejected(tmp_path, TOPK_HEADER + "  - id: a\n    InputTensor: [1]\n    Axis: 1\n    K: 2\n")
    assert lines == [f"{path}:5:5: InputTensor: must be a mapping"]


def test_empty_tensor_is_a_problem_not_a_silent_rejection(tmp_path: Path) -> None:
    path, lines = rejected(tmp_path, TOPK_HEADER + "  - id: a\n    InputTensor:\n    Axis: 1\n    K: 2\n")
    assert lines == [f"{path}:5:5: InputTensor: must be a mapping, got an empty value"]


# --- missing fields ---------------------------------------------------------------------------------------------------


def test_missing_case_field_points_at_the_case(tmp_path: Path) -> None:
    path, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK.replace("    K: 2\n", ""))
    assert lines == [f"{path}:4:5: K: missing required field"]


def test_missing_tensor_field_points_at_the_tensor(tmp_path: Path) -> None:
    path, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK.replace("DataType: FLOAT32, ", ""))
    assert lines == [f"{path}:5:5: InputTensor.DataType: missing required field"]


@pytest.mark.parametrize("source", ["", ", Data: [1, 2, 3, 4], Generator: {Kind: arange}"])
def test_exactly_one_of_data_or_generator(tmp_path: Path, source: str) -> None:
    tensor = "    InputTensor: {Sizes: [1, 4], DataType: FLOAT32" + source + "}\n"
    path, lines = rejected(tmp_path, TOPK_HEADER + "  - id: a\n" + tensor + "    Axis: 1\n    K: 2\n")
    assert lines == [f"{path}:5:5: InputTensor: needs exactly one of Data or Generator"]


def test_random_generator_needs_a_seed_and_arange_does_not(tmp_path: Path) -> None:
    text = TOPK_HEADER + GOOD_TOPK.replace("Data: [1, 2, 3, 4]", "Generator: {Kind: uniform}")
    path, lines = rejected(tmp_path, text)
    assert lines == [f"{path}:5:53: InputTensor.Generator.Seed: missing required field"]
    case = one_case(tmp_path, TOPK_HEADER + GOOD_TOPK.replace("Data: [1, 2, 3, 4]", "Generator: {Kind: arange}"))
    assert case.descriptor.input.generator is not None and case.descriptor.input.generator.seed == 0


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("operator: TOP_K1\n", ["1:1: cases: missing required field"]),
        ("cases: []\n", ["1:1: operator: missing required field"]),
        ("operator: TOP_K1\ncases:\n", ["2:1: cases: must be a list of cases, got an empty value"]),
        ("operator: TOP_K1\ncases: {a: 1}\n", ["2:1: cases: must be a list of cases, got a mapping"]),
        ("operator: TOP_K\ncases: []\n", ["1:1: operator: unknown operator 'TOP_K' (did you mean TOP_K1?)"]),
        (
            "operator: TOP_K1\nfeature_level: '3'\ncases: []\n",
            ["2:1: feature_level: not a feature level: '3' (expected e.g. \"3_1\")"],
        ),
        (
            "operator: TOP_K1\nfeature_level: '9_9'\ncases: []\n",
            [f"2:1: feature_level: not a DirectML feature level: '9_9' (known: {', '.join(DIRECTML_H_LEVELS)})"],
        ),
        ("- operator: TOP_K1\n", ["1:1: a case file is a mapping with 'operator:' and 'cases:'"]),
        ("just text\n", ["1:1: a case file is a mapping with 'operator:' and 'cases:'"]),
        (TOPK_HEADER + "  - [1]\n", ["4:5: each case is a mapping"]),
        (TOPK_HEADER + "  - {Axis: 1}\n", ["4:5: id: missing required field"]),
        (TOPK_HEADER + "  - {id: ''}\n", ["4:6: id: must not be empty"]),
    ],
)
def test_file_level_problems(tmp_path: Path, text: str, lines: list[str]) -> None:
    path, entries, problems = parse(tmp_path, text)
    assert entries == []
    assert problems == [f"{path}:{line}" for line in lines]


def test_unquoted_feature_level_is_not_read_as_an_integer(tmp_path: Path) -> None:
    """YAML 1.1 reads 3_1 as 31; the loader's core schema keeps it text."""
    case = one_case(tmp_path, "operator: TOP_K1\nfeature_level: 3_1\ncases:\n" + GOOD_TOPK)
    assert case.feature_level == FeatureLevel(3, 1)


def test_case_feature_level_overrides_the_file(tmp_path: Path) -> None:
    case = one_case(tmp_path, TOPK_HEADER + GOOD_TOPK + "    feature_level: DML_FEATURE_LEVEL_4_0\n")
    assert case.feature_level == FeatureLevel(4, 0)


def test_a_case_feature_level_outside_directml_s_list_is_refused_where_written(tmp_path: Path) -> None:
    known = ", ".join(DIRECTML_H_LEVELS)
    path, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK + "    feature_level: DML_FEATURE_LEVEL_6_5\n")
    wrong = "'DML_FEATURE_LEVEL_6_5'"
    assert lines == [f"{path}:8:5: feature_level: not a DirectML feature level: {wrong} (known: {known})"]
    for level in DIRECTML_H_LEVELS:
        case = one_case(tmp_path, TOPK_HEADER + GOOD_TOPK + f"    feature_level: '{level}'\n")
        assert str(case.feature_level) == level


def test_duplicate_case_id(tmp_path: Path) -> None:
    path, entries, problems = parse(tmp_path, TOPK_HEADER + GOOD_TOPK + GOOD_TOPK)
    assert problems == [f"{path}:8:5: id: duplicate id 'a' (first at line 4)"]
    assert len(entries) == 1


def test_expect_must_be_valid_or_invalid(tmp_path: Path) -> None:
    path, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK + "    expect: maybe\n")
    assert lines == [f"{path}:8:5: expect: must be 'valid' or 'invalid', got 'maybe'"]


def test_tolerance_fields(tmp_path: Path) -> None:
    path, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK + "    tolerance: {atol: -1, max_ulp: 1.5, x: 1}\n")
    assert lines == [
        f"{path}:8:41: tolerance.x: unknown field (expected one of: max_ulp, atol)",
        f"{path}:8:27: tolerance.max_ulp: must be an integer, got 1.5",
        f"{path}:8:17: tolerance.atol: must be >= 0",
    ]


# --- tensor data ------------------------------------------------------------------------------------------------------


def tensor_case(sizes: str, data: str, header: str = TOPK_HEADER) -> str:
    return (
        header + f"  - id: a\n    InputTensor: {{Sizes: {sizes}, DataType: FLOAT32, Data: {data}}}\n"
        "    Axis: 0\n    K: 1\n"
    )


@pytest.mark.parametrize(
    ("sizes", "data", "shape"),
    [
        ("[2, 3]", "[[1, 2, 3], [4, 5, 6]]", (2, 3)),
        ("[2, 3]", "[1, 2, 3, 4, 5, 6]", (6,)),
        ("[1, 2, 1, 3]", "[[[[1, 2, 3]], [[4, 5, 6]]]]", (1, 2, 1, 3)),
    ],
)
def test_nested_and_flat_data_are_row_major(tmp_path: Path, sizes: str, data: str, shape: tuple[int, ...]) -> None:
    spec = one_case(tmp_path, tensor_case(sizes, data)).descriptor.input
    assert spec.data == (1, 2, 3, 4, 5, 6) and spec.data_shape == shape


NOT_A_NUMBER = "which is not a number (use .nan, .inf, -.inf for special values)"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            "[[1, 2], [3]]",
            "is ragged: [1] has 1 entries where the first rows have a list of 2 "
            "(every nesting level must have the same length)",
        ),
        (
            "[[1, 2], 3]",
            "is ragged: [1] is 3 where the first rows have a list of 2 (every nesting level must have the same length)",
        ),
        ("[1, [2, 3]]", "is ragged: [1] is a list, but the first entries nest 1 level deep"),
        ("[[1, x], [3, 4]]", f"holds 'x' at [0][1], {NOT_A_NUMBER}"),
        ("[[1, true], [3, 4]]", f"holds True at [0][1], {NOT_A_NUMBER}"),
        ("[[1, null], [3, 4]]", f"holds None at [0][1], {NOT_A_NUMBER}"),
        ("[[1, 2], [3, '1_0']]", f"holds '1_0' at [1][1], {NOT_A_NUMBER}"),
    ],
)
def test_bad_data_is_refused_with_where(tmp_path: Path, data: str, message: str) -> None:
    path, lines = rejected(tmp_path, tensor_case("[2, 2]", data))
    assert lines == [f"{path}:5:53: InputTensor.Data: {message}"]


def test_ragged_expected_output(tmp_path: Path) -> None:
    path, lines = rejected(tmp_path, TOPK_HEADER + GOOD_TOPK + "    expected: {OutputValueTensor: [[1], [2, 3]]}\n")
    assert lines == [
        f"{path}:8:16: expected.OutputValueTensor: is ragged: [1] has 2 entries where the first rows "
        "have a list of 1 (every nesting level must have the same length)"
    ]


def test_special_values_are_preserved(tmp_path: Path) -> None:
    spec = one_case(tmp_path, tensor_case("[6]", "[.nan, .inf, -.inf, -0.0, .NaN, '-1e-5']")).descriptor.input
    assert spec.data is not None
    nan, inf, ninf, nzero, nan2, small = spec.data
    assert math.isnan(nan) and math.isnan(nan2)
    assert (inf, ninf, small) == (math.inf, -math.inf, -1e-5)
    assert nzero == 0.0 and math.copysign(1.0, nzero) == -1.0


@pytest.mark.parametrize("epsilon", ["1e-5", "'1e-5'", "0.00001", "1.0e-5"])
def test_epsilon_in_exponent_notation(tmp_path: Path, epsilon: str) -> None:
    case = one_case(tmp_path, MVN_HEADER + "  - id: a\n" + GOOD_TENSOR + f"    Axes: [1]\n    Epsilon: {epsilon}\n")
    assert isinstance(case.descriptor, Mvn1Desc) and case.descriptor.epsilon == 1e-5


def test_epsilon_must_be_finite(tmp_path: Path) -> None:
    path, lines = rejected(tmp_path, MVN_HEADER + "  - id: a\n" + GOOD_TENSOR + "    Axes: [1]\n    Epsilon: .inf\n")
    assert lines == [f"{path}:7:5: Epsilon: must be a finite number, got inf"]


@pytest.mark.parametrize(
    ("value", "number"),
    [
        ("1e-5", 1e-5),
        (" -2.5E3 ", -2500.0),
        ("nan", math.nan),
        (3, 3),
        (0.5, 0.5),
        (True, None),
        ("x", None),
        ("1_000", None),
        (None, None),
        ([1], None),
    ],
)
def test_as_number(value: object, number: float | None) -> None:
    got = as_number(value)
    assert (got is None and number is None) or (
        got is not None and number is not None and (got == number or (math.isnan(got) and math.isnan(number)))
    )


def test_unknown_activation_and_its_parameters(tmp_path: Path) -> None:
    base = MVN_HEADER + "  - id: a\n" + GOOD_TENSOR + "    Axes: [1]\n"
    path, lines = rejected(tmp_path, base + "    FusedActivation: {Type: SOFTMAX}\n")
    assert lines[0].startswith(f"{path}:7:23: FusedActivation.Type: unknown activation 'SOFTMAX' (one of: IDENTITY,")
    path, lines = rejected(tmp_path, base + "    FusedActivation: {Type: RELU, Alpha: 1}\n")
    assert lines == [f"{path}:7:35: FusedActivation.Alpha: unknown field (expected one of: Type)"]
    case = one_case(tmp_path, base + "    FusedActivation: {Type: DML_OPERATOR_ACTIVATION_ELU, Alpha: 0.5}\n")
    assert isinstance(case.descriptor, Mvn1Desc) and case.descriptor.fused_activation is not None
    assert (case.descriptor.fused_activation.type, dict(case.descriptor.fused_activation.params)) == (
        "ELU",
        {"alpha": 0.5},
    )
