"""compare: verdicts and failure kinds for hand-made wrong outputs; expected values from the spec's examples."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conformance.cases.layouts import case_layouts
from conformance.compare import outputs
from conformance.compare.common import format_value, ulp_distance
from conformance.compare.mvn1 import default_tolerance
from conformance.compare.operators import OPERATORS
from conformance.compare.outputs import Verdict, compare
from conformance.model import (
    AxisDirection,
    Case,
    DataType,
    FeatureLevel,
    Mvn1Desc,
    Operator,
    Slice1Desc,
    Status,
    TensorSpec,
    Tolerance,
    TopK1Desc,
)
from conformance.operators import MissingOperator, OperatorTable

# --- TOP_K1 -----------------------------------------------------------------------------------------------------

# The spec's Example 3 (tied values): Axis 3, K 3, DECREASING.
EX3_INPUT = [[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]]
EX3_VALUES = [[3, 2, 2], [5, 5, 4], [6, 6, 6]]
EX3_INDICES = [[3, 1, 2], [2, 3, 1], [0, 1, 2]]


def topk_case(
    shape: tuple[int, ...], axis: int, k: int, direction: AxisDirection, data_type: DataType = DataType.FLOAT32
) -> Case:
    spec = TensorSpec(shape, data_type, data=(0.0,) * math.prod(shape))
    desc = TopK1Desc(spec, axis, k, direction)
    return Case(
        "topk", "topk.yaml", Operator.TOP_K1, FeatureLevel(3, 1), desc, layouts=case_layouts(Operator.TOP_K1, desc)
    )


def run_topk(
    x: np.ndarray,
    case: Case,
    expected: tuple[np.ndarray, np.ndarray],
    actual: tuple[np.ndarray, np.ndarray],
) -> Verdict:
    verdict = compare(
        case,
        {"InputTensor": x},
        {"OutputValueTensor": expected[0], "OutputIndexTensor": expected[1]},
        {"OutputValueTensor": actual[0], "OutputIndexTensor": actual[1]},
    )
    json.dumps(dict(verdict.metrics))  # plain JSON types only
    return verdict


def ex3(dtype: type[np.generic] = np.float32) -> tuple[np.ndarray, Case, tuple[np.ndarray, np.ndarray]]:
    x = np.array(EX3_INPUT, dtype=dtype).reshape(1, 1, 3, 4)
    values = np.array(EX3_VALUES, dtype=dtype).reshape(1, 1, 3, 3)
    indices = np.array(EX3_INDICES, dtype=np.uint32).reshape(1, 1, 3, 3)
    data_type = DataType.FLOAT32 if dtype is np.float32 else DataType.INT8
    return x, topk_case((1, 1, 3, 4), 3, 3, AxisDirection.DECREASING, data_type), (values, indices)


def with_row(array: np.ndarray, row: int, new: list[float]) -> np.ndarray:
    out = array.copy()
    out[0, 0, row] = new
    return out


@pytest.mark.parametrize("index_dtype", [np.int64, np.uint32, np.int32])
def test_topk_correct_output_passes(index_dtype: type[np.generic]) -> None:
    x, case, (values, indices) = ex3()
    verdict = run_topk(x, case, (values, indices), (values.copy(), indices.astype(index_dtype)))
    assert verdict.status == Status.PASS and verdict.failure_kind is None and verdict.message == ""
    assert verdict.metrics["sequences"] == 3 and verdict.metrics["failing_sequences"] == 0


def test_topk_swapped_tie_indices_is_tie_order() -> None:
    x, case, (values, indices) = ex3()
    verdict = run_topk(x, case, (values, indices), (values, with_row(indices, 1, [3, 2, 1]).astype(np.int64)))
    assert (verdict.status, verdict.failure_kind) == (Status.FAIL, "tie_order")
    assert verdict.metrics["failing_sequences"] == 1 and verdict.metrics["index_mismatches"] == 2
    assert "InputTensor[0, 0, 1, :]" in verdict.message
    assert "value 5.0 is tied at input indices [2, 3]: expected [2, 3], actual [3, 2]" in verdict.message
    assert "ascending index order" in verdict.message


def test_topk_later_tied_element_at_k_boundary_is_tie_order() -> None:
    x, case, (values, indices) = ex3()
    verdict = run_topk(x, case, (values, indices), (values, with_row(indices, 2, [0, 1, 3])))
    assert verdict.failure_kind == "tie_order"
    assert "expected [0, 1, 2], actual [0, 1, 3]" in verdict.message and "K boundary" in verdict.message


def test_topk_wrong_element() -> None:
    x, case, (values, indices) = ex3()
    actual = (with_row(values, 0, [3, 2, 1]), with_row(indices, 0, [3, 1, 0]))
    verdict = run_topk(x, case, (values, indices), actual)
    assert (verdict.status, verdict.failure_kind) == (Status.FAIL, "wrong_elements")
    assert "expected but not selected: [2.0]; selected but not expected: [1.0]" in verdict.message


def test_topk_unsorted() -> None:
    x, case, (values, indices) = ex3()
    actual = (with_row(values, 1, [5, 4, 5]), with_row(indices, 1, [2, 1, 3]))
    verdict = run_topk(x, case, (values, indices), actual)
    assert verdict.failure_kind == "not_sorted"
    assert "output positions 1, 2 hold 4.0, 5.0: not descending" in verdict.message


def test_topk_values_inconsistent_with_indices() -> None:
    x, case, (values, indices) = ex3()
    verdict = run_topk(x, case, (values, indices), (with_row(values, 1, [5, 5, 5]), indices))
    assert verdict.failure_kind == "values"
    assert "output position 2: value 5.0, but InputTensor[0, 0, 1, 1] = 4.0" in verdict.message


@pytest.mark.parametrize("bad", [-1, 4])
def test_topk_index_out_of_range(bad: int) -> None:
    x, case, (values, indices) = ex3()
    verdict = run_topk(x, case, (values, indices), (values, with_row(indices.astype(np.int64), 2, [0, 1, bad])))
    assert verdict.failure_kind == "index_out_of_range"
    assert f"index {bad} is outside [0, 4)" in verdict.message


def test_topk_duplicate_indices() -> None:
    x, case, (values, indices) = ex3()
    verdict = run_topk(x, case, (values, indices), (values, with_row(indices, 2, [0, 0, 1])))
    assert verdict.failure_kind == "duplicate_indices"


def test_topk_structure_failures() -> None:
    x, case, (values, indices) = ex3()
    shape = run_topk(x, case, (values, indices), (values[..., :2], indices[..., :2]))
    assert (shape.status, shape.failure_kind) == (Status.FAIL, "shape")
    assert "expected (1, 1, 3, 3), actual (1, 1, 3, 2)" in shape.message
    dtype = run_topk(x, case, (values, indices), (values.astype(np.float16), indices))
    assert dtype.failure_kind == "dtype" and "expected float32, actual float16" in dtype.message
    float_indices = run_topk(x, case, (values, indices), (values, indices.astype(np.float32)))
    assert float_indices.failure_kind == "dtype"
    missing = compare(case, {"InputTensor": x}, {"OutputValueTensor": values, "OutputIndexTensor": indices}, {})
    assert missing.failure_kind == "missing_output"


def test_topk_most_severe_kind_wins_and_all_are_counted() -> None:
    x, case, (values, indices) = ex3()
    actual_values = with_row(values, 2, [6, 6, 6])
    actual_indices = with_row(with_row(indices, 1, [3, 2, 1]), 0, [3, 1, 0])
    actual_values = with_row(actual_values, 0, [3, 2, 1])
    verdict = run_topk(x, case, (values, indices), (actual_values, actual_indices))
    assert verdict.failure_kind == "wrong_elements"
    assert verdict.metrics["sequences_wrong_elements"] == 1 and verdict.metrics["sequences_tie_order"] == 1
    assert verdict.metrics["failing_sequences"] == 2


def test_topk_integer_type_and_increasing_example_4() -> None:
    x, case, (values, indices) = ex3(np.int8)
    assert run_topk(x, case, (values, indices), (values, indices.astype(np.int64))).status == Status.PASS
    assert run_topk(x, case, (values, indices), (values, with_row(indices, 2, [1, 0, 2]))).failure_kind == "tie_order"
    inc = topk_case((1, 1, 3, 4), 3, 3, AxisDirection.INCREASING)
    values4 = np.array([[1, 2, 2], [3, 4, 5], [6, 6, 6]], np.float32).reshape(1, 1, 3, 3)
    indices4 = np.array([[0, 1, 2], [0, 1, 2], [0, 1, 2]], np.uint32).reshape(1, 1, 3, 3)
    x4 = x.astype(np.float32)
    assert run_topk(x4, inc, (values4, indices4), (values4, indices4.astype(np.int64))).status == Status.PASS
    reversed_ties = with_row(indices4, 0, [0, 2, 1])
    assert run_topk(x4, inc, (values4, indices4), (values4, reversed_ties)).failure_kind == "tie_order"


def test_topk_other_axis_reports_coordinates_in_the_input_layout() -> None:
    # The spec's Example 2: Axis 2, K 2.
    x = np.array([[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]], np.float32).reshape(1, 1, 3, 4)
    values = np.array([[4, 5, 10, 11], [3, 2, 9, 8]], np.float32).reshape(1, 1, 2, 4)
    indices = np.array([[2, 2, 0, 0], [1, 1, 1, 1]], np.uint32).reshape(1, 1, 2, 4)
    case = topk_case((1, 1, 3, 4), 2, 2, AxisDirection.DECREASING)
    assert run_topk(x, case, (values, indices), (values, indices.astype(np.int64))).status == Status.PASS
    wrong_values, wrong_indices = values.copy(), indices.astype(np.int64)
    wrong_values[0, 0, 1, 1], wrong_indices[0, 0, 1, 1] = 1, 0
    verdict = run_topk(x, case, (values, indices), (wrong_values, wrong_indices))
    assert verdict.failure_kind == "wrong_elements"
    assert "InputTensor[0, 0, :, 1]" in verdict.message and "(0, 0, 1, 1)" in verdict.message


def test_topk_signed_zeros_tie() -> None:
    x = np.array([0.0, -0.0, 1.0], np.float32)
    case = topk_case((3,), 0, 2, AxisDirection.DECREASING)
    expected = (np.array([1.0, 0.0], np.float32), np.array([2, 0], np.uint32))
    verdict = run_topk(x, case, expected, (np.array([1.0, -0.0], np.float32), np.array([2, 1])))
    assert verdict.failure_kind == "tie_order"


NAN = math.nan


def nan_case(direction: AxisDirection) -> tuple[np.ndarray, Case, tuple[np.ndarray, np.ndarray]]:
    """Rows [1, NaN, 3, 2] and [5, 6, 7, 8], K 2; the oracle's answer has NaN as the largest value."""
    x = np.array([[1, NAN, 3, 2], [5, 6, 7, 8]], np.float16)
    case = topk_case((2, 4), 1, 2, direction, DataType.FLOAT16)
    if direction == AxisDirection.DECREASING:
        expected = (np.array([[NAN, 3], [8, 7]], np.float16), np.array([[1, 2], [3, 2]], np.uint32))
    else:
        expected = (np.array([[1, 2], [5, 6]], np.float16), np.array([[0, 3], [0, 1]], np.uint32))
    return x, case, expected


