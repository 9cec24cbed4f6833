"""The expected device: a run meant for one GPU stops before its first case when an EP that runs on a GPU reports
another adapter (``--expect-device GLOB`` for every such EP, or the EP option ``expect_device=GLOB`` for one of them),
so that a run that fell onto lavapipe, or onto another GPU, never passes as that GPU's run.

Each EP's adapter is the one it reports before any case runs: DirectML's own description of the device its runner
made (the describe every DirectML run starts with); for another GPU EP, the OS's GPU at the EP's device index (the EP
table's ``device_index_option``; under ``CUDA_VISIBLE_DEVICES``, the index into the GPUs it lists). Patterns are
matched case-sensitively (``fnmatchcase``) on every platform, as waivers are. docs/cli.md#the-expected-device.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from fnmatch import fnmatchcase

from conformance.ep.directml import DirectML
from conformance.ep.providers import EpSpec, facts, uses_directml
from conformance.ep_table import EXPECT_DEVICE, ExecutesOn


class UnexpectedDevice(ValueError):
    """An EP runs on another adapter than the one expected: one line naming both."""


def _index(ep: EpSpec) -> int:
    """The EP's adapter index in the OS's GPU list (0 where its options pick none)."""
    key = facts(ep).device_index_option
    given = ep.options.get(key, "0") if key is not None else "0"
    index = int(given) if given.isdigit() else 0
    visible = [part.strip() for part in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if part.strip()]
    if facts(ep).executes_on is ExecutesOn.GPU and visible and index < len(visible) and visible[index].isdigit():
        return int(visible[index])
    return index


def adapter_of(ep: EpSpec, directml: Mapping[str, DirectML], gpus: Callable[[], list[dict[str, str]]]) -> str | None:
    """The adapter ``ep`` reports, by name; None where it reports none."""
    found = directml.get(ep.text) if uses_directml(ep) else None
    if found is not None and found.identity is not None:
        adapter = found.identity.get("adapter") or {}
        return str(adapter.get("description")) if adapter.get("description") else None
    listed = gpus()
    index = _index(ep)
    return listed[index].get("name") if index < len(listed) else None


def expected_of(ep: EpSpec, glob: str | None) -> str | None:
    """The glob ``ep``'s adapter must match: its own option, else the run's; None for an EP on the CPU."""
    if facts(ep).executes_on is ExecutesOn.CPU:
        return None
    return ep.options.get(EXPECT_DEVICE) or glob


def check_devices(
    eps: Sequence[EpSpec],
    directml: Mapping[str, DirectML],
    glob: str | None,
    gpus: Callable[[], list[dict[str, str]]] | None = None,
) -> None:
    """UnexpectedDevice for the first EP whose adapter does not match what is expected of it."""
    listed: list[dict[str, str]] | None = None

    def gpus_once() -> list[dict[str, str]]:
        nonlocal listed
        if listed is None:
            from conformance.ep import device  # asked only where an EP's adapter is the OS's GPU

            listed = (gpus or device.gpus)()
        return listed

    for ep in eps:
        wanted = expected_of(ep, glob)
        if wanted is None:
            continue
        found = adapter_of(ep, directml, gpus_once)
        if found is None or not fnmatchcase(found, wanted):
            reports = f"reports {found}" if found is not None else "reports no adapter"
            raise UnexpectedDevice(f"expected a device matching {wanted!r}: {ep.text} {reports}; nothing was run")
