"""dmlconf diff as a gate: results that vanish or were never compared fail it, and --match case compares runs of
different EPs or devices case by case, each side saying which EP and device it is. The results.json files are
written here by hand, as another tool or an older version could have written them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.cli.main import main

CASES = ("cases/t.yaml::a", "cases/t.yaml::b", "cases/t.yaml::c", "cases/t.yaml::d")


def _gpu(name: str, driver: str) -> dict[str, Any]:
    return {"gpus": [{"name": name, "driver_version": driver}]}


def _dml(label: str, adapter: str) -> dict[str, Any]:
    """An EP record as a DirectML run under Wine writes it: the adapter is the device the EP ran on."""
    chain = {"transport": "wine+vkd3d-proton", "adapter": {"description": adapter}}
    return {"label": label, "name": "DmlExecutionProvider", "directml": {"version": "1.15.4", "chain": chain}}


def _write(path: Path, environment: dict[str, Any], results: list[tuple[str, str, str]]) -> str:
    """A results.json of (case, EP, status) rows, as JSON text: not through the harness's own writer."""
    rows = [{"case": case, "operator": "TOP_K1", "ep": ep, "status": status} for case, ep, status in results]
    path.write_text(json.dumps({"schema_version": 1, "environment": environment, "results": rows}), encoding="utf-8")
    return str(path)


def _run(ep: str, statuses: dict[str, str] | None = None, cases: tuple[str, ...] = CASES) -> list[Any]:
    return [(case, ep, (statuses or {}).get(case, "PASS")) for case in cases]


def test_results_missing_from_new_are_regressions_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _gpu("GPU X", "1.0") | {"eps": [{"label": "cuda", "name": "CUDAExecutionProvider"}]}
    old = _write(tmp_path / "old.json", env, _run("cuda"))
    new = _write(tmp_path / "new.json", env, _run("cuda", cases=CASES[:1]))  # lost 3 of 4, all PASS
    assert main(["diff", old, new]) == 1
    out = capsys.readouterr().out
    assert "== FAILED — 3 removed result(s) ==" in out
    for case in CASES[1:]:  # each listed
        assert f"{case} [cuda]: was PASS" in out
    assert main(["diff", old, new, "--allow-removed"]) == 0
    assert "== PASSED — no regressions ==" in capsys.readouterr().out


def test_two_runs_with_nothing_in_common_fail_with_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _write(tmp_path / "old.json", _gpu("GPU X", "1.0"), _run("dml"))
    new = _write(tmp_path / "new.json", _gpu("GPU X", "1.0"), _run("cuda"))
    markdown = tmp_path / "diff.md"
    for extra in ([], ["--allow-removed"]):  # allowing removals does not make a diff of nothing pass
        assert main(["diff", old, new, "--markdown", str(markdown), *extra]) == 1
        out = capsys.readouterr().out
        line = (
            "no (case, EP) in common: the old run has 4 result(s) on dml, the new run 4 on cuda; "
            "--match case compares them case by case"
        )
        assert line in out.splitlines()
        assert "nothing compared" in out and line in markdown.read_text(encoding="utf-8")


