"""The compare stage's operator table: each operator's verdict rule and golden rule (``CompareEntry``), from each
operator's module. An operator this table lacks raises ``MissingOperator``: no other operator's rule judges it."""

from __future__ import annotations

from conformance.compare import mvn1, slice1, top_k1
from conformance.compare.entry import CompareEntry
from conformance.operators import OperatorTable

OPERATORS: OperatorTable[CompareEntry] = OperatorTable(
    "conformance/compare/operators.py", (top_k1.ENTRY, mvn1.ENTRY, slice1.ENTRY)
)
