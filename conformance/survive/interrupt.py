"""Ctrl-C is the supervisor's: it stops the workers and writes what finished, whenever it comes.

Ctrl-C at a terminal sends SIGINT to the whole process group, the workers too. A worker ignores it (a worker's
KeyboardInterrupt would be mistaken for a crash of its case), but a spawned worker first starts an interpreter and
imports NumPy, onnx and onnxruntime (about a second), and a SIGINT in that time printed a KeyboardInterrupt traceback
of 30 lines from the middle of those imports. So the supervisor starts each worker with SIGINT blocked
(``interrupts_held``): the block is inherited across fork and exec, a SIGINT meanwhile stays pending, and the worker's
first act (``start_worker``, in this light module, before the heavy imports) is to ignore SIGINT, which discards a
pending one, and lift the block. CPython's multiprocessing starts its resource tracker the same way. In the
supervisor the block is lifted as soon as the worker is started, so its own Ctrl-C is only delayed, never lost.

SIGTERM and SIGHUP (a CI job cancelled or timed out, a terminal closed) are SIGINT's equals (``INTERRUPTS``): the
workers hold and ignore them alike, and ``dmlconf run`` turns each into the same KeyboardInterrupt
(``interrupts_stop_the_run``), so that the results so far, results.json marked interrupted, the reports and a
``--resume`` that completes the run follow from any of them. A second one stops the process at once, by the signal's
own default action (results.jsonl holds every result up to then, whole lines only).

Windows has no signal mask: there a worker ignores SIGINT from ``start_worker`` on, before its heavy imports.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator, Sequence
from multiprocessing import resource_tracker
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # this module is imported before anything heavy
    from conformance.ep.providers import EpSpec

_MASKABLE = hasattr(signal, "pthread_sigmask")  # POSIX
# The signals that interrupt a run: Ctrl-C, and what a CI job's cancel or timeout, or a closed terminal, sends.
INTERRUPTS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def interrupts_held() -> Iterator[None]:
    """The INTERRUPTS blocked in this thread for the ``with`` body (on POSIX), so that a process started in it
    inherits the block; one that comes meanwhile is delivered here when it ends."""
    if not _MASKABLE:
        yield
        return
    # A spawned process needs multiprocessing's resource tracker, which is started on first use with SIGINT blocked
    # around its start and then unblocked: started here, before the block, it cannot lift ours.
    resource_tracker.ensure_running()
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, set(INTERRUPTS))
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def ignore_interrupts() -> None:
    """The INTERRUPTS ignored from now on, then unblocked: one that came while they were blocked is discarded
    (setting a pending signal's action to SIG_IGN discards it, POSIX says), never raised."""
    for number in INTERRUPTS:
        signal.signal(number, signal.SIG_IGN)
    if _MASKABLE:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(INTERRUPTS))


class Interrupts:
    """The run's handler of the INTERRUPTS: the first raises KeyboardInterrupt (``received`` names it), a second
    takes the signal's default action at once."""

    def __init__(self) -> None:
        self.received: str | None = None

    def __call__(self, number: int, frame: object) -> None:
        if self.received is not None:
            signal.signal(number, signal.SIG_DFL)
            signal.raise_signal(number)
            return  # a signal whose default action is not to end the process (none of INTERRUPTS)
        self.received = signal.Signals(number).name
        raise KeyboardInterrupt(self.received)


@contextlib.contextmanager
def interrupts_stop_the_run() -> Iterator[Interrupts]:
    """For the ``with`` body, in the main thread: each of the INTERRUPTS a KeyboardInterrupt, as SIGINT is; the
    handler says which came first. The previous handlers are restored after."""
    handler = Interrupts()
    previous = {number: signal.signal(number, handler) for number in INTERRUPTS}
    try:
        yield handler
    finally:
        for number, action in previous.items():
            signal.signal(number, action)


def start_worker(
    conn: Connection, stderr_path: str, board: Any, describe: Sequence[EpSpec] = (), turns: Any = None
) -> None:
    """A worker process's entry point (supervisor.py): the INTERRUPTS ignored before anything heavy is imported, then
    the worker's life (worker.py), which starts by describing ``describe``'s DirectML (its runners started in their
    ``turns``: early.py); ``board``: the word it shares with its supervisor (messages.Board)."""
    ignore_interrupts()
    described = None
    if describe:  # its runners started, and their devices described, while the rest is imported (early.py)
        from conformance.survive.early import describe_while_importing

        described = describe_while_importing(describe, "conformance.survive.worker", turns)
    from conformance.survive.messages import Board
    from conformance.survive.worker import worker_main  # NumPy, onnx, onnxruntime: after the signals are ignored

    worker_main(conn, stderr_path, Board(board), described)
