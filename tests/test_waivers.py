"""The known-failures (waiver) file and the gate it gives a run.

Every expected position below is counted by hand in the YAML text of the test (lines and columns are 1-based);
every expected gate is worked out from the statuses and patterns written in the test.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from conformance.environment import Environment, environment_from_json
from conformance.gate.waivers import Gate, Waiver, apply_waivers, load_waivers, waived_keys
from conformance.model import SourcePos, Status
from conformance.problems import CaseFileError
from conformance.results import Result

TRACKER = "https://github.com/microsoft/onnxruntime/issues/12345"
TRACKING = "an http(s) URL or a bug id (12345, ADO#12345, BUG-123) of the bug that tracks the failure"
H100 = {"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04"}
A100 = {"name": "NVIDIA A100-SXM4-40GB", "driver_version": "550.54.15"}
ENV = environment_from_json({"gpus": [H100]})
TIES = "cases/top_k1/sweep.yaml::long-axis-ties-3"


def write(tmp_path: Path, text: str, name: str = "waivers.yaml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def refusal(path: str) -> list[str]:
    """The one-line problems load_waivers raises for ``path``."""
    with pytest.raises(CaseFileError) as info:
        load_waivers(path)
    lines = [str(problem) for problem in info.value.problems]
    assert all("\n" not in line for line in lines)
    return lines


def waiver(case: str = "*", ep: str = "*", device: str | None = None, driver: str | None = None) -> Waiver:
    return Waiver(case, ep, device, driver, f"known: {case} on {ep}", TRACKER, SourcePos("w.yaml", 2, 5))


def result(status: Status, case: str = TIES, ep: str = "cuda") -> Result:
    return Result(case, "TOP_K1", ep, status)


# --- loading ----------------------------------------------------------------------------------------------------


def test_a_valid_file_gives_its_waivers_with_the_position_of_each_item(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "# known failures of the CUDA EP\n"
        "known_failures:\n"
        '  - case: "cases/top_k1/sweep.yaml::long-axis-ties*"\n'
        "    ep: cuda\n"
        '    device: "NVIDIA H100*"\n'
        '    driver: "580.*"\n'
        "    reason: CUDA RadixTopK is not index-stable\n"
        f"    tracking: {TRACKER}\n"
        "  - case: cases/slice1/*\n"
        "    ep: dml*\n"
        "    reason: negative strides\n"
        "    tracking: http://bugs.example.com/7\n",
    )
    assert load_waivers(path) == [
        Waiver(
            "cases/top_k1/sweep.yaml::long-axis-ties*",
            "cuda",
            "NVIDIA H100*",
            "580.*",
            "CUDA RadixTopK is not index-stable",
            TRACKER,
            SourcePos(path, 3, 5),  # the item's mapping starts at "case", after "  - "
        ),
        Waiver(
            "cases/slice1/*", "dml*", None, None, "negative strides", "http://bugs.example.com/7", SourcePos(path, 9, 5)
        ),
    ]


def test_an_explicitly_empty_list_gives_no_waivers(tmp_path: Path) -> None:
    assert load_waivers(write(tmp_path, "known_failures: []\n")) == []


def test_every_problem_of_every_item_is_reported_with_its_position(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "known_failures:\n"  # 1
        '  - case: "a.yaml::b"\n'  # 2: item at col 5
        "    ep: cuda\n"  # 3
        "    reason: r\n"  # 4
        "    tracking: ftp://example.com/1\n"  # 5: key "tracking" at col 5
        "    owner: me\n"  # 6: unknown key at col 5
        "  - ep: 3\n"  # 7: item and its "ep" key both at col 5
        "  -\n"  # 8: the empty item's null sits right after the dash, col 4
        "  - just a string\n"  # 9: col 5
        "  - case: x\n"  # 10
        '    ep: ""\n'  # 11
        "    driver: 580.65\n"  # 12
        "    reason: r\n"  # 13
        "    tracking: https://example.com/has space\n"  # 14
        "extra: 1\n",  # 15: unknown top-level key at col 1
    )
    fields = "case, ep, device, driver, failure_kind, max_abs_error, max_ulp, max_mismatches, verdict, reason, tracking"
    assert refusal(path) == [
        f"{path}:15:1: extra: unknown field (expected one of: known_failures, flaky)",
        f"{path}:6:5: known_failures.0.owner: unknown field (expected one of: {fields})",
        f"{path}:5:5: known_failures.0.tracking: must be " + TRACKING + ", got 'ftp://example.com/1'",
        f"{path}:7:5: known_failures.1.case: missing required field",
        f"{path}:7:5: known_failures.1.ep: must be text (quote it), got 3",
        f"{path}:7:5: known_failures.1.reason: missing required field",
        f"{path}:7:5: known_failures.1.tracking: missing required field",
        f"{path}:8:4: known_failures.2: empty list item: expected a mapping with case, ep, reason and tracking",
        f"{path}:9:5: known_failures.3: must be a mapping with case, ep, reason and tracking, got 'just a string'",
        f"{path}:11:5: known_failures.4.ep: must not be empty",
        f"{path}:12:5: known_failures.4.driver: must be text (quote it), got 580.65",
        f"{path}:14:5: known_failures.4.tracking: must be " + TRACKING + ", got 'https://example.com/has space'",
    ]


@pytest.mark.parametrize(
    "tracking",
    [
        "https://github.com/microsoft/onnxruntime/issues/12345",
        "http://bugs.example.com/7",
        "ADO#12345",
        "BUG-123",
        "DML-42",
        "12345",
        "#12345",
        "microsoft/onnxruntime#123",
    ],
)
def test_tracking_is_a_url_or_a_bug_id(tmp_path: Path, tracking: str) -> None:
    path = write(tmp_path, f"known_failures:\n  - {{case: a, ep: b, reason: c, tracking: '{tracking}'}}\n")
    assert [w.tracking for w in load_waivers(path)] == [tracking]


@pytest.mark.parametrize("tracking", ["TODO", "see the bug", "ADO#", "BUG-", "12345 ", "#", "-123", "ftp://x.org/1"])
def test_tracking_that_names_no_bug_is_one_line(tmp_path: Path, tracking: str) -> None:
    path = write(tmp_path, f"known_failures:\n  - {{case: a, ep: b, reason: c, tracking: '{tracking}'}}\n")
    assert refusal(path) == [
        f"{path}:2:33: known_failures.0.tracking: must be an http(s) URL or a bug id (12345, ADO#12345, BUG-123) "
        f"of the bug that tracks the failure, got {tracking!r}"
    ]


def test_a_url_without_a_host_is_not_a_tracking_link(tmp_path: Path) -> None:
    path = write(tmp_path, "known_failures:\n  - {case: a, ep: b, reason: c, tracking: 'https://'}\n")
    # A flow mapping starts at its "{" (col 5); its "tracking" key at col 33 (after "{case: a, ep: b, reason: c, ").
    assert refusal(path) == [f"{path}:2:33: known_failures.0.tracking: must be " + TRACKING + ", got 'https://'"]


def test_the_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "- case: a\n")
    assert refusal(path) == [f"{path}:1:1: must be a mapping with a 'known_failures:' or 'flaky:' list"]


def test_the_known_failures_key_is_required(tmp_path: Path) -> None:
    path = write(tmp_path, "\nknown_failure: []\n")  # a typo, on line 2
    assert refusal(path) == [
        f"{path}:2:1: known_failure: unknown field, did you mean known_failures? "
        "(expected one of: known_failures, flaky)",
        # where the mapping starts
        f"{path}:2:1: known_failures: missing required field (a waiver file gives known_failures:, flaky: or both)",
    ]


@pytest.mark.parametrize(("value", "shown"), [("", "None"), (" cuda", "'cuda'"), (" {case: a}", "{'case': 'a'}")])
def test_known_failures_must_be_a_list(tmp_path: Path, value: str, shown: str) -> None:
    path = write(tmp_path, f"# waivers\nknown_failures:{value}\n")
    assert refusal(path) == [
        f"{path}:2:1: known_failures: must be a list of known failures (write 'known_failures: []' for none), "
        f"got {shown}"
    ]


def test_an_empty_file_is_refused_with_a_waiver_file_message(tmp_path: Path) -> None:
    path = write(tmp_path, "# nothing yet\n")
    assert refusal(path) == [
        f"{path}:1:1: empty file: expected 'known_failures:' (write 'known_failures: []' for none)"
    ]


def test_yaml_syntax_errors_keep_their_position(tmp_path: Path) -> None:
    path = write(tmp_path, "known_failures:\n  - case: [a\n")
    assert refusal(path) == [
        f"{path}:3:1: YAML syntax error: expected ',' or ']', but got '<stream end>' "
        "(while parsing a flow sequence at line 2, column 11)"
    ]


def test_hostile_yaml_is_refused_and_never_constructed(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = write(
        tmp_path,
        f"known_failures:\n  - !!python/object/apply:os.system ['touch {marker}']\n",  # the tag starts at col 5
    )
    assert refusal(path) == [
        f"{path}:2:5: known_failures.0: unsupported YAML tag 'tag:yaml.org,2002:python/object/apply:os.system'"
    ]
    assert not marker.exists()
    path = write(tmp_path, "known_failures:\n  - !!python/object:conformance.gate.waivers.Waiver {case: a}\n")
    assert refusal(path) == [
        f"{path}:2:5: known_failures.0: unsupported YAML tag "
        "'tag:yaml.org,2002:python/object:conformance.gate.waivers.Waiver'"
    ]


# --- matching ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "matches"),
    [
        ("cases/top_k1/sweep.yaml::long-axis-ties*", True),
        ("cases/top_k1/sweep.yaml::long-axis-ties", False),  # the whole id must match, not a prefix
        ("*ties-3", True),
        ("cases/top_k1/*", True),  # "*" crosses "/" and "::"
        ("cases/TOP_K1/*", False),  # case-sensitive on every platform
        ("cases/top_k1/sweep.yaml::long-axis-ties-[0-2]", False),
    ],
)
def test_the_case_pattern_matches_the_full_case_id(pattern: str, matches: bool) -> None:
    gate = apply_waivers(ENV, [result(Status.FAIL)], [waiver(case=pattern)])
    assert (len(gate.expected_failures), len(gate.unexpected_failures)) == ((1, 0) if matches else (0, 1))


def test_a_windows_case_id_matches_a_forward_slash_pattern() -> None:
    failing = result(Status.FAIL, case="cases\\top_k1\\sweep.yaml::long-axis-ties-3")
    rule = waiver(case="cases/top_k1/sweep.yaml::long-axis-*")
    assert apply_waivers(ENV, [failing], [rule]).expected_failures == ((failing, rule),)


@pytest.mark.parametrize(
    ("pattern", "label", "matches"),
    [
        ("cuda", "cuda", True),
        ("cuda", "cuda:device_id=1", False),
        ("cuda*", "cuda:device_id=1", True),
        ("dml", "cuda", False),
    ],
)
def test_the_ep_pattern_matches_the_ep_label(pattern: str, label: str, matches: bool) -> None:
    gate = apply_waivers(ENV, [result(Status.ERROR, ep=label)], [waiver(ep=pattern)])
    assert (len(gate.expected_failures), len(gate.unexpected_failures)) == ((1, 0) if matches else (0, 1))


@pytest.mark.parametrize(
    ("gpus", "device", "driver", "matches"),
    [
        ([H100], "NVIDIA H100*", None, True),
        ([H100], "NVIDIA A100*", None, False),
        ([H100], None, "580.*", True),
        ([H100], None, "550.*", False),
        ([H100], "NVIDIA H100*", "580.159.*", True),
        ([H100], "NVIDIA H100*", "550.*", False),
        ([A100, H100], "NVIDIA H100*", "580.*", True),  # the second GPU matches both
        ([H100, A100], "NVIDIA H100*", "550.*", False),  # name from one GPU, driver from the other: no GPU matches both
        ([], "*", None, False),  # a waiver for some GPU never matches a run with none
        ([], None, None, True),  # a waiver with no device or driver matches any machine
        ([{"name": "NVIDIA H100"}], "NVIDIA H100", "*", False),  # a GPU record without a driver version
    ],
)
def test_device_and_driver_must_match_one_gpu_together(
    gpus: list[dict[str, str]], device: str | None, driver: str | None, matches: bool
) -> None:
    rule = waiver(device=device, driver=driver)
    gate = apply_waivers(environment_from_json({"gpus": gpus}), [result(Status.FAIL)], [rule])
    assert gate.expected_failures == (((result(Status.FAIL), rule),) if matches else ())
    assert gate.stale == ()  # a waiver for another GPU (or driver) is out of this run's scope, never stale


def test_an_environment_without_gpus_matches_only_machine_independent_waivers() -> None:
    anywhere, on_h100 = waiver(ep="cuda"), waiver(ep="cuda", device="NVIDIA*")
    gate = apply_waivers(Environment(), [result(Status.FAIL)], [on_h100, anywhere])
    assert gate.expected_failures == ((result(Status.FAIL), anywhere),)
    assert gate.stale == ()


# --- the gate ---------------------------------------------------------------------------------------------------


def test_waived_failures_and_errors_are_expected_and_pass_the_gate() -> None:
    fail, error = result(Status.FAIL), result(Status.ERROR, ep="dml")
    rule = waiver(case="*ties*")
    gate = apply_waivers(ENV, [fail, error], [rule])
    assert gate == Gate(((fail, rule), (error, rule)), (), (), ())
    assert not gate.failed
    assert waived_keys(gate) == {
        (TIES, "cuda"): f"{rule.reason} ({TRACKER})",
        (TIES, "dml"): f"{rule.reason} ({TRACKER})",
    }


def test_a_failure_no_waiver_names_fails_the_gate() -> None:
    other = result(Status.FAIL, case="cases/slice1/basic.yaml::x")
    rule = waiver(case="*ties*")
    gate = apply_waivers(ENV, [result(Status.FAIL), other], [rule])
    assert gate.expected_failures == ((result(Status.FAIL), rule),)
    assert gate.unexpected_failures == (other,)
    assert gate.failed
    assert waived_keys(gate) == {(TIES, "cuda"): f"{rule.reason} ({TRACKER})"}


def test_without_waivers_every_failure_is_unexpected() -> None:
    gate = apply_waivers(ENV, [result(Status.FAIL), result(Status.PASS, case="c::ok")], [])
    assert gate == Gate((), (result(Status.FAIL),), (), ())
    assert gate.failed


@pytest.mark.parametrize("status", [Status.PASS, Status.QUALITY_WARNING])
def test_a_waived_case_that_passes_now_fails_the_gate_by_default(status: Status) -> None:
    fixed, rule = result(status), waiver(case="*ties*")
    gate = apply_waivers(ENV, [fixed], [rule])
    assert gate == Gate((), (), ((fixed, rule),), ())
    assert gate.failed  # the fix must be noticed so that the waiver is removed
    assert waived_keys(gate) == {}
    lenient = apply_waivers(ENV, [fixed], [rule], unexpected_passes_fail=False)
    assert lenient.unexpected_passes == ((fixed, rule),)
    assert not lenient.failed


def test_a_waiver_that_matches_no_result_is_out_of_scope_not_stale() -> None:
    # Another case (not selected, or not reached), another EP, another GPU: a shared waiver file has many such
    # entries on every run, and none is news about this run.
    used, other_case = waiver(case="*ties*"), waiver(case="cases/mvn1/*")
    other_ep, other_gpu = waiver(case="*ties*", ep="dml*"), waiver(case="*ties*", device="NVIDIA A100*")
    gate = apply_waivers(ENV, [result(Status.FAIL)], [used, other_case, other_ep, other_gpu])
    assert gate.expected_failures == ((result(Status.FAIL), used),)
    assert gate.stale == ()
    assert not gate.failed


@pytest.mark.parametrize("status", [Status.NOT_SUPPORTED, Status.NOT_EXPRESSIBLE, Status.INVALID])
def test_a_waiver_whose_results_all_lack_a_verdict_is_stale(status: Status) -> None:
    # Its case ran on its EP and GPU, and gave nothing to decide: the known failure is neither confirmed nor
    # cleared. Stale, listed; it neither uses up nor clears the waiver, and does not fail the gate.
    rule = waiver(case="*ties*")
    gate = apply_waivers(ENV, [result(status)], [rule])
    assert gate == Gate((), (), (), (rule,))
    assert not gate.failed
    # One result with a verdict among them is enough to decide it: not stale.
    other = result(Status.FAIL, case=TIES + "-other")
    assert apply_waivers(ENV, [result(status), other], [rule]).stale == ()


def test_the_first_matching_waiver_in_file_order_is_reported_and_the_second_is_not_stale() -> None:
    specific, broad = waiver(case="*ties-3", ep="cuda"), waiver(case="cases/*")
    gate = apply_waivers(ENV, [result(Status.FAIL)], [specific, broad])
    assert gate.expected_failures == ((result(Status.FAIL), specific),)
    assert gate.stale == ()


def test_a_run_with_everything_sorted_out() -> None:
    expected, fixed = result(Status.FAIL, case="a::1"), result(Status.PASS, case="b::1")
    new, ok = result(Status.ERROR, case="c::1"), result(Status.PASS, case="d::1")
    skipped = result(Status.NOT_SUPPORTED, case="e::1")
    rules = [waiver(case="a::*"), waiver(case="b::*"), waiver(case="e::*"), waiver(case="z::*")]
    gate = apply_waivers(ENV, [expected, fixed, new, ok, skipped], rules)
    # e::* matched only a NOT_SUPPORTED result: stale; z::* matched nothing: out of scope.
    assert gate == Gate(((expected, rules[0]),), (new,), ((fixed, rules[1]),), (rules[2],))
    assert gate.failed


def test_a_pattern_over_failing_and_passing_variants_is_no_unexpected_pass() -> None:
    # One entry covers a sweep whose 257-element variant fails and 256-element variant passes: the known failure
    # still happens, so nothing is an unexpected pass. Once the failing variant passes too, both passes are listed.
    entry = waiver("cases/found/top_k1.yaml::tie-order-axis-257*", "cuda")
    fails = result(Status.FAIL, "cases/found/top_k1.yaml::tie-order-axis-257[1x257]")
    passes = result(Status.PASS, "cases/found/top_k1.yaml::tie-order-axis-257[1x256]")
    gate = apply_waivers(ENV, [fails, passes], [entry])
    assert (gate.expected_failures, gate.unexpected_passes, gate.failed) == (((fails, entry),), (), False)
    fixed = replace(fails, status=Status.PASS)
    gate = apply_waivers(ENV, [fixed, passes], [entry])
    assert gate.unexpected_passes == ((fixed, entry), (passes, entry)) and gate.failed


# --- unexpected passes, judged per EP ---------------------------------------------------------------------------

# The H100 run: one entry "dml*" covers two MVN1 cases, which fail through onnxruntime (dml) and pass through
# DirectML's own operator (dmlop).
ACTIVATION = "cases/mean_variance_normalization1/library.yaml::activation-parameters[Type=SCALED_{}-FLOAT16]"
PATTERN = "cases/mean_variance_normalization1/library.yaml::activation-parameters[[]Type=SCALED_*-FLOAT16]"
BOTH = Waiver(PATTERN, "dml*", "NVIDIA H100*", "580.*", "fused activation", TRACKER, SourcePos("w", 2, 5))
ON_DML = [result(Status.FAIL, ACTIVATION.format(name), "dml") for name in ("TANH", "ELU")]
ON_DMLOP = [result(Status.PASS, ACTIVATION.format(name), "dmlop") for name in ("TANH", "ELU")]


def test_run_together_the_passes_on_dmlop_are_reported_for_dmlop_only() -> None:
    gate = apply_waivers(ENV, [*ON_DML, *ON_DMLOP], [BOTH])
    assert gate.expected_failures == tuple((r, BOTH) for r in ON_DML)
    assert gate.unexpected_passes == tuple((r, BOTH) for r in ON_DMLOP)  # the entry claims dmlop fails
    assert gate.failed


def test_run_alone_each_ep_is_judged_as_it_is_judged_together() -> None:
    dmlop_alone = apply_waivers(ENV, ON_DMLOP, [BOTH])
    assert dmlop_alone.unexpected_passes == tuple((r, BOTH) for r in ON_DMLOP) and dmlop_alone.failed
    dml_alone = apply_waivers(ENV, ON_DML, [BOTH])
    assert dml_alone.expected_failures == tuple((r, BOTH) for r in ON_DML)
    assert (dml_alone.unexpected_passes, dml_alone.failed) == ((), False)


def test_an_entry_for_dml_alone_leaves_dmlop_s_passes_alone() -> None:
    dml_only = replace(BOTH, ep="dml")
    gate = apply_waivers(ENV, [*ON_DML, *ON_DMLOP], [dml_only])
    assert (len(gate.expected_failures), gate.unexpected_passes, gate.failed) == (2, (), False)


def test_on_one_ep_a_variant_that_still_fails_keeps_its_passing_variants_expected() -> None:
    # dmlop: one case fails, the other passes: no unexpected pass on dmlop; dml all pass: its passes are reported.
    dmlop = [result(Status.FAIL, ACTIVATION.format("TANH"), "dmlop"), ON_DMLOP[1]]
    dml = [result(Status.PASS, ACTIVATION.format(name), "dml") for name in ("TANH", "ELU")]
    gate = apply_waivers(ENV, [*dml, *dmlop], [BOTH])
    assert gate.unexpected_passes == tuple((r, BOTH) for r in dml)


# --- flaky ------------------------------------------------------------------------------------------------------


def test_a_flaky_section_is_read_alone_or_beside_known_failures(tmp_path: Path) -> None:
    path = write(tmp_path, "flaky:\n  - {case: 'a::*', ep: webgpu, reason: varies, tracking: BUG-7}\n")
    (flake,) = load_waivers(path)
    assert (flake.flaky, flake.case, flake.ep, flake.pos) == (True, "a::*", "webgpu", SourcePos(path, 2, 5))
    both = write(
        tmp_path,
        "known_failures:\n  - {case: k, ep: cuda, reason: r, tracking: BUG-1}\nflaky: []\n",
        "both.yaml",
    )
    assert [w.flaky for w in load_waivers(both)] == [False]


def test_a_flaky_section_must_be_a_list(tmp_path: Path) -> None:
    path = write(tmp_path, "flaky: webgpu\n")
    assert refusal(path) == [
        f"{path}:1:1: flaky: must be a list of flaky cases (write 'flaky: []' for none), got 'webgpu'"
    ]


def test_results_a_flaky_entry_matches_are_tolerated_never_unexpected() -> None:
    flake = replace(waiver(case="*ties*"), flaky=True)
    flaky, failed, passed = result(Status.FLAKY), result(Status.FAIL, TIES + "b"), result(Status.PASS, TIES + "c")
    gate = apply_waivers(ENV, [flaky, failed, passed], [flake])
    assert gate.flaky == ((flaky, flake), (failed, flake))
    assert (gate.unexpected_failures, gate.unexpected_passes, gate.stale, gate.failed) == ((), (), (), False)
    assert waived_keys(gate)[(TIES, "cuda")] == f"flaky: {flake.reason} ({TRACKER})"


def test_a_flaky_entry_decides_before_a_known_failure_that_passes() -> None:
    # The same case, flaky and known: the flaky entry decides, so its pass is no unexpected pass.
    known, flake = waiver(case="*ties*"), replace(waiver(case="*ties*"), flaky=True)
    gate = apply_waivers(ENV, [result(Status.PASS)], [known, flake])
    assert (gate.unexpected_passes, gate.failed) == ((), False)


def test_the_verdict_counts_flaky_results_apart() -> None:
    from conformance.gate.summary import summarize
    from conformance.gate.verdict import decide

    flake = replace(waiver(case="*ties*"), flaky=True)
    results = [result(Status.FLAKY), result(Status.FAIL, TIES + "b"), result(Status.FAIL, "other::x")]
    gate = apply_waivers(ENV, results, [flake, waiver(case="other::*")])
    verdict = decide(summarize(ENV, results), gate)
    assert verdict.headline == "PASSED — 1 known failure waived; 2 flaky results tolerated"
