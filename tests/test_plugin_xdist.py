"""The pytest plugin under pytest-xdist (``-p xdist -n 2``): the same items, outcomes, reports and exit status as
the same run without it. Skipped where xdist is not installed (the ``test`` extra installs it)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import onnxruntime as ort  # type: ignore[import-untyped]
import pytest

from conformance.ep import execute as execute_module
from conformance.ep.providers import parse_ep
from conformance.pytest_plugin.xdist import worker_threads

pytest.importorskip("xdist")

pytest_plugins = ["pytester"]

# Each verdict the CPU EP gives, over two feature levels; with two EPs, ten items in all.
CASES = """\
operator: TOP_K1
feature_level: "2_1"
cases:
  - id: pass
    InputTensor: {Sizes: [1, 1, 3, 4], DataType: FLOAT32, Data: [[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]]}
    Axis: 3
    K: 2
  - id: wrong-golden
    InputTensor: {Sizes: [1, 1, 3, 4], DataType: FLOAT32, Data: [[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]]}
    Axis: 3
    K: 2
    expected:
      OutputValueTensor: [[[[11, 10], [9, 8], [7, 5]]]]
  - id: uint16
    InputTensor: {Sizes: [1, 1, 2, 4], DataType: UINT16, Data: [[[[1, 5, 3, 2], [9, 8, 7, 6]]]]}
    Axis: 3
    K: 2
  - id: negative-accepted
    expect: invalid
    reason: wrongly marked
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [[[[1, 2, 3, 4]]]]}
    Axis: 3
    K: 3
  - id: rank3
    feature_level: "3_1"
    InputTensor: {Sizes: [3, 4, 5], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 2}}
    Axis: 1
    K: 3
"""
BAD = """\
operator: TOP_K1
cases:
  - id: bad-type
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT99, Data: [[[[1, 2, 3, 4]]]]}
    Axis: 3
    K: 2
"""
# hypothesis's plugin imports hypothesis at the end of every run (in each worker too): most of a second each.
ARGS = ("-p", "no:hypothesispytest", "--ep", "cpu", "--feature-level", "2_1")
XDIST = ("-p", "xdist", "-n", "2")


def _outcomes(reprec: pytest.HookRecorder) -> dict[str, tuple[Any, ...]]:
    """Per item: its outcome, its status property and what it says (failure text, or the skip's place and
    reason), from the phase that decides it; the worker that ran it is left out."""
    found: dict[str, tuple[Any, ...]] = {}
    for report in reprec.getreports("pytest_runtest_logreport"):
        assert isinstance(report, pytest.TestReport)
        if report.when == "call" or (report.when == "setup" and not report.passed):
            said = report.longrepr if isinstance(report.longrepr, tuple) else str(report.longrepr or "")
            found[report.nodeid] = (report.outcome, dict(report.user_properties).get("status"), said)
    return found


def _workers(reprec: pytest.HookRecorder) -> set[str]:
    """The xdist workers that ran the items (empty for a run without xdist)."""
    reports = reprec.getreports("pytest_runtest_logreport")
    return {report.node.gateway.id for report in reports if getattr(report, "node", None) is not None}


def _junit_cases(path: Path) -> list[tuple[Any, ...]]:
    """Each testcase of a JUnit XML file with its properties and failure or skip, without its timing."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        properties = tuple((p.get("name"), p.get("value")) for p in case.iter("property"))
        verdicts = tuple((c.tag, c.get("message"), c.text) for c in case if c.tag in ("failure", "error", "skipped"))
        cases.append(
            (case.get("classname"), case.get("name"), case.get("file"), case.get("line"), properties, verdicts)
        )
    return sorted(cases, key=lambda case: (str(case[0]), str(case[1])))