@pytest.mark.parametrize(
    ("direction", "values", "indices"),
    [(AxisDirection.DECREASING, [3, 2], [2, 3]), (AxisDirection.INCREASING, [NAN, 1], [1, 0])],
)
def test_topk_nan_as_smallest_is_a_quality_warning(
    direction: AxisDirection, values: list[float], indices: list[int]
) -> None:
    x, case, expected = nan_case(direction)
    actual_values, actual_indices = expected[0].copy(), expected[1].astype(np.int64)
    actual_values[0], actual_indices[0] = values, indices
    verdict = run_topk(x, case, expected, (actual_values, actual_indices))
    assert (verdict.status, verdict.failure_kind) == (Status.QUALITY_WARNING, "nan_placement")
    assert verdict.metrics["sequences_nan_placement"] == 1 and "NaN" in verdict.message


def test_topk_nan_placement_with_another_failure_fails() -> None:
    x, case, expected = nan_case(AxisDirection.DECREASING)
    actual_values, actual_indices = expected[0].copy(), expected[1].astype(np.int64)
    actual_values[0], actual_indices[0] = [3, 2], [2, 3]
    actual_indices[1] = [3, 3]  # row [5, 6, 7, 8]: 8 twice
    actual_values[1] = [8, 8]
    verdict = run_topk(x, case, expected, (actual_values, actual_indices))
    assert (verdict.status, verdict.failure_kind) == (Status.FAIL, "duplicate_indices")
    assert verdict.metrics["sequences_nan_placement"] == 1


