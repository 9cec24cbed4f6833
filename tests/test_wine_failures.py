"""How a run behaves when DirectML's machinery fails under it: here, an adapter that is not there.

These run the genuine DirectML chain under Wine (lavapipe in CI): skipped off the chain, a failure in CI (as
tests/test_wine_chain.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.ep.wine.chain import ChainMissing, find_chain

REPO = Path(__file__).resolve().parent.parent
TOP_K = "cases/top_k1/spec_examples.yaml"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="DirectML is native on Windows: no runner under Wine")


@pytest.fixture(scope="module")
def chain_ready() -> None:
    try:
        find_chain()
    except ChainMissing as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must have the DirectML chain: {error}")
        pytest.skip(f"no DirectML chain here: {error}")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args], cwd=REPO, capture_output=True, text=True, timeout=600, check=False
    )


def test_an_adapter_that_is_not_there_is_a_usage_error_before_any_case(chain_ready: None, tmp_path: Path) -> None:
    done = _run("run", TOP_K, "--ep", "dml:device_id=7", "--report-dir", str(tmp_path))
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-2000:]
    [line] = done.stderr.splitlines()
    assert line.startswith("dmlconf: --ep dml: dml:device_id=7: this machine has no DXGI adapter 7; its adapters: 0: ")
    assert not (tmp_path / "results.json").exists() and "running" not in done.stdout
