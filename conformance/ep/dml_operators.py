"""Which DirectML operators onnxruntime's DirectML EP builds for a lowered model: what a case reaches on DirectML.

Read from microsoft/onnxruntime, onnxruntime/core/providers/dml/DmlExecutionProvider/src/Operators: the ONNX nodes
an operator's lowerings emit for it reach the DML operators its entry's ``dml_rules`` say (each operator's module,
with the EP source each rule is read from), and a fusable activation after such a node (its entry's
``fused_activations``) becomes that operator's FusedActivation (GraphTransformer.cpp, level >= 2). Every other node
(``_OTHERS``: the decomposition's ReduceMean, Sub, Mul, Add, Div, Sqrt and Cast, an activation that is not fused)
reaches DirectML's REDUCE, ELEMENT_WISE_*, CAST or ACTIVATION_* operators: a model whose first node is no operator's
own does not exercise the case's operator on DirectML at all.

This has not run on Windows: it is the mapping as the EP's source reads, for the reports to name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import onnx
from onnx import numpy_helper

from conformance.ep.entry import DmlOperatorRule, EpEntry
from conformance.ep.operators import OPERATORS

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


def _rules() -> Mapping[str, tuple[EpEntry, DmlOperatorRule]]:
    """Each ONNX op type an operator's lowering emits for it, with that operator's entry and rule."""
    rules: dict[str, tuple[EpEntry, DmlOperatorRule]] = {}
    for entry in OPERATORS.values():
        for op_type, rule in entry.dml_rules.items():
            if op_type in rules:
                raise ValueError(f"{op_type} has a DML rule of both {rules[op_type][0].operator} and {entry.operator}")
            rules[op_type] = (entry, rule)
    return rules


_RULES = _rules()


@dataclass(frozen=True)
class _Constants:
    """A model's constants, read only where a rule asks (ep/entry.py's OnnxConstants)."""

    model: onnx.ModelProto

    @cached_property
    def initializers(self) -> dict[str, list[int]]:
        return {init.name: numpy_helper.to_array(init).tolist() for init in self.model.graph.initializer}

    @cached_property
    def input_shapes(self) -> dict[str, list[int]]:
        return {i.name: [d.dim_value for d in i.type.tensor_type.shape.dim] for i in self.model.graph.input}


def expected_dml_operators(model_bytes: bytes) -> str:
    """The DML operators a lowering reaches, in node order, joined by " + ": each node's, an operator's node with
    " (FusedActivation DML_OPERATOR_ACTIVATION_RELU)" where the activation after it is fused into it; or, where the
    first node is no operator's own, "no single DML operator: " and the DML operators the nodes reach."""
    model = onnx.load_from_string(model_bytes)
    nodes = [n for n in model.graph.node if n.op_type != "Constant"]
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    names: list[str] = []
    fused: set[str] = set()
    constants = _Constants(model)
    for node in nodes:
        if node.name in fused:
            continue
        if node.op_type not in _RULES:
            names.append(_OTHERS.get(node.op_type, f"? ({node.op_type})"))
            continue
        entry, rule = _RULES[node.op_type]
        name = rule(node.input, constants)
        after = consumers.get(node.output[0], [])
        if len(after) == 1 and after[0].op_type in entry.fused_activations and len(after[0].input) == 1:
            fused.add(after[0].name)
            name += f" (FusedActivation {_OTHERS[after[0].op_type]})"
        names.append(name)
    if nodes and nodes[0].op_type in _RULES:
        return " + ".join(names)
    return "no single DML operator: " + ", ".join(dict.fromkeys(names))
