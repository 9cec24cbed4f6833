"""dmlconf, run in-process through ``conformance.cli.main.main`` (plus one subprocess per entry point)."""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import replace
from pathlib import Path
from typing import Any

import onnxruntime  # type: ignore[import-untyped]
import pytest
from chain_fakes import pe_file

from conformance import ep_table
from conformance.cli.main import main
from conformance.ep import providers
from conformance.survive import pool

REPO = Path(__file__).resolve().parents[1]
TOPK_EXAMPLES = "cases/top_k1/spec_examples.yaml"
SLICE_EXAMPLES = "cases/slice1/spec_examples.yaml"
TOPK_IDS = [
    f"{TOPK_EXAMPLES}::{name}"
    for name in ("example-1", "example-2-different-axis", "example-3-tied-values", "example-4-increasing")
]
SLICE_IDS = [f"{SLICE_EXAMPLES}::{name}" for name in ("example-1-positive-strides", "example-2-negative-strides")]
RESULT_KEYS = {
    "case",
    "operator",
    "ep",
    "status",
    "failure_kind",
    "data_type",
    "lowering",
    "dml_operator",
    "details",
    "parameters",
    "packed",
    "inputs_sha256",
    "outputs_sha256",
    "values_sha256",
    "message",
    "metrics",
    "placement",
    "feature_level",
    "repro",
    "seconds",
}
PROBLEM_LINE = re.compile(r"^(?P<path>[^:\s]+):(?P<line>\d+):(?P<col>\d+): (?P<field>[\w.]+): (?P<message>\S.*)$")

# A file with one problem per case: an unknown data type (read) and an Axis past the rank (validated).
BAD = """\
operator: TOP_K1
cases:
  - id: bad-type
    InputTensor:
      Sizes: [1, 1, 1, 4]
      DataType: FLOAT99
      Data: [[[[1, 2, 3, 4]]]]
    Axis: 3
    K: 2
  - id: bad-axis
    InputTensor:
      Sizes: [1, 1, 1, 4]
      DataType: FLOAT32
      Data: [[[[1, 2, 3, 4]]]]
    Axis: 4
    K: 2
"""
# Every verdict the CPU EP can give without a fault in onnxruntime, one case each.
MIXED = """\
operator: TOP_K1
feature_level: "3_1"
cases:
  - id: pass
    feature_level: "2_1"
    InputTensor: {Sizes: [1, 1, 3, 4], DataType: FLOAT32, Data: [[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]]}
    Axis: 3
    K: 2
  - id: pass-rank3
    InputTensor: {Sizes: [3, 4, 5], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 2}}
    Axis: 1
    K: 3
  - id: wrong-golden
    feature_level: "2_1"
    InputTensor: {Sizes: [1, 1, 3, 4], DataType: FLOAT32, Data: [[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]]}
    Axis: 3
    K: 2
    expected:
      OutputValueTensor: [[[[11, 10], [9, 8], [7, 6]]]]
      OutputIndexTensor: [[[[3, 2], [3, 2], [3, 2]]]]
  - id: uint16
    InputTensor: {Sizes: [1, 1, 2, 4], DataType: UINT16, Data: [[[[1, 5, 3, 2], [9, 8, 7, 6]]]]}
    Axis: 3
    K: 2
  - id: negative
    expect: invalid
    reason: K must be greater than 0
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [[[[1, 2, 3, 4]]]]}
    Axis: 3
    K: 0
  - id: negative-accepted
    expect: invalid
    reason: wrongly marked
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [[[[1, 2, 3, 4]]]]}
    Axis: 3
    K: 3
"""
MIXED_STATUSES = {
    "mixed.yaml::pass": "PASS",
    "mixed.yaml::pass-rank3": "PASS",
    "mixed.yaml::wrong-golden": "ERROR",
    "mixed.yaml::uint16": "NOT_SUPPORTED",
    "mixed.yaml::negative": "INVALID",
    "mixed.yaml::negative-accepted": "FAIL",
}


def _strict_json(path: Path) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"non-standard JSON constant {constant}")

    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


def _results(report_dir: Path) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = _strict_json(report_dir / "results.json")["results"]
    return results


def _statuses(report_dir: Path) -> dict[str, str]:
    return {r["case"]: r["status"] for r in _results(report_dir)}


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


@pytest.fixture
def mixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mixed.yaml").write_text(MIXED, encoding="utf-8")
    return tmp_path


