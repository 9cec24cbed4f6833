"""What reading and running cases may cost: the limits every front-end offers as options, with their defaults.

Hostile or careless case files (a huge tensor, a YAML alias bomb, 20,000 sweep variants of large tensors) are refused
against these before anything is allocated, generated or run.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.model import IN_PROCESS, MemoryPath

# The case library's largest file is 5 KB of ~1,300 nodes; large tensors take a Generator. PyYAML's pure-Python
# parser (libyaml's accepts and reads differently too many documents to stand in for it, so it composes only what it
# reads alike: conformance/cases/load.py) reads ~15,000 nodes or ~0.3 MB of blank text a second, so these bound what
# any one file can cost, hostile or not, to a few seconds and ~100 MB.
DEFAULT_MAX_FILE_BYTES = 1024 * 1024
DEFAULT_MAX_NODES = 50_000


# --max-case-bytes: the estimated peak memory of one case on its execution path (cases/memory.py), the DirectML
# runner's included, sized for a 16 GB CI machine: half of it for the case, the rest for the system, the run's own
# process and onnxruntime's fixed costs. An MVN1 case of 2^28 elements (--max-elements' largest tensor) with full-size
# Scale and Bias took 20.5 GiB: it is refused; no case of the library is estimated at over 16 MiB.
DEFAULT_MAX_CASE_BYTES = 8 << 30


@dataclass(frozen=True)
class FileLimits:
    """What one case file may cost (--max-file-bytes, --max-nodes, --max-case-bytes): to read it, bytes on disk and
    YAML nodes with aliases counted each time they are used; to run each of its cases, the estimated memory on each
    of ``paths``, the ways its EPs execute it (ep/memory.py), whose frames must carry it too."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_nodes: int = DEFAULT_MAX_NODES
    max_case_bytes: int = DEFAULT_MAX_CASE_BYTES
    paths: tuple[MemoryPath, ...] = (IN_PROCESS,)


DEFAULT_LIMITS = FileLimits()  # frozen: a shared default, not shared state

# --max-elements: any one tensor of a case; 2^28 elements is 1 GiB of float32, and the oracle computes in float64.
DEFAULT_MAX_ELEMENTS = 1 << 28
# --max-run-elements: the case library holds 7.1 M elements on one EP, so this is some 600 times that, and room for
# four cases at --max-elements' largest tensors (up to four tensors of 2^28 in an MVN1 case). Every element is made,
# computed in float64 by the oracle and run, so a run past it (20,000 sweep variants of large tensors are easily
# written) would take hours or days: it is refused before anything runs.
DEFAULT_MAX_RUN_ELEMENTS = 1 << 32
