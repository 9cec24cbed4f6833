"""A reader of dmlconf's output that goes away (``dmlconf run ... | head -1``) costs no report: results.json and every
report are written, the exit code is the run's verdict, and no traceback is printed (conformance/cli/output.py).
Each run here is a real process whose stdout is a real pipe, closed by its reader early."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "cases" / "top_k1" / "spec_examples.yaml"
MANY = REPO / "cases" / "slice1" / "library.yaml"  # enough cases (over 100) for plain progress lines on stderr
REPORTS = ("results.json", "report.html", "summary.md", "junit.xml")
BUFFERING = {"buffered": None, "unbuffered": "1"}


def _command(cases: Path, reports: Path) -> list[str]:
    return [sys.executable, "-m", "conformance", "run", str(cases), "--ep", "cpu", "-j", "1", f"--report-dir={reports}"]


def _environ(buffering: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    value = BUFFERING[buffering]
    return environ if value is None else environ | {"PYTHONUNBUFFERED": value}


def _reference(cases: Path, tmp_path: Path) -> tuple[int, list[dict[str, str]]]:
    """The same run with stdout read to its end: its exit code and results are what a closed pipe must not change."""
    reports = tmp_path / "reference"
    done = subprocess.run(_command(cases, reports), capture_output=True, text=True, timeout=300)
    return done.returncode, json.loads((reports / "results.json").read_text(encoding="utf-8"))["results"]


def _check(code: int, stderr: str, reports: Path, reference: tuple[int, list[dict[str, str]]]) -> None:
    for sign in ("Traceback", "BrokenPipeError", "Exception ignored"):
        assert sign not in stderr, stderr
    assert code == reference[0], stderr
    assert sorted(path.name for path in reports.iterdir() if path.name in REPORTS) == sorted(REPORTS)
    results = json.loads((reports / "results.json").read_text(encoding="utf-8"))["results"]
    assert [(r["case"], r["status"]) for r in results] == [(r["case"], r["status"]) for r in reference[1]]


@pytest.mark.parametrize("buffering", sorted(BUFFERING))
def test_head_1_reads_one_line_and_the_run_still_writes_every_report(tmp_path: Path, buffering: str) -> None:
    reports = tmp_path / "reports"
    with subprocess.Popen(
        _command(EXAMPLES, reports), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_environ(buffering)
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()  # as head -1 does: the run goes on with nobody reading its stdout
        stderr = process.stderr.read().decode()
        code = process.wait(timeout=300)
    assert first.startswith(b"running 4 case(s)")
    _check(code, stderr, reports, _reference(EXAMPLES, tmp_path))


@pytest.mark.parametrize("buffering", sorted(BUFFERING))
def test_a_stdout_closed_before_the_first_line_still_gets_every_report(tmp_path: Path, buffering: str) -> None:
    """Nobody reads stdout at all, not even the "running N case(s)" line printed before the run."""
    reports = tmp_path / "reports"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            _command(EXAMPLES, reports), stdout=write_end, stderr=subprocess.PIPE, env=_environ(buffering), timeout=300
        )
    finally:
        os.close(write_end)
    _check(done.returncode, done.stderr.decode(), reports, _reference(EXAMPLES, tmp_path))


def test_a_closed_pipe_for_stdout_and_stderr_together(tmp_path: Path) -> None:
    """``2>&1 | head -1``: the progress lines on stderr meet the closed pipe too (over 100 cases draw them)."""
    reports = tmp_path / "reports"
    with subprocess.Popen(
        _command(MANY, reports), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_environ("buffered")
    ) as process:
        assert process.stdout is not None
        first = process.stdout.readline()
        process.stdout.close()
        code = process.wait(timeout=300)
    assert first.startswith(b"running ")
    _check(code, "", reports, _reference(MANY, tmp_path))


def _results_json(path: Path, status: str) -> str:
    rows = [{"case": f"cases/t.yaml::{name}", "operator": "TOP_K1", "ep": "cpu", "status": status} for name in "ab"]
    path.write_text(json.dumps({"schema_version": 1, "environment": {}, "results": rows}), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("buffering", sorted(BUFFERING))
@pytest.mark.parametrize(("new_status", "verdict"), [("PASS", 0), ("FAIL", 1)])
def test_diff_report_and_merge_write_their_files_and_keep_their_verdict_for_a_closed_stdout(
    tmp_path: Path, buffering: str, new_status: str, verdict: int
) -> None:
    old = _results_json(tmp_path / "old.json", "PASS")
    new = _results_json(tmp_path / "new.json", new_status)
    commands = {
        "diff.md": ["diff", old, new, "--markdown", str(tmp_path / "diff.md")],
        "report/summary.md": ["report", new, "--out-dir", str(tmp_path / "report")],
        "merged/summary.md": ["merge", new, "--report-dir", str(tmp_path / "merged")],
    }
    for written, arguments in commands.items():
        read_end, write_end = os.pipe()
        os.close(read_end)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "conformance", *arguments],
                stdout=write_end,
                stderr=subprocess.PIPE,
                env=_environ(buffering),
                timeout=300,
            )
        finally:
            os.close(write_end)
        stderr = done.stderr.decode()
        for sign in ("Traceback", "BrokenPipeError", "Exception ignored"):
            assert sign not in stderr, (arguments, stderr)
        assert done.returncode == verdict, (arguments, stderr)
        assert (tmp_path / written).exists(), arguments


def test_a_closed_stderr_before_the_run_costs_no_report(tmp_path: Path) -> None:
    """--keep-going prints the case files' problems on stderr before anything runs: a reader of stderr that went
    away (``2>&1 | head -1``) must not stop the run there."""
    cases, reports = tmp_path / "cases", tmp_path / "reports"
    cases.mkdir()
    (cases / "a.yaml").write_text(EXAMPLES.read_text(encoding="utf-8"), encoding="utf-8")
    (cases / "b.yaml").write_text("operator: TOP_K1\n", encoding="utf-8")  # a case file without its cases
    (cases / "c.yaml").write_text("not: a case file\n", encoding="utf-8")  # skipped by the walk, counted on stderr
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [*_command(cases, reports), "--keep-going"],
            stdout=subprocess.DEVNULL,
            stderr=write_end,
            env=_environ("unbuffered"),
            timeout=300,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 2  # --keep-going over an invalid file, as with stderr read
    assert sorted(path.name for path in reports.iterdir() if path.name in REPORTS) == sorted(REPORTS)


@pytest.mark.parametrize("keep_going", [False, True])
def test_the_lines_before_the_run_meet_a_closed_pipe_too(tmp_path: Path, keep_going: bool) -> None:
    """``dmlconf run . 2>&1 | true``: the walk's "skipped N YAML file(s)" line and, with --keep-going, a broken
    file's problems are written to stderr before the run starts; a reader already gone costs the run nothing."""
    folder = tmp_path / "walked"
    folder.mkdir()
    (folder / "examples.yaml").write_bytes(EXAMPLES.read_bytes())
    (folder / "workflow.yml").write_text("name: gate\non: [push]\n", encoding="utf-8")  # not a case file: skipped
    if keep_going:
        (folder / "broken.yaml").write_text("operator: TOP_K1\ncases: 3\n", encoding="utf-8")
    extra = ["--keep-going"] if keep_going else []
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([*_command(folder, tmp_path / "reports"), *extra], stdout=write_end, stderr=write_end)
    finally:
        os.close(write_end)
    reference = subprocess.run([*_command(folder, tmp_path / "reference"), *extra], capture_output=True, text=True)
    assert "skipped 1 YAML file(s) that are not case files" in reference.stderr  # the line that met the closed pipe
    assert reference.returncode == (2 if keep_going else 0)  # --keep-going: a file was skipped for its problem
    assert done.returncode == reference.returncode
    assert sorted(path.name for path in (tmp_path / "reports").iterdir() if path.name in REPORTS) == sorted(REPORTS)
