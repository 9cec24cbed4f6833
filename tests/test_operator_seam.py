"""The operator seam: every stage's operator table (conformance/operators.py) has an entry for every operator of
``model.Operator``, and a table that lacks one is named, as is a lookup of the missing operator."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

import pytest

import conformance
from conformance.model import Operator
from conformance.operators import MissingOperator, OperatorTable, tables

# The stages that know operators, each through one registry module (docs/architecture.md#adding-an-operator).
REGISTRIES: set[str] = {  # each stage's registry adds its line here as it is built
    "conformance/cases/operators.py",
    "conformance/compare/operators.py",
    "conformance/coverage/operators.py",
    "conformance/ep/operators.py",
    "conformance/fuzz/operators.py",
}


def _import_everything() -> None:
    for info in pkgutil.walk_packages(conformance.__path__, "conformance."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def test_every_registry_exists_and_is_complete() -> None:
    _import_everything()
    found = {name: table for name, table in tables().items() if name.startswith("conformance/")}
    assert set(found) >= REGISTRIES, f"registries never built: {sorted(REGISTRIES - set(found))}"
    incomplete = {name: [str(op) for op in table.missing()] for name, table in found.items() if table.missing()}
    assert incomplete == {}, f"operator tables lacking operators: {incomplete}"


@dataclass(frozen=True)
class _Entry:
    operator: Operator


def test_a_table_lacking_an_operator_says_which_and_where() -> None:
    table = OperatorTable("scratch/table.py", [_Entry(Operator.TOP_K1)])
    assert table.missing() == tuple(op for op in Operator if op is not Operator.TOP_K1)
    with pytest.raises(MissingOperator, match=r"scratch/table\.py has no entry for operator SLICE1"):
        table[Operator.SLICE1]
    assert table[Operator.TOP_K1] == _Entry(Operator.TOP_K1)


def test_two_entries_for_one_operator_are_refused() -> None:
    with pytest.raises(ValueError, match="two entries for TOP_K1"):
        OperatorTable("scratch/twice.py", [_Entry(Operator.TOP_K1), _Entry(Operator.TOP_K1)])
