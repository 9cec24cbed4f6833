"""The HTML report in a real browser: headless Chromium (Debian's package) renders it, takes a screenshot, and logs
no console message or failed load; the filter's script runs, and the page it leaves behind is read back. Skipped
where no Chromium is installed (`apt-get install chromium fonts-liberation`), except in CI (CI=true), where an absent
Chromium is a failure: the check that the page runs clean must not vanish from the gate unnoticed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conformance.compare.common import mismatch_details, ulp_histogram
from conformance.environment import Environment, environment_from_json
from conformance.gate.summary import summarize
from conformance.gate.waivers import Waiver, apply_waivers
from conformance.model import SourcePos, Status
from conformance.report import html as html_report
from conformance.report.html import render_html
from conformance.results import Result

CHROMIUM = next((path for name in ("chromium", "chromium-browser") if (path := shutil.which(name))), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None and os.environ.get("CI") != "true", reason="no chromium on PATH")


def _chromium(tmp_path: Path, url: str, *how: str) -> subprocess.CompletedProcess[str]:
    """Chromium on ``url``, its console on stderr; ``how``: --screenshot=... or --dump-dom."""
    if CHROMIUM is None:
        pytest.fail("CI must have Chromium (.ci/run installs Debian's chromium): no chromium on PATH")
    run = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--window-size=1400,2000",
            *how,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    problems = [line for line in run.stderr.splitlines() if "CONSOLE" in line or "Failed to load" in line]
    assert problems == []  # a script error is a console message
    return run


def test_chromium_renders_the_report_without_console_errors(tmp_path: Path) -> None:
    mismatched = np.zeros((6, 40), bool)
    mismatched[2, 5:9] = True
    details = mismatch_details("OutputTensor", mismatched, ["index"], [["(2, 5)"]], np.arange(240))
    details["ulp_histogram"], details["max_ulp"] = ulp_histogram(np.arange(240)), 2
    results = [
        Result(
            "cases/a.yaml::<b>bold</b>",
            "MEAN_VARIANCE_NORMALIZATION1",
            "gpu",
            Status.FAIL,
            "tolerance",
            details=details,
        ),
        Result("cases/a.yaml::ok", "SLICE1", "gpu", Status.PASS, data_type="FLOAT32"),
    ]
    page = tmp_path / "report.html"
    page.write_text(render_html(summarize(Environment(), results), results), encoding="utf-8")
    shot = tmp_path / "shot.png"
    _chromium(tmp_path, page.as_uri(), f"--screenshot={shot}")
    assert shot.stat().st_size > 10_000  # a real picture, not an empty page


def _rows(dom: str) -> dict[str, bool]:
    """Each failure row's case id -> whether the filter left it shown."""
    rows = re.findall(r'<details class="row"([^>]*)>.*?<code>(.*?)</code>', dom, re.DOTALL)
    return {case: "hidden" not in attributes for attributes, case in rows}


def test_the_filter_runs_in_the_browser(tmp_path: Path) -> None:
    def fail(case: str, ep: str, kind: str) -> Result:
        return Result(case, "TOP_K1", ep, Status.FAIL, kind, "FLOAT32", message=f"{kind} differs")

    results = [
        fail("t.yaml::known-a", "cuda", "tie_order"),
        fail("t.yaml::new", "dml", "values"),
        fail("t.yaml::known-c", "cuda", "tie_order"),
        Result("t.yaml::open", "TOP_K1", "dml", Status.QUALITY_WARNING, "nan_placement", "FLOAT32"),
        Result("t.yaml::declined", "TOP_K1", "cuda", Status.NOT_SUPPORTED, "no_kernel", "UINT16", message="none"),
    ]
    env = {"gpus": [], "eps": [{"label": "cuda"}, {"label": "dml"}], "interrupted": True, "planned_results": 9}
    waiver = Waiver(
        "t.yaml::known-*", "cuda", None, None, "not index-stable", "https://example.com/1", SourcePos("k", 1, 1)
    )
    recorded = environment_from_json(env)
    gate = apply_waivers(recorded, results, [waiver])
    page = tmp_path / "report.html"
    page.write_text(render_html(summarize(recorded, results), results, gate), encoding="utf-8")

    # Nothing chosen: every row shown; the waived group stays closed.
    dom = _chromium(tmp_path, page.as_uri(), "--dump-dom").stdout
    assert _rows(dom) == {"t.yaml::known-a": True, "t.yaml::new": True, "t.yaml::known-c": True, "t.yaml::open": True}
    assert re.search(r'<span id="shown">5</span>', dom)
    assert re.search(r'<details class="waived" id="waived">', dom)  # no "open" attribute

    # Text from the query string: one waived row matches, and the closed group around it opens.
    dom = _chromium(tmp_path, page.as_uri() + "?q=known-c", "--dump-dom").stdout
    assert _rows(dom) == {
        "t.yaml::known-a": False,
        "t.yaml::new": False,
        "t.yaml::known-c": True,
        "t.yaml::open": False,
    }
    assert re.search(r'<details class="waived" id="waived" open="">', dom)
    assert re.search(r'<span id="shown">1</span>', dom)

    # Toggles: only the dml EP; the groups left without a shown row hide, and the no-verdict row (cuda) too.
    dom = _chromium(tmp_path, page.as_uri() + "?ep=dml", "--dump-dom").stdout
    assert _rows(dom) == {"t.yaml::known-a": False, "t.yaml::new": True, "t.yaml::known-c": False, "t.yaml::open": True}
    assert re.search(r'<tr data-row=""[^>]*data-ep="cuda"[^>]*hidden=""', dom)
    assert re.search(r'<section class="group"[^>]*data-ep="cuda"[^>]*hidden=""', dom)
    assert re.search(r'<span id="shown">2</span>', dom)

    # The gate's toggle: unexpected failures only; rows the gate did not sort (warnings, no verdict) stay.
    dom = _chromium(tmp_path, page.as_uri() + "?gate=unexpected", "--dump-dom").stdout
    assert _rows(dom) == {"t.yaml::known-a": False, "t.yaml::new": True, "t.yaml::known-c": False, "t.yaml::open": True}

    # A link to a failure inside the closed waived group opens it.
    anchor = re.search(r'<section class="group" id="(g\d+)"[^>]*data-ep="cuda"', dom)
    assert anchor is not None
    dom = _chromium(tmp_path, f"{page.as_uri()}#{anchor.group(1)}", "--dump-dom").stdout
    assert re.search(r'<details class="waived" id="waived" open="">', dom)


