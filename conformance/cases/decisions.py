"""The validator's decisions: the refusals the harness adds where the spec pages are silent or ambiguous, each named
once here and made where a DECISION comment marks it (validate.py, validate_checker.py, validate_layout.py).

A problem that enforces one carries its name (``Problem.decision``): a negative case refused by decisions alone is one
the spec does not forbid, so DirectML accepting it is not DirectML accepting what the spec forbids
(run/operator_api.py). Each is documented under ``WHERE``, its name in bold.
"""

from __future__ import annotations

WHERE = "docs/tolerances.md#spec-decisions"

NO_EMPTY_TENSOR = "Sizes at least 1"
MVN_AXES = "MVN1 Axes"
OUTPUTS_DO_NOT_OVERLAP = "Output elements do not overlap"
ONE_VALUE_PER_ADDRESS = "One value per address"

DECISIONS = (NO_EMPTY_TENSOR, MVN_AXES, OUTPUTS_DO_NOT_OVERLAP, ONE_VALUE_PER_ADDRESS)