def test_topk_nan_input_with_a_wrong_answer_fails() -> None:
    x, case, expected = nan_case(AxisDirection.DECREASING)
    actual_values, actual_indices = expected[0].copy(), expected[1].astype(np.int64)
    actual_values[0], actual_indices[0] = [3, 1], [2, 0]  # neither ordering selects 1
    verdict = run_topk(x, case, expected, (actual_values, actual_indices))
    assert (verdict.status, verdict.failure_kind) == (Status.FAIL, "wrong_elements")


def test_topk_large_tensor_counts_every_failing_sequence() -> None:
    rng_values = (np.arange(200 * 64) * 7919 % 5).astype(np.float32).reshape(200, 64)  # heavy ties
    order = np.argsort(-rng_values, axis=1, kind="stable")[:, :8]  # independent oracle: stable => lowest index
    values = np.take_along_axis(rng_values, order, axis=1)
    indices = order.astype(np.uint32)
    case = topk_case((200, 64), 1, 8, AxisDirection.DECREASING)
    assert run_topk(rng_values, case, (values, indices), (values, order)).status == Status.PASS
    swapped = order.copy()
    swapped[::3, [0, 1]] = swapped[::3, [1, 0]]  # the top two are tied (heavy ties): swap their indices
    verdict = run_topk(rng_values, case, (values, indices), (values, swapped))
    assert verdict.failure_kind == "tie_order"
    assert verdict.metrics["failing_sequences"] == len(range(0, 200, 3))
    assert verdict.message.count("\n    (") == 10  # table capped at the first 10 mismatching elements


