"""Failure signatures: a known failure narrowed by failure_kind, bounds on what was measured and triage's verdict,
and the why every report prints for a failure that an entry names but whose failure lies outside it.

Every expected position is counted by hand in the YAML text of the test (1-based); every expected why is written
out from the metrics the test gives its results.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conformance.environment import environment_from_json
from conformance.gate.signature import mismatched, outside
from conformance.gate.summary import summarize
from conformance.gate.waiver_file import Signature, load_waiver_file
from conformance.gate.waivers import Waiver, apply_waivers, near_miss_keys
from conformance.model import SourcePos, Status
from conformance.problems import CaseFileError
from conformance.report.console import render_console
from conformance.report.junit import render_junit
from conformance.results import Result
from conformance.whose import Triage, Whose

ENV = environment_from_json({"gpus": [{"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04"}]})
TRACKER = "https://example.com/bugs/1"
TIES = "cases/top_k1/sweep.yaml::long-axis-ties-3"
MVN = "cases/mean_variance_normalization1/sweep.yaml::float16-3"


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "waivers.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def refusal(path: str) -> list[str]:
    with pytest.raises(CaseFileError) as info:
        load_waiver_file(path)
    return [str(problem) for problem in info.value.problems]


def entry(**signature: Any) -> Waiver:
    return Waiver("*", "*", None, None, "known", TRACKER, SourcePos("w.yaml", 2, 5), Signature(**signature))


def topk(kind: str, failing: int, sequences: int = 12) -> Result:
    metrics = {"failing_sequences": failing, "sequences": sequences, "elements": 2 * sequences}
    return Result(TIES, "TOP_K1", "cuda", Status.FAIL, kind, metrics=metrics)


def mvn(max_ulp_error: object, max_abs_error: object = 0.5, mismatches: int = 3) -> Result:
    metrics = {
        "max_ulp_error": max_ulp_error,
        "max_abs_error": max_abs_error,
        "mismatches": mismatches,
        "elements": 84,
        "max_ulp": 2,  # the tolerance: never what a bound is read against
    }
    return Result(MVN, "MEAN_VARIANCE_NORMALIZATION1", "dml", Status.FAIL, "tolerance", metrics=metrics)


# --- loading ----------------------------------------------------------------------------------------------------


def test_signature_fields_are_read(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "known_failures:\n"
        "  - case: a\n"
        "    ep: dml\n"
        "    failure_kind: [values, tolerance]\n"
        "    max_abs_error: 0.001\n"
        "    max_ulp: 4\n"
        "    max_mismatches: 3\n"
        "    verdict: driver\n"
        "    reason: r\n"
        "    tracking: BUG-1\n"
        "  - {case: b, ep: cuda, failure_kind: tie_order, verdict: [metacommand, half-precision], reason: r, "
        "tracking: '12'}\n",
    )
    first, second = load_waiver_file(path).known_failures
    assert first.signature == Signature(("values", "tolerance"), 0.001, 4.0, 3.0, (Whose.DRIVER,))
    assert second.signature == Signature(("tie_order",), verdicts=(Whose.METACOMMAND, Whose.HALF_PRECISION))


def test_an_entry_without_a_signature_has_an_empty_one(tmp_path: Path) -> None:
    path = write(tmp_path, "known_failures:\n  - {case: a, ep: dml, reason: r, tracking: BUG-1}\n")
    (only,) = load_waiver_file(path).entries
    assert only.signature == Signature() and not only.signature.narrowed


def test_bad_signature_fields_are_one_line_each_at_their_place(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "known_failures:\n"  # 1
        "  - case: a\n"  # 2
        "    ep: dml\n"  # 3
        "    failure_kind: []\n"  # 4
        "    max_abs_error: -0.5\n"  # 5
        "    max_ulp: four\n"  # 6
        "    max_mismatches: '3'\n"  # 7
        "    verdict: [driver, drivers]\n"  # 8: the list starts at col 14, its second item at col 23
        "    reason: r\n"  # 9
        "    tracking: BUG-1\n"  # 10
        "  - case: b\n"  # 11
        "    ep: dml\n"  # 12
        "    failure_kind: [values, 3]\n"  # 13: the list at col 19, its second item at col 28
        "    max_ulp: true\n"  # 14
        "    verdict: nobody\n"  # 15
        "    reason: r\n"
        "    tracking: BUG-1\n",
    )
    verdicts = "driver, directml, directml-regression, onnxruntime-lowering, half-precision, metacommand, "
    verdicts += "spec-or-oracle, undecided"
    assert refusal(path) == [
        f"{path}:4:5: known_failures.0.failure_kind: must not be an empty list (leave the field out to match any)",
        f"{path}:8:23: known_failures.0.verdict.1: must be one of: {verdicts}, got 'drivers'",
        f"{path}:5:5: known_failures.0.max_abs_error: must be a number >= 0, got -0.5",
        f"{path}:6:5: known_failures.0.max_ulp: must be a number >= 0, got 'four'",
        f"{path}:7:5: known_failures.0.max_mismatches: must be a number >= 0, got '3'",
        f"{path}:13:28: known_failures.1.failure_kind.1: must be text (quote it), got 3",
        f"{path}:15:5: known_failures.1.verdict: must be one of: {verdicts}, got 'nobody'",
        f"{path}:14:5: known_failures.1.max_ulp: must be a number >= 0, got True",
    ]


def test_a_flaky_entry_takes_no_signature(tmp_path: Path) -> None:
    path = write(tmp_path, "flaky:\n  - {case: a, ep: dml, max_ulp: 4, reason: r, tracking: BUG-1}\n")
    assert refusal(path) == [
        f"{path}:2:24: flaky.0.max_ulp: unknown field (expected one of: case, ep, device, driver, reason, tracking)"
    ]


# --- judging ----------------------------------------------------------------------------------------------------


def test_mismatches_are_elements_where_counted_else_failing_sequences() -> None:
    texts = [m.text if (m := mismatched(r)) else None for r in (mvn(412), topk("values", 3))]
    assert texts == ["3/84 elements differ", "3/12 sequences fail"]
    assert mismatched(Result(TIES, "TOP_K1", "cuda", Status.ERROR, "execution")) is None


@pytest.mark.parametrize(
    ("signature", "result", "why"),
    [
        ({"failure_kinds": ("tie_order",)}, topk("tie_order", 3), None),
        (
            {"failure_kinds": ("tie_order",)},
            topk("values", 3),
            "waived for tie_order; failed by values: 3/12 sequences fail",
        ),
        ({"failure_kinds": ("values", "tolerance")}, mvn(3), None),
        ({"max_ulp": 4.0}, mvn(4), None),  # the bound is inclusive
        ({"max_ulp": 4.0}, mvn(412), "waived up to max_ulp 4; failed with 412 ULP"),
        ({"max_ulp": 4.0}, mvn("nan"), "waived up to max_ulp 4; failed with nan ULP"),  # NaN meets no bound
        ({"max_abs_error": 0.25}, mvn(3, 0.5), "waived up to max_abs_error 0.25; failed with 0.5"),
        ({"max_abs_error": 0.5}, mvn(3, "inf"), "waived up to max_abs_error 0.5; failed with inf"),
        ({"max_mismatches": 3.0}, mvn(3, mismatches=3), None),
        ({"max_mismatches": 2.0}, mvn(3, mismatches=3), "waived up to max_mismatches 2; failed with 3 elements"),
        ({"max_mismatches": 2.0}, topk("values", 5), "waived up to max_mismatches 2; failed with 5 sequences"),
        (
            {"max_ulp": 4.0},
            Result(MVN, "MEAN_VARIANCE_NORMALIZATION1", "dml", Status.ERROR, "execution"),
            "waived up to max_ulp 4; failed with nothing measured",
        ),
        ({"verdicts": (Whose.DRIVER,)}, topk("values", 1), "waived for verdict driver; not triaged"),
    ],
)
def test_a_failure_outside_the_signature_says_why(signature: dict[str, Any], result: Result, why: str | None) -> None:
    assert outside(entry(**signature), result) == why


def test_the_verdict_is_matched_against_triage_s() -> None:
    triaged = Result(TIES, "TOP_K1", "dml", Status.FAIL, "values", triage=Triage(Whose.DIRECTML, "fails on WARP too"))
    assert outside(entry(verdicts=(Whose.DIRECTML, Whose.DRIVER)), triaged) is None
    assert outside(entry(verdicts=(Whose.DRIVER,)), triaged) == "waived for verdict driver; triaged directml"


# --- the gate ---------------------------------------------------------------------------------------------------


def test_a_near_miss_is_unexpected_and_the_gate_keeps_why() -> None:
    narrow = Waiver("*ties*", "cuda", None, None, "ties", TRACKER, SourcePos("w.yaml", 2, 5), Signature(("tie_order",)))
    failing = topk("values", 3)
    gate = apply_waivers(ENV, [failing], [narrow])
    assert gate.unexpected_failures == (failing,) and gate.expected_failures == () and gate.failed
    assert [(miss.result, miss.waiver, miss.why) for miss in gate.near_misses] == [
        (failing, narrow, "waived for tie_order; failed by values: 3/12 sequences fail")
    ]
    assert near_miss_keys(gate) == {
        (TIES, "cuda"): "waived for tie_order; failed by values: 3/12 sequences fail (the entry at w.yaml:2:5)"
    }


def test_a_later_entry_whose_signature_fits_waives_what_the_first_misses() -> None:
    ties = Waiver("*", "cuda", None, None, "ties", TRACKER, SourcePos("w.yaml", 2, 5), Signature(("tie_order",)))
    values = Waiver("*", "cuda", None, None, "values", TRACKER, SourcePos("w.yaml", 8, 5), Signature(("values",)))
    failing = topk("values", 3)
    gate = apply_waivers(ENV, [failing], [ties, values])
    assert gate.expected_failures == ((failing, values),) and gate.near_misses == () and not gate.failed


def test_a_near_miss_still_fails_so_its_entry_is_no_unexpected_pass() -> None:
    narrow = Waiver("*ties*", "cuda", None, None, "ties", TRACKER, SourcePos("w.yaml", 2, 5), Signature(("tie_order",)))
    other = Result(TIES + "-b", "TOP_K1", "cuda", Status.PASS)
    gate = apply_waivers(ENV, [topk("values", 3), other], [narrow])
    assert gate.unexpected_passes == ()


def test_console_and_junit_print_why(tmp_path: Path) -> None:
    narrow = Waiver("*ties*", "cuda", None, None, "ties", TRACKER, SourcePos("w.yaml", 2, 5), Signature(("tie_order",)))
    failing = topk("values", 3)
    summary = summarize(ENV, [failing])
    gate = apply_waivers(ENV, [failing], [narrow])
    why = "waived for tie_order; failed by values: 3/12 sequences fail (the entry at w.yaml:2:5)"
    assert f"  outside its waiver: {why}" in render_console(summary, gate=gate).splitlines()
    (case,) = ET.fromstring(render_junit(summary, [failing], gate)).iter("testcase")
    (failure,) = case.iter("failure")
    assert failure.get("message", "").startswith(f"outside its waiver: {why}; ")


def test_report_s_recap_line_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cli.main import main
    from conformance.results import write_results

    results = tmp_path / "results.json"
    write_results(str(results), {"gpus": []}, [topk("values", 3)])
    waivers = write(
        tmp_path,
        "known_failures:\n  - {case: '*ties*', ep: cuda, failure_kind: tie_order, reason: r, tracking: BUG-1}\n",
    )
    assert main(["report", str(results), "--waivers", waivers, "--quiet"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"UNEXPECTED FAIL {TIES} [cuda]: waived for tie_order; failed by values: 3/12 sequences fail (the entry at "
        f"{waivers}:2:5)",
        "FAILED — 1 unexpected failure",
    ]
