"""The oracle stage: a Case's descriptor handed to ``reference`` (the spec as NumPy code), through its operator's
module (``CaseOperator.oracle``). A case's own ``expected:`` outputs are checked against the oracle's by the compare
stage's rules (compare/golden.py)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from conformance.cases.operators import OPERATORS
from conformance.model import Case


def expected_outputs(case: Case, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What the spec says the operator writes, keyed by the spec's output tensor names."""
    return OPERATORS[case.operator].oracle(case.descriptor, inputs)
