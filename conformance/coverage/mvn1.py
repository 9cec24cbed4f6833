"""Which MEAN_VARIANCE_NORMALIZATION1 clauses a valid case exercises, read from its descriptor and data."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations

import numpy as np

from conformance.coverage.entry import CoverageEntry
from conformance.coverage.facts import ANY, FLOAT_TYPES, RANKS, Facets, level_at_least, new_facets, support_facets
from conformance.model import ACTIVATION_PARAMS, INPUT_TENSOR, Case, FeatureLevel, Mvn1Desc, Operator, TensorSpec

WITH, WITHOUT = "given", "omitted"
LARGE_OFFSET, LONG_REDUCTION = "FLOAT16, |mean| >= 1,000 standard deviations", "reduction over >= 65,536 elements"
TINY_VARIANCE, LARGE_EPSILON, SMALL_EPSILON = "variance << Epsilon", "Epsilon >= 1", "Epsilon < 1e-5"
AXIS_SUBSETS = tuple(
    "{" + ", ".join(map(str, subset)) + "}" for count in range(1, 5) for subset in combinations(range(4), count)
)
WITH_PARAMETERS = tuple(f"{name} with its parameters" for name, params in ACTIVATION_PARAMS.items() if params)
REQUIRED: Mapping[str, frozenset[str]] = {
    "computation": frozenset({LARGE_OFFSET, LONG_REDUCTION}),
    "scale-optional": frozenset({WITH, WITHOUT}),
    "bias-optional": frozenset({WITH, WITHOUT}),
    "scale-broadcast-4_0": frozenset({"ChannelCount broadcast"}),
    "bias-broadcast-4_0": frozenset({"ChannelCount broadcast"}),
    "axes": frozenset(AXIS_SUBSETS),
    "epsilon": frozenset({TINY_VARIANCE, LARGE_EPSILON, SMALL_EPSILON}),
    "fused-activation-optional": frozenset({WITH, WITHOUT}),
    "fused-activation": frozenset({*ACTIVATION_PARAMS, *WITH_PARAMETERS}),
    "support-3_1-input": frozenset({*FLOAT_TYPES, *RANKS}),
    "support-3_1-scale": frozenset(FLOAT_TYPES),
    "support-3_1-bias": frozenset(FLOAT_TYPES),
    "support-3_1-output": frozenset(FLOAT_TYPES),
    "support-2_1-input": frozenset(FLOAT_TYPES),
    "support-2_1-scale": frozenset(FLOAT_TYPES),
    "support-2_1-bias": frozenset(FLOAT_TYPES),
    "support-2_1-output": frozenset(FLOAT_TYPES),
}


def _statistics(x: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Mean and population variance over ``axes`` in float64 (independent of the oracle's code)."""
    wide = x.astype(np.float64)
    finite = np.where(np.isfinite(wide), wide, 0.0)
    mean = finite.mean(axis=axes, keepdims=True)
    return mean, ((finite - mean) ** 2).mean(axis=axes, keepdims=True)


def _data_facets(f: Facets, d: Mvn1Desc, x: np.ndarray) -> None:
    mean, variance = _statistics(x, d.axes)
    group = x.size // mean.size
    if group >= 65536:
        f["computation"].add(LONG_REDUCTION)
    std = np.sqrt(variance)
    if d.input.data_type == "FLOAT16" and (np.abs(mean) >= 1000 * std).any() and (std > 0).any():
        f["computation"].add(LARGE_OFFSET)
    if d.normalize_variance and (variance * 1000 < d.epsilon).any():
        f["epsilon"].add(TINY_VARIANCE)


def _scale_bias_facets(f: Facets, d: Mvn1Desc, level: FeatureLevel, name: str, tensor: TensorSpec | None) -> None:
    f[f"{name}-optional"].add(WITHOUT if tensor is None else WITH)
    if tensor is None:
        return
    other = "bias" if name == "scale" else "scale"
    f[f"{other}-requires-{name}"].add(ANY)
    broadcast = [i for i, (s, n) in enumerate(zip(tensor.sizes, d.input.sizes, strict=True)) if s == 1 < n]
    if level_at_least(level, "4_0"):
        f[f"{name}-dimensions-4_0"].add(ANY)
        if 1 in broadcast:
            f[f"{name}-broadcast-4_0"].add("ChannelCount broadcast")
        elif broadcast:
            f[f"{name}-broadcast-4_0"].add(ANY)
    else:
        f[f"{name}-dimensions-below-4_0"].add(ANY)
        if broadcast:
            f[f"{name}-broadcast-below-4_0"].add(ANY)
    table = "3_1" if level_at_least(level, "3_1") else "2_1"
    support_facets(f, f"support-{table}-{name}", [tensor.data_type], None)


def _activation_facets(f: Facets, d: Mvn1Desc) -> None:
    activation = d.fused_activation
    f["fused-activation-optional"].add(WITHOUT if activation is None else WITH)
    if activation is None:
        return
    f["fused-activation"].add(activation.type)
    defaults = ACTIVATION_PARAMS[activation.type]
    if any(activation.params.get(key, value) != value for key, value in defaults.items()):
        f["fused-activation"].add(f"{activation.type} with its parameters")


def exercised(case: Case, inputs: Mapping[str, np.ndarray]) -> Facets:
    """Clause name (without the operator prefix) -> facets this valid case shows."""
    d = case.descriptor
    assert isinstance(d, Mvn1Desc)
    rank, level = len(d.input.sizes), case.feature_level
    f = new_facets()
    for name in ("mean-variance", "computation", "output-dimensions", "axis-count", "superset", "same-data-type"):
        f[name].add(ANY)
    f["same-dimension-count"].add(ANY)
    f["axes"].add("{" + ", ".join(map(str, sorted(d.axes))) + "}" if rank == 4 else ANY)
    if rank == 4 and set(d.axes) == {0, 2, 3}:
        f["cross-channel-false"].add(ANY)
    if rank == 4 and set(d.axes) == {1, 2, 3}:
        f["cross-channel-true"].add(ANY)
    f["normalize-variance-true" if d.normalize_variance else "normalize-variance-false"].add(ANY)
    epsilon = float(np.float32(d.epsilon))
    f["epsilon"].add(LARGE_EPSILON if epsilon >= 1 else SMALL_EPSILON if epsilon < float(np.float32(1e-5)) else ANY)
    if epsilon == float(np.float32(1e-5)):
        f["epsilon-recommended"].add(ANY)
    _data_facets(f, d, inputs[INPUT_TENSOR])
    _scale_bias_facets(f, d, level, "scale", d.scale)
    _scale_bias_facets(f, d, level, "bias", d.bias)
    _activation_facets(f, d)
    if not level_at_least(level, "3_1"):
        f["input-dimensions-below-3_1"].add(ANY)
    if str(level) == "2_1":
        f["introduced-2_1"].add(ANY)
    table = "3_1" if level_at_least(level, "3_1") else "2_1"
    support_facets(f, f"support-{table}-input", [d.input.data_type], rank if table == "3_1" else None)
    support_facets(f, f"support-{table}-output", [d.input.data_type], None)
    return f


ENTRY = CoverageEntry(Operator.MEAN_VARIANCE_NORMALIZATION1, "mean_variance_normalization1.yaml", REQUIRED, exercised)