def test_n2_gives_the_outcomes_and_junit_report_of_a_serial_run(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", cases=CASES)
    serial = pytester.inline_run(*ARGS, "--junitxml=serial.xml")
    parallel = pytester.inline_run(*ARGS, *XDIST, "--junitxml=parallel.xml")
    assert _workers(serial) == set() and _workers(parallel) == {"gw0", "gw1"}  # it did run on two workers
    expected = _outcomes(serial)
    assert len(expected) == 5 and {outcome for outcome, _, _ in expected.values()} == {"passed", "failed", "skipped"}
    assert _outcomes(parallel) == expected
    assert serial.ret == parallel.ret == pytest.ExitCode.TESTS_FAILED
    junit = _junit_cases(pytester.path / "serial.xml")
    assert len(junit) == 5 and _junit_cases(pytester.path / "parallel.xml") == junit


def test_n2_gates_on_waivers_as_a_serial_run(pytester: pytest.Pytester) -> None:
    """A waived failure is an xfail in the worker that ran it; a waived case that passes is XPASS(strict) once every
    report has reached the controller: the same outcomes and exit status as without -n."""
    pytester.makefile(".yaml", cases=CASES)
    (pytester.path / "known.yml").write_text(
        "known_failures:\n"
        + "".join(
            f'  - {{case: "cases.yaml::{name}", ep: cpu, reason: known, tracking: "https://example.com/{name}"}}\n'
            for name in ("wrong-golden", "negative-accepted", "pass")
        ),
        encoding="utf-8",
    )
    serial = pytester.inline_run(*ARGS, "--waivers", "known.yml")
    parallel = pytester.inline_run(*ARGS, *XDIST, "--waivers", "known.yml")
    assert _workers(parallel) == {"gw0", "gw1"}
    expected = _gated(serial)
    assert {nodeid: outcome for nodeid, (outcome, _) in expected.items()} == {
        "cases.yaml::pass": "failed",
        "cases.yaml::wrong-golden": "xfailed",
        "cases.yaml::uint16": "skipped",
        "cases.yaml::negative-accepted": "xfailed",
        "cases.yaml::rank3": "skipped",
    }
    assert expected["cases.yaml::pass"][1].startswith("[XPASS(strict)] known (https://example.com/pass)")
    assert (
        expected["cases.yaml::wrong-golden"][1] == "ERROR (golden_mismatch): known (https://example.com/wrong-golden)"
    )
    assert _gated(parallel) == expected
    assert serial.ret == parallel.ret == pytest.ExitCode.TESTS_FAILED


def _gated(reprec: pytest.HookRecorder) -> dict[str, tuple[str, str]]:
    """Per item: its outcome (xfailed apart) and, for an xfail its reason, for a failure its text."""
    found = {}
    for nodeid, (outcome, _, said) in _outcomes(reprec).items():
        report = next(
            r for r in reprec.getreports("pytest_runtest_logreport") if (r.nodeid, r.when) == (nodeid, "call")
        )
        xfailed = getattr(report, "wasxfail", None)
        found[nodeid] = ("xfailed", xfailed) if xfailed else (outcome, said if outcome == "failed" else "")
    return found


def test_a_refused_case_file_stops_an_n2_run_before_any_case_as_without_n(pytester: pytest.Pytester) -> None:
    """xdist runs the other files' cases after a collection error, where pytest stops; the plugin stops it."""
    pytester.makefile(".yaml", cases=CASES, bad=BAD)
    serial = pytester.inline_run(*ARGS, no_reraise_ctrlc=True)
    parallel = pytester.inline_run(*ARGS, *XDIST, no_reraise_ctrlc=True)
    assert serial.ret == parallel.ret == pytest.ExitCode.INTERRUPTED
    assert _outcomes(serial) == _outcomes(parallel) == {}
    failed = [
        [(report.nodeid, str(report.longrepr)) for report in run.getreports("pytest_collectreport") if report.failed]
        for run in (serial, parallel)
    ]
    assert failed[0] == failed[1] and [nodeid for nodeid, _ in failed[0]] == ["bad.yaml"]
    assert "InputTensor.DataType: must be one of FLOAT32" in failed[0][0][1]


def test_a_refused_case_file_stops_an_n2_run_whatever_the_rootdir(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node id of a case file is its name in case ids, from its checkout's root (cases/ids.py), not a path from
    pytest's rootdir: the controller still knows a refused case file when the two differ."""
    cases = pytester.path / "clone" / "cases"
    (pytester.path / "clone" / ".git").mkdir(parents=True)
    cases.mkdir()
    (cases / "cases.yaml").write_text(CASES, encoding="utf-8")
    (cases / "bad.yaml").write_text(BAD, encoding="utf-8")
    monkeypatch.chdir(pytester.path)
    parallel = pytester.inline_run(*ARGS, *XDIST, "clone/cases", no_reraise_ctrlc=True)
    assert parallel.ret == pytest.ExitCode.INTERRUPTED and _outcomes(parallel) == {}
    failed = [report.nodeid for report in parallel.getreports("pytest_collectreport") if report.failed]
    assert failed == ["cases/bad.yaml"]


def test_a_collection_error_outside_case_files_is_left_to_xdist(pytester: pytest.Pytester) -> None:
    """Only case files are the plugin's business: other test files keep xdist's behaviour (the rest runs)."""
    pytester.makefile(".yaml", cases=CASES)
    pytester.makepyfile(test_broken="import no_such_module_here\n")
    parallel = pytester.inline_run(*ARGS, *XDIST, no_reraise_ctrlc=True)
    assert parallel.ret == pytest.ExitCode.TESTS_FAILED and len(_outcomes(parallel)) == 5


@pytest.mark.parametrize(("cores", "workers", "threads"), [(2, 2, 1), (16, 4, 4), (16, 3, 5), (2, 8, 1)])
def test_a_worker_sessions_share_of_the_cores(
    monkeypatch: pytest.MonkeyPatch, cores: int, workers: int, threads: int
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    worker = SimpleNamespace(workerinput={"workerid": "gw0", "workercount": workers})
    assert worker_threads(cast(pytest.Config, worker)) == threads
    assert worker_threads(cast(pytest.Config, SimpleNamespace())) is None  # not a worker: onnxruntime's default


def test_session_threads_reach_onnxruntime() -> None:
    cpu = parse_ep("cpu")
    assert execute_module._session_options(cpu, [], strict=True, threads=1).intra_op_num_threads == 1
    default = ort.SessionOptions().intra_op_num_threads
    assert execute_module._session_options(cpu, [], strict=True).intra_op_num_threads == default
