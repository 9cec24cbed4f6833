"""SLICE1's fuzz strategy: any rank (1 to 8), a window of any offset, size and stride (either sign) per dimension,
any output size it can fill, every data type over an arange input.

Drawn at 4_0, where every such case is valid (a rank other than 4 or 5 needs 3_0): a finding is written at the
lowest level that admits it (fuzz/level.py)."""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.fuzz.entry import FuzzEntry
from conformance.fuzz.strategies import CaseDict, tensor_sizes
from conformance.model import DataType, FeatureLevel, Operator


@st.composite
def draw_case(draw: st.DrawFn, special: bool = False) -> CaseDict:
    sizes = tensor_sizes(draw, 8)
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


ENTRY = FuzzEntry(Operator.SLICE1, draw_case, FeatureLevel(4, 0))
