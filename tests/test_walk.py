"""Which YAML files a directory walk reads as case files (the CLI's and the pytest plugin's one rule), that a file
named on the command line is always read, and that overlapping paths run each case once."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import conformance.survive.pool  # noqa: F401  (loaded before any pytester run: see test_plugin.py)
from conformance.cases.detect import is_case_file
from conformance.cli.main import main

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
FAST = ("-p", "no:hypothesispytest")

CASES = """\
operator: TOP_K1
feature_level: "3_1"
cases:
  - id: one
    InputTensor: {Sizes: [1, 4], DataType: FLOAT32, Data: [4, 1, 3, 2]}
    Axis: 1
    K: 2
  - id: two
    InputTensor: {Sizes: [1, 4], DataType: FLOAT32, Data: [1, 2, 3, 4]}
    Axis: 1
    K: 1
"""
# YAML of other kinds, as a repository holds them: none is a case file.
WORKFLOW = "name: gate\non:\n  push:\njobs:\n  test:\n    runs-on: windows\n"
WAIVERS = 'known_failures:\n  - case: "cases/x.yaml::y"\n    ep: cuda\n    reason: a finding\n'
# reference/clauses/*.yaml name their operator too; their clauses tell them apart.
CLAUSES = "operator: TOP_K1\npages:\n  current: page.md\nclauses:\n  - id: TOP_K1.select\n    kind: semantic\n"
NOT_CASE_FILES = {"workflow.yml": WORKFLOW, "waivers.yaml": WAIVERS, "clauses.yaml": CLAUSES, "empty.yaml": ""}


@pytest.mark.parametrize(
    ("text", "case_file"),
    [
        (CASES, True),
        ("cases: []\noperator: SLICE1\n", True),
        ("description: d\nfeature_level: '3_1'\n'operator': TOP_K1\n", True),  # a case file without its cases
        ("{operator: TOP_K1, cases: []}\n", True),
        ("cases:\n  - id: a\n", True),  # its operator forgotten: read, so that the problem is shown
        ("operator: TOP_K1\ncase:\n  - id: a\n", True),  # cases misspelt: read too
        ("operator: TOP_K1\ncases: [\n", True),  # broken YAML after the operator
        ("key: [unclosed\n", True),  # YAML that cannot be read at all: read, so that its problem is shown
        ("description: |\n  operator: TOP_K1\n  cases: []\nname: x\n", False),  # the words, not at the top level
        ("- operator: TOP_K1\n  cases: []\n", False),  # a list at the top
        ("just text\n", False),
        ("# only a comment\n", False),
        ("name: x\ncases_done: 3\nmeta: {operator: TOP_K1}\n", False),
        *((text, False) for text in NOT_CASE_FILES.values()),
    ],
)
def test_the_rule(tmp_path: Path, text: str, case_file: bool) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8")
    assert is_case_file(str(path)) is case_file


def test_a_file_whose_case_fields_come_late_is_still_read(tmp_path: Path) -> None:
    """The decision reads only the start of a file; one that has not decided by then is read (never skipped)."""
    path = tmp_path / "x.yaml"
    path.write_text("description: '" + "x" * (3 << 20) + "'\noperator: TOP_K1\ncases: []\n", encoding="utf-8")
    assert is_case_file(str(path)) is True


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "topk.yaml").write_text(CASES, encoding="utf-8")
    for name, text in NOT_CASE_FILES.items():
        folder = tmp_path / ("ci" if name.endswith(".yml") else "other")
        folder.mkdir(exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_a_walk_skips_yaml_that_is_not_a_case_file_and_says_how_many(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "."]) == 0
    out, err = capsys.readouterr()
    assert out == "ok: 2 case(s) in 1 file(s)\n"
    assert err == "skipped 4 YAML file(s) that are not case files\n"


def test_a_run_of_a_walk_runs_the_case_files_only(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", ".", "--ep", "cpu", "--report-dir", "r"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == "running 2 case(s) from 1 file(s) on cpu"
    assert "skipped 4 YAML file(s) that are not case files" in err
    results = json.loads((tree / "r" / "results.json").read_text(encoding="utf-8"))["results"]
    assert sorted(r["case"] for r in results) == ["cases/topk.yaml::one", "cases/topk.yaml::two"]


@pytest.mark.parametrize("name", ["other/waivers.yaml", "other/clauses.yaml", "ci/workflow.yml"])
def test_a_file_named_on_the_command_line_is_always_read(
    tree: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    assert main(["validate", name]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{name}:") and "skipped" not in err, err


def test_a_folder_of_yaml_without_a_case_file_is_a_usage_error(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "other"]) == 2
    assert capsys.readouterr().err == (
        "dmlconf: other: no case files found (3 YAML file(s) there are not case files)\n"
    )


@pytest.mark.parametrize(
    "paths",
    [
        ["cases", "cases/topk.yaml"],
        ["cases/topk.yaml", "cases"],
        [".", "cases", "./cases/topk.yaml", "cases/../cases/topk.yaml"],
        ["cases/topk.yaml", "cases/topk.yaml"],
    ],
)
def test_overlapping_paths_run_each_case_once(tree: Path, capsys: pytest.CaptureFixture[str], paths: list[str]) -> None:
    assert main(["run", *paths, "--ep", "cpu", "--report-dir", "r"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "running 2 case(s) from 1 file(s) on cpu"
    results = json.loads((tree / "r" / "results.json").read_text(encoding="utf-8"))["results"]
    assert len(results) == 2 and len({r["case"] for r in results}) == 2


def _committed_yaml() -> list[str]:
    """The repository's own YAML files, as git tracks them: what a user keeps beside them in their checkout (a case
    folder of their own, a hidden folder's files) is not the harness's to judge."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--", "*.yaml", "*.yml"], capture_output=True, text=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip("the repository is not a git checkout here")
    return [name for name in listed.stdout.split("\0") if name]


