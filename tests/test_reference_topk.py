"""reference.top_k1 against the spec's examples, onnx.reference TopK-11 (no ties), a brute-force sort (ties) and
NumPy's stable sorts (large, multi-block inputs)."""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from reference.top_k1 import top_k1

SPEC_INPUT_A = np.array([[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]], dtype=np.float32)
SPEC_INPUT_B = np.array([[[[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]]]], dtype=np.float32)

# (input, Axis, K, AxisDirection, OutputValueTensor, OutputIndexTensor), copied from the spec's Examples 1-4.
SPEC_EXAMPLES = {
    "example1": (
        SPEC_INPUT_A, 3, 2, "DECREASING",
        [[[[11, 10], [9, 8], [7, 6]]]],
        [[[[3, 2], [2, 3], [3, 2]]]],
    ),
    "example2_axis2": (
        SPEC_INPUT_A, 2, 2, "DECREASING",
        [[[[4, 5, 10, 11], [3, 2, 9, 8]]]],
        [[[[2, 2, 0, 0], [1, 1, 1, 1]]]],
    ),
    "example3_ties": (
        SPEC_INPUT_B, 3, 3, "DECREASING",
        [[[[3, 2, 2], [5, 5, 4], [6, 6, 6]]]],
        [[[[3, 1, 2], [2, 3, 1], [0, 1, 2]]]],
    ),
    "example4_increasing": (
        SPEC_INPUT_B, 3, 3, "INCREASING",
        [[[[1, 2, 2], [3, 4, 5], [6, 6, 6]]]],
        [[[[0, 1, 2], [0, 1, 2], [0, 1, 2]]]],
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", SPEC_EXAMPLES)
def test_spec_examples(name: str) -> None:
    x, axis, k, direction, want_values, want_indices = SPEC_EXAMPLES[name]
    values, indices = top_k1(x, axis, k, direction)
    assert values.dtype == np.float32
    assert indices.dtype == np.uint32
    np.testing.assert_array_equal(values, np.array(want_values, dtype=np.float32))
    np.testing.assert_array_equal(indices, np.array(want_indices, dtype=np.uint32))


def _onnx_topk(x: NDArray[Any], axis: int, k: int, largest: bool) -> tuple[NDArray[Any], NDArray[Any]]:
    node = helper.make_node("TopK", ["X", "K"], ["V", "I"], axis=axis, largest=int(largest), sorted=1)
    graph = helper.make_graph(
        [node],
        "topk",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape)),
            helper.make_tensor_value_info("K", TensorProto.INT64, [1]),
        ],
        [
            helper.make_tensor_value_info("V", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("I", TensorProto.INT64, None),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 9
    outputs: Any = ReferenceEvaluator(model).run(None, {"X": x, "K": np.array([k], dtype=np.int64)})
    return outputs[0], outputs[1]


@pytest.mark.parametrize("seed", range(12))
def test_matches_onnx_reference_without_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rank = 1 + seed % 5
    shape = tuple(int(s) for s in rng.integers(1, 7, size=rank))
    axis = int(rng.integers(rank))
    shape = (*shape[:axis], int(rng.integers(2, 40)), *shape[axis + 1 :])
    # Distinct values: a shuffled, spread-out range (no ties anywhere in the tensor).
    x = (rng.permutation(math.prod(shape)).astype(np.float32) * 0.37 - 50).reshape(shape)
    for k in sorted({1, 2, shape[axis] // 2 or 1, shape[axis]}):
        for direction, largest in (("DECREASING", True), ("INCREASING", False)):
            values, indices = top_k1(x, axis, k, direction)
            want_values, want_indices = _onnx_topk(x, axis, k, largest)
            np.testing.assert_array_equal(values, want_values)
            np.testing.assert_array_equal(indices.astype(np.int64), want_indices)


def _brute_force(x: NDArray[Any], axis: int, k: int, direction: str) -> tuple[NDArray[Any], NDArray[Any]]:
    """Per sequence: Python's sorted() by (value, index), value negated for DECREASING; NaN above everything."""
    moved = np.moveaxis(x, axis, -1)
    out_values = np.empty((*moved.shape[:-1], k), dtype=x.dtype)
    out_indices = np.empty((*moved.shape[:-1], k), dtype=np.uint32)
    sign = -1 if direction == "DECREASING" else 1
    for where in np.ndindex(*moved.shape[:-1]):
        sequence = moved[where]
        numbers = [sequence[i].item() for i in range(sequence.size)]

        def key(i: int, numbers: list[Any] = numbers) -> tuple[int, Any, int]:
            v = numbers[i]
            is_nan = isinstance(v, float) and math.isnan(v)
            return (sign * int(is_nan), 0 if is_nan else sign * v, i)

        chosen = sorted(range(len(numbers)), key=key)[:k]
        out_indices[where] = chosen
        out_values[where] = sequence[chosen]
    return np.moveaxis(out_values, -1, axis), np.moveaxis(out_indices, -1, axis)


TIE_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "float16", "float32"]


@pytest.mark.parametrize("dtype", TIE_DTYPES)
@pytest.mark.parametrize("direction", ["DECREASING", "INCREASING"])
def test_ties_match_brute_force(dtype: str, direction: str) -> None:
    rng = np.random.default_rng(sum(map(ord, dtype + direction)))
    x = rng.integers(0, 4, size=(3, 5, 60)).astype(dtype)  # few distinct values: ties straddle every K boundary
    for axis in range(3):
        n = x.shape[axis]
        for k in sorted({1, 2, max(1, n // 5), n - 1, n}):  # small K: partition path; large K: sort path
            values, indices = top_k1(x, axis, k, direction)
            want_values, want_indices = _brute_force(x, axis, k, direction)
            assert values.dtype == x.dtype and indices.dtype == np.uint32
            np.testing.assert_array_equal(values, want_values)
            np.testing.assert_array_equal(indices, want_indices)


def test_long_axis_small_k_matches_brute_force() -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(-3, 3, size=(4, 2000)).astype(np.float32)
    for k in (1, 5, 37):
        for direction in ("DECREASING", "INCREASING"):
            values, indices = top_k1(x, 1, k, direction)
            want_values, want_indices = _brute_force(x, 1, k, direction)
            np.testing.assert_array_equal(indices, want_indices)
            np.testing.assert_array_equal(values, want_values)


def _stable_top_k(x: NDArray[Any], axis: int, k: int, direction: str) -> tuple[NDArray[Any], NDArray[Any]]:
    """The expected result from NumPy's stable sorts, independently of reference.top_k1: INCREASING is a stable
    argsort (NaNs last, -0.0 == +0.0, ties in index order); DECREASING a stable lexsort on (is a number, -value)."""
    moved = np.moveaxis(x, axis, -1)
    wide = moved.astype(np.float64)  # every supported dtype (uint32 included) is exact in float64
    if direction == "INCREASING":
        order = np.argsort(wide, axis=-1, kind="stable")
    else:
        nan = np.isnan(wide)
        order = np.lexsort((np.where(nan, 0.0, -wide), ~nan), axis=-1)  # last key first: NaNs, then descending
    chosen = order[..., :k]
    return np.moveaxis(np.take_along_axis(moved, chosen, axis=-1), -1, axis), np.moveaxis(chosen, -1, axis)


def _tie_heavy(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> NDArray[Any]:
    """Few distinct values (ties straddle any K); floats also get NaNs of both signs and payloads, and +-0.0."""
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.choice(np.array([info.min, 0, 1, 2, info.max], dtype=dtype), size=shape)
    pool = np.array([-np.inf, -2.5, -0.0, 0.0, 1.0, 7.0, np.inf, np.nan, -np.nan], dtype=dtype)
    x = rng.choice(pool, size=shape, p=[0.05, 0.15, 0.15, 0.15, 0.15, 0.15, 0.05, 0.1, 0.05])
    if dtype == "float32":
        nan = np.isnan(x)
        x.view(np.uint32)[nan] |= rng.integers(1, 0x3FFFFF, size=int(nan.sum()), dtype=np.uint32)  # payloads
    return x


def _assert_same(got: tuple[NDArray[Any], NDArray[Any]], want: tuple[NDArray[Any], NDArray[Any]]) -> None:
    assert got[0].dtype == want[0].dtype and got[1].dtype == np.uint32
    np.testing.assert_array_equal(got[1], want[1])
    assert got[0].tobytes() == want[0].tobytes()  # bit-exact: the sign of -0.0 and NaN payloads included


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8", "uint32", "int32"])
@pytest.mark.parametrize("direction", ["DECREASING", "INCREASING"])
def test_multi_block_ties_match_stable_sort(dtype: str, direction: str) -> None:
    rng = np.random.default_rng(sum(map(ord, dtype + direction)))
    x = _tie_heavy(rng, (301, 2000), dtype)  # 602,000 elements: several blocks of rows, on threads
    for k in (1, 37, 500, 900):  # up to n / 4 the partition path, above it the sort path
        _assert_same(top_k1(x, 1, k, direction), _stable_top_k(x, 1, k, direction))


@pytest.mark.parametrize("direction", ["DECREASING", "INCREASING"])
def test_blocks_split_the_inner_dimensions(direction: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tiny blocks: two sequences each, so blocks cut across the dimensions after the axis (and the last is short).
    monkeypatch.setattr(sys.modules["reference.top_k1"], "_BLOCK", 80)
    rng = np.random.default_rng(3)
    x = _tie_heavy(rng, (5, 40, 9), "float32")
    for k in (1, 3, 10, 30):
        _assert_same(top_k1(x, 1, k, direction), _stable_top_k(x, 1, k, direction))
    strided = np.swapaxes(_tie_heavy(rng, (40, 6, 7), "float16"), 0, 2)  # a non-contiguous input
    for k in (2, 9):
        _assert_same(top_k1(strided, 2, k, direction), _stable_top_k(strided, 2, k, direction))


def _bits(a: NDArray[Any]) -> list[int]:
    return a.view(np.uint32).tolist()  # type: ignore[no-any-return]


def test_nan_is_larger_than_everything_and_payloads_survive() -> None:
    nan_a = np.array([0x7FC00001], dtype=np.uint32).view(np.float32)[0]
    nan_b = np.array([0xFFC00002], dtype=np.uint32).view(np.float32)[0]  # a negative NaN is still "largest"
    x = np.array([1.0, nan_a, 3.0, nan_b, -np.inf, np.inf], dtype=np.float32)
    values, indices = top_k1(x, 0, 3, "DECREASING")
    assert indices.tolist() == [1, 3, 5]
    assert _bits(values) == [0x7FC00001, 0xFFC00002, _bits(np.array([np.inf], np.float32))[0]]
    values, indices = top_k1(x, 0, 6, "INCREASING")
    assert indices.tolist() == [4, 0, 2, 5, 1, 3]
    assert _bits(values[-2:]) == [0x7FC00001, 0xFFC00002]


def test_float16_nan_and_zeros() -> None:
    x = np.array([np.nan, -0.0, 0.0, -1.0, np.nan], dtype=np.float16)
    values, indices = top_k1(x, 0, 4, "DECREASING")
    assert indices.tolist() == [0, 4, 1, 2]
    assert np.signbit(values[2]) and not np.signbit(values[3])


def test_signed_zeros_tie_and_keep_their_sign() -> None:
    x = np.array([0.0, -0.0, 0.0, -0.0], dtype=np.float32)
    values, indices = top_k1(x, 0, 3, "DECREASING")
    assert indices.tolist() == [0, 1, 2]
    assert np.signbit(values).tolist() == [False, True, False]
    values, indices = top_k1(np.array([-0.0, 0.0, -1.0, 1.0], dtype=np.float32), 0, 3, "INCREASING")
    assert indices.tolist() == [2, 0, 1]
    assert np.signbit(values).tolist() == [True, True, False]


def test_integer_extremes_are_exact() -> None:
    u32_max = 2**32 - 1
    # Adjacent uint32 values near the top collide in float32: the order must still be exact.
    x = np.array([u32_max - 1, 0, u32_max, 2**31, u32_max - 2], dtype=np.uint32)
    values, indices = top_k1(x, 0, 3, "DECREASING")
    assert values.tolist() == [u32_max, u32_max - 1, u32_max - 2] and indices.tolist() == [2, 0, 4]
    i32 = np.array([2**31 - 2, -(2**31), 2**31 - 1, -(2**31) + 1], dtype=np.int32)
    values, indices = top_k1(i32, 0, 2, "INCREASING")
    assert values.tolist() == [-(2**31), -(2**31) + 1] and indices.tolist() == [1, 3]
    values, indices = top_k1(i32, 0, 1, "DECREASING")
    assert values.tolist() == [2**31 - 1] and indices.tolist() == [2]
    i8 = np.array([0, -128, 127, -128, -127], dtype=np.int8)
    values, indices = top_k1(i8, 0, 3, "INCREASING")
    assert values.dtype == np.int8 and values.tolist() == [-128, -128, -127] and indices.tolist() == [1, 3, 4]


def test_k_equal_to_axis_size_sorts_the_whole_axis() -> None:
    x = np.array([[5, 1, 5, 3]], dtype=np.uint16)
    values, indices = top_k1(x, 1, 4, "DECREASING")
    assert values.tolist() == [[5, 5, 3, 1]] and indices.tolist() == [[0, 2, 3, 1]]


def test_rank1_and_rank8() -> None:
    values, indices = top_k1(np.array([2, 9, 4], dtype=np.int32), 0, 2)
    assert values.tolist() == [9, 4] and indices.tolist() == [1, 2]
    rng = np.random.default_rng(8)
    x = rng.integers(0, 3, size=(2, 1, 3, 1, 2, 4, 1, 3)).astype(np.float32)
    for axis in range(8):
        k = max(1, x.shape[axis] - 1)
        values, indices = top_k1(x, axis, k, "INCREASING")
        want_values, want_indices = _brute_force(x, axis, k, "INCREASING")
        assert values.shape == want_values.shape
        np.testing.assert_array_equal(values, want_values)
        np.testing.assert_array_equal(indices, want_indices)


def test_accepts_prefixed_direction() -> None:
    _, indices = top_k1(np.array([1, 3, 2], dtype=np.uint8), 0, 1, "DML_AXIS_DIRECTION_INCREASING")
    assert indices.tolist() == [0]


@pytest.mark.parametrize(
    ("shape", "axis", "k", "direction", "match"),
    [
        ((2, 3), 2, 1, "DECREASING", "Axis"),
        ((2, 3), -1, 1, "DECREASING", "Axis"),
        ((2, 3), 1, 0, "DECREASING", "K 0"),
        ((2, 3), 1, 4, "DECREASING", "K 4"),
        ((2, 3), 1, 1, "SIDEWAYS", "AxisDirection"),
    ],
)
def test_invalid_arguments(shape: tuple[int, ...], axis: int, k: int, direction: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        top_k1(np.zeros(shape, dtype=np.float32), axis, k, direction)


def test_unsupported_dtype() -> None:
    with pytest.raises(ValueError, match="dtype"):
        top_k1(np.zeros(3, dtype=np.int64), 0, 1)
