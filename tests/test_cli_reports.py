"""dmlconf report, dmlconf diff and --waivers: files written, exit codes that gate on unexpected results only."""

from __future__ import annotations

import os
import stat
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.model import Status
from conformance.results import Result, write_results
from conformance.run.artifacts import folder_name

ENV = {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04"}], "eps": [{"label": "cuda"}]}
TIES = Result("cases/t.yaml::ties", "TOP_K1", "cuda", Status.FAIL, "tie_order", "FLOAT32", "TopK-11", "ties differ")
SLICE = Result("cases/s.yaml::window", "SLICE1", "cuda", Status.PASS, data_type="FLOAT32")


def _results(path: Path, *results: Result) -> str:
    write_results(str(path), ENV, list(results))
    return str(path)


def _waivers(path: Path, case: str, device: str = "NVIDIA H100*") -> str:
    path.write_text(
        "known_failures:\n"
        f"  - case: '{case}'\n    ep: cuda\n    device: '{device}'\n"
        "    reason: RadixTopK is not index-stable\n    tracking: https://example.com/issues/1\n",
        encoding="utf-8",
    )
    return str(path)


def test_report_writes_every_format_beside_the_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = _results(tmp_path / "results.json", TIES, SLICE)
    assert main(["report", results]) == 1  # a FAIL and no waivers: the run failed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml", "report.html", "results.json", "summary.md"]
    suites = ET.parse(tmp_path / "junit.xml").getroot()
    assert (suites.get("tests"), suites.get("failures")) == ("2", "1")
    assert "cases/t.yaml::ties" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_a_waived_failure_passes_the_gate_and_junit_skips_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _results(tmp_path / "results.json", TIES, SLICE)
    waivers = _waivers(tmp_path / "known.yaml", "cases/t.yaml::tie*")
    assert main(["report", results, "--waivers", waivers, "--format", "junit", "--format", "html"]) == 0
    out = capsys.readouterr().out
    assert "known failures: 1 expected, 0 unexpected failure(s), 0 unexpected pass(es), 0 stale waiver(s)" in out
    suites = ET.parse(tmp_path / "junit.xml").getroot()
    assert (suites.get("failures"), suites.get("skipped")) == ("0", "1")
    assert not (tmp_path / "summary.md").exists()  # only the formats asked for


def test_an_unexpected_pass_fails_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = _results(tmp_path / "results.json", replace(TIES, status=Status.PASS, failure_kind=None), SLICE)
    waivers = _waivers(tmp_path / "known.yaml", "cases/t.yaml::ties")
    assert main(["report", results, "--waivers", waivers]) == 1
    assert (
        "UNEXPECTED PASS cases/t.yaml::ties [cuda]: https://example.com/issues/1 can be closed"
        in capsys.readouterr().out
    )


def test_a_waiver_for_another_device_leaves_the_failure_unexpected_and_is_not_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _results(tmp_path / "results.json", TIES)
    waivers = _waivers(tmp_path / "known.yaml", "cases/t.yaml::ties", device="AMD*")
    assert main(["report", results, "--waivers", waivers]) == 1
    out = capsys.readouterr().out
    assert "UNEXPECTED FAIL cases/t.yaml::ties [cuda]" in out
    assert "0 stale waiver(s)" in out and "warning" not in out  # another device's entry is no news here


def test_a_bad_waiver_file_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = _results(tmp_path / "results.json", TIES)
    bad = tmp_path / "known.yaml"
    bad.write_text("known_failures:\n  - case: x\n    ep: cuda\n    reason: r\n", encoding="utf-8")
    assert main(["report", results, "--waivers", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{bad}:2:") and "tracking" in err[0]


def test_diff_flags_an_injected_regression(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = _results(tmp_path / "old.json", replace(TIES, status=Status.PASS, failure_kind=None), SLICE)
    new = _results(tmp_path / "new.json", TIES, SLICE)
    markdown = tmp_path / "diff.md"
    assert main(["diff", old, new, "--markdown", str(markdown)]) == 1
    assert "cases/t.yaml::ties" in capsys.readouterr().out
    assert "cases/t.yaml::ties" in markdown.read_text(encoding="utf-8")
    assert main(["diff", old, old]) == 0


def test_report_on_a_file_that_is_not_results_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "results.json"
    bad.write_text("{}", encoding="utf-8")
    assert main(["report", str(bad)]) == 2
    assert capsys.readouterr().err == f"dmlconf: {bad}: schema_version: missing: not a results.json\n"


def test_no_waiver_passes_a_run_whose_ep_never_started(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idle = Result("cases/s.yaml::window", "SLICE1", "webgpu", Status.NOT_SUPPORTED, "ep_not_started", message="no GPU")
    results = _results(tmp_path / "results.json", TIES, idle)
    waivers = _waivers(tmp_path / "known.yaml", "*")  # waives every cuda failure; webgpu ran nothing
    assert main(["report", results, "--waivers", waivers]) == 1
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<title>DirectML conformance: INCOMPLETE/FAILED — EP webgpu executed none of its cases;" in html


def test_an_interrupted_run_fails_every_report_of_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "results.json"
    write_results(str(path), {**ENV, "interrupted": True, "planned_results": 5}, [SLICE])
    assert main(["report", str(path)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "INCOMPLETE/FAILED — interrupted: 1 of 5 cases run"
    assert "- **interrupted: 1 of 5 cases run**: the run fails" in (tmp_path / "summary.md").read_text(encoding="utf-8")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "INCOMPLETE/FAILED</span> — interrupted: 1 of 5 cases run" in html
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    assert [e.get("message") for e in junit.iter("error")] == ["interrupted: 1 of 5 cases run"]


def test_report_html_links_each_failure_to_its_artifacts_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --artifacts kept a folder for the FAIL (named by run/artifacts.py); results.json names its root.
    (tmp_path / "artifacts" / folder_name(TIES.case, TIES.ep)).mkdir(parents=True)
    env = {**ENV, "artifacts": str(tmp_path / "artifacts")}
    write_results(str(tmp_path / "results.json"), env, [TIES, SLICE])
    assert main(["report", str(tmp_path / "results.json"), "--out-dir", str(tmp_path / "reports")]) == 1
    html = (tmp_path / "reports" / "report.html").read_text(encoding="utf-8")
    # Relative to the page: the two folders can be moved together.
    assert f'href="../artifacts/{folder_name(TIES.case, TIES.ep)}/"' in html
    # A folder that is not there (another machine, or the save failed) gets no link.
    write_results(str(tmp_path / "results.json"), {**env, "artifacts": str(tmp_path / "elsewhere")}, [TIES])
    assert main(["report", str(tmp_path / "results.json"), "--out-dir", str(tmp_path / "reports")]) == 1
    assert "artifacts/" not in (tmp_path / "reports" / "report.html").read_text(encoding="utf-8")


def test_a_results_file_this_version_cannot_render_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = replace(TIES, details={"shape": "not a shape", "positions": [1]})
    results = _results(tmp_path / "results.json", odd)
    assert main(["report", results]) == 2  # refused where results.json is read, before any report is rendered
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"dmlconf: {results}: results[0].details.shape: expected a list, got text"]
    assert not (tmp_path / "report.html").exists()  # nothing half-written


def test_run_ends_with_the_verdict_that_report_gives_for_its_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The spec examples pass on the CPU EP; with no waiver file, the verdict says there was nothing to waive.
    examples = str(Path(__file__).parent.parent / "cases" / "top_k1" / "spec_examples.yaml")
    assert main(["run", examples, "--ep", "cpu", "--report-dir", str(tmp_path)]) == 0
    ran = capsys.readouterr().out.splitlines()[-1]
    assert main(["report", str(tmp_path / "results.json"), "--out-dir", str(tmp_path / "again")]) == 0
    assert ran == capsys.readouterr().out.splitlines()[-1] == "PASSED — no failures"


def test_the_shipped_waiver_file_on_a_cpu_run_prints_no_stale_waiver(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its entries are for cuda, webgpu and dml* on named GPUs: none is in a CPU run's scope, so none is stale (each
    # was a "warning: stale waiver ... matches no result" line before).
    root = Path(__file__).parent.parent
    examples = str(root / "cases" / "top_k1" / "spec_examples.yaml")
    waivers = str(root / "reports" / "known-failures.yaml")
    assert main(["run", examples, "--ep", "cpu", "--report-dir", str(tmp_path), "--waivers", waivers]) == 0
    out = capsys.readouterr().out
    assert "0 stale waiver(s)" in out and "stale waiver " not in out and "warning" not in out


def test_stale_waivers_are_one_console_line_and_listed_in_summary_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two entries whose cases ran on their EP and GPU and gave no verdict (the EP declined them); one for a case
    # that is not in the run (out of scope). The console says how many and where, in one line.
    declined = [
        Result(f"cases/t.yaml::big-{n}", "TOP_K1", "cuda", Status.NOT_SUPPORTED, "no_kernel", message="declined")
        for n in (1, 2)
    ]
    results = _results(tmp_path / "results.json", SLICE, *declined)
    known = tmp_path / "known.yaml"
    entry = "  - case: '{}'\n    ep: cuda\n    reason: r\n    tracking: ADO#{}\n"
    known.write_text(
        "known_failures:\n" + "".join(entry.format(case, n) for n, case in enumerate(["*big-1", "*big-2", "*gone"])),
        encoding="utf-8",
    )
    assert main(["report", results, "--waivers", str(known)]) == 0  # stale waivers do not fail the gate
    out = capsys.readouterr().out.splitlines()
    stale = [line for line in out if "stale waiver" in line]
    assert stale[0].endswith("0 unexpected pass(es), 2 stale waiver(s)")
    assert stale[1:] == [
        f"warning: 2 stale waiver(s) at {known}:2:5, {known}:6:5: their cases ran here but gave no verdict "
        "(NOT_SUPPORTED, NOT_EXPRESSIBLE, INVALID) (listed in summary.md and report.html)"
    ]
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "## Stale waivers (2)" in summary
    assert "| \\*big-1 | cuda | " in summary and "known.yaml:2:5 |" in summary and "known.yaml:6:5 |" in summary
    assert "gone" not in summary
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Stale waivers (2)" in html and f"{known}:6:5" in html and "gone" not in html


# --- output that cannot be written: one line naming the path and why, exit 2, nothing already written lost ---------


def _unwritable(tmp_path: Path, how: str, name: str) -> tuple[Path, Path]:
    """(a report folder that cannot be written as ``how`` says, the path the one line must name)."""
    if how == "folder under a file":
        (tmp_path / "a-file").write_text("kept\n", encoding="utf-8")
        return tmp_path / "a-file" / "out", tmp_path / "a-file" / "out"
    if how == "folder is a file":
        (tmp_path / "out").write_text("kept\n", encoding="utf-8")
        return tmp_path / "out", tmp_path / "out"
    (tmp_path / "out" / name).mkdir(parents=True)  # a folder where the file should be
    return tmp_path / "out", tmp_path / "out" / name


def _one_line_naming(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"dmlconf: {path}: cannot "), lines
    assert "Traceback" not in out + err
    return lines[0]


HOW = ["folder under a file", "folder is a file", "file is a folder"]


@pytest.mark.parametrize("how", HOW)
def test_report_into_a_folder_that_cannot_be_written_is_one_line(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _results(tmp_path / "results.json", TIES, SLICE)
    before = Path(results).read_bytes()
    out_dir, named = _unwritable(tmp_path, how, "summary.md")
    assert main(["report", results, "--out-dir", str(out_dir)]) == 2
    line = _one_line_naming(capsys, named)
    assert line.endswith(("Not a directory", "File exists", "Is a directory"))
    assert Path(results).read_bytes() == before  # the input, and anything else already there, as it was
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("how", HOW)
def test_merge_into_a_folder_that_cannot_be_written_is_one_line(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _results(tmp_path / "results.json", TIES, SLICE)
    report_dir, named = _unwritable(tmp_path, how, "results.json")
    assert main(["merge", results, "--report-dir", str(report_dir)]) == 2
    _one_line_naming(capsys, named)
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_merge_keeps_its_results_when_a_report_cannot_be_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _results(tmp_path / "results.json", TIES, SLICE)
    (tmp_path / "merged" / "report.html").mkdir(parents=True)
    assert main(["merge", results, "--report-dir", str(tmp_path / "merged")]) == 2
    _one_line_naming(capsys, tmp_path / "merged" / "report.html")
    assert main(["report", str(tmp_path / "merged" / "results.json"), "--format", "md"]) == 1  # the merge is kept


@pytest.mark.parametrize("how", ["under a file", "a folder"])
def test_diff_markdown_that_cannot_be_written_is_one_line_after_the_diff(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _results(tmp_path / "old.json", replace(TIES, status=Status.PASS, failure_kind=None), SLICE)
    new = _results(tmp_path / "new.json", TIES, SLICE)
    (tmp_path / "a-file").write_text("kept\n", encoding="utf-8")
    markdown = tmp_path / "a-file" / "diff.md" if how == "under a file" else tmp_path
    assert main(["diff", old, new, "--markdown", str(markdown)]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        f"dmlconf: {markdown}: cannot write: " + ("Not a directory" if how == "under a file" else "Is a directory")
    ]
    assert "cases/t.yaml::ties" in out  # the diff computed is still shown
    assert (tmp_path / "a-file").read_text(encoding="utf-8") == "kept\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_diff_markdown_on_a_full_disk_is_one_line_and_the_device_stays(capsys: pytest.CaptureFixture[str]) -> None:
    # A device is written in place: replacing /dev/full by a file renamed over it would be no write at all.
    results = str(Path(__file__).resolve().parent.parent / "reports" / "h100-cuda" / "results.json")
    assert main(["diff", results, results, "--markdown", "/dev/full"]) == 2
    out, err = capsys.readouterr()
    assert err.splitlines() == ["dmlconf: /dev/full: cannot write: No space left on device"]
    assert "no regressions" in out
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_run_whose_runner_died_fails_report_and_merge_whatever_the_waivers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    death = {"ep": "cuda", "count": 4, "cases": ["cases/t.yaml::ties"], "stderr": ["killed"]}
    results = str(tmp_path / "results.json")
    write_results(results, {**ENV, "runner_deaths": [death]}, [TIES, SLICE])
    waivers = _waivers(tmp_path / "known.yaml", "cases/t.yaml::tie*")
    assert main(["report", results, "--waivers", waivers]) == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("FAILED — EP cuda: the runner died 4 times while serving packs (cases in flight: ")
    other = _results(tmp_path / "other.json", replace(SLICE, case="cases/s.yaml::other"))
    assert main(["merge", other, results, "--report-dir", str(tmp_path / "merged"), "--waivers", waivers]) == 1
    assert "the runner died 4 times" in capsys.readouterr().out


# --- --quiet: only the unexpected results and the verdict ------------------------------------------------------------


def test_report_and_merge_quiet_print_only_the_unexpected_results_and_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = replace(TIES, case="cases/t.yaml::other")
    results = _results(tmp_path / "results.json", TIES, other, SLICE)
    waivers = _waivers(tmp_path / "known.yaml", "cases/t.yaml::ties")  # one failure known, the other not
    assert main(["report", results, "--waivers", waivers, "--quiet"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "UNEXPECTED FAIL cases/t.yaml::other [cuda]",
        "FAILED — 1 unexpected failure; 1 known failure waived",
    ]
    assert main(["merge", results, "--report-dir", str(tmp_path / "m"), "--waivers", waivers, "--quiet"]) == 1
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "UNEXPECTED FAIL cases/t.yaml::other [cuda]",
        "FAILED — 1 unexpected failure; 1 known failure waived",
    ]
    assert (tmp_path / "m" / "summary.md").is_file()  # quiet says less; it writes as much


def test_run_quiet_prints_only_the_unexpected_results_and_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    examples = str(Path(__file__).parent.parent / "cases" / "top_k1" / "spec_examples.yaml")
    fixed = "cases/top_k1/spec_examples.yaml::example-1"
    (tmp_path / "known.yaml").write_text(
        f"known_failures:\n  - case: '{fixed}'\n    ep: cpu\n    reason: once wrong\n"
        "    tracking: https://example.com/issues/9\n",
        encoding="utf-8",
    )
    argv = ["run", examples, "--ep", "cpu", "--report-dir", str(tmp_path / "r"), "--quiet"]
    assert main([*argv, "--waivers", str(tmp_path / "known.yaml")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"UNEXPECTED PASS {fixed} [cpu]: a known failure no longer fails, remove its waiver "
        f"({tmp_path / 'known.yaml'}:2:5): once wrong (https://example.com/issues/9)",
        "FAILED — 1 known failure no longer failing (remove the waiver)",
    ]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == ["PASSED — no failures"]
