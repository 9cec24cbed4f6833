"""Every problem of a case is reported, each on its own ``file:line:col`` line: a duplicate id, a key the loader does
not know or a file's unknown key hides none of the case's other problems (the spec's among them), and an operator's
name that is not one is answered with the nearest.

Positions are counted by hand in each snippet, as in test_parse.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cases.suite import read_file
from conformance.cli.main import main
from conformance.model import Operator

MVN_HEADER = "operator: MEAN_VARIANCE_NORMALIZATION1\nfeature_level: '3_1'\ncases:\n"
INPUT = "    InputTensor: {Sizes: [1, 1, 2, 2], DataType: FLOAT32, Data: [1, 2, 3, 4]}\n"
SCALE_ONLY = "    ScaleTensor: {Sizes: [1, 1, 1, 1], DataType: FLOAT32, Data: [2]}\n"
GOOD_MVN = "  - id: a\n" + INPUT + "    Axes: [2, 3]\n"
MVN_KEYS = (
    "id, description, feature_level, expected, tolerance, modes, expect, reason, matrix, InputTensor, ScaleTensor, "
    "BiasTensor, Axes, NormalizeVariance, Epsilon, FusedActivation, OutputTensor"
)
BIAS_REQUIRED = "ScaleTensor: BiasTensor is required when ScaleTensor is used (the spec pairs them)"
EPSILOM = f"Epsilom: unknown field, did you mean Epsilon? (expected one of: {MVN_KEYS})"


def problems(tmp_path: Path, text: str) -> tuple[str, list[str]]:
    path = tmp_path / "case.yaml"
    path.write_text(text, encoding="utf-8")
    _, found = read_file(str(path))
    return str(path), [str(problem) for problem in found]


def test_a_duplicate_id_hides_none_of_the_case_s_other_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Lines: 4 the first case a, 7 the second (id at column 5), 9 its ScaleTensor without a BiasTensor, 11 a typo.
    text = MVN_HEADER + GOOD_MVN + "  - id: a\n" + INPUT + SCALE_ONLY + "    Axes: [2, 3]\n    Epsilom: 0.001\n"
    path, lines = problems(tmp_path, text)
    assert lines == [
        f"{path}:7:5: id: duplicate id 'a' (first at line 4)",
        f"{path}:11:5: {EPSILOM}",
        f"{path}:9:5: {BIAS_REQUIRED}",
    ]
    assert main(["validate", path]) == 2
    assert capsys.readouterr().err.splitlines() == [*lines, "3 problem(s) in 1 file(s)"]


def test_an_unknown_key_hides_none_of_the_spec_s_problems(tmp_path: Path) -> None:
    # Lines: 4 the case, 6 its ScaleTensor without a BiasTensor, 8 a typo.
    text = MVN_HEADER + "  - id: a\n" + INPUT + SCALE_ONLY + "    Axes: [2, 3]\n    Epsilom: 1\n"
    path, lines = problems(tmp_path, text)
    assert lines == [f"{path}:8:5: {EPSILOM}", f"{path}:6:5: {BIAS_REQUIRED}"]


def test_a_duplicate_id_alone_is_one_problem_and_no_entry(tmp_path: Path) -> None:
    path, lines = problems(tmp_path, MVN_HEADER + GOOD_MVN + GOOD_MVN)
    assert lines == [f"{path}:7:5: id: duplicate id 'a' (first at line 4)"]
    entries, _ = read_file(path)
    assert [entry.id.rpartition("::")[2] for entry in entries] == ["a"]


def test_a_negative_case_under_a_duplicate_id_reports_the_id_not_its_meant_problems(tmp_path: Path) -> None:
    negative = "  - id: a\n    expect: invalid\n    reason: no BiasTensor\n" + INPUT + SCALE_ONLY + "    Axes: [2, 3]\n"
    path, lines = problems(tmp_path, MVN_HEADER + GOOD_MVN + negative)
    assert lines == [f"{path}:7:5: id: duplicate id 'a' (first at line 4)"]


def test_a_file_s_unknown_key_hides_none_of_its_cases_problems(tmp_path: Path) -> None:
    header = MVN_HEADER.replace("cases:", "descripton: x\ncases:")  # line 3; the cases start at line 5
    path, lines = problems(tmp_path, header + "  - id: a\n" + INPUT + SCALE_ONLY + "    Axes: [2, 3]\n")
    assert lines == [
        f"{path}:3:1: descripton: unknown field, did you mean description? (expected one of: operator, "
        "feature_level, description, cases)",
        f"{path}:7:5: {BIAS_REQUIRED}",
    ]


def test_a_file_s_unreadable_feature_level_stops_before_its_cases(tmp_path: Path) -> None:
    """Its cases would be read at another level, and their problems would be that level's."""
    header = MVN_HEADER.replace("'3_1'", "'9_9'")
    path, lines = problems(tmp_path, header + "  - id: a\n" + INPUT + SCALE_ONLY + "    Axes: [2, 3]\n")
    assert len(lines) == 1 and lines[0].startswith(f"{path}:2:1: feature_level: not a DirectML feature level")


@pytest.mark.parametrize(
    ("written", "meant"),
    [
        ("TOPK1", "TOP_K1"),
        ("TOP_K", "TOP_K1"),
        ("topk1", "TOP_K1"),
        ("DML_TOPK", "TOP_K1"),
        ("DML_SLICE", "SLICE1"),
        ("slice", "SLICE1"),
        ("MEAN_VARIANCE_NORMALIZATION", "MEAN_VARIANCE_NORMALIZATION1"),
        ("DML_MEAN_VARIANCE_NORMALISATION1", "MEAN_VARIANCE_NORMALIZATION1"),
    ],
)
def test_an_operator_s_misspelt_name_is_answered_with_the_nearest(tmp_path: Path, written: str, meant: str) -> None:
    path, lines = problems(tmp_path, f"operator: {written}\ncases: []\n")
    assert lines == [f"{path}:1:1: operator: unknown operator {written!r} (did you mean {meant}?)"]


def test_a_name_near_no_operator_lists_them_from_the_enumeration(tmp_path: Path) -> None:
    path, lines = problems(tmp_path, "operator: CONVOLUTION\ncases: []\n")
    known = ", ".join(operator.value for operator in Operator)
    assert lines == [f"{path}:1:1: operator: unknown operator 'CONVOLUTION' (one of: {known})"]
