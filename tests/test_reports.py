"""summary, summary.md, the console summary and results.json, from hand-made results."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conformance.environment import environment_from_json
from conformance.gate.summary import Summary, death_reason, summarize
from conformance.gate.waivers import Waiver, apply_waivers
from conformance.model import SourcePos, Status
from conformance.report.console import render_console
from conformance.report.markdown import render_markdown
from conformance.results import SCHEMA_VERSION, Result, read_results, write_results

GPU = {
    "index": "0",
    "name": "NVIDIA H100 80GB HBM3",
    "driver_version": "580.159.04",
    "memory_total_mib": "81559",
    "pci_bus_id": "00000000:00:06.0",
}
DML_EP = {
    "label": "dml",
    "alias": "dml",
    "name": "DmlExecutionProvider",
    "options": {"disable_metacommands": "true"},
    "devices": [{"type": "GPU", "vendor": "NVIDIA", "vendor_id": 0x10DE, "device_id": 0x2330, "metadata": {}}],
    "directml": {"version": "1.15.4", "source": "DirectML.dll file version", "feature_level": "6_4"},
    "target_feature_level": "6_4",
}
ENV = {
    "onnxruntime": "1.0.0",
    "onnxruntime_packages": {"onnxruntime-directml": "1.0.0"},
    "platform": "TestOS-1",
    "python": "3.11.0",
    "numpy": "2.0",
    "command": ["dmlconf", "run", "x"],
    "gpus": [GPU],
    "eps": [{"label": "cpu", "alias": "cpu", "name": "CPUExecutionProvider", "options": {}}, DML_EP],
    "target_feature_level": None,
}


def _summarize(environment: dict[str, Any], results: Sequence[Result]) -> Summary:
    """A summary of ``results`` under the environment as results.json holds it."""
    return summarize(environment_from_json(environment), results)


EVIL = "f.yaml::evil|<script>alert(1)</script>`code`*b*_i_[l](u)&amp;~~s~~\\"
# Each character Markdown gives a meaning to, backslash-escaped (CommonMark allows it for all ASCII punctuation).
EVIL_ESCAPED = r"f.yaml::evil\|\<script\>alert(1)\</script\>\`code\`\*b\*\_i\_\[l\](u)\&amp;\~\~s\~\~\\"


def _results() -> list[Result]:
    return [
        Result("t.yaml::a", "TOP_K1", "cpu", Status.PASS, data_type="FLOAT32"),
        Result(
            "t.yaml::b",
            "TOP_K1",
            "cpu",
            Status.FAIL,
            "tie_order",
            message="OutputIndexTensor: tie order\nmore",
            repro="dmlconf run t.yaml -k t.yaml::b --ep cpu",
        ),
        Result(
            "t.yaml::c",
            "TOP_K1",
            "cpu",
            Status.NOT_SUPPORTED,
            message="no uint16 kernel",
            repro="dmlconf run t.yaml -k t.yaml::c --ep cpu",
        ),
        Result("s.yaml::a", "SLICE1", "cpu", Status.PASS),
        Result(
            "s.yaml::b",
            "SLICE1",
            "cpu",
            Status.ERROR,
            "execution",
            message="boom",
            repro="dmlconf run s.yaml -k s.yaml::b --ep cpu",
        ),
        Result("s.yaml::neg", "SLICE1", "cpu", Status.INVALID, message="rejected"),
        Result("m.yaml::w", "MEAN_VARIANCE_NORMALIZATION1", "cpu", Status.QUALITY_WARNING, message="nan order"),
        Result("t.yaml::a", "TOP_K1", "dml", Status.PASS),
        Result("t.yaml::b", "TOP_K1", "dml", Status.PASS),
    ]


def _table(markdown: str, heading: str) -> list[list[str]]:
    """The cells of the table under ``heading``, split on unescaped pipes."""
    block = markdown.split(f"## {heading}\n\n", 1)[1].split("\n\n", 1)[0]
    rows = []
    for line in block.splitlines():
        assert line.startswith("|") and line.endswith("|"), line
        rows.append([cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def test_summary_counts() -> None:
    summary = _summarize(ENV, _results())
    assert summary.totals == {
        Status.PASS: 4,
        Status.FAIL: 1,
        Status.NOT_SUPPORTED: 1,
        Status.ERROR: 1,
        Status.INVALID: 1,
        Status.QUALITY_WARNING: 1,
    }
    assert summary.eps == ("cpu", "dml")
    assert summary.by_operator == (
        ("MEAN_VARIANCE_NORMALIZATION1", "cpu", {Status.QUALITY_WARNING: 1}),
        ("SLICE1", "cpu", {Status.PASS: 1, Status.ERROR: 1, Status.INVALID: 1}),
        ("TOP_K1", "cpu", {Status.PASS: 1, Status.FAIL: 1, Status.NOT_SUPPORTED: 1}),
        ("TOP_K1", "dml", {Status.PASS: 2}),
    )
    assert dict(summary.matrix)["t.yaml::b"] == (Status.FAIL, Status.PASS)
    assert dict(summary.matrix)["s.yaml::a"] == (Status.PASS, None)
    assert [r.case for r in summary.notable] == ["t.yaml::b", "t.yaml::c", "s.yaml::b", "m.yaml::w"]
    assert summary.failed
    assert not _summarize(ENV, [_results()[0], _results()[5]]).failed


def test_markdown_tables() -> None:
    markdown = render_markdown(_summarize(ENV, _results()))
    assert markdown.startswith("# DirectML conformance summary\n")
    header = markdown.split("## Totals")[0].splitlines()
    assert header[2] == "**FAILED — 2 failures (1 FAIL, 1 ERROR), no waiver file given**"
    assert header[4:10] == [
        "- EP cpu ran on: the CPU; onnxruntime 1.0.0",
        "- EP dml ran on: GPU NVIDIA (PCI 10de:2330); DirectML 1.15.4, onnxruntime 1.0.0",
        "- GPU: NVIDIA H100 80GB HBM3 (driver 580.159.04, 81559 MiB, PCI 00000000:00:06.0)",
        "- onnxruntime: 1.0.0, the Python package (onnxruntime-directml 1.0.0)",
        "- EP cpu: CPUExecutionProvider",
        "- EP dml: DmlExecutionProvider (disable\\_metacommands=true) on GPU NVIDIA 10de:2330; "
        "DirectML 1.15.4 (DirectML.dll file version); target feature level 6\\_4",
    ]
    assert "- platform: TestOS-1, Python 3.11.0, numpy 2.0" in header
    assert "- command: `dmlconf run x`" in markdown
    totals = _table(markdown, "Totals")
    assert totals[0] == ["status", "results"]
    assert all(set(cell) == {"-"} for cell in totals[1])
    assert totals[2:] == [
        ["PASS", "4"],
        ["FAIL", "1"],
        ["NOT_SUPPORTED", "1"],
        ["ERROR", "1"],
        ["INVALID", "1"],
        ["QUALITY_WARNING", "1"],
    ]
    by_op = _table(markdown, "By operator and EP")
    assert by_op[0] == ["operator", "EP", "PASS", "FAIL", "NOT_SUPPORTED", "ERROR", "INVALID", "QUALITY_WARNING"]
    assert by_op[2:] == [
        ["MEAN\\_VARIANCE\\_NORMALIZATION1", "cpu", "0", "0", "0", "0", "0", "1"],
        ["SLICE1", "cpu", "1", "0", "0", "1", "1", "0"],
        ["TOP\\_K1", "cpu", "1", "1", "1", "0", "0", "0"],
        ["TOP\\_K1", "dml", "2", "0", "0", "0", "0", "0"],
    ]
    matrix = _table(markdown, "Cases whose verdicts differ between EPs")
    assert matrix[0] == ["case", "cpu", "dml"]
    assert ["s.yaml::a", "PASS", "—"] in matrix and ["t.yaml::b", "FAIL", "PASS"] in matrix
    failing = _table(markdown, "Failures and warnings")
    assert failing[0] == ["case", "EP", "status", "kind", "message", "repro"]
    assert failing[2] == [
        "t.yaml::b",
        "cpu",
        "FAIL",
        "tie\\_order",
        "OutputIndexTensor: tie order",
        "`dmlconf run t.yaml -k t.yaml::b --ep cpu`",
    ]


def test_one_ep_has_no_matrix() -> None:
    markdown = render_markdown(_summarize(ENV, _results()[:7]))
    assert "Cases whose verdicts differ" not in markdown


def test_markdown_escapes_case_provided_text() -> None:
    results = [
        Result(EVIL, "TOP_K1", "cpu", Status.FAIL, "values", message="a | b\n| c <b>d</b>", repro="run -k 'a|b'"),
        Result(EVIL, "TOP_K1", "cpu|x", Status.PASS),
    ]
    env = {**ENV, "command": ["dmlconf", "run", "-k", "a`b``c"]}
    markdown = render_markdown(_summarize(env, results))
    assert "<script>" not in markdown and "<b>" not in markdown
    # A code span fenced by more backticks than any run inside it (CommonMark 6.1).
    assert "- command: ```dmlconf run -k a`b``c```" in markdown
    matrix = _table(markdown, "Cases whose verdicts differ between EPs")
    assert matrix[0] == ["case", "cpu", r"cpu\|x"]
    assert matrix[2] == [EVIL_ESCAPED, "FAIL", "PASS"]
    failing = _table(markdown, "Failures and warnings")
    assert all(len(row) == 6 for row in failing)
    assert failing[2] == [EVIL_ESCAPED, "cpu", "FAIL", "values", r"a \| b", r"`run -k 'a\|b'`"]


def test_markdown_keeps_numeric_looking_text_as_written() -> None:
    markdown = render_markdown(_summarize(ENV, [Result("1e5", "TOP_K1", "cpu", Status.FAIL, message="0.10")]))
    assert _table(markdown, "Failures and warnings")[2][0] == "1e5"
    assert _table(markdown, "Failures and warnings")[2][4] == "0.10"


def test_console_lists_failures_with_repro_and_totals() -> None:
    text = render_console(_summarize(ENV, _results()))
    lines = text.splitlines()
    assert lines[-1] == "== 4 PASS, 1 FAIL, 1 NOT_SUPPORTED, 1 ERROR, 1 INVALID, 1 QUALITY_WARNING =="
    # FAIL first, then ERROR, then the warnings; repro lines for FAIL and ERROR only.
    blocks = [block for block in text.split("\n\n") if block.startswith(("FAIL", "ERROR", "NOT_", "QUALITY", "no "))]
    assert blocks[0] == (
        "FAIL (tie_order) t.yaml::b [cpu]\n  OutputIndexTensor: tie order\n"
        "  repro: dmlconf run t.yaml -k t.yaml::b --ep cpu"
    )
    assert blocks[1] == "ERROR (execution) s.yaml::b [cpu]\n  boom\n  repro: dmlconf run s.yaml -k s.yaml::b --ep cpu"
    assert blocks[2] == "QUALITY_WARNING m.yaml::w [cpu]\n  nan order"
    # Results without a verdict are counted by reason, each count with its message; -v lists each.
    assert blocks[3] == "no verdict: 1 result (dmlconf -v run lists each)\n  1 NOT_SUPPORTED [cpu]: no uint16 kernel"
    assert len(blocks) == 4  # INVALID is the expected outcome of a negative case: not listed
    verbose = render_console(_summarize(ENV, _results()), verbose=True).split("\n\n")
    assert "NOT_SUPPORTED t.yaml::c [cpu]\n  no uint16 kernel" in verbose


def test_console_truncates_long_lists_and_escapes_control_characters() -> None:
    many = [Result(f"t.yaml::c{i}", "TOP_K1", "cpu", Status.FAIL, message="x", repro="r") for i in range(5)]
    text = render_console(_summarize(ENV, many), max_listed=2)
    assert sum(line.startswith("FAIL ") for line in text.splitlines()) == 2
    assert "... and 3 more not passing (see summary.md)" in text
    evil = render_console(_summarize(ENV, [Result("t.yaml::\x1b[2Jx", "TOP_K1", "cpu", Status.FAIL, message="\x07")]))
    assert "\x1b" not in evil and "\x07" not in evil
    assert "t.yaml::\\x1b[2Jx" in evil


def test_console_with_no_results() -> None:
    assert render_console(_summarize(ENV, [])).splitlines()[-1] == "== no results =="


def test_results_json_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    results = [
        *_results(),
        Result(
            "t.yaml::m",
            "TOP_K1",
            "cpu",
            Status.FAIL,
            "values",
            "FLOAT16",
            "TopK-11",
            "m",
            {"max_abs_error": 0.5, "mismatches": 2},
            {"TopK_0": "CPUExecutionProvider"},
            "2_1",
            "dmlconf run",
            0.25,
        ),
    ]
    write_results(str(path), ENV, results)
    document = read_results(str(path))
    assert document.environment == environment_from_json(ENV)
    assert document.results == tuple(results)
    assert os.listdir(tmp_path) == ["results.json"]  # no temporary file left behind
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["schema_version"] == SCHEMA_VERSION == 1
    assert list(document) == ["schema_version", "environment", "results"]


def test_results_json_is_strict_json(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    write_results(
        str(path), ENV, [Result("a", "TOP_K1", "cpu", Status.FAIL, metrics={"max": float("nan"), "min": float("-inf")})]
    )

    def refuse(constant: str) -> None:
        raise AssertionError(f"non-standard JSON constant {constant}")

    document = json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)
    assert document["results"][0]["metrics"] == {"max": "nan", "min": "-inf"}


def test_failed_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.json"
    write_results(str(path), ENV, _results()[:1])
    before = path.read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space"):
        write_results(str(path), ENV, _results())
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["results.json"]


def test_read_results_refuses_another_schema(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema_version": 2, "environment": {}, "results": []}), encoding="utf-8")
    with pytest.raises(ValueError, match="schema_version: 2 is not 1"):
        read_results(str(path))


def test_placement_proof_counts_only_results_run_on_their_own_ep() -> None:
    env = {"eps": [{"label": "cuda", "name": "CUDAExecutionProvider"}]}
    on_cuda = {"TopK_0": "CUDAExecutionProvider"}
    results = [
        Result("a", "TOP_K1", "cuda", Status.PASS, placement=on_cuda),
        Result("b", "TOP_K1", "cuda", Status.FAIL, placement=on_cuda),
        Result("c", "TOP_K1", "cuda", Status.PASS, placement={"TopK_0": "CPUExecutionProvider"}),
        Result("d", "TOP_K1", "cuda", Status.QUALITY_WARNING),
        Result("e", "TOP_K1", "cuda", Status.NOT_SUPPORTED),  # never ran: nothing to prove
        Result("f", "TOP_K1", "cuda", Status.INVALID),
    ]
    placement = _summarize(env, results).placement
    assert placement is not None
    assert placement.proven == 2
    assert placement.unproven == (
        "c [cuda]: placed on CPUExecutionProvider",
        "d [cuda]: placed on nothing recorded",
    )
    assert placement.line == "2 executed result(s) WITHOUT placement proof; 2 proven"
    markdown = render_markdown(_summarize(env, results))
    assert "- placement: 2 executed result(s) WITHOUT placement proof; 2 proven" in markdown
    assert "  - c \\[cuda\\]: placed on CPUExecutionProvider" in markdown


def test_placement_proof_all_proven() -> None:
    env = {"eps": [{"label": "cpu", "name": "CPUExecutionProvider"}]}
    results = [Result("a", "SLICE1", "cpu", Status.PASS, placement={"Slice_0": "CPUExecutionProvider"})]
    placement = _summarize(env, results).placement
    assert placement is not None
    assert (placement.proven, placement.unproven) == (1, ())
    console = render_console(_summarize(env, results))
    assert "placement: 1 executed result(s), every node recorded on its own EP" in console


def test_dml_operator_counts_each_case_once() -> None:
    results = [
        Result("a", "TOP_K1", "cpu", Status.PASS, dml_operator="DML_OPERATOR_TOP_K1"),
        Result("a", "TOP_K1", "cuda", Status.FAIL, dml_operator="DML_OPERATOR_TOP_K1"),
        Result("b", "SLICE1", "cpu", Status.PASS, dml_operator="DML_OPERATOR_SPLIT"),
        Result("c", "SLICE1", "cpu", Status.PASS, dml_operator="DML_OPERATOR_SLICE1"),
        Result("d", "SLICE1", "cpu", Status.INVALID),
    ]
    summary = _summarize({}, results)
    assert summary.dml_operators == (
        ("SLICE1", "DML_OPERATOR_SLICE1", 1),
        ("SLICE1", "DML_OPERATOR_SPLIT", 1),
        ("TOP_K1", "DML_OPERATOR_TOP_K1", 1),
    )
    table = _table(render_markdown(summary), "What the cases reach on DirectML")
    assert table[2:] == [
        ["SLICE1", "DML\\_OPERATOR\\_SLICE1", "1"],
        ["SLICE1", "DML\\_OPERATOR\\_SPLIT", "1"],
        ["TOP\\_K1", "DML\\_OPERATOR\\_TOP\\_K1", "1"],
    ]


def test_an_ep_that_executed_nothing_fails_the_run() -> None:
    not_started = [
        Result("a", "TOP_K1", "cuda", Status.NOT_SUPPORTED, "ep_not_started", message="could not create a session"),
        Result("b", "TOP_K1", "cuda", Status.INVALID),
        Result("a", "TOP_K1", "cpu", Status.PASS, placement={"TopK_0": "CPUExecutionProvider"}),
    ]
    summary = _summarize({}, not_started)
    assert summary.idle_eps == ("cuda",) and summary.failed
    assert "EP cuda executed none of its cases" in render_console(summary)
    assert "- **EP cuda executed none of its cases**: the run fails" in render_markdown(summary)
    # one executed case is enough; cases only gated or without kernels do not make an EP idle
    some = [*not_started, Result("c", "TOP_K1", "cuda", Status.FAIL, placement={"TopK_0": "CUDAExecutionProvider"})]
    assert _summarize({}, some).idle_eps == ()
    gated = Result("d", "TOP_K1", "cuda", Status.NOT_SUPPORTED, "feature_level")
    no_kernel = Result("e", "TOP_K1", "cuda", Status.NOT_SUPPORTED, "no_kernel")
    assert _summarize({}, [gated, no_kernel]).idle_eps == ()


def test_the_whole_library_on_two_gpu_eps_fits_a_pull_request_comment() -> None:
    # GitHub refuses comments over 65,536 characters; the committed H100 run has 3,720 results and 136 failures.
    document = read_results(str(Path(__file__).resolve().parent.parent / "reports/h100-cuda-webgpu/results.json"))
    markdown = render_markdown(summarize(document.environment, document.results))
    assert len(markdown) < 65_536
    failing = sum(r.status in (Status.FAIL, Status.ERROR, Status.QUALITY_WARNING) for r in document.results)
    assert f"… and {failing - 40} more: see report.html" in markdown


def test_unproven_placements_are_cut_in_markdown() -> None:
    # 100 PASS results without a placement record: each is an unproven line, of which 40 are listed.
    results = [Result(f"t.yaml::c{i}", "TOP_K1", "cpu", Status.PASS) for i in range(100)]
    markdown = render_markdown(_summarize(ENV, results))
    header = markdown.split("## Totals")[0]
    assert header.count("\n  - ") == 40 and "… and 60 more: see report.html" in header


# --- issue 19: an interrupted or partial run says so in every format, with what ran of what was planned ------------

INTERRUPTED = {**ENV, "interrupted": True, "planned_results": 5}
METADATA = {
    "started_at": "2025-11-24T13:50:02Z",
    "duration_s": 77.25,
    "harness": {
        "version": "0.4.0",
        "git_commit": "0123456789abcdef0123456789abcdef01234567",
        "cases_sha256": "ab" * 32,
    },
    "cpu": "AMD EPYC 9654 96-Core Processor",
}


def test_an_interrupted_run_says_how_many_cases_ran_in_markdown_and_on_the_console() -> None:
    summary = _summarize({**INTERRUPTED, "eps": ENV["eps"][:1]}, _results()[:1])
    assert "- **interrupted: 1 of 5 cases run**: the run fails" in render_markdown(summary)
    assert "interrupted: 1 of 5 cases run: the run fails" in render_console(summary)


def test_several_eps_count_a_case_once_per_ep() -> None:
    # 2 EPs planned over 3 cases: 6 (case, EP) runs, 4 of them finished.
    summary = _summarize({**ENV, "interrupted": True, "planned_results": 6}, _results()[:4])
    assert "interrupted: 4 of 6 cases run (3 cases, each on 2 EPs)" in render_markdown(summary)


def test_skipped_case_files_are_said_with_the_cases_that_ran() -> None:
    env = {**ENV, "problems": ["bad.yaml:3:1: K: missing required field"], "skipped_files": [{"path": "bad.yaml"}]}
    summary = _summarize(env, _results())
    markdown = render_markdown(summary)
    assert "9 cases run; case files skipped for 1 problem(s) (--keep-going)" in markdown
    assert "- files skipped: 1 (bad.yaml)" in markdown
    assert "case files skipped for 1 problem(s) (--keep-going): their cases did not run: the run fails" in (
        render_console(summary)
    )


def test_markdown_shows_when_and_with_what_the_run_was_made() -> None:
    markdown = render_markdown(_summarize({**ENV, **METADATA}, _results()))
    header = markdown.split("## Totals")[0]
    assert "- CPU: AMD EPYC 9654 96-Core Processor" in header
    assert "- started: 2025-11-24T13:50:02Z, took 1 min 17.2 s" in header
    assert (
        "- harness: dml-conformance 0.4.0, git commit 0123456789abcdef0123456789abcdef01234567, "
        f"cases sha256 {'ab' * 32}" in header
    )
    # A results.json written before these keys existed shows none of them, and no "None".
    old = render_markdown(_summarize(ENV, _results())).split("## Totals")[0]
    assert "started" not in old and "harness" not in old and "None" not in old


def test_markdown_lists_unexpected_failures_first_and_marks_the_known_ones() -> None:
    waiver = Waiver("t.yaml::b", "cpu", None, None, "known tie order", "https://example.com/1", SourcePos("k", 1, 1))
    gate = apply_waivers(environment_from_json(ENV), _results(), [waiver])
    markdown = render_markdown(_summarize(ENV, _results()), gate)
    assert markdown.splitlines()[2] == "**FAILED — 1 unexpected failure; 1 known failure waived**"
    failing = _table(markdown, "Failures and warnings")
    # s.yaml::b (ERROR) is unexpected; t.yaml::b (FAIL) is waived: listed after the unexpected ones and the warning.
    assert [row[:3] for row in failing[2:]] == [
        ["s.yaml::b", "cpu", "ERROR"],
        ["m.yaml::w", "cpu", "QUALITY_WARNING"],
        ["t.yaml::b", "cpu", "FAIL (known)"],
    ]


# --- issue 26: the device each EP ran on comes first; runner deaths fail the run -----------------------------------

WINE_DML = {
    "label": "dml",
    "name": "DmlExecutionProvider",
    "directml": {
        "version": "1.15.4",
        "source": "DirectML.dll file version under Wine",
        "chain": {
            "transport": "wine+vkd3d-proton",
            "wine": "wine-8.0",
            "vkd3d_proton": {"version": "3.0.1"},
            "vulkan_driver": "llvmpipe Mesa 25.0.7",
            "adapter": {"description": "llvmpipe (LLVM 15.0.6, 256 bits)", "vendor_id": 0x10005, "device_id": 0},
            "directml_dll": "1.15.4.0",
            "onnxruntime_dll": "1.24.26.316",
            "onnxruntime": "1.24.4",
        },
    },
}
# DirectML under Wine on a machine without nvidia-smi, the Python package another onnxruntime than the DLL that ran.
WINE = {"onnxruntime": "1.32.0", "onnxruntime_packages": {"onnxruntime": "1.32.0"}, "gpus": [], "eps": [WINE_DML]}
DEATHS = {
    "runner_deaths": [
        {
            "ep": "dml",
            "count": 4,
            "cases": ["t.yaml::a", "t.yaml::b"],
            "stderr": ["err:d3d12:d3d12_device_removed", "wine: Unhandled page fault"],
        }
    ]
}
DEATH_REASON = (  # a record without in_packs (an older file): every death counted is a pack's, as the gate read it
    "EP dml: the runner died 4 times while serving packs (cases in flight: t.yaml::a, t.yaml::b); "
    "each case of a pack was run again alone"
)


def _passing_on(ep: str) -> list[Result]:
    return [Result("t.yaml::a", "TOP_K1", ep, Status.PASS), Result("t.yaml::b", "TOP_K1", ep, Status.PASS)]


def test_each_report_opens_with_the_adapter_driver_and_builds_that_ran_each_ep() -> None:
    summary = _summarize(WINE, _passing_on("dml"))
    what, line = summary.identity[0]
    assert what == "EP dml ran on"
    # The adapter DirectML ran on, its PCI ids as lspci writes them, its driver, and the builds that executed it.
    assert line.startswith("llvmpipe (LLVM 15.0.6, 256 bits) (PCI 10005:0000), driver llvmpipe Mesa 25.0.7")
    assert "DirectML.dll 1.15.4.0, onnxruntime.dll 1.24.26.316 (onnxruntime 1.24.4)" in line
    markdown = render_markdown(summary).split("## Totals")[0].splitlines()
    assert markdown[4].startswith("- EP dml ran on: llvmpipe (LLVM 15.0.6, 256 bits)")
    assert [n for n, text in enumerate(markdown) if text.startswith("- GPU:")] > [4]
    onnxruntime = next(text for text in markdown if text.startswith("- onnxruntime:"))
    assert "1.32.0" in onnxruntime and "Python" in onnxruntime  # not the onnxruntime.dll that executed DirectML
    console = render_console(summary)
    assert "EP dml ran on: llvmpipe (LLVM 15.0.6, 256 bits) (PCI 10005:0000)" in console
    assert "GPU: none found" not in console


def test_a_cuda_ep_names_the_gpu_and_driver_nvidia_smi_gave() -> None:
    env = {**ENV, "eps": [{"label": "cuda", "name": "CUDAExecutionProvider"}]}
    what, line = _summarize(env, _passing_on("cuda")).identity[0]
    assert what == "EP cuda ran on"
    assert line.startswith("NVIDIA H100 80GB HBM3 (PCI bus 00000000:00:06.0), driver 580.159.04")
    assert "onnxruntime 1.0.0" in line


def test_runner_deaths_fail_the_run_whatever_the_waivers_say_and_every_report_tells_them() -> None:
    env = {**WINE, **DEATHS}
    results = [_passing_on("dml")[0], Result("t.yaml::b", "TOP_K1", "dml", Status.FAIL, "values")]
    summary = _summarize(env, results)
    assert summary.failed
    waiver = Waiver("t.yaml::b", "dml", None, None, "known", "https://example.com/1", SourcePos("k", 1, 1))
    gate = apply_waivers(environment_from_json(env), results, [waiver])
    assert not gate.failed  # every failure is waived: the runner deaths alone fail the run
    markdown = render_markdown(summary, gate)
    assert markdown.splitlines()[2] == f"**FAILED — {cell_text(DEATH_REASON)}; 1 known failure waived**"
    assert f"- **{cell_text(DEATH_REASON)}**: the run fails" in markdown
    assert "  - last stderr: `err:d3d12:d3d12_device_removed`" in markdown
    console = render_console(summary)
    assert f"{DEATH_REASON}: the run fails" in console and "wine: Unhandled page fault" in console


def _died(count: int, in_packs: int, cases: list[str]) -> dict[str, Any]:
    return {"runner_deaths": [{"ep": "dml", "count": count, "in_packs": in_packs, "cases": cases, "stderr": ["x"]}]}


def test_a_runner_death_with_one_case_in_flight_is_that_cases_waivable_crash() -> None:
    # The runner died under t.yaml::b alone (its CRASH), once between requests: a waiver of the CRASH passes the run.
    env = {**WINE, **_died(2, 0, ["t.yaml::b"])}
    results = [_passing_on("dml")[0], Result("t.yaml::b", "TOP_K1", "dml", Status.CRASH, "worker_died")]
    summary = _summarize(env, results)
    assert summary.unwaivable == ()
    waiver = Waiver("t.yaml::b", "dml", None, None, "known", "https://example.com/1", SourcePos("k", 1, 1))
    assert not apply_waivers(environment_from_json(env), results, [waiver]).failed
    reason = (
        "EP dml: the runner died 2 times that a case's own fault result, a gap between requests or a start accounts "
        "for (cases in flight: t.yaml::b)"
    )
    assert tuple(death_reason(death) for death in summary.environment.runner_deaths) == (reason,)
    assert f"{reason}: the cases' own results stand for them" in render_console(summary)
    assert f"- {cell_text(reason)}: the cases' own results stand for them" in render_markdown(summary)


def test_a_runner_death_under_a_pack_fails_the_run_and_says_how_many_were_of_each_kind() -> None:
    env = {**WINE, **_died(3, 1, ["t.yaml::a", "t.yaml::b"])}
    summary = _summarize(env, _passing_on("dml"))  # each case of the pack passed alone: no result stands for it
    reason = (
        "EP dml: the runner died 1 time while serving packs and 2 times that a case's own fault result, a gap between "
        "requests or a start accounts for (cases in flight: t.yaml::a, t.yaml::b); each case of a pack was run again "
        "alone"
    )
    assert summary.unwaivable == (reason,) and summary.failed
    assert f"- **{cell_text(reason)}**: the run fails" in render_markdown(summary)


def cell_text(text: str) -> str:
    """``text`` as summary.md escapes it (report/text.py's cell), for the few characters the reasons hold."""
    return text.replace("_", "\\_")


# --- issue 26, item 9: with waivers the console leads with unexpected results; --quiet prints only those -----------


def _known_tie_order() -> Waiver:
    return Waiver("t.yaml::b", "cpu", None, None, "known tie order", "https://example.com/1", SourcePos("k", 1, 1))


def test_with_waivers_the_console_lists_unexpected_results_first_and_known_ones_under_their_reason() -> None:
    gate = apply_waivers(environment_from_json(ENV), _results(), [_known_tie_order()])
    text = render_console(_summarize(ENV, _results()), gate=gate)
    blocks = text.split("\n\n")
    listed = [b for b in blocks if b.startswith(("UNEXPECTED", "known", "FAIL", "ERROR", "NOT_", "QUALITY", "no "))]
    assert listed[0] == (
        "UNEXPECTED ERROR (execution) s.yaml::b [cpu]\n  boom\n  repro: dmlconf run s.yaml -k s.yaml::b --ep cpu"
    )
    assert listed[1] == (
        "known failures, waived: 1 under 1 reason\n"
        "1 known: known tie order\n"
        "  tracked at https://example.com/1\n"
        "    FAIL (tie_order) t.yaml::b [cpu]"
    )
    assert [b.split()[0] for b in listed[2:]] == ["QUALITY_WARNING", "no"]


def test_known_failures_are_grouped_by_reason_the_reason_once_the_first_few_listed() -> None:
    nan = [Result(f"t.yaml::nan{i}", "TOP_K1", "dml", Status.FAIL, "values", message="x") for i in range(5)]
    ties = [Result("t.yaml::tie", "TOP_K1", "dml", Status.FAIL, "tie_order", message="y")]
    waivers = [
        Waiver("t.yaml::nan*", "dml", None, None, "NaN " + "x" * 200, "BUG-1", SourcePos("k", 1, 1)),
        Waiver("t.yaml::tie", "dml", None, None, "ties", "BUG-2", SourcePos("k", 7, 1)),
    ]
    gate = apply_waivers(environment_from_json(ENV), [*nan, *ties], waivers)
    text = render_console(_summarize(ENV, [*nan, *ties]), gate=gate)
    known = next(block for block in text.split("\n\n") if block.startswith("known failures"))
    # The larger group first; its 205-character reason once, cut at 116 columns; three of its five cases, a count.
    assert known.splitlines() == [
        "known failures, waived: 6 under 2 reasons",
        "5 known: NaN " + "x" * 102 + "…",
        "  tracked at BUG-1",
        "    FAIL (values) t.yaml::nan0 [dml]",
        "    FAIL (values) t.yaml::nan1 [dml]",
        "    FAIL (values) t.yaml::nan2 [dml]",
        "    ... and 2 more (dmlconf -v run lists each)",
        "1 known: ties",
        "  tracked at BUG-2",
        "    FAIL (tie_order) t.yaml::tie [dml]",
    ]
    assert "UNEXPECTED" not in text
    verbose = render_console(_summarize(ENV, [*nan, *ties]), gate=gate, verbose=True)
    assert "    FAIL (values) t.yaml::nan4 [dml]" in verbose.splitlines() and "... and" not in verbose


def test_quiet_console_holds_only_the_unexpected_results() -> None:
    gate = apply_waivers(environment_from_json(ENV), _results(), [_known_tie_order()])
    quiet = render_console(_summarize(ENV, _results()), gate=gate, quiet=True)
    assert quiet == (
        "UNEXPECTED ERROR (execution) s.yaml::b [cpu]\n  boom\n  repro: dmlconf run s.yaml -k s.yaml::b --ep cpu"
    )
    everything_waived = [
        _known_tie_order(),
        Waiver("s.yaml::b", "cpu", None, None, "r", "https://e.x/3", SourcePos("k", 2, 1)),
    ]
    assert (
        render_console(
            _summarize(ENV, _results()),
            gate=apply_waivers(environment_from_json(ENV), _results(), everything_waived),
            quiet=True,
        )
        == ""
    )


def test_summary_md_lists_its_failures_with_repro_commands_before_what_the_cases_reach() -> None:
    results = [
        *_results(),
        Result("t.yaml::d", "TOP_K1", "dml", Status.PASS, dml_operator="DML_OPERATOR_TOP_K1"),
    ]
    markdown = render_markdown(_summarize(ENV, results))
    assert markdown.index("## Failures and warnings") < markdown.index("## What the cases reach on DirectML")
    failing = _table(markdown, "Failures and warnings")
    assert failing[0] == ["case", "EP", "status", "kind", "message", "repro"]
    assert failing[2][-1] == "`dmlconf run t.yaml -k t.yaml::b --ep cpu`"


def test_peak_memory_is_shown_and_an_older_file_without_it_reads() -> None:
    from conformance.records import RecordError

    older = environment_from_json({"command": ["dmlconf", "run"]})
    assert older.peak_memory is None
    assert "peak memory" not in render_markdown(summarize(older, []))
    peak = {"total_mib": 2900, "harness_mib": 400, "runners_mib": 2500, "runners": 2}
    markdown = render_markdown(summarize(environment_from_json({"peak_memory": peak}), []))
    shown = "- peak memory: 2900 MiB at most (the harness's processes 400 MiB, 2 DirectML runner(s) 2500 MiB)"
    assert shown in markdown
    with pytest.raises(RecordError, match="peak_memory"):
        environment_from_json({"peak_memory": {**peak, "runners_mib": -1}})
