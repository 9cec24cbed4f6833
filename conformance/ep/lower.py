"""A case's descriptor as a small ONNX model that one execution provider can run.

- TOP_K1 -> ``TopK-11`` (K an int64 initializer, largest = DECREASING, sorted); ONNX's indices are int64 where
  DML's are UINT32, and they are returned as they come.
- SLICE1 -> ``Slice-13`` with constant starts/ends/axes/steps (see ``slice_bounds``).
- MEAN_VARIANCE_NORMALIZATION1 -> see ``conformance.ep.lower_mvn1`` (the choice depends on the EP).

The data tensors are graph inputs, never initializers, so that the EP really reads them; every node is named, and
``Lowering.nodes`` lists them all so that ``execute`` can prove where each one ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from conformance.dtypes import numpy_dtype
from conformance.ep.graph import Array, CannotLower, GraphBuilder, onnx_type
from conformance.ep.lower_mvn1 import lower_mvn1
from conformance.model import (
    INPUT_TENSOR,
    OUTPUT_INDEX_TENSOR,
    OUTPUT_TENSOR,
    OUTPUT_VALUE_TENSOR,
    AxisDirection,
    Case,
    DataType,
    Mvn1Desc,
    Slice1Desc,
    TopK1Desc,
)

INT64_MIN = -(2**63)  # a Slice end meaning "past index 0" for a negative step: ONNX clamps it to -1


@dataclass(frozen=True)
class Lowering:
    name: str  # e.g. "TopK-11", "InstanceNormalization-6+Relu", "decomposed-MVN+Mul+Add"
    model: bytes  # a serialized onnx.ModelProto
    feeds: Mapping[str, Array]  # graph input name -> array
    outputs: Mapping[str, str]  # ONNX graph output name -> DML output tensor name
    nodes: tuple[str, ...]  # every node's (unique) name


@dataclass(frozen=True)
class NotExpressible:
    reason: str


def _lowering(name: str, g: GraphBuilder, outputs: Sequence[tuple[str, str, int, Sequence[int]]]) -> Lowering:
    return Lowering(
        name=name,
        model=g.model(outputs),
        feeds=dict(g.feeds),
        outputs={out: out for out, _, _, _ in outputs},
        nodes=tuple(n.name for n in g.nodes),
    )


def _input(g: GraphBuilder, data_type: DataType, inputs: Mapping[str, Array]) -> str:
    return g.input(INPUT_TENSOR, np.asarray(inputs[INPUT_TENSOR], numpy_dtype(data_type)))


def _lower_topk(desc: TopK1Desc, inputs: Mapping[str, Array]) -> Lowering:
    g = GraphBuilder()
    k = g.const("K", np.array([desc.k], np.int64))
    largest = 1 if desc.axis_direction is AxisDirection.DECREASING else 0
    values, indices = g.node(
        "TopK", [_input(g, desc.input.data_type, inputs), k], 2, axis=desc.axis, largest=largest, sorted=1
    )
    shape = list(desc.input.sizes)
    shape[desc.axis] = desc.k
    elem = onnx_type(desc.input.data_type)
    return _lowering(
        "TopK-11",
        g,
        [(OUTPUT_VALUE_TENSOR, values, elem, shape), (OUTPUT_INDEX_TENSOR, indices, TensorProto.INT64, shape)],
    )


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


def _lower_slice(desc: Slice1Desc, inputs: Mapping[str, Array]) -> Lowering | NotExpressible:
    if 0 in desc.strides:
        return NotExpressible("SLICE1 with a zero InputWindowStrides entry has no ONNX Slice form (steps != 0)")
    starts, ends, steps = slice_bounds(desc)
    g = GraphBuilder()
    x = _input(g, desc.input.data_type, inputs)
    consts = [
        g.const(name, np.array(values, np.int64))
        for name, values in (("starts", starts), ("ends", ends), ("axes", range(len(starts))), ("steps", steps))
    ]
    y = g.op("Slice", x, *consts)
    elem = onnx_type(desc.input.data_type)
    return _lowering("Slice-13", g, [(OUTPUT_TENSOR, y, elem, desc.output_sizes)])


def _lower_mvn(desc: Mvn1Desc, inputs: Mapping[str, Array], ep_name: str) -> Lowering:
    built = lower_mvn1(desc, inputs, ep_name)
    elem = onnx_type(desc.input.data_type)
    return _lowering(built.name, built.graph, [(OUTPUT_TENSOR, built.output, elem, desc.input.sizes)])


def same_for_every_ep(case: Case) -> bool:
    """Whether ``case`` lowers to one model whatever the EP: TOP_K1 and SLICE1 do; MVN1 picks a form per EP."""
    return not isinstance(case.descriptor, Mvn1Desc)


def lower(case: Case, inputs: Mapping[str, Array], ep_name: str) -> Lowering | NotExpressible:
    """``case``'s descriptor as an ONNX model for ``ep_name`` (a full onnxruntime EP name).

    ``inputs`` holds "InputTensor" (and "ScaleTensor"/"BiasTensor" where the case has them) in the case's data
    type and Sizes. NotExpressible says why no ONNX model conveys the descriptor.
    """
    desc = case.descriptor
    try:
        if isinstance(desc, TopK1Desc):
            return _lower_topk(desc, inputs)
        if isinstance(desc, Slice1Desc):
            return _lower_slice(desc, inputs)
        return _lower_mvn(desc, inputs, ep_name)
    except CannotLower as reason:
        return NotExpressible(str(reason))