def _passes(dom: str) -> dict[str, bool]:
    """Each pass row's case name -> whether the filter left it shown."""
    return {
        name: "hidden" not in attributes
        for attributes, name in re.findall(r"<li data-row=\"\"([^>]*)>([^<]*)</li>", dom)
    }


def test_the_filter_finds_a_pass_by_its_whole_id_and_toggles_passes_by_their_group(tmp_path: Path) -> None:
    results = [
        Result("cases/t.yaml::alpha", "TOP_K1", "dml", Status.PASS, data_type="FLOAT32"),
        Result("cases/t.yaml::beta", "TOP_K1", "dml", Status.PASS, data_type="FLOAT32"),
        Result("cases/s.yaml::alpha", "SLICE1", "cuda", Status.PASS, data_type="FLOAT32"),
        Result("cases/t.yaml::broken", "TOP_K1", "dml", Status.FAIL, "values", "FLOAT32", message="differs"),
    ]
    page = tmp_path / "report.html"
    page.write_text(render_html(summarize(Environment(), results), results), encoding="utf-8")

    # Nothing chosen: every pass row is there, its groups closed.
    dom = _chromium(tmp_path, page.as_uri(), "--dump-dom").stdout
    assert re.findall(r"<li data-row=\"\">([^<]*)</li>", dom) == ["alpha", "alpha", "beta"]
    assert re.search(r'<span id="shown">4</span>', dom)
    assert not re.search(r'<section class="group passes"[^>]*><details open', dom)

    # The whole id (file and name) finds one pass, and its closed group opens; the other file's "alpha" hides.
    dom = _chromium(tmp_path, page.as_uri() + "?q=cases/t.yaml::alpha", "--dump-dom").stdout
    assert re.search(r'<span id="shown">1</span>', dom)
    assert re.search(r'<section class="group passes"[^>]*data-ep="dml"[^>]*><details open="">', dom)
    assert re.search(r'<section class="group passes"[^>]*data-ep="cuda"[^>]*hidden=""', dom)

    # A pass row has no status or EP of its own: the toggles reach it through its group's.
    dom = _chromium(tmp_path, page.as_uri() + "?ep=cuda", "--dump-dom").stdout
    assert re.search(r'<span id="shown">1</span>', dom)
    assert re.search(r'<section class="group passes"[^>]*data-ep="dml"[^>]*hidden=""', dom)
    dom = _chromium(tmp_path, page.as_uri() + "?status=FAIL", "--dump-dom").stdout
    assert re.search(r'<span id="shown">1</span>', dom) and _passes(dom) == {"alpha": False, "beta": False}


def test_the_filter_counts_the_results_a_cut_group_does_not_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Bounds small enough to cut a handful of results: 2 failure rows, 3 names.
    monkeypatch.setattr(html_report, "MAX_ROWS", 2)
    monkeypatch.setattr(html_report, "MAX_NAMES", 3)
    results = [Result(f"t.yaml::v{i}", "TOP_K1", "cuda", Status.FAIL, "values", "FLOAT32") for i in range(5)]
    results.append(Result("t.yaml::d", "TOP_K1", "dml", Status.FAIL, "values", "FLOAT32"))
    results += [Result(f"t.yaml::p{i}", "TOP_K1", "cuda", Status.PASS, data_type="FLOAT32") for i in range(6)]
    env = environment_from_json({"gpus": [], "eps": [{"label": "cuda"}, {"label": "dml"}]})
    page = tmp_path / "report.html"
    page.write_text(render_html(summarize(env, results), results), encoding="utf-8")

    # Nothing chosen: the cuda group lists v0 alone, the passes p0 to p2; the count is every result's.
    dom = _chromium(tmp_path, page.as_uri(), "--dump-dom").stdout
    assert _rows(dom) == {"t.yaml::v0": True, "t.yaml::d": True}
    assert re.findall(r"<li data-row=\"\">([^<]*)</li>", dom) == ["p0", "p1", "p2"]
    assert re.search(r'<span id="shown">12</span>', dom)
    assert not re.search(r'<span class="part">[^<]', dom)  # no group says "N shown of"

    # A toggle reaches the unlisted results through their group: cuda's 5 failures and 6 passes.
    dom = _chromium(tmp_path, page.as_uri() + "?ep=cuda", "--dump-dom").stdout
    assert re.search(r'<span id="shown">11</span>', dom)

    # The text box finds only what is listed: v0, of its group's 5.
    dom = _chromium(tmp_path, page.as_uri() + "?q=t.yaml::v", "--dump-dom").stdout
    assert re.search(r'<span id="shown">1</span>', dom) and re.search(r'<span class="part">1 shown of </span>', dom)
    assert re.search(r'<p class="more"[^>]*hidden=""', dom)
