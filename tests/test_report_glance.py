"""Reports read at a glance (issue 37): waived failures counted as known, every result findable in report.html, the
adapter named where no GPU is listed, the console's known failures under their reason and its results without a
verdict counted, and whose a failure is (triage's verdict) in every report. Results are hand-made."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from conformance.cli.main import main
from conformance.environment import environment_from_json
from conformance.gate.summary import summarize
from conformance.gate.verdict import findings
from conformance.gate.waivers import Gate, Waiver, apply_waivers
from conformance.model import SourcePos, Status
from conformance.report.console import render_console
from conformance.report.html import render_html
from conformance.report.junit import render_junit
from conformance.report.markdown import render_markdown
from conformance.results import Result, write_results
from conformance.whose import Rerun, Rung, Triage, Whose

GPU_ENV = {
    "gpus": [{"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04"}],
    "eps": [{"label": "cuda", "name": "CUDAExecutionProvider"}, {"label": "dml", "name": "DmlExecutionProvider"}],
}
LAVAPIPE = "llvmpipe (LLVM 15.0.6, 256 bits)"
CHAIN = {"transport": "wine+vkd3d-proton", "adapter": {"description": LAVAPIPE, "vendor_id": 65541, "device_id": 0}}


def _dml(label: str) -> dict[str, Any]:
    return {"label": label, "name": "DmlExecutionProvider", "directml": {"version": "1.15.4", "chain": CHAIN}}


def _fail(case: str, ep: str = "dml", kind: str = "values", triage: Triage | None = None) -> Result:
    return Result(case, "TOP_K1", ep, Status.FAIL, kind, "FLOAT32", message=f"{case}: values differ", triage=triage)


def _pass(case: str, ep: str = "dml", operator: str = "TOP_K1") -> Result:
    return Result(case, operator, ep, Status.PASS, data_type="FLOAT32")


def _waiver(case: str, reason: str = "NaN selects wrong elements", ep: str = "dml") -> Waiver:
    return Waiver(case, ep, None, None, reason, "BUG-7", SourcePos("known.yaml", 2, 5))


def _gate(env: Mapping[str, Any], results: Sequence[Result], waivers: Sequence[Waiver] | None) -> Gate | None:
    return apply_waivers(environment_from_json(env), results, waivers) if waivers is not None else None


def _page(env: Mapping[str, Any], results: list[Result], waivers: list[Waiver] | None = None) -> str:
    gate = _gate(env, results, waivers)
    return render_html(summarize(environment_from_json(env), results), results, gate)


def _totals(html: str) -> list[str]:
    """The header's total badges, as their texts."""
    line = re.search(r'<p class="totals">(.*?)</p>', html)
    assert line is not None
    return re.findall(r'class="badge"[^>]*>([^<]*)<', line.group(1))


# --- 1. waived failures are "known" in the header's totals ---------------------------------------------------------


def test_a_gate_that_passed_shows_its_waived_failures_as_known_not_as_red_fail() -> None:
    results = [_fail("t.yaml::a"), _fail("t.yaml::b"), _pass("t.yaml::ok")]
    html = _page(GPU_ENV, results, [_waiver("t.yaml::*")])
    assert _totals(html) == ["2 known", "1 PASS"]
    known = re.search(r'<a class="badge" href="#waived" title="([^"]*)"[^>]*>2 known</a>', html)
    assert known is not None and known.group(1) == "known failures the waiver file waives: 2 FAIL"
    assert '#c62828">2 FAIL' not in html.split("</header>")[0]


def test_unexpected_failures_stay_red_beside_the_known_count() -> None:
    results = [_fail("t.yaml::a"), _fail("t.yaml::b"), _fail("t.yaml::new"), _pass("t.yaml::ok")]
    html = _page(GPU_ENV, results, [_waiver("t.yaml::[ab]")])
    assert _totals(html) == ["1 FAIL", "2 known", "1 PASS"]
    assert re.search(r'style="background:#c62828">1 FAIL<', html.split("</header>")[0])
    # Without a waiver file nothing is known: every failure counts, in red.
    assert _totals(_page(GPU_ENV, results)) == ["3 FAIL", "1 PASS"]


# --- 2. every result is in report.html, passes as one short row each ------------------------------------------------


