"""SLICE1 as ONNX: ``Slice-13`` with constant starts/ends/axes/steps over every axis (``slice_bounds``), the same for
every EP."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from conformance.ep.graph import Array, CannotLower, GraphBuilder, LoweredGraph, input_tensor, onnx_type
from conformance.model import OUTPUT_TENSOR, Descriptor, Slice1Desc

INT64_MIN = -(2**63)  # a Slice end meaning "past index 0" for a negative step: ONNX clamps it to -1


def slice_bounds(desc: Slice1Desc) -> tuple[list[int], list[int], list[int]]:
    """ONNX Slice (starts, ends, steps) over every axis, copying exactly the elements DML_SLICE1 copies.

    A positive stride starts at the window's offset; a negative one at its last element. ``end`` is one step past
    the last copied element; for a negative stride that can be -1 or less, which ONNX would read as counted from
    the end, so it becomes INT64_MIN, which ONNX clamps to -1 ("before index 0") for negative steps.
    """
    starts, ends = [], []
    for offset, size, stride, count in zip(desc.offsets, desc.sizes, desc.strides, desc.output_sizes, strict=True):
        start = offset if stride > 0 else offset + size - 1
        end = start + (count - 1) * stride + (1 if stride > 0 else -1)
        starts.append(start)
        ends.append(end if end >= 0 else INT64_MIN)
    return starts, ends, list(desc.strides)


def lower_slice1(desc: Descriptor, inputs: Mapping[str, Array], ep_name: str) -> LoweredGraph:
    assert isinstance(desc, Slice1Desc)
    if 0 in desc.strides:
        raise CannotLower("SLICE1 with a zero InputWindowStrides entry has no ONNX Slice form (steps != 0)")
    starts, ends, steps = slice_bounds(desc)
    g = GraphBuilder()
    x = input_tensor(g, desc.input.data_type, inputs)
    consts = [
        g.const(name, np.array(values, np.int64))
        for name, values in (("starts", starts), ("ends", ends), ("axes", range(len(starts))), ("steps", steps))
    ]
    y = g.op("Slice", x, *consts)
    elem = onnx_type(desc.input.data_type)
    return LoweredGraph("Slice-13", g, ((OUTPUT_TENSOR, y, elem, desc.output_sizes),))
