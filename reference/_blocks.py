"""Run independent blocks of work on the machine's cores.

NumPy releases the GIL inside its kernels (ufuncs, partition, sort, reductions), so threads over disjoint blocks of
rows run in parallel. Each block writes only its own part of a preallocated output and computes exactly what it
would compute alone, so the result does not depend on the number of threads or on the order blocks finish in.
The pool lives for one call: no state outlives it. Each thread runs in a copy of the caller's context, so the
caller's ``np.errstate`` (a context variable) holds in the workers too.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Block = TypeVar("Block")


def cores() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def run_shares(task: Callable[[Sequence[Block]], None], blocks: Sequence[Block]) -> None:
    """``task(share)`` for shares that split ``blocks`` between the cores, one thread per share; ``task`` sets up
    what a worker needs (scratch buffers) once, then works through its share. One share on a single core or with a
    single block: no thread is started."""
    workers = min(cores(), len(blocks))
    if workers <= 1:
        task(blocks)
        return
    shares = [blocks[first::workers] for first in range(workers)]  # interleaved: neighbouring blocks cost alike
    contexts = [contextvars.copy_context() for _ in shares]  # a context is entered by one thread at a time
    with ThreadPoolExecutor(max_workers=workers) as pool:
        # list() waits for every share and re-raises the first exception, if any.
        list(pool.map(lambda context, share: context.run(task, share), contexts, shares))
