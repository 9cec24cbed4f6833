"""What hardware a run tested: the GPUs the operating system reports, the devices onnxruntime's EPs bound, the CPU.

- Linux (NVIDIA): ``nvidia-smi --query-gpu=...`` gives name, driver version, memory, PCI bus and UUID.
- Windows: ``Win32_VideoController`` (through PowerShell) gives each adapter's description and driver version,
  the identity DirectML's adapter has.
- Everywhere: ``onnxruntime.get_ep_devices()`` lists, per EP, the OrtHardwareDevice it would run on (vendor,
  device id, type, metadata): for a plugin EP such as WebGPU it is the device that was actually handed to the session.

A query that cannot run (no such tool, a timeout, odd output) gives an empty list and a debug log line: a machine
without a GPU still produces a report, and the report says that no GPU was found.
"""

from __future__ import annotations

import csv
import json
import logging
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

import onnxruntime as ort  # type: ignore[import-untyped]

log = logging.getLogger(__name__)

NVIDIA_FIELDS = ("index", "name", "driver_version", "memory.total", "pci.bus_id", "uuid", "compute_cap")
_QUERY_SECONDS = 20
Runner = Callable[[Sequence[str]], str]


def _run(command: Sequence[str]) -> str:
    """stdout of ``command``; OSError or subprocess errors when it cannot run or fails."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=_QUERY_SECONDS, check=True)
    return done.stdout


def parse_nvidia_smi(text: str) -> list[dict[str, str]]:
    """Rows of ``nvidia-smi --query-gpu=<NVIDIA_FIELDS> --format=csv,noheader,nounits``, keyed by field."""
    rows = []
    for record in csv.reader(line for line in text.splitlines() if line.strip()):
        if len(record) != len(NVIDIA_FIELDS):
            raise ValueError(f"nvidia-smi row has {len(record)} fields, expected {len(NVIDIA_FIELDS)}: {record}")
        row = {key.replace(".", "_"): value.strip() for key, value in zip(NVIDIA_FIELDS, record, strict=True)}
        row["memory_total_mib"] = row.pop("memory_total")
        rows.append(row)
    return rows


def parse_video_controllers(text: str) -> list[dict[str, str]]:
    """PowerShell's ``ConvertTo-Json`` of Win32_VideoController (one object, or a list of them)."""
    document = json.loads(text) if text.strip() else []
    items = document if isinstance(document, list) else [document]
    return [
        {
            "name": str(item.get("Name") or ""),
            "driver_version": str(item.get("DriverVersion") or ""),
            "pnp_device_id": str(item.get("PNPDeviceID") or ""),
        }
        for item in items
        if isinstance(item, dict)
    ]


def _nvidia(run: Runner) -> list[dict[str, str]]:
    if shutil.which("nvidia-smi") is None:
        return []
    query = f"--query-gpu={','.join(NVIDIA_FIELDS)}"
    return parse_nvidia_smi(run(["nvidia-smi", query, "--format=csv,noheader,nounits"]))


def _windows(run: Runner) -> list[dict[str, str]]:
    script = (
        "Get-CimInstance Win32_VideoController"
        " | Select-Object Name,DriverVersion,PNPDeviceID | ConvertTo-Json -Compress"
    )
    return parse_video_controllers(run(["powershell", "-NoProfile", "-NonInteractive", "-Command", script]))


def gpus(run: Runner = _run, platform: str = sys.platform) -> list[dict[str, str]]:
    """The machine's GPUs as the OS reports them (name, driver version, ...); [] where none can be found."""
    try:
        return _windows(run) if platform == "win32" else _nvidia(run)
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        log.debug("no GPU identity: %s", error)
        return []


def parse_cpuinfo(text: str) -> str | None:
    """The first ``model name`` of Linux's /proc/cpuinfo (x86 and most others); None where it has none (some ARM
    kernels name only the implementer and part)."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "model name" and value.strip():
            return " ".join(value.split())
    return None


def cpu_model(cpuinfo: str = "/proc/cpuinfo", processor: Callable[[], str] = platform.processor) -> str | None:
    """The CPU's model: /proc/cpuinfo's on Linux, else ``platform.processor()`` (Windows names the family, model and
    vendor there; elsewhere it may be only the architecture); None where neither says anything."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as file:
            found = parse_cpuinfo(file.read())
    except OSError:
        found = None
    return found or processor().strip() or None


def _text_map(mapping: Any) -> dict[str, str]:
    try:
        return {str(key): str(value) for key, value in dict(mapping).items()}
    except (TypeError, ValueError):
        return {}


def describe_ep_device(device: Any) -> dict[str, Any]:
    """One OrtEpDevice as plain JSON: the EP, and the hardware device it binds."""
    hardware = device.device
    return {
        "ep_name": str(device.ep_name),
        "ep_vendor": str(device.ep_vendor),
        "ep_metadata": _text_map(device.ep_metadata),
        "type": str(hardware.type).rsplit(".", 1)[-1],
        "vendor": str(hardware.vendor),
        "vendor_id": int(hardware.vendor_id),
        "device_id": int(hardware.device_id),
        "metadata": _text_map(hardware.metadata),
    }


def ep_devices(ep_name: str) -> list[dict[str, Any]]:
    """The devices onnxruntime offers ``ep_name`` (registered plugin EPs included); [] if it lists none."""
    try:
        return [describe_ep_device(d) for d in ort.get_ep_devices() if str(d.ep_name) == ep_name]
    except Exception as error:  # onnxruntime's own exception types; an old build has no get_ep_devices
        log.debug("no EP devices for %s: %s", ep_name, error)
        return []


def runtime() -> dict[str, Any]:
    """onnxruntime's and onnx's versions and the EPs this onnxruntime build offers, for a run's identity."""
    import onnx

    return {
        "onnxruntime": ort.__version__,
        "available_providers": ort.get_available_providers(),
        "onnx": onnx.__version__,
    }
