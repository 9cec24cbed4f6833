"""Case ids name their file from a root that does not move with the shell (conformance/cases/ids.py): the nearest folder
above it holding .git or the harness's .dmlconf-root, else the directory given. The same selection run from a checkout's
root, its parent or a subfolder gives the same ids, in results.json and in pytest's node ids, and so the same waiver
matches, shards and reproduction commands; ids from the repository's root are the paths from there, as they always
were."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

import conformance.survive.pool  # noqa: F401  (loaded before any pytester run: see test_plugin.py)
from conformance.cli.main import main

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
FAST = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
CASES = """\
operator: TOP_K1
cases:
  - id: one
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [4, 1, 3, 2]}
    Axis: 3
    K: 2
  - id: wrong-golden
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [4, 1, 3, 2]}
    Axis: 3
    K: 2
    expected:
      OutputValueTensor: [[[[4, 2]]]]
"""
# The ids as the rule gives them: the file's path from the checkout's root (which holds .git).
IDS = ["cases/top_k1/x.yaml::one", "cases/top_k1/x.yaml::wrong-golden"]
# The wrong golden is an ERROR on any EP: the waiver for it, written with the id from the checkout's root.
WAIVERS = """\
known_failures:
  - case: "cases/top_k1/x.yaml::wrong-golden"
    ep: cpu
    reason: the golden is wrong
    tracking: https://example.com/bugs/1
