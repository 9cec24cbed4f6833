"""The oracle stage: a Case's descriptor handed to ``reference`` (the spec as NumPy code)."""

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
from reference import mean_variance_normalization1, slice1, top_k1


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
            x, d.axes, scale=inputs.get(SCALE_TENSOR), bias=inputs.get(BIAS_TENSOR),
            normalize_variance=d.normalize_variance, epsilon=d.epsilon, fused_activation=activation,
        )
        return {OUTPUT_TENSOR: out}
    return {OUTPUT_TENSOR: slice1(x, d.offsets, d.sizes, d.strides, output_sizes=d.output_sizes)}


def golden_mismatches(case: Case, oracle: Mapping[str, np.ndarray]) -> list[str]:
    """Outputs where the case's own ``expected:`` (e.g. a spec example) disagrees with the oracle.

    A disagreement is a harness or case-file bug, never the EP's fault: the runner reports it as ERROR.
    Exact outputs (TOP_K1, SLICE1) must match exactly; MVN1 goldens are written with few digits, so they
    are held to the relative precision they were written with.
    """
    wrong = []
    for name, values in case.expected.items():
        got = oracle[name]
        want = np.asarray(values, dtype=np.float64).reshape(got.shape)
        have = got.astype(np.float64)
        if isinstance(case.descriptor, Mvn1Desc):
            same = np.isclose(have, want, rtol=1e-3, atol=1e-3, equal_nan=True)
        else:
            same = (have == want) | (np.isnan(have) & np.isnan(want))
        if not bool(np.all(same)):
            wrong.append(name)
    return wrong
