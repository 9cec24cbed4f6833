"""What a run is run under (``RunOptions``), the options that set it, and ``run_options``, the one place that builds it
from them.

Its options are shared by ``dmlconf run`` and the pytest plugin (each lists those it takes, run/command_line.py);
the ones that bound how case files are read (``--max-elements`` and the other limits) by ``validate``, ``list`` and
``coverage`` too. ``--waivers`` is here as well: what a run's failures are gated against, in both front-ends.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conformance.cases.limits import (
    DEFAULT_LIMITS,
    DEFAULT_MAX_CASE_BYTES,
    DEFAULT_MAX_ELEMENTS,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_NODES,
    FileLimits,
)
from conformance.ep.providers import EpSpec, parse_ep, uses_directml
from conformance.ep_table import aliases_text, modes_text
from conformance.model import FeatureLevel
from conformance.run.command_line import Option, seconds, whole_number

if TYPE_CHECKING:  # this module is imported by the pytest plugin's import, which must stay cheap
    from conformance.cases.parse import Entry
    from conformance.ep.directml import DirectML

DEFAULT_TIMEOUT = 300.0  # seconds without progress: above the largest library case (about 10 s) by far
HARNESS_TIMEOUT_FACTOR = 4  # the harness's own work on a case (preparing, judging) may take this many timeouts
DEFAULT_PACK = 64


def feature_level(text: str) -> FeatureLevel | None:
    """--feature-level's check; an empty value is no target, as the option left out (``--feature-level "$FL"``)."""
    return FeatureLevel.parse(text) if text.strip() else None


EP = Option(
    ("--ep",),
    f"{aliases_text()}, a full EP name or a plugin library path, with options as ALIAS:key=value,...; "
    "repeatable (default: the best available)",
    metavar="EP",
    check=parse_ep,
    repeat=True,
)
FEATURE_LEVEL = Option(
    ("--feature-level",),
    "the target's DML feature level, e.g. 4_1: cases needing more are NOT_SUPPORTED "
    "(default: for dml, what the installed DirectML supports; for other EPs, none)",
    metavar="FL",
    check=feature_level,
)
MAX_ELEMENTS = Option(
    ("--max-elements",),
    f"refuse tensors over N elements before allocating (default {DEFAULT_MAX_ELEMENTS})",
    default=DEFAULT_MAX_ELEMENTS,
    metavar="N",
    check=whole_number(1),
)
MAX_CASE_BYTES = Option(
    ("--max-case-bytes",),
    "refuse a case whose estimated memory is over N bytes, before allocating (on each EP's path, the DirectML "
    f"runner's copies included; default {DEFAULT_MAX_CASE_BYTES}, 8 GiB, for a 16 GB machine; run -j: the cases "
    "that may run at once, together)",
    default=DEFAULT_MAX_CASE_BYTES,
    metavar="N",
    check=whole_number(1),
)
MAX_FILE_BYTES = Option(
    ("--max-file-bytes",),
    f"refuse case files over N bytes before reading them (default {DEFAULT_MAX_FILE_BYTES})",
    default=DEFAULT_MAX_FILE_BYTES,
    metavar="N",
    check=whole_number(1),
)
MAX_NODES = Option(
    ("--max-nodes",),
    f"refuse case files of over N YAML nodes, aliases counted each time used (default {DEFAULT_MAX_NODES})",
    default=DEFAULT_MAX_NODES,
    metavar="N",
    check=whole_number(1),
)
CASE_TIMEOUT = Option(
    ("--case-timeout",),
    f"a worker silent this long while the EP executes a case, or a DirectML runner this long without an answer, "
    f"is killed, the case a TIMEOUT; the harness's own work on a case may take {HARNESS_TIMEOUT_FACTOR} times as "
    f"long (default {DEFAULT_TIMEOUT:g}; 0: none)",
    default=DEFAULT_TIMEOUT,
    metavar="SECONDS",
    check=seconds(above_zero=False),
    deprecated=("--timeout",),
)
PACK = Option(
    ("--pack",),
    f"run small cases up to N to a session; any non-PASS is run again alone (default {DEFAULT_PACK}; "
    "1: one case per session)",
    default=DEFAULT_PACK,
    metavar="N",
    check=whole_number(1),
)
REPEAT = Option(
    ("--repeat",),
    "run each (case, EP) N times, each time in a new session; a case whose verdicts or outputs differ between "
    "the runs is FLAKY, which fails the run (default 1)",
    default=1,
    metavar="N",
    check=whole_number(1),
)
RERUN_FAILURES = Option(
    ("--rerun-failures",),
    "run each unexpected failure (each failure without --waivers) again up to N times before it fails the gate; "
    "one that passes on a re-run is FLAKY (default 0: none)",
    default=0,
    metavar="N",
    check=whole_number(0),
)
MODES = Option(
    ("--modes",),
    f"run each EP that has execution modes ({modes_text()}) in each of them too, one mode changed at a time; a case "
    "whose outputs differ bit for bit between two modes is a FAIL mode_mismatch",
    flag=True,
)
ARTIFACTS = Option(
    ("--artifacts",),
    "for each FAIL, save the ONNX model, inputs, expected and actual outputs (.onnx, .npy) under DIR",
    metavar="DIR",
)
WAIVERS = Option(
    ("--waivers",),
    "known failures (YAML): matched failures count as expected (under pytest: xfail), the exit code gates on the rest",
    metavar="FILE",
)
EXPECT_DEVICE = Option(
    ("--expect-device",),
    "stop before the first case, exit 2, when an EP that runs on a GPU reports an adapter whose name does not match "
    "GLOB (e.g. 'NVIDIA H100*'); the EP option expect_device=GLOB sets it for one EP",
    metavar="GLOB",
)
# How case files are read, for every command that reads them.
READING = (MAX_ELEMENTS, MAX_CASE_BYTES, MAX_FILE_BYTES, MAX_NODES)


