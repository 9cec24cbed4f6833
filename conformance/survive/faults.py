"""Faults of the process running a case: what a CRASH, TIMEOUT or DEVICE_LOST result says, what a run learns of its
EPs' health across cases (``RunLog``), and how a test provokes a fault in a real worker.

A worker (worker.py) that dies is a CRASH, one silent past the per-case timeout a TIMEOUT, and either is a
DEVICE_LOST when what it last wrote to stderr, or the error onnxruntime raised, says the device was lost: a GPU
reset (Windows TDR), removed or hung device, or a CUDA context left unusable by a fault on the device.

A device can also go without a word: a GPU removed, its driver's files gone, its X server stopped; the EP then
cannot create a session, which alone reads as an EP that never started (NOT_SUPPORTED ``ep_not_started``, which
the gate fails only when the EP executed nothing). ``RunLog`` decides it, in the one process that sees every result
of a run (the CLI's, or pytest's, whatever the workers): an EP that executed a case anywhere in the run and later
cannot create a session has lost its device, and from that case on its results are DEVICE_LOST, saying so. It also
counts per EP the DirectML runner's deaths (worker.py reports them) and workers' under a pack (supervisor.py), telling
those under a pack apart, which results.json records (environment.RunnerDeath).
"""

from __future__ import annotations

import os
import signal
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from conformance.environment import RunnerDeath
from conformance.ep.errors import device_lost
from conformance.ep.rules import not_started_cause
from conformance.ep.wine.client import Runner, Runners
from conformance.model import FAULT_KINDS, Status
from conformance.results import EXECUTED, Result, ep_not_started

FATAL = "Fatal Python error:"  # how faulthandler's dump on a fatal signal begins
STDERR_LINES = 12  # the last lines of a dead worker's stderr that its result keeps
TEST_FAULT = "DMLCONF_TEST_FAULT"  # tests only: "KIND:TEXT" provokes KIND in the worker running a case id with TEXT
TEST_UNPLUG = "DMLCONF_TEST_UNPLUG"  # tests only: the file ``unplug`` removes (a copy of the Vulkan driver's, say)
TEST_ONCE = "DMLCONF_TEST_ONCE"  # tests only: the file a ``*_once`` fault removes, so that it happens once in a run
JUDGING_SECONDS = 3.0  # tests only: how long ``slow_judging`` takes


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def how_it_ended(exitcode: int | None) -> str:
    """A worker's end in words: "was killed by SIGSEGV", "exited with status 3"."""
    if exitcode is None:
        return "is still running"
    if exitcode < 0:
        return f"was killed by {signal_name(-exitcode)}"
    return f"exited with status {exitcode}"


