"""report/junit.py: JUnit XML from hand-made results and from the committed H100 run, parsed back with ElementTree."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path

from conformance.environment import environment_from_json
from conformance.gate.summary import summarize
from conformance.gate.waivers import Gate, Waiver, apply_waivers
from conformance.model import SourcePos, Status
from conformance.report.junit import render_junit
from conformance.results import Result, read_results

ENV = {
    "onnxruntime": "1.0.0",
    "onnxruntime_packages": {"onnxruntime-gpu": "1.0.0"},
    "platform": "TestOS-1",
    "python": "3.11.0",
    "numpy": "2.0",
    "gpus": [{"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04"}],
    "eps": [{"label": "cpu", "name": "CPUExecutionProvider", "options": {}}],
}
TRACKING = "https://example.com/7"
HOSTILE = 'm.yaml::<&>"\x01id'
FAIL_MESSAGE = "OutputIndexTensor: tie order differs\n  index 3: expected 1, actual 2"
REPRO = "dmlconf run t.yaml -k t.yaml::fail --ep cpu"
ODD_EP = "dml.1:a"  # dots and colons must not reach a classname


def _results() -> list[Result]:
    return [
        Result("t.yaml::pass", "TOP_K1", "cpu", Status.PASS, seconds=0.5),
        Result(
            "t.yaml::fail", "TOP_K1", "cpu", Status.FAIL, "tie_order", message=FAIL_MESSAGE, repro=REPRO, seconds=1.25
        ),
        Result("t.yaml::error", "TOP_K1", "cpu", Status.ERROR, "session", message="boom\ntraceback"),
        Result("t.yaml::unsupported", "TOP_K1", "cpu", Status.NOT_SUPPORTED, message="FLOAT64 not supported"),
        Result("s.yaml::warn", "SLICE1", "cpu", Status.QUALITY_WARNING, message="clamping differs from the oracle"),
        Result("s.yaml::invalid", "SLICE1", "cpu", Status.INVALID, message="rejected as expected"),
        Result("s.yaml::waived", "SLICE1", ODD_EP, Status.FAIL, "off_by_one", message="wrong slice", repro="r"),
        Result("s.yaml::inexpressible", "SLICE1", ODD_EP, Status.NOT_EXPRESSIBLE, message="no ONNX form"),
        Result(HOSTILE, "MEAN_VARIANCE_NORMALIZATION1", "cpu", Status.FAIL, "mismatch", message="<b>&\x02</b>"),
    ]


def _gate(results: list[Result], waived: Mapping[tuple[str, str], str]) -> Gate:
    """The gate of waivers naming each (case, EP) exactly, with its reason."""
    waivers = [
        Waiver(case, ep, None, None, why, TRACKING, SourcePos("k.yaml", 1, 1)) for (case, ep), why in waived.items()
    ]
    return apply_waivers(environment_from_json(ENV), results, waivers)


def _junit(results: list[Result], waived: Mapping[tuple[str, str], str] | None = None) -> str:
    gate = _gate(results, waived) if waived is not None else None
    return render_junit(summarize(environment_from_json(ENV), results), results, gate)


def _parse(text: str) -> ET.Element:
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    return ET.fromstring(text.encode("utf-8"))


def _counts(element: ET.Element) -> tuple[int, int, int, int]:
    tests, failures, errors, skipped = (
        int(element.get(key, "-1")) for key in ("tests", "failures", "errors", "skipped")
    )
    return tests, failures, errors, skipped


def _kinds(root: ET.Element) -> dict[str, list[str]]:
    return {case.get("name", ""): [child.tag for child in case] for case in root.iter("testcase")}


def test_counts_per_suite_and_in_total() -> None:
    root = _parse(_junit(_results(), {("s.yaml::waived", ODD_EP): "issue 42"}))
    assert root.tag == "testsuites" and root.get("name") == "dml-conformance"
    # Worked out by hand: 9 results; FAIL t.yaml::fail and the hostile one; ERROR t.yaml::error; skipped are
    # NOT_SUPPORTED, NOT_EXPRESSIBLE and the waived FAIL. Suites in (operator, EP) order.
    assert _counts(root) == (9, 2, 1, 3)
    assert root.get("time") == "1.750"
    suites = {suite.get("name"): _counts(suite) for suite in root.findall("testsuite")}
    assert suites == {
        "MEAN_VARIANCE_NORMALIZATION1 [cpu]": (1, 1, 0, 0),
        "SLICE1 [cpu]": (2, 0, 0, 0),
        "SLICE1 [dml.1:a]": (2, 0, 0, 2),
        "TOP_K1 [cpu]": (4, 1, 1, 1),
    }
    assert [suite.get("name") for suite in root.findall("testsuite")] == list(suites)
    top_k = root.findall("testsuite")[3]
    assert top_k.get("time") == "1.750"
    properties = {p.get("name"): p.get("value", "") for p in top_k.findall("properties/property")}
    assert {"GPU", "onnxruntime", "EP cpu", "platform"} <= set(properties)
    assert "NVIDIA H100 80GB HBM3" in properties["GPU"]


def test_element_kinds_per_testcase() -> None:
    root = _parse(_junit(_results(), {("s.yaml::waived", ODD_EP): "issue 42"}))
    assert _kinds(root) == {
        'm.yaml::<&>"id': ["failure"],
        "s.yaml::warn": ["system-out"],
        "s.yaml::invalid": [],
        "s.yaml::waived": ["skipped", "system-out"],
        "s.yaml::inexpressible": ["skipped"],
        "t.yaml::pass": [],
        "t.yaml::fail": ["failure"],
        "t.yaml::error": ["error"],
        "t.yaml::unsupported": ["skipped"],
    }
    cases = {case.get("name"): case for case in root.iter("testcase")}
    failure = cases["t.yaml::fail"].find("failure")
    assert failure is not None
    assert failure.get("message") == "OutputIndexTensor: tie order differs"
    assert failure.get("type") == "tie_order"
    assert failure.text == f"{FAIL_MESSAGE}\n\nrepro: {REPRO}"
    assert cases["t.yaml::fail"].get("classname") == "TOP_K1.cpu"
    assert cases["t.yaml::fail"].get("time") == "1.250"
    error = cases["t.yaml::error"].find("error")
    assert error is not None and error.get("message") == "boom" and error.get("type") == "session"
    assert error.text == "boom\ntraceback"  # no repro: no repro line
    skipped = cases["t.yaml::unsupported"].find("skipped")
    assert skipped is not None and "FLOAT64 not supported" in skipped.get("message", "")
    warning = cases["s.yaml::warn"].findtext("system-out")
    assert warning is not None and "clamping differs from the oracle" in warning


def test_waived_failure_is_skipped_but_kept() -> None:
    root = _parse(_junit(_results(), {("s.yaml::waived", ODD_EP): "issue <42> & co"}))
    case = next(c for c in root.iter("testcase") if c.get("name") == "s.yaml::waived")
    assert case.get("classname") == "SLICE1.dml_1_a"
    skipped = case.find("skipped")
    assert skipped is not None and skipped.get("message") == f"known failure: issue <42> & co ({TRACKING})"
    kept = case.findtext("system-out")
    assert kept is not None and "wrong slice" in kept and "off_by_one" in kept and "repro: r" in kept


def test_waiver_for_another_ep_does_not_apply() -> None:
    root = _parse(_junit(_results(), {("t.yaml::fail", ODD_EP): "elsewhere"}))
    # Unwaived: s.yaml::waived is a failure too, so 3 failures; 2 skipped (NOT_SUPPORTED, NOT_EXPRESSIBLE).
    assert _counts(root) == (9, 3, 1, 2)
    assert _kinds(root)["t.yaml::fail"] == ["failure"]


def test_hostile_text_is_escaped_and_xml_safe() -> None:
    text = _junit(_results())
    assert "\x01" not in text and "\x02" not in text
    assert "<b>" not in text and "<&>" not in text  # markup from a case file never appears raw
    root = _parse(text)
    case = next(c for c in root.iter("testcase") if c.get("classname") == "MEAN_VARIANCE_NORMALIZATION1.cpu")
    assert case.get("name") == 'm.yaml::<&>"id'  # round-trips, less the control character XML 1.0 forbids
    failure = case.find("failure")
    assert failure is not None and failure.text == "<b>&</b>" and failure.get("message") == "<b>&</b>"


def test_no_results() -> None:
    root = _parse(_junit([]))
    assert _counts(root) == (0, 0, 0, 0) and root.findall("testsuite") == []


def test_committed_h100_run() -> None:
    document = read_results(str(Path(__file__).parent.parent / "reports" / "h100-cuda" / "results.json"))
    results = document.results
    root = _parse(render_junit(summarize(document.environment, results), results))
    failures = sum(r.status is Status.FAIL for r in results)
    errors = sum(r.status is Status.ERROR for r in results)
    skipped = sum(r.status in (Status.NOT_SUPPORTED, Status.NOT_EXPRESSIBLE) for r in results)
    assert failures > 0 and skipped > 0  # the committed run has both; the check below means something
    assert _counts(root) == (len(results), failures, errors, skipped)
    assert len(list(root.iter("testcase"))) == len(results)
    suites = root.findall("testsuite")
    assert {s.get("name") for s in suites} == {f"{r.operator} [{r.ep}]" for r in results}
    assert sum(int(s.get("failures", "0")) for s in suites) == failures


def test_an_interrupted_run_is_an_error_testcase() -> None:
    env = {**ENV, "interrupted": True, "planned_results": 20}
    root = _parse(render_junit(summarize(environment_from_json(env), _results()), _results()))
    # 9 results and the run's own testcase, which is an error: a CI's test tab must not show a partial run green.
    assert _counts(root) == (10, 3, 2, 2)
    run = next(case for case in root.iter("testcase") if case.get("classname") == "dml-conformance")
    error = run.find("error")
    assert error is not None and error.get("message") == "interrupted: 9 of 20 cases run"


def test_skipped_case_files_are_an_error_testcase() -> None:
    env = {**ENV, "problems": ["bad.yaml:3:1: K: missing required field"]}
    root = _parse(render_junit(summarize(environment_from_json(env), _results()), _results()))
    run = next(case for case in root.iter("testcase") if case.get("classname") == "dml-conformance")
    error = run.find("error")
    assert error is not None and "case files skipped for 1 problem(s) (--keep-going)" in error.get("message", "")
    assert error.text is not None and "bad.yaml:3:1: K: missing required field" in error.text


def test_a_complete_run_has_no_run_testcase() -> None:
    root = _parse(render_junit(summarize(environment_from_json(ENV), _results()), _results()))
    assert all(case.get("classname") != "dml-conformance" for case in root.iter("testcase"))


def test_a_known_failure_that_passes_now_is_a_failure() -> None:
    # The gate fails on it (its waiver must go), so the CI's test tab must not show it green.
    results = [Result("t.yaml::fixed", "TOP_K1", "cpu", Status.PASS)]
    gate = _gate(results, {("t.yaml::fixed", "cpu"): "was broken"})
    root = _parse(render_junit(summarize(environment_from_json(ENV), results), results, gate))
    failure = next(root.iter("testcase")).find("failure")
    assert failure is not None and failure.get("type") == "unexpected_pass"
    assert "was broken" in failure.get("message", "") and "https://example.com/7" in failure.get("message", "")


def test_a_ci_side_parser_reads_the_same_verdicts(tmp_path: Path) -> None:
    # junitparser is what the publish-unit-test-result GitHub Action reads JUnit files with: it must see each
    # testcase's verdict as written (9 cases: FAIL x2, ERROR, skipped: NOT_SUPPORTED, NOT_EXPRESSIBLE, the waived FAIL).
    import junitparser  # type: ignore[import-untyped]

    path = tmp_path / "junit.xml"
    path.write_text(_junit(_results(), {("s.yaml::waived", ODD_EP): "known"}), encoding="utf-8")
    verdicts: dict[str, str] = {}
    for suite in junitparser.JUnitXml.fromfile(str(path)):
        for case in suite:
            verdicts[case.name] = type(case.result[0]).__name__ if case.result else "passed"
    assert verdicts == {
        "t.yaml::pass": "passed",
        "t.yaml::fail": "Failure",
        "t.yaml::error": "Error",
        "t.yaml::unsupported": "Skipped",
        "s.yaml::warn": "passed",
        "s.yaml::invalid": "passed",
        "s.yaml::waived": "Skipped",
        "s.yaml::inexpressible": "Skipped",
        'm.yaml::<&>"id': "Failure",
    }


def test_a_flaky_case_is_a_failure_and_a_crash_an_error() -> None:
    # FLAKY gave answers (that differ between repeats): a wrong answer, like FAIL; a CRASH gave none.
    results = [
        Result("t.yaml::flaky", "TOP_K1", "cpu", Status.FLAKY, "verdicts_differ", message="3 repeats: PASS, FAIL"),
        Result("t.yaml::crash", "TOP_K1", "cpu", Status.CRASH, "crash", message="worker died"),
    ]
    root = _parse(_junit(results))
    assert _kinds(root) == {"t.yaml::flaky": ["failure"], "t.yaml::crash": ["error"]}
    assert _counts(root)[1:3] == (1, 1)


WINE_DML = {
    "label": "dml",
    "name": "DmlExecutionProvider",
    "directml": {
        "version": "1.15.4",
        "chain": {
            "adapter": {"description": "llvmpipe (LLVM 15.0.6, 256 bits)", "vendor_id": 0x10005, "device_id": 0},
            "vulkan_driver": "llvmpipe Mesa 25.0.7",
            "directml_dll": "1.15.4.0",
            "onnxruntime_dll": "1.24.26.316",
        },
    },
}


def test_the_first_property_is_the_device_each_ep_ran_on() -> None:
    env = {**ENV, "gpus": [], "eps": [WINE_DML]}
    results = [Result("t.yaml::pass", "TOP_K1", "dml", Status.PASS)]
    root = _parse(render_junit(summarize(environment_from_json(env), results), results))
    first = next(root.iter("property"))
    assert first.get("name") == "EP dml ran on"
    assert str(first.get("value")).startswith("llvmpipe (LLVM 15.0.6, 256 bits) (PCI 10005:0000), driver llvmpipe")
    assert "DirectML.dll 1.15.4.0, onnxruntime.dll 1.24.26.316" in str(first.get("value"))


def test_a_runner_death_is_an_error_testcase_with_its_cases_and_stderr() -> None:
    death = {"ep": "cpu", "count": 2, "cases": ["t.yaml::pass"], "stderr": ["Segmentation fault"]}
    results = [Result("t.yaml::pass", "TOP_K1", "cpu", Status.PASS)]
    summary = summarize(environment_from_json({**ENV, "runner_deaths": [death]}), results)
    root = _parse(render_junit(summary, results))
    assert (root.get("tests"), root.get("errors")) == ("2", "1")
    (died,) = [case for case in root.iter("testcase") if case.get("classname") == "dml-conformance"]
    error = died.find("error")
    assert error is not None and error.get("type") == "runner_died"
    assert str(error.get("message")).startswith("EP cpu: the runner died 2 times while serving packs")
    assert "t.yaml::pass" in str(error.text) and "Segmentation fault" in str(error.text)
