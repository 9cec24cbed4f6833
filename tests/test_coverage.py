"""Spec coverage: facts come from a case's descriptor and data, negatives from the validator's citations."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cases.parse import Entry
from conformance.cases.suite import collect
from conformance.cli.main import main
from conformance.coverage.clauses import all_clauses
from conformance.coverage.mapping import build_map, case_coverage, quick, quick_selection, required_facets

ROOT = Path(__file__).resolve().parents[1]


def _entries(tmp_path: Path, text: str) -> list[Entry]:
    path = tmp_path / "case.yaml"
    path.write_text(text, encoding="utf-8")
    return list(collect([str(path)]).entries)


TIES = """
operator: TOP_K1
feature_level: "3_1"
cases:
  - id: c
    InputTensor: {Sizes: [2, 5], DataType: INT8, Data: [[4, 4, 1, 0, 4], [1, 2, 3, 4, 5]]}
    Axis: 1
    K: 2
    AxisDirection: INCREASING
"""


def test_a_valid_case_covers_what_its_data_shows(tmp_path: Path) -> None:
    (entry,) = _entries(tmp_path, TIES)
    positive = case_coverage(entry).positive
    # Row 0, smallest two of [4, 4, 1, 0, 4]: 0 and 1, then 4 (not selected): no tie inside the top-K or at the
    # boundary; row 1 has none either. So the tie clauses are not exercised.
    assert "TOP_K1.ties" not in positive
    assert positive["TOP_K1.axis-range"] == {"rank 2 axis 1"}
    assert positive["TOP_K1.k-range"] == {"1 < K < axis size - 1"}
    assert positive["TOP_K1.support-3_1-input"] == {"INT8", "rank 2"}
    assert positive["TOP_K1.index-relative"] == {"innermost axis"}
    assert "TOP_K1.support-older-input" not in positive  # the older page allows 4 dimensions only


def test_ties_at_the_k_boundary_count(tmp_path: Path) -> None:
    (entry,) = _entries(tmp_path, TIES.replace("K: 2", "K: 3"))
    positive = case_coverage(entry).positive
    # Row 0 ascending: 0, 1, 4 | 4, 4 -- the third value ties with the ones left out.
    assert positive["TOP_K1.ties"] == {"short axis (< 256)"}
    assert positive["TOP_K1.ties-any-direction"] == {""}


def test_a_negative_case_covers_the_clauses_its_rejection_cites(tmp_path: Path) -> None:
    negative = "    expect: invalid\n    OutputIndexTensor: {DataType: INT32}"
    text = TIES.replace("    AxisDirection: INCREASING", negative)
    (entry,) = _entries(tmp_path, text)
    coverage = case_coverage(entry)
    assert coverage.positive == {}
    # Both revisions' tables list UINT32 only for the indices.
    assert coverage.negative == {"TOP_K1.support-3_1-indices", "TOP_K1.support-older-indices"}


def test_a_clause_missing_a_required_facet_is_not_covered(tmp_path: Path) -> None:
    (entry,) = _entries(tmp_path, TIES)
    rows = {row.clause.id: row for row in build_map([case_coverage(entry)]).clauses}
    assert not rows["TOP_K1.axis-range"].covered
    assert "rank 1 axis 0" in rows["TOP_K1.axis-range"].missing
    assert not rows["TOP_K1.k-range"].covered  # no negative case
    assert rows["TOP_K1.sequence"].covered


def test_every_rule_names_a_catalogued_clause() -> None:
    assert set(required_facets()) <= set(all_clauses())


def test_the_suite_covers_every_clause() -> None:
    suite = collect([str(ROOT / "cases")])
    coverage = build_map([case_coverage(e) for e in suite.entries])
    assert coverage.unknown == ()
    assert [row.clause.id for row in coverage.uncovered] == []


def test_the_quick_selection_covers_every_clause_with_few_cases() -> None:
    suite = collect([str(ROOT / "cases")])
    selected = quick(suite)
    assert len(selected.entries) < len(suite.entries) / 4
    assert {e.id for e in suite.entries if "/found/" in e.id} <= {e.id for e in selected.entries}
    coverage = build_map([case_coverage(e) for e in selected.entries])
    assert [row.clause.id for row in coverage.uncovered] == []


def test_quick_selection_is_greedy_and_deterministic(tmp_path: Path) -> None:
    entries = _entries(tmp_path, TIES.replace("    K: 2\n", "    K: 2\n    matrix: {K: [1, 2, 3, 4]}\n"))
    coverages = [case_coverage(e) for e in entries]
    first = quick_selection(coverages)
    assert first == quick_selection(coverages)
    # K = 1, a mid K and K = 4 (axis size - 1) each add a k-range facet, so at least three are needed.
    assert 3 <= len(first) <= 4


def test_committed_coverage_map_is_current(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    fresh = tmp_path / "coverage.md"
    assert main(["coverage", "--output", str(fresh)]) == 0
    committed = (ROOT / "reports" / "coverage.md").read_text(encoding="utf-8")
    generated = fresh.read_text(encoding="utf-8").replace(f"--output {fresh}", "")
    assert generated.replace("dmlconf coverage `", "dmlconf coverage`") == committed, "run: dmlconf coverage"
