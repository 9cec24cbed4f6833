"""The one way cases are run, by ``dmlconf run`` and the pytest plugin alike (``run_pairs``): a run's (case, EP) pairs
in N worker processes (-j N; the plugin's one), results back in the order a single process gives.

Cases go in windows (``window_size``): each window runs on one EP through ``run_batch``, which packs its small
cases into shared sessions (batch.py); the (window, EP) tasks go to the workers of a ``Supervisor``, which survives
their crashes and hangs (supervisor.py). Workers are started with "spawn" (no fork of a process that may hold GPU
contexts or onnxruntime threads), every result carries its pair's index, so the merged list is the sequential one
whatever finishes first, and each is handed to ``record`` as it comes (results.jsonl, stream.py). ``-j 0`` runs in
this process, with no protection from a crash (for debugging).

Every result passes through the run's ``RunLog`` (faults.py) as it arrives, in this process, whatever worker gave it:
an EP that executed cases and later cannot create a session has lost its device (DEVICE_LOST from that case on),
and the DirectML runner's deaths, and workers' under a pack, are counted per EP (``Ran.runner_deaths``, results.json's
``runner_deaths``).

The CLI starts the supervisor (its workers) before it reads the case files, so that their start (each imports
NumPy, onnx and onnxruntime: about 0.6 s) overlaps the reading instead of following it. For a DirectML EP each
worker also starts its runner and describes the device as it starts (early.py), and the first worker's describe is
the run's: the runners and their D3D12 devices come up beside the reading, and the CLI's process starts none.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from conformance.cases.parse import Entry
from conformance.environment import RunnerDeath
from conformance.ep.errors import InfrastructureError
from conformance.ep.providers import EpSpec
from conformance.ep.sessions import Sessions
from conformance.ep.wine.client import RunnerDied, Runners
from conformance.results import Result
from conformance.run.batch import Unwatched, run_batch
from conformance.run.options import DEFAULT_TIMEOUT, RunOptions, cores_share
from conformance.survive.faults import RunLog
from conformance.survive.supervisor import RunStopped, Supervisor
from conformance.survive.workers import Task

CHUNK = 8  # cases per window without packing: enough to hide a worker's round trip, small enough to balance
Record = Callable[[int, Result], None]  # (the pair's index in the run, its result)


def window_size(options: RunOptions) -> int:
    return max(CHUNK, options.pack)


def tasks_for(
    entries: Sequence[Entry], eps: Sequence[EpSpec], options: RunOptions, skip: Container[int], first: int = 0
) -> list[Task]:
    """The (window, EP) tasks of a run, entry-major as a sequential run goes, without the pairs in ``skip``; from the
    entry at ``first`` on (the entries that came since: run_arriving)."""
    tasks = []
    size = window_size(options)
    for start in range(first, len(entries), size):
        for e, ep in enumerate(eps):
            places = [p for p in range(start, min(start + size, len(entries))) if p * len(eps) + e not in skip]
            if places:
                pairs = [p * len(eps) + e for p in places]
                tasks.append(Task([entries[p] for p in places], pairs, ep, options.pack))
    return tasks


class _InProcess(Unwatched):
    """The batch's Watch for -j 0: results recorded as they become final, runner deaths with the cases in flight. A
    lost device is not acted on: there is no fresh process to move to, and the pack's cases run alone here, on what
    is left of the device."""

    def __init__(self, task: Task, record: Record, log: RunLog) -> None:
        self.task, self.record, self.log = task, record, log
        self.executing: list[str] = []

    def begin(self, places: Sequence[int], executing: bool, inputs: Sequence[Mapping[str, str]] = ()) -> None:
        self.executing = [self.task.entries[place].id for place in places] if executing else []

    def finished(self, results: Mapping[int, Result]) -> None:
        for place, result in results.items():
            self.record(self.task.pairs[place], result)

    def runner_died(self, died: RunnerDied) -> None:
        self.log.runner_died(self.task.ep.text, self.executing if died.serving else [], died.lines)


@dataclass(frozen=True)
class Ran:
    """What a run gave: ``results``, entry-major, the unbroken prefix of the pairs planned (all of them unless the run
    was cut short); ``interrupted``: by Ctrl-C; ``stopped``: why it could not go on (workers, or a DirectML runner,
    that would not start); ``runner_deaths``: results.json's record of the DirectML runner's deaths and of workers'
    under a pack, per EP (none: empty), over the ``RunLog``'s life (the run's; a pytest session's)."""

    results: tuple[Result, ...]
    interrupted: bool = False
    stopped: str | None = None
    runner_deaths: tuple[RunnerDeath, ...] = ()


def finished_prefix(done: Mapping[int, Result], planned: int) -> list[Result]:
    """Only the unbroken prefix: a run cut short reports the pairs before the first missing one, as a sequential
    one would, so an interrupted run's results.json never has holes (results.jsonl keeps all, for --resume)."""
    results = []
    for index in range(planned):
        if index not in done:
            break
        results.append(done[index])
    return results


