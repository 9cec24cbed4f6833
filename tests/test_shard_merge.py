"""--shard I/N and dmlconf merge: disjoint shards that together hold the suite, merged back into one run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conformance.cases.suite import balanced, collect, parse_shard, shard
from conformance.cli.main import main

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["cases/top_k1/spec_examples.yaml", "cases/slice1/spec_examples.yaml", "cases/found/slice1.yaml"]


@pytest.mark.parametrize(("text", "parsed"), [("1/1", (1, 1)), ("2/3", (2, 3)), ("10/10", (10, 10))])
def test_a_shard_is_i_of_n(text: str, parsed: tuple[int, int]) -> None:
    assert parse_shard(text) == parsed


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0", "-1/2", "1/2/3"])
def test_other_shard_texts_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="I/N"):
        parse_shard(text)


def test_the_shards_of_the_library_are_disjoint_and_complete() -> None:
    suite = collect([str(REPO / "cases")])
    ids = [entry.id for entry in suite.entries]
    parts = [{entry.id for entry in shard(suite, i, 3).entries} for i in (1, 2, 3)]
    assert sum(len(p) for p in parts) == len(ids) and set().union(*parts) == set(ids)
    assert all(len(p) > len(ids) // 5 for p in parts)  # a hash split, not everything in one shard


def _run(argv: list[str]) -> int:
    return main(["run", *EXAMPLES, "--ep", "cpu", *argv])


def test_merged_shards_give_the_unsharded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert _run(["--report-dir", str(tmp_path / "all")]) == 0
    for i in (1, 2):
        assert _run(["--shard", f"{i}/2", "--report-dir", str(tmp_path / f"s{i}")]) == 0
    shards = [str(tmp_path / f"s{i}" / "results.json") for i in (1, 2)]
    assert main(["merge", *shards, "--report-dir", str(tmp_path / "merged")]) == 0

    def verdicts(folder: str) -> dict[tuple[str, str], str]:
        document = json.loads((tmp_path / folder / "results.json").read_text(encoding="utf-8"))
        return {(r["case"], r["ep"]): r["status"] for r in document["results"]}

    assert verdicts("merged") == verdicts("all") and len(verdicts("all")) == 8
    assert 0 < len(verdicts("s1")) < 8
    merged = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))["environment"]
    assert [s["file"] for s in merged["shards"]] == shards
    assert (tmp_path / "merged" / "report.html").exists() and (tmp_path / "merged" / "junit.xml").exists()


def test_a_result_in_two_files_is_not_merged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert _run(["--report-dir", str(tmp_path / "a")]) == 0
    same = str(tmp_path / "a" / "results.json")
    assert main(["merge", same, same, "--report-dir", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is in both" in err[0]


def test_a_bad_shard_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["--shard", "3/2", "--report-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("dmlconf: --shard: expected I/N")


def test_a_merge_of_an_interrupted_shard_says_how_much_of_the_whole_ran(tmp_path: Path) -> None:
    # Shard 1 ran its 2 results in full; shard 2 was interrupted after 1 of its 3: 3 of 5 ran.
    def result(case: str) -> dict[str, str]:
        return {"case": case, "operator": "SLICE1", "ep": "cpu", "status": "PASS"}

    complete = {"schema_version": 1, "environment": {"started_at": "2026-11-24T10:00:00Z"}, "results": []}
    complete["results"] = [result("a.yaml::1"), result("a.yaml::2")]
    cut = {"schema_version": 1, "environment": {"interrupted": True, "planned_results": 3}, "results": [result("b::1")]}
    paths = []
    for name, document in (("one.json", complete), ("two.json", cut)):
        (tmp_path / name).write_text(json.dumps(document), encoding="utf-8")
        paths.append(str(tmp_path / name))
    main(["merge", *paths, "--report-dir", str(tmp_path / "merged")])
    environment = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))["environment"]
    assert (environment["interrupted"], environment["planned_results"]) == (True, 5)
    assert environment["shards"][0]["started_at"] == "2026-11-24T10:00:00Z"
    assert "3 of 5 cases run" in (tmp_path / "merged" / "summary.md").read_text(encoding="utf-8")


def test_a_merge_keeps_what_each_shard_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A shard run with --keep-going skipped a case file: the merged run says so whichever file it was, so that its
    reports cannot show a complete run."""

    def document(case: str, skipped: list[dict[str, object]]) -> dict[str, object]:
        environment = {"problems": [f"{s['path']}:1:1: cases: missing required field" for s in skipped]}
        environment |= {"skipped_files": skipped} if skipped else {}
        result = {"case": case, "operator": "SLICE1", "ep": "cpu", "status": "PASS"}
        return {"schema_version": 1, "environment": environment, "results": [result]}

    paths = []
    for name, skipped in (("one.json", []), ("two.json", [{"path": "cases/b.yaml", "problems": 1}])):
        (tmp_path / name).write_text(json.dumps(document(f"{name}::1", skipped)), encoding="utf-8")
        paths.append(str(tmp_path / name))
    assert main(["merge", *paths, "--report-dir", str(tmp_path / "merged")]) == 2
    environment = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))["environment"]
    assert environment["problems"] == ["cases/b.yaml:1:1: cases: missing required field"]
    assert environment["skipped_files"] == [{"path": "cases/b.yaml", "problems": 1}]
    assert "files skipped: 1 (cases/b.yaml: 1 problem)" in (tmp_path / "merged" / "summary.md").read_text("utf-8")