def telling_lines(stderr: str, count: int = STDERR_LINES) -> list[str]:
    """The lines of a dead worker's stderr worth keeping. Where faulthandler dumped the stack of a fatal signal
    ("Fatal Python error: ..."), the lines just before it (the driver's or onnxruntime's last words) and the top
    of the stack (the frames nearest the fault), not the stack's bottom (multiprocessing's bootstrap)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    fatal = max((i for i, line in enumerate(lines) if line.startswith(FATAL)), default=None)
    if fatal is None:
        return lines[-count:]
    before = lines[max(0, fatal - count // 3) : fatal]
    return before + lines[fatal : fatal + count - len(before)]


def fault_result(base: Result, status: Status, what: str, stderr: str, seconds: float) -> Result:
    """``base`` (the case's fields known before running) as a CRASH or TIMEOUT, DEVICE_LOST where its stderr says
    so (anywhere in the tail read: the stack dump of the abort that follows may be longer than the lines kept)."""
    lines = telling_lines(stderr)
    if device_lost(stderr):
        status = Status.DEVICE_LOST
    tail = ["last lines of the worker's stderr:", *(f"  {line}" for line in lines)] if lines else []
    message = "\n".join([what, *tail])
    return replace(base, status=status, failure_kind=FAULT_KINDS[status], message=message, seconds=round(seconds, 6))


def device_gone(result: Result, executed: int, before: bool = True) -> Result:
    """``result`` (NOT_SUPPORTED ``ep_not_started``) of an EP that executed ``executed`` cases in the run: DEVICE_LOST,
    saying so and why it could not (the EP's own error)."""
    when = "before" if before else "elsewhere in this run"
    message = (
        f"the EP executed {executed} case(s) {when}; from this case on it could not create a session: "
        f"{not_started_cause(result.message)}"
    )
    return replace(result, status=Status.DEVICE_LOST, failure_kind=FAULT_KINDS[Status.DEVICE_LOST], message=message)


@dataclass
class _Deaths:
    """One EP's deaths as they are told (environment.RunnerDeath says what each field means)."""

    count: int = 0
    packs: list[frozenset[str]] = field(default_factory=list)  # the cases in flight at each death under a pack
    cases: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)


class RunLog:
    """What a run learns across its results, in the process that receives them all (see the module's docstring):
    how many cases each EP executed, and each EP's runner deaths. One per run (the CLI's), or per session (pytest)."""

    def __init__(self) -> None:
        self.executed: Counter[str] = Counter()
        self.deaths: dict[str, _Deaths] = {}
        # Each EP's cases whose result is a fault (CRASH, TIMEOUT, DEVICE_LOST): a pack's death that one of them
        # stands for (its case, run again alone, died again) is that result's, waivable as the case is.
        self.faulted: dict[str, set[str]] = {}

    def seen(self, results: Iterable[Result]) -> None:
        """Results of this run that are already recorded (``--resume``): their executions count."""
        for result in results:
            self.executed[result.ep] += result.status in EXECUTED
            if result.status in FAULT_KINDS:
                self.faulted.setdefault(result.ep, set()).add(result.case)

    def judged(self, result: Result) -> Result:
        """``result`` as the run records it: an ``ep_not_started`` of an EP that executed cases before is
        DEVICE_LOST."""
        if ep_not_started(result) and self.executed[result.ep]:
            result = device_gone(result, self.executed[result.ep])
        self.seen([result])
        return result

    def settled(self, result: Result) -> Result:
        """At the end of a run: an ``ep_not_started`` that came before its EP's first execution arrived (another
        worker's) is DEVICE_LOST too, since the EP executed cases in the run."""
        if ep_not_started(result) and self.executed[result.ep]:
            return device_gone(result, self.executed[result.ep], before=False)
        return result

    def runner_died(self, ep: str, cases: Sequence[str], stderr: Sequence[str]) -> None:
        """A death of the process serving ``ep``'s cases: the DirectML runner's (``cases``: the cases it was serving,
        none between requests or at a start), or a worker's under a pack. Serving more than one case it was a
        pack's, whose cases each run again alone: unless one of them faults again alone, no result stands for it
        (runner_deaths, environment.RunnerDeath)."""
        deaths = self.deaths.setdefault(ep, _Deaths())
        deaths.count += 1
        if len(cases) > 1:
            deaths.packs.append(frozenset(cases))
        deaths.cases = list(dict.fromkeys([*deaths.cases, *cases]))  # a case in flight at two deaths is named once
        deaths.stderr = list(stderr)

    def runner_deaths(self) -> tuple[RunnerDeath, ...]:
        """results.json's ``runner_deaths``: one record per EP whose runner died, in the order they first did. A
        death under a pack counts in ``in_packs`` only where none of the pack's cases got a fault result of its own
        (run again alone, each passed or failed without dying): the crash no result stands for. Asked at the end of
        the run, since the cases run alone after their pack's death."""
        records = []
        for ep, d in self.deaths.items():
            faulted = self.faulted.get(ep, set())
            in_packs = sum(1 for pack in d.packs if not pack & faulted)
            records.append(RunnerDeath(ep, d.count, in_packs, tuple(d.cases), tuple(d.stderr)))
        return tuple(records)


def _test_fault() -> tuple[str, str]:
    """``DMLCONF_TEST_FAULT``'s KIND and TEXT; empty where it is not set."""
    kind, _, text = (os.environ.get(TEST_FAULT) or "").partition(":")
    return kind, text


def provoke_at_start() -> None:
    """Tests only: ``DMLCONF_TEST_FAULT=start:`` makes every worker die by SIGSEGV before it says it is ready."""
    if _test_fault()[0] == "start":
        os.kill(os.getpid(), signal.SIGSEGV)


def provoke(
    case_ids: Sequence[str], runners: Runners | None = None, judging: bool = False, preparing: bool = False
) -> None:
    """Tests only (``DMLCONF_TEST_FAULT``, read by a worker before it runs a session): make this worker die by a
    signal (``segv``, ``abort``; ``segv_in_pack`` only while it serves a pack of several cases), hang (``hang``) or
    report a lost device and die (``device_lost``) when a case id contains the text after the colon; or, for
    DirectML (its default build), kill its runner while it serves the case's first request (``runner_dies``), or
    take the device away (``unplug``: remove the file that ``DMLCONF_TEST_UNPLUG`` names, the Vulkan driver's or the
    Wine loader's, then kill the runner, so that the next one starts without it). ``judging`` (read once the EP
    answered, as the harness starts judging): hang there (``hang_judging``), or take JUDGING_SECONDS over it
    (``slow_judging``), as a harness's own slow work would; ``preparing`` (read as the harness starts preparing the
    case, before its inputs): die (``segv_preparing``) or hang (``hang_preparing``) there. A kind ending ``_once``
    (``segv_once``) happens the first time only, in whichever worker removes the file ``DMLCONF_TEST_ONCE`` names: a
    flaky fault, for --rerun-failures. Everything after it is the production path."""
    kind, text = _test_fault()
    if not kind or not any(text in case_id for case_id in case_ids):
        return
    once = kind.endswith("_once")
    kind = kind.removesuffix("_once")
    if judging != kind.endswith("_judging") or preparing != kind.endswith("_preparing"):
        return  # another stage's fault: a _once one is not spent here
    if once:
        try:
            os.remove(os.environ[TEST_ONCE])
        except FileNotFoundError:  # it happened already
            return
    kind = kind.removesuffix("_preparing")
    if kind == "slow_judging":
        time.sleep(JUDGING_SECONDS)
    if kind == "hang_judging":
        kind = "hang"
    if kind == "segv_in_pack":  # a crash that packing alone causes: the case, run again alone, does not die
        kind = "segv" if len(case_ids) > 1 else ""
    if kind == "hang":
        while True:
            time.sleep(3600)
    if kind == "device_lost":
        os.write(2, b"D3D12: Removing Device. DXGI_ERROR_DEVICE_REMOVED (0x887A0005)\n")
        os.abort()
    if kind in ("segv", "abort"):
        os.kill(os.getpid(), signal.SIGSEGV if kind == "segv" else signal.SIGABRT)
    if kind == "unplug":
        os.remove(os.environ[TEST_UNPLUG])
        for runner in runners.held() if runners is not None else []:
            runner.kill()
    if kind == "runner_dies" and runners is not None:
        _kill_on_request(runners.get())  # the runner of DirectML's default build, started where it is not yet


def _kill_on_request(runner: Runner) -> None:
    """Freeze the runner (SIGSTOP), then kill it (SIGKILL) once the harness's next request is in its pipe: a runner
    that dies while it serves a request, for real, however fast the machine is. POSIX only, as the runner is."""
    import fcntl
    import termios

    os.kill(runner.pid, signal.SIGSTOP)

    def kill_once_asked() -> None:
        waiting = bytearray(4)  # the bytes in the pipe, by FIONREAD
        try:
            while not (fcntl.ioctl(runner.request_fd, termios.FIONREAD, waiting) or struct.unpack("<i", waiting)[0]):
                time.sleep(0.01)
        except OSError:  # the pipe is closed: the runner was stopped
            return
        os.kill(runner.pid, signal.SIGKILL)

    threading.Thread(target=kill_once_asked, name="test-runner-kill", daemon=True).start()