# --- SLICE1 -----------------------------------------------------------------------------------------------------


def slice_case(n: int, data_type: DataType = DataType.FLOAT32) -> Case:
    spec = TensorSpec((n,), data_type, data=(0.0,) * n)
    desc = Slice1Desc(spec, (0,), (n,), (1,), None)
    return Case(
        "slice", "s.yaml", Operator.SLICE1, FeatureLevel(3, 1), desc, layouts=case_layouts(Operator.SLICE1, desc)
    )


def run_slice(expected: np.ndarray, actual: np.ndarray, data_type: DataType = DataType.FLOAT32) -> Verdict:
    verdict = compare(slice_case(expected.size, data_type), {}, {"OutputTensor": expected}, {"OutputTensor": actual})
    json.dumps(dict(verdict.metrics))
    return verdict


def test_slice_negative_zero_differs_from_zero() -> None:
    verdict = run_slice(np.array([1.0, -0.0], np.float32), np.array([1.0, 0.0], np.float32))
    assert (verdict.status, verdict.failure_kind) == (Status.FAIL, "values")
    assert "1 / 2" in verdict.message and "-0.0" in verdict.message


@pytest.mark.parametrize(
    ("dtype", "patterns"), [(np.uint32, [0x7FC00000, 0x7FC00001, 0xFFC00000]), (np.uint16, [0x7E00, 0x7C01, 0xFE00])]
)
def test_slice_nan_payloads_match(dtype: type[np.generic], patterns: list[int]) -> None:
    bits = np.array(patterns, dtype=dtype)
    floats = bits.view(np.float32 if dtype is np.uint32 else np.float16)
    assert np.isnan(floats).all()
    data_type = DataType.FLOAT32 if dtype is np.uint32 else DataType.FLOAT16
    assert run_slice(floats[[0, 0, 0]], floats, data_type).status == Status.PASS


def test_slice_exact_values_and_report() -> None:
    expected = np.array([3.0, 1.0, np.inf], np.float32)
    actual = expected.copy()
    actual[0] = np.nextafter(np.float32(3.0), np.float32(4.0))
    verdict = run_slice(expected, actual)
    assert verdict.metrics["max_ulp_error"] == 1 and verdict.metrics["mismatches"] == 1
    assert "3.0000002" in verdict.message
    ints = run_slice(np.array([1, 2, 3], np.uint8), np.array([1, 2, 250], np.uint8), DataType.UINT8)
    assert ints.failure_kind == "values" and ints.metrics["max_abs_error"] == 247.0
    assert run_slice(np.array([1, 2], np.int16), np.array([1, 2], np.int16), DataType.INT16).status == Status.PASS
    assert run_slice(np.zeros(3, np.float32), np.zeros(2, np.float32)).failure_kind == "shape"


# --- MEAN_VARIANCE_NORMALIZATION1 ------------------------------------------------------------------------------


def mvn_case(
    shape: tuple[int, ...], axes: tuple[int, ...], data_type: DataType, tolerance: Tolerance | None = None
) -> Case:
    spec = TensorSpec(shape, data_type, data=(0.0,) * math.prod(shape))
    desc = Mvn1Desc(spec, None, None, axes, True, 1e-5, None)
    operator = Operator.MEAN_VARIANCE_NORMALIZATION1
    return Case(
        "mvn", "m.yaml", operator, FeatureLevel(3, 1), desc, tolerance=tolerance, layouts=case_layouts(operator, desc)
    )


