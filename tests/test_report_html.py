"""The HTML report: self-contained, escaped, and drawing what each failure's details hold."""

from __future__ import annotations

import re

import numpy as np

from conformance.compare.common import mismatch_details
from conformance.compare.common import ulp_histogram as ulp_histogram_data
from conformance.gate.summary import summarize
from conformance.model import Status
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
    html = render_html(summarize(ENV, results), results)
    assert "<script" not in html.lower() and "alert(&quot;x&quot;)" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)  # no external asset
    assert "GPU &lt;b&gt;" in html
    assert html.startswith("<!DOCTYPE html>") and html.rstrip().endswith("</html>")


def test_a_failure_gets_its_histogram_map_table_and_reproduction() -> None:
    results = [_failing_mvn()]
    html = render_html(summarize(ENV, results), results)
    article = html[html.index('<article id="r0"') :]
    assert "histogram of ULP errors" in article and "mismatch positions, 3 element(s)" in article
    assert "dmlconf run cases/x.yaml --ep cuda" in article
    assert "<dt>InputTensor</dt>" in article


def test_tie_order_shows_the_tied_elements_and_both_orders() -> None:
    results = [_tie_order()]
    html = render_html(summarize(ENV, results), results)
    # Input indices 0, 1 and 2 hold the tied 5s and are shaded; index 3 is not.
    assert html.count("<td style=background:#fff3e0>5</td>") == 3
    assert "the spec's order selects [0, 1], the EP gave [0, 2]" in html


def test_the_map_marks_the_cells_holding_mismatches() -> None:
    # A 4 x 8 tensor: flat positions 0, 9 and 31 are (0, 0), (1, 1) and (3, 7); one cell each, no binning.
    svg = mismatch_map([4, 8], [0, 9, 31], 3)
    assert svg.count('fill="#c62828"') == 3
    assert 'x="42" y="18"' in svg  # (3, 7): column 7 and row 3 at 6 pixels a cell


def test_a_large_tensor_is_binned() -> None:
    # 1000 x 1000 in cells of 11 x 11 elements: positions 0 and 1 share the first cell.
    svg = mismatch_map([1000, 1000], [0, 1, 999_999], 3)
    assert svg.count('fill="#c62828"') == 2 and "11 by 11 elements a cell" in svg


def test_histogram_buckets_beyond_the_tolerance_are_red() -> None:
    svg = ulp_histogram([["0", 5, 0], ["1", 2, 1], ["2-3", 1, 2], ["4-7", 1, 4]], max_ulp=2)
    bars = re.findall(r'<rect [^>]*fill="(#[0-9a-f]+)"', svg)
    assert bars == ["#5c7cfa", "#5c7cfa", "#5c7cfa", "#c62828"]  # 2-3 starts at 2: within; 4-7 is beyond


def test_ulp_buckets_are_powers_of_two() -> None:
    # 0 | 1 | 2, 3 | 4..7 | 1024..2047, as counted by hand from the values below.
    buckets = ulp_histogram_data(np.array([0, 0, 1, 2, 3, 7, 1024, 2047]))
    assert buckets == [["0", 2, 0], ["1", 1, 1], ["2-3", 2, 2], ["4-7", 1, 4], ["2^10+", 2, 1024]]
