"""Which TOP_K1 clauses a valid case exercises, read from its descriptor and its real input data."""

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
    special_values,
    support_facets,
)
from conformance.model import INPUT_TENSOR, AxisDirection, Case, Operator, TopK1Desc

SHORT, LONG, LARGE_K, ALL_EQUAL, SIGNED_ZEROS = (
    "short axis (< 256)",
    "long axis (>= 65,536)",
    "large K (>= 1,024)",
    "all-equal sequence",
    "+0 and -0 tie",
)
K_ONE, K_MID, K_LAST = "K = 1", "1 < K < axis size - 1", "K = axis size - 1"
_A = [[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]
_B = [[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]]
# The page's examples: input rows (Sizes {1,1,3,4}, FLOAT32), Axis, K, AxisDirection.
EXAMPLES = {
    "example-1": (_A, 3, 2, AxisDirection.DECREASING),
    "example-2": (_A, 2, 2, AxisDirection.DECREASING),
    "example-3": (_B, 3, 3, AxisDirection.DECREASING),
    "example-4": (_B, 3, 3, AxisDirection.INCREASING),
}
REQUIRED: Mapping[str, frozenset[str]] = {
    "select": frozenset({"NaN", "+Inf", "-Inf", *(f"min and max of {t}" for t in DATA_TYPES)}),
    "values-sorted": frozenset(AxisDirection),
    "index-relative": frozenset({"innermost axis", "outer axis"}),
    "ties": frozenset({SHORT, LONG, LARGE_K, ALL_EQUAL, SIGNED_ZEROS}),
    "axis-range": frozenset(RANK_AXES),
    "k-range": frozenset({K_ONE, K_MID, K_LAST}),
    "direction": frozenset(AxisDirection),
    "support-3_1-input": frozenset({*DATA_TYPES, *RANKS}),
    "support-3_1-values": frozenset(DATA_TYPES),
    "support-3_1-indices": frozenset(RANKS),
    "support-2_1-input": frozenset(DATA_TYPES),
    "support-2_1-values": frozenset(DATA_TYPES),
    "support-older-input": frozenset(DATA_TYPES),
    "support-older-values": frozenset(DATA_TYPES),
}


def _tie_facets(sequences: np.ndarray, k: int, decreasing: bool) -> set[str]:
    """Facets of ties among each sequence's K selected values and the first one left out (the K boundary)."""
    keys = sequences.astype(np.float64)
    ordered = np.sort(-keys if decreasing else keys, axis=-1)[:, : k + 1]
    tied_rows = (ordered[:, 1:] == ordered[:, :-1]).any(axis=-1)
    if not tied_rows.any():
        return set()
    n = sequences.shape[-1]
    facets = {SHORT} if n < 256 else {LONG} if n >= 65536 else set()
    facets |= {LARGE_K} if k >= 1024 else set()
    facets |= {ALL_EQUAL} if (sequences == sequences[:, :1]).all(axis=-1).any() else set()
    zeros = ordered == 0
    signs = np.signbit(ordered) & zeros
    if ((signs.sum(axis=-1) > 0) & ((zeros & ~signs).sum(axis=-1) > 0)).any():
        facets.add(SIGNED_ZEROS)
    return facets or {ANY}


def _is_example(case: Case, d: TopK1Desc, x: np.ndarray, example: tuple[list[list[int]], int, int, str]) -> bool:
    rows, axis, k, direction = example
    same_input = d.input.sizes == (1, 1, 3, 4) and d.input.data_type == "FLOAT32" and x.tolist() == [[rows]]
    return same_input and (d.axis, d.k, d.axis_direction) == (axis, k, direction) and bool(case.expected)


def exercised(case: Case, inputs: Mapping[str, np.ndarray]) -> Facets:
    """Clause name (without the operator prefix) -> facets this valid case shows."""
    d = case.descriptor
    assert isinstance(d, TopK1Desc)
    x, rank, n, level = inputs[INPUT_TENSOR], len(d.input.sizes), d.input.sizes[d.axis], case.feature_level
    sequences = np.moveaxis(x, d.axis, -1).reshape(-1, n)
    f = new_facets()
    for name in ("sequence", "value-sizes", "index-sizes", "same-data-type", "same-dimension-count"):
        f[name].add(ANY)
    f["same-output-sizes"].add(ANY)
    f["select"].update({ANY, *special_values(x, d.input.data_type)})
    f["direction"].add(d.axis_direction)
    if d.k >= 2:
        f["values-sorted"].add(d.axis_direction)
    if len(sequences) > 1:
        f["index-relative"].add("innermost axis" if d.axis == rank - 1 else "outer axis")
    ties = _tie_facets(sequences, d.k, d.axis_direction == AxisDirection.DECREASING)
    if ties:
        f["ties"].update(ties)
        if d.axis_direction == AxisDirection.INCREASING:
            f["ties-any-direction"].add(ANY)
    f["axis-range"].add(f"rank {rank} axis {d.axis}")
    f["k-range"].add(K_ONE if d.k == 1 else K_LAST if d.k == n - 1 else K_MID)
    if d.axis_direction == AxisDirection.DECREASING:
        f["remark-top-k"].add(ANY)
    f.update({name: {ANY} for name, example in EXAMPLES.items() if _is_example(case, d, x, example)})
    if str(level) == "2_1":
        f["introduced-2_1"].add(ANY)
    table = "3_1" if level_at_least(level, "3_1") else "2_1"
    support_facets(f, f"support-{table}-input", [d.input.data_type], rank if table == "3_1" else None)
    support_facets(f, f"support-{table}-values", [d.input.data_type], None)
    support_facets(f, f"support-{table}-indices", [ANY] if table == "2_1" else [], rank if table == "3_1" else None)
    if rank == 4:  # the older revision's one table: 4 dimensions at every feature level
        support_facets(f, "support-older-input", [d.input.data_type], None)
        support_facets(f, "support-older-values", [d.input.data_type], None)
        f["support-older-indices"].add(ANY)
    return f


ENTRY = CoverageEntry(Operator.TOP_K1, "top_k1.yaml", REQUIRED, exercised)
