"""The HTML report: self-contained, escaped, and drawing what each failure's details hold."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from conformance.compare.common import mismatch_details
from conformance.compare.common import ulp_histogram as ulp_histogram_data
from conformance.environment import environment_from_json
from conformance.gate.summary import summarize
from conformance.gate.waivers import Waiver, apply_waivers
from conformance.model import SourcePos, Status
from conformance.report import html as html_report
from conformance.report.html import render_html
from conformance.report.svg import mismatch_map, ulp_histogram
from conformance.results import Result

HOSTILE = '<script>alert("x")</script>&'
ENV = {
    "gpus": [{"name": "GPU <b>", "driver_version": "1.0"}],
    "eps": [{"label": "cuda", "name": "CUDAExecutionProvider"}],
}


def _failing_mvn() -> Result:
    mismatched = np.zeros((4, 8), bool)
    mismatched[0, 0] = mismatched[1, 1] = mismatched[3, 7] = True
    details = mismatch_details(
        "OutputTensor", mismatched, ["index", "expected", "actual"], [["(0, 0)", "1", HOSTILE]], np.array([0, 0, 1, 9])
    )
    details["max_ulp"] = 2
    return Result(
        f"cases/x.yaml::{HOSTILE}",
        "MEAN_VARIANCE_NORMALIZATION1",
        "cuda",
        Status.FAIL,
        "tolerance",
        message=f"OutputTensor: values differ {HOSTILE}",
        repro="dmlconf run cases/x.yaml --ep cuda",
        details=details,
        parameters={"InputTensor": f"[4, 8] FLOAT32, {HOSTILE}"},
    )


def _tie_order() -> Result:
    sequence = {
        "where": "InputTensor[0, :]",
        "input": ["5", "5", "5", "1"],
        "input_size": 4,
        "expected_values": ["5", "5"],
        "actual_values": ["5", "5"],
        "expected_indices": [0, 1],
        "actual_indices": [0, 2],
        "why": [],
    }
    ties = [{"value": "5", "tied_at": [0, 1, 2], "expected": [0, 1], "actual": [0, 2]}]
    details = {"sequence": sequence, "ties": ties, "shape": [1, 2], "positions": [1], "mismatches": 1}
    return Result("cases/t.yaml::tie", "TOP_K1", "cuda", Status.FAIL, "tie_order", "FLOAT32", details=details)


def test_the_report_is_self_contained_and_escapes_every_case_string() -> None:
    results = [_failing_mvn(), Result("cases/p.yaml::ok", "SLICE1", "cuda", Status.PASS, data_type="FLOAT32")]
    html = render_html(summarize(environment_from_json(ENV), results), results)
    # The page's one script is its own filter; a case's text never becomes markup.
    assert html.lower().count("<script") == 1 and "alert(&quot;x&quot;)" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)  # no external asset
    assert "GPU &lt;b&gt;" in html
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")


def test_a_failure_gets_its_histogram_map_table_and_reproduction() -> None:
    results = [_failing_mvn()]
    html = render_html(summarize(environment_from_json(ENV), results), results)
    article = html[html.index('<details class="row"') :]
    assert "histogram of ULP errors" in article and "mismatch positions, 3 element(s)" in article
    assert "dmlconf run cases/x.yaml --ep cuda" in article
    assert "<dt>InputTensor</dt>" in article


def test_tie_order_shows_the_tied_elements_and_both_orders() -> None:
    results = [_tie_order()]
    html = render_html(summarize(environment_from_json(ENV), results), results)
    # Input indices 0, 1 and 2 hold the tied 5s and are shaded; index 3 is not.
    assert html.count("<td style=background:#fff3e0>5</td>") == 3
    assert "the spec's order selects [0, 1], the EP gave [0, 2]" in html


def _cells(svg: str) -> list[tuple[int, int]]:
    """The marked cells' (row, column), from their rectangles' places in the frame (the first rectangle)."""
    rects = [tuple(map(int, r)) for r in re.findall(r'<rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)"', svg)]
    (x0, y0, _, _), marked = rects[0], rects[1:]
    size = marked[0][3]  # a cell is square: its height is one cell
    return [((y - y0) // size, (x - x0) // size) for x, y, width, _ in marked for _ in range(width // size)]


def test_the_map_marks_the_cells_holding_mismatches() -> None:
    # A 4 x 8 tensor: flat positions 0, 9 and 31 are (0, 0), (1, 1) and (3, 7); one cell each, no binning.
    svg = mismatch_map([4, 8], [0, 9, 31], 3)
    assert svg.count('fill="#c62828"') == 3
    assert sorted(_cells(svg)) == [(0, 0), (1, 1), (3, 7)]


def test_a_large_tensor_is_binned() -> None:
    # 1000 x 1000 in cells of 11 x 11 elements: positions 0 and 1 share the first cell.
    svg = mismatch_map([1000, 1000], [0, 1, 999_999], 3)
    assert svg.count('fill="#c62828"') == 2 and "11 by 11 elements a cell" in svg


def test_histogram_buckets_beyond_the_tolerance_are_red() -> None:
    svg = ulp_histogram([["0", 5, 0], ["1", 2, 1], ["2-3", 1, 2], ["4-7", 1, 4]], max_ulp=2)
    bars = re.findall(r'<rect [^>]*fill="(#[0-9a-f]+)"', svg)
    assert bars == ["#5c7cfa", "#5c7cfa", "#c62828", "#c62828"]  # 2-3 may hold 3s, beyond 2; 4-7 is beyond


def test_ulp_buckets_are_powers_of_two() -> None:
    # 0 | 1 | 2, 3 | 4..7 | 1024..2047, as counted by hand from the values below.
    buckets = ulp_histogram_data(np.array([0, 0, 1, 2, 3, 7, 1024, 2047]))
    assert buckets == [["0", 2, 0], ["1", 1, 1], ["2-3", 2, 2], ["4-7", 1, 4], ["2^10+", 2, 1024]]


# --- issue 19, item 9: a page a driver engineer reads at a glance -------------------------------------------------

TRACKING = "https://example.com/issues/7"


def _waiver(case: str, ep: str = "cuda", reason: str = "RadixTopK is not index-stable") -> Waiver:
    return Waiver(case, ep, None, None, reason, TRACKING, SourcePos("known.yaml", 3, 5))


def _fail(case: str, kind: str = "tie_order", ep: str = "cuda", data_type: str = "FLOAT32", **more: Any) -> Result:
    return Result(case, "TOP_K1", ep, Status.FAIL, kind, data_type, message=f"{case}: indices differ\nmore", **more)


def _page(env: Mapping[str, Any], results: list[Result], waivers: list[Waiver] | None = None, **more: Any) -> str:
    recorded = environment_from_json(env)
    gate = apply_waivers(recorded, results, waivers) if waivers is not None else None
    return render_html(summarize(recorded, results), results, gate, **more)


def _verdict(html: str) -> str:
    """The verdict line's text, tags removed."""
    line = re.search(r'<p class="verdict"[^>]*>(.*?)</p>', html, re.DOTALL)
    assert line is not None
    return re.sub(r"<[^>]+>", "", line.group(1)).strip()


