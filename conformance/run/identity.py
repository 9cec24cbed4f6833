"""The identity of what a run tested, for results.json's ``environment``: the device (GPU name and driver, the CPU),
the software (onnxruntime and EP packages, DirectML and its feature level), the platform, the exact command line,
the harness (its version, the git commit of its checkout, a hash of the case files the run read), when the run
started and how long it took, what it did not run (interrupted, or case files skipped by --keep-going), and with
--shard which shard of which plan it is.
A report without the device is not a conformance report.

``executing`` is what each EP of a run executes on, in named parts (for DirectML: DirectML.dll and onnxruntime.dll
with their hashes, the runner's hash, the adapter and its driver, the chain beneath), for the resume identity
(survive/stream.py): a resumed run must execute on what the killed one did.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from conformance.cases.parse import display_path
from conformance.cases.suite import ShardOf
from conformance.environment import (
    NATIVE_TRANSPORT,
    DirectMLRecord,
    Environment,
    EpDevice,
    EpRecord,
    Gpu,
    Harness,
    ShardRecord,
    SkippedFile,
    recorded_text,
)
from conformance.ep import device
from conformance.ep.directml import DirectML, capi_folder, package_version
from conformance.ep.installed import ONNXRUNTIME_PACKAGES, PLUGIN_PACKAGES
from conformance.ep.providers import EpSpec, facts, is_plugin, plugin_devices, uses_directml
from conformance.ep_table import ExecutesOn
from conformance.problems import Problem
from conformance.records import Where, read_record
from conformance.run.options import RunOptions

log = logging.getLogger(__name__)
T = TypeVar("T")

PACKAGES = (*ONNXRUNTIME_PACKAGES, *PLUGIN_PACKAGES)  # the distributions whose versions a run records
CHECKOUT = Path(__file__).resolve().parents[2]  # where the package is imported from: a git checkout's root, or not
_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")  # SHA-1, or SHA-256 in a repository that uses it
_SYMBOLIC_DEPTH = 5  # symbolic refs followed before giving up (git itself stops at 5 too)


@dataclass(frozen=True)
class RunFacts:
    """What the CLI knows of a run beyond its EPs and options: when it started (UTC) and how long it took (seconds,
    until its results were final), the case files its cases came from (``cases_sha256``, hashed when they were
    selected), and the files --keep-going skipped, with their number of problems each."""

    started: datetime
    seconds: float
    cases_sha256: str
    case_files: int
    skipped_files: tuple[tuple[str, int], ...] = field(default=())
    shard: ShardOf | None = None  # --shard: which part of which selection (cases/suite.py)


def cases_sha256(paths: Iterable[str]) -> tuple[str, int]:
    """(The hash of a run's case files, how many): SHA-256 over the sorted hex SHA-256 digests of each file's bytes
    (one per line), each real file once. Neither the order the files were named in nor the path they were named by
    changes it, so two runs of the same case files have the same hash wherever their checkouts lie; the files' names
    are in the results' case ids."""
    digests = set()
    for path in {os.path.realpath(path): path for path in dict.fromkeys(paths)}:  # each name resolved once
        with open(path, "rb") as file:
            digests.add(hashlib.sha256(file.read()).hexdigest())
    text = "".join(f"{digest}\n" for digest in sorted(digests))
    return hashlib.sha256(text.encode("ascii")).hexdigest(), len(digests)


def skipped_files(invalid_files: Sequence[str], problems: Sequence[Problem]) -> tuple[tuple[str, int], ...]:
    """Each case file --keep-going skipped (as ids name it), with its number of problems: how many of its cases
    would have run is not known, since a file with problems may not even have been read."""
    counts = Counter(display_path(problem.pos.path) for problem in problems)
    return tuple((path, counts[display_path(path)]) for path in dict.fromkeys(invalid_files))


def _git_dir(root: Path) -> tuple[Path, Path] | None:
    """(The checkout's git directory, the repository's common directory), from ``root/.git``: a directory, or a file
    ``gitdir: PATH`` (a linked worktree, a submodule), whose ``commondir`` names the shared one."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git, dot_git
    if not dot_git.is_file():
        return None
    text = dot_git.read_text(encoding="utf-8").strip()
    if not text.startswith("gitdir:"):
        return None
    git_dir = (root / text.removeprefix("gitdir:").strip()).resolve()
    common = git_dir / "commondir"
    return git_dir, (git_dir / common.read_text(encoding="utf-8").strip()).resolve() if common.is_file() else git_dir


def _ref(git_dir: Path, common: Path, name: str) -> str | None:
    """A ref's content (a commit, or ``ref: ...``): its loose file (per worktree, then shared), else packed-refs."""
    for folder in (git_dir, common):
        loose = folder / name
        if loose.is_file():
            return loose.read_text(encoding="utf-8").strip()
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            commit, _, ref = line.partition(" ")
            if ref.strip() == name:
                return commit
    return None


def git_commit(root: Path = CHECKOUT) -> str | None:
    """HEAD's commit of the git checkout at ``root``, read from its files without running git; None where ``root``
    is not a checkout (an installed package), HEAD names a branch without a commit, or the repository keeps its refs
    in a form this does not read (reftable)."""
    try:
        found = _git_dir(root)
        if found is None:
            return None
        git_dir, common = found
        content: str | None = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
        for _ in range(_SYMBOLIC_DEPTH):
            if content is None or not content.startswith("ref:"):
                break
            content = _ref(git_dir, common, content.removeprefix("ref:").strip())
    except (OSError, UnicodeDecodeError) as error:
        log.debug("no git commit for %s: %s", root, error)
        return None
    return content if content is not None and _SHA.fullmatch(content) else None


def harness(facts: RunFacts) -> Harness:
    """The harness that ran: its version, its checkout's commit (None when installed), the case files' hash."""
    return Harness(package_version("dml-conformance"), git_commit(), facts.cases_sha256, facts.case_files)


def iso_utc(moment: datetime) -> str:
    """``2026-01-31T12:00:00Z``: ISO 8601, in UTC, to the second."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ep_name_and_devices(ep: EpSpec) -> tuple[str, list[dict[str, Any]]]:
    """The EP's onnxruntime name (a plugin library's is learnt by registering it) and its devices."""
    name = ep.name
    if is_plugin(ep):
        try:
            name = plugin_devices(ep)[0]
        except Exception as error:  # missing package or a library that does not load: the record says so
            log.debug("plugin EP %s not loaded: %s", ep.alias, error)
    return name, device.ep_devices(name)


def _found(cls: type[T], found: Mapping[str, Any], where: Where) -> T:
    """What ep/ found (a device, a GPU, DirectML), as plain JSON, taken into its record as results.json's reader
    takes it: checked once, here."""
    return read_record(cls, found, where)


def ep_record(ep: EpSpec, options: RunOptions, directml: Mapping[str, DirectML], where: Where) -> EpRecord:
    """One EP of the run: how it was named, its options, the devices onnxruntime offered it, its target level."""
    name, devices = _ep_name_and_devices(ep)
    target = options.target_level(ep)
    found = directml.get(ep.text) if uses_directml(ep) else None
    return EpRecord(
        label=ep.text,
        alias=ep.alias,
        name=name,
        options=dict(ep.options),
        library=ep.library,
        devices=tuple(_found(EpDevice, d, ((where, "devices"), i)) for i, d in enumerate(devices)),
        target_feature_level=str(target) if target else None,
        directml=_found(DirectMLRecord, found.to_json(), (where, "directml")) if found is not None else None,
    )


def shard_record(shard: ShardOf, eps: Sequence[EpSpec]) -> ShardRecord:
    """results.json's ``shard``: its index and count, and the plan every shard of the split shares (the (case, EP)
    pairs of the selection before it was split, and their hash over each pair's case id and EP text, in run order),
    so that ``dmlconf merge`` can tell a complete set of shards from a part of one."""
    return ShardRecord(shard.index, shard.count, len(shard.of) * len(eps), plan_sha256(shard.of, eps))


def plan_sha256(case_ids: Iterable[str], eps: Sequence[EpSpec]) -> str:
    """The hash of a plan, its (case id, EP text) pairs in run order: what a shard's plan and a resumed run's pairs
    (survive/stream.py) are recognised by, one algorithm for both."""
    pairs = hashlib.sha256()
    for case_id in case_ids:
        for ep in eps:
            pairs.update(f"{case_id}\t{ep.text}\n".encode())
    return pairs.hexdigest()


def environment(
    eps: Sequence[EpSpec],
    options: RunOptions,
    argv: Sequence[str],
    directml: Mapping[str, DirectML] | None = None,
    problems: Sequence[Problem] = (),
    facts: RunFacts | None = None,
) -> Environment:
    """What was tested with what: GPUs and CPU, versions, EPs, platform, the exact command line and the harness;
    when the run started and for how long (``facts``); what it skipped (``problems``, ``facts``: the files
    --keep-going skipped, each with its number of problems, and the problems themselves: their files' cases were not
    run, and every report of the run says so)."""
    import numpy

    runtime = device.runtime()
    return Environment(
        command=tuple(recorded_text(arg) for arg in argv),
        cwd=recorded_text(os.getcwd()),
        python_executable=sys.executable,
        dml_conformance=package_version("dml-conformance"),
        gpus=tuple(_found(Gpu, gpu, (("environment", "gpus"), i)) for i, gpu in enumerate(device.gpus())),
        # nvidia-smi lists every GPU of the machine; this says which ones the run's CUDA EP could see (a shard per GPU)
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
        onnxruntime=runtime["onnxruntime"],
        onnxruntime_packages={p: v for p in PACKAGES if (v := package_version(p)) is not None},
        available_providers=tuple(runtime["available_providers"]),
        onnx=runtime["onnx"],
        numpy=numpy.__version__,
        python=sys.version.split()[0],
        platform=platform.platform(),
        machine=platform.machine(),
        cpu=device.cpu_model(),
        eps=tuple(ep_record(ep, options, directml or {}, (("environment", "eps"), i)) for i, ep in enumerate(eps)),
        target_feature_level=str(options.feature_level) if options.feature_level else None,
        pack=options.pack,
        started_at=iso_utc(facts.started) if facts is not None else None,
        duration_s=round(facts.seconds, 3) if facts is not None else None,
        harness=harness(facts) if facts is not None else None,
        skipped_files=tuple(SkippedFile(path, count) for path, count in facts.skipped_files) if facts else (),
        shard=shard_record(facts.shard, eps) if facts is not None and facts.shard is not None else None,
        problems=tuple(str(p) for p in problems),
        # where --artifacts kept each FAIL's files (artifacts.py names them), so that report.html links to them
        artifacts=recorded_text(os.path.abspath(options.artifacts)) if options.artifacts else None,
        expect_device=options.expect_device,
    )


def _sha256_of(path: str) -> str | None:
    """The file's SHA-256 (hex); None where it cannot be read."""
    try:
        with open(path, "rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest()
    except OSError:
        return None


def _file_part(version: str | None, sha256: str | None) -> str:
    """ "1.15.4.0 (sha256 <hex>)": a DLL as its version and its bytes say it."""
    text = version or "version unknown"
    return f"{text} (sha256 {sha256})" if sha256 else text


def _wine_parts(chain: Mapping[str, Any]) -> dict[str, str]:
    """What DirectML executes on in the runner, from its chain record (wine/device.py): its two DLLs, the runner
    itself (the program that calls them), the adapter, and under Wine the Vulkan driver beneath it, Wine and
    vkd3d-proton (natively on Windows, the transport alone)."""
    hashes = chain.get("dll_sha256") or {}
    runner = (chain.get("runner") or {}).get("sha256")
    adapter = chain.get("adapter") or {}
    vkd3d = chain.get("vkd3d_proton") or {}
    vkd3d_hashes = ", ".join(f"{name} {digest}" for name, digest in sorted((vkd3d.get("sha256") or {}).items()))
    parts = {
        "DirectML.dll": _file_part(chain.get("directml_dll"), hashes.get("DirectML.dll")),
        "onnxruntime.dll": _file_part(chain.get("onnxruntime_dll"), hashes.get("onnxruntime.dll")),
        "runner": f"dmlrunner.exe (sha256 {runner})" if runner else "dmlrunner.exe (not hashed)",
        "adapter": (
            f"{adapter.get('description') or '?'} (vendor 0x{int(adapter.get('vendor_id') or 0):04x}, "
            f"device 0x{int(adapter.get('device_id') or 0):04x})"
            if adapter
            else "none"
        ),
    }
    if chain.get("transport") == NATIVE_TRANSPORT:  # the runner on Windows: nothing translates beneath it
        return parts | {"transport": NATIVE_TRANSPORT}
    return parts | {
        "driver": str(chain.get("vulkan_driver") or "unknown"),
        "Wine": str(chain.get("wine") or "unknown"),
        "vkd3d-proton": f"{vkd3d.get('version') or 'version unknown'}" + (f" ({vkd3d_hashes})" if vkd3d_hashes else ""),
    }


def _native_directml_parts(found: DirectML) -> dict[str, str]:
    """DirectML in this process (Windows): the DLLs beside onnxruntime's module (directml.capi_folder, where
    DirectML's own version is read)."""
    capi = capi_folder()
    parts = {"DirectML": f"{found.version or 'version unknown'} ({found.source})"}
    for name in ("DirectML.dll", "onnxruntime.dll"):
        digest = _sha256_of(os.path.join(capi, name))
        if digest is not None:
            parts[name] = f"sha256 {digest}"
    return parts


def _gpus_part(gpus: Sequence[Mapping[str, str]]) -> str:
    """The machine's GPUs as the OS names them, each with its driver."""
    named = [f"{gpu.get('name') or '?'} (driver {gpu.get('driver_version') or '?'})" for gpu in gpus]
    return "; ".join(named) if named else "none found"


def executing(eps: Sequence[EpSpec], directml: Mapping[str, DirectML]) -> dict[str, dict[str, str]]:
    """What each EP (by its ``--ep`` text) executes on, as named parts whose texts say it: for DirectML its DLLs'
    versions and hashes, the adapter, its driver and the chain beneath; for the CPU EP the CPU; for another EP the
    machine's GPUs and their drivers, and a plugin library's hash. The onnxruntime packages are the run's
    ``software``, shared by every EP."""
    found: dict[str, dict[str, str]] = {}
    gpus: list[dict[str, str]] | None = None
    for ep in eps:
        dml = directml.get(ep.text) if uses_directml(ep) else None
        chain = dml.identity if dml is not None else None
        parts: dict[str, str] = {}
        if chain is not None:
            parts = _wine_parts(chain)
        elif dml is not None:
            parts = _native_directml_parts(dml)
        if facts(ep).executes_on is ExecutesOn.CPU:
            parts["CPU"] = device.cpu_model() or "unknown"
        elif chain is None or chain.get("transport") == NATIVE_TRANSPORT:  # the OS's GPUs name the driver
            # (under Wine the adapter is DirectML's own: the OS's GPU list says nothing of it)
            gpus = device.gpus() if gpus is None else gpus  # asked once, however many EPs
            parts["GPUs"] = _gpus_part(gpus)
        if ep.library:
            digest = _sha256_of(ep.library)
            parts["library"] = f"{ep.library} (sha256 {digest})" if digest else ep.library
        found[ep.text] = parts
    return found
