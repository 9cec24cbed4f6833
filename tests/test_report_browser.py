"""The HTML report in a real browser: headless Chromium (Debian's package) renders it, takes a screenshot, and logs
no console message or failed load. Skipped where no Chromium is installed (`apt-get install chromium`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conformance.compare.common import mismatch_details, ulp_histogram
from conformance.gate.summary import summarize
from conformance.model import Status
from conformance.report.html import render_html
from conformance.results import Result

CHROMIUM = next((path for name in ("chromium", "chromium-browser") if (path := shutil.which(name))), None)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH")
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
    page.write_text(render_html(summarize({"gpus": []}, results), results), encoding="utf-8")
    shot = tmp_path / "shot.png"
    run = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--window-size=1280,2000",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert shot.stat().st_size > 10_000  # a real picture, not an empty page
    problems = [line for line in run.stderr.splitlines() if "CONSOLE" in line or "Failed to load" in line]
    assert problems == []
