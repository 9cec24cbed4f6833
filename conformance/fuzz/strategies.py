"""Hypothesis strategies that draw valid case entries, written as the case files write them.

Data is drawn as indices into a small pool of values, so that ties are common and shrinking heads for
"every element equal" and short, low-rank tensors: the minimal failing case is one a person can read.
The indices come from one drawn seed rather than a choice per element: a choice per element makes every shrink
step cost time in proportion to the tensor, and mixing the two (a choice per element for small tensors only) makes
some smaller tensors longer choice sequences than larger ones, which Hypothesis's shrinker (it orders examples by
their choices) then does not prefer.

Every NaN drawn is the NaN a case file's ``.nan`` loads as (PyYAML's, negative): a candidate runs with the bits its
written file will hold, for EPs whose kernels look at a NaN's sign or payload.
"""

from __future__ import annotations

import math
import random
from typing import Any

import yaml
from hypothesis import strategies as st

from conformance.dtypes import value_range
from conformance.model import ACTIVATION_PARAMS, DataType

MAX_ELEMENTS = 1024  # per tensor: keeps every draw within Hypothesis's buffer and each run in milliseconds
FEATURE_LEVEL = "4_0"  # every rank 1-8 and broadcast scale/bias are valid here
CaseDict = dict[str, Any]
YAML_NAN: float = yaml.safe_load(".nan")  # what conformance.cases.load reads ".nan" as (PyYAML's safe constructor)


def _sizes(draw: st.DrawFn, max_rank: int, long_axis: int | None = None) -> list[int]:
    rank = draw(st.integers(1, max_rank))
    sizes = draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank))
    if long_axis is not None:
        sizes[long_axis % rank] = draw(st.integers(2, 300))
    while math.prod(sizes) > MAX_ELEMENTS:
        sizes[sizes.index(max(sizes))] //= 2
    return sizes


def _pool_value(draw: st.DrawFn, data_type: DataType, special: bool) -> float:
    low, high = value_range(data_type)
    if not data_type.is_float:
        small = st.integers(max(-4, int(low)), 4)
        return float(draw(st.one_of(small, st.integers(int(low), int(high)))))
    floats = st.floats(width=16, allow_nan=special, allow_infinity=special, allow_subnormal=special)
    if data_type == DataType.FLOAT32:
        floats = st.floats(width=32, allow_nan=special, allow_infinity=special, allow_subnormal=special)
    value = float(draw(floats))
    return YAML_NAN if math.isnan(value) else value


def picks(draw: st.DrawFn, choices: int, count: int) -> list[int]:
    """``count`` indices below ``choices``, from a drawn seed."""
    # random.Random's choices() is the same sequence for a seed on every Python version (unlike NumPy's).
    return random.Random(draw(st.integers(0, 2**32 - 1))).choices(range(choices), k=count)


def _data(draw: st.DrawFn, data_type: DataType, count: int, special: bool) -> list[float]:
    """``count`` values drawn from a pool of 1 to 8 distinct ones (ties everywhere)."""
    distinct = draw(st.integers(1, 8))
    values = [_pool_value(draw, data_type, special) for _ in range(distinct)]
    return [values[i] for i in picks(draw, distinct, count)]


@st.composite
def top_k1(draw: st.DrawFn, special: bool = False) -> CaseDict:
    # The descriptor first and the data last: when the shrinker makes a tensor smaller, the choices that follow
    # it change meaning, and only the data should.
    axis_hint = draw(st.integers(0, 7))
    sizes = _sizes(draw, 8, axis_hint)
    axis = axis_hint % len(sizes)
    if sizes[axis] < 2:
        sizes[axis] = 2
    k = draw(st.integers(1, sizes[axis] - 1))
    direction = draw(st.sampled_from(["DECREASING", "INCREASING"]))
    data_type = draw(st.sampled_from(list(DataType)))
    data = _data(draw, data_type, math.prod(sizes), special)
    return {
        "InputTensor": {"Sizes": sizes, "DataType": data_type.value, "Data": data},
        "Axis": axis,
        "K": k,
        "AxisDirection": direction,
    }


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
def mean_variance_normalization1(draw: st.DrawFn, special: bool = False) -> CaseDict:
    # As for TOP_K1: the descriptor first, the data last.
    sizes = _sizes(draw, 5)
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


@st.composite
def slice1(draw: st.DrawFn, special: bool = False) -> CaseDict:
    sizes = _sizes(draw, 8)
    offsets, windows, strides, outputs = [], [], [], []
    for size in sizes:
        window = draw(st.integers(1, size))
        offsets.append(draw(st.integers(0, size - window)))
        windows.append(window)
        stride = draw(st.integers(1, 4)) * draw(st.sampled_from([1, -1]))
        strides.append(stride)
        outputs.append(draw(st.integers(1, 1 + (window - 1) // abs(stride))))
    data_type = draw(st.sampled_from(list(DataType)))
    return {
        "InputTensor": {"Sizes": sizes, "DataType": data_type.value, "Generator": {"Kind": "arange", "Start": 1}},
        "InputWindowOffsets": offsets,
        "InputWindowSizes": windows,
        "InputWindowStrides": strides,
        "OutputSizes": outputs,
    }
