"""The pytest plugin, in pytest runs of their own (pytester); it is loaded through its ``pytest11`` entry point."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

# Loaded here, before any in-process pytester run: the plugin loads onnxruntime and the run's modules with the first
# case, and pytester removes what a run imported when it ends, so a second run would load onnxruntime's extension
# into the process again, which aborts it.
import conformance.survive.pool  # noqa: F401
from conformance import ep_table
from conformance.cli.main import main
from conformance.survive.faults import TEST_FAULT

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
TOPK_EXAMPLES = REPO / "cases" / "top_k1" / "spec_examples.yaml"
EXAMPLE_NAMES = ["example-1", "example-2-different-axis", "example-3-tied-values", "example-4-increasing"]
# One case per verdict that the CPU EP can give, with the status the CLI gives it.
MIXED = """\
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
BAD = """\
operator: TOP_K1
cases:
  - id: bad-type
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT99, Data: [[[[1, 2, 3, 4]]]]}
    Axis: 3
    K: 2
"""


# In-process runs leave hypothesis's plugin out: pytester restores sys.modules after each run, so that plugin would
# import hypothesis afresh (most of a second) every time.
FAST = ("-p", "no:hypothesispytest")


@pytest.fixture
def examples(pytester: pytest.Pytester) -> Path:
    return Path(shutil.copy(TOPK_EXAMPLES, pytester.path / "spec_examples.yaml"))


def _case_reports(reprec: pytest.HookRecorder) -> dict[str, pytest.TestReport]:
    """The call-phase report of each case item (a skip is reported from setup or call), by node id."""
    reports: dict[str, pytest.TestReport] = {}
    for report in reprec.getreports("pytest_runtest_logreport"):
        assert isinstance(report, pytest.TestReport)
        if report.when == "call" or (report.when == "setup" and report.skipped):
            reports[report.nodeid] = report
    return reports


def test_collects_the_spec_examples_with_the_harness_ids(pytester: pytest.Pytester, examples: Path) -> None:
    reprec = pytester.inline_run(*FAST, "--ep", "cpu")
    reports = _case_reports(reprec)
    assert list(reports) == [f"spec_examples.yaml::{name}" for name in EXAMPLE_NAMES]
    assert all(report.passed for report in reports.values())
    assert [dict(report.user_properties)["status"] for report in reports.values()] == ["PASS"] * 4
    reprec.assertoutcome(passed=4)


def test_the_plugin_is_registered_once(pytester: pytest.Pytester, examples: Path) -> None:
    pytester.makeconftest("""
        import conformance.pytest_plugin.plugin

        def pytest_report_header(config):
            plugins = config.pluginmanager.get_plugins()
            count = sum(1 for plugin in plugins if plugin is conformance.pytest_plugin.plugin)
            names = sorted(config.pluginmanager.get_name(p) for p in plugins if p is conformance.pytest_plugin.plugin)
            return f"conformance plugin registered {count} time(s) as {names}"
    """)
    result = pytester.runpytest_subprocess("--ep", "cpu", "-v")
    result.stdout.fnmatch_lines(
        ["conformance plugin registered 1 time(s) as ['dml_conformance']", "*spec_examples.yaml::example-1 PASSED*"]
    )
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=4)


def test_a_bad_golden_fails_with_the_difference_and_a_repro_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", mixed=MIXED)
    result = pytester.runpytest(*FAST, "--ep", "cpu", "-k", "wrong")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ mixed.yaml::wrong-golden [[]cpu[]] _*",
            "ERROR (golden_mismatch) on cpu: *mixed.yaml:*:7: expected.OutputValueTensor[[]0, 0, 2, 1[]] = 5.0 "
            "(0x40a00000), the oracle gives 6.0 (0x40c00000)",
            "  1 of 6 elements differ (float32, compared bit for bit: -0 differs from +0, any NaN matches any NaN): "
            "the case file or the harness is wrong",
            "",
            "lowering: -",
            "reproduce: dmlconf run mixed.yaml -k mixed.yaml::wrong-golden --ep cpu",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_not_supported_is_skipped_with_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", mixed=MIXED)
    reprec = pytester.inline_run(*FAST, "--ep", "cpu", "-k", "uint16")
    (report,) = _case_reports(reprec).values()
    assert report.skipped
    assert isinstance(report.longrepr, tuple)
    path, line, reason = report.longrepr
    assert (Path(path).name, line) == ("mixed.yaml", MIXED.splitlines().index("  - id: uint16") + 1)
    # The CPU EP registers no uint16 TopK kernel.
    assert reason.startswith("Skipped: NOT_SUPPORTED: no TopK") and "uint16" in reason


