"""TOP_K1 as ONNX: ``TopK-11`` (K an int64 initializer, largest = DECREASING, sorted), the same for every EP. ONNX's
indices are int64 where DML's are UINT32, and they are returned as they come."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from onnx import TensorProto

from conformance.ep.graph import Array, GraphBuilder, LoweredGraph, input_tensor, onnx_type
from conformance.model import OUTPUT_INDEX_TENSOR, OUTPUT_VALUE_TENSOR, AxisDirection, Descriptor, TopK1Desc


def lower_top_k1(desc: Descriptor, inputs: Mapping[str, Array], ep_name: str) -> LoweredGraph:
    assert isinstance(desc, TopK1Desc)
    g = GraphBuilder()
    k = g.const("K", np.array([desc.k], np.int64))
    largest = 1 if desc.axis_direction is AxisDirection.DECREASING else 0
    values, indices = g.node(
        "TopK", [input_tensor(g, desc.input.data_type, inputs), k], 2, axis=desc.axis, largest=largest, sorted=1
    )
    shape = list(desc.input.sizes)
    shape[desc.axis] = desc.k
    elem = onnx_type(desc.input.data_type)
    return LoweredGraph(
        "TopK-11",
        g,
        ((OUTPUT_VALUE_TENSOR, values, elem, shape), (OUTPUT_INDEX_TENSOR, indices, TensorProto.INT64, shape)),
    )
