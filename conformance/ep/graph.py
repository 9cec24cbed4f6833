"""The small ONNX graph builder every lowering uses, and the ONNX facts they share (IR version, element types).

A lowering builds one graph of one DML operator's ONNX form (``LoweredGraph``: each operator's ``*_lowering``
module); the builder names every node uniquely and serializes the model at the IR version the oldest supported
onnxruntime reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from onnx import NodeProto, TensorProto, ValueInfoProto, helper, numpy_helper

from conformance.dtypes import numpy_dtype
from conformance.model import INPUT_TENSOR, DataType

Array = npt.NDArray[Any]
IR_VERSION = 9  # onnxruntime 1.31 rejects newer IR versions
BASE_OPSET = 18  # ReduceMean with axes as an input (the MVN1 lowering's opset, and every lowering's default)
ONNX_TYPES: dict[DataType, int] = {
    DataType.FLOAT32: TensorProto.FLOAT,
    DataType.FLOAT16: TensorProto.FLOAT16,
    DataType.INT32: TensorProto.INT32,
    DataType.INT16: TensorProto.INT16,
    DataType.INT8: TensorProto.INT8,
    DataType.UINT32: TensorProto.UINT32,
    DataType.UINT16: TensorProto.UINT16,
    DataType.UINT8: TensorProto.UINT8,
}


def onnx_type(data_type: DataType) -> int:
    return ONNX_TYPES[data_type]


class CannotLower(Exception):
    """The descriptor has no ONNX form here; the message says why."""


@dataclass
class GraphBuilder:
    """Accumulates one ONNX graph; every node gets a unique name."""

    opset: int = BASE_OPSET
    nodes: list[NodeProto] = field(default_factory=list)
    inputs: list[ValueInfoProto] = field(default_factory=list)
    initializers: list[TensorProto] = field(default_factory=list)
    feeds: dict[str, Array] = field(default_factory=dict)

    def input(self, name: str, array: Array) -> str:
        array = np.ascontiguousarray(array)
        elem = helper.np_dtype_to_tensor_dtype(array.dtype)
        self.inputs.append(helper.make_tensor_value_info(name, elem, list(array.shape)))
        self.feeds[name] = array
        return name

    def const(self, hint: str, array: Array) -> str:
        name = f"{hint}_c{len(self.initializers)}"
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op: str, inputs: Sequence[str], outputs: int = 1, **attrs: Any) -> list[str]:
        name = f"{op}_{len(self.nodes)}"
        names = [f"{name}_out{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, list(inputs), names, name=name, **attrs))
        return names

    def op(self, op: str, *inputs: str, **attrs: Any) -> str:
        return self.node(op, inputs, 1, **attrs)[0]

    def model(self, outputs: Sequence[tuple[str, str, int, Sequence[int]]]) -> bytes:
        """Serialize; ``outputs`` are (graph output name, tensor name, ONNX type, shape)."""
        renames = {tensor: name for name, tensor, _, _ in outputs}
        for node in self.nodes:
            node.output[:] = [renames.get(o, o) for o in node.output]
        infos = [helper.make_tensor_value_info(name, elem, list(shape)) for name, _, elem, shape in outputs]
        graph = helper.make_graph(self.nodes, "dml_conformance", self.inputs, infos, self.initializers)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", self.opset)],
            ir_version=IR_VERSION,
            producer_name="dml-conformance",
        )
        return bytes(model.SerializeToString())


def input_tensor(g: GraphBuilder, data_type: DataType, inputs: Mapping[str, Array]) -> str:
    """The case's InputTensor as a graph input of its data type."""
    return g.input(INPUT_TENSOR, np.asarray(inputs[INPUT_TENSOR], numpy_dtype(data_type)))


# A graph output: (the DML output tensor's name, the graph's tensor, its ONNX element type, its shape).
GraphOutput = tuple[str, str, int, Sequence[int]]


@dataclass(frozen=True)
class LoweredGraph:
    """An operator's ONNX form for one EP: its name ("TopK-11", "decomposed-MVN+Relu"), the graph, and its outputs,
    each named as the DML output tensor it stands for."""

    name: str
    graph: GraphBuilder
    outputs: tuple[GraphOutput, ...]