def test_the_verdict_says_what_the_gate_decided_and_why() -> None:
    results = [_fail("t.yaml::a"), _fail("t.yaml::b"), Result("t.yaml::ok", "TOP_K1", "cuda", Status.PASS)]
    waivers = [_waiver("t.yaml::a"), _waiver("t.yaml::b")]
    assert _verdict(_page(ENV, results, waivers)).startswith("PASSED — 2 known failures waived")
    unexpected = [*results, _fail("t.yaml::c")]
    assert _verdict(_page(ENV, unexpected, waivers)).startswith("FAILED — 1 unexpected failure; 2 known failures")
    # Without a waiver file every failure counts, and the page says so rather than "FAILED" beside a count.
    assert _verdict(_page(ENV, unexpected)).startswith("FAILED — 3 failures")
    # A known failure that passes now fails the gate until its waiver goes; the page names it.
    fixed = _page(ENV, results, [*waivers, _waiver("t.yaml::ok", reason="fixed in 1.2")])
    assert _verdict(fixed).startswith("FAILED — 1 known failure no longer failing (remove the waiver)")
    passes = fixed[fixed.index("Known failures that no longer fail (1)") :]
    assert "<td>t.yaml::ok</td>" in passes and "fixed in 1.2" in passes


def test_an_interrupted_run_says_how_much_of_it_ran() -> None:
    env = {**ENV, "interrupted": True, "planned_results": 1881}
    results = [Result(f"t.yaml::p{i}", "TOP_K1", "cuda", Status.PASS) for i in range(120)]
    verdict = _verdict(_page(env, results, []))
    assert verdict.startswith("INCOMPLETE/FAILED — interrupted: 120 of 1881 cases run")


def _groups(html: str) -> list[dict[str, str]]:
    """Each failure group's data attributes, in page order."""
    return [
        dict(re.findall(r'data-(\w+)="([^"]*)"', attributes))
        for attributes in re.findall(r'<section class="group"([^>]*)>', html)
    ]


