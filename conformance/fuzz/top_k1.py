"""TOP_K1's fuzz strategy: any rank (1 to 8), an axis of up to 300 elements, any K below it, either direction,
every data type, data from a small pool (ties everywhere).

Drawn at 4_0, where every such case is valid (TOP_K1 is introduced at 2_1, for 4 dimensions; 1 to 8 from 3_1): a
finding is written at the lowest level that admits it (fuzz/level.py)."""

from __future__ import annotations

import math

from hypothesis import strategies as st

from conformance.fuzz.entry import FuzzEntry
from conformance.fuzz.strategies import CaseDict, pooled_data, tensor_sizes
from conformance.model import DataType, FeatureLevel, Operator


@st.composite
def draw_case(draw: st.DrawFn, special: bool = False) -> CaseDict:
    # The descriptor first and the data last: when the shrinker makes a tensor smaller, the choices that follow
    # it change meaning, and only the data should.
    axis_hint = draw(st.integers(0, 7))
    sizes = tensor_sizes(draw, 8, axis_hint)
    axis = axis_hint % len(sizes)
    if sizes[axis] < 2:
        sizes[axis] = 2
    k = draw(st.integers(1, sizes[axis] - 1))
    direction = draw(st.sampled_from(["DECREASING", "INCREASING"]))
    data_type = draw(st.sampled_from(list(DataType)))
    data = pooled_data(draw, data_type, math.prod(sizes), special)
    return {
        "InputTensor": {"Sizes": sizes, "DataType": data_type.value, "Data": data},
        "Axis": axis,
        "K": k,
        "AxisDirection": direction,
    }


ENTRY = FuzzEntry(Operator.TOP_K1, draw_case, FeatureLevel(4, 0))
