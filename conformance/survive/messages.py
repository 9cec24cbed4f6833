"""What a supervisor and its workers say to each other over their pipe: one frozen dataclass per kind of message.

Each crosses the pipe pickled, as it is. A receiver handles them with ``match`` over ``ToWorker`` or ``FromWorker``
and ``assert_never`` after the last kind, so that a kind added here and forgotten there is mypy's error, not a
message dropped at run time.

To a worker (supervisor.py sends, worker.py handles): ``RunTask``, then, once no more tasks are to come, ``Stop``.

From a worker (worker.py sends, supervisor.py handles): ``Ready`` once imported; where the supervisor asked it to
describe DirectML, ``DirectMLDescribed`` once, before its first task (early.py). Per task, numbered as ``RunTask``
numbered it: ``Began`` before each session runs (``Phase.EXECUTING``; several places for a pack, and the hashes of
their inputs); ``PhaseChanged`` once the EP answered and the harness judges what it returned (``Phase.JUDGING``);
``Finished`` as results are final (a pack's clean PASSes in one message);
``RunnerDeathTold`` for each DirectML runner that ended unasked; ``CannotRun`` where cases cannot run at all (the
runner fails to start again and again), which stops the run; else ``MemoryPeak``, then ``TaskFinished``. The
supervisor thus knows, when the worker dies or hangs, which cases were in flight, which results are already safe,
and which side it waited for: the EP's answer, or the harness's own work (``Phase``).

One thing goes without a message: which case the worker prepares (``Phase.PREPARING``: its inputs, the oracle, the
lowering), written on a ``Board`` the two share. A message per case prepared was half of the messages of a run of
small cases, and the one process that reads them all was what kept -j 8 from running 8 times as fast. The board
counts the preparations begun, and ``Began`` and ``PhaseChanged`` carry that count as it was when they were sent,
so the supervisor tells which is newer: a message about a session, or a preparation begun after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the supervisor's side stays as light as it was
    from conformance.cases.parse import Entry
    from conformance.ep.directml import DirectML
    from conformance.ep.providers import EpSpec
    from conformance.results import Result
    from conformance.run.options import RunOptions


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

    @property
    def waited_for(self) -> str:
        """What a TIMEOUT says the worker was doing when it was killed in this phase: which side it waited for."""
        return _WAITED_FOR[self]


_WAITED_FOR = {
    Phase.PREPARING: "while the harness prepared it (its own work: the inputs, the oracle, the lowering; not the EP's)",
    Phase.EXECUTING: "while the EP executed it (the harness waited for the EP's answer)",
    Phase.JUDGING: "while the harness judged the EP's answer (its own work after the EP answered: the compare, the "
    "canary check; not the EP's)",
}


# -- to a worker ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunTask:
    """Run ``entries`` on ``ep`` under ``options``: the supervisor's ``task``-th task, as the worker's messages about
    it say."""

    task: int
    entries: tuple[Entry, ...]
    ep: EpSpec
    options: RunOptions


@dataclass(frozen=True)
class Stop:
    """No more tasks: the worker stops its runners and exits."""


ToWorker = RunTask | Stop


# -- from a worker ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ready:
    """The worker is imported and takes tasks (where it describes DirectML, its start ends with that)."""


@dataclass(frozen=True)
class DirectMLDescribed:
    """Each DirectML EP's DirectML by its ``--ep`` text, as the worker's runner's device answered; or, where
    ``directml`` is None, ``why`` (one line) it could not be described."""

    directml: dict[str, DirectML] | None
    why: str | None


@dataclass(frozen=True)
class Began:
    """The task's ``places`` (one case, or a pack) are in flight, in ``phase`` (EXECUTING); ``inputs``: the hashes of
    their inputs, place by place; ``prepared``: the preparations the worker had begun when it sent this (``Board``)."""

    task: int
    places: tuple[int, ...]
    phase: Phase
    inputs: tuple[Mapping[str, str], ...]
    prepared: int


@dataclass(frozen=True)
class PhaseChanged:
    """The places in flight are now in ``phase`` (JUDGING: the EP answered); ``prepared`` as in ``Began``."""

    task: int
    phase: Phase
    prepared: int


@dataclass(frozen=True)
class Finished:
    """The results of the task's cases at ``places``, final (one each)."""

    task: int
    places: tuple[int, ...]
    results: tuple[Result, ...]


class Board:
    """Which case a worker prepares, shared with its supervisor without a message (the module's docstring): one
    process-shared 64-bit word holding the preparations begun (high half) and the place of the last (low half),
    so that one aligned store writes both and one load reads both. The worker alone writes it."""

    def __init__(self, shared: Any) -> None:
        self.shared = shared  # multiprocessing's RawValue("q") of the supervisor's context

    def begin(self, place: int) -> None:
        self.shared.value = (self.begun + 1) << 32 | place

    @property
    def begun(self) -> int:
        """The preparations begun (2**31 of them, the most the high half holds, would take a worker years)."""
        return int(self.shared.value) >> 32

    def last(self) -> tuple[int, int]:
        """(preparations begun, the place of the last), read as one."""
        word = int(self.shared.value)
        return word >> 32, word & 0xFFFFFFFF


@dataclass(frozen=True)
class TaskFinished:
    """Every case of the task has its result."""

    task: int


@dataclass(frozen=True)
class MemoryPeak:
    """The worker's peak resident memory so far (KiB), and its DirectML runners' (KiB, how many runners)."""

    task: int
    own_kib: int
    runners_kib: int
    runners: int


@dataclass(frozen=True)
class RunnerDeathTold:
    """A DirectML runner serving ``ep`` (its ``--ep`` text) ended unasked: the full ids of the cases it was serving
    (none where it died between requests or at its start) and the last lines of its stderr."""

    task: int
    ep: str
    cases: tuple[str, ...]
    stderr: tuple[str, ...]


@dataclass(frozen=True)
class CannotRun:
    """Cases cannot run at all (``why``, one line): the run stops."""

    task: int
    why: str


TaskMessage = Began | PhaseChanged | Finished | TaskFinished | MemoryPeak | RunnerDeathTold | CannotRun
FromWorker = Ready | DirectMLDescribed | TaskMessage
