"""A failure's first line says what went wrong and how much of it (issue 26, item 10): the count of elements that
failed, the first of them or the largest error, in every place that shows one line: the console, summary.md,
report.html's rows, junit's message and pytest's failure text.

The expected lines are worked out from the cases by hand (the spec's arithmetic, IEEE bit patterns), never taken
from the comparison's own output."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

import conformance.run.onnxruntime_path as onnxruntime_path
from conformance.cases.layouts import case_layouts
from conformance.cli.main import main
from conformance.compare.outputs import Verdict, compare
from conformance.model import (
    AxisDirection,
    Case,
    DataType,
    FeatureLevel,
    Mvn1Desc,
    Operator,
    Slice1Desc,
    TensorSpec,
    TopK1Desc,
)
from conformance.problems import first_line

pytest_plugins = ["pytester"]


def fnmatch_literal(text: str) -> str:
    """``text`` as an fnmatch pattern that matches it alone: brackets would be a character class."""
    return "".join({"[": "[[]", "]": "[]]", "*": "[*]", "?": "[?]"}.get(c, c) for c in text)


def _case(operator: Operator, desc: Mvn1Desc | Slice1Desc | TopK1Desc) -> Case:
    return Case("c", "c.yaml", operator, FeatureLevel(3, 1), desc, layouts=case_layouts(operator, desc))


def _mvn(shape: tuple[int, ...], data_type: DataType) -> Case:
    spec = TensorSpec(shape, data_type, data=(0.0,) * math.prod(shape))
    return _case(Operator.MEAN_VARIANCE_NORMALIZATION1, Mvn1Desc(spec, None, None, (0,), True, 1e-5, None))


def _mvn_verdict(case: Case, want: np.ndarray, got: np.ndarray) -> Verdict:
    inputs = {"InputTensor": np.zeros(case.descriptor.input.sizes, want.dtype)}
    return compare(case, inputs, {"OutputTensor": want}, {"OutputTensor": got})


def test_mvn1_beyond_tolerance_says_how_far() -> None:
    # float16, 4 elements reduced: atol = 2**-10 = 0.0009765625 (3 digits: 0.000977), max_ulp 2. 1.0 is 0x3C00 =
    # 15360 ULP above +0 (exponent 15 << 10), 1.0 away.
    case = _mvn((4,), DataType.FLOAT16)
    verdict = _mvn_verdict(case, np.zeros(4, np.float16), np.ones(4, np.float16))
    assert verdict.failure_kind == "tolerance"
    assert first_line(verdict.message, None) == (
        "4/4 elements beyond tolerance: max abs error 1.0 (15360 ULP) > 0.000977 or 2 ULP"
    )


def test_mvn1_the_largest_error_of_those_beyond_is_shown_with_its_ulps() -> None:
    # float32 over 4 elements: atol = 2**-20 * sqrt(4) = 2**-19 = 1.9073486328125e-06, max_ulp 16. Element 1 is off
    # by 0.5 (0.5 is 0x3F000000 ULP above 0), element 2 by 2**-18 (2**-18 is 0x36800000 above 0); element 3 is NaN.
    case = _mvn((4,), DataType.FLOAT32)
    got = np.array([0.0, 0.5, 2.0**-18, np.nan], np.float32)
    verdict = _mvn_verdict(case, np.zeros(4, np.float32), got)
    assert first_line(verdict.message, None) == (
        f"3/4 elements beyond tolerance: max abs error 0.5 ({0x3F000000} ULP) > 1.91e-06 or 16 ULP; 1 of them NaN/Inf"
    )


def test_mvn1_nan_where_a_number_is_expected() -> None:
    case = _mvn((3,), DataType.FLOAT32)
    verdict = _mvn_verdict(case, np.zeros(3, np.float32), np.full(3, np.nan, np.float32))
    assert verdict.failure_kind == "non_finite"
    assert first_line(verdict.message, None) == "3/3 elements differ (NaN/Inf): first at [0]: expected 0.0, got nan"


def test_slice1_bit_exact_first_difference() -> None:
    spec = TensorSpec((1, 1, 3, 4), DataType.INT32, data=(0.0,) * 12)
    case = _case(Operator.SLICE1, Slice1Desc(spec, (0, 0, 0, 0), (1, 1, 3, 4), (1, 1, 1, 1), None))
    want = np.arange(12, dtype=np.int32).reshape(1, 1, 3, 4)
    got = want.copy()
    got[0, 0, 1, 2] = 2  # element 1 * 4 + 2 = 6
    got[0, 0, 2, 3] = 0
    verdict = compare(case, {}, {"OutputTensor": want}, {"OutputTensor": got})
    assert first_line(verdict.message, None) == "2/12 elements differ: first at [0,0,1,2]: expected 6, got 2"


def test_slice1_signed_zero_is_named() -> None:
    spec = TensorSpec((2,), DataType.FLOAT32, data=(0.0, 0.0))
    case = _case(Operator.SLICE1, Slice1Desc(spec, (0,), (2,), (1,), None))
    want, got = np.array([1.0, -0.0], np.float32), np.array([1.0, 0.0], np.float32)
    verdict = compare(case, {}, {"OutputTensor": want}, {"OutputTensor": got})
    assert first_line(verdict.message, None) == "1/2 elements differ: first at [1]: expected -0.0, got 0.0"


def test_top_k1_tie_order_first_difference() -> None:
    # The spec's Example 3: row [3, 4, 5, 5], K 3, DECREASING selects 5 (index 2), 5 (index 3), 4 (index 1); an EP
    # that gives indices 3, 2, 1 differs at the first two of its 9 outputs.
    x = np.array([[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]], np.float32).reshape(1, 1, 3, 4)
    values = np.array([[3, 2, 2], [5, 5, 4], [6, 6, 6]], np.float32).reshape(1, 1, 3, 3)
    indices = np.array([[3, 1, 2], [2, 3, 1], [0, 1, 2]], np.uint32).reshape(1, 1, 3, 3)
    wrong = indices.astype(np.int64)
    wrong[0, 0, 1] = [3, 2, 1]
    spec = TensorSpec((1, 1, 3, 4), DataType.FLOAT32, data=(0.0,) * 12)
    case = _case(Operator.TOP_K1, TopK1Desc(spec, 3, 3, AxisDirection.DECREASING))
    verdict = compare(
        case,
        {"InputTensor": x},
        {"OutputValueTensor": values, "OutputIndexTensor": indices},
        {"OutputValueTensor": values, "OutputIndexTensor": wrong},
    )
    assert first_line(verdict.message, None) == (
        "tie_order: 2/9 elements differ: first at [0,0,1,0]: expected 5.0 (index 2), got 5.0 (index 3)"
    )


def test_a_wrong_shape_says_both_shapes() -> None:
    case = _mvn((3,), DataType.FLOAT32)
    verdict = _mvn_verdict(case, np.zeros(3, np.float32), np.zeros(2, np.float32))
    assert first_line(verdict.message, None) == "OutputTensor: shape differs: expected (3,), got (2,)"


# x = 1, 1, 3, 3 over its only axis, Epsilon 0: mean 2, variance 1, so the outputs are exactly -1, -1, 1, 1.
MVN_FILE = """\
operator: MEAN_VARIANCE_NORMALIZATION1
feature_level: "3_1"
cases:
  - id: four
    InputTensor: {Sizes: [1, 4], DataType: FLOAT32, Data: [[1, 1, 3, 3]]}
    Axes: [1]
    Epsilon: 0
