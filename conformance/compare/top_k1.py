"""TOP_K1: a selection creates no values, so values compare bit for bit (any NaN matches any NaN), indices exactly.

Each sequence (one 1-D run along Axis) is checked at once for all sequences with NumPy; only sequences that
differ from the oracle are classified, by the first of these that applies (most severe first):

* ``index_out_of_range``: an actual index is negative or >= the axis size;
* ``duplicate_indices``: one input element selected twice;
* ``values``: an output value is not the input element at its reported index (values and indices disagree);
* ``wrong_elements``: the multiset of selected values differs from the oracle's (NaN equals NaN, -0 equals +0);
* ``not_sorted``: the right values, not in AxisDirection's order (NaN sorting as the largest value);
* ``tie_order``: the right values in the right order, different indices: tied elements not in ascending index
  order, or a later tied element selected at the K boundary (the spec's Example 3: [6, 6, 6, 6], K=3 -> 0, 1, 2).

The oracle sorts NaN as the largest value; the spec is silent. A sequence whose input holds NaN, whose output
is self-consistent (indices in range and distinct, values matching them) and whose non-NaN outputs are exactly
the oracle's choice among the numbers (the top m numbers, in AxisDirection's order, ties by ascending index,
m being how many numbers it selected) is ``nan_placement``: it differs only in where NaN sorts, which the spec
leaves open. When every differing sequence is one, the verdict is QUALITY_WARNING, else FAIL with the most
severe kind found (numbers must keep their order among themselves whatever NaN does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from conformance.compare.common import BoolArray, Metrics, Verdict, passed, same_bits, structure_problem
from conformance.compare.entry import CompareEntry, golden_bit_for_bit
from conformance.compare.top_k1_view import Sequences, topk_report
from conformance.model import (
    INPUT_TENSOR,
    OUTPUT_INDEX_TENSOR,
    OUTPUT_VALUE_TENSOR,
    TOP_K1_FAILURE_KINDS,
    AxisDirection,
    Case,
    Operator,
    Status,
    TopK1Desc,
)

NAN_PLACEMENT = "nan_placement"


@dataclass(frozen=True)
class Classified:
    """Per differing sequence (rows of ``Sequences``' 2-D views): its kind and whether it is a NaN placement."""

    rows: npt.NDArray[np.intp]
    kinds: npt.NDArray[np.str_]
    nan_placement: BoolArray


def compare_top_k1(
    case: Case, inputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], actual: Mapping[str, np.ndarray]
) -> Verdict:
    desc = case.descriptor
    if not isinstance(desc, TopK1Desc):
        raise TypeError(f"not a TOP_K1 case: {case.id}")
    for name, index in ((OUTPUT_VALUE_TENSOR, False), (OUTPUT_INDEX_TENSOR, True)):
        problem = structure_problem(name, expected[name], actual, index)
        if problem is not None:
            return problem
    seqs = Sequences.build(desc, inputs[INPUT_TENSOR], expected, actual)
    value_ok = same_bits(seqs.actual_values, seqs.expected_values)
    index_ok = seqs.actual_indices == seqs.expected_indices
    rows = np.flatnonzero(~(value_ok & index_ok).all(axis=1))
    metrics: Metrics = {
        "sequences": seqs.count,
        "failing_sequences": int(rows.size),
        "elements": int(seqs.expected_values.size),
        "value_mismatches": int(np.count_nonzero(~value_ok)),
        "index_mismatches": int(np.count_nonzero(~index_ok)),
    }
    if not rows.size:
        return passed(metrics)
    classified = classify(seqs, rows, desc.axis_direction)
    for kind in (*TOP_K1_FAILURE_KINDS, NAN_PLACEMENT):
        count = int(np.count_nonzero(classified.kinds == kind))
        if count:
            metrics[f"sequences_{kind}"] = count
    if classified.nan_placement.all():
        status, kind = Status.QUALITY_WARNING, NAN_PLACEMENT
    else:
        status = Status.FAIL
        kind = next(k for k in TOP_K1_FAILURE_KINDS if (classified.kinds == k).any())
    first = int(classified.rows[np.flatnonzero(classified.kinds == kind)[0]])
    message, details = topk_report(seqs, desc, kind, first, ~(value_ok & index_ok), metrics)
    return Verdict(status, kind, message, metrics, details)


