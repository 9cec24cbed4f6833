"""TOP_K1's sequence view (axis moved last, one row per sequence) and the human message for a differing case."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance.compare.common import (
    TABLE_ROWS,
    BoolArray,
    Details,
    Int64Array,
    Metrics,
    count_line,
    format_coords,
    format_list,
    format_value,
    headline,
    indent_table,
    mismatch_details,
    same_bits,
)
from conformance.model import INPUT_TENSOR, OUTPUT_INDEX_TENSOR, OUTPUT_VALUE_TENSOR, AxisDirection, TopK1Desc

SEQUENCE_SHOWN = 64  # elements of the first failing sequence a report shows side by side
TIES_SHOWN = 64  # tied input positions kept per tied value
_EXPLAIN = {
    "index_out_of_range": "an index outside the sequence",
    "duplicate_indices": "an input element selected more than once",
    "values": "output values are not the input elements at the output indices",
    "wrong_elements": "the selected values are not the oracle's top K",
    "not_sorted": "the right values in the wrong order",
    "tie_order": "the right values in the right order, but tied elements' indices differ",
    "nan_placement": "the numbers are the right ones in the right order, NaN sorts elsewhere than the oracle's "
    "choice (largest); the spec does not say (quality warning)",
}


@dataclass(frozen=True)
class Sequences:
    """Input and outputs as 2-D arrays, one row per sequence (axis moved last); indices as int64."""

    axis: int
    lead_shape: tuple[int, ...]
    inputs: np.ndarray
    expected_values: np.ndarray
    actual_values: np.ndarray
    expected_indices: Int64Array
    actual_indices: Int64Array
    index_dtypes: tuple[str, str]
    output_shape: tuple[int, ...]

    @classmethod
    def build(
        cls, desc: TopK1Desc, x: np.ndarray, expected: Mapping[str, np.ndarray], actual: Mapping[str, np.ndarray]
    ) -> Sequences:
        lead = x.shape[: desc.axis] + x.shape[desc.axis + 1 :]
        rows = math.prod(lead)

        def rows_of(array: np.ndarray) -> np.ndarray:
            return np.moveaxis(array, desc.axis, -1).reshape(rows, array.shape[desc.axis])

        e_idx, a_idx = expected[OUTPUT_INDEX_TENSOR], actual[OUTPUT_INDEX_TENSOR]
        return cls(
            desc.axis,
            lead,
            rows_of(x),
            rows_of(expected[OUTPUT_VALUE_TENSOR]),
            rows_of(actual[OUTPUT_VALUE_TENSOR]),
            rows_of(e_idx).astype(np.int64),
            rows_of(a_idx).astype(np.int64),
            (str(e_idx.dtype), str(a_idx.dtype)),
            tuple(e_idx.shape),
        )

    @property
    def count(self) -> int:
        return int(self.inputs.shape[0])

    @property
    def axis_size(self) -> int:
        return int(self.inputs.shape[1])

    def coords(self, row: int, position: int | str) -> tuple[int | str, ...]:
        """Coordinates in the original layout of element ``position`` (or ":") of sequence ``row``."""
        lead: list[int | str] = [int(c) for c in np.unravel_index(row, self.lead_shape)] if self.lead_shape else []
        return (*lead[: self.axis], position, *lead[self.axis :])


def topk_report(
    seqs: Sequences, desc: TopK1Desc, kind: str, row: int, mismatched: BoolArray, metrics: Metrics
) -> tuple[str, Details]:
    """The message and the report's details for the first ``kind`` sequence (``row``), from one look at it: its
    ties, why it is wrong and the first mismatching elements are worked out once for both."""
    found = _ties(seqs, row) if kind == "tie_order" else []
    why = _why(seqs, desc.axis_direction, kind, row, found)
    layout = _layout(seqs, mismatched)
    table = _table(seqs, layout)
    message = _message(seqs, desc, kind, row, mismatched, metrics, why, table)
    return message, _details(seqs, row, layout, why, table, found)


def _message(
    seqs: Sequences,
    desc: TopK1Desc,
    kind: str,
    row: int,
    mismatched: BoolArray,
    metrics: Metrics,
    why: list[str],
    table: tuple[list[str], list[list[str]]],
) -> str:
    """The headline, the summary, the first ``kind`` sequence in full, why it is wrong, and the first mismatching
    elements. ``mismatched``: per sequence, which of its K outputs differ from the oracle's (value or index); the
    headline counts them all and shows the first of sequence ``row``."""
    k, direction = desc.k, desc.axis_direction.value
    by_kind = ", ".join(
        f"{key.removeprefix('sequences_')} {v}" for key, v in metrics.items() if key.startswith("sequences_")
    )
    j = int(np.flatnonzero(mismatched[row])[0])
    at = [int(c) for c in seqs.coords(row, j)]
    expected = f"{format_value(seqs.expected_values[row, j])} (index {int(seqs.expected_indices[row, j])})"
    actual = f"{format_value(seqs.actual_values[row, j])} (index {int(seqs.actual_indices[row, j])})"
    count = int(np.count_nonzero(mismatched))
    lines = [
        f"{kind}: " + headline(count, int(metrics["elements"]), "differ", at, expected, actual),
        f"  TOP_K1 (Axis {desc.axis}, K {k}, {direction}): {_EXPLAIN[kind]}",
        f"  shape: {seqs.output_shape} for both outputs, as expected",
        f"  dtype: values {seqs.expected_values.dtype} as expected; indices expected {seqs.index_dtypes[0]}, "
        f"actual {seqs.index_dtypes[1]} (compared by value)",
        count_line("failing sequences", int(metrics["failing_sequences"]), int(metrics["sequences"])) + f" ({by_kind})",
        count_line("mismatched values", int(metrics["value_mismatches"]), int(metrics["elements"])),
        count_line("mismatched indices", int(metrics["index_mismatches"]), int(metrics["elements"])),
        f"  first {kind} sequence: {INPUT_TENSOR}{format_coords(seqs.coords(row, ':'))} ({seqs.axis_size} elements)",
        f"    input:            {format_list(seqs.inputs[row])}",
        f"    expected values:  {format_list(seqs.expected_values[row])}",
        f"    actual values:    {format_list(seqs.actual_values[row])}",
        f"    expected indices: {format_list(seqs.expected_indices[row])}",
        f"    actual indices:   {format_list(seqs.actual_indices[row])}",
        *["  " + line for line in why],
    ]
    headers, rows = table
    lines.append(f"  first {len(rows)} mismatching elements:")
    lines.extend(indent_table(headers, rows))
    return "\n".join(lines)


def _why(seqs: Sequences, direction: AxisDirection, kind: str, row: int, ties: list[dict[str, Any]]) -> list[str]:
    x, n = seqs.inputs[row], seqs.axis_size
    av, ai, ev = seqs.actual_values[row], seqs.actual_indices[row], seqs.expected_values[row]
    if kind == "index_out_of_range":
        j = int(np.flatnonzero((ai < 0) | (ai >= n))[0])
        return [f"output position {j}: index {int(ai[j])} is outside [0, {n})"]
    if kind == "duplicate_indices":
        repeated = sorted(i for i, c in Counter(ai.tolist()).items() if c > 1)
        return [f"input indices selected more than once: {repeated}"]
    if kind == "values":
        gathered = x[ai]
        j = int(np.flatnonzero(~same_bits(gathered, av))[0])
        at = format_coords(seqs.coords(row, int(ai[j])))
        found = format_value(gathered[j])
        return [f"output position {j}: value {format_value(av[j])}, but {INPUT_TENSOR}{at} = {found}"]
    if kind == "wrong_elements":
        got, want = Counter(_keys(av)), Counter(_keys(ev))
        missing, extra = ", ".join((want - got).elements()), ", ".join((got - want).elements())
        return [f"expected but not selected: [{missing}]; selected but not expected: [{extra}]"]
    if kind == "not_sorted":
        order = "descending" if direction == AxisDirection.DECREASING else "ascending"
        j = next(j for j in range(len(av) - 1) if not _in_order(av[j], av[j + 1], direction))
        pair = f"{format_value(av[j])}, {format_value(av[j + 1])}"
        return [f"output positions {j}, {j + 1} hold {pair}: not {order} (NaN counts as the largest value)"]
    if kind == "tie_order":
        return _tie_lines(ties)
    return ["the oracle's order puts NaN first for DECREASING and last for INCREASING; the EP's, the reverse"]


def _ties(seqs: Sequences, row: int) -> list[dict[str, Any]]:
    """For up to 3 tied values of sequence ``row`` whose indices differ: where the value is tied in the input, and
    the indices each side selected for it, in output order."""
    ev, ei = seqs.expected_values[row], seqs.expected_indices[row]
    ai = seqs.actual_indices[row]
    # Each side's values as keys once: a 65,536-element sequence takes a while to format.
    x_keys, ev_keys, av_keys = _keys(seqs.inputs[row]), _keys(ev), _keys(seqs.actual_values[row])
    found: list[dict[str, Any]] = []
    for key in list(dict.fromkeys(ev_keys[i] for i in np.flatnonzero(ei != ai)))[:3]:
        tied = [i for i, v in enumerate(x_keys) if v == key]
        want = [int(i) for i, v in zip(ei, ev_keys, strict=True) if v == key]
        got = [int(i) for i, v in zip(ai, av_keys, strict=True) if v == key]
        # The first TIES_SHOWN tied positions and their count: an axis of 65,536 equal values is one tie.
        found.append(
            {"value": key, "tied_at": tied[:TIES_SHOWN], "tied_count": len(tied), "expected": want, "actual": got}
        )
    return found


def _tie_lines(found: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for tie in found:
        want, got, tied = tie["expected"], tie["actual"], tie["tied_at"]
        why = (
            "tied elements must come in ascending index order"
            if sorted(want) == sorted(got)
            else "at the K boundary the lowest-indexed tied elements are selected (spec Example 3)"
        )
        more = tie["tied_count"] - min(len(tied), 16)
        shown = ", ".join(str(i) for i in tied[:16]) + (f", ... ({more} more)" if more else "")
        lines.append(f"value {tie['value']} is tied at input indices [{shown}]: expected {want}, actual {got}: {why}")
    return lines


def _details(
    seqs: Sequences,
    row: int,
    layout: BoolArray,
    why: list[str],
    table: tuple[list[str], list[list[str]]],
    found: list[dict[str, Any]],
) -> Details:
    """What a report draws: the first failing sequence side by side, its ties, and where the mismatches are."""
    details = mismatch_details(OUTPUT_VALUE_TENSOR, layout, *table)
    x, ev, ei = seqs.inputs[row], seqs.expected_values[row], seqs.expected_indices[row]
    av, ai = seqs.actual_values[row], seqs.actual_indices[row]
    details["sequence"] = {
        "where": f"{INPUT_TENSOR}{format_coords(seqs.coords(row, ':'))}",
        "input": [format_value(v) for v in x[:SEQUENCE_SHOWN]],
        "input_size": int(x.size),
        "expected_values": [format_value(v) for v in ev[:SEQUENCE_SHOWN]],
        "actual_values": [format_value(v) for v in av[:SEQUENCE_SHOWN]],
        "expected_indices": [int(i) for i in ei[:SEQUENCE_SHOWN]],
        "actual_indices": [int(i) for i in ai[:SEQUENCE_SHOWN]],
        "why": why,
    }
    if found:
        details["ties"] = found
    return details


def _keys(values: np.ndarray) -> list[str]:
    """Values as hashable text for multisets: -0 and +0 are one key, every NaN is "nan"."""
    return [format_value(v) for v in np.asarray(values.astype(np.float64) + 0.0, dtype=values.dtype)]


def _in_order(first: np.generic, second: np.generic, direction: AxisDirection) -> bool:
    a, b = float(first), float(second)
    if direction == AxisDirection.DECREASING:
        return math.isnan(a) or (not math.isnan(b) and a >= b)
    return math.isnan(b) or (not math.isnan(a) and a <= b)


def _layout(seqs: Sequences, mismatched: BoolArray) -> BoolArray:
    """Per-sequence mismatches (sequences x K) back in the output tensor's own layout."""
    return np.moveaxis(mismatched.reshape(*seqs.lead_shape, mismatched.shape[1]), -1, seqs.axis)


def _table(seqs: Sequences, layout: BoolArray) -> tuple[list[str], list[list[str]]]:
    headers = ["index", "expected value", "actual value", "expected index", "actual index"]
    rows: list[list[str]] = []
    for coords in np.argwhere(layout)[:TABLE_ROWS]:
        at = [int(c) for c in coords]
        lead = at[: seqs.axis] + at[seqs.axis + 1 :]
        row = int(np.ravel_multi_index(lead, seqs.lead_shape)) if lead else 0
        j = at[seqs.axis]
        values = (seqs.expected_values[row, j], seqs.actual_values[row, j])
        indices = (seqs.expected_indices[row, j], seqs.actual_indices[row, j])
        rows.append([str(tuple(at)), *(format_value(v) for v in values), *(str(int(i)) for i in indices)])
    return headers, rows
