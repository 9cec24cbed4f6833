"""Run tasks in worker processes and survive them: a worker that dies or hangs costs the case it was running, not
the run.

A task is a window of cases on one EP (pool.py). Each worker (worker.py) says which cases it is preparing or
running, and in which phase (``Phase``: the harness preparing it, the EP executing it, the harness judging its
answer), and sends each result as it is final, so when it dies (a signal, an abort, a lost device) or stays silent
past its phase's limit (killed then), the supervisor knows:

- the results already sent: kept;
- the case in flight: its result is CRASH, TIMEOUT or DEVICE_LOST, with how the worker ended and the last lines
  of its stderr (faults.py);
- a pack in flight (several cases in one session): each of them runs again alone, so that the fault is pinned on
  the case that causes it, as packing's other failures are (batch.py);
- the rest of the window: runs again, in a fresh worker.

The limit is the case timeout (``--case-timeout``) while the EP executes: a silence there is the device's (or the
DirectML runner's). The harness's own phases, preparing (inputs, oracle, lowering) and judging (the compare, the
canary check), get HARNESS_TIMEOUT_FACTOR times as long (run/options.py): their work grows with the case and is no
device's, so it must not end as a device hang; yet it is bounded, so that a harness bug that never ends cannot stall
the run. A TIMEOUT's message names the phase it was killed in, and so which side it waited for.

Results go to ``on_result`` as they come, in whatever order; the caller orders them. A DirectML runner's death that a
worker reports goes to ``on_death``, and so does a worker's death under a pack (no result stands for it). The run
stops (``RunStopped``, one line) where nothing more can run: workers that keep dying before they are ready, or a
worker whose DirectML runner keeps failing to start.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from multiprocessing import sharedctypes  # imported with this module (and its heap): test_plugin.py says why
from multiprocessing.connection import wait
from typing import Any, assert_never

from conformance.ep.directml import DirectML
from conformance.ep.providers import EpSpec
from conformance.ep.wine.client import START_ATTEMPTS, START_SECONDS
from conformance.model import Status
from conformance.results import Result
from conformance.run.options import HARNESS_TIMEOUT_FACTOR, RunOptions
from conformance.run.runner import base_result
from conformance.survive.early import RUNNER_START_WAIT, RUNNER_STARTS_AT_ONCE
from conformance.survive.faults import fault_result, how_it_ended, telling_lines
from conformance.survive.interrupt import interrupts_held, start_worker
from conformance.survive.memory import Peaks
from conformance.survive.messages import (
    Began,
    Board,
    CannotRun,
    DirectMLDescribed,
    Finished,
    FromWorker,
    MemoryPeak,
    Phase,
    PhaseChanged,
    Ready,
    RunnerDeathTold,
    RunTask,
    Stop,
    TaskFinished,
    TaskMessage,
)
from conformance.survive.worker import DEVICE_LOST_EXIT
from conformance.survive.workers import FOLDER_PREFIX, Task, Worker, remove_stale_folders, stderr_tail

log = logging.getLogger(__name__)


class RunStopped(RuntimeError):
    """Nothing more can run (one line): the caller writes what finished, and the run fails."""


class WorkerStartError(RunStopped):
    """Worker processes keep failing to start: the run cannot go on (one line)."""


START_LIMIT = 120.0  # seconds a worker may take to start (import NumPy, onnx, onnxruntime) before it is replaced
# and, where it describes DirectML as it starts, as long again as its runner's starts may take (client.py's limits)
DESCRIBE_LIMIT = START_SECONDS * START_ATTEMPTS
KILL_WAIT = 10.0  # seconds to wait for a killed worker to be gone; one stuck in a driver call is left behind


def _ignore(pair: int, result: Result) -> None:
    pass


def _ignore_death(ep: str, cases: Sequence[str], stderr: Sequence[str]) -> None:
    pass


RunnerDeath = Callable[[str, Sequence[str], Sequence[str]], None]  # (the EP's label, cases in flight, stderr lines)
More = Callable[[], "Sequence[Task] | None"]  # the tasks that came since it was last asked; None: no more will come
# Seconds a turn waits while tasks may still come: a worker that became idle is given the next case read without
# waiting for one of the others to say something.
ARRIVING_WAIT = 0.005
# Seconds between turns that check every worker (alive, its board, past its time) while messages keep the turns
# coming faster; between them a turn settles only the workers whose pipe or exit woke it. Checking all eight at
# every turn, a turn a message, kept the run's process 83-86 % busy on dmlop -j 8 (three messages a case); 75-77 %
# since, the workers' pace unchanged (docs/performance.md).
CHECK_EVERY = 0.02


class Supervisor:
    """Up to ``jobs`` workers, started at once (so that their imports overlap whatever the caller does next) and
    kept across ``run`` calls until ``close``; ``timeout``: seconds a worker may stay silent on a task; ``describe``:
    the DirectML EPs whose runner each worker starts, and whose device it describes (``directml``), as it starts."""

    def __init__(self, jobs: int, timeout: float | None, describe: Sequence[EpSpec] = ()) -> None:
        self.jobs, self.timeout = jobs, timeout
        self.describe = list(describe)  # the DirectML EPs each worker describes as it starts (``directml``)
        self.described: dict[str, DirectML] | None = None  # the first worker's answer that described them all
        self.undescribed: list[str] = []  # why each worker that could not describe them could not
        self.start_limit = START_LIMIT + (DESCRIBE_LIMIT + RUNNER_START_WAIT if self.describe else 0.0)
        self.options = RunOptions()
        self.on_result: Callable[[int, Result], None] = _ignore
        self.on_death: RunnerDeath = _ignore_death
        self.peaks = Peaks()  # every worker's peak memory, its runners' included, kept after it is gone
        self.context = multiprocessing.get_context("spawn")
        # The workers' runners start a few at a time (early.py): a semaphore they share
        self.runner_turns = self.context.Semaphore(RUNNER_STARTS_AT_ONCE) if self.describe else None
        remove_stale_folders()
        self.folder = tempfile.TemporaryDirectory(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
        self.workers: list[Worker] = []
        self.pending: deque[Task] = deque()
        self.started = self.tasks_sent = self.failed_starts = 0
        self._next_check = 0.0  # when a turn checks every worker again (CHECK_EVERY)
        try:
            for _ in range(jobs):
                self._spawn()
        except BaseException:  # Ctrl-C while they start: those started are stopped, as ``run`` stops them
            self.close()
            raise

    def __enter__(self) -> Supervisor:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- workers --------------------------------------------------------------------------------------------
    def _spawn(self) -> None:
        self.started += 1
        stderr_path = os.path.join(self.folder.name, f"worker-{self.started}.stderr")
        mine, theirs = self.context.Pipe()
        shared = sharedctypes.RawValue("q", 0)  # the board (messages.Board): no lock, one word, one writer
        args = (theirs, stderr_path, shared, self.describe, self.runner_turns)
        process = self.context.Process(target=start_worker, args=args, daemon=True)
        with interrupts_held():  # Ctrl-C is the supervisor's, even while the worker starts (interrupt.py)
            process.start()
        theirs.close()
        self.workers.append(Worker(process, mine, stderr_path, number=self.started, board=Board(shared)))

    def _assign(self, worker: Worker, task: Task) -> None:
        self.tasks_sent += 1
        worker.task, worker.task_id = task, self.tasks_sent
        worker.in_flight, worker.finished, worker.phase = [], set(), Phase.PREPARING
        worker.heard = worker.began = time.monotonic()
        worker.told_prepared = worker.seen_prepared = worker.board.begun  # idle: its board is still
        try:
            worker.conn.send(
                RunTask(worker.task_id, tuple(task.entries), task.ep, replace(self.options, pack=task.pack))
            )
        except OSError:  # it died since it was last checked: the task waits for another, _check settles this one
            worker.task, worker.closed = None, True
            self.pending.appendleft(task)

    # -- messages -------------------------------------------------------------------------------------------
    def _receive(self, worker: Worker) -> None:
        """Every message the worker has sent (also after it died: what it sent before is kept)."""
        while True:
            try:
                if not worker.has_message():
                    return
                message = worker.conn.recv()
            except (EOFError, OSError):
                worker.closed = True
                return
            worker.heard = time.monotonic()
            self._heard(worker, message)

    def _heard(self, worker: Worker, message: FromWorker) -> None:
        """One message settled: its start's, or its task's (one about an earlier task, settled already, is dropped)."""
        match message:
            case Ready():
                worker.ready = True
                if not self.describe:  # else its start ends with its describe
                    self.failed_starts = 0
            case DirectMLDescribed(directml=directml, why=why):
                worker.described, self.failed_starts = True, 0
                if directml is None:
                    self.undescribed.append(why or "")
                elif self.described is None:
                    self.described = directml
            case _:
                if worker.task is not None and message.task == worker.task_id:
                    self._heard_on(worker, worker.task, message)

    def _heard_on(self, worker: Worker, task: Task, message: TaskMessage) -> None:
        """A message about ``task``, the worker's own."""
        match message:
            case Began(places=places, phase=phase, inputs=inputs, prepared=prepared):
                if prepared >= worker.told_prepared:  # else a case prepared since is newer (_prepared)
                    worker.in_flight, worker.phase, worker.told_prepared = list(places), phase, prepared
                    worker.inputs = {place: dict(hashes) for place, hashes in zip(places, inputs, strict=False)}
                    worker.began = worker.heard
            case PhaseChanged(phase=phase, prepared=prepared):
                if prepared >= worker.told_prepared:
                    worker.phase = phase
            case Finished(places=places, results=results):
                for place, result in zip(places, results, strict=True):
                    worker.finished.add(place)
                    worker.reported_lost |= result.status is Status.DEVICE_LOST
                    self.on_result(task.pairs[place], result)
            case TaskFinished():
                worker.task = None
            case MemoryPeak(own_kib=own_kib, runners_kib=runners_kib, runners=runners):
                self.peaks.worker(worker.number, own_kib, runners_kib, runners)
            case RunnerDeathTold(ep=ep, cases=cases, stderr=stderr):
                self.on_death(ep, cases, stderr)
            case CannotRun(why=why):
                raise RunStopped(why)
            case _:
                assert_never(message)

    # -- faults ---------------------------------------------------------------------------------------------
    def _lost(self, worker: Worker, status: Status, what: str, meant: bool = False) -> None:
        """The worker is gone (died, or killed for a timeout): settle its task as the module docstring says.
        ``meant``: it exited on purpose after reporting a lost device (worker.py), which costs no attempt."""
        self.workers.remove(worker)
        worker.conn.close()
        task = worker.task
        if task is None:
            if not worker.ready or (self.describe and not worker.described):  # it died starting
                self.failed_starts += 1
            return
        self._prepared(worker)
        left = [place for place in range(len(task.entries)) if place not in worker.finished]
        flying = [place for place in worker.in_flight if place in left]
        if worker.finished:  # progress: the deaths counted are those in a row without a case finished
            task.attempts = 0
        if not flying and left and not meant:  # it died between cases, or before its first: retry, not forever
            task.attempts += 1
            flying = left[:1] if task.attempts >= 2 else []
        if len(flying) == 1:
            place = flying[0]
            entry = task.entries[place]
            base = replace(base_result(entry, task.ep, self.options), inputs_sha256=worker.inputs.get(place, {}))
            seconds = time.monotonic() - worker.began
            self.on_result(task.pairs[place], fault_result(base, status, what, stderr_tail(worker), seconds))
        elif flying:  # a pack: each case again alone, to find the one at fault; its death recorded, as no result is
            self.on_death(task.ep.text, [task.entries[p].id for p in flying], telling_lines(stderr_tail(worker)))
            self.pending.appendleft(self._part(task, flying, pack=1))
        rest = [place for place in left if place not in flying]
        if rest:
            self.pending.appendleft(self._part(task, rest, pack=task.pack, attempts=task.attempts))
        log.info("worker %s: %s; %d case(s) of its task run again", worker.process.pid, what, len(rest) + len(flying))

    @staticmethod
    def _part(task: Task, places: Sequence[int], pack: int, attempts: int = 0) -> Task:
        return Task([task.entries[p] for p in places], [task.pairs[p] for p in places], task.ep, pack, attempts)

    def _check(self, worker: Worker) -> None:
        """Settle a worker that died, or kill one that is past its time."""
        if not worker.process.is_alive():
            worker.process.join()
            self._receive(worker)
            ended = how_it_ended(worker.process.exitcode)
            meant = worker.reported_lost and worker.process.exitcode == DEVICE_LOST_EXIT
            self._lost(worker, Status.CRASH, f"the worker process running it {ended}", meant)
            return
        self._prepared(worker)
        now = time.monotonic()
        if not worker.ready and now - worker.heard > self.start_limit:
            worker.process.kill()
        elif worker.task is not None and self.timeout and now - worker.heard > self._limit(worker.phase):
            phase = worker.phase
            worker.process.kill()
            worker.process.join(KILL_WAIT)
            self._receive(worker)
            if worker.task is not None:
                what = f"no progress for {self._limit(phase):g} s {phase.waited_for}: the worker was killed"
                self._lost(worker, Status.TIMEOUT, what)

    def _prepared(self, worker: Worker) -> None:
        """What the worker's board says (messages.Board): a case prepared since it was last read is news (the worker
        is alive), and where none of its messages is newer, the case in flight, in the PREPARING phase."""
        begun, place = worker.board.last()
        if begun == worker.seen_prepared:
            return
        worker.seen_prepared, worker.heard = begun, time.monotonic()
        if begun > worker.told_prepared and worker.task is not None:
            worker.in_flight, worker.phase, worker.inputs = [place], Phase.PREPARING, {}
            worker.told_prepared, worker.began = begun, worker.heard

    def _limit(self, phase: Phase) -> float:
        """The seconds a worker on a task may stay silent in ``phase`` (``timeout`` set)."""
        assert self.timeout
        return self.timeout * HARNESS_TIMEOUT_FACTOR if phase.harness else self.timeout

    # -- the loop -------------------------------------------------------------------------------------------
    def run(
        self,
        tasks: Sequence[Task],
        options: RunOptions,
        on_result: Callable[[int, Result], None],
        on_death: RunnerDeath = _ignore_death,
        more: More | None = None,
    ) -> None:
        """Every task to its end, each result to ``on_result(pair, result)`` as it comes, each DirectML runner death
        to ``on_death``. ``more``: asked at every turn for the tasks that came since (the cases of the files read
        meanwhile), until it answers None (no more will come). On any exception (a KeyboardInterrupt, RunStopped, or
        one ``more`` or ``on_result`` raised) the workers are stopped and it goes up to the caller."""
        if any(worker.stopped for worker in self.workers):
            raise RuntimeError("Supervisor.run after stop: its workers take no more tasks")
        self.options, self.on_result, self.on_death = options, on_result, on_death
        self.pending.extend(tasks)
        try:
            while more is not None or self.pending or self._busy():
                if more is not None and (came := more()) is not None:
                    self.pending.extend(came)
                elif more is not None:
                    more = None
                self._turn(ARRIVING_WAIT if more is not None else None)
        except BaseException:
            self.close()
            raise

    def directml(self) -> dict[str, DirectML]:
        """The DirectML of each EP in ``describe``, by its ``--ep`` text, as the first worker to describe it did: the
        run's runners and devices start in the workers, beside whatever the caller does meanwhile (reading the case
        files), and none in this process. A worker that could not describe it (one runner's start that failed, say)
        does not decide the run while another may still: ChainMissing (the first worker's why, one line) only once
        every worker started has answered and none described it; WorkerStartError where workers keep failing to
        start."""
        if not self.describe:
            return {}
        while self.described is None and not (self.undescribed and self._all_answered()):
            self._turn()
        if self.described is None:
            from conformance.ep.wine.chain import ChainMissing

            raise ChainMissing(self.undescribed[0])
        return self.described

    def _all_answered(self) -> bool:
        return len(self.workers) >= self.jobs and all(worker.described for worker in self.workers)

    def wait_ready(self) -> None:
        """Until every worker has started (a benchmark's timing starts after)."""
        while len(self.workers) < self.jobs or not all(worker.ready for worker in self.workers):
            self._turn()

    def _turn(self, wait: float | None = None) -> None:
        """Workers to ``jobs`` again, idle ones given pending tasks, then what any of them says or does settled
        (waiting for it at most ``wait`` seconds, else up to a second)."""
        if self.failed_starts >= 3:
            raise WorkerStartError(
                f"{self.failed_starts} worker processes in a row died, or hung for {self.start_limit:g} s, before they "
                "were ready: nothing more can run (try -j 0 to run in this process)"
            )
        while len(self.workers) < self.jobs:
            self._spawn()
        for worker in self.workers:
            if worker.ready and not worker.closed and worker.task is None and self.pending:
                self._assign(worker, self.pending.popleft())
        ready = self._wait(wait)
        now = time.monotonic()
        every = now >= self._next_check  # else only the workers whose pipe or exit woke this turn
        if every:
            self._next_check = now + CHECK_EVERY
        for worker in list(self.workers):
            if every or worker.conn in ready or worker.process.sentinel in ready:
                self._receive(worker)
                self._check(worker)

    def _busy(self) -> int:
        return sum(w.task is not None for w in self.workers)

    def _wait(self, limit: float | None) -> list[Any]:
        """The pipes and exits that are ready, once one is or ``limit`` seconds (else up to a second) have passed."""
        handles: list[Any] = [w.conn for w in self.workers if not w.closed] + [w.process.sentinel for w in self.workers]
        return wait(handles, timeout=limit if limit is not None else min(1.0, self.timeout or 1.0))

    def stop(self) -> None:
        """Every worker told to stop, not waited for: a caller with no more tasks writes its reports while they exit
        (stopping their runners, finalizing onnxruntime), and ``close`` reaps them after."""
        for worker in self.workers:
            if not worker.stopped:
                worker.stopped = True
                with contextlib.suppress(OSError):
                    worker.conn.send(Stop())

    def close(self) -> None:
        self.stop()
        deadline = time.monotonic() + 5.0
        for worker in self.workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(KILL_WAIT)
            worker.conn.close()
        self.workers.clear()
        self.folder.cleanup()
