"""The ep stage's operator table: each operator's ``EpOperator`` entry (operator_entry.py), from its own module. The
only module of the stage that names every operator: adding one is its module and a line here."""

from __future__ import annotations

from conformance.ep import mvn1, slice1, top_k1
from conformance.ep.operator_entry import EpOperator
from conformance.operators import OperatorTable

OPERATORS: OperatorTable[EpOperator] = OperatorTable(
    "conformance/ep/operators.py", (top_k1.ENTRY, mvn1.ENTRY, slice1.ENTRY)
)