def test_failures_are_grouped_by_operator_kind_ep_and_data_type() -> None:
    results = [
        _fail("t.yaml::t1"),
        _fail("t.yaml::v", kind="values"),
        _fail("t.yaml::t2"),
        _fail("t.yaml::d", ep="dml"),
        _fail("t.yaml::h", data_type="FLOAT16"),
        _fail("t.yaml::t3"),
    ]
    html = _page(ENV, results)
    groups = _groups(html)
    # Worked out by hand: tie_order/cuda/FLOAT32 holds t1, t2, t3; the other four results differ in one part each.
    assert sorted((g["op"], g["kind"], g["ep"], g["type"], g["n"]) for g in groups) == [
        ("TOP_K1", "tie_order", "cuda", "FLOAT16", "1"),
        ("TOP_K1", "tie_order", "cuda", "FLOAT32", "3"),
        ("TOP_K1", "tie_order", "dml", "FLOAT32", "1"),
        ("TOP_K1", "values", "cuda", "FLOAT32", "1"),
    ]
    assert groups[0]["n"] == "3"  # the largest group first
    first = html[html.index('<section class="group"') :]
    assert "first: <code>t.yaml::t1</code>" in first[: first.index("</summary>")]


def test_unexpected_failures_come_first_and_open_and_waived_ones_are_one_closed_group() -> None:
    results = [_fail("t.yaml::known1"), _fail("t.yaml::new", kind="values"), _fail("t.yaml::known2")]
    html = _page(ENV, results, [_waiver("t.yaml::known*")])
    unexpected, waived = html.index('data-kind="values"'), html.index('data-kind="tie_order"')
    assert unexpected < waived
    assert re.search(r'<details class="waived" id="waived">\s*<summary>', html)  # no "open": collapsed
    section = html[html.index('<details class="waived"') :]
    assert "2 known failures" in section[: section.index("</summary>")]
    group = html[html.index('data-kind="values"') :]
    assert group.index("<details open") < group.index("</section>")
    # The known failure's note is on its group: the waiver's reason and its tracking link.
    known = html[waived:]
    assert "RadixTopK is not index-stable" in known and f'href="{TRACKING}"' in known


def test_matrix_cells_link_to_their_failures() -> None:
    results = [_fail("t.yaml::a"), _fail("t.yaml::b", ep="dml"), Result("t.yaml::ok", "TOP_K1", "cuda", Status.PASS)]
    html = _page(ENV, results)
    matrix = html[html.index("id=matrix") : html.index("</table>", html.index("id=matrix"))]
    links = re.findall(r'<a [^>]*href="#(g\d+)"', matrix)
    assert len(links) == 2
    for anchor in links:
        group = re.search(rf'<section class="group" id="{anchor}"([^>]*)>', html)
        assert group is not None
    cuda = re.search(r'<section class="group" id="(g\d+)"[^>]*data-ep="cuda"', html)
    assert cuda is not None and f'href="#{cuda.group(1)}"' in matrix


def test_a_matrix_cell_counts_known_failures_apart_and_links_each_to_its_group() -> None:
    results = [_fail("t.yaml::known"), _fail("t.yaml::new", kind="values")]  # one cell: TOP_K1, FLOAT32, cuda
    html = _page(ENV, results, [_waiver("t.yaml::known")])
    matrix = html[html.index("id=matrix") : html.index("</table>", html.index("id=matrix"))]
    new = re.search(r'<a [^>]*href="#(g\d+)"[^>]*>1 FAIL</a>', matrix)
    known = re.search(r'<a [^>]*href="#(g\d+)"[^>]*>1 known FAIL</a>', matrix)
    assert new is not None and known is not None
    assert re.search(rf'<section class="group" id="{new.group(1)}"[^>]*data-kind="values"', html)
    assert re.search(rf'<section class="group" id="{known.group(1)}"[^>]*data-kind="tie_order"', html)


def test_a_failure_row_shows_kind_reason_time_and_its_artifacts_folder() -> None:
    result = _fail("t.yaml::a", seconds=0.25)
    html = _page(ENV, [result], artifacts={("t.yaml::a", "cuda"): "../artifacts/t.yaml_a-1/"})
    row = html[html.index('class="row"') :]
    row = row[: row.index("</summary>")]
    assert "tie_order" in row and "t.yaml::a: indices differ" in row and "more" not in row
    assert "250 ms" in row
    assert 'href="../artifacts/t.yaml_a-1/"' in row
    assert "artifacts" not in _page(ENV, [result]).split('class="row"')[1].split("</summary>")[0]


