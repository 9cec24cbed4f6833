"""What DirectML runs on when it runs in the runner (under Wine, or natively on Windows): the runner's description of
the device (DXGI adapter, D3D12 device, DirectML's own highest feature level, the DLLs' file versions) and under Wine
the translation beneath it (Wine, vkd3d-proton, the Vulkan driver), as a run's DirectML identity.

The feature level a run gates cases on is the one DirectML answers on the device (IDMLDevice::CheckFeatureSupport),
not one derived from its version; the version table's level is recorded beside it, so a difference shows.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conformance.environment import NATIVE_TRANSPORT
from conformance.ep.directml import DirectML, feature_level_for
from conformance.ep.wine.chain import RUNNER, VKD3D_DLLS, WHEEL_DLLS, Chain, RunnerChain, file_digest
from conformance.model import FeatureLevel

log = logging.getLogger(__name__)

_QUERY_SECONDS = 30
_VERSION_TEXT = re.compile(rb"\x00(\d+\.\d+\.\d+)\x00")
VULKAN_FIELDS = ("deviceName", "driverName", "driverInfo", "driverVersion", "apiVersion", "deviceType")


def vulkaninfo_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without a window system for ``vulkaninfo --summary``: it lists devices without one, but where a
    display is named it also opens a surface on it, and an X server that refuses one more client then reads as no
    Vulkan device at all (seen under load in CI). The display is a link of its own (doctor's "display")."""
    return {key: value for key, value in environ.items() if key not in ("DISPLAY", "WAYLAND_DISPLAY")}


def _output(command: list[str], env: Mapping[str, str] | None = None) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=_QUERY_SECONDS, check=False, env=env)
    except (OSError, subprocess.SubprocessError) as error:
        log.debug("%s: %s", command[0], error)
        return ""
    return done.stdout


def wine_version(wine: str) -> str:
    return _output([wine, "--version"]).strip()


def vkd3d_proton_version(folder: Path) -> str | None:
    """vkd3d-proton's version as d3d12core.dll carries it: a bare "3.0.1" among its strings (no version resource)."""
    try:
        found = _VERSION_TEXT.search((folder / "d3d12core.dll").read_bytes())
    except OSError:
        return None
    return found.group(1).decode() if found else None


def parse_vulkaninfo(text: str) -> list[dict[str, str]]:
    """The devices of ``vulkaninfo --summary`` (its "GPUn:" blocks), with the fields of VULKAN_FIELDS."""
    devices: list[dict[str, str]] = []
    for line in text.splitlines():
        if re.match(r"^GPU\d+:", line.strip()):
            devices.append({})
            continue
        key, sep, value = line.partition("=")
        if devices and sep and key.strip() in VULKAN_FIELDS:
            devices[-1][key.strip()] = value.strip()
    return devices


def vulkan_devices() -> list[dict[str, str]]:
    """The Vulkan devices this machine's loader offers (``VK_DRIVER_FILES`` and all), where vulkaninfo is installed."""
    program = shutil.which("vulkaninfo")
    return parse_vulkaninfo(_output([program, "--summary"], vulkaninfo_environment(os.environ))) if program else []


def _staged_digests(folder: Path) -> dict[str, str]:
    """The SHA-256 of each wheel DLL the runner loads (staged in ``folder``): what executed, byte for byte, where a
    version number alone would not tell two builds apart."""
    found = {}
    for name in WHEEL_DLLS:
        try:
            found[name] = file_digest(folder / name).hex()
        except OSError as error:
            log.debug("cannot hash %s: %s", folder / name, error)
    return found


def _runner_build(chain: RunnerChain) -> dict[str, str] | None:
    """The runner as built: the compiler that built it and why that one (where known), and the program's SHA-256
    (part of a run's resume identity: run/identity.py's executing)."""
    record = chain.compiler.record() if chain.compiler is not None else {}
    try:
        record["sha256"] = file_digest(chain.folder / RUNNER).hex()
    except OSError as error:
        log.debug("cannot hash %s: %s", chain.folder / RUNNER, error)
    return record or None


def _translation(chain: Chain, adapter: Mapping[str, Any] | None) -> dict[str, Any]:
    """What translates D3D12 under Wine: Wine, vkd3d-proton and the Vulkan driver beneath."""
    vulkan = vulkan_devices()
    same = next((d for d in vulkan if adapter and d.get("deviceName") == adapter.get("description")), None)
    return {
        "wine": wine_version(chain.wine),
        "vkd3d_proton": {
            "version": vkd3d_proton_version(chain.vkd3d_proton),
            "folder": str(chain.vkd3d_proton),
            "sha256": {name: file_digest(chain.vkd3d_proton / name).hex() for name in VKD3D_DLLS},
        },
        "vulkan_driver_files": os.environ.get("VK_DRIVER_FILES") or os.environ.get("VK_ICD_FILENAMES"),
        "vulkan_devices": vulkan,
        "vulkan_driver": f"{same.get('driverName', '')} {same.get('driverInfo', '')}".strip() if same else None,
    }


def chain_identity(chain: RunnerChain, described: Mapping[str, Any]) -> dict[str, Any]:
    """Everything that stands between DirectML and the hardware, and the device as DirectML saw it. A native chain
    (Windows) has nothing between: no Wine, vkd3d-proton or Vulkan, and no wheel (the installed package's DLLs)."""
    index = described.get("adapter_index", 0)
    adapters = described.get("adapters") or []
    adapter = next((a for a in adapters if isinstance(a, dict) and a.get("index") == index), None)
    files = described.get("files") or {}
    return {
        "transport": chain.transport,
        **(_translation(chain, adapter) if isinstance(chain, Chain) else {}),
        "adapter": adapter,
        "d3d12_feature_level": described.get("d3d12_feature_level"),
        "shader_model": described.get("shader_model"),
        "dml_feature_level": described.get("dml_feature_level") or None,
        "onnxruntime_dll": files.get("onnxruntime.dll") or None,
        "directml_dll": files.get("DirectML.dll") or None,
        "dll_sha256": _staged_digests(chain.folder),
        "onnxruntime": described.get("onnxruntime"),
        "wheel": chain.wheel.name if isinstance(chain, Chain) else None,
        # the wheel DirectML.dll came from
        "directml_wheel": (chain.directml_wheel or chain.wheel).name if isinstance(chain, Chain) else None,
        "runner": _runner_build(chain),
        "error": described.get("error"),
    }


def _three_parts(version: str | None) -> str | None:
    return ".".join(version.split(".")[:3]) if version else None


def directml_of(identity: Mapping[str, Any]) -> DirectML:
    """The run's DirectML from the chain's identity: DirectML.dll's version, and the feature level the device
    answered (None where it could not be asked, with the reason as its source)."""
    version = _three_parts(identity.get("directml_dll"))
    answered = identity.get("dml_feature_level")
    level = FeatureLevel.parse(answered) if answered else None
    where = "in the runner on Windows" if identity.get("transport") == NATIVE_TRANSPORT else "under Wine"
    source = f"DirectML.dll file version {where}; feature level asked of the device (IDMLDevice::CheckFeatureSupport)"
    if level is None:
        source = f"DirectML.dll file version {where}; feature level not answered: {identity.get('error') or '?'}"
    try:
        table = str(feature_level_for(version)) if version else None
    except ValueError:
        table = None
    return DirectML(version, source, level, identity={**identity, "feature_level_by_version_table": table})