def ran_so_far(
    finished: Mapping[int, Result], planned: int, log: RunLog, interrupted: bool = False, stopped: str | None = None
) -> Ran:
    """The run as far as it got (``finished``: each pair's result as ``log`` judged it), settled by ``log`` (a lost
    device's earlier ``ep_not_started`` relabelled) and with its runner deaths: the one way every exit of a run,
    whole or cut short (Ctrl-C, a full disk), gives what the log learnt."""
    results = [log.settled(result) for result in finished_prefix(finished, planned)]
    return Ran(tuple(results), interrupted, stopped, log.runner_deaths())


def run_pairs(
    entries: Sequence[Entry],
    eps: Sequence[EpSpec],
    options: RunOptions,
    jobs: int,
    advance: Callable[[], None],
    supervisor: Supervisor | None = None,
    *,
    done: Mapping[int, Result] | None = None,
    record: Record | None = None,
    log: RunLog | None = None,
) -> Ran:
    """Every (entry, EP) result, entry-major as a sequential run orders them; ``advance`` and ``record`` after each
    one. ``done``: pairs already finished (--resume), not run again. With ``jobs`` >= 1 the tasks run on
    ``supervisor`` where given (the caller closes it, and chose its timeout), else on one started here with the
    default timeout. ``jobs`` 0: in this process, unprotected (``--in-process``, ``-j 0``). ``log``: what the run
    learns (a pytest session runs its cases one call each), which the caller keeps where an exception it does not
    catch here (a full disk's, in ``record``) may end the run (``ran_so_far``); a new one where not given."""
    finished = dict(done or {})
    log = log if log is not None else RunLog()
    log.seen(finished.values())
    arrived = _arrival(finished, log, record, advance)
    options = _threaded(options, jobs)
    tasks = tasks_for(entries, eps, options, finished)

    def run() -> None:
        if jobs < 1:
            _in_process(tasks, options, arrived, log)
        elif supervisor is not None:
            supervisor.run(tasks, options, arrived, log.runner_died)
        else:
            with Supervisor(jobs, DEFAULT_TIMEOUT) as own:
                own.run(tasks, options, arrived, log.runner_died)

    return _ran(run, finished, lambda: len(entries) * len(eps), log)


def _threaded(options: RunOptions, jobs: int) -> RunOptions:
    """``options`` for ``jobs`` workers: where more than one shares the cores, each case's intra-op threads their
    share, unless the options set them."""
    if jobs > 1 and options.threads is None:
        return replace(options, threads=cores_share(jobs))
    return options


def _arrival(finished: dict[int, Result], log: RunLog, record: Record | None, advance: Callable[[], None]) -> Record:
    """What is done with each result as it arrives: judged by the run's log, kept, recorded, counted."""

    def arrived(pair: int, result: Result) -> None:
        finished[pair] = result = log.judged(result)
        if record is not None:
            record(pair, result)
        advance()

    return arrived


def _ran(run: Callable[[], None], finished: Mapping[int, Result], planned: Callable[[], int], log: RunLog) -> Ran:
    """``run`` to its end, or as far as it got: a Ctrl-C, or workers (or a runner) that could not go on, end it with
    what finished, which the caller writes (and the run fails)."""
    interrupted, stopped = False, None
    try:
        run()
    except KeyboardInterrupt:  # the caller says the run was interrupted, with what finished
        interrupted = True
    except (RunStopped, InfrastructureError) as error:  # as interrupted: what finished is written, and the run fails
        stopped = str(error)
    return ran_so_far(finished, planned(), log, interrupted, stopped)


class Arriving(Protocol):
    """Entries that come while the run goes on: the cases of the case files read meanwhile (cli/run_stream.py)."""

    def take(self) -> Sequence[Entry] | None:
        """The entries that came since the last take, in the run's order (none yet: empty); None once every entry
        has come and been taken."""
        ...


def run_arriving(
    arriving: Arriving,
    eps: Sequence[EpSpec],
    options: RunOptions,
    supervisor: Supervisor,
    advance: Callable[[], None],
    record: Record,
    log: RunLog,
) -> Ran:
    """As ``run_pairs`` on ``supervisor``'s workers, each entry's windows given to them as the entry comes (so that
    the workers start with the first case file's cases)."""
    entries: list[Entry] = []
    finished: dict[int, Result] = {}
    arrived = _arrival(finished, log, record, advance)

    def more() -> list[Task] | None:
        came = arriving.take()
        if came is None:
            return None
        first = len(entries)
        entries.extend(came)
        return tasks_for(entries, eps, options, (), first)

    options = _threaded(options, supervisor.jobs)

    def run() -> None:
        supervisor.run([], options, arrived, log.runner_died, more)

    return _ran(run, finished, lambda: len(entries) * len(eps), log)


def _in_process(tasks: Sequence[Task], options: RunOptions, arrived: Record, log: RunLog) -> None:
    """The tasks in this process (-j 0), on one DirectML runner (per build) for all of them."""
    runners = Runners(limit=options.case_timeout)
    try:
        for task in tasks:
            watch = _InProcess(task, arrived, log)
            runners.on_death = watch.runner_died
            run_batch(task.entries, task.ep, options, Sessions(runners=runners), watch)
    finally:
        runners.close()
