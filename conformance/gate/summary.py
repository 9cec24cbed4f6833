"""Summary data built from results first; the Markdown and console reports only format it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.model import Status
from conformance.results import FAILING, Result

STATUS_ORDER = tuple(Status)
# Non-PASS statuses worth a line each in a report; INVALID is a negative case rejected as it should be.
NOTABLE = frozenset(Status) - {Status.PASS, Status.INVALID}


@dataclass(frozen=True)
class Placement:
    """How many results ran (PASS, FAIL, FLAKY, QUALITY_WARNING) with every node recorded on their own EP, and which did
    not: a verdict without onnxruntime's placement record on the EP proves nothing."""

    proven: int
    unproven: tuple[str, ...]  # "case [ep]: why"

    @property
    def line(self) -> str:
        if not self.unproven and not self.proven:
            return "no executed results"
        if not self.unproven:
            return f"{self.proven} executed result(s), every node recorded on its own EP by onnxruntime"
        return f"{len(self.unproven)} executed result(s) WITHOUT placement proof; {self.proven} proven"


@dataclass(frozen=True)
class Summary:
    environment: Mapping[str, Any]
    totals: Mapping[Status, int]
    eps: tuple[str, ...]
    by_operator: tuple[tuple[str, str, Mapping[Status, int]], ...]  # (operator, ep, counts)
    matrix: tuple[tuple[str, tuple[Status | None, ...]], ...]  # (case, status per ep), only with several EPs
    notable: tuple[Result, ...]
    identity: tuple[tuple[str, str], ...] = ()  # (what, which): device, software, EPs; from the environment
    dml_operators: tuple[tuple[str, str, int], ...] = ()  # (operator, DML operator(s) reached, cases)
    placement: Placement | None = None
    idle_eps: tuple[str, ...] = ()  # EPs that never started a session and so executed nothing
    packed_differences: tuple[str, ...] = ()  # "case [ep]: FAIL when packed ..., PASS alone: ..." (Result.packed)

    @property
    def failed(self) -> bool:
        """A FAIL or ERROR, an EP that ran nothing (a gate must not pass on an EP that never started), or a run
        that was interrupted (results.json says so)."""
        return any(self.totals.get(s, 0) for s in FAILING) or self.incomplete

    @property
    def incomplete(self) -> bool:
        """What fails a run whatever the waivers say: an EP that never started, an interrupted run, or case files
        skipped for their problems (--keep-going)."""
        return bool(self.idle_eps) or bool(self.environment.get("interrupted")) or bool(self.skipped_files)

    @property
    def skipped_files(self) -> tuple[str, ...]:
        """The one-line problems of the case files a --keep-going run skipped (results.json's environment)."""
        return tuple(str(problem) for problem in self.environment.get("problems") or ())


EXECUTED = frozenset({Status.PASS, Status.FAIL, Status.FLAKY, Status.QUALITY_WARNING})


def placement_proof(environment: Mapping[str, Any], results: Sequence[Result]) -> Placement:
    names = {str(ep.get("label")): str(ep.get("name")) for ep in environment.get("eps", [])}
    proven, unproven = 0, []
    for r in results:
        if r.status not in EXECUTED:
            continue
        where = set(r.placement.values())
        if not where or where != {names.get(r.ep)}:
            unproven.append(f"{r.case} [{r.ep}]: placed on {', '.join(sorted(where)) or 'nothing recorded'}")
        else:
            proven += 1
    return Placement(proven, tuple(unproven))


def _gpu_line(gpu: Mapping[str, Any]) -> str:
    details = [f"driver {gpu['driver_version']}" if gpu.get("driver_version") else ""]
    details += [f"{gpu['memory_total_mib']} MiB" if gpu.get("memory_total_mib") else ""]
    details += [f"PCI {gpu['pci_bus_id']}" if gpu.get("pci_bus_id") else ""]
    shown = ", ".join(d for d in details if d)
    return f"{gpu.get('name') or '?'}" + (f" ({shown})" if shown else "")


def _device_text(device: Mapping[str, Any]) -> str:
    """e.g. "GPU 10de:2330 (pci_bus_id=0000:00:06.0)": type, PCI vendor:device ids, metadata."""
    words = [str(device.get("type", "?")), str(device.get("vendor") or "")]
    words.append(f"{int(device.get('vendor_id', 0)):04x}:{int(device.get('device_id', 0)):04x}")
    metadata = ", ".join(f"{k}={v}" for k, v in (device.get("metadata") or {}).items())
    return " ".join(w for w in words if w) + (f" ({metadata})" if metadata else "")


