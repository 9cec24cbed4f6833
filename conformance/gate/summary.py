"""Summary data built from results first; the Markdown and console reports only format it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.model import Status
from conformance.results import EXECUTED, FAILING, Result

STATUS_ORDER = tuple(Status)
# INVALID is a negative case rejected as it should be; the rest, worth a line each in a report, are NOTABLE.
OK = frozenset({Status.PASS, Status.INVALID})
NOTABLE = frozenset(Status) - OK
# The EP gave no verdict: it declined the case, or ONNX cannot express it. Reports count these by reason.
NO_VERDICT = frozenset({Status.NOT_SUPPORTED, Status.NOT_EXPRESSIBLE})


def severity(status: Status) -> tuple[int, int]:
    """A sort key, most severe first: FAIL, every other failing status, the other verdicts (QUALITY_WARNING), no
    verdict, then PASS and INVALID; each in the enum's order, so that a status added to the enum sorts without a
    change here."""
    if status is Status.FAIL:
        rank = 0
    elif status in FAILING:
        rank = 1
    elif status in NO_VERDICT:
        rank = 3
    elif status in OK:
        rank = 4
    else:
        rank = 2
    return rank, STATUS_ORDER.index(status)


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """ "1 known failure", "52 known failures"."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


@dataclass(frozen=True)
class Completeness:
    """How much of the planned run results.json holds: a run interrupted (Ctrl-C, workers that would not start)
    records ``interrupted`` and ``planned_results`` ((case, EP) pairs); one with --keep-going records the case files'
    ``problems`` (their cases never ran, so no count of them exists); ``skipped_files``, where a run records it, names
    files it did not read. An interrupted run, skipped case files' problems or an EP that executed nothing fail the
    run; ``skipped_files`` alone is only reported."""

    ran: int
    planned: int | None
    eps: int
    interrupted: bool
    problems: tuple[str, ...]
    idle_eps: tuple[str, ...]
    skipped_files: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not (self.interrupted or self.problems or self.idle_eps)

    @property
    def cases_run(self) -> str:
        """ "120 of 1881 cases run"; with several EPs a case counts once per EP, and the line says so."""
        if self.planned is None:
            return f"{plural(self.ran, 'case')} run"
        line = f"{self.ran} of {self.planned} cases run"
        if self.eps > 1 and self.planned % self.eps == 0:
            line += f" ({plural(self.planned // self.eps, 'case')}, each on {self.eps} EPs)"
        return line

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why the run is incomplete, one line each ("interrupted: 120 of 1881 cases run"); empty when complete."""
        reasons = []
        if self.interrupted:
            reasons.append(f"interrupted: {self.cases_run}")
        if self.problems:
            counted = f"{self.cases_run}; " if not self.interrupted else ""
            skipped = f"case files skipped for {len(self.problems)} problem(s) (--keep-going)"
            reasons.append(f"{counted}{skipped}: their cases did not run")
        reasons += [f"EP {ep} executed none of its cases" for ep in self.idle_eps]
        return tuple(reasons)

    @property
    def skipped_line(self) -> str:
        """ "files skipped: 2 (a.yaml, b.yaml)", where the run recorded files it skipped; else empty."""
        if not self.skipped_files:
            return ""
        return f"files skipped: {len(self.skipped_files)} ({', '.join(self.skipped_files)})"


def completeness(environment: Mapping[str, Any], ran: int, idle_eps: Sequence[str], eps: int) -> Completeness:
    """``ran`` results of ``eps`` EPs (those with results: results.json's own list where it has one)."""
    planned = environment.get("planned_results")
    skipped = environment.get("skipped_files")
    files = tuple(_skipped_file(entry) for entry in skipped) if isinstance(skipped, list | tuple) else ()
    return Completeness(
        ran=ran,
        planned=planned if isinstance(planned, int) and not isinstance(planned, bool) else None,
        eps=len(environment.get("eps") or []) or eps,
        interrupted=bool(environment.get("interrupted")),
        problems=tuple(str(problem) for problem in environment.get("problems") or ()),
        idle_eps=tuple(idle_eps),
        skipped_files=files,
    )


def _skipped_file(entry: Any) -> str:
    """One of results.json's ``skipped_files`` as a reader reads it: "cases/b.yaml: 2 problems" from the
    ``{path, problems}`` record a run writes (run/identity.py), any other entry as it is."""
    if isinstance(entry, Mapping) and entry.get("path"):
        problems = entry.get("problems")
        if isinstance(problems, int) and not isinstance(problems, bool):
            return f"{entry['path']}: {plural(problems, 'problem')}"
        return str(entry["path"])
    return str(entry)


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
    # (operator, data type, EP, counts): the report's matrix, a row per operator and data type
    by_data_type: tuple[tuple[str, str, str, Mapping[Status, int]], ...] = ()

    @property
    def run(self) -> tuple[tuple[str, str], ...]:
        """(what, which): the command line, the feature level, when, the harness (run_lines)."""
        return run_lines(self.environment)

    @property
    def completeness(self) -> Completeness:
        return completeness(self.environment, sum(self.totals.values()), self.idle_eps, len(self.eps))

    @property
    def failed(self) -> bool:
        """A FAIL or ERROR, an EP that ran nothing (a gate must not pass on an EP that never started), or a run
        that was interrupted (results.json says so)."""
        return any(self.totals.get(s, 0) for s in FAILING) or self.incomplete

    @property
    def incomplete(self) -> bool:
        """What fails a run whatever the waivers say: an EP that never started, an interrupted run, or case files
        skipped for their problems (--keep-going)."""
        return not self.completeness.complete


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


def ep_line_name(label: str) -> str:
    """What the identity line of the EP ``label`` is called ("EP dml:directml=1.13.1")."""
    return f"EP {label}"


def chain_line_name(label: str) -> str:
    """What the identity line of the DirectML chain of the EP ``label`` is called."""
    return f"DirectML chain of {label}"


def identity_lines(env: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The report header: which device, which software, which EPs, which command."""
    gpus = env.get("gpus") or []
    packages = ", ".join(f"{name} {version}" for name, version in (env.get("onnxruntime_packages") or {}).items())
    lines = [
        ("GPU", "; ".join(_gpu_line(g) for g in gpus) if gpus else "none found (nvidia-smi / Win32_VideoController)")
    ]
    if env.get("cpu"):
        lines.append(("CPU", str(env["cpu"])))
    lines.append(("onnxruntime", f"{env.get('onnxruntime')} ({packages})" if packages else str(env.get("onnxruntime"))))
    for ep in env.get("eps") or []:
        lines.append((ep_line_name(str(ep.get("label"))), _ep_line(ep)))
        chain = (ep.get("directml") or {}).get("chain")
        if chain:
            lines.append((chain_line_name(str(ep.get("label"))), chain_line(chain)))
    lines.append(("platform", f"{env.get('platform')}, Python {env.get('python')}, numpy {env.get('numpy')}"))
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


def _feature_level(env: Mapping[str, Any]) -> str:
    """--feature-level where given (every EP's target); else each EP's target (DirectML's installed level)."""
    if env.get("target_feature_level"):
        return f"{env['target_feature_level']} (--feature-level: every EP's target; cases needing more: NOT_SUPPORTED)"
    targets = [f"{ep.get('label')}: {ep.get('target_feature_level') or 'none'}" for ep in env.get("eps") or []]
    return "per EP, " + ", ".join(targets) + " (none: every case runs)" if targets else "none given"


def _harness(env: Mapping[str, Any]) -> str | None:
    harness = env.get("harness")
    if isinstance(harness, Mapping):
        commit = harness.get("git_commit")
        words = [f"dml-conformance {harness.get('version') or '?'}"]
        words.append(f"git commit {commit}" if commit else "not from a git checkout")
        if harness.get("cases_sha256"):
            words.append(f"cases sha256 {harness['cases_sha256']}")
        return ", ".join(words)
    return f"dml-conformance {env['dml_conformance']}" if env.get("dml_conformance") else None


def run_lines(env: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """How the run was made: the command line, the feature level, when and for how long, which harness; each
    line only where results.json records it (older files lack the timing and the harness)."""
    lines = [("command", " ".join(str(word) for word in env.get("command") or []))]
    lines.append(("feature level", _feature_level(env)))
    started, duration = env.get("started_at"), env.get("duration_s")
    if started or isinstance(duration, int | float):
        took = f"took {_duration(float(duration))}" if isinstance(duration, int | float) else ""
        lines.append(("started", ", ".join(part for part in (str(started or ""), took) if part)))
    harness = _harness(env)
    if harness:
        lines.append(("harness", harness))
    return tuple(lines)


def data_type_counts(results: Sequence[Result]) -> tuple[tuple[str, str, str, Mapping[Status, int]], ...]:
    cells: dict[tuple[str, str, str], Counter[Status]] = {}
    for r in results:
        cells.setdefault((r.operator, r.data_type or "—", r.ep), Counter())[r.status] += 1
    return tuple((op, data_type, ep, dict(counts)) for (op, data_type, ep), counts in sorted(cells.items()))


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
        by_data_type=data_type_counts(results),
    )