def classify(seqs: Sequences, rows: npt.NDArray[np.intp], direction: AxisDirection) -> Classified:
    """The kind of each differing sequence, vectorized over ``rows``."""
    x, n = seqs.inputs[rows], seqs.axis_size
    av, ev = seqs.actual_values[rows], seqs.expected_values[rows]
    ai = seqs.actual_indices[rows]
    out_of_range = ((ai < 0) | (ai >= n)).any(axis=1)
    safe = np.where((ai < 0) | (ai >= n), 0, ai)
    ordered = np.sort(safe, axis=1)
    duplicate = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
    inconsistent = ~same_bits(np.take_along_axis(x, safe, axis=1), av).all(axis=1)
    a_key, e_key = value_key(av), value_key(ev)
    wrong = ~_nan_equal(np.sort(a_key, axis=1), np.sort(e_key, axis=1)).all(axis=1)
    unsorted = ~_sorted(a_key, direction).all(axis=1)
    masks = [out_of_range, duplicate, inconsistent, wrong, unsorted]
    kinds = np.select(masks, list(TOP_K1_FAILURE_KINDS[: len(masks)]), TOP_K1_FAILURE_KINDS[-1])
    placement = np.isnan(value_key(x)).any(axis=1) & ~(out_of_range | duplicate | inconsistent)
    if placement.any():
        placement[placement] = numbers_match(x[placement], av[placement], ai[placement], direction)
    kinds = np.where(placement, NAN_PLACEMENT, kinds)
    return Classified(rows, kinds, placement)


def value_key(values: np.ndarray) -> npt.NDArray[np.float64]:
    """Values as float64 for ordering: exact for every DML type; -0 becomes +0 (they tie); NaN stays NaN."""
    return np.asarray(values.astype(np.float64) + 0.0)


def numbers_match(x: np.ndarray, values: np.ndarray, indices: np.ndarray, direction: AxisDirection) -> BoolArray:
    """Per row: the non-NaN outputs, in output order, are the top m numbers of ``x`` (m = how many were output),
    in ``direction``'s order with ties by ascending index; NaN outputs may stand anywhere."""
    key = value_key(x)
    is_nan = np.isnan(key)
    number = np.where(is_nan, 0.0, key)
    position = np.broadcast_to(np.arange(key.shape[1]), key.shape)
    ranked = number if direction == AxisDirection.INCREASING else -number
    oracle = np.lexsort((position, ranked, is_nan), axis=-1)  # numbers first, in order, lowest index first
    output_nan = np.isnan(value_key(values))
    numbers_first = np.argsort(output_nan, axis=1, kind="stable")
    chosen = np.take_along_axis(indices, numbers_first, axis=1)
    k = indices.shape[1]
    counted = np.arange(k) < np.count_nonzero(~output_nan, axis=1)[:, None]
    return np.asarray(((chosen == oracle[:, :k]) | ~counted).all(axis=1))


def _nan_equal(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> BoolArray:
    return np.asarray((a == b) | (np.isnan(a) & np.isnan(b)))


def _sorted(key: npt.NDArray[np.float64], direction: AxisDirection) -> BoolArray:
    """Adjacent pairs in order under the oracle's ordering, where NaN is the largest value."""
    first, second = key[:, :-1], key[:, 1:]
    if direction == AxisDirection.DECREASING:
        return np.asarray(np.isnan(first) | (~np.isnan(second) & (first >= second)))
    return np.asarray(np.isnan(second) | (~np.isnan(first) & (first <= second)))


ENTRY = CompareEntry(Operator.TOP_K1, compare_top_k1, golden_bit_for_bit)
