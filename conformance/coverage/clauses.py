"""The spec's clauses: every normative statement of the operators' pages, with a stable id.

The catalogues live beside the oracle (``reference/clauses/*.yaml``, each operator's named by its ``CoverageEntry``)
with the pages they quote (``reference/spec/``, copies of ../shared/spec). Each clause's ``quote`` is its page's
sentence verbatim, so a reader can find it with the browser's search, and tests/test_clauses.py proves it is there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.abc import Traversable

import yaml

from conformance.coverage.operators import OPERATORS
from conformance.model import Operator

KINDS = ("semantic", "constraint", "example", "support", "availability", "remark", "recommendation")
# Kinds that say what a valid descriptor is: each needs a case the validator rejects for it.
NEEDS_NEGATIVE = frozenset({"constraint", "support", "availability"})


@dataclass(frozen=True)
class Clause:
    """One normative statement: ``pages`` names the revisions (current, older) that state it."""

    id: str
    operator: Operator
    kind: str
    pages: tuple[str, ...]
    quote: str

    @property
    def needs_negative(self) -> bool:
        return self.kind in NEEDS_NEGATIVE


@dataclass(frozen=True)
class Catalogue:
    operator: Operator
    pages: Mapping[str, str]  # revision name -> file name under reference/spec/
    clauses: tuple[Clause, ...]


def _reference_dir(name: str) -> Traversable:
    return resources.files("reference").joinpath(name)


def load_catalogue(operator: Operator) -> Catalogue:
    """The clause catalogue of ``operator``; a malformed catalogue is a bug in the package (ValueError)."""
    file_name = OPERATORS[operator].catalogue
    raw = yaml.safe_load(_reference_dir("clauses").joinpath(file_name).read_text(encoding="utf-8"))
    if raw.get("operator") != operator.value:
        raise ValueError(f"{file_name}: operator is {raw.get('operator')!r}, not {operator.value}")
    pages = dict(raw["pages"])
    clauses = []
    for entry in raw["clauses"]:
        clause = Clause(entry["id"], operator, entry["kind"], tuple(entry["pages"]), str(entry["quote"]))
        if clause.kind not in KINDS or not set(clause.pages) <= set(pages):
            raise ValueError(f"{file_name}: {clause.id}: kind or pages not in the catalogue's lists")
        clauses.append(clause)
    return Catalogue(operator, pages, tuple(clauses))


def all_clauses() -> dict[str, Clause]:
    """Every clause of every operator, by id, in catalogue order."""
    return {clause.id: clause for operator in Operator for clause in load_catalogue(operator).clauses}


def page_text(file_name: str) -> str:
    """A spec page as shipped in reference/spec/."""
    return _reference_dir("spec").joinpath(file_name).read_text(encoding="utf-8")


def collapse_whitespace(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
