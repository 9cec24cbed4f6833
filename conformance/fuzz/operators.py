"""The fuzz stage's operator table: each operator's strategy and the feature level it draws at (``FuzzEntry``),
from each operator's module."""

from __future__ import annotations

from conformance.fuzz import mvn1, slice1, top_k1
from conformance.fuzz.entry import FuzzEntry
from conformance.operators import OperatorTable

OPERATORS: OperatorTable[FuzzEntry] = OperatorTable(
    "conformance/fuzz/operators.py", (top_k1.ENTRY, mvn1.ENTRY, slice1.ENTRY)
)
