"""dmlconf list: the case ids a run would select, from the same selection as run (-k, --quick, --shard,
--keep-going), without running anything; --json describes each; invalid case files exit 2 as for run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli.main import main

ROOT = Path(__file__).resolve().parent.parent

CASES = """\
operator: TOP_K1
feature_level: "3_1"
cases:
  - id: half
    InputTensor: {Sizes: [2, 3], DataType: FLOAT16, Data: [1, 2, 3, 4, 5, 6]}
    Axis: 1
    K: 2
  - id: half-rank4
    feature_level: "2_1"
    InputTensor: {Sizes: [1, 1, 2, 3], DataType: INT8, Data: [1, 2, 3, 4, 5, 6]}
    Axis: 3
    K: 1
  - id: k-zero
    expect: invalid
    reason: K must be greater than 0
    InputTensor: {Sizes: [1, 1, 3, 4], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 1}}
    Axis: 3
    K: 0
"""
BAD = """\
operator: TOP_K1
cases:
  - id: no-k
    InputTensor: {Sizes: [3], DataType: FLOAT32, Data: [1, 2, 3]}
    Axis: 0
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.yaml").write_text(CASES, encoding="utf-8")
    return tmp_path


def _listed(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["list", *args]) == 0
    return capsys.readouterr().out.splitlines()


def _run_ids(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The case ids a real ``dmlconf run`` with these arguments ran, from its results.json."""
    main(["run", *args, "--ep", "cpu", "-j", "0", "--report-dir", "r"])
    capsys.readouterr()
    document = json.loads(Path("r/results.json").read_text(encoding="utf-8"))
    return [row["case"] for row in document["results"]]


def test_list_prints_the_ids_of_the_file_in_order(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _listed(["t.yaml"], capsys) == ["t.yaml::half", "t.yaml::half-rank4", "t.yaml::k-zero"]
    assert _listed(["t.yaml", "-k", "half"], capsys) == ["t.yaml::half", "t.yaml::half-rank4"]
    assert _listed(["t.yaml", "-k", "t.yaml::half"], capsys) == ["t.yaml::half"]  # a full id selects it alone
    assert _listed(["t.yaml", "-k", "nothing-like-it"], capsys) == []  # an empty selection is an answer


@pytest.mark.parametrize(
    "args",
    [
        ["t.yaml", "-k", "half"],
        ["t.yaml", "--shard", "1/2"],
        ["t.yaml", "--shard", "2/2"],
        [str(ROOT / "cases" / "top_k1" / "spec_examples.yaml"), "--quick"],
        ["t.yaml", "bad.yaml", "--keep-going"],
    ],
    ids=["k", "shard-1", "shard-2", "quick", "keep-going"],
)
def test_list_selects_what_run_runs(args: list[str], folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "bad.yaml").write_text(BAD, encoding="utf-8")
    code = main(["list", *args])
    listed = capsys.readouterr().out.splitlines()
    assert code == (2 if "--keep-going" in args else 0)
    assert listed == _run_ids(args, capsys)


def test_the_shards_split_the_list(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = _listed(["t.yaml", "--shard", "1/2"], capsys), _listed(["t.yaml", "--shard", "2/2"], capsys)
    assert sorted(first + second) == sorted(_listed(["t.yaml"], capsys)) and not set(first) & set(second)


def test_list_json_describes_each_case(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "t.yaml", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == [
        {
            "id": "t.yaml::half",
            "path": "t.yaml",
            "operator": "TOP_K1",
            "data_type": "FLOAT16",
            "feature_level": "3_1",
            "negative": False,
        },
        {
            "id": "t.yaml::half-rank4",
            "path": "t.yaml",
            "operator": "TOP_K1",
            "data_type": "INT8",
            "feature_level": "2_1",
            "negative": False,
        },
        {
            "id": "t.yaml::k-zero",
            "path": "t.yaml",
            "operator": "TOP_K1",
            "data_type": "FLOAT32",
            "feature_level": "3_1",
            "negative": True,
        },
    ]
    assert err == "3 case(s) selected from 1 file(s)\n"


def test_an_invalid_case_file_is_exit_2_and_lists_nothing(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (folder / "bad.yaml").write_text(BAD, encoding="utf-8")
    assert main(["list", "t.yaml", "bad.yaml"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith("bad.yaml:3:") and "K: missing required field" in lines[0] and "Traceback" not in err
    assert lines[-1] == "nothing was run: fix the problems above"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.yaml"], "dmlconf: missing.yaml: no such file or directory"),
        (["t.yaml", "--shard", "3/2"], "dmlconf: --shard: expected I/N with 1 <= I <= N, or auto, got '3/2'"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    args: list[str], message: str, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", *args]) == 2
    assert capsys.readouterr().err.splitlines() == [message]