def test_every_pass_is_one_row_in_a_closed_group_per_status_operator_and_ep() -> None:
    results = [
        _pass("cases/t.yaml::p1"),
        _pass("cases/t.yaml::p2"),
        _pass("cases/s.yaml::window", operator="SLICE1"),
        _pass("cases/t.yaml::p1", ep="cuda"),
        Result("cases/t.yaml::k0", "TOP_K1", "dml", Status.INVALID),
        _fail("cases/t.yaml::f"),
    ]
    html = _page(GPU_ENV, results)
    passes = html[html.index("<h2 id=passes>") :]
    assert passes.startswith("<h2 id=passes>Passes (5 results)</h2>")
    groups = re.findall(r'<section class="group passes" id="(p\d+)" data-status="(\w+)" data-ep="(\w+)"', passes)
    # SLICE1 before TOP_K1, cuda before dml, PASS before INVALID: worked out by hand from the five results.
    assert [(status, ep) for _, status, ep in groups] == [
        ("PASS", "dml"),
        ("PASS", "cuda"),
        ("PASS", "dml"),
        ("INVALID", "dml"),
    ]
    assert "<details open" not in passes
    # One row per result: the case's name, its file said once by its list (which the filter searches with it).
    assert passes.count("<li data-row>") == 5
    assert '<ul class="ids" data-path="cases/t.yaml"><li data-row>p1</li><li data-row>p2</li></ul>' in passes
    assert "<article" not in passes  # no details for a pass
    # The filter counts every result, the failure and the passes alike.
    assert '<span id="shown">6</span> of 6 results' in html
    assert re.search(r'data-facet="status" value="PASS" checked> PASS <small>4</small>', html)


def test_a_matrix_pass_count_links_to_its_list_of_passes() -> None:
    results = [_pass("cases/t.yaml::p1"), _pass("cases/t.yaml::p2"), _fail("cases/t.yaml::f")]
    html = _page(GPU_ENV, results)
    matrix = html[html.index("id=matrix") : html.index("</table>", html.index("id=matrix"))]
    link = re.search(r'href="#(p\d+)"[^>]*>2 PASS<', matrix)
    assert link is not None
    assert re.search(rf'<section class="group passes" id="{link.group(1)}" data-status="PASS" data-ep="dml"', html)


# --- 3. the adapter named where the OS lists no GPU -----------------------------------------------------------------


def _gpu_line(env: Mapping[str, Any]) -> str:
    identity = dict(summarize(environment_from_json(env), [_pass("t.yaml::a")]).identity)
    return identity["GPU"]


def test_a_directml_run_on_lavapipe_names_its_adapter_where_no_gpu_is_listed() -> None:
    line = _gpu_line({"gpus": [], "eps": [_dml("dml"), _dml("dmlop")]})
    assert line == (
        f"none listed by nvidia-smi / Win32_VideoController; DirectML ran on the adapter {LAVAPIPE} (EP dml, dmlop)"
    )
    html = _page({"gpus": [], "eps": [_dml("dml")]}, [_pass("t.yaml::a")])
    assert (
        f"<dt>GPU</dt><dd>none listed by nvidia-smi / Win32_VideoController; DirectML ran on the adapter {LAVAPIPE}"
        in html
    )


def test_a_cpu_run_says_its_eps_ran_on_the_cpu_and_a_listed_gpu_is_named() -> None:
    cpu = {"gpus": [], "eps": [{"label": "cpu", "name": "CPUExecutionProvider"}]}
    assert _gpu_line(cpu) == "none listed by nvidia-smi / Win32_VideoController; every EP ran on the CPU (cpu)"
    webgpu = {"gpus": [], "eps": [{"label": "webgpu", "name": "WebGpuExecutionProvider"}]}
    assert _gpu_line(webgpu) == "none listed by nvidia-smi / Win32_VideoController"
    assert _gpu_line(GPU_ENV) == "NVIDIA H100 80GB HBM3 (driver 580.159.04)"


# --- 4. the console: no-verdict results counted, -v lists each (dmlconf run) ---------------------------------------