"""


def _skip_inside_a_repository(folder: Path) -> None:
    """The tests build their own checkout, and folders outside any, under ``folder``."""
    markers = (".git", ".dmlconf-root")
    if any((parent / marker).exists() for parent in (folder, *folder.parents) for marker in markers):
        pytest.skip(f"{folder} is inside a repository")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """``tmp_path/clone``: a checkout (a folder holding .git) with cases/top_k1/x.yaml, and a waiver file beside."""
    _skip_inside_a_repository(tmp_path)
    clone = tmp_path / "clone"
    (clone / ".git").mkdir(parents=True)
    (clone / "cases" / "top_k1").mkdir(parents=True)
    (clone / "cases" / "top_k1" / "x.yaml").write_text(CASES, encoding="utf-8")
    (tmp_path / "known.yaml").write_text(WAIVERS, encoding="utf-8")
    return clone


# Where the shell is, and how it names the case folder from there.
PLACES = [("clone", "cases"), (".", "clone/cases"), ("clone/cases/top_k1", "..")]


@pytest.mark.parametrize(("cwd", "path"), PLACES, ids=["root", "parent", "subfolder"])
def test_a_run_s_ids_and_waivers_do_not_depend_on_the_working_directory(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cwd: str, path: str
) -> None:
    monkeypatch.chdir(checkout.parent / cwd)
    report = checkout.parent / "report"
    known = str(checkout.parent / "known.yaml")
    assert main(["run", path, "--ep", "cpu", "--report-dir", str(report), "--waivers", known]) == 0  # waived
    capsys.readouterr()
    results = json.loads((report / "results.json").read_text(encoding="utf-8"))["results"]
    assert sorted(r["case"] for r in results) == IDS
    # The reproduction command works from where the run was made, and selects the one case.
    (failed,) = [r for r in results if r["status"] != "PASS"]
    words = shlex.split(failed["repro"])
    assert words[:2] == ["dmlconf", "run"] and words[3:5] == ["-k", "cases/top_k1/x.yaml::wrong-golden"]
    assert main([*words[1:], "--report-dir", str(checkout.parent / "again")]) == 1
    again = json.loads((checkout.parent / "again" / "results.json").read_text(encoding="utf-8"))["results"]
    assert [r["case"] for r in again] == [failed["case"]]


@pytest.mark.parametrize(("cwd", "path"), PLACES, ids=["root", "parent", "subfolder"])
def test_a_shard_does_not_depend_on_the_working_directory(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cwd: str, path: str
) -> None:
    # Ten files' cases, split in three: each case lands in the shard its id gives it, wherever the shell is.
    for n in range(10):
        (checkout / "cases" / "top_k1" / f"f{n}.yaml").write_text(CASES, encoding="utf-8")
    monkeypatch.chdir(checkout)
    shards = []
    for index in (1, 2, 3):
        assert main(["list", "cases", "--shard", f"{index}/3"]) == 0
        shards.append(capsys.readouterr().out.splitlines())
    monkeypatch.chdir(checkout.parent / cwd)
    for index, expected in enumerate(shards, 1):
        assert main(["list", path, "--shard", f"{index}/3"]) == 0
        assert capsys.readouterr().out.splitlines() == expected
    assert sorted(case for ids in shards for case in ids) == sorted(
        f"cases/top_k1/{f}.yaml::{c}" for f in [*(f"f{n}" for n in range(10)), "x"] for c in ("one", "wrong-golden")
    )


def test_outside_a_repository_ids_are_relative_to_the_directory_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _skip_inside_a_repository(tmp_path)
    folder = tmp_path / "copied" / "cases"
    (folder / "top_k1").mkdir(parents=True)
    (folder / "top_k1" / "x.yaml").write_text(CASES, encoding="utf-8")
    for cwd, path in [(tmp_path, "copied/cases"), (folder, "."), (folder / "top_k1", ".."), (Path("/"), str(folder))]:
        monkeypatch.chdir(cwd)
        assert main(["list", path]) == 0
        assert capsys.readouterr().out.splitlines() == ["top_k1/x.yaml::one", "top_k1/x.yaml::wrong-golden"]
    # A file given itself: from its folder.
    monkeypatch.chdir(tmp_path)
    assert main(["list", "copied/cases/top_k1/x.yaml"]) == 0
    assert capsys.readouterr().out.splitlines() == ["x.yaml::one", "x.yaml::wrong-golden"]


def test_two_folders_whose_files_would_get_the_same_ids_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _skip_inside_a_repository(tmp_path)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.yaml").write_text(CASES, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["list", "a", "b"]) == 2
    assert capsys.readouterr().err.splitlines()[0] == (
        "b/x.yaml:1:1: its case ids (x.yaml::...) would be those of a/x.yaml: outside a repository ids name a file "
        "from the directory given, so give one directory above both"
    )
    assert main(["list", "."]) == 0  # one directory above both
    assert capsys.readouterr().out.splitlines() == [f"{n}/x.yaml::{c}" for n in "ab" for c in ("one", "wrong-golden")]


def test_a_symbolic_link_is_named_not_followed(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (checkout / "cases" / "alias.yaml").symlink_to(checkout / "cases" / "top_k1" / "x.yaml")
    monkeypatch.chdir(checkout.parent)
    assert main(["list", "clone/cases/alias.yaml"]) == 0
    assert capsys.readouterr().out.splitlines() == ["cases/alias.yaml::one", "cases/alias.yaml::wrong-golden"]


def test_ids_from_the_repository_s_root_are_its_paths_as_before(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the committed reports and reports/known-failures.yaml match: from the root, and now from anywhere."""
    spec = "cases/top_k1/spec_examples.yaml"
    names = ["example-1", "example-2-different-axis", "example-3-tied-values", "example-4-increasing"]
    for cwd, path in [
        (REPO, spec),
        (REPO.parent, os.path.join(REPO.name, spec)),
        (REPO / "cases", "top_k1/spec_examples.yaml"),
    ]:
        monkeypatch.chdir(cwd)
        assert main(["list", path]) == 0
        assert capsys.readouterr().out.splitlines() == [f"{spec}::{name}" for name in names]


@pytest.mark.parametrize(
    ("cwd", "args"),
    [*((cwd, [path]) for cwd, path in PLACES), ("clone", ["cases", "--rootdir", "cases/top_k1"])],
    ids=["root", "parent", "subfolder", "another-rootdir"],
)
def test_pytest_s_node_ids_and_waivers_do_not_depend_on_the_working_directory(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cwd: str, args: list[str]
) -> None:
    _skip_inside_a_repository(pytester.path)
    clone = pytester.path / "clone"
    (clone / ".git").mkdir(parents=True)
    (clone / "cases" / "top_k1").mkdir(parents=True)
    (clone / "cases" / "top_k1" / "x.yaml").write_text(CASES, encoding="utf-8")
    (pytester.path / "known.yaml").write_text(WAIVERS, encoding="utf-8")
    monkeypatch.chdir(pytester.path / cwd)
    collected = pytester.inline_run(*FAST, "--ep", "cpu", "--collect-only", *args)
    assert [item.nodeid for item in collected.getcalls("pytest_collection_finish")[0].session.items] == IDS
    ran = pytester.inline_run(*FAST, "--ep", "cpu", *args, "--waivers", str(pytester.path / "known.yaml"))
    assert ran.ret == pytest.ExitCode.OK
    ran.assertoutcome(passed=1, skipped=1)  # the waived ERROR is an xfail


