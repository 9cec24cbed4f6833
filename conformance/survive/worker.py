"""The worker process: runs the tasks a supervisor (supervisor.py) sends it, telling it as it goes what it works on.

Messages to the supervisor, over one pipe: ``("ready",)`` once imported; per task, ``("begin", task, places, phase,
inputs)`` before each case is prepared (``Phase.PREPARING``) and before each session runs (``Phase.EXECUTING``;
several places for a pack, and the hashes of their inputs), ``("phase", task, Phase.JUDGING)`` once the EP answered
and the harness judges what it returned, ``("done", task, place, result)`` as each result is final, and
``("task_done", task)``. The supervisor thus knows, when the worker dies or hangs, which cases were in flight, which
results are already safe, and which side it waited for: the EP's answer, or the harness's own work (``Phase``).
Besides: ``("runner_died",
task, ep, cases, stderr)`` for each DirectML runner that ended unasked (the full ids of the cases it was serving,
none where it died between requests or at its start; the last lines of its stderr), and ``("stopped", task, why)``
where cases cannot run at all (the runner fails to start again and again), which stops the run; once, before its
first task where the supervisor asks it, ``("described", directml, why)``: the DirectML of the run's DirectML EPs, as
its runner's device answers (early.py); and before each
``task_done``, ``("memory", task, own_kib, runners_kib, runners)``: its peak resident memory and its runners' so far
(memory.py).

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
from enum import Enum
from multiprocessing.connection import Connection, wait
from typing import Any

from conformance.cases.parse import Entry
from conformance.ep.errors import InfrastructureError
from conformance.ep.providers import EpSpec
from conformance.ep.sessions import Sessions
from conformance.ep.wine.client import RunnerDied, Runners, runners_peak
from conformance.model import Status
from conformance.results import Result
from conformance.run.batch import run_batch
from conformance.run.options import RunOptions
from conformance.survive.early import Described
from conformance.survive.faults import provoke, provoke_at_start
from conformance.survive.memory import own_peak_kib


class Phase(Enum):
    """What a worker does on the case (or pack) in flight, as it tells its supervisor (which limits each phase's
    silence and says in a TIMEOUT which one it was)."""

    PREPARING = "preparing"  # the harness's own work: the case's inputs, the oracle, the lowering
    EXECUTING = "executing"  # the EP's: a session created and run, DirectML's operator dispatched, until it answers
    JUDGING = "judging"  # the harness's own work on the answer: the compare, the canary check, the outputs' hashes

    @property
    def harness(self) -> bool:
        """Whether it is the harness's own work, not the EP's (a silence there is no hang of the device)."""
        return self is not Phase.EXECUTING


DEVICE_LOST_EXIT = 3  # the status a worker exits with after reporting a lost device
SUPERVISOR_GONE_EXIT = 4  # the status of a worker that outlived its supervisor (nobody reads it)


class _Reporter:
    """The batch's Watch: each step sent to the supervisor as it happens."""

    def __init__(self, conn: Connection, task: int, ids: Sequence[str], ep: EpSpec, runners: Runners) -> None:
        self.conn, self.task, self.ids, self.ep, self.runners = conn, task, ids, ep, runners
        self.executing: list[str] = []  # the ids of the cases whose session runs now

    def begin(self, places: Sequence[int], executing: bool, inputs: Sequence[Mapping[str, str]] = ()) -> None:
        phase = Phase.EXECUTING if executing else Phase.PREPARING
        self.conn.send(("begin", self.task, list(places), phase, [dict(hashes) for hashes in inputs]))
        self.executing = [self.ids[place] for place in places] if executing else []
        if executing:
            provoke(self.executing, self.runners)

    def judging(self, places: Sequence[int]) -> None:
        self.conn.send(("phase", self.task, Phase.JUDGING))
        provoke([self.ids[place] for place in places], self.runners, judging=True)

    def finished(self, place: int, result: Result) -> None:
        self.conn.send(("done", self.task, place, result))
        if result.status is Status.DEVICE_LOST:
            os._exit(DEVICE_LOST_EXIT)  # no cleanup: the device context may hang in it

    def device_lost(self, places: Sequence[int], message: str) -> None:
        """A pack lost the device: exit with the pack in flight, which the supervisor runs again one case per fresh
        worker, so that the case that loses it is found (the message is left in this worker's stderr)."""
        os.write(2, f"a packed session lost the device: {message}\n".encode("utf-8", "replace"))
        os._exit(DEVICE_LOST_EXIT)

    def runner_died(self, died: RunnerDied) -> None:
        """Runners' ``on_death``: the death told to the supervisor, with the cases it was serving."""
        cases = self.executing if died.serving else []
        self.conn.send(("runner_died", self.task, self.ep.text, list(cases), list(died.lines)))


def _stderr_to(path: str) -> None:
    """Descriptor 2 and sys.stderr to ``path`` (appending), and Python's traceback there on a fatal signal."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)  # noqa: SIM115
    faulthandler.enable(sys.stderr)


def _run_task(
    conn: Connection, task: int, entries: Sequence[Entry], ep: EpSpec, options: RunOptions, runners: Runners
) -> None:
    os.ftruncate(2, 0)  # the stderr kept is this task's: the file stays small over a long run
    reporter = _Reporter(conn, task, [e.id for e in entries], ep, runners)
    runners.on_death = reporter.runner_died
    runners.bound(options.case_timeout)  # every wait on the runner within --case-timeout, as the supervisor's
    try:
        run_batch(entries, ep, options, Sessions(runners=runners), reporter)
    except InfrastructureError as error:  # nothing can run: the supervisor stops the run
        conn.send(("stopped", task, str(error)))
        return
    conn.send(("memory", task, own_peak_kib(), *runners_peak(runners.held())))
    conn.send(("task_done", task))


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


def worker_main(conn: Connection, stderr_path: str, described: Described | None = None) -> None:
    """A worker's life: ready (and its DirectML ``described``, where the supervisor asked: early.py), then tasks until
    told to stop or the supervisor is gone. SIGINT is ignored already (interrupt.py's ``start_worker``, the process's
    entry point): Ctrl-C is the supervisor's."""
    _exit_with_the_supervisor()
    _stderr_to(stderr_path)
    provoke_at_start()
    conn.send(("ready",))
    # The DirectML runner, where one is needed: started once (by the describe, if any), serving every task here.
    runners = described.runners if described is not None else Runners()
    try:
        if described is not None:
            conn.send(("described", described.directml, described.why))
        _serve(conn, runners)
    finally:  # its runners stopped and waited for: one left behind would hold its memory (and the device) after it
        runners.close()


def _serve(conn: Connection, runners: Runners) -> None:
    """Tasks until told to stop or the supervisor is gone."""
    while True:
        try:
            message: tuple[Any, ...] = conn.recv()
        except (EOFError, OSError):  # the supervisor is gone (killed, say): nothing to report to
            return
        if message[0] == "stop":
            return
        _, task, entries, ep, options = message
        try:
            _run_task(conn, task, entries, ep, options, runners)
        except (BrokenPipeError, EOFError, OSError):
            return
