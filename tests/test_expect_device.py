"""--expect-device: a run meant for one GPU stops before its first case when an EP reports another adapter, in one
line naming both (exit 2), and records the expectation when it runs. The DirectML tests run on lavapipe, which is
no NVIDIA GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.environment import Environment
from conformance.ep.directml import DirectML
from conformance.ep.providers import parse_ep
from conformance.results import read_results, write_results
from conformance.run.expect import UnexpectedDevice, check_devices

REPO = Path(__file__).resolve().parent.parent
H100 = [{"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04"}, {"name": "NVIDIA A100-SXM4-40GB"}]


def _directml(adapter: str | None) -> DirectML:
    identity = {"adapter": {"index": 0, "description": adapter}} if adapter else None
    return DirectML("1.15.4", "test", None, identity)


def _check(eps: list[str], glob: str | None, directml: dict[str, DirectML] | None = None) -> None:
    check_devices([parse_ep(text) for text in eps], directml or {}, glob, gpus=lambda: H100)


def test_a_gpu_ep_on_the_expected_gpu_runs() -> None:
    _check(["cuda", "cpu"], "NVIDIA H100*")
    _check(["dmlop"], "NVIDIA H100*", {"dmlop": _directml("NVIDIA H100 80GB HBM3")})
    _check(["cpu"], "NVIDIA*")  # the CPU EP runs on no GPU: nothing is expected of it


def test_another_adapter_stops_the_run_naming_both() -> None:
    with pytest.raises(UnexpectedDevice) as raised:
        _check(["dmlop"], "NVIDIA*", {"dmlop": _directml("llvmpipe (LLVM 15.0.6, 256 bits)")})
    assert str(raised.value) == (
        "expected a device matching 'NVIDIA*': dmlop reports llvmpipe (LLVM 15.0.6, 256 bits); nothing was run"
    )
    with pytest.raises(UnexpectedDevice, match="cuda:device_id=1 reports NVIDIA A100-SXM4-40GB"):
        _check(["cuda:device_id=1"], "NVIDIA H100*")
    with pytest.raises(UnexpectedDevice, match="reports no adapter"):
        _check(["cuda:device_id=5"], "NVIDIA H100*")


def test_matching_is_case_sensitive_and_the_ep_option_wins() -> None:
    with pytest.raises(UnexpectedDevice):
        _check(["cuda"], "nvidia h100*")
    _check(["cuda:device_id=1,expect_device=NVIDIA A100*", "cuda"], "NVIDIA H100*")  # one GPU each
    with pytest.raises(UnexpectedDevice, match="'NVIDIA A100\\*': cuda:expect_device"):
        _check(["cuda:expect_device=NVIDIA A100*"], None)


def test_cuda_visible_devices_renumbers_the_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    with pytest.raises(UnexpectedDevice, match="A100"):
        _check(["cuda"], "NVIDIA H100*")


def test_the_harness_s_own_option_never_reaches_the_ep() -> None:
    from conformance.ep.providers import ep_options

    assert ep_options(parse_ep("cuda:device_id=0,expect_device=NVIDIA*")) == {"device_id": "0"}


def _dmlconf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args], cwd=REPO, capture_output=True, text=True, timeout=600
    )


CASE = "cases/top_k1/spec_examples.yaml"


@pytest.mark.parametrize("ep", ["dmlop", "dml"])
def test_a_lavapipe_run_expecting_nvidia_stops_before_its_first_case(
    chain_ready: None, tmp_path: Path, ep: str
) -> None:
    folder = tmp_path / "run"
    done = _dmlconf("run", CASE, "--ep", ep, "--expect-device", "NVIDIA*", "--report-dir", str(folder))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if "expected a device" in line]
    assert len(lines) == 1 and f"expected a device matching 'NVIDIA*': {ep} reports llvmpipe" in lines[0]
    assert "Traceback" not in done.stderr and "running" not in done.stdout  # not even announced
    assert not folder.exists()  # no report folder, no results.jsonl: nothing to --resume, nothing to report


def test_results_json_reads_the_expectation_back_and_an_older_file_without_it(tmp_path: Path) -> None:
    written = tmp_path / "results.json"
    write_results(str(written), Environment(expect_device="NVIDIA H100*").to_json(whole=True), [])
    assert read_results(str(written)).environment.expect_device == "NVIDIA H100*"
    older = json.loads(written.read_text(encoding="utf-8"))
    del older["environment"]["expect_device"]
    written.write_text(json.dumps(older), encoding="utf-8")
    assert read_results(str(written)).environment.expect_device is None


def test_a_lavapipe_run_expecting_lavapipe_runs_and_records_it(chain_ready: None, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    done = _dmlconf("run", CASE, "--ep", "dml", "--expect-device", "llvmpipe*", "--report-dir", str(folder), "-j", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    environment = json.loads((folder / "results.json").read_text())["environment"]
    assert environment["expect_device"] == "llvmpipe*"


def test_pytest_expecting_nvidia_on_lavapipe_is_a_usage_error(chain_ready: None) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", CASE, "--ep", "dmlop", "--expect-device", "NVIDIA*"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    assert "expected a device matching 'NVIDIA*': dmlop reports llvmpipe" in done.stdout + done.stderr
