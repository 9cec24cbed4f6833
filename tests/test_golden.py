"""A case's own ``expected:`` outputs against the oracle, by the rule the EP's outputs get: TOP_K1 and SLICE1 bit for
bit (-0 differs from +0, any NaN matches any NaN), TOP_K1's indices exactly, MVN1 within MVN1's tolerance. A
disagreement names the ``expected:`` field's file:line:col and the first differing element.

Every case here is written as a case file, so that its positions are the loader's; the oracle's outputs each test
relies on are worked out by hand in its comments (the spec's rules), never taken from the oracle's own answer."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from conformance.cases.generate import case_inputs
from conformance.cases.load import load_document
from conformance.cases.oracle import expected_outputs
from conformance.cases.parse import parse_document
from conformance.cli.main import main
from conformance.compare import golden
from conformance.compare.golden import golden_differences
from conformance.compare.operators import OPERATORS
from conformance.model import Case, Operator
from conformance.operators import MissingOperator, OperatorTable

BIT_FOR_BIT = "compared bit for bit: -0 differs from +0, any NaN matches any NaN"
BLAME = "the case file or the harness is wrong"

# The case: the page's tie rule (ties in ascending index order) over 0.0 (index 0) and -0.0 (index 1), which
# compare equal: INCREASING, K=3 of [0.0, -0.0, -1, 5] selects -1 (index 2), then 0.0 (index 0), then -0.0 (index 1).
SIGNED_ZEROS = """\
operator: TOP_K1
feature_level: "2_1"
cases:
  - id: signed-zeros
    InputTensor:
      Sizes: [1, 1, 1, 4]
      DataType: FLOAT32
      Data: [[[[0.0, -0.0, -1, 5]]]]
    Axis: 3
    K: 3
    AxisDirection: INCREASING
    expected:
      OutputValueTensor: [[[[VALUES]]]]
      OutputIndexTensor: [[[[INDICES]]]]
"""
SLICE = """\
operator: SLICE1
feature_level: "3_1"
cases:
  - id: copy
    InputTensor: {Sizes: [4], DataType: TYPE, Data: [DATA]}
    InputWindowOffsets: [0]
    InputWindowSizes: [4]
    InputWindowStrides: [1]
    expected:
      OutputTensor: [GOLDEN]
"""
# x = 1, 2, 3, 4 over its only axis, Epsilon 0: mean 2.5, variance 1.25, so (x - 2.5) / sqrt(1.25).
MVN = """\
operator: MEAN_VARIANCE_NORMALIZATION1
feature_level: "3_1"
cases:
  - id: four
    InputTensor: {Sizes: [1, 4], DataType: FLOAT32, Data: [[1, 2, 3, 4]]}
    Axes: [1]
    Epsilon: 0
    expected:
      OutputTensor: [[GOLDEN]]