def test_match_case_compares_one_driver_against_another(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Driver A and driver B, both DirectML: the EP text differs (another device_id), so (case, EP) pairs nothing.
    old_env = _gpu("Vendor GPU", "31.0.101") | {"eps": [_dml("dml", "Vendor GPU (driver A)")]}
    new_env = _gpu("Vendor GPU", "32.0.200") | {"eps": [_dml("dml:device_id=1", "Vendor GPU (driver B)")]}
    old = _write(tmp_path / "old.json", old_env, _run("dml", {CASES[2]: "FAIL"}))
    new = _write(tmp_path / "new.json", new_env, _run("dml:device_id=1", {CASES[1]: "FAIL"}))
    assert main(["diff", old, new]) == 1  # nothing in common by (case, EP)
    capsys.readouterr()
    markdown = tmp_path / "diff.md"
    assert main(["diff", old, new, "--match", "case", "--markdown", str(markdown)]) == 1
    out = capsys.readouterr().out
    assert "PASS → FAIL  cases/t.yaml::b [dml → dml:device_id=1]" in out  # the regression, one of 4 compared
    assert "FAIL → PASS  cases/t.yaml::c [dml → dml:device_id=1]" in out
    assert "(of 4 cases in both runs)" in out and "== FAILED — 1 regression(s) ==" in out
    # Each side says which EP and device it is, on the console and in the Markdown.
    old_side = next(line for line in out.splitlines() if line.startswith("old: "))
    new_side = next(line for line in out.splitlines() if line.startswith("new: "))
    assert "dml (DmlExecutionProvider, DirectML 1.15.4" in old_side and "driver A" in old_side
    assert "31.0.101" in old_side and "32.0.200" not in old_side
    assert "dml:device_id=1 (DmlExecutionProvider" in new_side and "driver B" in new_side and "32.0.200" in new_side
    text = markdown.read_text(encoding="utf-8")
    described = "dml (DmlExecutionProvider, DirectML 1.15.4, through wine+vkd3d-proton on Vendor GPU (driver A))"
    assert f"- old: {described}; GPU Vendor GPU, driver 31.0.101" in text
    assert "- new: dml:device\\_id=1 (DmlExecutionProvider" in text and "driver B" in text
    assert "| cases/t.yaml::b | dml → dml:device\\_id=1 | PASS | FAIL |" in text


def test_match_case_compares_directml_against_cuda(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = _gpu("GPU X", "1.0")
    old = _write(tmp_path / "old.json", env, _run("cuda"))
    new = _write(tmp_path / "new.json", env, [*_run("dml", cases=CASES[:3]), ("cases/t.yaml::e", "dml", "PASS")])
    assert main(["diff", old, new, "--match", "case"]) == 1  # d is missing on dml
    out = capsys.readouterr().out
    assert "cases/t.yaml::d [cuda]: was PASS" in out and "cases/t.yaml::e [dml]: now PASS" in out
    assert "(of 3 cases in both runs)" in out
    assert main(["diff", old, new, "--match", "case", "--allow-removed"]) == 0


def test_match_case_refuses_a_run_of_several_eps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    env = _gpu("GPU X", "1.0")
    old = _write(tmp_path / "old.json", env, _run("cuda") + _run("webgpu"))
    new = _write(tmp_path / "new.json", env, _run("dml"))
    assert main(["diff", old, new, "--match", "case"]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "dmlconf: --match case: the old run has results on 2 EPs (cuda, webgpu); pairing by case needs one EP a run"
    ]
    assert captured.out == ""


def test_a_new_run_whose_ep_never_started_is_a_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A driver that no longer starts the EP: every PASS becomes NOT_SUPPORTED (ep_not_started), which alone is only
    # an "other change"; the run itself failed, and the diff must not vouch for it.
    env = _gpu("GPU X", "1.0") | {"eps": [{"label": "cuda", "name": "CUDAExecutionProvider"}]}
    old = _write(tmp_path / "old.json", env, _run("cuda"))
    rows = [
        {"case": case, "operator": "TOP_K1", "ep": "cuda", "status": "NOT_SUPPORTED", "failure_kind": "ep_not_started"}
        for case in CASES
    ]
    new = tmp_path / "new.json"
    new.write_text(json.dumps({"schema_version": 1, "environment": env, "results": rows}), encoding="utf-8")
    markdown = tmp_path / "diff.md"
    assert main(["diff", old, str(new), "--markdown", str(markdown)]) == 1
    out = capsys.readouterr().out
    assert "the new run fails: EP cuda executed none of its cases" in out.splitlines()
    assert "== FAILED — the new run fails, 4 regression(s) ==" in out
    assert "the new run fails: EP cuda executed none of its cases" in markdown.read_text(encoding="utf-8")


def test_a_device_lost_after_the_first_case_fails_the_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The EP started and passed a case, then its device went away: every later case is NOT_SUPPORTED
    # (ep_not_started). The EP executed a case, so the run is not "idle"; each lost PASS is a regression.
    env = _gpu("GPU X", "1.0") | {"eps": [{"label": "dml", "name": "DmlExecutionProvider"}]}
    old = _write(tmp_path / "clean.json", env, _run("dml"))
    rows = [{"case": CASES[0], "operator": "TOP_K1", "ep": "dml", "status": "PASS"}] + [
        {"case": case, "operator": "TOP_K1", "ep": "dml", "status": "NOT_SUPPORTED", "failure_kind": "ep_not_started"}
        for case in CASES[1:]
    ]
    new = tmp_path / "broken.json"
    new.write_text(json.dumps({"schema_version": 1, "environment": env, "results": rows}), encoding="utf-8")
    assert main(["diff", old, str(new)]) == 1
    out = capsys.readouterr().out
    assert "Regressions (3)" in out and "== FAILED — 3 regression(s) ==" in out
    assert "PASS → NOT_SUPPORTED (ep_not_started)  cases/t.yaml::b [dml]" in out


def test_a_new_run_that_report_fails_for_a_runner_death_under_a_pack_fails_the_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The runner died under a pack; each case ran again alone and passed: no result stands for the death, which
    # fails the run whatever its results. diff must fail it as report does.
    env = _gpu("GPU X", "1.0") | {"eps": [{"label": "dml", "name": "DmlExecutionProvider"}]}
    old = _write(tmp_path / "old.json", env, _run("dml"))
    death = {"ep": "dml", "count": 1, "in_packs": 1, "cases": list(CASES[:2]), "stderr": ["killed"]}
    new = _write(tmp_path / "new.json", env | {"runner_deaths": [death]}, _run("dml"))
    assert main(["report", new]) == 1
    reason = "EP dml: the runner died 1 time while serving packs (cases in flight: cases/t.yaml::a, cases/t.yaml::b)"
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"FAILED — {reason}")
    assert main(["diff", old, new]) == 1
    out = capsys.readouterr().out
    assert f"the new run fails: {reason}; each case of a pack was run again alone" in out.splitlines()
    assert "== FAILED — the new run fails ==" in out
    # A death with one case in flight is that case's result, which diff judges as any.
    alone = death | {"in_packs": 0, "cases": list(CASES[:1])}
    assert main(["diff", old, _write(tmp_path / "alone.json", env | {"runner_deaths": [alone]}, _run("dml"))]) == 0


def test_an_interrupted_new_run_is_a_regression_even_with_allow_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _gpu("GPU X", "1.0")
    old = _write(tmp_path / "old.json", env, _run("cuda"))
    cut = env | {"interrupted": True, "planned_results": 4}  # as dmlconf run records a Ctrl-C after one result
    new = _write(tmp_path / "new.json", cut, _run("cuda", cases=CASES[:1]))
    assert main(["diff", old, new, "--allow-removed"]) == 1
    out = capsys.readouterr().out
    assert "the new run fails: interrupted: 1 of 4 cases run" in out.splitlines()
    # The old run's completeness does not matter: what it lacks shows as new cases.
    assert main(["diff", new, old]) == 0


def test_one_run_of_several_directml_builds_is_diffed_build_against_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old_build, new_build = "dml:directml=1.13.1", "dml:directml=1.14.1"
    records = [_dml(old_build, "GPU X") | {"options": {"directml": "1.13.1"}}, _dml(new_build, "GPU X")]
    records[0]["directml"] = records[0]["directml"] | {"version": "1.13.1"}
    rows = _run(old_build, {CASES[0]: "FAIL"}) + _run(new_build, {CASES[1]: "FAIL"})
    both = _write(tmp_path / "matrix.json", _gpu("GPU X", "1.0") | {"eps": records}, rows)
    assert main(["diff", both, both, "--old-ep", old_build, "--new-ep", new_build, "--match", "case"]) == 1
    out = capsys.readouterr().out
    assert f"old: {old_build} (DmlExecutionProvider, DirectML 1.13.1" in out
    assert f"new: {new_build} (DmlExecutionProvider, DirectML 1.15.4" in out
    assert "(of 4 cases in both runs)" in out
    assert f"PASS → FAIL  {CASES[1]} [{old_build} → {new_build}]" in out
    assert f"FAIL → PASS  {CASES[0]} [{old_build} → {new_build}]" in out
    # The two builds' EP lines are compared with each other, not each with nothing.
    ep_lines = [line for line in out.splitlines() if line.startswith("EP ")]
    assert len(ep_lines) == 1 and "DirectML 1.13.1" in ep_lines[0].split(" → ")[0] and " → " in ep_lines[0]


def test_picking_builds_of_one_run_says_what_is_wrong_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _run("dml:directml=1.13.1") + _run("dml")
    both = _write(tmp_path / "matrix.json", _gpu("GPU X", "1.0"), rows)
    assert main(["diff", both, both, "--old-ep", "dml:directml=1.13.1", "--new-ep", "dml"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "dmlconf: --old-ep dml:directml=1.13.1 and --new-ep dml are two EPs: pair them with --match case"
    ]
    assert main(["diff", both, both, "--old-ep", "dml:directml=1.14.1", "--new-ep", "dml", "--match", "case"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"dmlconf: --old-ep dml:directml=1.14.1: {both}: no result on EP dml:directml=1.14.1 (its results are on: "
        "dml:directml=1.13.1, dml)"
    ]
    # One EP picked on each side of one file, the same: compared with itself, no change.
    assert main(["diff", both, both, "--old-ep", "dml", "--new-ep", "dml"]) == 0
    assert "(of 4 (case, EP) results in both runs)" in capsys.readouterr().out


def test_one_ep_of_an_interrupted_run_is_judged_by_its_own_share_of_the_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Interrupted with 8 (case, EP) results planned, 4 for each of its 2 EPs: a ran all 4, b 2 of them.
    env = _gpu("GPU X", "1.0") | {"interrupted": True, "planned_results": 8}
    cut = _write(tmp_path / "cut.json", env, _run("a") + _run("b", cases=CASES[:2]))
    assert main(["diff", cut, cut, "--old-ep", "b", "--new-ep", "a", "--match", "case"]) == 0
    assert "incomplete" not in capsys.readouterr().out  # a's share is whole, though the run was cut
    assert main(["diff", cut, cut, "--old-ep", "a", "--new-ep", "b", "--match", "case", "--allow-removed"]) == 1
    assert "the new run fails: interrupted: 2 of 4 cases run" in capsys.readouterr().out.splitlines()


def test_one_side_picked_from_a_file_that_is_both_sides_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    both = _write(tmp_path / "matrix.json", _gpu("GPU X", "1.0"), _run("dml:directml=1.13.1") + _run("dml"))
    assert main(["diff", both, both, "--old-ep", "dml", "--match", "case"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "dmlconf: --old-ep picks one EP of a file that is both OLD and NEW: pick the other side's with --new-ep too"
    ]


def test_one_ep_of_a_run_is_not_failed_by_another_ep_s_runner_death(tmp_path: Path) -> None:
    # --old-ep/--new-ep take one EP of a run of several: a death under a pack on EP b fails b, not a.
    env = _gpu("GPU X", "1.0") | {"eps": [{"label": "a", "name": "A"}, {"label": "b", "name": "B"}]}
    both = [*_run("a"), *_run("b")]
    old = _write(tmp_path / "old.json", env, both)
    death = {"ep": "b", "count": 1, "in_packs": 1, "cases": list(CASES[:2]), "stderr": ["killed"]}
    new = _write(tmp_path / "new.json", env | {"runner_deaths": [death]}, both)
    assert main(["diff", old, new, "--old-ep", "a", "--new-ep", "a", "--match", "case"]) == 0
    assert main(["diff", old, new, "--old-ep", "b", "--new-ep", "b", "--match", "case"]) == 1
