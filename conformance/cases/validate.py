"""The spec's constraints, checked at the case's feature level, as one-line problems: each operator's rules are its
module's (``CaseOperator.validate``), DirectML's buffer-tensor rules on every layout validate_layout.py's.

Each rule quotes the sentence of the spec (reference/spec/) it enforces and cites that sentence's clause id
(reference/clauses/), so a negative case's problem names the clause it covers. Decisions where the
spec is ambiguous are marked DECISION and documented in docs/tolerances.md#spec-decisions; a problem that enforces
one where the spec's words refuse nothing names it (decisions.py).
"""

from __future__ import annotations

from conformance.cases.layouts import input_tensors, output_layouts
from conformance.cases.limits import DEFAULT_MAX_ELEMENTS
from conformance.cases.operators import OPERATORS
from conformance.cases.validate_checker import Checker
from conformance.cases.validate_layout import check_broadcast_data, check_layout
from conformance.model import Case
from conformance.problems import Problem


def validate(case: Case, max_elements: int = DEFAULT_MAX_ELEMENTS) -> list[Problem]:
    """Every constraint of the case's operator page at the case's feature level; [] when valid."""
    checker = Checker(case, max_elements)
    entry = OPERATORS[case.operator]
    if case.feature_level < entry.introduced:  # the page's "This operator was introduced in DML_FEATURE_LEVEL_..."
        message = f"{case.operator} was introduced in feature level {entry.introduced}, not {case.feature_level}"
        checker.fail("feature_level", message, f"{case.operator}.introduced-{entry.introduced}")
    entry.validate(checker, case.descriptor)
    _layouts(checker)
    return checker.problems


def _layouts(c: Checker) -> None:
    """DirectML's buffer-tensor rules on every tensor the case gives a layout. An input's once its Sizes are usable;
    the outputs' once the rest of the case is valid (their Sizes are derived from it)."""
    for name, tensor in input_tensors(c.case).items():
        if (tensor.strides is None and tensor.total_bytes is None) or any(size < 1 for size in tensor.sizes):
            continue
        readable = not any(p.field.startswith(f"{name}.") for p in c.problems)  # its Data can be materialized
        laid_out = check_layout(c, name, tensor.sizes, tensor.data_type, tensor.strides, tensor.total_bytes, False)
        if laid_out and readable:
            check_broadcast_data(c, name, tensor)
    if c.problems:
        return
    for name, layout in output_layouts(c.case).items():
        if layout.given:
            check_layout(c, name, layout.sizes, layout.data_type, layout.strides, layout.total_bytes, output=True)