def run_mvn(case: Case, expected: list[float], actual: list[float], scale: np.ndarray | None = None) -> Verdict:
    dtype = np.float16 if case.descriptor.input.data_type == DataType.FLOAT16 else np.float32
    inputs = {"InputTensor": np.zeros(case.descriptor.input.sizes, dtype)}
    if scale is not None:
        inputs["ScaleTensor"] = scale
    want, got = np.array(expected, dtype), np.array(actual, dtype)
    verdict = compare(case, inputs, {"OutputTensor": want}, {"OutputTensor": got})
    json.dumps(dict(verdict.metrics))
    return verdict


def test_default_tolerances() -> None:
    assert default_tolerance(DataType.FLOAT16, 1000, 0.5) == Tolerance(max_ulp=2, atol=2**-10)
    assert default_tolerance(DataType.FLOAT16, 4, -8.0) == Tolerance(max_ulp=2, atol=8 * 2**-10)
    assert default_tolerance(DataType.FLOAT32, 16, 1.0) == Tolerance(max_ulp=16, atol=4 * 2**-20)
    assert default_tolerance(DataType.FLOAT32, 64, 3.0) == Tolerance(max_ulp=16, atol=3 * 8 * 2**-20)


F32_ULP_AT_1000 = 2.0**-14  # 1000 lies in [512, 1024): ULP = 2**(9 - 23)


@pytest.mark.parametrize(("ulps", "status"), [(16, Status.PASS), (17, Status.FAIL)])
def test_mvn_float32_ulp_boundary(ulps: int, status: Status) -> None:
    case = mvn_case((1, 1, 2, 2), (2, 3), DataType.FLOAT32)  # N = 4: atol 2**-19, far below 16 ULP at 1000
    verdict = run_mvn(case, [1000.0], [1000.0 + ulps * F32_ULP_AT_1000])
    assert verdict.status == status
    assert verdict.metrics["max_ulp_error"] == ulps and verdict.metrics["reduction_size"] == 4


@pytest.mark.parametrize(("above", "status"), [(False, Status.PASS), (True, Status.FAIL)])
def test_mvn_float32_atol_boundary_near_zero(above: bool, status: Status) -> None:
    case = mvn_case((1, 1, 2, 2), (2, 3), DataType.FLOAT32)
    atol = np.float32(2.0**-20 * 2)
    actual = float(np.nextafter(atol, np.float32(1))) if above else float(atol)
    verdict = run_mvn(case, [0.0], [actual])
    assert verdict.status == status
    if above:
        assert verdict.failure_kind == "tolerance" and "first 1 mismatches" in verdict.message


def test_mvn_reduction_size_and_scale_set_atol() -> None:
    case = mvn_case((2, 3, 4, 4), (2, 3), DataType.FLOAT32)  # N = 16
    scale = np.array([[[[0.5]], [[-4.0]], [[2.0]]]], np.float32)
    verdict = run_mvn(case, [0.0], [4 * 4 * 2**-20], scale)
    assert verdict.status == Status.PASS and verdict.metrics["atol"] == 16 * 2**-20
    assert run_mvn(case, [0.0], [4 * 4 * 2**-20 * 1.01], scale).status == Status.FAIL


def test_mvn_per_case_override() -> None:
    one_ulp = [1.0], [float(np.nextafter(np.float32(1), np.float32(2)))]
    assert run_mvn(mvn_case((4,), (0,), DataType.FLOAT32), *one_ulp).status == Status.PASS
    exact = mvn_case((4,), (0,), DataType.FLOAT32, Tolerance(max_ulp=0, atol=0.0))
    assert run_mvn(exact, *one_ulp).status == Status.FAIL
    loose_atol = mvn_case((4,), (0,), DataType.FLOAT32, Tolerance(atol=0.01))
    verdict = run_mvn(loose_atol, [1.0], [1.009])
    assert verdict.status == Status.PASS and verdict.metrics["max_ulp"] == 16  # the other field keeps its default
    only_ulp = mvn_case((4,), (0,), DataType.FLOAT32, Tolerance(max_ulp=0))
    assert run_mvn(only_ulp, [0.0], [2.0**-21]).status == Status.PASS  # default atol 2**-19 still applies