def test_the_page_has_a_filter_box_and_toggles_for_status_ep_and_kind() -> None:
    results = [_fail("t.yaml::a"), _fail("t.yaml::b", kind="values", ep="dml")]
    html = _page(ENV, results)
    assert re.search(r'<input [^>]*type="search"', html)
    toggles = set(re.findall(r'<input type="checkbox" data-facet="(\w+)" value="([^"]*)"', html))
    assert {("status", "FAIL"), ("ep", "cuda"), ("ep", "dml"), ("kind", "tie_order"), ("kind", "values")} <= toggles
    assert not any(facet == "gate" for facet, _ in toggles)  # without a waiver file nothing is known or unexpected
    gated = _page(ENV, results, [_waiver("t.yaml::a")])
    assert re.search(r'data-facet="gate" value="unexpected" checked> unexpected <small>1</small>', gated)
    assert re.search(r'data-facet="gate" value="known" checked> known <small>1</small>', gated)
    assert html.count("<script>") == 1  # the filter's own, inline


def test_the_feature_level_and_the_command_line_are_shown() -> None:
    env = {**ENV, "command": ["dmlconf", "run", "cases", "--ep", "cuda"], "target_feature_level": "4_0"}
    header = _page(env, [_fail("t.yaml::a")]).split("</header>")[0]
    assert "<dt>command</dt><dd><code>dmlconf run cases --ep cuda</code></dd>" in header
    assert re.search(r"<dt>feature level</dt><dd>[^<]*4_0", header)


BAR = r'<rect [^>]*fill="(#[0-9a-f]+)"><title>'  # a bar and its tooltip


def test_the_histogram_colours_every_bin_that_reaches_beyond_the_tolerance() -> None:
    # A 3-ULP error against a 2-ULP limit falls in the 2-3 bin, which starts within the limit: it is drawn red.
    svg = ulp_histogram([["1", 2, 1], ["2-3", 4, 2]], max_ulp=2)
    assert re.findall(BAR, svg) == ["#5c7cfa", "#c62828"]
    # 0 and 1 are within a 1-ULP limit; 2-3 and 4-7 reach beyond it.
    svg = ulp_histogram([["0", 5, 0], ["1", 2, 1], ["2-3", 1, 2], ["4-7", 1, 4]], max_ulp=1)
    assert re.findall(BAR, svg) == ["#5c7cfa"] * 2 + ["#c62828"] * 2


def test_the_histogram_axes_are_labelled() -> None:
    svg = ulp_histogram([["0", 5, 0], ["4-7", 1, 4]], max_ulp=2)
    texts = re.findall(r"<text [^>]*>([^<]*)</text>", svg)
    assert "ULP error" in texts and "elements (log scale)" in texts


def test_the_mismatch_map_is_large_enough_to_read_and_names_its_rows_and_columns() -> None:
    svg = mismatch_map([2, 1, 3], [0, 5], 2)
    frame = re.search(r'<rect [^>]*width="(\d+)" height="(\d+)"', svg)  # the first rectangle: the whole tensor
    assert frame is not None and int(frame.group(1)) >= 120  # 3 columns were 18 px wide
    # 2 x 3 x 40 drawn as 6 rows (dims 0 and 1) by 40 columns (dim 2): the split closest to twice as wide as tall.
    texts = re.findall(r"<text [^>]*>([^<]*)</text>", mismatch_map([2, 3, 40], [0, 239], 2))
    assert any(t.startswith("rows: dims 0-1") for t in texts) and any(t.startswith("columns: dim 2") for t in texts)
    assert {"0", "5", "39"} <= set(texts)  # each side's first and last index


def test_the_header_opens_with_what_each_ep_ran_on_and_runner_deaths_are_shown() -> None:
    death = {"ep": "cuda", "count": 3, "cases": ["t.yaml::a", "t.yaml::b"], "stderr": ["CUDA error: <illegal>"]}
    env = {**ENV, "gpus": [{"name": "NVIDIA H100", "driver_version": "580.1"}], "runner_deaths": [death]}
    html = _page(env, [_fail("t.yaml::a")], [_waiver("t.yaml::a")])
    header = html.split("</header>")[0]
    first = header.split('<dl class="params">')[1]
    assert first.startswith("<dt>EP cuda ran on</dt><dd>NVIDIA H100, driver 580.1; onnxruntime ?</dd>")
    assert _verdict(html).startswith("FAILED — EP cuda: the runner died 3 times while serving packs")
    deaths = html.split('id="runner-deaths"')[1].split("</div>")[0]
    assert "<code>t.yaml::b</code>" in deaths and "CUDA error: &lt;illegal&gt;" in deaths