def test_pytest_refuses_two_files_that_would_get_the_same_ids(pytester: pytest.Pytester) -> None:
    _skip_inside_a_repository(pytester.path)
    for name in ("a", "b"):
        (pytester.path / name).mkdir()
        (pytester.path / name / "x.yaml").write_text(CASES, encoding="utf-8")
    result = pytester.runpytest(*FAST, "--ep", "cpu", "a", "b")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*b/x.yaml:1:1: its case ids (x.yaml::...) would be those of *a/x.yaml: *"])
    result.assert_outcomes(errors=1)


# The harness's own cases outside its checkout: a copy without .git (an unpacked archive, a CI artifact) and a copy
# vendored in another repository. Each keeps the marker the repository ships at its root, .dmlconf-root.
COPIES = {"copy": "copy", "vendored": "mono/third_party/dmlconf"}
# Where the shell is, relative to the copy's root, and how it names cases/ (or a part of it) from there.
SPELLINGS = [
    (".", []),  # the default, cases/
    (".", ["cases"]),
    (".", ["."]),
    ("..", ["{name}/cases"]),
    ("cases", ["."]),
    ("cases/top_k1", [".."]),
    ("/", ["{root}/cases"]),
]


def _copy_of_the_harness(base: Path, layout: str) -> Path:
    """The root of a copy of this repository's cases/ and marker under ``base``, laid out as ``layout`` says."""
    _skip_inside_a_repository(base)
    root = base / COPIES[layout]
    shutil.copytree(REPO / "cases", root / "cases")
    shutil.copy2(REPO / ".dmlconf-root", root / ".dmlconf-root")
    if layout == "vendored":
        subprocess.run(["git", "init", "-q", str(base / "mono")], check=True)
    return root


def _ids_from_the_repository_s_root(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    """``dmlconf list ARGS`` run from this checkout's root: the ids as they always were."""
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        assert main(["list", *args]) == 0
    finally:
        os.chdir(cwd)
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("layout", sorted(COPIES))
def test_a_copy_of_the_harness_keeps_its_ids_without_git_or_inside_another_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], layout: str
) -> None:
    root = _copy_of_the_harness(tmp_path, layout)
    expected = _ids_from_the_repository_s_root(capsys, "cases")
    assert expected and all(case.startswith("cases/") for case in expected)
    for cwd, args in SPELLINGS:
        monkeypatch.chdir(root / cwd)
        spelled = [arg.format(name=root.name, root=root) for arg in args]
        assert main(["list", *spelled]) == 0, (cwd, spelled)
        assert capsys.readouterr().out.splitlines() == expected, (cwd, spelled)
    # A part of the cases, a folder or a file, is named from the same root.
    part = _ids_from_the_repository_s_root(capsys, "cases/top_k1/spec_examples.yaml")
    assert part and all(case.startswith("cases/top_k1/spec_examples.yaml::") for case in part)
    for cwd, path in [(".", "cases/top_k1"), ("cases/top_k1", "."), ("cases/top_k1", "spec_examples.yaml")]:
        monkeypatch.chdir(root / cwd)
        assert main(["list", path, "-k", "spec_examples.yaml::"]) == 0, (cwd, path)
        assert capsys.readouterr().out.splitlines() == part, (cwd, path)


@pytest.mark.parametrize("layout", sorted(COPIES))
@pytest.mark.parametrize(
    ("cwd", "args"),
    [(".", ["cases/top_k1"]), ("..", ["{name}/cases/top_k1"]), ("cases/top_k1", ["."]), ("cases", ["top_k1"])],
    ids=["root", "parent", "the-folder", "cases"],
)
def test_pytest_s_node_ids_in_a_copy_of_the_harness_are_the_cli_s(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    layout: str,
    cwd: str,
    args: list[str],
) -> None:
    root = _copy_of_the_harness(pytester.path, layout)
    for name in os.listdir(root / "cases"):  # one operator's cases are enough here
        if name != "top_k1" and (root / "cases" / name).is_dir():
            shutil.rmtree(root / "cases" / name)
    expected = _ids_from_the_repository_s_root(capsys, "cases/top_k1")
    monkeypatch.chdir(root / cwd)
    collected = pytester.inline_run(*FAST, "--ep", "cpu", "--collect-only", *(a.format(name=root.name) for a in args))
    items = collected.getcalls("pytest_collection_finish")[0].session.items
    assert [item.nodeid for item in items] == expected
