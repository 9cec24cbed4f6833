"""``dmlconf waivers suggest`` and ``dmlconf waivers lint``: entries written for a run's failures (which the loader
reads and which then waive them), and what is wrong with a waiver file against a case library.

The expected YAML and findings are written out by hand from the results and files the tests give.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_case_ids import CASES as LIBRARY  # cases one and wrong-golden

from conformance.cli.main import main
from conformance.environment import environment_from_json
from conformance.gate.suggest import quoted, rounded_up
from conformance.gate.waiver_file import load_waiver_file, waiver_text
from conformance.gate.waivers import apply_waivers
from conformance.model import Status
from conformance.results import Result, write_results
from conformance.whose import Triage, Whose

H100 = "NVIDIA H100 80GB HBM3"
LAVAPIPE = "llvmpipe (LLVM 15.0.7, 256 bits)"
ENV = {
    "gpus": [{"name": H100, "driver_version": "580.159.04"}],
    "eps": [
        {"label": "cuda", "name": "CUDAExecutionProvider"},
        {"label": "dml", "name": "DmlExecutionProvider", "directml": {"chain": {"adapter": {"description": LAVAPIPE}}}},
        {"label": "cpu", "name": "CPUExecutionProvider"},
    ],
}


def _topk(case: str, failing: int, status: Status = Status.FAIL, kind: str | None = "tie_order") -> Result:
    metrics = {"failing_sequences": failing, "sequences": 12}
    return Result(case, "TOP_K1", "cuda", status, kind, message="TOP_K1: tie_order: ties differ", metrics=metrics)


RESULTS = [
    _topk("cases/t.yaml::ties-1", 3),
    _topk("cases/t.yaml::ties-2", 5),
    _topk("cases/t.yaml::values", 0, Status.PASS, None),
    Result(
        "cases/m.yaml::f16[1x2]",
        "MEAN_VARIANCE_NORMALIZATION1",
        "cuda",
        Status.FAIL,
        "tolerance",
        message="OutputTensor: values differ\nmore",
        metrics={"max_ulp_error": 412, "max_abs_error": 0.00123, "mismatches": 3, "elements": 8, "max_ulp": 2},
    ),
    Result(
        "cases/d.yaml::a",
        "TOP_K1",
        "dml",
        Status.FAIL,
        "values",
        metrics={"failing_sequences": 1, "sequences": 4},
        triage=Triage(Whose.DRIVER, "fails on this adapter, passes on WARP"),
    ),
    Result("cases/t.yaml::flaky", "TOP_K1", "cuda", Status.FLAKY, "verdicts_differ", message="3 repeats: PASS, FAIL"),
    Result("cases/c.yaml::x", "SLICE1", "cpu", Status.ERROR, "golden_mismatch", message="expected differs"),
]
TODO = "tracking: BUG-0  # FILL IN the bug that tracks it: an http(s) URL or a bug id"
SUGGESTED = f"""\
# Suggested by dmlconf waivers suggest for 6 failure(s) of r.json.
# Review each entry: say what fails in its reason and replace BUG-0 with the bug that tracks it.
# Bounds are the largest measured, rounded up; patterns cover exactly this run's failing results.
known_failures:
  # cases/t.yaml on cuda: 2 failure(s)
  - case: "cases/t.yaml::ties-*"
    ep: "cuda"
    device: "{H100}"
    failure_kind: "tie_order"
    max_mismatches: 5
    reason: "TOP_K1: tie_order: ties differ"
    {TODO}
  # cases/m.yaml on cuda: 1 failure(s)
  - case: "cases/m.yaml::f16[[]1x2]"
    ep: "cuda"
    device: "{H100}"
    failure_kind: "tolerance"
    max_abs_error: 0.0013
    max_ulp: 420
    max_mismatches: 3
    reason: "OutputTensor: values differ"
    {TODO}
  # cases/d.yaml on dml: 1 failure(s)
  - case: "cases/d.yaml::a"
    ep: "dml"
    device: "{LAVAPIPE}"
    failure_kind: "values"
    max_mismatches: 1
    verdict: "driver"
    reason: "driver: fails on this adapter, passes on WARP"
    {TODO}
  # cases/c.yaml on cpu: 1 failure(s)
  - case: "cases/c.yaml::x"
    ep: "cpu"
    failure_kind: "golden_mismatch"
    reason: "expected differs"
    {TODO}
flaky:
  # cases/t.yaml on cuda: 1 failure(s)
  - case: "cases/t.yaml::flaky"
    ep: "cuda"
    device: "{H100}"
    reason: "3 repeats: PASS, FAIL"
    {TODO}
