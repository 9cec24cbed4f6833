"""The operator seam's one shape: each stage's table of what it knows of every operator of ``model.Operator``.

A stage keeps one module per operator (its knowledge of that operator: how to parse it, lower it, judge it, ...) and
one registry module that builds an ``OperatorTable`` from them: adding an operator is a new module per stage and one
line in each registry (docs/architecture.md#adding-an-operator). A table is checked complete by
tests/test_operator_seam.py, which names any table that lacks an operator; a lookup of an operator a table lacks
raises ``MissingOperator``, naming the table, instead of falling through to another operator's rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol, TypeVar

from conformance.model import Operator


class OperatorEntry(Protocol):
    """A stage's entry for one operator: whatever it holds, it says which operator it is for."""

    @property
    def operator(self) -> Operator: ...


EntryT = TypeVar("EntryT", bound=OperatorEntry, covariant=True)


class MissingOperator(LookupError):
    """A table asked for an operator it has no entry for: a registry line is missing (a bug of the harness)."""


class OperatorTable(Mapping[Operator, EntryT]):
    """``name`` says where the table lives ("conformance/compare/operators.py"); entries are keyed by their own
    ``operator``, so that an entry cannot be filed under another operator's name. Two entries for one operator are
    refused when the table is built (at import)."""

    def __init__(self, name: str, entries: Iterable[EntryT]) -> None:
        self.name = name
        table: dict[Operator, EntryT] = {}
        for entry in entries:
            if entry.operator in table:
                raise ValueError(f"{name}: two entries for {entry.operator}")
            table[entry.operator] = entry
        self._entries = table
        _TABLES.append(self)

    def __getitem__(self, operator: Operator) -> EntryT:
        try:
            return self._entries[operator]
        except KeyError:
            raise MissingOperator(f"{self.name} has no entry for operator {operator}") from None

    def __iter__(self) -> Iterator[Operator]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def missing(self) -> tuple[Operator, ...]:
        """The operators of ``model.Operator`` this table has no entry for, in the enum's order."""
        return tuple(op for op in Operator if op not in self._entries)


_TABLES: list[OperatorTable[OperatorEntry]] = []


def tables() -> Mapping[str, OperatorTable[OperatorEntry]]:
    """Every table built so far (import the stages' registries first), by name."""
    return {table.name: table for table in _TABLES}
