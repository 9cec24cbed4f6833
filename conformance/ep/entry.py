"""The ep stage's entry for one operator (``EpEntry``): what the stage knows of it, in one place per operator
(its module: ep/operators.py lists them). Light: an operator's ONNX lowering, which needs onnx, is imported by the
entry's ``lower`` only when a case is lowered, so that reading the table (ep/memory.py's scratch figures, for
commands that run nothing) loads no onnx.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from conformance.ep.dml_abi import OperatorType
from conformance.ep.dml_fields import Field, TensorLayout
from conformance.model import Descriptor, Operator

if TYPE_CHECKING:
    from conformance.ep.graph import Array, LoweredGraph


class OnnxConstants(Protocol):
    """What a lowered ONNX model's constants say, for a rule that reads a node's constant inputs (read only where a
    rule asks): each initializer's values by name, each graph input's shape by name."""

    @property
    def initializers(self) -> Mapping[str, list[int]]: ...
    @property
    def input_shapes(self) -> Mapping[str, list[int]]: ...


# The DML operator onnxruntime's DirectML EP builds for one ONNX node (by its inputs' names and the model's constants).
DmlOperatorRule = Callable[[Sequence[str], OnnxConstants], str]
# The operator's descriptor as an ONNX graph for one EP (a full onnxruntime EP name); graph.CannotLower where none.
Lowerer = Callable[[Descriptor, "Mapping[str, Array]", str], "LoweredGraph"]
# The operator's DML desc over its tensors' layouts (by DML name; an optional input absent): its fields in DirectML.h's
# order (dml_fields.py); dml_fields.Inexpressible where a field cannot hold the case's value.
DescFields = Callable[[Descriptor, Mapping[str, TensorLayout]], tuple[Field, ...]]


def always(operator: OperatorType) -> DmlOperatorRule:
    """A rule for an ONNX op that always becomes ``operator``."""

    def rule(inputs: Sequence[str], constants: OnnxConstants) -> str:
        return operator.name

    return rule


@dataclass(frozen=True)
class EpEntry:
    """One operator in the ep stage.

    - ``lower`` and ``same_for_every_ep``: its ONNX form, and whether that form is one whatever the EP.
    - ``dml_operator`` and ``dml_fields``: the DML operator it is (DML_OPERATOR_TYPE) and its desc's fields, from
      which both the runner's descriptor bytes (dml_descriptor.py) and the DxDispatch model (dxdispatch.py) come.
    - ``dml_rules`` and ``fused_activations``: what its lowerings' ONNX nodes reach through onnxruntime's DirectML EP
      (ONNX op type -> rule), and the ONNX activations that EP fuses into such a node (dml_operators.py).
    - ``session_scratch`` and ``dispatch_scratch``: bytes per InputTensor element that DirectML holds on the device
      for it besides the tensors (model.MemoryPath.scratch), on ``--ep dml`` under Wine and on ``--ep dmlop``
      (ep/memory.py), as benchmarks/case_memory.py measured them.
    """

    operator: Operator
    lower: Lowerer
    same_for_every_ep: bool
    dml_operator: OperatorType
    dml_fields: DescFields
    dml_rules: Mapping[str, DmlOperatorRule]
    fused_activations: frozenset[str]
    session_scratch: float
    dispatch_scratch: float