"""


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    write_results("r.json", ENV, RESULTS)
    return "r.json"


def test_suggest_writes_an_entry_for_each_failure_narrowed_by_its_signature(
    results: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["waivers", "suggest", results]) == 0
    assert capsys.readouterr().out == SUGGESTED


def test_the_suggestion_loads_and_waives_every_failure_it_was_made_for() -> None:
    suggested = waiver_text("suggested.yaml", SUGGESTED)
    gate = apply_waivers(environment_from_json(ENV), RESULTS, suggested.entries)
    assert (gate.unexpected_failures, gate.unexpected_passes, gate.failed) == ((), (), False)
    assert (len(gate.expected_failures), len(gate.flaky)) == (5, 1)


def test_with_a_waiver_file_only_what_it_does_not_cover_is_suggested(
    results: str, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("known.yaml").write_text(
        "known_failures:\n  - {case: 'cases/[tmd].yaml::*', ep: '*', reason: known, tracking: BUG-1}\n",
        encoding="utf-8",
    )
    assert main(["waivers", "suggest", results, "--waivers", "known.yaml"]) == 0
    out = capsys.readouterr().out
    cases = [line.split('"')[1] for line in out.splitlines() if line.startswith("  - case:")]
    assert cases == ["cases/c.yaml::x"]  # the flaky result is a failure the known entry waives
    assert load_waiver_file(_written(out)).entries[0].case == "cases/c.yaml::x"


def _written(text: str) -> str:
    Path("out.yaml").write_text(text, encoding="utf-8")
    return "out.yaml"


def test_suggest_with_nothing_to_suggest_still_loads(results: str, capsys: pytest.CaptureFixture[str]) -> None:
    Path("all.yaml").write_text("known_failures:\n  - {case: '*', ep: '*', reason: r, tracking: BUG-1}\n", "utf-8")
    assert main(["waivers", "suggest", results, "--waivers", "all.yaml"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "known_failures: []" and load_waiver_file(_written(out)).entries == ()


def test_suggest_takes_one_results_file(results: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["waivers", "suggest", results, results]) == 2
    assert capsys.readouterr().err == "dmlconf: waivers suggest takes one RESULTS.json, got 2 paths\n"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (412.0, "420"),
        (3.0, "3"),
        (0.00123, "0.0013"),
        (0.5, "0.5"),
        (0.0, "0"),
        (99.1, "100"),
        (1.5e-10, "0.00000000015"),
    ],
)
def test_a_bound_is_rounded_up_to_two_significant_digits(value: float, text: str) -> None:
    assert rounded_up(value) == text


def test_any_text_is_quoted_as_yaml_that_reads_back_the_same(tmp_path: Path) -> None:
    reason = 'a "quoted" \\ back\tslash, é, \u2028 line separator, \U0001f600'
    path = tmp_path / "w.yaml"
    path.write_text(f"known_failures:\n  - {{case: a, ep: b, reason: {quoted(reason)}, tracking: BUG-1}}\n", "utf-8")
    assert load_waiver_file(str(path)).entries[0].reason == reason


# --- lint -------------------------------------------------------------------------------------------------------

LINTED = """\
known_failures:
  - {case: "cases/x.yaml::one", ep: cuda, reason: r, tracking: BUG-1}
  - {case: "cases/x.yaml::one", ep: cuda, reason: again, tracking: BUG-2}
  - {case: "cases/x.yaml::*", ep: "cuda*", reason: r, tracking: BUG-3}
  - {case: "cases/x.yaml::*", ep: dml, failure_kind: values, reason: r, tracking: BUG-4}
  - {case: "cases/x.yaml::*", ep: dml, failure_kind: tie_order, reason: r, tracking: BUG-5}
  - {case: "cases/gone.yaml::*", ep: cuda, reason: r, tracking: BUG-0}
  - {case: "cases/x.yaml::wrong-golden", ep: webgpu, device: "NVIDIA*", reason: r, tracking: BUG-6}
  - {case: "cases/x.yaml::wrong-golden", ep: webgpu, device: "AMD*", reason: r, tracking: BUG-7}
flaky:
  - {case: "cases/x.yaml::one", ep: cuda, reason: r, tracking: BUG-9}
"""


@pytest.fixture
def library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A root (its marker names case ids from it) with cases/x.yaml: cases/x.yaml::one and ::wrong-golden."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".dmlconf-root").write_text("", encoding="utf-8")
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "x.yaml").write_text(LIBRARY, encoding="utf-8")
    return tmp_path


def test_lint_finds_duplicates_overlaps_flakes_dead_patterns_and_placeholders(
    library: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("w.yaml").write_text(LINTED, encoding="utf-8")
    assert main(["waivers", "lint", "w.yaml"]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "w.yaml:3:5: duplicate of the entry at line 2",
        "w.yaml:4:5: overlaps the entry at line 2 (both match cases/x.yaml::one on EP cuda*): the first in file "
        "order decides its results",
        "w.yaml:7:5: case pattern 'cases/gone.yaml::*' matches no case of cases",
        "w.yaml:7:5: tracking BUG-0 is waivers suggest's placeholder: name the bug that tracks it",
        "w.yaml:11:5: flaky, and a known failure at line 2 too (both match cases/x.yaml::one): the flaky entry "
        "decides its results",
    ]
    assert captured.err == "5 finding(s) in w.yaml\n"


def test_lint_of_a_clean_file_exits_0(library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("w.yaml").write_text(
        "known_failures:\n  - {case: 'cases/x.yaml::one', ep: cuda, reason: r, tracking: BUG-1}\n"
        "flaky:\n  - {case: 'cases/x.yaml::wrong-golden', ep: cuda, reason: r, tracking: BUG-2}\n",
        encoding="utf-8",
    )
    assert main(["waivers", "lint", "w.yaml", "cases"]) == 0
    assert capsys.readouterr().out == "ok: w.yaml against 2 case(s) of cases\n"


def test_lint_of_unreadable_input_exits_2(library: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["waivers", "lint", "missing.yaml"]) == 2
    assert capsys.readouterr().err == "dmlconf: missing.yaml: no such file\n"
    Path("bad.yaml").write_text("known_failures: 3\n", encoding="utf-8")
    assert main(["waivers", "lint", "bad.yaml"]) == 2
    assert capsys.readouterr().err == (
        "bad.yaml:1:1: known_failures: must be a list of known failures (write 'known_failures: []' for none), got 3\n"
    )
    Path("ok.yaml").write_text("known_failures: []\n", encoding="utf-8")
    assert main(["waivers", "lint", "ok.yaml", "nowhere"]) == 2
    assert capsys.readouterr().err == "dmlconf: nowhere: no such file or directory\n"
    assert main(["waivers", "lint", "ok.yaml", "--waivers", "ok.yaml"]) == 2
