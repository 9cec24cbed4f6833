"""-j N: the same results, in the same order, as one process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli.main import main

REPO = Path(__file__).resolve().parent.parent
CASES = ["cases/top_k1/spec_examples.yaml", "cases/found/top_k1.yaml", "cases/found/mean_variance_normalization1.yaml"]


def _results(folder: Path) -> list[dict[str, object]]:
    document = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return [{k: v for k, v in r.items() if k != "seconds"} for r in document["results"]]


def test_workers_give_the_sequential_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["run", *CASES, "--ep", "cpu", "--report-dir", str(tmp_path / "one")]) == 0
    assert main(["run", *CASES, "--ep", "cpu", "-j", "3", "--report-dir", str(tmp_path / "three")]) == 0
    one, three = _results(tmp_path / "one"), _results(tmp_path / "three")
    assert len(one) > 40 and three == one  # every field but the time taken, in the same order
