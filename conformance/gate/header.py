"""The lines a report's header gives, from results.json's environment: what the run ran on (``identity_lines``: what
each EP ran on, the devices, the software, the EPs and their DirectML chains) and how it was made (``run_lines``: the
command, the feature level, its timing, the harness, its peak memory)."""

from __future__ import annotations

from conformance.environment import (
    NATIVE_TRANSPORT,
    Adapter,
    Chain,
    Environment,
    EpDevice,
    EpRecord,
    Gpu,
    PeakMemory,
    directml_adapters,
    on_the_cpu,
    pci_id,
    ran_on,
)


def ran_on_line_name(label: str) -> str:
    """What the line naming the device and builds that executed the EP ``label`` is called ("EP dml ran on")."""
    return f"{ep_line_name(label)} ran on"


def ran_on_lines(env: Environment) -> tuple[tuple[str, str], ...]:
    """One line per EP: what it ran on, and with which builds."""
    return tuple((ran_on_line_name(ep.label), ran_on(ep, env)) for ep in env.eps)


def chain_line(chain: Chain) -> str:
    """DirectML under Wine, read bottom-up as what ran on what: "DirectML 1.15.4 (onnxruntime.dll ...) on
    vkd3d-proton 3.0.1 on wine-8.0 on 'NVIDIA H100 80GB HBM3' (Vulkan driver ...)": Microsoft's code, then each layer
    of translation, never a Windows driver; the runner run natively on Windows has no layer between."""
    adapter = chain.adapter or Adapter()
    vkd3d = chain.vkd3d_proton.version if chain.vkd3d_proton is not None else None
    device = f"'{adapter.description if adapter.description is not None else '?'}'"
    if chain.vulkan_driver:
        device += f" (Vulkan driver {chain.vulkan_driver})"
    beneath = f"({chain.wheel or '?'}) on vkd3d-proton {vkd3d or '?'} on {chain.wine or 'Wine'}"
    if chain.transport == NATIVE_TRANSPORT:  # the runner on Windows: the installed package's DLLs, no translation
        beneath = "(the installed onnxruntime-directml's) in the runner natively"
    return (
        f"DirectML {chain.directml_dll or '?'} with onnxruntime.dll {chain.onnxruntime_dll or '?'}"
        f" {beneath} on {device}; D3D12 feature level {chain.d3d12_feature_level or '?'}, shader model "
        f"{chain.shader_model or '?'}, DML feature level {chain.dml_feature_level or '?'} (asked of the "
        f"device); transport {chain.transport}"
    )


def ep_line_name(label: str) -> str:
    """What the identity line of the EP ``label`` is called ("EP dml:directml=1.13.1")."""
    return f"EP {label}"


def chain_line_name(label: str) -> str:
    """What the identity line of the DirectML chain of the EP ``label`` is called."""
    return f"DirectML chain of {label}"


def _onnxruntime_line(env: Environment) -> str:
    """The onnxruntime Python package (and the distributions installed); under Wine DirectML ran its own DLL."""
    packages = ", ".join(f"{name} {version}" for name, version in env.onnxruntime_packages.items())
    line = f"{env.onnxruntime}, the Python package" + (f" ({packages})" if packages else "")
    if any(ep.chain is not None for ep in env.eps):
        line += "; DirectML under Wine ran the onnxruntime.dll its line names"
    return line


def identity_lines(env: Environment) -> tuple[tuple[str, str], ...]:
    """The report header: what each EP ran on first, then which devices, which software, which EPs."""
    lines = [*ran_on_lines(env), ("GPU", _gpus_line(env))]
    if env.cpu:
        lines.append(("CPU", env.cpu))
    lines.append(("onnxruntime", _onnxruntime_line(env)))
    for ep in env.eps:
        lines.append((ep_line_name(ep.label), _ep_line(ep)))
        if ep.chain is not None:
            lines.append((chain_line_name(ep.label), chain_line(ep.chain)))
    lines.append(("platform", f"{env.platform}, Python {env.python}, numpy {env.numpy}"))
    return tuple(lines)