# --- issue 39, item 1: a page of bounded size at 100,000 results -------------------------------------------------


def _sections(html: str) -> list[tuple[dict[str, str], str]]:
    """Each group's section, failures' and passes', in page order: its data attributes and what it holds."""
    return [
        (dict(re.findall(r'data-(\w+)="([^"]*)"', attributes)), body)
        for attributes, body in re.findall(r'<section class="group[^"]*"([^>]*)>(.*?)</section>', html, re.DOTALL)
    ]


def _listed(body: str, built: int, first: list[str], found: str) -> int:
    """How many of a group's ``built`` results its section lists (``found``: a listed one), checking that they are
    its first ones (``first``, in order) and that its note counts the rest."""
    listed = re.findall(found, body)
    assert 1 <= len(listed) <= built and listed == first[: len(listed)]
    more = re.findall(r'<p class="more" data-row data-more data-n="(\d+)">… and (\d+) more results in this group', body)
    assert more == ([(str(built - len(listed)),) * 2] if len(listed) < built else [])
    return len(listed)


def test_a_large_run_lists_each_group_s_first_results_within_the_bounds_and_counts_every_one() -> None:
    rows, names = html_report.MAX_ROWS, html_report.MAX_NAMES
    # Failures in three groups, two larger than the page's rows and one small; passes in two groups, one larger than
    # the page's names.
    failing = {"values": 3 * rows, "tie_order": rows, "nan_placement": 7}
    passing = {"cuda": 2 * names, "dml": 5}
    cases = {kind: [f"t.yaml::{kind}-{i}" for i in range(n)] for kind, n in failing.items()}
    passes = {ep: [f"{ep}-{i}" for i in range(n)] for ep, n in passing.items()}
    results = [_fail(case, kind=kind) for kind, named in cases.items() for case in named]
    results += [Result(f"p.yaml::{name}", "SLICE1", ep, Status.PASS) for ep, named in passes.items() for name in named]
    failures, passed = sum(failing.values()), sum(passing.values())
    html = _page({**ENV, "eps": [{"label": "cuda"}, {"label": "dml"}]}, results)

    # Every group is there with all its results counted; each lists its first results, at least one, and says how
    # many more it holds; the small groups are whole.
    sections = _sections(html)
    assert sorted((s["kind"], s["n"]) for s, _ in sections if "kind" in s) == sorted(
        (kind, str(n)) for kind, n in failing.items()
    )
    assert sorted((s["ep"], s["n"]) for s, _ in sections if "kind" not in s) == sorted(
        (ep, str(n)) for ep, n in passing.items()
    )
    shown_rows = shown_names = 0
    for attributes, body in sections:
        if "kind" in attributes:
            kind = attributes["kind"]
            shown_rows += _listed(body, failing[kind], cases[kind], r'<details class="row".*?<code>([^<]*)</code>')
        else:
            shown_names += _listed(
                body, passing[attributes["ep"]], passes[attributes["ep"]], r"<li data-row>([^<]*)</li>"
            )
    assert shown_rows == html.count('<details class="row"') and shown_names == html.count("<li data-row>")
    assert shown_rows == rows and shown_names == names  # each bound spent, and no more
    assert "nan_placement-6" in html and "dml-4" in html

    # The counts count every result: totals, links, the section's heading, the matrix and the filter.
    header = html.split("</header>")[0]
    assert f">{failures} FAIL</span>" in header and f">{passed} PASS</span>" in header
    assert f'<a href="#unexpected">failures ({failures})</a>' in header and f"passes ({passed})" in header
    assert f"<h2 id=unexpected>Failures ({failures} results in 3 groups)</h2>" in html
    matrix = html[html.index("id=matrix") : html.index("</table>", html.index("id=matrix"))]
    assert f">{failures} FAIL</a>" in matrix and f">{passing['cuda']} PASS</a>" in matrix
    assert f'showing <span id="shown">{len(results)}</span> of {len(results)} results' in html

    # The top of the page says, once, how many of its result rows it lists; a small run's page says nothing of it.
    assert html.count('<p class="cut"') == 1 and html.index('<p class="cut"') < html.index("id=matrix")
    assert f"report.html lists {rows + names} of {len(results)} result rows" in html
    assert 'class="cut"' not in _page(ENV, results[:10]) and 'class="more"' not in _page(ENV, results[:10])