# validate ----------------------------------------------------------------------------------------------------------


def test_validate_cases_exits_0(in_repo: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "cases"]) == 0
    out, err = capsys.readouterr()
    assert re.fullmatch(
        r"ok: \d+ case\(s\) in \d+ file\(s\); the oracle agrees with their \d+ expected: output\(s\)\n", out
    )
    assert err == ""


def test_validate_bad_file_exits_2_with_one_line_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.yaml").write_text(BAD, encoding="utf-8")
    assert main(["validate", "bad.yaml"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    *problems, count = err.splitlines()
    assert count == "2 problem(s) in 1 file(s)"
    found = [PROBLEM_LINE.match(line) for line in problems]
    assert all(found), problems
    by_field = {m["field"]: m for m in found if m}
    assert set(by_field) == {"InputTensor.DataType", "Axis"}
    lines = BAD.splitlines()
    data_type = by_field["InputTensor.DataType"]
    type_line = lines.index("      DataType: FLOAT99") + 1
    assert (data_type["path"], int(data_type["line"])) == ("bad.yaml", type_line)
    assert int(data_type["col"]) in (7, 17)  # the key or its value
    assert "FLOAT99" in data_type["message"]
    assert int(by_field["Axis"]["line"]) == lines.index("    Axis: 4") + 1


def test_validate_fails_a_negative_case_the_validator_accepts(mixed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "mixed.yaml"]) == 2
    err = capsys.readouterr().err
    expect_line = MIXED.splitlines().index("  - id: negative-accepted") + 2  # its "expect: invalid"
    assert f"mixed.yaml:{expect_line}:" in err
    assert "marked invalid, but the validator accepts it" in err


# run: the spec examples --------------------------------------------------------------------------------------------


def test_run_spec_examples(in_repo: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", TOPK_EXAMPLES, SLICE_EXAMPLES, "--ep", "cpu", "--report-dir", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "running 6 case(s) from 2 file(s) on cpu"
    assert "== 6 PASS ==" in out
    document = _strict_json(tmp_path / "results.json")
    assert list(document) == ["schema_version", "environment", "results"]
    assert document["schema_version"] == 1
    env = document["environment"]
    assert env["onnxruntime"] == onnxruntime.__version__
    (ep,) = env["eps"]
    assert {k: ep[k] for k in ("label", "alias", "name", "options", "target_feature_level")} == {
        "label": "cpu",
        "alias": "cpu",
        "name": "CPUExecutionProvider",
        "options": {},
        "target_feature_level": None,
    }
    assert [d["ep_name"] for d in ep["devices"]] == ["CPUExecutionProvider"]
    assert isinstance(env["gpus"], list)
    assert env["platform"] == platform.platform()
    assert env["python"] == platform.python_version()
    assert env["command"] == ["dmlconf", *argv]
    assert env["target_feature_level"] is None
    results = document["results"]
    assert [r["case"] for r in results] == TOPK_IDS + SLICE_IDS
    for r in results:
        assert set(r) == RESULT_KEYS
        assert (r["status"], r["ep"], r["data_type"], r["failure_kind"], r["message"]) == (
            "PASS",
            "cpu",
            "FLOAT32",
            None,
            "",
        )
        assert r["operator"] == ("TOP_K1" if "top_k1" in r["case"] else "SLICE1")
        assert r["dml_operator"] == ("DML_OPERATOR_TOP_K1" if "top_k1" in r["case"] else "DML_OPERATOR_SLICE1")
        assert r["lowering"] == ("TopK-11" if "top_k1" in r["case"] else "Slice-13")
        assert r["feature_level"] == "2_1"
        assert set(r["placement"].values()) == {"CPUExecutionProvider"}
        assert list(r["inputs_sha256"]) == ["InputTensor"]  # the digests themselves: tests/test_determinism.py
    # Output elements per example, from the pages' output Sizes: {1,1,3,2}, {1,1,2,4}, {1,1,3,3} twice, {1,1,2,2} twice.
    assert [r["metrics"]["elements"] for r in results] == [6, 8, 9, 9, 4, 4]
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert re.search(r"^\| PASS +\| +6 \|$", summary, re.MULTILINE)
    assert "## Failures and warnings" not in summary
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_keyword_filters(in_repo: None, tmp_path: Path) -> None:
    assert (
        main(["run", TOPK_EXAMPLES, SLICE_EXAMPLES, "--ep", "cpu", "--report-dir", str(tmp_path), "-k", "example-2"])
        == 0
    )
    assert [r["case"] for r in _results(tmp_path)] == [TOPK_IDS[1], SLICE_IDS[1]]


def test_keyword_matching_nothing_is_a_usage_error(
    in_repo: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", TOPK_EXAMPLES, "--ep", "cpu", "--report-dir", str(tmp_path), "-k", "nothing-like-it"]) == 2
    assert capsys.readouterr().err == "dmlconf: no cases selected (-k 'nothing-like-it' matched none)\n"
    assert not (tmp_path / "results.json").exists()


def test_a_full_id_selects_that_case_alone(mixed: Path) -> None:
    # "mixed.yaml::pass" is also a prefix of "mixed.yaml::pass-rank3".
    assert main(["run", "mixed.yaml", "--ep", "cpu", "--report-dir", "r", "-k", "mixed.yaml::pass"]) == 0
    assert _statuses(mixed / "r") == {"mixed.yaml::pass": "PASS"}
    assert main(["run", "mixed.yaml", "--ep", "cpu", "--report-dir", "r", "-k", "pass"]) == 0
    assert set(_statuses(mixed / "r")) == {"mixed.yaml::pass", "mixed.yaml::pass-rank3"}


# run: bad input and usage ------------------------------------------------------------------------------------------


def test_a_bad_file_runs_nothing(
    mixed: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("bad.yaml").write_text(BAD, encoding="utf-8")

    def must_not_run(*_: Any) -> None:
        raise AssertionError("a case was run")

    monkeypatch.setattr(pool, "run_batch", must_not_run)
    assert main(["run", ".", "--ep", "cpu", "--report-dir", "r"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "Traceback" not in err
    lines = err.splitlines()
    # Both problems are bad.yaml's: the count names the files with problems, not the two files read.
    assert lines[-2:] == ["2 problem(s) in 1 file(s)", "nothing was run: fix the problems above"]
    assert len(lines) == 4
    assert all(PROBLEM_LINE.match(line) and "bad.yaml:" in line for line in lines[:-2]), lines
    assert not (mixed / "r" / "results.json").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", TOPK_EXAMPLES, "--ep", "tpu"], "dmlconf: --ep: unknown execution provider 'tpu'"),
        (["run", TOPK_EXAMPLES, "--ep", "cpu:threads"], "dmlconf: --ep: bad EP option 'threads'"),
        (
            ["run", TOPK_EXAMPLES, "--ep", "cpu", "--feature-level", "three"],
            "dmlconf: --feature-level: not a feature level",
        ),
        (
            ["run", TOPK_EXAMPLES, "--ep", "cpu", "--feature-level", "9_9"],
            "dmlconf: --feature-level: not a DirectML feature level: '9_9' (known: 1_0, 2_0, 2_1, 3_0, 3_1, 4_0, 4_1, "
            "5_0, 5_1, 5_2, 6_0, 6_1, 6_2, 6_3, 6_4)",
        ),
        (
            ["run", TOPK_EXAMPLES, "--ep", "cpu:foo=bar"],
            "dmlconf: --ep: unknown CPU option 'foo': the CPU EP reads no provider options",
        ),
        (
            ["run", "cases/no_such_file.yaml", "--ep", "cpu"],
            "dmlconf: cases/no_such_file.yaml: no such file or directory",
        ),
        (["validate", "cases/no_such_dir"], "dmlconf: cases/no_such_dir: no such file or directory"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    in_repo: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main([*args, "--report-dir", str(tmp_path)] if args[0] == "run" else args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1 and err.startswith(message), err
    assert os.listdir(tmp_path) == []


def test_an_unusable_report_dir_is_a_usage_error_before_running(
    mixed: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("taken").write_text("a file, not a folder", encoding="utf-8")
    monkeypatch.setattr(pool, "run_batch", lambda *_: pytest.fail("a case was run"))
    assert main(["run", "mixed.yaml", "--ep", "cpu", "--report-dir", "taken"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("dmlconf: --report-dir: cannot create taken")


def test_a_zero_max_elements_is_one_usage_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", TOPK_EXAMPLES, "--max-elements", "0"]) == 2
    assert capsys.readouterr().err == "dmlconf: --max-elements: must be at least 1, got 0\n"


# run: verdicts and exit codes --------------------------------------------------------------------------------------


def test_target_feature_level_makes_a_3_1_case_not_supported(mixed: Path) -> None:
    args = ["run", "mixed.yaml", "-k", "pass-rank3", "--ep", "cpu", "--report-dir", "r"]
    assert main([*args, "--feature-level", "2_1"]) == 0
    (result,) = _results(mixed / "r")
    assert result["status"] == "NOT_SUPPORTED"
    assert result["message"] == "needs feature level 3_1; the target is 2_1"
    assert _strict_json(mixed / "r" / "results.json")["environment"]["target_feature_level"] == "2_1"
    assert main([*args, "--feature-level", "DML_FEATURE_LEVEL_3_1"]) == 0
    assert _statuses(mixed / "r") == {"mixed.yaml::pass-rank3": "PASS"}


def test_a_golden_that_disagrees_with_the_spec_exits_1(
    in_repo: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The page's example 1 with one index changed: the page says [3, 2] for the last row.
    text = (REPO / TOPK_EXAMPLES).read_text(encoding="utf-8")
    wrong = text.replace(
        "OutputIndexTensor: [[[[3, 2], [2, 3], [3, 2]]]]", "OutputIndexTensor: [[[[3, 2], [2, 3], [2, 3]]]]"
    )
    assert wrong != text
    case_file = tmp_path / "injected.yaml"
    case_file.write_text(wrong, encoding="utf-8")
    assert main(["run", str(case_file), "--ep", "cpu", "--report-dir", str(tmp_path / "r")]) == 1
    out = capsys.readouterr().out
    by_case = {r["case"].rpartition("::")[2]: r for r in _results(tmp_path / "r")}
    assert {name: r["status"] for name, r in by_case.items()} == {
        "example-1": "ERROR",
        "example-2-different-axis": "PASS",
        "example-3-tied-values": "PASS",
        "example-4-increasing": "PASS",
    }
    assert by_case["example-1"]["failure_kind"] == "golden_mismatch"
    assert "ERROR (golden_mismatch)" in out and "  repro: dmlconf run " in out
    # The console's one line names the expected: field (file:line:col) and the first element that differs.
    line = wrong.splitlines().index("      OutputIndexTensor: [[[[3, 2], [2, 3], [2, 3]]]]") + 1
    assert f"  {case_file}:{line}:7: expected.OutputIndexTensor[0, 0, 2, 0] = 2, the oracle gives 3\n" in out
    lines = out.rstrip().splitlines()  # the counts, the reports' paths, then the verdict
    assert (lines[-3], lines[-1]) == ("== 3 PASS, 1 ERROR ==", "FAILED — 1 failure (1 ERROR), no waiver file given")


def test_negative_cases(mixed: Path) -> None:
    assert main(["run", "mixed.yaml", "-k", "::negative", "--ep", "cpu", "--report-dir", "r"]) == 1
    results = {r["case"]: r for r in _results(mixed / "r")}
    assert results["mixed.yaml::negative"]["status"] == "INVALID"
    assert results["mixed.yaml::negative-accepted"]["status"] == "FAIL"
    assert results["mixed.yaml::negative-accepted"]["failure_kind"] == "validator_accepted"
    assert main(["run", "mixed.yaml", "-k", "mixed.yaml::negative", "--ep", "cpu", "--report-dir", "r"]) == 0
    assert _statuses(mixed / "r") == {"mixed.yaml::negative": "INVALID"}


def test_one_ep_named_twice_runs_once(in_repo: None, tmp_path: Path) -> None:
    argv = ["run", TOPK_EXAMPLES, "--ep", "cpu", "--ep", "CPUExecutionProvider", "--report-dir", str(tmp_path)]
    assert main(argv) == 0
    assert [(r["case"], r["ep"]) for r in _results(tmp_path)] == [(case, "cpu") for case in TOPK_IDS]


def test_two_eps_give_one_result_per_case_and_ep_and_a_matrix(
    in_repo: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two configurations of the CPU EP stand for two EPs: this machine may have no other. The CPU EP reads no provider
    # option, so the harness refuses any; this test lets "probe" through, which onnxruntime then ignores.
    probing = replace(ep_table.CPU, options={"probe": ep_table.ANY_TEXT})
    monkeypatch.setattr(
        ep_table, "KNOWN_EPS", tuple(probing if ep is ep_table.CPU else ep for ep in ep_table.KNOWN_EPS)
    )
    argv = ["run", TOPK_EXAMPLES, "--ep", "cpu", "--ep", "cpu:probe=1", "--report-dir", str(tmp_path)]
    assert main(argv) == 0
    pairs = [(r["case"], r["ep"]) for r in _results(tmp_path)]
    assert sorted(pairs) == sorted((case, ep) for case in TOPK_IDS for ep in ("cpu", "cpu:probe=1"))
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    # Both configurations pass every case: the Markdown lists no case, and says so.
    assert "## Cases whose verdicts differ between EPs\n\nnone: each of the 4 cases has the same verdict" in summary


# reproduction commands ---------------------------------------------------------------------------------------------


def test_every_repro_command_reproduces_its_result(mixed: Path) -> None:
    assert main(["run", "mixed.yaml", "--ep", "cpu", "--feature-level", "3_1", "--report-dir", "all"]) == 1
    results = _results(mixed / "all")
    assert {r["case"]: r["status"] for r in results} == MIXED_STATUSES
    for index, result in enumerate(results):
        words = shlex.split(result["repro"])
        assert words[:2] == ["dmlconf", "run"]
        report_dir = f"repro{index}"
        code = main([*words[1:], "--report-dir", report_dir])
        assert code == (1 if result["status"] in ("FAIL", "ERROR") else 0)
        (again,) = _results(mixed / report_dir)
        assert (again["case"], again["ep"], again["status"], again["failure_kind"]) == (
            result["case"],
            result["ep"],
            result["status"],
            result["failure_kind"],
        )


def test_repro_keeps_the_target_feature_level(mixed: Path) -> None:
    assert (
        main(["run", "mixed.yaml", "-k", "pass-rank3", "--ep", "cpu", "--feature-level", "2_1", "--report-dir", "r"])
        == 0
    )
    (result,) = _results(mixed / "r")
    assert main([*shlex.split(result["repro"])[1:], "--report-dir", "again"]) == 0
    assert _statuses(mixed / "again") == {"mixed.yaml::pass-rank3": "NOT_SUPPORTED"}


# the two entry points, as real processes -----------------------------------------------------------------------------


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONIOENCODING": "utf-8"}


def test_python_dash_m_conformance(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(BAD, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "validate", "bad.yaml"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    *problems, count = done.stderr.splitlines()
    assert count == "2 problem(s) in 1 file(s)"
    assert all(PROBLEM_LINE.match(line) for line in problems), problems


def test_dmlconf_script(tmp_path: Path) -> None:
    script = shutil.which("dmlconf", path=sysconfig.get_path("scripts")) or shutil.which("dmlconf")
    assert script, "the dmlconf console script is not installed"
    for name in (TOPK_EXAMPLES, SLICE_EXAMPLES):
        shutil.copy(REPO / name, tmp_path / Path(name).parent.name)
    # Outside the checkout, so that the installed package (not the working directory) is what gets imported.
    done = subprocess.run(
        [script, "run", "top_k1", "slice1", "--ep", "cpu", "--report-dir", "out"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "== 6 PASS ==" in done.stdout
    assert {r["status"] for r in _results(tmp_path / "out")} == {"PASS"}
    assert len(_results(tmp_path / "out")) == 6


# the command line itself (issue 26, item 19) ----------------------------------------------------------------------


def test_version_names_the_distribution_the_checkout_and_its_commit(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib import metadata

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False)
    where = f"{REPO}, git {commit.stdout.strip()[:12]}" if commit.returncode == 0 else f"{REPO}"
    assert capsys.readouterr().out == f"dmlconf {metadata.version('dml-conformance')} ({where})\n"


def test_help_is_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    """No reStructuredText reaches a terminal: the docstrings' ``literals`` stay in the code."""
    from conformance.cli.main import COMMAND_TABLE

    for argv in (["-h"], *([name, "-h"] for name in COMMAND_TABLE)):
        with pytest.raises(SystemExit):
            main(argv)
        out = capsys.readouterr().out
        assert out.startswith("usage: dmlconf") and "``" not in out and ":func:" not in out, argv


def _prefixes() -> list[tuple[str, list[str]]]:
    """Each command's long options cut by one character, with what the command needs besides: every one must be
    refused, not taken for the option it begins."""
    from conformance.cli.main import COMMAND_TABLE, options_of

    needs = {
        "validate": ["x.yaml"],
        "report": ["r.json"],
        "diff": ["a.json", "b.json"],
        "merge": ["r.json", "--report-dir", "d"],
        "fuzz": ["--operator", "TOP_K1"],
        "waivers": ["lint", "w.yaml"],
    }
    found = []
    for command in COMMAND_TABLE:
        for option in options_of(command):
            for flag in [flag for flag in (*option.flags, *option.deprecated) if flag.startswith("--")]:
                value = [] if option.flag else ["1"]
                found.append((command, [command, *needs.get(command, []), flag[:-1], *value]))
    return found


@pytest.mark.parametrize(("command", "argv"), _prefixes(), ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_no_option_is_taken_from_a_prefix(
    command: str, argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # where a command that took the prefix would write
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert f"unrecognized arguments: {argv[-2] if argv[-1] == '1' else argv[-1]}" in capsys.readouterr().err


def test_a_typo_of_quick_does_not_run_the_quick_selection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(pool, "run_batch", lambda *_: pytest.fail("a case was run"))
    with pytest.raises(SystemExit) as exit_info:
        main(["run", str(REPO / TOPK_EXAMPLES), "--qui", "--ep", "cpu", "--report-dir", str(tmp_path / "r")])
    assert exit_info.value.code == 2
    assert "error: unrecognized arguments: --qui" in capsys.readouterr().err


def test_problems_are_counted_in_the_files_that_have_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a-bad.yaml").write_text(BAD, encoding="utf-8")  # two problems
    (tmp_path / "b-good.yaml").write_text((REPO / TOPK_EXAMPLES).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "c-bad.yaml").write_text("operator: TOP_K1\n", encoding="utf-8")  # one: no cases
    assert main(["validate", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "3 problem(s) in 2 file(s)"


@pytest.mark.parametrize("spelling", ["top_k1", "DML_TOP_K1", " Top_K1 "])
def test_fuzz_takes_the_operator_as_a_case_file_does(
    spelling: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["fuzz", "--operator", spelling, "--ep", "cpu", "--time", "0.2", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("fuzzing TOP_K1 on cpu for 0.2 s")


@pytest.mark.parametrize(
    ("spelling", "hint"),
    [
        ("DML_TOPK", "did you mean TOP_K1?"),
        ("TOPK1", "did you mean TOP_K1?"),
        ("CONVOLUTION", "one of: TOP_K1, MEAN_VARIANCE_NORMALIZATION1, SLICE1"),
    ],
)
def test_fuzz_refuses_an_unknown_operator_as_a_case_file_does(
    spelling: str, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """In one line, with the nearest operator where one is near (cases/fields.py's unknown_operator)."""
    assert main(["fuzz", "--operator", spelling]) == 2
    assert capsys.readouterr().err == f"dmlconf: --operator: unknown operator {spelling!r} ({hint})\n"


def test_the_default_ep_says_directml_must_be_named_where_the_chain_is_set_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from conformance.cli.shared import chosen_eps

    if sys.platform == "win32":
        pytest.skip("DirectML is a default EP on Windows")
    monkeypatch.setattr(providers, "best_available_ep", lambda: providers.parse_ep("cpu"))
    monkeypatch.setattr("conformance.cli.shared.best_available_ep", lambda: providers.parse_ep("cpu"))
    vkd3d = tmp_path / "vkd3d"
    vkd3d.mkdir()
    for name in ("d3d12.dll", "d3d12core.dll"):
        (vkd3d / name).write_bytes(pe_file())  # an x86-64 PE file, as the chain's check wants
    wine = tmp_path / "bin" / "wine"
    wine.parent.mkdir()
    wine.write_text("#!/bin/sh\n", encoding="utf-8")
    wine.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wine.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("DMLCONF_VKD3D_PROTON", str(vkd3d))
    monkeypatch.setenv("DISPLAY", ":93")
    monkeypatch.delenv("DMLCONF_WINE", raising=False)
    assert [ep.text for ep in chosen_eps([])] == ["cpu"]
    assert capsys.readouterr().err == (
        "no --ep given: running on cpu, the best available; DirectML under Wine is set up here, but off Windows it "
        "runs only when named: --ep dml (dmlconf doctor checks the chain)\n"
    )
    assert [ep.text for ep in chosen_eps([providers.parse_ep("cpu")])] == ["cpu"]  # named: nothing to say
    monkeypatch.delenv("DISPLAY")
    assert [ep.text for ep in chosen_eps([])] == ["cpu"]  # no chain: nothing to say either
    assert capsys.readouterr().err == ""