def test_validate_and_run_from_the_repository_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The repository's other YAML (reference/clauses, reports/known-failures.yaml, the CI workflow in docs/) is not
    case files: `dmlconf validate .` from the root reads exactly what `dmlconf validate cases benchmarks/sweeps`
    reads (the library, and the benchmarks' sweeps, which are case files outside it). The root is a copy of the
    repository's committed YAML files, so that the user's own files in the checkout change nothing."""
    committed = _committed_yaml()
    root = tmp_path / "checkout"
    for name in committed:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, root / name)
    monkeypatch.chdir(root)
    assert main(["validate", "cases", "benchmarks/sweeps"]) == 0
    in_cases = capsys.readouterr().out
    assert main(["validate", "."]) == 0
    out, err = capsys.readouterr()
    assert out == in_cases
    files = re.match(r"ok: \d+ case\(s\) in (\d+) file\(s\)", out)
    skipped = re.fullmatch(r"skipped (\d+) YAML file\(s\) that are not case files\n", err)
    assert files is not None and skipped is not None, (out, err)
    assert int(skipped[1]) == len(committed) - int(files[1]) >= 5  # 3 clause files, the waivers, the workflow
    argv = ["run", ".", "-k", "spec_examples.yaml::example-1", "--ep", "cpu", "--report-dir", str(tmp_path / "r")]
    assert main(argv) == 0
    assert "== 2 PASS ==" in capsys.readouterr().out  # TOP_K1's and SLICE1's example 1


def test_the_pytest_plugin_collects_by_the_same_rule(pytester: pytest.Pytester) -> None:
    for name, text in {**NOT_CASE_FILES, "topk.yaml": CASES}.items():
        pytester.path.joinpath(name).write_text(text, encoding="utf-8")
    pytester.path.joinpath("no_operator.yaml").write_text("cases:\n  - id: a\n", encoding="utf-8")
    result = pytester.runpytest(*FAST, "--ep", "cpu", "--collect-only", "-q")
    collected = sorted(line for line in result.stdout.lines if "::" in line)
    assert collected == ["topk.yaml::one", "topk.yaml::two"]
    # The case file without its operator is read, and refused, as by the CLI; the other YAML is not collected.
    result.stdout.fnmatch_lines(["*no_operator.yaml:1:1: operator: missing required field*"])
    assert "clauses.yaml" not in result.stdout.str() and "waivers.yaml" not in result.stdout.str()


@pytest.mark.parametrize("spelling", ["clauses.yaml", "./clauses.yaml", "sub/../clauses.yaml", "ABSOLUTE"])
def test_the_pytest_plugin_reads_a_file_it_is_given(pytester: pytest.Pytester, spelling: str) -> None:
    """However the file is spelt, as the CLI reads it (``dmlconf validate sub/../clauses.yaml`` is refused for its
    problems too)."""
    pytester.path.joinpath("clauses.yaml").write_text(CLAUSES, encoding="utf-8")
    pytester.path.joinpath("sub").mkdir()
    given = str(pytester.path / "clauses.yaml") if spelling == "ABSOLUTE" else spelling
    result = pytester.runpytest(*FAST, "--ep", "cpu", "--collect-only", "-q", given)
    result.stdout.fnmatch_lines(["*clauses.yaml:*: cases: missing required field*"])
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_copies_of_the_repository_s_other_yaml_are_skipped(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("reference/clauses/top_k1.yaml", "reports/known-failures.yaml", "docs/windows-directml-gate.yml"):
        shutil.copy(REPO / name, tree / "other" / Path(name).name)
    assert main(["validate", "."]) == 0
    assert capsys.readouterr().err == "skipped 7 YAML file(s) that are not case files\n"
