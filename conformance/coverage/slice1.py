"""Which SLICE1 clauses a valid case exercises, read from its descriptor (a slice only moves data)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from conformance.coverage.entry import CoverageEntry
from conformance.coverage.facts import (
    ANY,
    DATA_TYPES,
    RANK_AXES,
    RANKS,
    Facets,
    level_at_least,
    new_facets,
    support_facets,
)
from conformance.model import INPUT_TENSOR, Case, Operator, Slice1Desc

AT_START, AT_END, WHOLE = "window at the start", "window at the end, offset > 0", "window is the whole dimension"
SINGLE = "single-element window"
FULL, PARTIAL, ONE = "OutputSizes = MaxCopiedElements", "OutputSizes < MaxCopiedElements", "OutputSizes = 1 of many"
_INPUT = list(range(1, 17))  # the page's input: Sizes {1, 1, 4, 4}, values 1 to 16
# The page's examples: InputWindowOffsets, InputWindowSizes, InputWindowStrides.
EXAMPLES = {
    "example-1": ((0, 0, 0, 1), (1, 1, 4, 3), (1, 1, 2, 2)),
    "example-2": ((0, 0, 0, 1), (1, 1, 4, 3), (1, 1, -2, 2)),
}
REQUIRED: Mapping[str, frozenset[str]] = {
    "window-offset": frozenset({"offset > 0"}),
    "stride-magnitude": frozenset({"|stride| > 1"}),
    "positive-stride-start": frozenset(RANK_AXES),  # every dimension of every rank
    "negative-stride-start": frozenset(RANK_AXES),
    "copy-direction": frozenset({"positive", "negative"}),
    "window-not-empty": frozenset({SINGLE}),
    "window-in-bounds": frozenset({AT_START, AT_END, WHOLE}),
    "output-sizes-range": frozenset({FULL, PARTIAL, ONE}),
    "dimension-count-3_0": frozenset(RANKS),
    "dimension-count-below-3_0": frozenset({"rank 4", "rank 5"}),
    "support-3_0-input": frozenset(DATA_TYPES),
    "support-3_0-output": frozenset(DATA_TYPES),
    "support-2_1-input": frozenset(DATA_TYPES),
    "support-2_1-output": frozenset(DATA_TYPES),
}


def _window_facets(f: Facets, d: Slice1Desc) -> None:
    rank = len(d.input.sizes)
    for i, (offset, size, stride, n) in enumerate(zip(d.offsets, d.sizes, d.strides, d.input.sizes, strict=True)):
        direction = "positive" if stride > 0 else "negative"
        f[f"{direction}-stride-start"].add(f"rank {rank} axis {i}")
        f["copy-direction"].add(direction)
        f["input-window-strides-sign"].add(direction)
        if abs(stride) > 1:
            f["stride-magnitude"].add("|stride| > 1")
            f["input-window-strides-magnitude"].add(ANY)
        if offset > 0:
            f["window-offset"].add("offset > 0")
        if size == 1 < n:
            f["window-not-empty"].add(SINGLE)
        f["window-in-bounds"].add(
            WHOLE if size == n else AT_START if offset == 0 else AT_END if offset + size == n else ANY
        )
        if stride < 0:
            f["remark-negative-strides"].add(ANY)


def _output_facets(f: Facets, d: Slice1Desc) -> None:
    output = d.output_sizes
    for out, most in zip(output, d.max_copied_elements, strict=True):
        f["output-sizes-range"].add(FULL if out == most else ONE if out == 1 else PARTIAL)
        if out < most:
            f["partial-copy"].add(ANY)
        if most > 1 and out == most:
            f["max-copied-elements"].add(ANY)
    if tuple(output) != d.sizes:
        f["remark-window-not-output"].add(ANY)


def exercised(case: Case, inputs: Mapping[str, np.ndarray]) -> Facets:
    """Clause name (without the operator prefix) -> facets this valid case shows."""
    d = case.descriptor
    assert isinstance(d, Slice1Desc)
    rank, level = len(d.input.sizes), case.feature_level
    f = new_facets()
    for name in ("extract", "input-window", "window-size", "window-end", "window-stride", "copy-formula"):
        f[name].add(ANY)
    for name in ("array-lengths", "dimension-count-match", "stride-not-zero", "same-data-type", "same-dimension-count"):
        f[name].add(ANY)
    f["input-window-offsets-bound"].add(ANY)
    f["input-window-sizes-bound"].add(ANY)
    _window_facets(f, d)
    _output_facets(f, d)
    x = inputs[INPUT_TENSOR]
    page_input = d.input.sizes == (1, 1, 4, 4) and d.input.data_type == "FLOAT32" and x.ravel().tolist() == _INPUT
    for name, window in EXAMPLES.items():
        if page_input and (d.offsets, d.sizes, d.strides) == window and case.expected:
            f[name].add(ANY)
    if str(level) == "2_1":
        f["introduced-2_1"].add(ANY)
    table = "3_0" if level_at_least(level, "3_0") else "2_1"
    f["dimension-count-3_0" if table == "3_0" else "dimension-count-below-3_0"].add(f"rank {rank}")
    support_facets(f, f"support-{table}-input", [d.input.data_type], None)
    support_facets(f, f"support-{table}-output", [d.input.data_type], None)
    return f


ENTRY = CoverageEntry(Operator.SLICE1, "slice1.yaml", REQUIRED, exercised)
