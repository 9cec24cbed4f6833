"""The oracle stage against the spec pages' own worked examples (inputs and outputs copied from the pages)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from conformance.cases.layouts import case_layouts
from conformance.cases.oracle import expected_outputs
from conformance.compare.golden import golden_differences
from conformance.model import (
    INPUT_TENSOR,
    OUTPUT_INDEX_TENSOR,
    OUTPUT_TENSOR,
    OUTPUT_VALUE_TENSOR,
    AxisDirection,
    Case,
    DataType,
    FeatureLevel,
    Operator,
    Slice1Desc,
    TensorSpec,
    TopK1Desc,
)

Nested = Sequence[object]

# DML_TOP_K1_OPERATOR_DESC, "Examples": examples 1-2 share one input, 3-4 another.
TOPK_INPUT_A = [[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]]
TOPK_INPUT_B = [[[[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]]]]
TOPK_EXAMPLES = {
    # name: (input, Axis, K, AxisDirection, OutputValueTensor, OutputIndexTensor)
    "example-1": (TOPK_INPUT_A, 3, 2, "DECREASING", [[[[11, 10], [9, 8], [7, 6]]]], [[[[3, 2], [2, 3], [3, 2]]]]),
    "example-2-different-axis": (
        TOPK_INPUT_A,
        2,
        2,
        "DECREASING",
        [[[[4, 5, 10, 11], [3, 2, 9, 8]]]],
        [[[[2, 2, 0, 0], [1, 1, 1, 1]]]],
    ),
    "example-3-tied-values": (
        TOPK_INPUT_B,
        3,
        3,
        "DECREASING",
        [[[[3, 2, 2], [5, 5, 4], [6, 6, 6]]]],
        [[[[3, 1, 2], [2, 3, 1], [0, 1, 2]]]],
    ),
    "example-4-increasing": (
        TOPK_INPUT_B,
        3,
        3,
        "INCREASING",
        [[[[1, 2, 2], [3, 4, 5], [6, 6, 6]]]],
        [[[[0, 1, 2], [0, 1, 2], [0, 1, 2]]]],
    ),
}
# DML_SLICE1_OPERATOR_DESC, "Examples": one input, two windows.
SLICE_INPUT = [[[[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], [13, 14, 15, 16]]]]
SLICE_EXAMPLES = {
    # name: (InputWindowOffsets, InputWindowSizes, InputWindowStrides, OutputTensor)
    "example-1-positive-strides": ((0, 0, 0, 1), (1, 1, 4, 3), (1, 1, 2, 2), [[[[2, 4], [10, 12]]]]),
    "example-2-negative-strides": ((0, 0, 0, 1), (1, 1, 4, 3), (1, 1, -2, 2), [[[[14, 16], [6, 8]]]]),
}


def _flat(values: Nested) -> tuple[float, ...]:
    return tuple(float(v) for v in np.asarray(values).ravel())


def _tensor(values: Nested, data_type: DataType = DataType.FLOAT32) -> TensorSpec:
    array = np.asarray(values)
    return TensorSpec(sizes=tuple(array.shape), data_type=data_type, data=_flat(values), data_shape=array.shape)


def _inputs(values: Nested, dtype: type[np.generic] = np.float32) -> dict[str, np.ndarray]:
    return {INPUT_TENSOR: np.asarray(values, dtype=dtype)}


def _topk_case(name: str, expected: dict[str, tuple[float, ...]] | None = None) -> Case:
    data, axis, k, direction, _, _ = TOPK_EXAMPLES[name]
    desc = TopK1Desc(_tensor(data), axis, k, AxisDirection(direction))
    return Case(
        id=f"spec::{name}",
        path="spec",
        operator=Operator.TOP_K1,
        feature_level=FeatureLevel(2, 1),
        descriptor=desc,
        expected=expected or {},
        layouts=case_layouts(Operator.TOP_K1, desc),
    )


def _slice_case(name: str, expected: dict[str, tuple[float, ...]] | None = None) -> Case:
    offsets, sizes, strides, _ = SLICE_EXAMPLES[name]
    desc = Slice1Desc(_tensor(SLICE_INPUT), offsets, sizes, strides, None)
    return Case(
        id=f"spec::{name}",
        path="spec",
        operator=Operator.SLICE1,
        feature_level=FeatureLevel(2, 1),
        descriptor=desc,
        expected=expected or {},
        layouts=case_layouts(Operator.SLICE1, desc),
    )


@pytest.mark.parametrize("name", TOPK_EXAMPLES)
def test_topk_examples_match_the_page(name: str) -> None:
    data, _, _, _, values, indices = TOPK_EXAMPLES[name]
    out = expected_outputs(_topk_case(name), _inputs(data))
    assert set(out) == {OUTPUT_VALUE_TENSOR, OUTPUT_INDEX_TENSOR}
    assert out[OUTPUT_VALUE_TENSOR].dtype == np.float32
    np.testing.assert_array_equal(out[OUTPUT_VALUE_TENSOR], np.asarray(values, np.float32))
    # The page types OutputIndexTensor as UINT32.
    assert out[OUTPUT_INDEX_TENSOR].dtype == np.uint32
    np.testing.assert_array_equal(out[OUTPUT_INDEX_TENSOR], np.asarray(indices, np.uint32))


@pytest.mark.parametrize("name", SLICE_EXAMPLES)
def test_slice_examples_match_the_page(name: str) -> None:
    *_, output = SLICE_EXAMPLES[name]
    out = expected_outputs(_slice_case(name), _inputs(SLICE_INPUT))
    assert set(out) == {OUTPUT_TENSOR}
    assert out[OUTPUT_TENSOR].dtype == np.float32
    np.testing.assert_array_equal(out[OUTPUT_TENSOR], np.asarray(output, np.float32))


@pytest.mark.parametrize("name", TOPK_EXAMPLES)
def test_page_goldens_agree_with_the_oracle_topk(name: str) -> None:
    data, *_, values, indices = TOPK_EXAMPLES[name]
    case = _topk_case(name, {OUTPUT_VALUE_TENSOR: _flat(values), OUTPUT_INDEX_TENSOR: _flat(indices)})
    inputs = _inputs(data)
    assert golden_differences(case, inputs, expected_outputs(case, inputs)) == {}


@pytest.mark.parametrize("name", SLICE_EXAMPLES)
def test_page_goldens_agree_with_the_oracle_slice(name: str) -> None:
    *_, output = SLICE_EXAMPLES[name]
    case = _slice_case(name, {OUTPUT_TENSOR: _flat(output)})
    inputs = _inputs(SLICE_INPUT)
    assert golden_differences(case, inputs, expected_outputs(case, inputs)) == {}


def test_wrong_index_golden_is_named_with_its_first_difference() -> None:
    data, _, _, _, values, _ = TOPK_EXAMPLES["example-3-tied-values"]
    # Tie order swapped in the first row: [3, 2, 1] instead of the page's [3, 1, 2].
    wrong = [[[[3, 2, 1], [2, 3, 1], [0, 1, 2]]]]
    case = _topk_case("example-3-tied-values", {OUTPUT_VALUE_TENSOR: _flat(values), OUTPUT_INDEX_TENSOR: _flat(wrong)})
    inputs = _inputs(data)
    assert golden_differences(case, inputs, expected_outputs(case, inputs)) == {
        OUTPUT_INDEX_TENSOR: "spec:1:1: expected.OutputIndexTensor[0, 0, 0, 1] = 2, the oracle gives 1\n"
        "  2 of 9 elements differ (uint32, compared exactly): the case file or the harness is wrong"
    }


def test_wrong_value_golden_slice() -> None:
    case = _slice_case("example-2-negative-strides", {OUTPUT_TENSOR: (14.0, 16.0, 6.0, 7.0)})
    inputs = _inputs(SLICE_INPUT)
    (line,) = golden_differences(case, inputs, expected_outputs(case, inputs)).values()
    assert line.startswith("spec:1:1: expected.OutputTensor[0, 0, 1, 1] = 7.0 (0x40e00000), the oracle gives 8.0 (0x41")