# --- a merge holds a whole split of shards, or says which shard is missing or doubled -----------------------------


def _recorded(folder: Path) -> dict[str, object]:
    document = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    environment: dict[str, object] = document["environment"]
    return environment


def test_a_shard_records_its_index_count_and_the_whole_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert _run(["--report-dir", str(tmp_path / "all")]) == 0
    for i in (1, 2):
        assert _run(["--shard", f"{i}/2", "--report-dir", str(tmp_path / f"s{i}")]) == 0
    assert "shard" not in _recorded(tmp_path / "all")  # the whole selection is no shard
    one, two = (_recorded(tmp_path / f"s{i}")["shard"] for i in (1, 2))
    assert isinstance(one, dict) and isinstance(two, dict)
    # The plan is the unsharded run's: its 8 (case, EP) pairs, every shard of the split the same.
    all_results = json.loads((tmp_path / "all" / "results.json").read_text(encoding="utf-8"))["results"]
    assert (one["index"], one["count"], one["planned_results"]) == (1, 2, len(all_results)) == (1, 2, 8)
    assert (two["index"], two["count"], two["planned_results"]) == (2, 2, 8)
    assert one["plan_sha256"] == two["plan_sha256"] and len(str(one["plan_sha256"])) == 64
    shards = [str(tmp_path / f"s{i}" / "results.json") for i in (1, 2)]
    assert main(["merge", *shards, "--report-dir", str(tmp_path / "merged")]) == 0
    assert "shard" not in _recorded(tmp_path / "merged")  # the merge is the whole split


def test_merging_one_shard_of_two_is_refused_naming_the_missing_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert _run(["--shard", "1/2", "--report-dir", str(tmp_path / "s1")]) == 0
    capsys.readouterr()
    one = str(tmp_path / "s1" / "results.json")
    assert main(["merge", one, "--report-dir", str(tmp_path / "merged")]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"dmlconf: incomplete set of shards: 2/2 missing (given: 1/2 {one}); merge every shard of the split"
    ]
    assert "PASSED" not in captured.out and not (tmp_path / "merged").exists()  # nothing written


def _shard_file(path: Path, cases: list[str], index: int, count: int, plan: str = "p" * 64) -> str:
    """A results.json of one shard, PASS on the CPU EP for each case, as ``run --shard`` records it."""
    shard = {"index": index, "count": count, "planned_results": 4, "plan_sha256": plan}
    rows = [{"case": case, "operator": "SLICE1", "ep": "cpu", "status": "PASS"} for case in cases]
    document = {"schema_version": 1, "environment": {"shard": shard}, "results": rows}
    path.write_text(json.dumps(document), encoding="utf-8")
    return str(path)


def test_a_shard_given_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = _shard_file(tmp_path / "one.json", ["a::1", "a::2"], 1, 2)
    again = _shard_file(tmp_path / "again.json", ["a::1", "a::2"], 1, 2)  # the same shard, from another job
    two = _shard_file(tmp_path / "two.json", ["a::3", "a::4"], 2, 2)
    assert main(["merge", one, two, again, "--report-dir", str(tmp_path / "m")]) == 2
    assert capsys.readouterr().err.splitlines() == [f"dmlconf: shard 1/2 is given twice: {one} and {again}"]
    assert main(["merge", one, two, "--report-dir", str(tmp_path / "m")]) == 0  # the whole split


