"""Python's cyclic garbage collector, kept off what a run holds from its first case file to its reports.

A run's process holds every case read and every result until the reports are written: 420,000 objects for the
21,000 cases of benchmarks/sweeps. CPython walks every one of them at each full collection, and starts one whenever
the objects that outlived the young generations have grown by a quarter since the last: nine in that run, 1.9 s of
the process's 6.1 s of CPU on 2 cores, each a pause in which no worker is handed its next cases. The run itself
makes little cyclic garbage (the collections of that run freed about 1,400 objects), and what it makes young the
young generations still find. So while a run runs, the full collection waits for its end,
and a process that reads case files for one (run_stream.py's readers) never runs one.

At the process's end CPython would walk them all once more (0.5 s for that run) only to give memory back to a
system that takes it anyway: ``exit_code`` freezes them first (``gc.freeze``: a permanent generation no collection
walks). The commands alone do that, through the ``dmlconf`` script and ``python -m conformance``: ``main`` called
in a process that goes on (a test) leaves its collector as it was.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

# The oldest generation's threshold while the full collection waits: it counts the young collections before one,
# and CPython's default is 10. One in 2**30 (7.5 trillion allocations at the default thresholds) never comes in a run.
FULL_COLLECTION_DEFERRED = 2**30


@contextlib.contextmanager
def full_collection_deferred() -> Iterator[None]:
    """No full collection while the block runs; the young generations are collected as before. Restored after."""
    before = gc.get_threshold()
    no_full_collection()
    try:
        yield
    finally:
        gc.set_threshold(*before)


def no_full_collection() -> None:
    """No full collection from now on (a reading process's whole life); the young generations as before."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_COLLECTION_DEFERRED)


def exit_code(code: int) -> int:
    """``code``, once every object left is frozen: the process ends now, and its last collection would walk them
    all to free memory the system takes back anyway."""
    gc.freeze()
    return code
