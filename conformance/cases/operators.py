"""The cases stage's operator table: each operator's module's ``CaseOperator``, the one place of the stage that names
every operator (adding one is its module and a line here: docs/architecture.md#adding-an-operator)."""

from __future__ import annotations

from conformance.cases import mvn1, slice1, top_k1
from conformance.cases.case_operator import CaseOperator
from conformance.operators import OperatorTable

OPERATORS: OperatorTable[CaseOperator] = OperatorTable(
    "conformance/cases/operators.py", (top_k1.ENTRY, mvn1.ENTRY, slice1.ENTRY)
)
