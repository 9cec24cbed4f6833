"""Ctrl-C is the supervisor's: it stops the workers and writes what finished, whenever it comes.

Ctrl-C at a terminal sends SIGINT to the whole process group, the workers too. A worker ignores it (a worker's
KeyboardInterrupt would be mistaken for a crash of its case), but a spawned worker first starts an interpreter and
imports NumPy, onnx and onnxruntime (about a second), and a SIGINT in that time printed a KeyboardInterrupt traceback
of 30 lines from the middle of those imports. So the supervisor starts each worker with SIGINT blocked
(``sigint_held``): the block is inherited across fork and exec, a SIGINT meanwhile stays pending, and the worker's
first act (``start_worker``, in this light module, before the heavy imports) is to ignore SIGINT, which discards a
pending one, and lift the block. CPython's multiprocessing starts its resource tracker the same way. In the
supervisor the block is lifted as soon as the worker is started, so its own Ctrl-C is only delayed, never lost.

Windows has no signal mask: there a worker ignores SIGINT from ``start_worker`` on, before its heavy imports.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator, Sequence
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # this module is imported before anything heavy
    from conformance.ep.providers import EpSpec

_MASKABLE = hasattr(signal, "pthread_sigmask")  # POSIX


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """SIGINT blocked in this thread for the ``with`` body (on POSIX), so that a process started in it inherits the
    block; a SIGINT meanwhile is delivered here when it ends."""
    if not _MASKABLE:
        yield
        return
    # A spawned process needs multiprocessing's resource tracker, which is started on first use with SIGINT blocked
    # around its start and then unblocked: started here, before the block, it cannot lift ours.
    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def ignore_sigint() -> None:
    """SIGINT ignored from now on, then unblocked: a SIGINT that came while it was blocked is discarded (setting a
    pending signal's action to SIG_IGN discards it, POSIX says), never raised."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if _MASKABLE:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def start_worker(conn: Connection, stderr_path: str, describe: Sequence[EpSpec] = ()) -> None:
    """A worker process's entry point (supervisor.py): SIGINT ignored before anything heavy is imported, then the
    worker's life (worker.py), which starts by describing ``describe``'s DirectML."""
    ignore_sigint()
    described = None
    if describe:  # its runners started, and their devices described, while the rest is imported (early.py)
        from conformance.survive.early import describe_while_importing

        described = describe_while_importing(describe, "conformance.survive.worker")
    from conformance.survive.worker import worker_main  # NumPy, onnx, onnxruntime: after SIGINT is ignored

    worker_main(conn, stderr_path, described)
