"""A run's peak memory, runners included (results.json's ``peak_memory``): each process's own peak resident memory,
summed over the run's process, its workers and every DirectML runner they started.

Why each process's own peak (VmHWM, getrusage's ru_maxrss) and not one figure for the run: GNU time and getrusage's
RUSAGE_CHILDREN give the largest single process, not the sum over workers that run side by side, and the runner runs
under Wine, apart from the harness's own figures. A cgroup's peak counts all of it but is not there to every user
(it needs a cgroup of one's own, and counts the page cache). The sum of peaks is an upper bound on what the run held
at once: processes that peaked at different times count both peaks.
"""

from __future__ import annotations

import sys

from conformance.environment import PeakMemory


def own_peak_kib() -> int:
    """This process's peak resident memory in KiB (getrusage: KiB on Linux); 0 where the system does not say."""
    if sys.platform == "win32":
        return 0
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # macOS counts bytes


def _mib(kib: int) -> int:
    return (kib + 1023) // 1024


class Peaks:
    """The peaks the run's processes reported: each worker's latest (its own, its runners' and how many), by worker."""

    def __init__(self) -> None:
        self.workers: dict[int, tuple[int, int, int]] = {}

    def worker(self, number: int, own_kib: int, runners_kib: int, runners: int) -> None:
        """Worker ``number``'s peaks so far (each report supersedes its last: a peak only grows)."""
        self.workers[number] = (own_kib, runners_kib, runners)

    def record(self, own_kib: int, runners_kib: int, runners: int) -> PeakMemory:
        """results.json's ``peak_memory``: this process's peaks (``own_kib``, its own runners') with the workers'."""
        harness = own_kib + sum(own for own, _, _ in self.workers.values())
        runner_kib = runners_kib + sum(kib for _, kib, _ in self.workers.values())
        count = runners + sum(n for _, _, n in self.workers.values())
        return PeakMemory(_mib(harness + runner_kib), _mib(harness), _mib(runner_kib), count)
