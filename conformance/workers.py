"""-j N: a run's (case, EP) pairs spread over N worker processes, results back in the order a single process gives.

Workers are started with "spawn" (no fork of a process that may hold GPU contexts or onnxruntime threads), each
takes chunks of pairs, and every result carries its pair's index, so the merged list is the sequential one whatever
finishes first. An interrupt cancels what has not started and keeps every result already back.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from conformance.eps import EpSpec
from conformance.parse import Entry
from conformance.results import Result
from conformance.runner import RunOptions, run_entry

CHUNK = 8  # pairs per task: enough to hide the cost of a round trip, small enough to balance the workers
Task = list[tuple[int, Entry, EpSpec]]


def _run_chunk(task: Task, options: RunOptions) -> list[tuple[int, Result]]:
    return [(index, run_entry(entry, ep, options)) for index, entry, ep in task]


def run_pairs(
    entries: Sequence[Entry],
    eps: Sequence[EpSpec],
    options: RunOptions,
    jobs: int,
    advance: Callable[[], None],
) -> list[Result]:
    """Every (entry, EP) result, entry-major as a sequential run orders them; ``advance`` after each one."""
    pairs = [(entry, ep) for entry in entries for ep in eps]
    if jobs <= 1:
        results: list[Result] = []
        try:
            for entry, ep in pairs:
                results.append(run_entry(entry, ep, options))
                advance()
        except KeyboardInterrupt:
            pass  # the caller sees fewer results than pairs and says the run was interrupted
        return results
    done: dict[int, Result] = {}
    tasks: list[Task] = [
        [(i, entry, ep) for i, (entry, ep) in enumerate(pairs[start : start + CHUNK], start)]
        for start in range(0, len(pairs), CHUNK)
    ]
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        pending: set[Future[list[tuple[int, Result]]]] = {pool.submit(_run_chunk, task, options) for task in tasks}
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                for index, result in future.result():
                    done[index] = result
                    advance()
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    # Only the unbroken prefix: a run cut short reports the pairs before the first missing one, as a sequential one
    # would, so an interrupted run's results.json never has holes.
    results = []
    for index in range(len(pairs)):
        if index not in done:
            break
        results.append(done[index])
    return results