"""
HEADLINE = "4/4 elements differ (NaN/Inf): first at [0,0]: expected -1.0, got nan"


@pytest.fixture
def nan_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """An EP that answers NaN everywhere: the real comparison, of NaN outputs (in this process: -j 0, --in-process)."""
    real = onnxruntime_path.compare

    Arrays = Mapping[str, np.ndarray]

    def nan_compare(case: Case, inputs: Arrays, expected: Arrays, actual: Arrays) -> Verdict:
        return real(case, inputs, expected, {name: np.full_like(a, np.nan) for name, a in actual.items()})

    monkeypatch.setattr(onnxruntime_path, "compare", nan_compare)


@pytest.mark.usefixtures("nan_outputs")
def test_every_report_leads_with_the_headline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("mvn.yaml").write_text(MVN_FILE, encoding="utf-8")
    assert main(["run", "mvn.yaml", "--ep", "cpu", "-j", "0", "--report-dir", "out"]) == 1
    console = capsys.readouterr().out
    assert f"  {HEADLINE}\n" in console
    (result,) = json.loads(Path("out/results.json").read_text(encoding="utf-8"))["results"]
    assert (result["status"], result["failure_kind"]) == ("FAIL", "non_finite")
    markdown = HEADLINE.replace("[", "\\[").replace("]", "\\]")  # CommonMark's escapes, as summary.md writes them
    assert f"| {markdown} |" in Path("out/summary.md").read_text(encoding="utf-8")
    assert f'<span class="why">{HEADLINE}</span>' in Path("out/report.html").read_text(encoding="utf-8")
    (failure,) = ET.parse("out/junit.xml").getroot().iter("failure")
    assert failure.get("message") == HEADLINE


@pytest.mark.usefixtures("nan_outputs")
def test_pytest_shows_the_headline(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", mvn=MVN_FILE)
    result = pytester.runpytest("-p", "no:hypothesispytest", "--ep", "cpu", "--in-process", "-rf")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"FAIL (non_finite) on cpu: {fnmatch_literal(HEADLINE)}", "lowering: *"])
    # pytest's short summary keeps the first line of a failure: what went wrong.
    result.stdout.fnmatch_lines(["FAILED mvn.yaml::four - FAIL (non_finite) on cpu: 4/4 elements differ*"])
