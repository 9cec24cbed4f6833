"""``--quick`` selects what the README promises: a greedy cover of every clause and facet, plus every negative case
(``expect: invalid``; each only validates, so it costs nothing) and everything under cases/found/."""

from __future__ import annotations

from pathlib import Path

from conformance.cases.suite import collect
from conformance.coverage.mapping import quick

ROOT = Path(__file__).resolve().parents[1]


def test_quick_selects_every_negative_case_of_the_library() -> None:
    suite = collect([str(ROOT / "cases")])
    negatives = {e.id for e in suite.entries if e.expect_invalid is not None}
    assert negatives  # the library has negative cases: the check below can fail
    selected = {e.id for e in quick(suite).entries}
    assert sorted(negatives - selected) == []


def test_a_negative_case_that_cites_no_clause_is_selected_too(tmp_path: Path) -> None:
    """Data that do not match Sizes is the case format's rule, not a spec clause: still part of the gate."""
    (tmp_path / "cases.yaml").write_text(
        """\
operator: TOP_K1
cases:
  - id: valid
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [[[[1, 2, 3, 4]]]]}
    Axis: 3
    K: 2
  - id: data-does-not-match-sizes
    expect: invalid
    reason: Data must match Sizes
    InputTensor: {Sizes: [1, 1, 2, 4], DataType: FLOAT32, Data: [[[[1, 2, 3]]]]}
    Axis: 3
    K: 2
""",
        encoding="utf-8",
    )
    selected = [e.id.rpartition("::")[2] for e in quick(collect([str(tmp_path)])).entries]
    assert "data-does-not-match-sizes" in selected
