"""The verdict travels with the results: results.json records the waiver file a run was gated with, and report,
merge and diff apply it again without --waivers (and say so when given another).

The measured bug this guards: ``dmlconf report`` of a run gated with ``--waivers``, re-rendered without it, turned
PASSED into FAILED (exit 1).
"""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
from test_case_ids import CASES  # two TOP_K1 cases; wrong-golden is an ERROR on any EP

from conformance.cli.main import main
from conformance.environment import environment_from_json
from conformance.gate.recorded import record
from conformance.gate.waiver_file import load_waiver_file
from conformance.gate.waivers import apply_waivers
from conformance.model import Status
from conformance.results import Result, read_results, write_results

# The wrong golden is an ERROR on any EP; the waiver file names it (line 2 is its entry).
WAIVERS = """\
known_failures:
  - case: "*::wrong-golden"
    ep: cpu
    reason: the golden is wrong
    tracking: https://example.com/bugs/1
"""
OTHER = WAIVERS.replace("bugs/1", "bugs/2")
GPU_ENV = {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04"}], "eps": [{"label": "cuda"}]}


def _junit(path: Path) -> list[tuple[str | None, str]]:
    """(case name, outcome) of each testcase of a junit.xml: what CI's test tab shows."""
    outcomes = []
    for case in ET.parse(path).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes.append((case.get("name"), kinds[0] if kinds else "passed"))
    return sorted(outcomes, key=lambda item: str(item[0]))


@pytest.fixture
def gated_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """A CPU run of two cases, one an ERROR that the waiver file waives, gated with it: exit 0."""
    monkeypatch.chdir(tmp_path)
    Path("x.yaml").write_text(CASES, encoding="utf-8")
    Path("known.yaml").write_text(WAIVERS, encoding="utf-8")
    assert main(["run", "x.yaml", "--ep", "cpu", "-j", "0", "--report-dir", "run", "--waivers", "known.yaml"]) == 0
    capsys.readouterr()
    return tmp_path / "run"


def test_the_run_records_the_file_it_was_gated_with(gated_run: Path) -> None:
    recorded = read_results(str(gated_run / "results.json")).environment.waivers
    assert recorded is not None
    assert (recorded.path, recorded.text, recorded.applied_lines) == ("known.yaml", WAIVERS, (2,))
    assert recorded.sha256 == hashlib.sha256(WAIVERS.encode("utf-8")).hexdigest()


def test_report_without_waivers_keeps_the_run_s_verdict(gated_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ran = _junit(gated_run / "junit.xml")
    assert dict(ran) == {"x.yaml::one": "passed", "x.yaml::wrong-golden": "skipped"}
    Path("known.yaml").unlink()  # the file is gone: the record is what gates the report
    assert main(["report", str(gated_run / "results.json"), "--out-dir", "again"]) == 0
    lines = capsys.readouterr().out.splitlines()
    sha = hashlib.sha256(WAIVERS.encode("utf-8")).hexdigest()[:12]
    assert f"gated with the run's recorded known.yaml (sha256 {sha})" in lines
    assert lines[-1] == "PASSED — 1 known failure waived"
    assert _junit(Path("again") / "junit.xml") == ran


def test_report_with_another_file_uses_it_and_says_so(gated_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("other.yaml").write_text(OTHER, encoding="utf-8")
    code = main(["report", str(gated_run / "results.json"), "--out-dir", "again", "--waivers", "other.yaml", "--quiet"])
    assert code == 0
    mine, theirs = (hashlib.sha256(t.encode("utf-8")).hexdigest()[:12] for t in (OTHER, WAIVERS))
    assert capsys.readouterr().out.splitlines() == [
        f"gated with other.yaml (sha256 {mine}), not the run's recorded known.yaml (sha256 {theirs})",
        "PASSED — 1 known failure waived",
    ]
    assert "bugs/2" in (Path("again") / "junit.xml").read_text(encoding="utf-8")


def test_report_with_the_same_file_says_nothing_of_it(gated_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(gated_run / "results.json"), "--waivers", "known.yaml", "--quiet"]) == 0
    assert capsys.readouterr().out.splitlines() == ["PASSED — 1 known failure waived"]


def test_a_recorded_file_whose_text_was_edited_is_one_line(gated_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = gated_run / "results.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["environment"]["waivers"]["text"] = OTHER  # its sha256 no longer says this text
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["report", str(path), "--out-dir", "again"]) == 2
    assert capsys.readouterr().err == (
        f"dmlconf: {path}: environment.waivers: its sha256 is not that of its text (known.yaml)\n"
    )


def test_an_older_results_file_without_the_record_reads_as_ungated(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    write_results(str(path), GPU_ENV, [Result("c::x", "TOP_K1", "cuda", Status.PASS)])
    assert read_results(str(path)).environment.waivers is None


# --- merge and diff ---------------------------------------------------------------------------------------------


def _gated_file(tmp_path: Path, name: str, waivers: str, *results: Result) -> str:
    """A results.json of ``results`` gated with the waiver file ``waivers`` (its record as run writes it)."""
    waiver_path = tmp_path / f"{name}.yaml"
    waiver_path.write_text(waivers, encoding="utf-8")
    file = load_waiver_file(str(waiver_path))
    env = environment_from_json(GPU_ENV)
    env = replace(env, waivers=record(file, apply_waivers(env, results, file.entries)))
    path = tmp_path / f"{name}.json"
    write_results(str(path), env.to_json(), list(results))
    return str(path)


CUDA_WAIVERS = WAIVERS.replace("ep: cpu", "ep: cuda")
FAILING = Result("x.yaml::wrong-golden", "TOP_K1", "cuda", Status.ERROR, "golden_mismatch")
PASSING = Result("x.yaml::one", "TOP_K1", "cuda", Status.PASS)


def test_merge_of_runs_gated_with_one_file_keeps_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = _gated_file(tmp_path, "a", CUDA_WAIVERS, FAILING)
    two = _gated_file(tmp_path, "b", CUDA_WAIVERS, PASSING)
    assert main(["merge", one, two, "--report-dir", str(tmp_path / "merged"), "--quiet"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "PASSED — 1 known failure waived"
    merged = read_results(str(tmp_path / "merged" / "results.json")).environment.waivers
    assert merged is not None and (merged.text, merged.applied_lines) == (CUDA_WAIVERS, (2,))


def test_merge_of_runs_gated_with_different_files_needs_one_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = _gated_file(tmp_path, "a", CUDA_WAIVERS, FAILING)
    two = _gated_file(tmp_path, "b", CUDA_WAIVERS.replace("bugs/1", "bugs/2"), PASSING)
    assert main(["merge", one, two, "--report-dir", str(tmp_path / "merged")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"dmlconf: {one} was gated with {tmp_path / 'a.yaml'} (sha256 ") and err.endswith(
        ": give --waivers FILE to gate the merged run with one file\n"
    )
    chosen = tmp_path / "chosen.yaml"
    chosen.write_text(CUDA_WAIVERS.replace("bugs/1", "bugs/3"), encoding="utf-8")
    args = ["merge", one, two, "--report-dir", str(tmp_path / "merged"), "--waivers", str(chosen), "--quiet"]
    assert main(args) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"gated with {chosen} (sha256 ") and " and " in first  # both recorded files named
    merged = read_results(str(tmp_path / "merged" / "results.json")).environment.waivers
    assert merged is not None and merged.path == str(chosen)


FLAKY_WAIVERS = """\
flaky:
  - case: "x.yaml::*"
    ep: cuda
    reason: the result varies from run to run
    tracking: BUG-7
"""


def test_diff_gives_the_new_run_s_verdict_and_tolerates_its_flaky_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old.json"
    write_results(str(old), GPU_ENV, [replace(FAILING, status=Status.PASS, failure_kind=None), PASSING])
    new = _gated_file(tmp_path, "new", FLAKY_WAIVERS, FAILING, PASSING)
    assert main(["diff", str(old), new]) == 0  # PASS -> ERROR, but a flaky entry tolerates it
    out = capsys.readouterr().out
    assert "the new run's gate: PASSED — 1 flaky result tolerated" in out
    assert "Flaky, tolerated by the waiver file (1)" in out
    assert "regressions 0, flaky, tolerated 1" in out
    # Without the record (an ungated new run), the same change is a regression.
    plain = tmp_path / "plain.json"
    write_results(str(plain), GPU_ENV, [FAILING, PASSING])
    assert main(["diff", str(old), str(plain)]) == 1
