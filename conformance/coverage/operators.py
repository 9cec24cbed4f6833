"""The coverage stage's operator table: each operator's clause catalogue and the rules that read its clauses off a
case (``CoverageEntry``), from each operator's module."""

from __future__ import annotations

from conformance.coverage import mvn1, slice1, top_k1
from conformance.coverage.entry import CoverageEntry
from conformance.operators import OperatorTable

OPERATORS: OperatorTable[CoverageEntry] = OperatorTable(
    "conformance/coverage/operators.py", (top_k1.ENTRY, mvn1.ENTRY, slice1.ENTRY)
)