def test_a_bad_case_file_errors_at_collection(pytester: pytest.Pytester, examples: Path) -> None:
    pytester.makefile(".yaml", bad=BAD)
    result = pytester.runpytest(*FAST, "--ep", "cpu")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*_ ERROR collecting bad.yaml _*",
            "*bad.yaml:4:*: InputTensor.DataType: must be one of FLOAT32, *, got 'FLOAT99'",
            "ERROR bad.yaml",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_only_yaml_with_a_top_level_operator_is_collected(pytester: pytest.Pytester, examples: Path) -> None:
    pytester.makefile(".yaml", config="name: not a case file\nsettings:\n  operator: TOP_K1\n")
    pytester.makefile(".yml", other="# operator: TOP_K1 in a comment\nitems: [1, 2]\n")
    pytester.makefile(".txt", notes="operator: TOP_K1\n")
    result = pytester.runpytest(*FAST, "--ep", "cpu", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    collected = [line for line in result.stdout.lines if "::" in line]
    assert collected == [f"spec_examples.yaml::{name}" for name in EXAMPLE_NAMES]


def test_verdicts_match_the_cli(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", mixed=MIXED)
    reprec = pytester.inline_run(*FAST, "--ep", "cpu")
    by_plugin = {nodeid: dict(report.user_properties)["status"] for nodeid, report in _case_reports(reprec).items()}
    outcomes = {nodeid: report.outcome for nodeid, report in _case_reports(reprec).items()}
    assert main(["run", "mixed.yaml", "--ep", "cpu", "--report-dir", "cli"]) == 1
    results = json.loads((pytester.path / "cli" / "results.json").read_text(encoding="utf-8"))["results"]
    by_cli = {r["case"]: r["status"] for r in results}
    assert (
        by_plugin
        == by_cli
        == {
            "mixed.yaml::pass": "PASS",
            "mixed.yaml::wrong-golden": "ERROR",
            "mixed.yaml::uint16": "NOT_SUPPORTED",
            "mixed.yaml::negative": "INVALID",
            "mixed.yaml::negative-accepted": "FAIL",
        }
    )
    assert outcomes == {
        "mixed.yaml::pass": "passed",
        "mixed.yaml::wrong-golden": "failed",
        "mixed.yaml::uint16": "skipped",
        "mixed.yaml::negative": "passed",
        "mixed.yaml::negative-accepted": "failed",
    }


def _waivers(*entries: tuple[str, str]) -> str:
    """A waiver file naming each (case pattern, reason) on the CPU EP."""
    items = "".join(
        f'  - case: "{case}"\n    ep: cpu\n    reason: {reason}\n    tracking: https://example.com/bugs/{n}\n'
        for n, (case, reason) in enumerate(entries, 1)
    )
    return "known_failures:\n" + items


# The two failing results the CPU EP gives on MIXED: the harness's ERROR for a golden that disagrees with the oracle,
# and the FAIL of a negative case the validator accepts.
KNOWN = (("mixed.yaml::wrong-golden", "the golden is wrong"), ("mixed.yaml::negative-accepted", "marked wrongly"))


@pytest.mark.parametrize(
    ("entries", "outcomes", "code"),
    [
        # Every failure waived: each an xfail, and the session passes.
        (KNOWN, {"pass": "passed", "wrong-golden": "xfailed", "negative-accepted": "xfailed"}, 0),
        # One failure not waived: it fails the session alone.
        (KNOWN[:1], {"pass": "passed", "wrong-golden": "xfailed", "negative-accepted": "failed"}, 1),
        # A waived case that passes: XPASS(strict), a failure (the known failure is fixed: remove the waiver).
        (
            (*KNOWN, ("mixed.yaml::pass", "fixed since")),
            {"pass": "xpass-strict", "wrong-golden": "xfailed", "negative-accepted": "xfailed"},
            1,
        ),
        # A pattern that also covers failing cases: its passing case is no unexpected pass while they fail.
        (
            (("mixed.yaml::*", "all of them"),),
            {"pass": "passed", "wrong-golden": "xfailed", "negative-accepted": "xfailed"},
            0,
        ),
    ],
    ids=["all-waived", "one-unexpected", "waived-pass", "pattern-still-failing"],
)
def test_waived_failures_are_xfail_and_waived_passes_xpass_strict_as_run_gates_them(
    pytester: pytest.Pytester, entries: tuple[tuple[str, str], ...], outcomes: dict[str, str], code: int
) -> None:
    pytester.makefile(".yaml", mixed=MIXED)
    waivers = pytester.path / "known.yml"  # .yml beside the case file: not a case file, so not collected
    waivers.write_text(_waivers(*entries), encoding="utf-8")
    reprec = pytester.inline_run(*FAST, "--ep", "cpu", "--waivers", str(waivers))
    found: dict[str, str] = {}
    for nodeid, report in _case_reports(reprec).items():
        name = nodeid.rpartition("::")[2]
        if hasattr(report, "wasxfail"):
            found[name] = "xfailed"
            reason = dict(entries).get(f"mixed.yaml::{name}", "all of them")
            assert reason in report.wasxfail and "https://example.com/bugs/" in report.wasxfail
        elif report.failed and str(report.longrepr).startswith("[XPASS(strict)] fixed since"):
            found[name] = "xpass-strict"
        else:
            found[name] = report.outcome
    assert found == {**outcomes, "uint16": "skipped", "negative": "passed"}
    assert reprec.ret == code
    # The same file gates dmlconf run the same way.
    assert main(["run", "mixed.yaml", "--ep", "cpu", "--report-dir", "cli", "--waivers", str(waivers)]) == code


def test_a_waived_pass_reads_as_pytest_s_strict_xpass(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", mixed=MIXED)
    (pytester.path / "known.yml").write_text(_waivers(*KNOWN, ("mixed.yaml::pass", "fixed since")), encoding="utf-8")
    result = pytester.runpytest(*FAST, "--ep", "cpu", "--waivers", "known.yml", "-rxf")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1, skipped=1, xfailed=2)
    result.stdout.fnmatch_lines(
        [
            "[[]XPASS(strict)[]] fixed since (https://example.com/bugs/3): the known failure passes now; remove its "
            "waiver (known.yml:10:5)",
            "XFAIL mixed.yaml::wrong-golden - ERROR (golden_mismatch): the golden is wrong "
            "(https://example.com/bugs/1)",
            "FAILED mixed.yaml::pass - [[]XPASS(strict)[]] fixed since*",
        ]
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "ERROR: missing.yml:1:1: cannot read file: *"),
        ("known_failures: [", "ERROR: known.yml:1:*: YAML syntax error: *"),
        (
            'known_failures:\n  - {case: "x", ep: cpu, reason: r}\n',
            "ERROR: known.yml:2:5: *tracking: missing required field",
        ),
    ],
    ids=["missing", "not-yaml", "no-tracking"],
)
def test_a_bad_waiver_file_is_a_usage_error(
    pytester: pytest.Pytester, examples: Path, text: str | None, message: str
) -> None:
    if text is not None:
        (pytester.path / "known.yml").write_text(text, encoding="utf-8")
    result = pytester.runpytest(*FAST, "--ep", "cpu", "--waivers", "missing.yml" if text is None else "known.yml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] != "" and len([line for line in result.stderr.lines if line]) == 1
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_several_eps(pytester: pytest.Pytester, examples: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two configurations of the CPU EP stand for two EPs (this machine may have no other): the harness refuses any
    # CPU option, as the CPU EP reads none; this test lets "probe" through, which onnxruntime then ignores.
    probing = replace(ep_table.CPU, options={"probe": ep_table.ANY_TEXT})
    monkeypatch.setattr(
        ep_table, "KNOWN_EPS", tuple(probing if ep is ep_table.CPU else ep for ep in ep_table.KNOWN_EPS)
    )
    result = pytester.runpytest(*FAST, "--ep", "cpu", "--ep", "CPUExecutionProvider", "--collect-only", "-q")
    assert [line for line in result.stdout.lines if "::" in line] == [
        f"spec_examples.yaml::{name}" for name in EXAMPLE_NAMES
    ]
    result = pytester.runpytest(*FAST, "--ep", "cpu", "--ep", "cpu:probe=1", "-k", "example-1")
    result.assert_outcomes(passed=2)
    result = pytester.runpytest(*FAST, "--ep", "cpu", "--ep", "cpu:probe=1", "--collect-only", "-q", "-k", "example-1")
    assert [line for line in result.stdout.lines if "::" in line] == [
        "spec_examples.yaml::example-1@cpu",
        "spec_examples.yaml::example-1@cpu:probe=1",
    ]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--ep", "tpu"], "ERROR: --ep: unknown execution provider 'tpu'*"),
        (["--feature-level", "three"], "ERROR: --feature-level: not a feature level: 'three'*"),
        (
            ["--feature-level", "9_9"],
            "ERROR: --feature-level: not a DirectML feature level: '9_9' (known: 1_0, *, 6_4)",
        ),
        (["--ep", "cpu:foo=bar"], "ERROR: --ep: unknown CPU option 'foo': the CPU EP reads no provider options"),
        (["--max-elements", "0"], "ERROR: --max-elements: must be at least 1, got 0"),
        (["--case-timeout", "-1"], "ERROR: --case-timeout: must be at least 0, got -1"),
        (["--case-timeout", "soon"], "ERROR: --case-timeout: not a number of seconds: 'soon'"),
    ],
)
def test_bad_options_are_usage_errors(
    pytester: pytest.Pytester, examples: Path, option: list[str], message: str
) -> None:
    result = pytester.runpytest(*FAST, *option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_feature_level_target(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        rank3="""\
operator: TOP_K1
feature_level: "3_1"
cases:
  - id: rank3
    InputTensor: {Sizes: [3, 4, 5], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 2}}
    Axis: 1
    K: 3
""",
    )
    reprec = pytester.inline_run(*FAST, "--ep", "cpu", "--feature-level", "2_1")
    (report,) = _case_reports(reprec).values()
    assert report.skipped and isinstance(report.longrepr, tuple)
    assert report.longrepr[2] == "Skipped: NOT_SUPPORTED: needs feature level 3_1; the target is 2_1"
    pytester.inline_run(*FAST, "--ep", "cpu", "--feature-level", "3_1").assertoutcome(passed=1)


@pytest.mark.parametrize(
    ("fault", "options", "headline"),
    [
        ("segv", (), "CRASH (worker_died) on cpu: *SIGSEGV*"),
        ("hang", ("--case-timeout", "1"), "TIMEOUT (timeout) on cpu: *"),
    ],
)
def test_a_case_that_crashes_or_hangs_its_worker_fails_alone(
    pytester: pytest.Pytester, examples: Path, monkeypatch: pytest.MonkeyPatch, fault: str, options: Any, headline: str
) -> None:
    # The worker process (started with the first case) inherits the variable; the session goes on in a fresh one.
    monkeypatch.setenv(TEST_FAULT, f"{fault}:spec_examples.yaml::example-3")
    result = pytester.runpytest(*FAST, "--ep", "cpu", *options)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*_ spec_examples.yaml::example-3-tied-values [[]cpu[]] _*", headline])


def test_workers_that_cannot_start_end_the_session_and_in_process_needs_none(
    pytester: pytest.Pytester, examples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TEST_FAULT, "start:")  # every worker process dies before it is ready
    result = pytester.runpytest(*FAST, "--ep", "cpu")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines(["*dml-conformance: 3 worker processes in a row died*"])
    assert "Traceback" not in result.stdout.str()
    pytester.runpytest(*FAST, "--ep", "cpu", "--in-process").assert_outcomes(passed=4)


def test_a_symbolic_link_out_of_the_collected_folder_is_refused(pytester: pytest.Pytester, examples: Path) -> None:
    outside = pytester.path.parent / f"{pytester.path.name}-outside"
    outside.mkdir()
    shutil.copy(TOPK_EXAMPLES, outside / "elsewhere.yaml")
    (pytester.path / "link.yaml").symlink_to(outside / "elsewhere.yaml")
    result = pytester.runpytest(*FAST, "--ep", "cpu")
    result.assert_outcomes(errors=1)  # refused with one line; as for any refused case file, no case runs
    real = (outside / "elsewhere.yaml").resolve()
    result.stdout.fnmatch_lines([f"*link.yaml:1:1: a symbolic link to outside the folders collected ({real}): refused"])
    # Named on the command line, it is the user's choice.
    pytester.runpytest(*FAST, "--ep", "cpu", "link.yaml").assert_outcomes(passed=4)


def test_modes_run_as_items_and_a_mode_that_differs_fails_as_a_mode_mismatch(
    pytester: pytest.Pytester, examples: Path, chain_ready: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--modes gives each case an item per execution mode of dmlop (on lavapipe in CI), each passing; where one
    mode's read-back output is altered in one element, that mode's items fail as mode_mismatch against the
    defaults, which ran before them in the same process."""
    from conformance.ep import dmlop

    one = ("-k", "example-1")
    reprec = pytester.inline_run(*FAST, "--ep", "dmlop", "--modes", *one)  # in the session's worker
    reports = _case_reports(reprec)
    assert len(reports) == 7 and all(report.passed for report in reports.values())
    real = dmlop.dispatch

    def altered(*args: Any, **kwargs: Any) -> Any:
        done = real(*args, **kwargs)
        if isinstance(done, dmlop.Dispatched) and args[-1].compute_queue:  # the mode, dispatch's last argument
            name = "OutputValueTensor"
            data = bytearray(done.buffers[name])
            data[64] ^= 0x01  # the first element's lowest byte: the binding starts 64 bytes in
            return replace(done, buffers={**done.buffers, name: bytes(data)})
        return done

    monkeypatch.setattr(dmlop, "dispatch", altered)
    # In this process, where the alteration is (each item starts a runner here: one case is enough).
    reprec = pytester.inline_run(*FAST, "--ep", "dmlop", "--ep", "dmlop:queue=compute", *one, "--in-process")
    reports = _case_reports(reprec)
    failed = {node: report for node, report in reports.items() if report.failed}
    assert list(failed) == ["spec_examples.yaml::example-1@dmlop:queue=compute"] and len(reports) == 2
    for report in failed.values():
        assert "mode_mismatch" in report.longreprtext and "queue=compute" in report.longreprtext
