"""Why the D3D12 device could not be created under Wine, for ``dmlconf doctor``: the runner asked again with Wine's
``err`` channel on (the run's runners keep Wine quiet), its last stderr lines, and the likely cause those lines point
at. The causes are the ones met setting the chain up (docs/directml-on-linux.md#when-doctor-fails), matched by the
words Wine, vkd3d-proton and the Vulkan loader print.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Mapping, Sequence

from conformance.ep.wine.chain import Chain
from conformance.ep.wine.client import Runner, RunnerDied
from conformance.ep.wine.protocol import ProtocolError, Refused

ERR_CHANNEL = "-all,err+all"  # Wine's and vkd3d-proton's errors, without their fixme and trace lines
SHOWN_LINES = 12
_SETTLE_SECONDS = 3.0
_HARMLESS = ("Using the Vulkan renderer.",)  # winediag's err line whenever WINE_D3D_CONFIG=renderer=vulkan
_HRESULT = re.compile(r"HRESULT 0x([0-9a-fA-F]{8})\b")
_HRESULT_NAMES = {
    0x80004002: "E_NOINTERFACE",
    0x80004005: "E_FAIL",
    0x8007000E: "E_OUTOFMEMORY",
    0x80070057: "E_INVALIDARG",
    0x887A0004: "DXGI_ERROR_UNSUPPORTED",
}


def named_hresults(text: str) -> str:
    """``text`` with each HRESULT it quotes followed by its name where it is a common one (``0x80004002
    (E_NOINTERFACE)``): a bare number sends the reader to a search engine."""

    def name(found: re.Match[str]) -> str:
        known = _HRESULT_NAMES.get(int(found.group(1), 16))
        return f"{found.group(0)} ({known})" if known else found.group(0)

    return _HRESULT.sub(name, text)


def likely_cause(lines: Sequence[str], environ: Mapping[str, str]) -> str:
    """The cause the runner's stderr ``lines`` point at, first match wins; what the user set that bears on it."""
    text = "\n".join(lines)

    def said(*words: str) -> bool:
        return any(word in text for word in words)

    if said("vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"):
        return (
            "vkd3d-proton 3.x without the Wine 8 patch: Wine 8.0's winevulkan lacks "
            "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR, which it loads at start; use the patched build "
            "(.ci/vkd3d-proton/build.sh) or Wine 9 or newer"
        )
    if said("VK_EXT_mutable_descriptor_type", "Insufficient descriptor indexing support"):
        return (
            "the Vulkan driver lacks VK_EXT_mutable_descriptor_type, which vkd3d-proton needs (Debian 12's Mesa 22 "
            "lavapipe): Mesa 23 or newer (source .ci/dml-chain.sh installs Mesa 25 from bookworm-backports)"
        )
    if said("is required for correct operation", "This is required.", "Required device extension",
            "Required instance extension"):  # fmt: skip
        hidden = environ.get("VKD3D_DISABLE_EXTENSIONS")
        return "the Vulkan device lacks a feature vkd3d-proton requires (the err line above names it)" + (
            f"; VKD3D_DISABLE_EXTENSIONS={hidden} hides extensions from vkd3d-proton" if hidden else ""
        )
    if said("ERROR_INCOMPATIBLE_DRIVER", "Found no drivers", "Failed to create DXGI factory",
            "Failed to create vkd3d instance", "vkCreateInstance failed"):  # fmt: skip
        icd = environ.get("VK_DRIVER_FILES") or environ.get("VK_ICD_FILENAMES")
        return "no Vulkan driver under Wine: the Vulkan loader finds none, or Wine's winevulkan cannot reach it" + (
            f" (VK_DRIVER_FILES={icd})" if icd else " (is a Vulkan driver installed? is the X display Wine's?)"
        )
    if not lines:
        return "not one the runner names: it printed nothing, even with Wine's err channel on"
    return "none of the known ones (docs/directml-on-linux.md#when-doctor-fails): the lines above are the runner's own"


def _settled(runner: Runner) -> list[str]:
    """The stopped runner's last lines once its stderr has been read to the end (a thread copies it)."""
    seen: list[str] | None = None
    deadline = time.monotonic() + _SETTLE_SECONDS
    while time.monotonic() < deadline:
        lines = runner.last_words()
        if lines == seen:
            break
        seen = lines
        time.sleep(0.2)
    return seen or []


def device_failure(chain: Chain, environ: Mapping[str, str]) -> list[str]:
    """Notes on a D3D12 device that could not be created: a fresh runner asked to describe adapter 0 with Wine's err
    channel on (for this one call), its last stderr lines, and the likely cause."""
    try:
        runner = Runner(dataclasses.replace(chain, winedebug=ERR_CHANNEL))
    except (RunnerDied, ProtocolError, Refused, OSError) as error:  # it started before: its message keeps its tail
        said = [line.strip() for line in str(error).splitlines()[1:] if line.startswith("  ")]
    else:
        try:
            runner.describe(0)
        except (RunnerDied, ProtocolError, Refused, OSError):
            pass  # what it printed on the way is what tells
        finally:
            runner.stop()
        said = _settled(runner)
    lines = [line for line in said if not line.rstrip().endswith(_HARMLESS)][-SHOWN_LINES:]
    heading = f"the runner's last stderr lines, asked again with WINEDEBUG={ERR_CHANNEL}:"
    return [heading, *(f"  {line}" for line in lines or ["(none)"]), f"likely cause: {likely_cause(lines, environ)}"]
