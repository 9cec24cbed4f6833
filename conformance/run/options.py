"""A run's options: ``RunOptions`` (what every (case, EP) of a run is run under), the command that reproduces one
(case, EP), and the EPs of a run, each once."""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from conformance.cases.load import DEFAULT_LIMITS, FileLimits
from conformance.cases.parse import Entry
from conformance.cases.validate import DEFAULT_MAX_ELEMENTS
from conformance.ep.providers import DML, EpSpec
from conformance.model import FeatureLevel


@dataclass(frozen=True)
class RunOptions:
    feature_level: FeatureLevel | None = None  # --feature-level: every EP's target; cases needing more: NOT_SUPPORTED
    max_elements: int = DEFAULT_MAX_ELEMENTS
    directml_level: FeatureLevel | None = None  # what the installed DirectML supports (dml.detect), for the dml EP
    artifacts: str | None = None  # --artifacts: a folder per FAIL with the model, inputs and outputs (artifacts.py)
    pack: int = 64  # --pack: small cases run up to this many to a session (batch.py); 1: each case in its own
    threads: int | None = None  # intra-op threads of a larger case's session; None: onnxruntime's (pytest -n)
    file_limits: FileLimits = DEFAULT_LIMITS  # what the case files were read under (for repro commands)

    def session_threads(self, small: bool) -> int | None:
        """A session's intra-op threads: one for small cases (pack.packable, alone or packed), which a thread pool
        cannot speed up and whose pool's spinning threads cost more to start and stop than the case itself (most of
        the CPU EP's per-case overhead, docs/performance.md); else ``threads``, None being onnxruntime's default of
        one per physical core."""
        return 1 if small else self.threads

    def target_level(self, ep: EpSpec) -> FeatureLevel | None:
        """--feature-level where given; else, for DirectML, the installed DirectML's level; else none (all run)."""
        if self.feature_level is not None:
            return self.feature_level
        return self.directml_level if ep.name == DML else None


def distinct_eps(eps: Iterable[EpSpec]) -> list[EpSpec]:
    """Each EP once, in order: ``--ep cpu --ep CPUExecutionProvider`` names one EP, so it runs once."""
    unique: dict[str, EpSpec] = {}
    for ep in eps:
        unique.setdefault(ep.text, ep)
    return list(unique.values())


def repro_command(entry: Entry, ep: EpSpec, options: RunOptions | None = None) -> str:
    """The ``dmlconf run`` command that runs this one (case, EP) again, under the same target and limits.

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
    return shlex.join(words)
