"""GPU identity: nvidia-smi and Win32_VideoController output parsed, failures turned into "no GPU found"."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

import pytest

from conformance.ep import device
from conformance.ep.device import parse_nvidia_smi, parse_video_controllers

# nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id,uuid,compute_cap
# --format=csv,noheader,nounits, as printed on the H100 machine (2026-11-22).
H100 = "0, NVIDIA H100 80GB HBM3, 580.159.04, 81559, 00000000:00:06.0, GPU-f7ff073b-fa5b-03a8-2ba4-721f983205b7, 9.0\n"


def test_nvidia_smi_rows() -> None:
    assert parse_nvidia_smi(H100 + H100.replace("0,", "1,", 1)) == [
        {
            "index": index,
            "name": "NVIDIA H100 80GB HBM3",
            "driver_version": "580.159.04",
            "pci_bus_id": "00000000:00:06.0",
            "uuid": "GPU-f7ff073b-fa5b-03a8-2ba4-721f983205b7",
            "compute_cap": "9.0",
            "memory_total_mib": "81559",
        }
        for index in ("0", "1")
    ]


def test_nvidia_smi_short_row_is_refused() -> None:
    with pytest.raises(ValueError, match="3 fields"):
        parse_nvidia_smi("0, NVIDIA H100, 580\n")


def test_video_controllers_one_or_many() -> None:
    one = '{"Name":"NVIDIA RTX A6000","DriverVersion":"32.0.15.6094","PNPDeviceID":"PCI\\\\VEN_10DE"}'
    expected = {"name": "NVIDIA RTX A6000", "driver_version": "32.0.15.6094", "pnp_device_id": "PCI\\VEN_10DE"}
    assert parse_video_controllers(one) == [expected]
    assert parse_video_controllers(f"[{one},{one}]") == [expected, expected]
    assert parse_video_controllers("") == []


def test_gpus_asks_the_platform_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Sequence[str]] = []

    def run(command: Sequence[str]) -> str:
        asked.append(command)
        return H100 if command[0] == "nvidia-smi" else '{"Name":"Adapter","DriverVersion":"1.2"}'

    monkeypatch.setattr(device.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert [g["name"] for g in device.gpus(run, platform="linux")] == ["NVIDIA H100 80GB HBM3"]
    assert device.gpus(run, platform="win32") == [{"name": "Adapter", "driver_version": "1.2", "pnp_device_id": ""}]
    assert [c[0] for c in asked] == ["nvidia-smi", "powershell"]
    assert asked[0][1] == "--query-gpu=index,name,driver_version,memory.total,pci.bus_id,uuid,compute_cap"


@pytest.mark.parametrize(
    "error",
    [OSError("no such file"), subprocess.TimeoutExpired("nvidia-smi", 20), subprocess.CalledProcessError(9, "x")],
)
def test_gpus_without_a_working_tool_is_empty(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    def run(command: Sequence[str]) -> str:
        raise error

    monkeypatch.setattr(device.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert device.gpus(run, platform="linux") == []


def test_gpus_without_nvidia_smi_is_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device.shutil, "which", lambda name: None)
    assert device.gpus(lambda command: pytest.fail("must not run"), platform="linux") == []


def test_ep_devices_describe_the_cpu() -> None:
    (cpu,) = device.ep_devices("CPUExecutionProvider")
    assert (cpu["ep_name"], cpu["type"], cpu["ep_vendor"]) == ("CPUExecutionProvider", "CPU", "Microsoft")
    assert isinstance(cpu["vendor_id"], int)
    assert device.ep_devices("NoSuchExecutionProvider") == []
