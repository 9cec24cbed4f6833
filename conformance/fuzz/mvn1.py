"""MEAN_VARIANCE_NORMALIZATION1's fuzz strategy: rank 1 to 5, any set of axes, a scale and a bias that may
broadcast, any fused activation with its parameters, float data around an offset (cancellation and rounding).

Drawn at 4_0, the level from which a scale or bias may broadcast along the channel (any rank other than 4 needs
3_1): a finding is written at the lowest level that admits it (fuzz/level.py)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

from conformance.fuzz.entry import FuzzEntry
from conformance.fuzz.strategies import YAML_NAN, CaseDict, picks, tensor_sizes
from conformance.model import ACTIVATION_PARAMS, DataType, FeatureLevel, Operator


def _activation(draw: st.DrawFn) -> dict[str, Any] | None:
    name = draw(st.one_of(st.none(), st.sampled_from(sorted(ACTIVATION_PARAMS))))
    if name is None:
        return None
    keys = {"alpha": "Alpha", "beta": "Beta", "gamma": "Gamma", "steepness": "Steepness", "bias": "Bias"}
    keys |= {"threshold": "Threshold", "sigmoid_input_scale": "SigmoidInputScale"}
    activation: dict[str, Any] = {"Type": name}
    for key, default in ACTIVATION_PARAMS[name].items():
        activation[keys[key]] = draw(st.sampled_from([default, 0.5, 2.0, -0.25]))
    return activation


@st.composite
def draw_case(draw: st.DrawFn, special: bool = False) -> CaseDict:
    # The descriptor first, the data last (see fuzz/top_k1.py).
    sizes = tensor_sizes(draw, 5)
    rank = len(sizes)
    data_type = draw(st.sampled_from([DataType.FLOAT32, DataType.FLOAT16]))
    case: CaseDict = {
        "InputTensor": {"Sizes": sizes, "DataType": data_type.value},
        "Axes": sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1))),
        "NormalizeVariance": draw(st.booleans()),
        "Epsilon": draw(st.sampled_from([1e-5, 1e-3, 0.25, 1.0])),
    }
    shapes = [[s if draw(st.booleans()) else 1 for s in sizes] for _ in range(2)] if draw(st.booleans()) else []
    activation = _activation(draw)
    if activation is not None:
        case["FusedActivation"] = activation
    # Moderate values (multiples of 1/8 up to 8, exact in FLOAT16) around an offset: overflow is not the
    # question here, cancellation and rounding are.
    offset = draw(st.sampled_from([0.0, 10.0, -1000.0]))
    distinct = draw(st.integers(1, 8))
    pool = [offset + draw(st.integers(-64, 64)) / 8 for _ in range(distinct)]
    if special:
        pool += draw(st.lists(st.sampled_from([YAML_NAN, math.inf, -math.inf]), max_size=1))
    case["InputTensor"]["Data"] = [pool[i] for i in picks(draw, len(pool), math.prod(sizes))]
    factors = [1.0, -2.0, 0.5, 3.0, 0.0]
    for name, shape in zip(("ScaleTensor", "BiasTensor"), shapes, strict=False):
        values = [factors[i] for i in picks(draw, len(factors), math.prod(shape))]
        case[name] = {"Sizes": shape, "DataType": data_type.value, "Data": values}
    return case


ENTRY = FuzzEntry(Operator.MEAN_VARIANCE_NORMALIZATION1, draw_case, FeatureLevel(4, 0))
