"""results.json's ``environment`` as frozen records: what a run tested on (GPUs, CPU, software, each EP with its
devices, DirectML and the chain under Wine), how it was made (command, when, which harness, the waiver file it was
gated with) and what it did not run (interrupted, skipped case files, runner deaths), and the shard it is.
run/identity.py builds a run's record, which results.json is written from (``to_json``, whole: null and empty fields
say "none" there); ``environment_from_json`` reads it once (records.py checks every field), and every report, the
gate and the diff read these attributes.
``ran_on`` words the device and builds that executed an EP, for the reports and for an ``--artifacts`` README alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.ep_table import ExecutesOn, ep_facts
from conformance.records import AT_DEFAULT, WHERE_SET, Where, read_record, record_json


def _not_negative(values: object, where: Where) -> str | None:
    """A count or size below zero names nothing that ran."""
    numbers = values if isinstance(values, tuple) else (values,)
    negative = [n for n in numbers if isinstance(n, int) and n < 0]
    return f"{negative[0]} is below zero" if negative else None


NOT_NEGATIVE = {"check": _not_negative}
NATIVE_TRANSPORT = "native"  # a DirectML chain's transport where the runner ran on Windows itself (ep/wine/chain.py)


def _translates(chain: Chain) -> bool:
    """Whether something translates D3D12 beneath the chain (Wine), which its record then describes."""
    return chain.transport != NATIVE_TRANSPORT


TRANSLATION = {AT_DEFAULT: _translates}  # a Chain's field of Wine, vkd3d-proton and Vulkan: none on a native chain


@dataclass(frozen=True)
class Gpu:
    """A GPU the operating system lists (nvidia-smi, or Win32_VideoController on Windows), as it wrote it: each
    lists some of these (ep/device.py), in this order."""

    index: str | None = field(default=None, metadata=WHERE_SET)
    name: str | None = field(default=None, metadata=WHERE_SET)
    driver_version: str | None = field(default=None, metadata=WHERE_SET)
    pci_bus_id: str | None = field(default=None, metadata=WHERE_SET)
    uuid: str | None = field(default=None, metadata=WHERE_SET)
    compute_cap: str | None = field(default=None, metadata=WHERE_SET)
    memory_total_mib: str | None = field(default=None, metadata=WHERE_SET)
    pnp_device_id: str | None = field(default=None, metadata=WHERE_SET)


@dataclass(frozen=True)
class EpDevice:
    """A device onnxruntime offered an EP (an OrtEpDevice and the hardware it binds)."""

    ep_name: str | None = None
    ep_vendor: str | None = None
    ep_metadata: Mapping[str, str] = field(default_factory=dict)
    type: str | None = None
    vendor: str | None = None
    vendor_id: int | None = None
    device_id: int | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Adapter:
    """The DXGI adapter DirectML ran on under Wine, as the runner described it."""

    index: int | None = None
    description: str | None = None
    vendor_id: int | None = None
    device_id: int | None = None
    revision: int | None = None
    dedicated_video_memory_mib: int | None = None
    shared_system_memory_mib: int | None = None
    flags: int | None = None


@dataclass(frozen=True)
class Vkd3dProton:
    version: str | None = None
    folder: str | None = None
    sha256: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunnerBuild:
    """The runner that executed DirectML under Wine: the C compiler that built it (mingw or zig), its program and
    version, why that one was chosen (ep/wine/chain.py's find_compiler), and the runner's SHA-256."""

    compiler: str | None = field(default=None, metadata=WHERE_SET)
    version: str | None = field(default=None, metadata=WHERE_SET)
    program: str | None = field(default=None, metadata=WHERE_SET)
    chosen: str | None = field(default=None, metadata=WHERE_SET)
    sha256: str | None = field(default=None, metadata=WHERE_SET)  # none where the runner could not be read


@dataclass(frozen=True)
class Chain:
    """Everything between DirectML and the hardware under Wine, and the device as DirectML saw it
    (ep/wine/device.py's chain_identity)."""

    transport: str | None = None
    wine: str | None = field(default=None, metadata=TRANSLATION)
    vkd3d_proton: Vkd3dProton | None = field(default=None, metadata=TRANSLATION)
    vulkan_driver_files: str | None = field(default=None, metadata=TRANSLATION)
    vulkan_devices: tuple[Mapping[str, str], ...] = field(default=(), metadata=TRANSLATION)
    vulkan_driver: str | None = field(default=None, metadata=TRANSLATION)
    adapter: Adapter | None = None
    d3d12_feature_level: str | None = None
    shader_model: str | None = None
    dml_feature_level: str | None = None
    onnxruntime_dll: str | None = None
    directml_dll: str | None = None
    dll_sha256: Mapping[str, str] = field(default_factory=dict)  # each DLL staged beside the runner, by its name
    onnxruntime: str | None = None
    wheel: str | None = None
    directml_wheel: str | None = None
    runner: RunnerBuild | None = None
    error: str | None = None
    feature_level_by_version_table: str | None = None


@dataclass(frozen=True)
class DirectMLRecord:
    """The DirectML an EP used: its version, where that was learnt, its feature level; the chain under Wine."""

    version: str | None = None
    source: str | None = None
    feature_level: str | None = None
    chain: Chain | None = field(default=None, metadata=WHERE_SET)


@dataclass(frozen=True)
class EpRecord:
    """One EP of the run: how it was named (``label``, the EP text results carry), its options and devices."""

    label: str
    alias: str | None = None
    name: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    library: str | None = None
    devices: tuple[EpDevice, ...] = ()
    target_feature_level: str | None = None
    directml: DirectMLRecord | None = field(default=None, metadata=WHERE_SET)

    @property
    def chain(self) -> Chain | None:
        """DirectML's chain under Wine, where this EP ran through one."""
        return self.directml.chain if self.directml is not None else None


@dataclass(frozen=True)
class Harness:
    """The harness that ran: its version, its checkout's commit, the case files' hash (run/identity.py)."""

    version: str | None = None
    git_commit: str | None = None
    cases_sha256: str | None = None
    case_files: int | None = field(default=None, metadata=NOT_NEGATIVE)


@dataclass(frozen=True)
class SkippedFile:
    """A case file --keep-going skipped, with its number of problems."""

    path: str
    problems: int | None = field(default=None, metadata=NOT_NEGATIVE)


@dataclass(frozen=True)
class RunnerDeath:
    """The deaths of the processes serving one EP's cases that ended unasked (docs/reports.md: runner_deaths): the
    DirectML runner's (each one: with a case or a pack in flight, between requests, at a failed start) and a worker's
    killed while serving a pack. ``count``: all of them; ``in_packs``: those while serving a pack of more than one
    case, whose cases were each run again alone, so that no result stands for the death (what fails the run);
    ``cases``: the cases in flight at any of them, each once; ``stderr``: the latest one's last lines.

    An older file (before ``in_packs``) failed the run on any death it counted: there ``in_packs`` is None and
    ``pack_deaths`` is ``count``, so that such a file's verdict stays what it was."""

    ep: str
    count: int = field(metadata=NOT_NEGATIVE)
    in_packs: int | None = field(default=None, metadata=NOT_NEGATIVE)
    cases: tuple[str, ...] = ()
    stderr: tuple[str, ...] = ()

    @property
    def pack_deaths(self) -> int:
        """The deaths while serving a pack of more than one case (an older file's ``count``), at most ``count``."""
        return self.count if self.in_packs is None else min(self.in_packs, self.count)


@dataclass(frozen=True)
class ShardRecord:
    """A run of one shard (``--shard INDEX/COUNT``) and the plan it is a part of: the (case, EP) pairs of the whole
    selection before it was split (``planned_results``) and their hash (``plan_sha256``, over each pair's case id
    and EP text in order), which every shard of one split shares; ``dmlconf merge`` checks a set against them."""

    index: int = field(metadata=NOT_NEGATIVE)
    count: int = field(metadata=NOT_NEGATIVE)
    planned_results: int | None = field(default=None, metadata=NOT_NEGATIVE)
    plan_sha256: str | None = None


@dataclass(frozen=True)
class Shard:
    """One merged file's own run (dmlconf merge): where it came from and what it ran on."""

    file: str
    command: tuple[str, ...] = ()
    gpus: tuple[Gpu, ...] = ()
    cuda_visible_devices: str | None = None
    eps: tuple[EpRecord, ...] = ()
    started_at: str | None = None
    duration_s: float | None = None
    harness: Harness | None = None


@dataclass(frozen=True)
class PeakMemory:
    """The run's peak memory in MiB, runners included (survive/memory.py): each process's own peak resident memory,
    summed over the harness's processes (``harness_mib``: the run's own and each worker's) and the DirectML runners
    they started (``runners_mib``, ``runners`` of them); ``total_mib`` is both, an upper bound on what the run held
    at once (processes that peaked at different times count both peaks)."""

    total_mib: int = field(metadata=NOT_NEGATIVE)
    harness_mib: int = field(metadata=NOT_NEGATIVE)
    runners_mib: int = field(default=0, metadata=NOT_NEGATIVE | WHERE_SET)
    runners: int = field(default=0, metadata=NOT_NEGATIVE | WHERE_SET)


@dataclass(frozen=True)
class GatedWith:
    """The waiver file a run was gated with (``run --waivers``, or ``merge``'s): where it was, the SHA-256 of its bytes,
    its text (so that ``report``, ``merge`` and ``diff`` apply it again without it: gate/recorded.py) and the lines of
    the entries that waived a failure of the run."""

    path: str
    sha256: str
    text: str
    applied_lines: tuple[int, ...] = field(default=(), metadata=NOT_NEGATIVE)


@dataclass(frozen=True)
class Environment:
    """What a run tested on, how it was made and what it did not run; every field optional (older files lack many)."""

    command: tuple[str, ...] = ()
    cwd: str | None = None
    python_executable: str | None = None
    dml_conformance: str | None = None
    gpus: tuple[Gpu, ...] = ()
    cuda_visible_devices: str | None = None
    onnxruntime: str | None = None
    onnxruntime_packages: Mapping[str, str] = field(default_factory=dict)
    available_providers: tuple[str, ...] = ()
    onnx: str | None = None
    numpy: str | None = None
    python: str | None = None
    platform: str | None = None
    machine: str | None = None
    cpu: str | None = None
    eps: tuple[EpRecord, ...] = ()
    target_feature_level: str | None = None
    pack: int | None = None
    started_at: str | None = field(default=None, metadata=WHERE_SET)
    duration_s: float | None = field(default=None, metadata=WHERE_SET)
    harness: Harness | None = field(default=None, metadata=WHERE_SET)
    skipped_files: tuple[SkippedFile, ...] = field(default=(), metadata=WHERE_SET)
    # this run is one shard (--shard); None: the whole selection, or a merge
    shard: ShardRecord | None = field(default=None, metadata=WHERE_SET)
    problems: tuple[str, ...] = field(default=(), metadata=WHERE_SET)
    artifacts: str | None = None
    stopped: str | None = field(default=None, metadata=WHERE_SET)
    runner_deaths: tuple[RunnerDeath, ...] = field(default=(), metadata=WHERE_SET)
    shards: tuple[Shard, ...] = field(default=(), metadata=WHERE_SET)
    # None: an older file, or a merge (its shards ran apart)
    peak_memory: PeakMemory | None = field(default=None, metadata=WHERE_SET)
    interrupted: bool = field(default=False, metadata=WHERE_SET)
    planned_results: int | None = field(default=None, metadata=NOT_NEGATIVE | WHERE_SET)
    # the waiver file the run was gated with; None: none (or an older file)
    waivers: GatedWith | None = field(default=None, metadata=WHERE_SET)
    # --expect-device: the glob every EP on a GPU was checked against before the first case (run/expect.py)
    expect_device: str | None = field(default=None, metadata=WHERE_SET)

    def ep(self, label: str) -> EpRecord | None:
        """The record of the EP ``label`` (a result's ``ep``), where the environment has one."""
        return next((record for record in self.eps if record.label == label), None)

    def to_json(self, whole: bool = False) -> dict[str, Any]:
        """The JSON ``environment_from_json`` reads back: fields at their defaults left out, but, ``whole`` (as the
        run that made it found it), those that every run has (records.py's ``record_json``)."""
        return record_json(self, whole)


def recorded_text(text: str) -> str:
    """``text`` as results.json records it: valid Unicode, a byte of a path that is not UTF-8 (which Python keeps as a
    lone surrogate) written as ``\\xNN``, so that a run in such a folder keeps its results (a path that reads back
    differently is only shown, never opened again)."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that came from no file name: its code point, escaped
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def pci_id(value: int | None) -> str:
    """A PCI vendor or device id as lspci writes it ("10de"); "?" where the record has none."""
    return f"{value:04x}" if value is not None else "?"


def _same_bus(one: str, other: str) -> bool:
    """Two PCI bus ids naming one slot: nvidia-smi writes an 8-digit domain (00000000:00:06.0), onnxruntime 4."""
    domain, _, rest = one.lower().partition(":")
    other_domain, _, other_rest = other.lower().partition(":")
    return rest == other_rest and domain.lstrip("0") == other_domain.lstrip("0")


def _gpu_ran_on(gpu: Gpu, ids: str = "") -> str:
    where = ", ".join(part for part in (ids, f"bus {gpu.pci_bus_id}" if gpu.pci_bus_id else "") if part)
    return f"{gpu.name or '?'}" + (f" (PCI {where})" if where else "") + f", driver {gpu.driver_version or '?'}"


def _device_ran_on(device: EpDevice, gpus: Sequence[Gpu], cpu: str | None) -> str:
    """An OrtEpDevice, named by the GPU the OS lists on its PCI bus where one matches (the CPU by its model)."""
    ids = f"{pci_id(device.vendor_id)}:{pci_id(device.device_id)}"
    if device.type == "CPU" and cpu:
        return f"the CPU ({cpu})"
    bus = device.metadata.get("pci_bus_id")
    gpu = next((g for g in gpus if bus and g.pci_bus_id and _same_bus(bus, g.pci_bus_id)), None)
    if gpu is not None:
        return _gpu_ran_on(gpu, ids)
    return " ".join(word for word in (device.type or "?", device.vendor or "", f"(PCI {ids})") if word)


def _wine_ran_on(ep: EpRecord, chain: Chain, gpus: Sequence[Gpu]) -> str:
    """DirectML under Wine: the adapter it ran on, its driver (the Vulkan driver's, else that of the GPU the OS
    lists under the adapter's name), and the DLLs that executed it, not the Python package's onnxruntime."""
    adapter = chain.adapter or Adapter()
    name = adapter.description or "an adapter the runner did not describe"
    listed = next((gpu.driver_version for gpu in gpus if gpu.name and gpu.name == adapter.description), None)
    driver = f"driver {chain.vulkan_driver or listed}" if chain.vulkan_driver or listed else "driver unknown"
    vkd3d = chain.vkd3d_proton.version if chain.vkd3d_proton is not None else None
    directml = chain.directml_dll or (ep.directml.version if ep.directml is not None else None)
    through = f"{chain.transport or 'Wine'} ({chain.wine or 'Wine'}, vkd3d-proton {vkd3d or '?'})"
    if chain.transport == NATIVE_TRANSPORT:  # the runner on Windows: nothing between it and the driver
        through = "the runner natively (Windows' own D3D12)"
    return (
        f"{name} (PCI {pci_id(adapter.vendor_id)}:{pci_id(adapter.device_id)}), {driver}, through {through}; "
        f"DirectML.dll {directml or '?'}, onnxruntime.dll {chain.onnxruntime_dll or '?'} (onnxruntime "
        f"{chain.onnxruntime or '?'})"
    )


def directml_adapters(env: Environment) -> dict[str, tuple[str, ...]]:
    """Each adapter DirectML ran on in the runner, as the runner described it, with the labels of the EPs that ran
    on it: the device of a run whose GPU no OS tool lists (lavapipe under Wine)."""
    adapters: dict[str, tuple[str, ...]] = {}
    for ep in env.eps:
        adapter = ep.chain.adapter if ep.chain is not None else None
        if adapter is not None and adapter.description is not None:
            adapters[adapter.description] = (*adapters.get(adapter.description, ()), ep.label)
    return adapters


def on_the_cpu(ep: EpRecord) -> bool:
    """Whether ``ep`` executes on the CPU (the EP table's row says)."""
    return ep_facts(ep.name or "").executes_on is ExecutesOn.CPU


def ran_on(ep: EpRecord, env: Environment) -> str:
    """The device that executed ``ep`` (adapter, PCI vendor:device ids, driver) and the builds that did (DirectML,
    onnxruntime): what a driver team reads first."""
    if ep.chain is not None:
        return _wine_ran_on(ep, ep.chain, env.gpus)
    if ep.devices:
        device = "; ".join(_device_ran_on(d, env.gpus, env.cpu) for d in ep.devices)
    elif on_the_cpu(ep):
        device = f"the CPU ({env.cpu})" if env.cpu else "the CPU"
    elif env.gpus:
        device = "; ".join(_gpu_ran_on(gpu) for gpu in env.gpus)
    else:
        device = "no GPU found (nvidia-smi / Win32_VideoController)"
    builds = [f"DirectML {ep.directml.version or '?'}"] if ep.directml is not None else []
    builds.append(f"onnxruntime {env.onnxruntime or '?'}")
    # A plugin EP's own library version (WebGPU's); a built-in EP's is onnxruntime's and would say it twice.
    plugins = dict.fromkeys(d.ep_metadata.get("version") for d in ep.devices)
    builds += [f"{ep.name} {version}" for version in plugins if version and version != env.onnxruntime]
    return f"{device}; {', '.join(builds)}"


def environment_from_json(data: object, where: str = "environment") -> Environment:
    """results.json's environment as a record; RecordError (one line: where, what) for one that does not fit."""
    return read_record(Environment, data, where)
