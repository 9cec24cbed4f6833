"""What every operator's Hypothesis strategy shares (each operator's module draws its valid case entries, written as
the case files write them, with these): tensor sizes, and data drawn from a small pool.

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
from conformance.model import DataType

MAX_ELEMENTS = 1024  # per tensor: keeps every draw within Hypothesis's buffer and each run in milliseconds
CaseDict = dict[str, Any]
YAML_NAN: float = yaml.safe_load(".nan")  # what conformance.cases.load reads ".nan" as (PyYAML's safe constructor)


def tensor_sizes(draw: st.DrawFn, max_rank: int, long_axis: int | None = None) -> list[int]:
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


def pooled_data(draw: st.DrawFn, data_type: DataType, count: int, special: bool) -> list[float]:
    """``count`` values drawn from a pool of 1 to 8 distinct ones (ties everywhere)."""
    distinct = draw(st.integers(1, 8))
    values = [_pool_value(draw, data_type, special) for _ in range(distinct)]
    return [values[i] for i in picks(draw, distinct, count)]
