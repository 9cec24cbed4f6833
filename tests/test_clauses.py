"""The clause catalogues: every quote is its page's own words, ids are stable and unique, pages are the user's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.coverage.clauses import KINDS, all_clauses, collapse_whitespace, load_catalogue, page_text
from conformance.model import Operator

SHARED_SPEC = Path(__file__).resolve().parents[1].parent / "shared" / "spec"
REFERENCE_SPEC = Path(__file__).resolve().parents[1] / "reference" / "spec"


@pytest.mark.parametrize("operator", list(Operator))
def test_every_quote_is_on_its_pages(operator: Operator) -> None:
    catalogue = load_catalogue(operator)
    pages = {name: collapse_whitespace(page_text(file)) for name, file in catalogue.pages.items()}
    missing = [
        f"{clause.id} ({page})"
        for clause in catalogue.clauses
        for page in clause.pages
        if collapse_whitespace(clause.quote) not in pages[page]
    ]
    assert missing == []


@pytest.mark.parametrize("operator", list(Operator))
def test_ids_are_unique_and_named_after_the_operator(operator: Operator) -> None:
    ids = [clause.id for clause in load_catalogue(operator).clauses]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(rf"{operator.value}\.[a-z0-9_]+(-[a-z0-9_]+)*", i) for i in ids), ids


def test_both_top_k1_revisions_are_catalogued() -> None:
    clauses = load_catalogue(Operator.TOP_K1).clauses
    only_older = {c.id for c in clauses if c.pages == ("older",)}
    only_current = {c.id for c in clauses if c.pages == ("current",)}
    # The revisions differ in exactly these rules (diff of the two pages).
    assert "TOP_K1.same-output-sizes" in only_older
    assert "TOP_K1.same-dimension-count" in only_current
    assert {"TOP_K1.support-3_1-input", "TOP_K1.support-2_1-input"} <= only_current
    assert {"TOP_K1.support-older-input", "TOP_K1.support-older-indices"} <= only_older


def test_every_table_row_is_a_support_clause() -> None:
    """Each tensor-support row of each page (a line starting "| InputTensor" etc.) has its own clause."""
    for operator in Operator:
        catalogue = load_catalogue(operator)
        for name, file in catalogue.pages.items():
            rows = [line.strip() for line in page_text(file).splitlines() if re.match(r"\|\s*\w+Tensor\s*\|", line)]
            quoted = {c.quote.strip() for c in catalogue.clauses if c.kind == "support" and name in c.pages}
            assert set(rows) <= quoted, (operator, name, set(rows) - quoted)


def test_kinds_are_known() -> None:
    assert {clause.kind for clause in all_clauses().values()} <= set(KINDS)


@pytest.mark.skipif(not SHARED_SPEC.is_dir(), reason="the user's ../shared/spec is not beside this checkout")
def test_shipped_pages_are_the_users_pages() -> None:
    for page in sorted(SHARED_SPEC.glob("*.md")):
        assert (REFERENCE_SPEC / page.name).read_bytes() == page.read_bytes(), page.name
