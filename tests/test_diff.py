"""diff_runs and its reports, from hand-made old/new runs and from a committed run with one injected regression."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from conformance.environment import environment_from_json
from conformance.gate.diff import RunDiff, diff_runs
from conformance.gate.sides import EnvChange, environment_changes
from conformance.model import Status
from conformance.report.diff import render_diff_console, render_diff_markdown
from conformance.results import Result, read_results

ROOT = Path(__file__).resolve().parent.parent
P, F, E = Status.PASS, Status.FAIL, Status.ERROR


def result(case: str, status: Status, kind: str | None = None, ep: str = "dml", **fields: Any) -> Result:
    return Result(case=case, operator="TOP_K1", ep=ep, status=status, failure_kind=kind, **fields)


ENV: dict[str, Any] = {
    "gpus": [{"name": "GPU X", "driver_version": "580.1", "memory_total_mib": "1024"}],
    "onnxruntime": "1.30.0",
    "onnxruntime_packages": {"onnxruntime-directml": "1.30.0"},
    "eps": [{"label": "dml", "name": "DmlExecutionProvider", "options": {}}],
    "platform": "TestOS",
    "python": "3.11",
    "numpy": "2.0",
}

# (case, old, new): one of each kind of change the diff tells apart.
OLD = [
    result("stays-pass", P),
    result("pass-to-fail", P, message="m-ok"),
    result("severity-up", F, "tie_order"),
    result("severity-down", F, "wrong_elements"),
    result("unranked-kinds", F, "tolerance"),
    result("fixed", F, "values"),
    result("unsupported-now", P),
    result("invalid-to-error", Status.INVALID),
    result("drift-up", F, "tolerance", metrics={"max_ulp_error": 3, "mismatches": 4}),
    result("drift-down", F, "tolerance", metrics={"max_ulp_error": 7}),
    result("drift-nan", P, metrics={"max_abs_error": 0.5}),
    result("warning-both", Status.QUALITY_WARNING, "nan_placement", metrics={"failing_sequences": 1}),
    result("removed", P),
    result("stays-pass", P, ep="other-ep"),
]
NEW = [
    result("stays-pass", P),
    result("pass-to-fail", F, "wrong_elements", message="first | line\nsecond line", repro="dmlconf run a | b"),
    result("severity-up", F, "wrong_elements"),
    result("severity-down", F, "tie_order"),
    result("unranked-kinds", F, "non_finite"),
    result("fixed", P),
    result("unsupported-now", Status.NOT_SUPPORTED, "no_kernel"),
    result("invalid-to-error", E, "execution"),
    result("drift-up", F, "tolerance", metrics={"max_ulp_error": 7, "mismatches": 4}),
    result("drift-down", F, "tolerance", metrics={"max_ulp_error": 3}),
    result("drift-nan", P, metrics={"max_abs_error": "nan"}),
    result("warning-both", Status.QUALITY_WARNING, "nan_placement", metrics={"failing_sequences": 9}),
    result("added", F, "values"),
    result("stays-pass", P, ep="other-ep"),
]


def keys(entries: Any) -> list[tuple[str, str]]:
    return [(e.case, e.ep) if isinstance(e, Result) else (e.new.case, e.new.ep) for e in entries]


@pytest.fixture
def diff() -> RunDiff:
    return diff_runs(OLD, NEW, environment_from_json(ENV), environment_from_json(ENV))


def test_regressions_status_and_severity(diff: RunDiff) -> None:
    assert keys(diff.regressions) == [("pass-to-fail", "dml"), ("severity-up", "dml"), ("invalid-to-error", "dml")]
    assert diff.regressed
    # Each entry keeps both results, so a report can print the new one's message and repro.
    assert diff.regressions[0].old is OLD[1] and diff.regressions[0].new is NEW[1]


def test_fixes_other_changes_new_and_removed(diff: RunDiff) -> None:
    assert keys(diff.fixes) == [("fixed", "dml")]
    # Less severe, unranked kinds, and PASS -> NOT_SUPPORTED: shown, never a regression.
    assert keys(diff.other_changes) == [("severity-down", "dml"), ("unranked-kinds", "dml"), ("unsupported-now", "dml")]
    assert diff.new_cases == (NEW[12],)
    assert diff.removed_cases == (OLD[12],)
    assert diff.compared == 13


def test_metric_drift_only_what_grew(diff: RunDiff) -> None:
    drift = {d.new.case: d.metrics for d in diff.metric_drift}
    # 3 -> 7 grew; 7 -> 3 did not; a NaN is worse than any number; QUALITY_WARNING is not tracked.
    assert drift == {"drift-up": (("max_ulp_error", 3, 7),), "drift-nan": (("max_abs_error", 0.5, "nan"),)}


def test_no_change_is_no_regression() -> None:
    same = diff_runs(OLD, OLD)
    assert not same.regressed
    assert same.fixes == same.other_changes == same.new_cases == same.removed_cases == same.metric_drift == ()
    assert same.environment is None  # no environments given: not compared


def test_fix_and_drift_alone_do_not_regress() -> None:
    old = [result("a", F, "values"), result("b", F, "tolerance", metrics={"mismatches": 1})]
    new = [result("a", P), result("b", F, "tolerance", metrics={"mismatches": 2})]
    assert not diff_runs(old, new).regressed


def test_an_out_of_bounds_write_ranks_above_every_other_failure_kind() -> None:
    # An MVN1 tolerance failure (a kind TOP_K1's order does not rank) that now also writes outside its tensor is
    # worse; the way back is a change, not a regression.
    old = [result("a", F, "tolerance"), result("b", F, "index_out_of_range"), result("c", F, "out_of_bounds_write")]
    new = [result("a", F, "out_of_bounds_write"), result("b", F, "out_of_bounds_write"), result("c", F, "tolerance")]
    found = diff_runs(old, new)
    assert keys(found.regressions) == [("a", "dml"), ("b", "dml")]
    assert keys(found.other_changes) == [("c", "dml")]


def test_two_results_for_one_key_are_refused() -> None:
    with pytest.raises(ValueError, match="two results for a"):
        diff_runs([result("a", P), result("a", F)], [])


def test_environment_changes() -> None:
    new_env = copy.deepcopy(ENV)
    new_env["gpus"][0]["driver_version"] = "581.0"
    new_env["onnxruntime_packages"]["onnxruntime-directml"] = "1.31.0"
    new_env["eps"][0]["options"] = {"disable_metacommands": "true"}
    old, new = environment_from_json(ENV), environment_from_json(new_env)
    changes = environment_changes(old, new)
    assert changes[:2] == (EnvChange("driver", "580.1", "581.0"), EnvChange("onnxruntime-directml", "1.30.0", "1.31.0"))
    assert changes[0].line == "driver 580.1 → 581.0"
    assert [c.what for c in changes[2:]] == ["EP dml"]
    assert "disable_metacommands=true" in changes[2].new and "disable_metacommands" not in changes[2].old
    assert environment_changes(old, environment_from_json(copy.deepcopy(ENV))) == ()
    assert diff_runs([], [], old, new).environment == changes


def test_console_report(diff: RunDiff) -> None:
    text = render_diff_console(diff)
    assert "PASS → FAIL (wrong_elements)  pass-to-fail [dml]\n    first | line\n    repro: dmlconf run a | b" in text
    assert "FAIL (values) → PASS  fixed [dml]" in text
    assert "drift-up [dml] FAIL: max_ulp_error 3 → 7" in text
    assert "added [dml]: now FAIL (values)" in text and "removed [dml]: was PASS" in text
    assert "environment: GPU, driver" in text  # the same environment on both sides
    # The verdict says why: the three status regressions and the case the new run lost.
    assert text.endswith("==")
    assert text.endswith("\n== FAILED — 3 regression(s), 1 removed result(s) ==")


def test_counts_and_verdict_are_said_once_at_the_end(diff: RunDiff) -> None:
    # The counts and the verdict each once, as the console's last two lines (a CI log is read from its end).
    lines = render_diff_console(diff).splitlines()
    counts = next(line for line in lines if line.startswith("regressions "))
    assert lines[-2:] == [counts, "== FAILED — 3 regression(s), 1 removed result(s) =="]
    assert sum(1 for line in lines if "regressions 3, fixes 1" in line) == 1
    assert sum(1 for line in lines if line.startswith("== ")) == 1


def test_a_diff_failed_by_removed_results_alone_does_not_say_regressed() -> None:
    # "REGRESSED (897 removed result(s)): regressions 0" read as a contradiction: the verdict says FAILED and why.
    d = diff_runs([result("a", P), result("b", P)], [result("a", P)])
    console, markdown = render_diff_console(d), render_diff_markdown(d)
    assert console.endswith("\n== FAILED — 1 removed result(s) ==")
    assert "REGRESSED" not in console and "REGRESSED" not in markdown
    assert "**FAILED — 1 removed result(s)**: regressions 0," in markdown
    assert render_diff_console(diff_runs([result("a", P)], [result("a", P)])).endswith("== PASSED — no regressions ==")


@pytest.mark.parametrize(
    ("status", "kind"),
    [(Status.NOT_SUPPORTED, "ep_not_started"), (Status.DEVICE_LOST, "device_lost")],
)
def test_a_device_lost_mid_run_regresses_every_case_it_took(status: Status, kind: str) -> None:
    # The device went away after the first case: the EP could not open a session for the next ones (or lost the
    # device while running them). Each PASS that became that is a regression; the first case still passes.
    old = [result("a", P), result("b", P), result("c", Status.QUALITY_WARNING, "nan_placement")]
    new = [result("a", P), result("b", status, kind), result("c", status, kind)]
    d = diff_runs(old, new)
    assert keys(d.regressions) == [("b", "dml"), ("c", "dml")] and d.other_changes == ()
    assert d.regressed and not d.new_unwaivable  # the EP executed a case: regressions, not an idle EP, fail it
    # Back again: each is a fix; a case the EP declines (no kernel) is no failure, so PASS -> it stays a change.
    assert keys(diff_runs(new, old).fixes) == [("b", "dml"), ("c", "dml")]
    declined = diff_runs([result("a", P)], [result("a", Status.NOT_SUPPORTED, "no_kernel")])
    assert declined.regressions == () and keys(declined.other_changes) == [("a", "dml")]


def test_reports_cap_long_lists() -> None:
    old = [result(f"c{i}", P) for i in range(25)]
    new = [result(f"c{i}", F, "values", repro=f"repro-{i}") for i in range(25)]
    d = diff_runs(old, new)
    console = render_diff_console(d, max_listed=4)
    assert console.count("repro: ") == 4 and "… and 21 more" in console
    markdown = render_diff_markdown(d)
    assert markdown.count("`repro-") == 20
    # The note sits after a blank line: right under the table GFM would read it as one more row.
    assert "|\n\n… and 5 more\n" in markdown


def test_markdown_escapes_cells(diff: RunDiff) -> None:
    markdown = render_diff_markdown(diff)
    row = next(line for line in markdown.splitlines() if line.startswith("| pass-to-fail "))
    # Every pipe inside a cell is escaped: the row keeps its 6 columns (7 unescaped pipes).
    assert row.replace("\\|", "").count("|") == 7
    assert "first \\| line" in row and "second line" not in row and "`dmlconf run a \\| b`" in row
    assert markdown.startswith("# DirectML conformance diff\n")
    assert "**FAILED — 3 regression(s), 1 removed result(s)**: regressions 3, fixes 1," in markdown


def test_committed_run_with_one_injected_regression() -> None:
    document = read_results(str(ROOT / "reports" / "h100-cuda" / "results.json"))
    environment, results = document.environment, document.results
    index = next(i for i, r in enumerate(results) if r.status == Status.PASS)
    changed = list(results)
    changed[index] = dataclasses.replace(results[index], status=Status.FAIL, failure_kind="values", message="x")
    d = diff_runs(results, changed, environment, copy.deepcopy(environment))
    assert keys(d.regressions) == [(results[index].case, results[index].ep)]
    assert d.fixes == d.other_changes == d.new_cases == d.removed_cases == d.metric_drift == ()
    assert d.environment == () and d.compared == len(results)
