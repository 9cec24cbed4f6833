"""validate(): every constraint of the three spec pages, positive and negative, at the feature level that decides it.

Each parameter set's id names the rule; the spec sentence it comes from is quoted above each table. A case is
written as Python descriptors; ``fields`` is the list of fields the validator names ([] when valid).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from conformance.cases.decisions import DECISIONS, WHERE
from conformance.cases.layouts import case_layouts
from conformance.cases.limits import DEFAULT_MAX_ELEMENTS
from conformance.cases.load import load_document
from conformance.cases.parse import parse_document
from conformance.cases.validate import validate
from conformance.model import (
    AxisDirection,
    Case,
    DataType,
    Descriptor,
    FeatureLevel,
    Generator,
    Mvn1Desc,
    Operator,
    Slice1Desc,
    TensorSpec,
    TopK1Desc,
)
from conformance.problems import Problem

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
INTEGER_TYPES = [t for t in DataType if not t.is_float]
OPERATORS = {TopK1Desc: Operator.TOP_K1, Mvn1Desc: Operator.MEAN_VARIANCE_NORMALIZATION1, Slice1Desc: Operator.SLICE1}


def gen(sizes: Sequence[int], dt: DataType = F32, kind: str = "uniform", **params: float) -> TensorSpec:
    return TensorSpec(tuple(sizes), dt, generator=Generator(kind, 1, params))


def data(sizes: Sequence[int], values: Sequence[float], dt: DataType = F32) -> TensorSpec:
    return TensorSpec(tuple(sizes), dt, data=tuple(values), data_shape=(len(values),))


def problems(desc: Descriptor, level: str = "3_1") -> list[Problem]:
    """What validate() says of ``desc`` at feature ``level``."""
    operator = OPERATORS[type(desc)]
    case = Case("t::a", "t", operator, FeatureLevel.parse(level), desc, layouts=case_layouts(operator, desc))
    return validate(case)


def fields(
    desc: Descriptor,
    level: str = "3_1",
    expected: Mapping[str, Sequence[float]] | None = None,
    shapes: Mapping[str, tuple[int, ...]] | None = None,
    max_elements: int = DEFAULT_MAX_ELEMENTS,
) -> list[str]:
    """The fields validate() names for ``desc`` at feature ``level``; expected outputs are flat unless shaped."""
    expected = expected or {}
    shapes = {name: (len(values),) for name, values in expected.items()} | dict(shapes or {})
    case = Case(
        id="t::a",
        path="t",
        operator=OPERATORS[type(desc)],
        feature_level=FeatureLevel.parse(level),
        descriptor=desc,
        expected={k: tuple(v) for k, v in expected.items()},
        expected_shapes=shapes,
        layouts=case_layouts(OPERATORS[type(desc)], desc),
    )
    problems = validate(case, max_elements)
    assert all("\n" not in str(p) and p.message for p in problems)
    return [p.field for p in problems]


def topk(sizes: Sequence[int], axis: int, k: int, dt: DataType = F32) -> TopK1Desc:
    return TopK1Desc(gen(sizes, dt), axis, k, AxisDirection.DECREASING)


def mvn(
    sizes: Sequence[int],
    axes: Sequence[int],
    scale: Sequence[int] | None = None,
    bias: Sequence[int] | None = None,
    dt: DataType = F32,
    sb_dt: DataType = F32,
) -> Mvn1Desc:
    return Mvn1Desc(
        gen(sizes, dt),
        gen(scale, sb_dt) if scale else None,
        gen(bias, sb_dt) if bias else None,
        tuple(axes),
        True,
        1e-5,
        None,
    )


def slice1(
    sizes: Sequence[int],
    offsets: Sequence[int],
    window: Sequence[int],
    strides: Sequence[int],
    out: Sequence[int] | None = None,
) -> Slice1Desc:
    return Slice1Desc(gen(sizes), tuple(offsets), tuple(window), tuple(strides), tuple(out) if out else None)


# TOP_K1 tensor support: "DML_FEATURE_LEVEL_3_1 and above ... 1 to 8"; "DML_FEATURE_LEVEL_2_1 and above ... 4".
# Axis: "This value must be less than the DimensionCount of the InputTensor."
# K: "K must be greater than 0, but less than the number of elements in the InputTensor along ... Axis."
# DECISION (README): read literally, K equal to the axis size is invalid.
@pytest.mark.parametrize(
    ("desc", "level", "wrong"),
    [
        pytest.param(topk([1, 1, 3, 4], 3, 2), "2_1", [], id="rank4-at-2_1"),
        pytest.param(topk([3, 4, 5], 2, 2), "2_1", ["InputTensor.Sizes"], id="rank3-below-3_1"),
        pytest.param(topk([1, 3, 4, 5, 6], 2, 2), "3_0", ["InputTensor.Sizes"], id="rank5-below-3_1"),
        pytest.param(topk([5], 0, 2), "3_1", [], id="rank1-from-3_1"),
        pytest.param(topk([1] * 7 + [5], 7, 2), "3_1", [], id="rank8-from-3_1"),
        pytest.param(topk([1] * 8 + [5], 8, 2), "3_1", ["InputTensor.Sizes"], id="rank9-never"),
        pytest.param(topk([1, 1, 3, 4], 4, 2), "3_1", ["Axis"], id="axis-equal-to-rank"),
        pytest.param(topk([1, 1, 3, 4], 3, 0), "3_1", ["K"], id="k-zero"),
        pytest.param(topk([1, 1, 3, 4], 3, 1), "3_1", [], id="k-one"),
        pytest.param(topk([1, 1, 3, 4], 3, 3), "3_1", [], id="k-axis-size-minus-one"),
        pytest.param(topk([1, 1, 3, 4], 3, 4), "3_1", ["K"], id="k-equal-to-axis-size-decision"),
        pytest.param(topk([1, 1, 3, 4], 2, 4), "3_1", ["K"], id="k-over-axis-size"),
    ],
)
def test_topk_descriptor(desc: TopK1Desc, level: str, wrong: list[str]) -> None:
    assert fields(desc, level) == wrong


# "This tensor must have sizes equal to the InputTensor, except for the dimension specified by the Axis
# parameter, which must have a size equal to K." (both outputs; OutputIndexTensor is UINT32 and its indices
# are "measured relative to the beginning of their sequence")
@pytest.mark.parametrize(
    ("expected", "shapes", "wrong"),
    [
        pytest.param({"OutputValueTensor": [4, 3], "OutputIndexTensor": [3, 2]}, {}, [], id="flat-k-values"),
        pytest.param({"OutputValueTensor": [4, 3]}, {"OutputValueTensor": (1, 2)}, [], id="nested-axis-replaced-by-k"),
        pytest.param(
            {"OutputValueTensor": [4, 3, 2, 1]},
            {"OutputValueTensor": (1, 4)},
            ["expected.OutputValueTensor"],
            id="values-keep-the-input-sizes",
        ),
        pytest.param({"OutputIndexTensor": [3]}, {}, ["expected.OutputIndexTensor"], id="indices-too-few"),
        pytest.param({"OutputIndexTensor": [3, 4]}, {}, ["expected.OutputIndexTensor"], id="index-equal-to-axis-size"),
        pytest.param({"OutputIndexTensor": [3, -1]}, {}, ["expected.OutputIndexTensor"], id="index-negative"),
        pytest.param({"OutputIndexTensor": [3, 1.5]}, {}, ["expected.OutputIndexTensor"], id="index-not-integer"),
        pytest.param({"OutputValueTensor": [300, 3]}, {}, ["expected.OutputValueTensor"], id="value-outside-int8"),
    ],
)
def test_topk_expected_outputs(
    expected: dict[str, list[float]], shapes: dict[str, tuple[int, ...]], wrong: list[str]
) -> None:
    desc = TopK1Desc(data([1, 4], [1, 2, 3, 4], DataType.INT8), 1, 2, AxisDirection.DECREASING)
    assert fields(desc, "3_1", expected, shapes) == wrong


# Tensor support: every type for TOP_K1 and SLICE1; Data must be values of the DataType.
@pytest.mark.parametrize(
    ("dt", "values", "wrong"),
    [
        *(pytest.param(t, [0, 1, 2, 3], [], id=f"{t}-accepted") for t in DataType),
        pytest.param(DataType.INT8, [-128, 127, 0, 1], [], id="int8-extremes"),
        pytest.param(DataType.INT8, [128, 0, 0, 0], ["InputTensor.Data"], id="int8-over"),
        pytest.param(DataType.INT8, [-129, 0, 0, 0], ["InputTensor.Data"], id="int8-under"),
        pytest.param(DataType.UINT8, [-1, 0, 0, 0], ["InputTensor.Data"], id="uint8-negative"),
        pytest.param(DataType.UINT32, [2**32 - 1, 0, 0, 0], [], id="uint32-max"),
        pytest.param(DataType.INT32, [2.5, 0, 0, 0], ["InputTensor.Data"], id="int-not-integer"),
        pytest.param(DataType.INT16, [float("nan"), 0, 0, 0], ["InputTensor.Data"], id="int-nan"),
        pytest.param(F16, [65504, -65504, float("inf"), float("nan")], [], id="float16-extremes-and-specials"),
        pytest.param(F16, [65520, 0, 0, 0], ["InputTensor.Data"], id="float16-over"),
        pytest.param(F32, [3e38, -0.0, float("-inf"), 1e-45], [], id="float32-in-range"),
        pytest.param(F32, [1e39, 0, 0, 0], ["InputTensor.Data"], id="float32-over"),
    ],
)
def test_data_must_be_values_of_the_data_type(dt: DataType, values: list[float], wrong: list[str]) -> None:
    assert fields(TopK1Desc(data([1, 1, 1, 4], values, dt), 3, 2, AxisDirection.INCREASING)) == wrong


@pytest.mark.parametrize(
    ("shape", "wrong"),
    [((1, 1, 2, 3), []), ((6,), []), ((2, 3), ["InputTensor.Data"]), ((1, 1, 3, 2), ["InputTensor.Data"])],
)
def test_data_nested_like_sizes_or_flat(shape: tuple[int, ...], wrong: list[str]) -> None:
    spec = TensorSpec((1, 1, 2, 3), F32, data=(1, 2, 3, 4, 5, 6), data_shape=shape)
    assert fields(TopK1Desc(spec, 3, 2, AxisDirection.DECREASING)) == wrong


# MVN1 tensor support: FLOAT32 and FLOAT16 only; "1 to 8" from 3_1, "4" from 2_1.
# "The axes along which to calculate the Mean and Variance." DECISION: non-empty, each in range, each once.
@pytest.mark.parametrize(
    ("desc", "level", "wrong"),
    [
        pytest.param(mvn([1, 2, 3, 3], [2, 3]), "2_1", [], id="rank4-at-2_1"),
        pytest.param(mvn([1, 2, 3, 3], [2, 3], dt=F16), "2_1", [], id="float16"),
        *(
            pytest.param(mvn([1, 2, 3, 3], [2, 3], dt=t), "3_1", ["InputTensor.DataType"], id=f"{t}-refused")
            for t in INTEGER_TYPES
        ),
        pytest.param(mvn([2, 3, 3], [1, 2]), "3_0", ["InputTensor.Sizes"], id="rank3-below-3_1"),
        pytest.param(mvn([2, 3, 3], [1, 2]), "3_1", [], id="rank3-from-3_1"),
        pytest.param(mvn([2] * 8, [7]), "3_1", [], id="rank8-from-3_1"),
        pytest.param(mvn([2] * 9, [8]), "3_1", ["InputTensor.Sizes"], id="rank9-never"),
        pytest.param(mvn([1, 2, 3, 3], []), "3_1", ["Axes"], id="axes-empty"),
        pytest.param(mvn([1, 2, 3, 3], [0, 1, 2, 3]), "3_1", [], id="axes-all"),
        pytest.param(mvn([1, 2, 3, 3], [2, 4]), "3_1", ["Axes.1"], id="axis-out-of-range"),
        pytest.param(mvn([1, 2, 3, 3], [2, 2]), "3_1", ["Axes"], id="axes-repeated"),
    ],
)
def test_mvn_descriptor(desc: Mvn1Desc, level: str, wrong: list[str]) -> None:
    assert fields(desc, level) == wrong


# ScaleTensor: "This tensor is required if the BiasTensor is used." BiasTensor: "... if the ScaleTensor is used."
# "BiasTensor, InputTensor, OutputTensor, and ScaleTensor must have the same DataType and DimensionCount."
# Below 4_0: "{ ScaleBatchCount, ChannelCount, ScaleHeight, ScaleWidth } ... ScaleBatchCount, ScaleHeight, and
# ScaleWidth should either match InputTensor, or be set to 1"; from 4_0: "any dimension can be set to 1".
@pytest.mark.parametrize(
    ("scale", "bias", "level", "sb_dt", "wrong"),
    [
        pytest.param([1, 2, 1, 1], None, "3_1", F32, ["ScaleTensor"], id="scale-without-bias"),
        pytest.param(None, [1, 2, 1, 1], "3_1", F32, ["BiasTensor"], id="bias-without-scale"),
        pytest.param([1, 2, 1, 1], [1, 2, 1, 1], "2_1", F32, [], id="per-channel"),
        pytest.param([1, 2, 3, 4], [1, 2, 3, 4], "2_1", F32, [], id="full-size"),
        pytest.param(
            [1, 2, 1, 1],
            [1, 2, 1, 1],
            "3_1",
            F16,
            ["ScaleTensor.DataType", "BiasTensor.DataType"],
            id="datatype-differs",
        ),
        pytest.param([2, 1, 1], [1, 2, 1, 1], "3_1", F32, ["ScaleTensor.Sizes"], id="dimension-count-differs"),
        pytest.param([1, 1, 1, 1], [1, 2, 1, 1], "3_1", F32, ["ScaleTensor.Sizes.1"], id="channel-1-below-4_0"),
        pytest.param([1, 2, 1, 1], [1, 2, 2, 1], "3_1", F32, ["BiasTensor.Sizes.2"], id="height-neither-below-4_0"),
        pytest.param([1, 1, 1, 1], [1, 1, 1, 4], "4_0", F32, [], id="any-dim-1-from-4_0"),
        pytest.param([1, 2, 2, 1], [1, 1, 1, 1], "4_0", F32, ["ScaleTensor.Sizes.2"], id="neither-from-4_0"),
    ],
)
def test_mvn_scale_and_bias(
    scale: list[int] | None, bias: list[int] | None, level: str, sb_dt: DataType, wrong: list[str]
) -> None:
    assert fields(mvn([1, 2, 3, 4], [2, 3], scale, bias, sb_dt=sb_dt), level) == wrong


def test_mvn_expected_output_has_the_input_sizes() -> None:
    desc = mvn([1, 2], [1])
    assert fields(desc, expected={"OutputTensor": [-1, 1]}) == []
    assert fields(desc, expected={"OutputTensor": [-1]}) == ["expected.OutputTensor"]


# SLICE1 DimensionCount: "between 1 and 8, inclusively, starting from DML_FEATURE_LEVEL_3_0; earlier feature
# levels require a value of either 4 or 5", and it "determines the size of the ... arrays".
# "The input window mustn't be empty in any dimension"; "InputWindowOffsets[i] + InputWindowSizes[i] <=
# InputTensor.Sizes[i]"; "Strides may not be 0"; "valid so long as 1 <= OutputSizes[i] <= MaxCopiedElements[i]"
# with MaxCopiedElements[i] = 1 + (InputWindowSize[i] - 1) / |InputWindowStrides[i]|.
@pytest.mark.parametrize(
    ("desc", "level", "wrong"),
    [
        pytest.param(slice1([1, 1, 4, 4], [0] * 4, [1, 1, 4, 4], [1] * 4), "2_1", [], id="rank4-at-2_1"),
        pytest.param(slice1([1] * 4 + [4], [0] * 5, [1] * 4 + [4], [1] * 5), "2_1", [], id="rank5-at-2_1"),
        pytest.param(slice1([4, 4, 4], [0] * 3, [4] * 3, [1] * 3), "2_1", ["InputTensor.Sizes"], id="rank3-below-3_0"),
        pytest.param(
            slice1([1] * 5 + [4], [0] * 6, [1] * 5 + [4], [1] * 6), "2_1", ["InputTensor.Sizes"], id="rank6-below-3_0"
        ),
        pytest.param(slice1([4], [0], [4], [1]), "3_0", [], id="rank1-from-3_0"),
        pytest.param(slice1([1] * 7 + [4], [0] * 8, [1] * 7 + [4], [1] * 8), "3_0", [], id="rank8-from-3_0"),
        pytest.param(
            slice1([1] * 8 + [4], [0] * 9, [1] * 8 + [4], [1] * 9), "3_0", ["InputTensor.Sizes"], id="rank9-never"
        ),
        pytest.param(slice1([4, 4], [0], [4, 4], [1, 1]), "3_0", ["InputWindowOffsets"], id="offsets-length"),
        pytest.param(slice1([4, 4], [0, 0], [4, 4, 1], [1, 1]), "3_0", ["InputWindowSizes"], id="sizes-length"),
        pytest.param(slice1([4, 4], [0, 0], [4, 4], [1]), "3_0", ["InputWindowStrides"], id="strides-length"),
        pytest.param(slice1([4, 4], [0, 0], [4, 4], [1, 1], [4]), "3_0", ["OutputSizes"], id="output-sizes-length"),
        pytest.param(slice1([4, 4], [0, 0], [0, 4], [1, 1]), "3_0", ["InputWindowSizes.0"], id="window-empty"),
        pytest.param(slice1([4, 4], [3, 0], [1, 4], [1, 1]), "3_0", [], id="window-ends-at-the-edge"),
        pytest.param(slice1([4, 4], [0, 2], [4, 3], [1, 1]), "3_0", ["InputWindowOffsets.1"], id="window-past-edge"),
        pytest.param(slice1([4, 4], [0, 0], [4, 4], [1, 0]), "3_0", ["InputWindowStrides.1"], id="stride-zero"),
        pytest.param(slice1([7], [0], [7], [3], [3]), "3_0", [], id="output-max-copied-3"),
        pytest.param(slice1([7], [0], [7], [-3], [3]), "3_0", [], id="output-max-copied-negative-stride"),
        pytest.param(slice1([7], [0], [7], [3], [1]), "3_0", [], id="output-below-max-copied"),
        pytest.param(slice1([7], [0], [7], [3], [4]), "3_0", ["OutputSizes.0"], id="output-over-max-copied"),
        pytest.param(slice1([7], [0], [7], [-3], [0]), "3_0", ["OutputSizes.0"], id="output-zero"),
        pytest.param(slice1([7], [0], [2], [5], [1]), "3_0", [], id="stride-beyond-window-copies-one"),
    ],
)
def test_slice_descriptor(desc: Slice1Desc, level: str, wrong: list[str]) -> None:
    assert fields(desc, level) == wrong


def test_slice_expected_output_has_the_output_sizes() -> None:
    desc = slice1([7], [0], [7], [3])  # MaxCopiedElements 1 + 6 // 3 = 3
    assert fields(desc, expected={"OutputTensor": [0, 3, 6]}) == []
    assert fields(desc, expected={"OutputTensor": [0, 3]}) == ["expected.OutputTensor"]


# Availability: "This operator was introduced in DML_FEATURE_LEVEL_2_1."
@pytest.mark.parametrize(
    "desc",
    [topk([1, 1, 3, 4], 3, 2), mvn([1, 2, 3, 3], [2, 3]), slice1([1, 1, 4, 4], [0] * 4, [1, 1, 4, 4], [1] * 4)],
    ids=lambda d: type(d).__name__,
)
@pytest.mark.parametrize(("level", "wrong"), [("1_0", ["feature_level"]), ("2_0", ["feature_level"]), ("2_1", [])])
def test_operators_were_introduced_in_2_1(desc: Descriptor, level: str, wrong: list[str]) -> None:
    assert fields(desc, level) == wrong


def test_element_limit_is_checked_before_anything_is_allocated() -> None:
    huge = TopK1Desc(gen([2**20, 2**20]), 1, 2, AxisDirection.DECREASING)
    tracemalloc.start()
    try:
        assert fields(huge, max_elements=2**20) == ["InputTensor.Sizes"]
        assert fields(huge) == ["InputTensor.Sizes"]  # 2**40 is over the default 2**28 too
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
    assert fields(topk([2**10, 2**10], 1, 2), max_elements=2**20) == []


def test_a_zero_size_is_refused() -> None:
    """DECISION: the pages never allow an empty tensor."""
    assert fields(topk([0, 4], 1, 2)) == ["InputTensor.Sizes"]


@pytest.mark.parametrize(
    ("desc", "decision"),
    [
        pytest.param(topk([0, 4], 1, 2), "Sizes at least 1", id="zero-size"),
        pytest.param(mvn([1, 2, 3, 4], []), "MVN1 Axes", id="no-axes"),
        pytest.param(mvn([1, 2, 3, 4], [2, 2]), "MVN1 Axes", id="duplicate-axes"),
        pytest.param(mvn([1, 2, 3, 4], [4]), "MVN1 Axes", id="axis-past-rank"),
        # The spec's own words: "less than the number of elements ... along Axis" (read literally, a decision not to
        # read more into it), "required if the BiasTensor is used".
        pytest.param(topk([1, 1, 3, 4], 3, 4), "", id="k-equals-axis-size"),
        pytest.param(mvn([1, 2, 3, 3], [2, 3], scale=[1, 2, 1, 1]), "", id="scale-without-bias"),
    ],
)
def test_a_problem_names_the_decision_it_enforces_where_the_spec_forbids_nothing(
    desc: Descriptor, decision: str
) -> None:
    [problem] = problems(desc)
    assert problem.decision == decision


def test_every_decision_is_documented_under_its_name() -> None:
    """Where a verdict on DirectML names a decision (run/operator_api.py), the reader finds it by that name."""
    text = (Path(__file__).parent.parent / "docs" / "tolerances.md").read_text(encoding="utf-8")
    section = text.split("\n## Spec decisions\n", 1)[1].split("\n## ", 1)[0]
    assert WHERE == "docs/tolerances.md#spec-decisions"  # the heading's GitHub anchor
    assert [name for name in DECISIONS if f"\n- **{name}**" not in section] == []


G = "InputTensor.Generator"


@pytest.mark.parametrize(
    ("kind", "params", "dt", "wrong"),
    [
        ("bogus", {}, F32, [f"{G}.Kind"]),
        ("uniform", {"Mean": 1}, F32, [G]),
        ("uniform", {"Low": 2, "High": 1}, F32, [f"{G}.High"]),
        ("uniform", {"Low": 1, "High": 1}, F32, []),
        ("integers", {"Low": 0.2, "High": 0.8}, F32, [f"{G}.High"]),
        ("integers", {}, F32, []),
        ("uniform", {"Low": 0.2, "High": 0.8}, DataType.INT32, [f"{G}.High"]),
        ("normal", {"Std": -1}, F32, [f"{G}.Std"]),
        ("normal", {"Std": 0}, F32, []),
        ("ties", {"Distinct": 0}, F32, [f"{G}.Distinct"]),
        ("ties", {"Distinct": 2.5}, F32, [f"{G}.Distinct"]),
        ("ties", {"Step": 0}, F32, [f"{G}.Step"]),
        ("ties", {"Distinct": 1, "Step": -2}, F32, []),
        ("special", {"Fraction": 1.5}, F32, [f"{G}.Fraction"]),
        ("special", {"Fraction": 1}, F32, []),
        ("arange", {"Start": 0.5}, DataType.INT8, [f"{G}.Start"]),
        ("arange", {"Start": 0.5}, F32, []),
    ],
)
def test_generator_kind_and_parameters(kind: str, params: dict[str, float], dt: DataType, wrong: list[str]) -> None:
    """What ``generate`` would refuse at run time is refused up front, at the parameter that is wrong."""
    assert fields(TopK1Desc(gen([1, 1, 1, 8], dt, kind, **params), 3, 2, AxisDirection.DECREASING)) == wrong


# The spec pages' own examples, transcribed from their text: they must validate clean.
SPEC_INPUT_A = [0, 1, 10, 11, 3, 2, 9, 8, 4, 5, 6, 7]
SPEC_INPUT_B = [1, 2, 2, 3, 3, 4, 5, 5, 6, 6, 6, 6]


@pytest.mark.parametrize(
    ("values", "axis", "k", "direction", "out_values", "out_indices", "out_shape"),
    [
        pytest.param(SPEC_INPUT_A, 3, 2, "DECREASING", [11, 10, 9, 8, 7, 6], [3, 2, 2, 3, 3, 2], (1, 1, 3, 2), id="1"),
        pytest.param(
            SPEC_INPUT_A,
            2,
            2,
            "DECREASING",
            [4, 5, 10, 11, 3, 2, 9, 8],
            [2, 2, 0, 0, 1, 1, 1, 1],
            (1, 1, 2, 4),
            id="2-different-axis",
        ),
        pytest.param(
            SPEC_INPUT_B,
            3,
            3,
            "DECREASING",
            [3, 2, 2, 5, 5, 4, 6, 6, 6],
            [3, 1, 2, 2, 3, 1, 0, 1, 2],
            (1, 1, 3, 3),
            id="3-tied-values",
        ),
        pytest.param(
            SPEC_INPUT_B,
            3,
            3,
            "INCREASING",
            [1, 2, 2, 3, 4, 5, 6, 6, 6],
            [0, 1, 2, 0, 1, 2, 0, 1, 2],
            (1, 1, 3, 3),
            id="4-increasing",
        ),
    ],
)
def test_topk_spec_examples_validate(
    values: list[float],
    axis: int,
    k: int,
    direction: str,
    out_values: list[float],
    out_indices: list[float],
    out_shape: tuple[int, ...],
) -> None:
    desc = TopK1Desc(data([1, 1, 3, 4], values), axis, k, AxisDirection(direction))
    expected = {"OutputValueTensor": out_values, "OutputIndexTensor": out_indices}
    shapes = dict.fromkeys(expected, out_shape)
    for level in ("2_1", "3_1"):
        assert fields(desc, level, expected, shapes) == []


@pytest.mark.parametrize(
    ("strides", "output"),
    [((1, 1, 2, 2), [2, 4, 10, 12]), ((1, 1, -2, 2), [14, 16, 6, 8])],
    ids=["1-positive-strides", "2-negative-strides"],
)
def test_slice_spec_examples_validate(strides: tuple[int, ...], output: list[float]) -> None:
    """Both windows: offsets {0,0,0,1}, sizes {1,1,4,3}; MaxCopiedElements {1,1,2,2}, the page's output Sizes."""
    desc = Slice1Desc(data([1, 1, 4, 4], range(1, 17)), (0, 0, 0, 1), (1, 1, 4, 3), strides, None)
    for level in ("2_1", "3_0"):
        assert fields(desc, level, {"OutputTensor": output}, {"OutputTensor": (1, 1, 2, 2)}) == []
        assert fields(Slice1Desc(desc.input, desc.offsets, desc.sizes, strides, (1, 1, 2, 2)), level) == []


def test_problems_point_at_the_field_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "k.yaml"
    path.write_text(
        "operator: TOP_K1\ncases:\n  - id: a\n    InputTensor: {Sizes: [1, 1, 3, 4], DataType: FLOAT32, "
        "Generator: {Kind: arange}}\n    Axis: 3\n    K: 4\n"
    )
    (case,), _ = parse_document(load_document(path))
    assert isinstance(case, Case)
    assert [str(p) for p in validate(case)] == [
        f"{path}:6:5: K: must be greater than 0 but less than the axis size 4 (the spec's words), got 4"
    ]