"""
# The bits of the float32 NaN a case file's .nan becomes (PyYAML's, on this machine).
YAML_NAN_BITS = int(np.float32(yaml.safe_load(".nan")).view(np.uint32))
EXACT = [(v - 2.5) / math.sqrt(1.25) for v in (1.0, 2.0, 3.0, 4.0)]


def _case(tmp_path: Path, text: str) -> Case:
    path = tmp_path / "golden.yaml"
    path.write_text(text, encoding="utf-8")
    entries, problems = parse_document(load_document(path))
    assert problems == []
    (case,) = entries
    assert isinstance(case, Case)
    return case


def _differences(case: Case) -> dict[str, str]:
    inputs = case_inputs(case)
    return golden_differences(case, inputs, expected_outputs(case, inputs))


def test_top_k1_values_whose_zeros_have_swapped_signs_disagree(tmp_path: Path) -> None:
    right = _case(tmp_path, SIGNED_ZEROS.replace("VALUES", "-1, 0.0, -0.0").replace("INDICES", "2, 0, 1"))
    assert _differences(right) == {}
    swapped = _case(tmp_path, SIGNED_ZEROS.replace("VALUES", "-1, -0.0, 0.0").replace("INDICES", "2, 0, 1"))
    assert _differences(swapped) == {
        "OutputValueTensor": (
            f"{tmp_path / 'golden.yaml'}:13:7: expected.OutputValueTensor[0, 0, 0, 1] = -0.0 (0x80000000), the oracle "
            f"gives 0.0 (0x00000000)\n  2 of 3 elements differ (float32, {BIT_FOR_BIT}): {BLAME}"
        )
    }


def test_top_k1_indices_compare_exactly(tmp_path: Path) -> None:
    case = _case(tmp_path, SIGNED_ZEROS.replace("VALUES", "-1, 0.0, -0.0").replace("INDICES", "2, 1, 0"))
    assert _differences(case) == {
        "OutputIndexTensor": (
            f"{tmp_path / 'golden.yaml'}:14:7: expected.OutputIndexTensor[0, 0, 0, 1] = 1, the oracle gives 0\n"
            f"  2 of 3 elements differ (uint32, compared exactly): {BLAME}"
        )
    }


@pytest.mark.parametrize(
    ("data_type", "data", "golden", "first"),
    [
        # A copy keeps the sign of zero.
        ("FLOAT32", "1, -0.0, 2, 3", "1, 0, 2, 3", "[1] = 0.0 (0x00000000), the oracle gives -0.0 (0x80000000)"),
        # One float16 ULP at 1.0 (2**-10) apart.
        (
            "FLOAT16",
            "1, 2, 3, 4",
            "1.0009765625, 2, 3, 4",
            "[0] = 1.0009765625 (0x3c01), the oracle gives 1.0 (0x3c00)",
        ),
        (
            "FLOAT32",
            "1, 2, .nan, 4",
            "1, 2, 3, 4",
            f"[2] = 3.0 (0x40400000), the oracle gives nan (0x{YAML_NAN_BITS:08x})",
        ),
        ("INT8", "1, -2, 3, 4", "1, 2, 3, 4", "[1] = 2, the oracle gives -2"),
    ],
)
def test_slice1_goldens_compare_bit_for_bit(tmp_path: Path, data_type: str, data: str, golden: str, first: str) -> None:
    text = SLICE.replace("TYPE", data_type).replace("DATA", data)
    assert _differences(_case(tmp_path, text.replace("GOLDEN", data))) == {}
    (message,) = _differences(_case(tmp_path, text.replace("GOLDEN", golden))).values()
    rule = "compared exactly" if data_type == "INT8" else BIT_FOR_BIT
    assert message == (
        f"{tmp_path / 'golden.yaml'}:10:7: expected.OutputTensor{first}\n"
        f"  1 of 4 elements differ ({data_type.lower()}, {rule}): {BLAME}"
    )


def test_any_nan_matches_any_nan_as_for_the_ep(tmp_path: Path) -> None:
    """The compare stage's rule: a NaN's payload is not compared (a case file cannot even write one)."""
    text = SLICE.replace("TYPE", "FLOAT32").replace("DATA", "1, .nan, 3, 4").replace("GOLDEN", "1, .nan, 3, 4")
    case = _case(tmp_path, text)
    assert _differences(case) == {}
    quiet_with_payload = np.asarray([0x3F800000, 0x7FC00001, 0x40400000, 0x40800000], dtype=np.uint32).view(np.float32)
    assert golden_differences(case, case_inputs(case), {"OutputTensor": quiet_with_payload}) == {}


def test_a_golden_written_in_decimal_means_its_nearest_value_of_the_type(tmp_path: Path) -> None:
    # 0.1 is no float16 or float32 value: the golden and the data both mean the nearest one.
    for data_type in ("FLOAT16", "FLOAT32"):
        text = SLICE.replace("TYPE", data_type).replace("DATA", "0.1, 0.2, 0.3, 1e-3")
        assert _differences(_case(tmp_path, text.replace("GOLDEN", "0.1, 0.2, 0.3, 0.001"))) == {}


def test_mvn1_goldens_are_held_to_mvn1_s_tolerance(tmp_path: Path) -> None:
    nine_digits = ", ".join(f"{v:.9g}" for v in EXACT)
    assert _differences(_case(tmp_path, MVN.replace("GOLDEN", nine_digits))) == {}
    # Four digits are 4e-5 off at 1.3416: far beyond FLOAT32's default of 16 ULP (2e-6 there) or
    # atol = 2**-20 * max(sqrt(N), cond) with N = 4, cond = (4 + 2.5) / sqrt(1.25): about 5.5e-6.
    four_digits = ", ".join(f"{round(v, 4)}" for v in EXACT)  # -1.3416, -0.4472, 0.4472, 1.3416
    (message,) = _differences(_case(tmp_path, MVN.replace("GOLDEN", four_digits))).values()
    first, second = message.splitlines()
    assert first.startswith(f"{tmp_path / 'golden.yaml'}:9:7: expected.OutputTensor[0, 0] = -1.3416, the oracle gives ")
    ulps = abs(int(np.float32(-1.3416).view(np.int32)) - int(np.float32(EXACT[0]).view(np.int32)))  # same sign
    assert first.endswith(f"-1.3416408 (4.1e-05 apart, {ulps} ULP)")
    assert second == (
        f"  4 of 4 elements differ beyond MVN1's tolerance (|difference| <= 5.54e-06 or <= 16 ULP): {BLAME}"
    )
    # The case's own tolerance is the one its goldens are held to, as its EP outputs are.
    tolerant = MVN.replace("GOLDEN", four_digits) + "    tolerance: {atol: 0.0001}\n"
    assert _differences(_case(tmp_path, tolerant)) == {}


def test_a_golden_of_another_size_names_the_sizes(tmp_path: Path) -> None:
    case = _case(
        tmp_path, SLICE.replace("TYPE", "FLOAT32").replace("DATA", "1, 2, 3, 4").replace("GOLDEN", "1, 2, 3, 4")
    )
    inputs = case_inputs(case)
    oracle = expected_outputs(case, inputs)
    wrong = replace(case, expected={"OutputTensor": (1.0, 2.0, 3.0)})
    assert golden_differences(wrong, inputs, oracle) == {
        "OutputTensor": (
            f"{tmp_path / 'golden.yaml'}:10:7: expected.OutputTensor gives 3 values, the oracle's output has 4 "
            f"(shape (4,))\n  {BLAME}"
        )
    }


def test_a_run_reports_the_swapped_zeros_as_error_and_the_console_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("zeros.yaml").write_text(SIGNED_ZEROS.replace("VALUES", "-1, -0.0, 0.0").replace("INDICES", "2, 0, 1"))
    assert main(["run", "zeros.yaml", "--ep", "cpu", "--report-dir", "r"]) == 1
    out = capsys.readouterr().out
    assert "ERROR (golden_mismatch) zeros.yaml::signed-zeros [cpu]\n" in out
    assert "  zeros.yaml:13:7: expected.OutputValueTensor[0, 0, 0, 1] = -0.0 (0x80000000), the oracle gives 0.0" in out


# validate: the goldens against the oracle, as run would hold them (issue 26, item 12) -------------------------------


def test_validate_refuses_a_wrong_golden_at_its_expected_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    # -0.0 and 0.0 swapped in the values (line 13); the indices (line 14) right: the first is 0.0 from index 0.
    Path("zeros.yaml").write_text(SIGNED_ZEROS.replace("VALUES", "-1, -0.0, 0.0").replace("INDICES", "2, 0, 1"))
    # x = 1, 2, 3, 4 copied: a golden of 1, 2, 3, 5 is wrong at [3] (line 10) and one element of four differs.
    Path("slice.yaml").write_text(
        SLICE.replace("TYPE", "INT8").replace("DATA", "1, 2, 3, 4").replace("GOLDEN", "1, 2, 3, 5")
    )
    Path("right.yaml").write_text(
        SLICE.replace("TYPE", "INT8").replace("DATA", "1, 2, 3, 4").replace("GOLDEN", "1, 2, 3, 4")
    )
    assert main(["validate", "zeros.yaml", "slice.yaml", "right.yaml"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[:2] == [
        "zeros.yaml:13:7: expected.OutputValueTensor: [0, 0, 0, 1] = -0.0 (0x80000000), the oracle gives 0.0 "
        f"(0x00000000); 2 of 3 elements differ (float32, {BIT_FOR_BIT})",
        "slice.yaml:10:7: expected.OutputTensor: [3] = 5, the oracle gives 4; 1 of 4 elements differ (int8, compared "
        "exactly)",
    ]
    assert main(["validate", "right.yaml"]) == 0
    assert capsys.readouterr().out == "ok: 1 case(s) in 1 file(s); the oracle agrees with their 1 expected: output(s)\n"


def test_validate_runs_no_oracle_on_a_case_over_the_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A golden is checked only on a case that is valid, within --max-elements: the oracle never sees a tensor the
    limits refuse."""
    monkeypatch.chdir(tmp_path)
    Path("slice.yaml").write_text(
        SLICE.replace("TYPE", "INT8").replace("DATA", "1, 2, 3, 4").replace("GOLDEN", "9, 9, 9, 9")
    )
    monkeypatch.setattr("conformance.cli.commands.expected_outputs", lambda *_: pytest.fail("the oracle ran"))
    assert main(["validate", "slice.yaml", "--max-elements", "3"]) == 2
    (problem, _) = capsys.readouterr().err.splitlines()
    assert problem == "slice.yaml:5:19: InputTensor.Sizes: 4 elements is over the limit of 3 (--max-elements)"
    assert main(["validate", "slice.yaml", "--max-case-bytes", "10"]) == 2  # 4 elements: tens of bytes at least
    (problem, _) = capsys.readouterr().err.splitlines()
    assert problem.startswith("slice.yaml:5:19: InputTensor.Sizes: the case would take an estimated ")


def test_an_operator_the_table_lacks_is_refused_not_checked_by_another_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without SLICE1's entry, a SLICE1 golden must not be checked by any other operator's rule (once, every operator
    # golden.py did not name fell through to the bit-for-bit rule): the lookup names the table that lacks it.
    without_slice = OperatorTable("scratch/golden.py", [OPERATORS[op] for op in Operator if op != Operator.SLICE1])
    monkeypatch.setattr(golden, "OPERATORS", without_slice)
    case = _case(
        tmp_path, SLICE.replace("TYPE", "FLOAT32").replace("DATA", "1, 2, 3, 4").replace("GOLDEN", "1, 2, 3, 4")
    )
    with pytest.raises(MissingOperator, match=r"scratch/golden\.py has no entry for operator SLICE1"):
        _differences(case)
