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


def _golden_differences(case: Case, name: str, got: np.ndarray) -> str | None:
    """Why the case's ``expected[name]`` disagrees with the oracle's ``got``, in one line; None when it agrees."""
    values = case.expected[name]
    if len(values) != got.size:
        return f"{name}: the case gives {len(values)} values, the oracle's output has shape {got.shape}"
    want = np.asarray(values, dtype=np.float64).reshape(got.shape)
    have = got.astype(np.float64)
    if isinstance(case.descriptor, Mvn1Desc):
        same = np.isclose(have, want, rtol=1e-3, atol=1e-3, equal_nan=True)
    else:
        same = (have == want) | (np.isnan(have) & np.isnan(want))
    if bool(np.all(same)):
        return None
    wrong = np.argwhere(~same)
    first = tuple(int(i) for i in wrong[0])
    return (
        f"{name}: {len(wrong)} of {got.size} elements differ; first at {list(first)}: the case expects "
        f"{want[first]:g}, the oracle gives {have[first]:g}"
    )


def golden_differences(case: Case, oracle: Mapping[str, np.ndarray]) -> dict[str, str]:
    """Output name -> one line saying how the case's own ``expected:`` (e.g. a spec example) disagrees with the
    oracle: how many elements differ and the first difference. Empty when they agree.

    A disagreement is a harness or case-file bug, never the EP's fault: the runner reports it as ERROR.
    Exact outputs (TOP_K1, SLICE1) must match exactly; MVN1 goldens are written with few digits, so they
    are held to the relative precision they were written with.
    """
    lines = {name: _golden_differences(case, name, oracle[name]) for name in case.expected}
    return {name: line for name, line in lines.items() if line is not None}


def golden_mismatches(case: Case, oracle: Mapping[str, np.ndarray]) -> list[str]:
    """The outputs of ``golden_differences``."""
    return list(golden_differences(case, oracle))


def golden_report(case: Case, oracle: Mapping[str, np.ndarray]) -> list[str]:
    """The lines of ``golden_differences``."""
    return list(golden_differences(case, oracle).values())
