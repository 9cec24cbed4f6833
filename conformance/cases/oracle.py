"""The oracle stage: a Case's descriptor handed to ``reference`` (the spec as NumPy code). A case's own ``expected:``
outputs are checked against the oracle's by the compare stage's rules (compare/golden.py)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from conformance.model import (
    BIAS_TENSOR,
    INPUT_TENSOR,
    OUTPUT_INDEX_TENSOR,
    OUTPUT_TENSOR,
    OUTPUT_VALUE_TENSOR,
    SCALE_TENSOR,
    Case,
    Mvn1Desc,
    TopK1Desc,
)

# From the submodules, not the package: an editable install made before reference/ had an __init__.py
# imports ``reference`` as a namespace package, whose attributes are then the modules, not the functions.
from reference.mean_variance_normalization1 import mean_variance_normalization1
from reference.slice1 import slice1
from reference.top_k1 import top_k1


def expected_outputs(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What the spec says the operator writes, keyed by the spec's output tensor names."""
    d = case.descriptor
    x = inputs[INPUT_TENSOR]
    if isinstance(d, TopK1Desc):
        values, indices = top_k1(x, d.axis, d.k, axis_direction=d.axis_direction.value)
        return {OUTPUT_VALUE_TENSOR: values, OUTPUT_INDEX_TENSOR: indices}
    if isinstance(d, Mvn1Desc):
        activation = None
        if d.fused_activation is not None:
            activation = {"type": d.fused_activation.type, **d.fused_activation.params}
        out = mean_variance_normalization1(
            x,
            d.axes,
            scale=inputs.get(SCALE_TENSOR),
            bias=inputs.get(BIAS_TENSOR),
            normalize_variance=d.normalize_variance,
            epsilon=d.epsilon,
            fused_activation=activation,
        )
        return {OUTPUT_TENSOR: out}
    return {OUTPUT_TENSOR: slice1(x, d.offsets, d.sizes, d.strides, output_sizes=d.given_output_sizes)}
