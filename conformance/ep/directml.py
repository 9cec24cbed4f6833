"""The DirectML execution provider: the adapter its options pick, and the DML feature level a run targets (which
option keys and values it reads is its row of ep_table.py, as for every EP; the feature levels are model.py's list).

DirectML only runs on Windows; everything here is plain logic that is tested anywhere, with the Windows-only
queries (DirectML.dll's file version) behind small functions.

Feature level: each DirectML release supports feature levels up to a maximum (DML_FEATURE_LEVEL history in
Microsoft's "DirectML version history"): a case that needs more than the installed DirectML gives is
NOT_SUPPORTED rather than run. ``--feature-level`` overrides the derived level.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import struct
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.ep_table import ONE_ZERO, REFERENCE
from conformance.model import FeatureLevel

log = logging.getLogger(__name__)

# DirectML (major, minor) -> the highest DML_FEATURE_LEVEL it supports: Microsoft's "DirectML version history"
# (learn.microsoft.com/windows/ai/directml/dml-version-history). 1.2 and 1.3 were not widely released but
# introduced 2_1 (dml-feature-level-history). Microsoft's table has no 1.14 row: DirectML 1.14.1 (bundled by
# onnxruntime-directml 1.18) answers 6_3 when asked itself (IDMLDevice::CheckFeatureSupport, under Wine on lavapipe),
# so that is its row. Every build's answer is checked against this table (tests/test_wine_chain.py).
FEATURE_LEVEL_BY_DIRECTML: tuple[tuple[tuple[int, int], FeatureLevel], ...] = (
    ((1, 0), FeatureLevel(1, 0)),
    ((1, 1), FeatureLevel(2, 0)),
    ((1, 2), FeatureLevel(2, 1)),
    ((1, 4), FeatureLevel(3, 0)),
    ((1, 5), FeatureLevel(3, 1)),
    ((1, 6), FeatureLevel(4, 0)),
    ((1, 7), FeatureLevel(4, 1)),
    ((1, 8), FeatureLevel(5, 0)),
    ((1, 9), FeatureLevel(5, 1)),
    ((1, 10), FeatureLevel(5, 2)),
    ((1, 11), FeatureLevel(6, 0)),
    ((1, 12), FeatureLevel(6, 1)),
    ((1, 13), FeatureLevel(6, 2)),
    ((1, 14), FeatureLevel(6, 3)),
    ((1, 15), FeatureLevel(6, 4)),
)

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def version_tuple(version: str) -> tuple[int, int]:
    match = _VERSION.match(version.strip())
    if match is None:
        raise ValueError(f"not a version: {version!r}")
    return int(match.group(1)), int(match.group(2))


# Every onnxruntime-directml win_amd64 wheel on PyPI, oldest first, with the DirectML.dll it ships in onnxruntime/capi:
# the DLL's own FileVersion, read from each wheel (2026-11-24). Wheels from 1.19 on also ship onnxruntime.dll, of the
# wheel's version; 1.17 and 1.18 link onnxruntime into their Python module, so their DirectML.dll runs under Wine with
# a newer wheel's onnxruntime.dll (a Build).
WHEELS: tuple[tuple[str, str], ...] = (
    ("1.17.0", "1.13.1"), ("1.17.1", "1.13.1"), ("1.17.3", "1.13.1"),
    ("1.18.0", "1.14.1"), ("1.18.1", "1.14.1"),
    ("1.19.0", "1.15.1"), ("1.19.2", "1.15.1"),
    ("1.20.0", "1.15.2"), ("1.20.1", "1.15.2"),
    ("1.21.0", "1.15.4"), ("1.21.1", "1.15.4"), ("1.22.0", "1.15.4"), ("1.23.0", "1.15.4"),
    ("1.24.1", "1.15.4"), ("1.24.2", "1.15.4"), ("1.24.3", "1.15.4"), ("1.24.4", "1.15.4"),
)  # fmt: skip
FIRST_WITH_ONNXRUNTIME_DLL = (1, 19)

# onnxruntime-directml (major, minor) -> the DirectML.dll it ships, used when the DLL's own version cannot be read
# (1.16, older than the wheels above for today's Pythons, shipped 1.12.1).
DIRECTML_BUNDLED_WITH: Mapping[tuple[int, int], str] = {
    (1, 16): "1.12.1",
    **{version_tuple(wheel): directml for wheel, directml in WHEELS},
}
# The builds a run can pick (--ep dml:directml=V,ort=W): each DirectML version, and each onnxruntime.dll.
DIRECTML_VERSIONS: tuple[str, ...] = tuple(dict.fromkeys(directml for _, directml in WHEELS))
ONNXRUNTIME_DLL_VERSIONS: tuple[str, ...] = tuple(
    wheel for wheel, _ in WHEELS if version_tuple(wheel) >= FIRST_WITH_ONNXRUNTIME_DLL
)
# The software adapters a reference run uses, as DXGI describes them (fnmatch patterns): lavapipe under Wine, WARP on
# Windows. A failing result on one of them already ran on the reference: triage does not run it there again.
REFERENCE_ADAPTERS = ("llvmpipe*", "Microsoft Basic Render Driver*")
DLL_OPTIONS = ("directml", "ort")  # the harness's own DirectML options that pick the DLLs the runner loads


@dataclass(frozen=True)
class Build:
    """A DirectML build as the runner under Wine loads it: ``DirectML.dll`` of version ``directml`` (from the newest
    wheel that ships it) beside ``onnxruntime.dll`` of version ``onnxruntime`` (from that version's wheel)."""

    directml: str
    onnxruntime: str
    # On the reference adapter (``--ep dmlop:reference=1``): a runner of its own, on lavapipe under Wine (its own
    # Vulkan driver and Wine prefix: ep/wine/chain.py) or on WARP natively.
    reference: bool = False

    @property
    def directml_wheel(self) -> str:
        """The newest onnxruntime-directml wheel that ships this DirectML.dll."""
        return [wheel for wheel, directml in WHEELS if directml == self.directml][-1]


NEWEST_BUILD = Build(WHEELS[-1][1], WHEELS[-1][0])


def build_of(options: Mapping[str, str]) -> Build:
    """The build a dml EP's options pick (``directml=``, ``ort=``; each defaults to the newest wheel's). Their
    values were checked against the versions above with every other option (providers.py, from the EP table)."""
    return Build(
        options.get("directml", NEWEST_BUILD.directml),
        options.get("ort", NEWEST_BUILD.onnxruntime),
        options.get(REFERENCE) == ONE_ZERO.on,
    )


def feature_level_for(directml_version: str) -> FeatureLevel:
    """The highest DML feature level DirectML ``directml_version`` supports; ValueError for no version."""
    found = version_tuple(directml_version)
    supported = [level for release, level in FEATURE_LEVEL_BY_DIRECTML if release <= found]
    if not supported:
        raise ValueError(f"DirectML {directml_version} predates 1.0: no known feature level")
    return supported[-1]


@dataclass(frozen=True)
class DirectML:
    """The DirectML a run uses: its version, where that was learnt, and the feature level it gives."""

    version: str | None
    source: str
    feature_level: FeatureLevel | None
    identity: Mapping[str, Any] | None = (
        None  # under Wine: the chain and the device as DirectML saw it (wine/device.py)
    )

    def to_json(self) -> dict[str, Any]:
        level = str(self.feature_level) if self.feature_level else None
        found: dict[str, Any] = {"version": self.version, "source": self.source, "feature_level": level}
        if self.identity is not None:
            found["chain"] = dict(self.identity)
        return found


def fixed_file_version(block: bytes) -> str | None:
    """The file version in a VS_VERSIONINFO resource block (its VS_FIXEDFILEINFO, found by signature)."""
    at = block.find(struct.pack("<I", 0xFEEF04BD))
    if at < 0 or len(block) < at + 16:
        return None
    most, least = struct.unpack_from("<II", block, at + 8)
    return f"{most >> 16}.{most & 0xFFFF}.{least >> 16}.{least & 0xFFFF}"


def _windows_version_block(path: str) -> bytes | None:
    """GetFileVersionInfoW's resource block for ``path`` (Windows only)."""
    from ctypes import wintypes

    version = ctypes.WinDLL("version", use_last_error=True)  # type: ignore[attr-defined,unused-ignore]
    version.GetFileVersionInfoSizeW.argtypes = (wintypes.LPCWSTR, wintypes.LPDWORD)
    version.GetFileVersionInfoSizeW.restype = wintypes.DWORD
    version.GetFileVersionInfoW.argtypes = (wintypes.LPCWSTR, wintypes.DWORD, wintypes.DWORD, wintypes.LPVOID)
    version.GetFileVersionInfoW.restype = wintypes.BOOL
    size = version.GetFileVersionInfoSizeW(path, None)
    if not size:
        return None
    buffer = ctypes.create_string_buffer(size)
    if not version.GetFileVersionInfoW(path, 0, size, buffer):
        return None
    return buffer.raw


def _dll_version(capi_folder: str) -> str | None:
    path = os.path.join(capi_folder, "DirectML.dll")
    if sys.platform != "win32" or not os.path.exists(path):
        return None
    try:
        block = _windows_version_block(path)
    except OSError as error:  # the run goes on with the bundled-version table
        log.debug("cannot read %s's version: %s", path, error)
        return None
    found = fixed_file_version(block) if block else None
    return found if found is not None and found.startswith("1.") else None


def package_version(name: str) -> str | None:
    from importlib import metadata  # only where a version is asked: the pytest plugin's import stays cheap

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def capi_folder() -> str:
    """The folder of onnxruntime's native modules, where onnxruntime-directml keeps DirectML.dll beside its own."""
    import onnxruntime  # type: ignore[import-untyped]

    return os.path.join(os.path.dirname(onnxruntime.__file__), "capi")


def detect(
    dll_version: Callable[[], str | None] | None = None,
    package_version: Callable[[str], str | None] = package_version,
) -> DirectML:
    """The installed DirectML: DirectML.dll's file version next to onnxruntime, else the version the installed
    onnxruntime-directml release bundles; its feature level from FEATURE_LEVEL_BY_DIRECTML."""
    read_dll = dll_version if dll_version is not None else (lambda: _dll_version(capi_folder()))
    version, source = read_dll(), "DirectML.dll file version"
    if version is None:
        package = package_version("onnxruntime-directml")
        if package is None:
            return DirectML(None, "onnxruntime-directml is not installed", None)
        version = DIRECTML_BUNDLED_WITH.get(version_tuple(package))
        source = f"bundled with onnxruntime-directml {package}"
        if version is None:
            return DirectML(None, f"onnxruntime-directml {package}: bundled DirectML version unknown", None)
    try:
        return DirectML(version, source, feature_level_for(version))
    except ValueError as error:
        log.debug("%s", error)
        return DirectML(version, f"{source}; {error}", None)
