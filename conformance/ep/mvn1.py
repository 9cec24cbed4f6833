"""MEAN_VARIANCE_NORMALIZATION1 in the ep stage: its ONNX form per EP (mvn1_lowering.py), its desc field by field
(with its fused activation), what its ONNX forms reach on DirectML, and the scratch DirectML holds for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from conformance.ep import dml_fields as dml
from conformance.ep.dml_abi import OperatorType
from conformance.ep.entry import EpEntry, always
from conformance.model import (
    BIAS_TENSOR,
    INPUT_TENSOR,
    OUTPUT_TENSOR,
    SCALE_TENSOR,
    Descriptor,
    Mvn1Desc,
    Operator,
)

if TYPE_CHECKING:
    from conformance.ep.graph import Array, LoweredGraph

DML_MVN1 = OperatorType("DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1", 115)

# ONNX activations that onnxruntime's DirectML EP fuses into a preceding InstanceNormalization or
# MeanVarianceNormalization (so DML MVN1 gets a FusedActivation): c_activationOps in
# onnxruntime/core/providers/dml/DmlExecutionProvider/src/Operators/OperatorUtility.cpp (FusionHelpers), applied by
# DmlExecutionProvider/src/GraphTransformer.cpp only at graph optimization level >= 2 and only to an activation node
# with a single input: PRelu is listed but takes a slope input, so it never fuses. Celu, Shrink, HardSwish, Gelu,
# Identity and the multi-node decompositions run as separate DML operators.
DML_FUSED_ACTIVATIONS = frozenset(
    {"Relu", "LeakyRelu", "Elu", "Selu", "Sigmoid", "HardSigmoid", "Tanh", "Softsign", "Softplus", "ThresholdedRelu"}
)


def _lower(desc: Descriptor, inputs: Mapping[str, Array], ep_name: str) -> LoweredGraph:
    from conformance.ep.mvn1_lowering import lower_mvn1  # onnx: only where a case is lowered

    return lower_mvn1(desc, inputs, ep_name)


def _dml_fields(desc: Descriptor, tensors: Mapping[str, dml.TensorLayout]) -> tuple[dml.Field, ...]:
    """DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC as the case writes it: NormalizeVariance false stays false,
    any Axes go through, Scale without Bias too, and any activation DirectML fuses is fused."""
    assert isinstance(desc, Mvn1Desc)
    return (
        dml.Tensor(INPUT_TENSOR, tensors[INPUT_TENSOR]),
        dml.OptionalTensor(SCALE_TENSOR, tensors.get(SCALE_TENSOR)),
        dml.OptionalTensor(BIAS_TENSOR, tensors.get(BIAS_TENSOR)),
        dml.Tensor(OUTPUT_TENSOR, tensors[OUTPUT_TENSOR]),
        dml.Uint("AxisCount", len(desc.axes)),
        dml.UintArray("Axes", desc.axes),
        dml.Bool("NormalizeVariance", desc.normalize_variance),
        dml.Float("Epsilon", desc.epsilon),
        dml.FusedActivation("FusedActivation", desc.fused_activation),
    )


ENTRY = EpEntry(
    operator=Operator.MEAN_VARIANCE_NORMALIZATION1,
    lower=_lower,
    same_for_every_ep=False,  # the ONNX form is chosen per EP (mvn1_lowering.mvn_candidate)
    dml_operator=DML_MVN1,
    dml_fields=_dml_fields,
    # DmlOperatorInstanceNormalization.cpp and DmlOperatorMeanVarianceNormalization.cpp (opsets 7, 9, 13) both build
    # DML MVN1. (LayerNormalization would reach DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION2, 6_3: never emitted.)
    dml_rules={"InstanceNormalization": always(DML_MVN1), "MeanVarianceNormalization": always(DML_MVN1)},
    fused_activations=DML_FUSED_ACTIVATIONS,
    # On --ep dml under Wine the decomposition (mvn1_lowering.py) holds its intermediate tensors on the device.
    session_scratch=16,
    dispatch_scratch=0.0,  # none counted (docs/case-format.md's memory table)
)
