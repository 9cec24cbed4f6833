"""--resume of a DirectML run, for real: the genuine onnxruntime-directml DLLs in the runner under Wine + vkd3d-proton
(lavapipe in CI). A run killed on one DirectML build and resumed on another would credit the killed run's results to
the new build: the resume identity holds what each EP executes on (DirectML.dll's and onnxruntime.dll's versions and
hashes, the adapter, its driver, the chain), so the resume is refused with one line naming the DLL that changed.

The other build is another wheel given as the newest build's (``DMLCONF_ORT_DIRECTML_WHEEL``): the ``--ep`` text and
every option stay as they were, only what executes changes. Expected hashes are the wheels' own DLLs', hashed here.

Skipped, with the missing piece named, where the chain is not set up; in CI (CI=true) an absent chain is a failure.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conformance.ep.wine.chain import cache_folder, find_wheel

REPO = Path(__file__).resolve().parent.parent
SLICE_EXAMPLES = "cases/slice1/spec_examples.yaml"  # two cases: one kept, one left for the resume

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="DirectML is native on Windows: no Wine chain")


def _dmlconf(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args],
        cwd=REPO,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _directml_sha256(wheel: Path) -> str:
    """The SHA-256 of the DirectML.dll a wheel ships (onnxruntime/capi), read from the wheel itself."""
    with zipfile.ZipFile(wheel) as archive:
        return hashlib.sha256(archive.read("onnxruntime/capi/DirectML.dll")).hexdigest()


def test_a_dml_run_resumed_on_another_directml_build_is_refused(chain_ready: None, tmp_path: Path) -> None:
    cache = cache_folder(os.environ)
    newest = find_wheel(os.environ, cache, True)  # what --ep dml executes by default
    version = "1.19.2" if "-1.20.1-" in newest.name else "1.20.1"  # another wheel: DirectML 1.15.1 or 1.15.2
    other = find_wheel(os.environ, cache, True, version)
    first = _dmlconf("run", SLICE_EXAMPLES, "--ep", "dml", "--report-dir", str(tmp_path))
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    stream = tmp_path / "results.jsonl"
    lines = stream.read_bytes().splitlines(keepends=True)
    assert len(lines) == 3  # the header and the two results
    stream.write_bytes(b"".join(lines[:2]))  # what a kill after the first case leaves
    killed = stream.read_bytes()

    resumed = _dmlconf(
        "run", SLICE_EXAMPLES, "--ep", "dml", "--report-dir", str(tmp_path), "--resume",
        env={"DMLCONF_ORT_DIRECTML_WHEEL": str(other)},
    )  # fmt: skip
    assert resumed.returncode == 2, resumed.stdout[-3000:] + resumed.stderr[-2000:]
    then, now = _directml_sha256(newest)[:12], _directml_sha256(other)[:12]
    assert then != now
    [line] = resumed.stderr.splitlines()
    assert re.fullmatch(
        rf"dmlconf: --resume: {re.escape(str(stream))} is from another run: EP dml: DirectML\.dll "
        rf"1\.15\.\d+\.\d+ \(sha256 {then}…\) then, 1\.15\.\d+\.\d+ \(sha256 {now}…\) now; "
        r"run without --resume to start again",
        line,
    ), line
    assert stream.read_bytes() == killed  # a refusal changes nothing

    # On the build it began with, the same resume is accepted and finishes the run.
    again = _dmlconf("run", SLICE_EXAMPLES, "--ep", "dml", "--report-dir", str(tmp_path), "--resume")
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert "resuming: 1 result(s) kept" in again.stdout