def run_options(values: Mapping[str, Any], directml: Mapping[str, DirectML], threads: int | None = None) -> RunOptions:
    """``RunOptions`` from checked option values (``dmlconf run``'s or pytest's: an option a front-end lacks takes
    its default) and the installed DirectML, where an EP of the run is DirectML."""

    def get(option: Option) -> Any:
        return values.get(option.dest, option.default)

    builds: tuple[tuple[str, str], ...] = ()
    # Only an --artifacts README reads them (executed_by), and they ask the machine (nvidia-smi, onnx): not at every
    # run's start. artifacts.py loads NumPy, which a run without DirectML (pytest's configure) need not load yet.
    if directml and get(ARTIFACTS) is not None:
        from conformance.run.artifacts import directml_text

        builds = tuple((label, directml_text(found)) for label, found in directml.items())
    return RunOptions(
        feature_level=get(FEATURE_LEVEL),
        max_elements=get(MAX_ELEMENTS),
        directml_levels=tuple((label, found.feature_level) for label, found in directml.items() if found.feature_level),
        directml_builds=builds,
        artifacts=get(ARTIFACTS),
        pack=get(PACK),
        repeat=get(REPEAT),
        threads=threads,
        file_limits=FileLimits(get(MAX_FILE_BYTES), get(MAX_NODES), get(MAX_CASE_BYTES)),
        case_timeout=get(CASE_TIMEOUT) or None,
        expect_device=get(EXPECT_DEVICE),
    )


