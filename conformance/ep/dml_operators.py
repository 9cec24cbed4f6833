"""Which DirectML operators onnxruntime's DirectML EP builds for a lowered model: what a case reaches on DirectML.

Read from microsoft/onnxruntime, onnxruntime/core/providers/dml/DmlExecutionProvider/src/Operators:

- TopK (opsets 10, 11): DmlOperatorTopk.cpp always builds DML_OPERATOR_TOP_K1 (largest -> AxisDirection).
- Slice (opsets 10, 11, 13): DmlOperatorSlice.cpp builds DML_OPERATOR_SLICE1, except that since PR #18289 (1.16.2)
  a slice with every step 1 whose only cut is one axis's leading part (a non-zero offset, the window running to
  the axis's end) becomes DML_OPERATOR_SPLIT, keeping the right part (``GetSplitIndex``).
- InstanceNormalization and MeanVarianceNormalization: DmlOperatorInstanceNormalization.cpp and
  DmlOperatorMeanVarianceNormalization.cpp both build DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1; a following
  fusable activation (``DML_FUSED_ACTIVATIONS``) becomes its FusedActivation (GraphTransformer.cpp, level >= 2).
  LayerNormalization would reach DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2 (6_3); the harness never emits it.
- The decomposition's ReduceMean, Sub, Mul, Add, Div, Sqrt and Cast reach DirectML's REDUCE, ELEMENT_WISE_* and
  CAST operators: such a case does not exercise MEAN_VARIANCE_NORMALIZATION1 on DirectML at all.

This has not run on Windows: it is the mapping as the EP's source reads, for the reports to name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import onnx
from onnx import numpy_helper

from conformance.ep.lower_mvn1 import DML_FUSED_ACTIVATIONS

TOP_K1 = "DML_OPERATOR_TOP_K1"
SLICE1 = "DML_OPERATOR_SLICE1"
SPLIT = "DML_OPERATOR_SPLIT"
MVN1 = "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1"

_OTHERS: Mapping[str, str] = {
    "ReduceMean": "DML_OPERATOR_REDUCE",
    "Sub": "DML_OPERATOR_ELEMENT_WISE_SUBTRACT",
    "Mul": "DML_OPERATOR_ELEMENT_WISE_MULTIPLY",
    "Add": "DML_OPERATOR_ELEMENT_WISE_ADD",
    "Div": "DML_OPERATOR_ELEMENT_WISE_DIVIDE",
    "Less": "DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN",
    "Greater": "DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN",
    "Where": "DML_OPERATOR_ELEMENT_WISE_IF",
    "Sqrt": "DML_OPERATOR_ELEMENT_WISE_SQRT",
    "Cast": "DML_OPERATOR_CAST",
    "Identity": "DML_OPERATOR_ELEMENT_WISE_IDENTITY",
    "Relu": "DML_OPERATOR_ACTIVATION_RELU",
    "LeakyRelu": "DML_OPERATOR_ACTIVATION_LEAKY_RELU",
    "Elu": "DML_OPERATOR_ACTIVATION_ELU",
    "Celu": "DML_OPERATOR_ACTIVATION_CELU",
    "Selu": "DML_OPERATOR_ACTIVATION_SCALED_ELU",
    "Sigmoid": "DML_OPERATOR_ACTIVATION_SIGMOID",
    "HardSigmoid": "DML_OPERATOR_ACTIVATION_HARD_SIGMOID",
    "Tanh": "DML_OPERATOR_ACTIVATION_TANH",
    "Softsign": "DML_OPERATOR_ACTIVATION_SOFTSIGN",
    "Softplus": "DML_OPERATOR_ACTIVATION_SOFTPLUS",
    "ThresholdedRelu": "DML_OPERATOR_ACTIVATION_THRESHOLDED_RELU",
    "HardSwish": "DML_OPERATOR_ACTIVATION_HARD_SWISH",
    "Shrink": "DML_OPERATOR_ACTIVATION_SHRINK",
    "PRelu": "DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU",
    "Gelu": "DML_OPERATOR_ACTIVATION_GELU",
}
_TARGETS = {"TopK": TOP_K1, "Slice": SLICE1, "InstanceNormalization": MVN1, "MeanVarianceNormalization": MVN1}


def slice_becomes_split(shape: Sequence[int], starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]) -> bool:
    """DmlOperatorSlice's GetSplitIndex: every step 1, exactly one axis starting after 0, and that axis's window
    running to the axis's end (ONNX clamps ``end`` to the dimension). The other axes' windows are not looked at."""
    if any(step != 1 for step in steps):
        return False
    cut = [axis for axis, start in enumerate(starts) if start > 0]
    return len(cut) == 1 and min(ends[cut[0]], shape[cut[0]]) == shape[cut[0]]


def _initializers(model: onnx.ModelProto) -> dict[str, list[int]]:
    return {init.name: numpy_helper.to_array(init).tolist() for init in model.graph.initializer}


def _shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    return {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}


def _slice_operator(node: onnx.NodeProto, model: onnx.ModelProto) -> str:
    """SPLIT or SLICE1 for a Slice whose bounds are initializers (the harness's always are), per input axis:
    starts and ends are placed by ``axes`` and made non-negative as onnxruntime normalizes them."""
    consts, shape = _initializers(model), _shapes(model).get(node.input[0])
    bounds = [consts.get(name) for name in node.input[1:5]]
    if shape is None or len(bounds) < 2 or any(b is None for b in bounds):
        return SLICE1
    starts, ends = list(bounds[0] or []), list(bounds[1] or [])
    axes = list(bounds[2] or range(len(starts))) if len(bounds) > 2 else list(range(len(starts)))
    steps = list(bounds[3] or []) if len(bounds) > 3 else [1] * len(starts)
    full_starts, full_ends, full_steps = [0] * len(shape), list(shape), [1] * len(shape)
    for axis, start, end, step in zip(axes, starts, ends, steps, strict=True):
        axis %= len(shape)
        full_starts[axis] = start + shape[axis] if start < 0 else start
        full_ends[axis] = end + shape[axis] if end < 0 else end
        full_steps[axis] = step
    return SPLIT if slice_becomes_split(shape, full_starts, full_ends, full_steps) else SLICE1


def expected_dml_operators(model_bytes: bytes) -> str:
    """The DML operators a lowering reaches, in node order, e.g. "DML_OPERATOR_TOP_K1" or
    "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1 (FusedActivation DML_OPERATOR_ACTIVATION_RELU)"."""
    model = onnx.load_from_string(model_bytes)
    nodes = [n for n in model.graph.node if n.op_type != "Constant"]
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    names: list[str] = []
    fused: set[str] = set()
    for node in nodes:
        if node.name in fused:
            continue
        if node.op_type == "Slice":
            names.append(_slice_operator(node, model))
            continue
        name = _TARGETS.get(node.op_type) or _OTHERS.get(node.op_type, f"? ({node.op_type})")
        after = consumers.get(node.output[0], [])
        if name == MVN1 and len(after) == 1 and after[0].op_type in DML_FUSED_ACTIVATIONS and len(after[0].input) == 1:
            fused.add(after[0].name)
            name += f" (FusedActivation {_OTHERS[after[0].op_type]})"
        names.append(name)
    if names and (names[0] in (TOP_K1, SLICE1, SPLIT) or names[0].startswith(MVN1)):
        return " + ".join(names)
    return "no single DML operator: " + ", ".join(dict.fromkeys(names))