def _duration(seconds: float) -> str:
    """ "17.7 s", "1 min 17.2 s", "2 h 3 min"."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{int(minutes)} min {rest:.1f} s"
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours} h {minutes} min"


def _feature_level(env: Environment) -> str:
    """--feature-level where given (every EP's target); else each EP's target (DirectML's installed level)."""
    if env.target_feature_level:
        return f"{env.target_feature_level} (--feature-level: every EP's target; cases needing more: NOT_SUPPORTED)"
    targets = [f"{ep.label}: {ep.target_feature_level or 'none'}" for ep in env.eps]
    return "per EP, " + ", ".join(targets) + " (none: every case runs)" if targets else "none given"


def _harness(env: Environment) -> str | None:
    harness = env.harness
    if harness is not None:
        words = [f"dml-conformance {harness.version or '?'}"]
        words.append(f"git commit {harness.git_commit}" if harness.git_commit else "not from a git checkout")
        if harness.cases_sha256:
            words.append(f"cases sha256 {harness.cases_sha256}")
        return ", ".join(words)
    return f"dml-conformance {env.dml_conformance}" if env.dml_conformance else None


def run_lines(env: Environment) -> tuple[tuple[str, str], ...]:
    """How the run was made: the command line, the feature level, when and for how long, which harness; each
    line only where results.json records it (older files lack the timing and the harness)."""
    lines = [("command", " ".join(env.command))]
    lines.append(("feature level", _feature_level(env)))
    started, duration = env.started_at, env.duration_s
    if started or duration is not None:
        took = f"took {_duration(duration)}" if duration is not None else ""
        lines.append(("started", ", ".join(part for part in (started or "", took) if part)))
    harness = _harness(env)
    if harness:
        lines.append(("harness", harness))
    if env.peak_memory is not None:
        lines.append(("peak memory", _peak_memory(env.peak_memory)))
    return tuple(lines)


def _peak_memory(peak: PeakMemory) -> str:
    """The run's peak memory, runners included, and its parts (each process's own peak, summed)."""
    runners = f", {peak.runners} DirectML runner(s) {peak.runners_mib} MiB" if peak.runners else ""
    return f"{peak.total_mib} MiB at most (the harness's processes {peak.harness_mib} MiB{runners})"


NO_GPU_LISTED = "none listed by nvidia-smi / Win32_VideoController"


def _gpus_line(env: Environment) -> str:
    """The GPUs the OS lists; without any, the adapter DirectML ran on (lavapipe under Wine is none the OS lists),
    or that every EP ran on the CPU: what ran, never "none" alone on a run that had a device."""
    if env.gpus:
        return "; ".join(_gpu_line(g) for g in env.gpus)
    adapters = directml_adapters(env)
    if adapters:
        named = "; ".join(f"{name} (EP {', '.join(labels)})" for name, labels in adapters.items())
        return f"{NO_GPU_LISTED}; DirectML ran on the adapter {named}"
    if env.eps and all(on_the_cpu(ep) for ep in env.eps):
        return f"{NO_GPU_LISTED}; every EP ran on the CPU ({', '.join(ep.label for ep in env.eps)})"
    return NO_GPU_LISTED


def _gpu_line(gpu: Gpu) -> str:
    details = [f"driver {gpu.driver_version}" if gpu.driver_version else ""]
    details += [f"{gpu.memory_total_mib} MiB" if gpu.memory_total_mib else ""]
    details += [f"PCI {gpu.pci_bus_id}" if gpu.pci_bus_id else ""]
    shown = ", ".join(d for d in details if d)
    return f"{gpu.name or '?'}" + (f" ({shown})" if shown else "")


def _device_text(device: EpDevice) -> str:
    """e.g. "GPU 10de:2330 (pci_bus_id=0000:00:06.0)": type, PCI vendor:device ids, metadata."""
    words = [device.type or "?", device.vendor or "", f"{pci_id(device.vendor_id)}:{pci_id(device.device_id)}"]
    metadata = ", ".join(f"{k}={v}" for k, v in device.metadata.items())
    return " ".join(w for w in words if w) + (f" ({metadata})" if metadata else "")


def _ep_line(ep: EpRecord) -> str:
    options = ",".join(f"{k}={v}" for k, v in ep.options.items())
    devices = [_device_text(d) for d in ep.devices]
    line = f"{ep.name}" + (f" ({options})" if options else "")
    if devices:
        line += f" on {'; '.join(devices)}"
    if ep.directml is not None:
        line += f"; DirectML {ep.directml.version or '?'} ({ep.directml.source})"
    if ep.target_feature_level:
        line += f"; target feature level {ep.target_feature_level}"
    return line