@dataclass(frozen=True)
class RunOptions:
    feature_level: FeatureLevel | None = None  # --feature-level: every EP's target; cases needing more: NOT_SUPPORTED
    max_elements: int = DEFAULT_MAX_ELEMENTS
    # Each DirectML EP's level by its --ep text: what its DirectML build answered (directml.detect, or the device
    # under Wine); pairs, so that the options stay hashable and cross to the workers as they are.
    directml_levels: tuple[tuple[str, FeatureLevel], ...] = ()
    # Each DirectML EP's build and device in words, by its --ep text: what an --artifacts README names.
    directml_builds: tuple[tuple[str, str], ...] = ()
    artifacts: str | None = None  # --artifacts: a folder per FAIL with the model, inputs and outputs (artifacts.py)
    pack: int = DEFAULT_PACK  # --pack: small cases run up to this many to a session (batch.py); 1: each case in its own
    repeat: int = 1  # --repeat: each executed case run this many times, FLAKY where the runs differ (batch.py)
    threads: int | None = None  # intra-op threads of a larger case's session; None: onnxruntime's (pytest -n)
    file_limits: FileLimits = DEFAULT_LIMITS  # what the case files were read under (for repro commands)
    case_timeout: float | None = None  # --case-timeout: the longest wait on the DirectML runner's answer; None: none
    expect_device: str | None = None  # --expect-device: the glob every GPU EP's adapter must match (run/expect.py)
    # Where each execution mode's outputs are kept for mode equality to name the first differing element (run/modes.py);
    # None: the run has no two modes of one EP.
    values_dir: str | None = None

    def session_threads(self, small: bool) -> int | None:
        """A session's intra-op threads: one for small cases (pack.small, alone or in a pack of them), which a thread
        pool cannot speed up and whose pool's spinning threads cost more to start and stop than the case itself (most
        of the CPU EP's per-case overhead, docs/performance.md); else ``threads``, None being onnxruntime's default of
        one per physical core."""
        return 1 if small else self.threads

    def executed_by(self, ep: EpSpec) -> str | None:
        """The DirectML build and device that ``ep`` runs on, in words (artifacts.directml_text); None for others."""
        return dict(self.directml_builds).get(ep.text)

    def target_level(self, ep: EpSpec) -> FeatureLevel | None:
        """--feature-level where given; else, for DirectML, the installed DirectML's level; else none (all run)."""
        if self.feature_level is not None:
            return self.feature_level
        return dict(self.directml_levels).get(ep.text) if uses_directml(ep) else None


def distinct_eps(eps: Iterable[EpSpec]) -> list[EpSpec]:
    """Each EP once, in order: ``--ep cpu --ep CPUExecutionProvider`` names one EP, so it runs once."""
    unique: dict[str, EpSpec] = {}
    for ep in eps:
        unique.setdefault(ep.text, ep)
    return list(unique.values())


def repro_command(entry: Entry, ep: EpSpec, options: RunOptions | None = None) -> str:
    """The ``dmlconf run`` command that runs this one (case, EP) again, under the same target, limits and repeats.

    ``-k`` is given the full case id, which selects that case alone even where it is a prefix of another id.
    """
    words = ["dmlconf", "run", entry.path, "-k", entry.id, "--ep", ep.text]
    if options is not None and options.feature_level is not None:
        words += ["--feature-level", str(options.feature_level)]
    if options is not None and options.max_elements != DEFAULT_MAX_ELEMENTS:
        words += ["--max-elements", str(options.max_elements)]
    if options is not None and options.file_limits.max_file_bytes != DEFAULT_LIMITS.max_file_bytes:
        words += ["--max-file-bytes", str(options.file_limits.max_file_bytes)]
    if options is not None and options.file_limits.max_nodes != DEFAULT_LIMITS.max_nodes:
        words += ["--max-nodes", str(options.file_limits.max_nodes)]
    if options is not None and options.file_limits.max_case_bytes != DEFAULT_LIMITS.max_case_bytes:
        words += ["--max-case-bytes", str(options.file_limits.max_case_bytes)]
    if options is not None and options.repeat > 1:  # a FLAKY case shows only when run again
        words += ["--repeat", str(options.repeat)]
    return shlex.join(words)


def cores_share(workers: int) -> int:
    """One of ``workers`` processes' share of the CPUs this process may run on (at least one): the intra-op threads
    of a worker's sessions for larger cases. N workers each with onnxruntime's default of a spinning thread per
    core would fight over the cores (the library with -j 8 on 16 cores: slower than -j 4)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, workers))