def _ep_line(ep: Mapping[str, Any]) -> str:
    options = ",".join(f"{k}={v}" for k, v in (ep.get("options") or {}).items())
    devices = [_device_text(d) for d in ep.get("devices") or []]
    line = f"{ep.get('name')}" + (f" ({options})" if options else "")
    if devices:
        line += f" on {'; '.join(devices)}"
    if ep.get("directml"):
        dml = ep["directml"]
        line += f"; DirectML {dml.get('version') or '?'} ({dml.get('source')})"
    if ep.get("target_feature_level"):
        line += f"; target feature level {ep['target_feature_level']}"
    return line


def chain_line(chain: Mapping[str, Any]) -> str:
    """DirectML under Wine, read bottom-up as what ran on what: "DirectML 1.15.4 (onnxruntime.dll ...) on
    vkd3d-proton 3.0.1 on wine-8.0 on 'NVIDIA H100 80GB HBM3' (Vulkan driver ...)": Microsoft's code, then each layer
    of translation, never a Windows driver."""
    adapter = chain.get("adapter") or {}
    vkd3d = chain.get("vkd3d_proton") or {}
    device = f"'{adapter.get('description', '?')}'"
    if chain.get("vulkan_driver"):
        device += f" (Vulkan driver {chain['vulkan_driver']})"
    return (
        f"DirectML {chain.get('directml_dll') or '?'} with onnxruntime.dll {chain.get('onnxruntime_dll') or '?'}"
        f" ({chain.get('wheel') or '?'}) on vkd3d-proton {vkd3d.get('version') or '?'} on {chain.get('wine') or 'Wine'}"
        f" on {device}; D3D12 feature level {chain.get('d3d12_feature_level') or '?'}, shader model "
        f"{chain.get('shader_model') or '?'}, DML feature level {chain.get('dml_feature_level') or '?'} (asked of the "
        f"device); transport {chain.get('transport')}"
    )


def identity_lines(env: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The report header: which device, which software, which EPs, which command."""
    gpus = env.get("gpus") or []
    packages = ", ".join(f"{name} {version}" for name, version in (env.get("onnxruntime_packages") or {}).items())
    lines = [
        ("GPU", "; ".join(_gpu_line(g) for g in gpus) if gpus else "none found (nvidia-smi / Win32_VideoController)")
    ]
    lines.append(("onnxruntime", f"{env.get('onnxruntime')} ({packages})" if packages else str(env.get("onnxruntime"))))
    for ep in env.get("eps") or []:
        lines.append((f"EP {ep.get('label')}", _ep_line(ep)))
        chain = (ep.get("directml") or {}).get("chain")
        if chain:
            lines.append((f"DirectML chain of {ep.get('label')}", chain_line(chain)))
    lines.append(("platform", f"{env.get('platform')}, Python {env.get('python')}, numpy {env.get('numpy')}"))
    return tuple(lines)


def idle(results: Sequence[Result]) -> tuple[str, ...]:
    """EPs that could not create a session ("ep_not_started") and executed no case at all."""
    not_started = dict.fromkeys(r.ep for r in results if r.failure_kind == "ep_not_started")
    executed = {r.ep for r in results if r.status in EXECUTED}
    return tuple(ep for ep in not_started if ep not in executed)


def dml_operator_counts(results: Sequence[Result]) -> tuple[tuple[str, str, int], ...]:
    """How many cases reach each DML operator on DirectML (each case once, whatever the EPs)."""
    reached = {r.case: (r.operator, r.dml_operator) for r in results if r.dml_operator}
    return tuple((op, dml, n) for (op, dml), n in sorted(Counter(reached.values()).items()))


def summarize(environment: Mapping[str, Any], results: Sequence[Result]) -> Summary:
    eps = tuple(dict.fromkeys(r.ep for r in results))
    grouped: dict[tuple[str, str], Counter[Status]] = {}
    for r in results:
        grouped.setdefault((r.operator, r.ep), Counter())[r.status] += 1
    by_operator = tuple((op, ep, dict(c)) for (op, ep), c in sorted(grouped.items()))
    matrix: tuple[tuple[str, tuple[Status | None, ...]], ...] = ()
    if len(eps) > 1:
        statuses: dict[str, dict[str, Status]] = {}
        for r in results:
            statuses.setdefault(r.case, {})[r.ep] = r.status
        matrix = tuple((case, tuple(row.get(ep) for ep in eps)) for case, row in statuses.items())
    return Summary(
        environment=environment,
        totals=dict(Counter(r.status for r in results)),
        eps=eps,
        by_operator=by_operator,
        matrix=matrix,
        notable=tuple(r for r in results if r.status in NOTABLE),
        identity=identity_lines(environment),
        dml_operators=dml_operator_counts(results),
        idle_eps=idle(results),
        placement=placement_proof(environment, results),
        packed_differences=tuple(f"{r.case} [{r.ep}]: {r.packed}" for r in results if r.packed),
    )
