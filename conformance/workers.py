"""-j N: a run's (case, EP) pairs spread over N worker processes, results back in the order a single process gives.

Cases go in windows (``window_size``): each window runs on each EP through ``run_batch``, which packs its small
cases into shared sessions (batch.py); with -j N the windows are the tasks the workers take. Workers are started
with "spawn" (no fork of a process that may hold GPU contexts or onnxruntime threads), and every result carries its
pair's index, so the merged list is the sequential one whatever finishes first. An interrupt cancels what has not
started and keeps every result already back.

The CLI starts the workers (``start_workers``) before it reads the case files, so that their start (each imports
NumPy, onnx and onnxruntime: about 0.6 s) overlaps the reading instead of following it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import replace
from typing import Any

from conformance.batch import run_batch
from conformance.eps import EpSpec
from conformance.parse import Entry
from conformance.results import Result
from conformance.runner import RunOptions
from conformance.sessions import Sessions

CHUNK = 8  # cases per window without packing: enough to hide a worker's round trip, small enough to balance
Window = list[tuple[int, Entry]]  # (the entry's place in the run, the entry)


def cores_share(workers: int) -> int:
    """One of ``workers`` processes' share of the CPUs this process may run on (at least one): the intra-op threads
    of a worker's sessions for larger cases. N workers each with onnxruntime's default of a spinning thread per
    core would fight over the cores (the library with -j 8 on 16 cores: slower than -j 4)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, workers))


def window_size(options: RunOptions) -> int:
    return max(CHUNK, options.pack)


def _run_window(window: Window, eps: Sequence[EpSpec], options: RunOptions) -> list[tuple[int, Result]]:
    """Each (entry, EP) result with its index in the entry-major order of the whole run."""
    sessions = Sessions()  # one window's: a worker keeps nothing between tasks
    entries = [entry for _, entry in window]
    by_ep = [run_batch(entries, ep, options, sessions) for ep in eps]
    return [(place * len(eps) + e, by_ep[e][i]) for i, (place, _) in enumerate(window) for e in range(len(eps))]


def start_workers(
    jobs: int, initializer: Callable[..., object] | None = None, initargs: tuple[Any, ...] = ()
) -> ProcessPoolExecutor:
    """``jobs`` spawned worker processes, all starting now (one no-op task each: the pool starts a worker for each
    task no idle worker can take); ``initializer(*initargs)`` runs first in each (a benchmark's warm-up)."""
    pool = ProcessPoolExecutor(jobs, multiprocessing.get_context("spawn"), initializer, initargs)
    for _ in range(jobs):
        pool.submit(int)
    return pool


@contextlib.contextmanager
def workers(jobs: int) -> Iterator[ProcessPoolExecutor | None]:
    """-j N's workers, started at once and shut down on leaving; None for a run in this process (N = 1)."""
    pool = start_workers(jobs) if jobs > 1 else None
    try:
        yield pool
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _windows(entries: Sequence[Entry], options: RunOptions) -> list[Window]:
    size, numbered = window_size(options), list(enumerate(entries))
    return [numbered[start : start + size] for start in range(0, len(numbered), size)]


def _prefix(done: dict[int, Result], planned: int) -> list[Result]:
    """Only the unbroken prefix: a run cut short reports the pairs before the first missing one, as a sequential
    one would, so an interrupted run's results.json never has holes."""
    results = []
    for index in range(planned):
        if index not in done:
            break
        results.append(done[index])
    return results


def run_pairs(
    entries: Sequence[Entry],
    eps: Sequence[EpSpec],
    options: RunOptions,
    jobs: int,
    advance: Callable[[], None],
    pool: ProcessPoolExecutor | None = None,
) -> list[Result]:
    """Every (entry, EP) result, entry-major as a sequential run orders them; ``advance`` after each one. With
    ``jobs`` > 1 the windows run on ``pool`` where given (``start_workers``; the caller shuts it down), else on a
    pool of ``jobs`` workers started here."""
    done: dict[int, Result] = {}
    windows = _windows(entries, options)
    if jobs <= 1:
        try:
            for window in windows:
                for index, result in _run_window(window, eps, options):
                    done[index] = result
                    advance()
        except KeyboardInterrupt:
            pass  # the caller sees fewer results than pairs and says the run was interrupted
        return _prefix(done, len(entries) * len(eps))
    if options.threads is None:
        options = replace(options, threads=cores_share(jobs))
    own = pool is None
    pool = start_workers(jobs) if pool is None else pool
    try:
        pending: set[Future[list[tuple[int, Result]]]] = {
            pool.submit(_run_window, window, eps, options) for window in windows
        }
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                for index, result in future.result():
                    done[index] = result
                    advance()
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
    finally:
        if own:
            pool.shutdown(wait=True, cancel_futures=True)
    return _prefix(done, len(entries) * len(eps))