def test_shards_of_one_plan_split_two_ways_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    half = _shard_file(tmp_path / "half.json", ["a::1", "a::2"], 1, 2)
    thirds = [_shard_file(tmp_path / f"t{i}.json", [f"a::{i + 2}"], i, 3) for i in (2, 3)]
    assert main(["merge", half, *thirds, "--report-dir", str(tmp_path / "m")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"dmlconf: {half} is shard 1/2 and {thirds[0]} shard 2/3 of the same cases and EPs: merge the shards of one "
        "split"
    ]


def test_shards_of_two_selections_do_not_make_a_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 1/2 of one selection and 2/2 of another (another -k, case files or EPs): each split misses a shard.
    one = _shard_file(tmp_path / "one.json", ["a::1", "a::2"], 1, 2, plan="1" * 64)
    other = _shard_file(tmp_path / "other.json", ["b::3", "b::4"], 2, 2, plan="2" * 64)
    assert main(["merge", one, other, "--report-dir", str(tmp_path / "m")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"dmlconf: incomplete set of shards: 2/2 missing (given: 1/2 {one}); {other} hold shards of other cases or "
        "EPs; merge every shard of the split"
    ]


def test_whole_splits_of_two_plans_and_unsharded_files_merge(tmp_path: Path) -> None:
    # A CI matrix: the CPU EP's run split in two, another EP's split in two, and one unsharded file of a third.
    cpu = [_shard_file(tmp_path / f"cpu{i}.json", [f"a::{i}"], i, 2, plan="1" * 64) for i in (1, 2)]
    gpu = [_shard_file(tmp_path / f"gpu{i}.json", [f"b::{i}"], i, 2, plan="2" * 64) for i in (1, 2)]
    row = {"case": "c::1", "operator": "SLICE1", "ep": "cpu", "status": "PASS"}
    (tmp_path / "whole.json").write_text(json.dumps({"schema_version": 1, "results": [row]}), encoding="utf-8")
    assert main(["merge", *cpu, *gpu, str(tmp_path / "whole.json"), "--report-dir", str(tmp_path / "m")]) == 0


@pytest.mark.parametrize(
    ("text", "environ", "parsed"),
    [
        ("auto", {"CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "3"}, (2, 3)),  # GitLab parallel: counts from 1
        ("auto/4", {"JOB_COMPLETION_INDEX": "0"}, (1, 4)),  # a Kubernetes Indexed Job counts from 0
        ("auto", {"JOB_COMPLETION_INDEX": "3", "DMLCONF_SHARD_COUNT": "4"}, (4, 4)),
        ("auto", {"DMLCONF_SHARD_INDEX": "3", "DMLCONF_SHARD_COUNT": "5"}, (3, 5)),  # a GitHub matrix sets these
        ("auto/2", {"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "3"}, (1, 2)),  # a count given wins
    ],
)
def test_auto_takes_the_shard_from_the_ci(text: str, environ: dict[str, str], parsed: tuple[int, int]) -> None:
    assert parse_shard(text, environ) == parsed


@pytest.mark.parametrize(
    ("text", "environ", "said"),
    [
        ("auto", {}, "no CI shard variable is set"),
        (
            "auto",
            {"JOB_COMPLETION_INDEX": "1"},
            "JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set without a count",
        ),
        ("auto/4", {"JOB_COMPLETION_INDEX": "4"}, "JOB_COMPLETION_INDEX=4 (a Kubernetes Indexed Job) is no shard of 4"),
        ("auto", {"CI_NODE_INDEX": "x", "CI_NODE_TOTAL": "3"}, "are not whole numbers"),
        ("auto/x", {"CI_NODE_INDEX": "1"}, "expected auto/N"),
    ],
)
def test_auto_without_a_shard_to_take_says_why(text: str, environ: dict[str, str], said: str) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        parse_shard(text, environ)


def test_a_split_by_time_puts_the_longest_first_onto_the_emptiest_shard() -> None:
    # By hand: a (5) to shard 1, b (4) to 2, c (3) to 2 (4 < 5), d (2) to 1 (5 < 7), e (1) to the lower of 7 and 7;
    # f, untimed, counts the median of the times (3) and comes right after c ("c" < "f"): to shard 1 (5 < 7).
    times = {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0, "e": 1.0}
    assert balanced(["e", "d", "c", "b", "a"], 2, times) == {"a": 1, "b": 2, "c": 2, "d": 1, "e": 1}
    with_new = balanced(["a", "b", "c", "d", "e", "f"], 2, times)
    assert with_new == {"a": 1, "b": 2, "c": 2, "f": 1, "d": 2, "e": 1}


def test_shards_split_by_time_merge_into_the_whole_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert _run(["--report-dir", str(tmp_path / "all")]) == 0
    previous = str(tmp_path / "all" / "results.json")
    for i in (1, 2):
        by_time = ["--shard", f"{i}/2", "--shard-by-time", previous, "--report-dir", str(tmp_path / f"s{i}")]
        assert _run(by_time) == 0
    shards = [str(tmp_path / f"s{i}" / "results.json") for i in (1, 2)]
    assert main(["merge", *shards, "--report-dir", str(tmp_path / "merged")]) == 0

    def cases(folder: str) -> list[str]:
        document = json.loads((tmp_path / folder / "results.json").read_text(encoding="utf-8"))
        return sorted(r["case"] for r in document["results"])

    assert cases("merged") == cases("all") and cases("s1") and cases("s2")
    assert not set(cases("s1")) & set(cases("s2"))


def test_shard_by_time_needs_a_shard_and_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", *EXAMPLES, "--shard-by-time", "missing.json"]) == 2
    assert "--shard-by-time: give --shard I/N (or auto) too" in capsys.readouterr().err
    assert main(["list", *EXAMPLES, "--shard", "1/2", "--shard-by-time", str(tmp_path / "missing.json")]) == 2
    assert f"--shard-by-time: {tmp_path / 'missing.json'}:" in capsys.readouterr().err
