"""An EP whose package or library is absent is a usage error before anything runs (conformance/ep/installed.py):
one line naming what to install, exit 2 (pytest: its usage error), and no report written."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import onnxruntime  # type: ignore[import-untyped]
import pytest

from conformance.ep.installed import missing
from conformance.ep.providers import parse_ep

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "cases" / "top_k1" / "spec_examples.yaml"
AVAILABLE = set(onnxruntime.get_available_providers())
NO_CUDA = pytest.mark.skipif("CUDAExecutionProvider" in AVAILABLE, reason="this onnxruntime has the CUDA EP")
NO_WEBGPU = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime_ep_webgpu") is not None, reason="the WebGPU EP's package is installed"
)


def _dmlconf(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize(
    ("ep", "shown", "install"),
    [
        pytest.param("cuda", "cuda", "pip install onnxruntime-gpu", marks=NO_CUDA),
        pytest.param("CUDAExecutionProvider:device_id=0", "cuda:device_id=0", "onnxruntime-gpu", marks=NO_CUDA),
        pytest.param("webgpu", "webgpu", "pip install onnxruntime-ep-webgpu", marks=NO_WEBGPU),
        ("/nonexistent/libsome_ep.so", "/nonexistent/libsome_ep.so", "no plugin EP library at /nonexistent/"),
    ],
)
def test_an_ep_not_installed_is_a_usage_error_before_anything_runs(
    tmp_path: Path, ep: str, shown: str, install: str
) -> None:
    reports = tmp_path / "reports"
    done = _dmlconf("run", str(EXAMPLES), "--ep", ep, "--report-dir", str(reports), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"dmlconf: --ep {shown}: ") and install in line, line
    assert "Traceback" not in done.stderr
    assert done.stdout == ""  # not even "running N case(s)"
    assert not reports.exists()  # nothing ran, nothing was written


@NO_CUDA
def test_an_ep_not_installed_is_a_usage_error_in_the_pytest_plugin(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", examples=EXAMPLES.read_text(encoding="utf-8"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ep", "cuda")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --ep cuda: this onnxruntime has no CUDAExecutionProvider *onnxruntime-gpu*"])


def test_directml_on_windows_needs_onnxruntime_directml(monkeypatch: pytest.MonkeyPatch) -> None:
    """On Windows DirectML is onnxruntime-directml's EP in this process; off Windows it goes through Wine, whose
    chain has its own check (ChainMissing), so nothing is asked of onnxruntime here."""
    dml = parse_ep("dml")
    if sys.platform != "win32":
        assert missing(dml) is None
    monkeypatch.setattr(sys, "platform", "win32")
    absent = missing(dml)
    if "DmlExecutionProvider" in AVAILABLE:
        assert absent is None
    else:
        assert absent is not None and "pip install onnxruntime-directml" in absent


def test_the_cpu_and_an_installed_ep_are_there() -> None:
    assert missing(parse_ep("cpu")) is None
    for name in AVAILABLE - {"CPUExecutionProvider"}:
        assert missing(parse_ep(name)) is None, name