def test_the_console_counts_results_without_a_verdict_by_kind_and_ep() -> None:
    declined = [
        Result(f"t.yaml::u{i}", "TOP_K1", "cuda", Status.NOT_SUPPORTED, "no_kernel", message=f"no uint{i} kernel")
        for i in (8, 16, 32)
    ]
    declined.append(Result("t.yaml::celu", "MEAN_VARIANCE_NORMALIZATION1", "dml", Status.NOT_EXPRESSIBLE, message="x"))
    text = render_console(summarize(environment_from_json(GPU_ENV), declined))
    block = next(b for b in text.split("\n\n") if b.startswith("no verdict"))
    assert block.splitlines() == [
        "no verdict: 4 results (dmlconf -v run lists each)",
        "  3 NOT_SUPPORTED (no_kernel) [cuda]: no uint8 kernel",
        "  1 NOT_EXPRESSIBLE [dml]: x",
    ]


MVN_FOUND = str(Path(__file__).parent.parent / "cases" / "found" / "mean_variance_normalization1.yaml")


def test_run_lists_each_result_without_a_verdict_under_dash_v(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ThresholdedRelu on FLOAT16: the CPU EP has no float16 kernel for it (NOT_SUPPORTED no_kernel).
    argv = ["run", MVN_FOUND, "-k", "thresholded-relu-float16", "--ep", "cpu", "--report-dir", str(tmp_path / "r")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "no verdict: 1 result (dmlconf -v run lists each)" in out
    assert "NOT_SUPPORTED (no_kernel) cases/found" not in out
    assert main(["-v", *argv]) == 0
    out = capsys.readouterr().out
    assert "no verdict:" not in out
    assert re.search(
        r"^NOT_SUPPORTED \(no_kernel\) \S*mean_variance_normalization1.yaml::thresholded-relu-float16", out, re.M
    )


# --- 5. whose: triage's verdict in every report, nothing extra where no result carries one -------------------------


def _triage(verdict: Whose, why: str = "passes on WARP with the same DirectML.dll") -> Triage:
    rerun = Rerun(Rung.REFERENCE, "dml:adapter=warp", Status.PASS, adapter="Microsoft Basic Render Driver")
    return Triage(verdict, why, (rerun,), 1.5)


def _triaged() -> list[Result]:
    return [
        _fail("t.yaml::a", triage=_triage(Whose.DRIVER)),
        _fail("t.yaml::b", triage=_triage(Whose.DRIVER)),
        _fail("t.yaml::c", triage=_triage(Whose.LOWERING, "dmlop passes on the same device")),
        _fail("t.yaml::u", ep="cuda"),  # no DirectML path: never triaged
        _pass("t.yaml::ok"),
    ]


def test_groups_split_by_whose_and_the_counts_per_owner() -> None:
    results = _triaged()
    found = findings(results, _gate(GPU_ENV, results, [_waiver("t.yaml::b")]))
    # By hand: unexpected a (driver), c (lowering), u (untriaged, cuda); known b (driver).
    assert [(g.ep, g.whose, [r.case for r in g.results]) for g in found.unexpected] == [
        ("dml", Whose.DRIVER, ["t.yaml::a"]),
        ("dml", Whose.LOWERING, ["t.yaml::c"]),
        ("cuda", None, ["t.yaml::u"]),
    ]
    assert [(c.verdict, c.unexpected, c.known) for c in found.by_whose] == [
        (Whose.DRIVER, 1, 1),
        (Whose.LOWERING, 1, 0),
    ]


def test_html_has_a_whose_column_facet_and_table_only_where_triage_judged() -> None:
    html = _page(GPU_ENV, _triaged(), [_waiver("t.yaml::b")])
    row = re.search(r'<details class="row"[^>]*data-whose="driver"[^>]*>(.*?)</summary>', html, re.S)
    assert row is not None and '<span class="line w">' in row.group(1)
    assert re.search(
        r'<span class="whose" title="the GPU driver: [^"]*passes on WARP[^"]*">driver</span>', row.group(1)
    )
    untriaged = re.search(r'<details class="row"[^>]*data-ep="cuda"[^>]*>(.*?)</summary>', html, re.S)
    assert untriaged is not None and '<span class="whose">—</span>' in untriaged.group(1)
    assert "· whose: onnxruntime-lowering" in html  # the group's signature
    assert re.search(r'data-facet="whose" value="driver" checked> driver <small>2</small>', html)
    table = html[html.index("<h2 id=whose>") :]
    table = table[: table.index("</table>")]
    assert re.findall(r"<tr><td>.*?</td></tr>", table) == [
        '<tr><td><a href="?whose=driver">driver</a></td><td>the GPU driver: fails on this adapter, passes on the '
        "reference adapter with the same DirectML.dll</td><td>1</td><td>1</td></tr>",
        '<tr><td><a href="?whose=onnxruntime-lowering">onnxruntime-lowering</a></td><td>onnxruntime&#x27;s lowering: '
        "its graph and DirectML&#x27;s own operator disagree on the same device</td><td>1</td><td>0</td></tr>",
    ]
    article = html[html.index('data-whose="driver"') :]
    assert "<td>reference</td><td>dml:adapter=warp</td><td>Microsoft Basic Render Driver</td><td>PASS</td>" in article
    # Untriaged: no column, no facet, no table.
    plain = _page(GPU_ENV, [_fail("t.yaml::a"), _pass("t.yaml::ok")])
    body = plain[plain.index("<body>") : plain.index("<script>")]
    assert "whose" not in body and '<span class="line">' in body


def test_summary_md_has_a_whose_column_and_table_only_where_triage_judged() -> None:
    results = _triaged()
    markdown = render_markdown(summarize(environment_from_json(GPU_ENV), results))
    assert "## Whose failures: triage's verdicts" in markdown
    failures = markdown[markdown.index("## Failures and warnings") :].splitlines()
    assert failures[2].split("|")[1:-1][4].strip() == "whose"
    # Ordered by owner in whose.py's order, the untriaged last.
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in failures[4:8]]
    assert [(row[0], row[4]) for row in cells] == [
        ("t.yaml::a", "driver"),
        ("t.yaml::b", "driver"),
        ("t.yaml::c", "onnxruntime-lowering"),
        ("t.yaml::u", ""),
    ]
    plain = render_markdown(summarize(environment_from_json(GPU_ENV), [_fail("t.yaml::a")]))
    assert "whose" not in plain.lower()


def test_junit_messages_open_with_whose() -> None:
    results = _triaged()
    gate = _gate(GPU_ENV, results, [_waiver("t.yaml::b")])
    root = ET.fromstring(render_junit(summarize(environment_from_json(GPU_ENV), results), results, gate))
    cases = {case.get("name"): case for case in root.iter("testcase")}
    failure = cases["t.yaml::a"].find("failure")
    assert failure is not None and failure.get("message") == "[whose: driver] t.yaml::a: values differ"
    assert (failure.text or "").startswith("whose: driver: passes on WARP with the same DirectML.dll\n\n")
    skipped = cases["t.yaml::b"].find("skipped")
    assert (
        skipped is not None
        and skipped.get("message") == "[whose: driver] known failure: NaN selects wrong elements (BUG-7)"
    )
    untriaged = cases["t.yaml::u"].find("failure")
    assert untriaged is not None and untriaged.get("message") == "t.yaml::u: values differ"


def test_the_console_names_whose_on_each_failure_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = _triaged()
    gate = _gate(GPU_ENV, results, [_waiver("t.yaml::b")])
    text = render_console(summarize(environment_from_json(GPU_ENV), results), gate=gate)
    assert "UNEXPECTED FAIL (values) t.yaml::a [dml] [whose: driver]\n" in text
    assert "UNEXPECTED FAIL (values) t.yaml::u [cuda]\n" in text
    assert "    FAIL (values) t.yaml::b [dml] [whose: driver]" in text.splitlines()
    # dmlconf report's recap of the unexpected failures says it too.
    path = tmp_path / "results.json"
    write_results(str(path), GPU_ENV, results)
    waivers = tmp_path / "known.yaml"
    waivers.write_text(
        "known_failures:\n  - case: t.yaml::b\n    ep: dml\n    reason: r\n    tracking: BUG-7\n", encoding="utf-8"
    )
    assert main(["report", str(path), "--waivers", str(waivers), "--quiet"]) == 1
    assert capsys.readouterr().out.splitlines()[:3] == [
        "UNEXPECTED FAIL t.yaml::a [dml] [whose: driver]",
        "UNEXPECTED FAIL t.yaml::c [dml] [whose: onnxruntime-lowering]",
        "UNEXPECTED FAIL t.yaml::u [cuda]",
    ]
