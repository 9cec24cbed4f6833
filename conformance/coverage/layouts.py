"""Which DML_BUFFER_TENSOR_DESC layouts a case exercises (padded rows, permuted strides, zero-stride broadcasts,
strided outputs, a TotalTensorSizeInBytes above the minimum), and which buffer-tensor rule a negative case breaks:
the layout facts beside the clause map (the buffer-tensor rules are DirectML's, not an operator page's)."""

from __future__ import annotations

from conformance.cases.keys import LAYOUT_KEYS
from conformance.cases.layouts import Layout, input_layouts, output_layouts
from conformance.cases.validate_layout import SHARED_ADDRESS
from conformance.model import Case
from conformance.problems import Problem

PADDED = "padded rows (strides past the packed ones)"
PERMUTED = "permuted strides (a transposed layout)"
BROADCAST = "zero-stride input (broadcast)"
BROADCAST_SCALE_BIAS = "zero-stride ScaleTensor and BiasTensor"
STRIDED_OUTPUT = "strided output"
LARGER = "TotalTensorSizeInBytes above the minimum"
REJECTED = "rejected by a buffer-tensor rule (negative case)"
LAYOUT_FACETS = (PADDED, PERMUTED, BROADCAST, BROADCAST_SCALE_BIAS, STRIDED_OUTPUT, LARGER, REJECTED)


def _facets(layout: Layout) -> set[str]:
    """What one tensor's layout shows."""
    seen: set[str] = set()
    if layout.total_bytes is not None:
        seen |= {LARGER} if layout.total_bytes > layout.minimum_bytes else set()
    if layout.strides is None:
        return seen
    moving = [(stride, size) for size, stride in zip(layout.sizes, layout.strides, strict=True) if size > 1]
    if any(stride == 0 for stride, _ in moving):
        seen.add(BROADCAST)
    steps = [stride for stride, _ in moving if stride]
    if steps != sorted(steps, reverse=True):
        seen.add(PERMUTED)
    count = 1
    for size in layout.sizes:
        count *= size
    if layout.spanned_elements > count:
        seen.add(PADDED)
    return seen


def layout_facets(case: Case) -> frozenset[str]:
    """The layout facets a valid case shows, on its inputs and its outputs."""
    seen: set[str] = set()
    inputs = input_layouts(case)
    for layout in inputs.values():
        seen |= _facets(layout)
    broadcast = [BROADCAST in _facets(inputs[name]) for name in ("ScaleTensor", "BiasTensor") if name in inputs]
    if len(broadcast) == 2 and all(broadcast):
        seen.add(BROADCAST_SCALE_BIAS)
    for layout in output_layouts(case).values():
        shown = _facets(layout)
        seen |= shown - {BROADCAST}
        if layout.strides is not None and (shown & {PADDED, PERMUTED}):
            seen.add(STRIDED_OUTPUT)
    return frozenset(seen)


def breaks_layout(problems: list[Problem]) -> bool:
    """Whether a negative case's problems include a buffer-tensor rule's (at a Strides, a TotalTensorSizeInBytes, or
    Data that a broadcast cannot hold)."""
    return any(p.field.rpartition(".")[2] in LAYOUT_KEYS or SHARED_ADDRESS in p.message for p in problems)
