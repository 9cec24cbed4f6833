"""The ep stage's operator table: each operator's ``EpEntry`` (entry.py), from its own module. The only module
of the stage that names every operator: adding one is its module (and its ``*_lowering`` module) and a line here.
An operator this table lacks raises ``MissingOperator``: no other operator's rule lowers or describes it."""

from __future__ import annotations

from conformance.ep import mvn1, slice1, top_k1
from conformance.ep.entry import EpEntry
from conformance.operators import OperatorTable

OPERATORS: OperatorTable[EpEntry] = OperatorTable(
    "conformance/ep/operators.py", (top_k1.ENTRY, mvn1.ENTRY, slice1.ENTRY)
)
