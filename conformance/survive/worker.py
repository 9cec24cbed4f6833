"""The worker process: runs the tasks a supervisor (supervisor.py) sends it, telling it as it goes what it works on,
in the messages of messages.py: the supervisor thus knows, when the worker dies or hangs, which cases were in flight,
which results are already safe, and which side it waited for.

Its stderr (file descriptor 2, so onnxruntime's and the driver's messages too, and faulthandler's traceback on a
fatal signal) goes to a file the supervisor reads when the worker dies. A worker that reports DEVICE_LOST exits
after sending it: its device context is gone, and a fresh worker takes over the rest.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection, wait
from typing import assert_never

from conformance.ep.errors import InfrastructureError
from conformance.ep.providers import EpSpec
from conformance.ep.sessions import Sessions
from conformance.ep.wine.client import RunnerDied, Runners, runners_peak
from conformance.model import Status
from conformance.results import Result, json_text
from conformance.run.batch import run_batch
from conformance.survive.early import Described
from conformance.survive.faults import provoke, provoke_at_start
from conformance.survive.memory import own_peak_kib
from conformance.survive.messages import (
    Began,
    Board,
    CannotRun,
    DirectMLDescribed,
    Finished,
    MemoryPeak,
    Phase,
    PhaseChanged,
    Ready,
    RunnerDeathTold,
    RunTask,
    Stop,
    TaskFinished,
    ToWorker,
)

DEVICE_LOST_EXIT = 3  # the status a worker exits with after reporting a lost device
SUPERVISOR_GONE_EXIT = 4  # the status of a worker that outlived its supervisor (nobody reads it)


class _Reporter:
    """The batch's Watch: each step told to the supervisor as it happens, a case prepared on the board, the rest
    sent (messages.py)."""

    def __init__(
        self, conn: Connection, task: int, ids: Sequence[str], ep: EpSpec, runners: Runners, board: Board
    ) -> None:
        self.conn, self.task, self.ids, self.ep, self.runners, self.board = conn, task, ids, ep, runners, board
        self.executing: list[str] = []  # the ids of the cases whose session runs now

    def begin(self, places: Sequence[int], executing: bool, inputs: Sequence[Mapping[str, str]] = ()) -> None:
        if not executing:  # one case prepared (batch.py): on the board, no message
            self.executing = []
            self.board.begin(places[0])
            provoke([self.ids[places[0]]], self.runners, preparing=True)
            return
        hashes = tuple(dict(each) for each in inputs)
        self.conn.send(Began(self.task, tuple(places), Phase.EXECUTING, hashes, self.board.begun))
        self.executing = [self.ids[place] for place in places]
        provoke(self.executing, self.runners)

    def judging(self, places: Sequence[int]) -> None:
        self.conn.send(PhaseChanged(self.task, Phase.JUDGING, self.board.begun))
        provoke([self.ids[place] for place in places], self.runners, judging=True)

    def finished(self, results: Mapping[int, Result]) -> None:
        if not results:
            return
        for result in results.values():
            json_text(result)  # encoded here, in parallel, rather than by the one process that writes every result
        self.conn.send(Finished(self.task, tuple(results), tuple(results.values())))
        if any(result.status is Status.DEVICE_LOST for result in results.values()):
            os._exit(DEVICE_LOST_EXIT)  # no cleanup: the device context may hang in it

    def device_lost(self, places: Sequence[int], message: str) -> None:
        """A pack lost the device: exit with the pack in flight, which the supervisor runs again one case per fresh
        worker, so that the case that loses it is found (the message is left in this worker's stderr)."""
        os.write(2, f"a packed session lost the device: {message}\n".encode("utf-8", "replace"))
        os._exit(DEVICE_LOST_EXIT)

    def runner_died(self, died: RunnerDied) -> None:
        """Runners' ``on_death``: the death told to the supervisor, with the cases it was serving."""
        cases = self.executing if died.serving else []
        self.conn.send(RunnerDeathTold(self.task, self.ep.text, tuple(cases), tuple(died.lines)))


def _stderr_to(path: str) -> None:
    """Descriptor 2 and sys.stderr to ``path`` (appending), and Python's traceback there on a fatal signal."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)  # noqa: SIM115
    faulthandler.enable(sys.stderr)


def _run_task(conn: Connection, told: RunTask, runners: Runners, board: Board) -> None:
    os.ftruncate(2, 0)  # the stderr kept is this task's: the file stays small over a long run
    reporter = _Reporter(conn, told.task, [e.id for e in told.entries], told.ep, runners, board)
    runners.on_death = reporter.runner_died
    runners.bound(told.options.case_timeout)  # every wait on the runner within --case-timeout, as the supervisor's
    try:
        run_batch(told.entries, told.ep, told.options, Sessions(runners=runners), reporter)
    except InfrastructureError as error:  # nothing can run: the supervisor stops the run
        conn.send(CannotRun(told.task, str(error)))
        return
    conn.send(MemoryPeak(told.task, own_peak_kib(), *runners_peak(runners.held())))
    conn.send(TaskFinished(told.task))


def _exit_with_the_supervisor() -> None:
    """When the supervisor is gone without stopping this worker (a kill -9 of its pid alone, SIGTERM from a CI job's
    timeout, the OOM killer), exit too, even while a case hangs in a driver call: an orphan would hold the device
    for good. A daemon thread waits on the supervisor's sentinel, which multiprocessing gives a spawned child."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def wait_then_exit() -> None:
        wait([parent.sentinel])
        os._exit(SUPERVISOR_GONE_EXIT)

    threading.Thread(target=wait_then_exit, name="supervisor-watch", daemon=True).start()


def worker_main(conn: Connection, stderr_path: str, board: Board, described: Described | None = None) -> None:
    """A worker's life: ready (and its DirectML ``described``, where the supervisor asked: early.py), then tasks until
    told to stop or the supervisor is gone. SIGINT is ignored already (interrupt.py's ``start_worker``, the process's
    entry point): Ctrl-C is the supervisor's."""
    _exit_with_the_supervisor()
    _stderr_to(stderr_path)
    provoke_at_start()
    conn.send(Ready())
    # The DirectML runner, where one is needed: started once (by the describe, if any), serving every task here.
    runners = described.runners if described is not None else Runners()
    try:
        if described is not None:
            conn.send(DirectMLDescribed(described.directml, described.why))
        _serve(conn, runners, board)
    finally:  # its runners stopped and waited for: one left behind would hold its memory (and the device) after it
        runners.close()


def _serve(conn: Connection, runners: Runners, board: Board) -> None:
    """Tasks until told to stop or the supervisor is gone."""
    while True:
        try:
            message: ToWorker = conn.recv()
        except (EOFError, OSError):  # the supervisor is gone (killed, say): nothing to report to
            return
        match message:
            case Stop():
                return
            case RunTask():
                try:
                    _run_task(conn, message, runners, board)
                except (BrokenPipeError, EOFError, OSError):
                    return
            case _:
                assert_never(message)
