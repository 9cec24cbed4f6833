"""Compare the oracle's outputs (expected) with an EP's (actual) and give a verdict people can act on.

* SLICE1 copies and TOP_K1 selects: no new values, so values compare bit for bit as unsigned integers of the
  element's width (-0.0 and +0.0 differ), except that any NaN matches any NaN; TOP_K1's indices compare exactly,
  by value (ONNX returns int64, DML uint32). See ``compare_top_k1`` for TOP_K1's per-sequence failure kinds.
* MEAN_VARIANCE_NORMALIZATION1 computes: a per-element tolerance in absolute error or ULPs, with documented
  defaults that a case's ``Tolerance`` overrides; see ``compare_mvn1``.

A message's first line, all that one-line reports show, says how many elements failed and the first of them (or,
for MVN1, the largest error beyond the tolerance); the rest follows pytest-regressions' style: the rule, shape and
dtype, counts, largest errors, then a table of the first mismatches. Metrics hold plain JSON types only.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from conformance.compare.common import Verdict
from conformance.compare.mvn1 import compare_mvn1, default_tolerance
from conformance.compare.slice1 import compare_slice
from conformance.compare.top_k1 import compare_top_k1
from conformance.model import Case, Operator

__all__ = ["Verdict", "compare", "default_tolerance"]


def compare(
    case: Case, inputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], actual: Mapping[str, np.ndarray]
) -> Verdict:
    """The verdict on ``actual`` for ``case``; keys are DML tensor names (OutputTensor, OutputValueTensor...)."""
    if case.operator == Operator.TOP_K1:
        return compare_top_k1(case, inputs, expected, actual)
    if case.operator == Operator.MEAN_VARIANCE_NORMALIZATION1:
        return compare_mvn1(case, inputs, expected, actual)
    return compare_slice(expected, actual)
