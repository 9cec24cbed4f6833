"""reference.slice1 against the spec's examples, onnx.reference Slice-13 and a per-element loop of the pseudo-code."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from reference.slice1 import slice1

SPEC_INPUT = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)


def test_spec_example1_positive_strides() -> None:
    out = slice1(SPEC_INPUT, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, 2, 2])
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.array([[[[2, 4], [10, 12]]]], dtype=np.float32))


def test_spec_example2_negative_strides() -> None:
    out = slice1(SPEC_INPUT, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2])
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.array([[[[14, 16], [6, 8]]]], dtype=np.float32))


def test_spec_examples_with_explicit_output_sizes() -> None:
    out = slice1(SPEC_INPUT, [0, 0, 0, 1], [1, 1, 4, 3], [1, 1, -2, 2], output_sizes=[1, 1, 2, 2])
    np.testing.assert_array_equal(out, np.array([[[[14, 16], [6, 8]]]], dtype=np.float32))


def _pseudo_code(
    x: NDArray[Any], offsets: list[int], sizes: list[int], strides: list[int], out_shape: list[int]
) -> Any:
    """The spec's pseudo-code, one output element at a time."""
    copy_start = list(offsets)
    for i in range(x.ndim):
        if strides[i] < 0:
            copy_start[i] += sizes[i] - 1
    out = np.empty(out_shape, dtype=x.dtype)
    for coordinates in np.ndindex(*out_shape):
        out[coordinates] = x[tuple(s + d * c for s, d, c in zip(copy_start, strides, coordinates, strict=True))]
    return out


def _onnx_slice(x: NDArray[Any], offsets: list[int], sizes: list[int], strides: list[int], counts: list[int]) -> Any:
    """Slice-13 with starts/ends/steps derived from the descriptor (end is exclusive)."""
    starts, ends = [], []
    for offset, size, stride, count in zip(offsets, sizes, strides, counts, strict=True):
        start = offset + size - 1 if stride < 0 else offset
        end = start + stride * count
        starts.append(start)
        ends.append(end if end >= 0 else -(2**62))  # a negative end would count from the back
    node = helper.make_node("Slice", ["X", "starts", "ends", "axes", "steps"], ["Y"])
    names = ("starts", "ends", "axes", "steps")
    graph = helper.make_graph(
        [node],
        "slice",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))]
        + [helper.make_tensor_value_info(name, TensorProto.INT64, [x.ndim]) for name in names],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 9
    feeds = {
        "X": x,
        "starts": np.array(starts, np.int64),
        "ends": np.array(ends, np.int64),
        "axes": np.arange(x.ndim, dtype=np.int64),
        "steps": np.array(strides, np.int64),
    }
    outputs: Any = ReferenceEvaluator(model).run(None, feeds)
    return outputs[0]


def _random_descriptor(
    rng: np.random.Generator, shape: tuple[int, ...]
) -> tuple[list[int], list[int], list[int], list[int]]:
    offsets, sizes, strides, counts = [], [], [], []
    for extent in shape:
        offset = int(rng.integers(0, extent))
        size = int(rng.integers(1, extent - offset + 1))
        stride = int(rng.integers(1, 4)) * (1 if rng.random() < 0.5 else -1)
        maximum = 1 + (size - 1) // abs(stride)  # independent of the code under test
        offsets.append(offset)
        sizes.append(size)
        strides.append(stride)
        counts.append(int(rng.integers(1, maximum + 1)))
    return offsets, sizes, strides, counts


@pytest.mark.parametrize("seed", range(30))
def test_random_windows_match_onnx_and_pseudo_code(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rank = 1 + seed % 6
    shape = tuple(int(s) for s in rng.integers(1, 7, size=rank))
    x = rng.standard_normal(shape).astype(np.float32)
    offsets, sizes, strides, counts = _random_descriptor(rng, shape)
    out = slice1(x, offsets, sizes, strides, counts)
    np.testing.assert_array_equal(out, _pseudo_code(x, offsets, sizes, strides, counts))
    np.testing.assert_array_equal(out, _onnx_slice(x, offsets, sizes, strides, counts))
    maxima = [1 + (size - 1) // abs(stride) for size, stride in zip(sizes, strides, strict=True)]
    full = slice1(x, offsets, sizes, strides)  # output_sizes None: MaxCopiedElements everywhere
    assert list(full.shape) == maxima
    np.testing.assert_array_equal(full, _pseudo_code(x, offsets, sizes, strides, maxima))


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "float16"])
def test_integer_and_half_dtypes(dtype: str) -> None:
    rng = np.random.default_rng(3)
    info = np.iinfo(dtype) if dtype != "float16" else np.finfo(dtype)
    x = rng.integers(int(info.min), int(info.max), size=(5, 6), endpoint=True).astype(dtype)
    out = slice1(x, [1, 0], [4, 6], [-3, 2])
    assert out.dtype == x.dtype and out.flags.c_contiguous
    np.testing.assert_array_equal(out, _pseudo_code(x, [1, 0], [4, 6], [-3, 2], [2, 3]))


def test_copies_are_bit_exact() -> None:
    bits = np.array([0x80000000, 0x7FC00001, 0xFFC00002, 0x00000001, 0x3F800000], dtype=np.uint32)
    x = bits.view(np.float32)
    out = slice1(x, [0], [5], [-1])
    assert out.view(np.uint32).tolist() == bits[::-1].tolist()
    assert not np.shares_memory(out, x)


def test_max_copied_elements_uses_the_stride_magnitude() -> None:
    x = np.arange(10, dtype=np.int32)
    assert slice1(x, [2], [7], [-3]).tolist() == [8, 5, 2]
    assert slice1(x, [2], [7], [3]).tolist() == [2, 5, 8]
    assert slice1(x, [0], [10], [-4], output_sizes=[2]).tolist() == [9, 5]
    assert slice1(x, [0], [1], [-5]).tolist() == [0]


@pytest.mark.parametrize(
    ("offsets", "sizes", "strides", "output_sizes", "match"),
    [
        ([0, 3], [2, 2], [1, 1], None, "outside the input"),
        ([0, 0], [2, 0], [1, 1], None, "empty window"),
        ([0, -1], [2, 2], [1, 1], None, "outside the input"),
        ([0, 0], [2, 2], [1, 0], None, "is 0"),
        ([0, 0], [2, 4], [1, 2], [2, 3], "MaxCopiedElements"),
        ([0, 0], [2, 4], [1, -2], [2, 0], "MaxCopiedElements"),
        ([0], [2], [1], None, "dimension"),
        ([0, 0], [2, 2], [1, 1], [1], "dimension"),
    ],
)
def test_invalid_windows(
    offsets: list[int], sizes: list[int], strides: list[int], output_sizes: list[int] | None, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        slice1(np.zeros((2, 4), dtype=np.float32), offsets, sizes, strides, output_sizes)