def test_float16_ulp_distance_across_zero() -> None:
    tiny = np.float16(2.0**-24)
    assert int(ulp_distance(np.array([tiny]), np.array([-tiny]))[0]) == 2
    assert int(ulp_distance(np.array([np.float16(0.0)]), np.array([np.float16(-0.0)]))[0]) == 0
    assert int(ulp_distance(np.array([np.float16(1.0)]), np.array([np.float16(-1.0)]))[0]) == 2 * 0x3C00
    no_atol = Tolerance(atol=0.0)
    assert run_mvn(mvn_case((4,), (0,), DataType.FLOAT16, no_atol), [2.0**-24], [-(2.0**-24)]).status == Status.PASS
    tight = Tolerance(max_ulp=1, atol=0.0)
    assert run_mvn(mvn_case((4,), (0,), DataType.FLOAT16, tight), [2.0**-24], [-(2.0**-24)]).status == Status.FAIL


def test_mvn_float16_ulp_boundary() -> None:
    case = mvn_case((4,), (0,), DataType.FLOAT16)
    assert run_mvn(case, [4.0], [4.0 + 2 * 2**-8]).status == Status.PASS  # ULP at 4 is 2**-8 > atol 2**-10
    failed = run_mvn(case, [4.0], [4.0 + 3 * 2**-8])
    assert failed.status == Status.FAIL and failed.metrics["max_ulp_error"] == 3
    assert "4.01171875" in failed.message  # float16 printed exactly


@pytest.mark.parametrize(
    ("expected", "actual", "status"),
    [
        ([math.inf], [math.inf], Status.PASS),
        ([math.inf], [65504.0], Status.FAIL),
        ([-math.inf], [math.inf], Status.FAIL),
        ([65504.0], [math.inf], Status.FAIL),
        ([math.nan], [math.nan], Status.PASS),
        ([math.nan], [0.0], Status.FAIL),
        ([0.0], [math.nan], Status.FAIL),
    ],
)
def test_mvn_non_finite(expected: list[float], actual: list[float], status: Status) -> None:
    verdict = run_mvn(mvn_case((4,), (0,), DataType.FLOAT16), expected, actual)
    assert verdict.status == status
    if status == Status.FAIL:
        assert verdict.failure_kind == "non_finite" and verdict.metrics["non_finite_mismatches"] == 1


def test_format_value() -> None:
    assert format_value(np.float16(1.0009765625)) == "1.0009765625"
    assert format_value(np.float16(65504)) == "65504.0"
    assert format_value(np.float32(0.1)) == "0.1"
    assert format_value(np.float32(-0.0)) == "-0.0"
    assert format_value(np.float32(1e-30)) == "1.0e-30"
    assert format_value(np.uint32(4294967295)) == "4294967295"


def test_topk_a_long_tie_lists_its_first_indices_and_how_many_more() -> None:
    # 20 equal values, K 3, DECREASING: the oracle takes indices 0, 1, 2 (spec Example 3's rule); an EP that takes
    # 0, 1, 19 breaks the tie at the K boundary. The tie is 20 long: the first 16 indices, then 4 more.
    x = np.full((1, 20), 7.0, np.float32)
    case = topk_case((1, 20), 1, 3, AxisDirection.DECREASING)
    values = np.full((1, 3), 7.0, np.float32)
    verdict = run_topk(x, case, (values, np.array([[0, 1, 2]], np.uint32)), (values, np.array([[0, 1, 19]], np.int64)))
    shown = ", ".join(str(i) for i in range(16))
    assert f"value 7.0 is tied at input indices [{shown}, ... (4 more)]: expected [0, 1, 2], actual [0, 1, 19]" in (
        verdict.message
    )
    assert "'...'" not in verdict.message


def test_an_operator_the_table_lacks_is_refused_not_judged_by_another_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without SLICE1's entry, a SLICE1 case must not be judged by any other operator's rule (once, every operator
    # outputs.py did not name fell through to the bit-for-bit rule): the lookup names the table that lacks it.
    without_slice = OperatorTable("scratch/compare.py", [OPERATORS[op] for op in Operator if op != Operator.SLICE1])
    monkeypatch.setattr(outputs, "OPERATORS", without_slice)
    with pytest.raises(MissingOperator, match=r"scratch/compare\.py has no entry for operator SLICE1"):
        run_slice(np.array([1.0], np.float32), np.array([1.0], np.float32))
