"""Compare the oracle's outputs (expected) with an EP's (actual) and give a verdict people can act on.

Each operator's rule is its ``CompareEntry.verdict`` (compare/operators.py tables them; the rules themselves are in
each operator's module): an operator that creates no values (it copies or selects) compares its values bit for bit
as unsigned integers of the element's width (-0.0 and +0.0 differ), except that any NaN matches any NaN, and
integers (indices) exactly, by value (ONNX returns int64, DML uint32); one that computes compares within a
per-element tolerance in absolute error or ULPs, with documented defaults that a case's ``Tolerance`` overrides.

A message's first line, all that one-line reports show, says how many elements failed and the first of them (or,
for a tolerance, the largest error beyond it); the rest follows pytest-regressions' style: the rule, shape and
dtype, counts, largest errors, then a table of the first mismatches. Metrics hold plain JSON types only.
"""

from __future__ import annotations

from conformance.compare.common import Verdict
from conformance.compare.entry import Tensors
from conformance.compare.operators import OPERATORS
from conformance.model import Case

__all__ = ["Verdict", "compare"]


def compare(case: Case, inputs: Tensors, expected: Tensors, actual: Tensors) -> Verdict:
    """The verdict on ``actual`` for ``case``, by its operator's rule; keys are DML tensor names (OutputTensor,
    OutputValueTensor...). An operator compare/operators.py lacks raises ``MissingOperator``."""
    return OPERATORS[case.operator].verdict(case, inputs, expected, actual)
