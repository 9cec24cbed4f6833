"""The runner process (dmlrunner.exe, under Wine or natively on Windows) seen from the harness: started once per
process that runs cases, asked to describe the device, open sessions, run them and close them (protocol.py says the
bytes).

Starting Wine and a D3D12 device costs about 1.3 s, a session 30-100 ms, a run milliseconds: so one runner serves a
worker's whole share of a run (``Runners``), and sessions are opened and closed in it as the in-process EPs' are.

The runner's stderr (Wine's, vkd3d-proton's, onnxruntime's and the driver's words) is copied to this process's
stderr as it comes, which in a worker is the file its supervisor reads when it dies, and its last lines are kept:
a runner that dies is a ``RunnerDied`` saying how it ended and what it last wrote, which the case's verdict turns
into a CRASH (or DEVICE_LOST, where those lines say so). Every wait on it is bounded: a runner that gives no answer
within the limit (``--case-timeout``) is killed, a ``RunnerHung`` (the case's TIMEOUT); its start within
START_SECONDS. A runner is dead when its process is, and also when only its main thread is: with wineserver killed,
the runner's main thread ends while its other threads (the Vulkan driver's) wait for good, so the process never
exits and its pipes never close; the wait watches the process itself, and kills what is left of such a runner.
The runner is killed with its worker (Linux's parent-death signal).

On Windows (the native chain) select() waits on sockets only, not pipes: there a thread reads the runner's output as
it comes (``_Pumped``) and the waits are on it; a request is written whole before its answer is waited for (the
runner reads each request to its end before it acts on it).

Every runner that ends unasked (dies, is killed for a hang, fails to start, or is found dead) is told to
``on_death`` once, so that a run records it; a runner that fails to start START_ATTEMPTS times in a row is a
``RunnerStartFailed``, which stops the run: that is the machine's fault (a broken Wine prefix), not the cases'.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import json
import logging
import os
import queue
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from conformance.ep.directml import NEWEST_BUILD, Build
from conformance.ep.errors import InfrastructureError, ProcessDied, ProcessHung
from conformance.ep.wine import protocol
from conformance.ep.wine.chain import RunnerChain, find_chain
from conformance.ep.wine.protocol import Array

log = logging.getLogger(__name__)

START_SECONDS = 180.0  # Wine's first start in a fresh prefix and a D3D12 device on lavapipe take seconds, not minutes
START_ATTEMPTS = 3  # starts failed in a row before the runner is given up (RunnerStartFailed)
STDERR_LINES = 40
DEATH_LINES = 12  # the last lines of its stderr a dead runner's message keeps
POLL_SECONDS = 0.5  # how often a wait on the runner looks whether its process is still there
KILL_WAIT = 10.0  # seconds to wait for a killed runner to be gone; one stuck in the kernel (a driver call) is left
_PR_SET_PDEATHSIG = 1
SELECTABLE_PIPES = sys.platform != "win32"  # select() waits on pipes (else _Pumped reads them)


class RunnerDied(ProcessDied):
    """The runner process ended (or closed its pipe) while the harness waited on it: how it ended, its last words.
    ``lines``: those last lines of its stderr; ``serving``: it died on a request (the cases in flight may have
    caused it), not while starting or between requests."""

    def __init__(self, message: str, lines: Sequence[str] = (), serving: bool = True) -> None:
        super().__init__(message)
        self.lines = tuple(lines)
        self.serving = serving


class RunnerHung(RunnerDied, ProcessHung):
    """The runner gave no answer within the limit and was killed (the case's TIMEOUT)."""


class RunnerStartFailed(InfrastructureError):
    """The runner failed to start START_ATTEMPTS times in a row: nothing can run on this build (one line)."""


Deaths = Callable[[RunnerDied], None]  # told of each runner that ended unasked


_PRCTL: list[Any] = []  # libc's prctl, found in the parent: the child between fork and exec only calls it


def _found_prctl() -> None:
    """prctl looked up before any fork: a dlopen in the child could wait for ever on the loader's lock, held at the
    fork by another thread of the parent (a worker's imports run beside its runner's start: survive/early.py)."""
    if sys.platform.startswith("linux") and not _PRCTL:
        _PRCTL.append(ctypes.CDLL(None, use_errno=True).prctl)


def _die_with_parent() -> None:
    """In the runner's child process before exec: killed when the thread that started it ends, with its process (a
    worker killed for a hang must not leave a runner holding the device)."""
    if _PRCTL:
        _PRCTL[0](_PR_SET_PDEATHSIG, signal.SIGKILL)


def _how_it_ended(code: int | None) -> str:
    if code is None:
        return "closed its output"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def resident_peak_kib(pid: int) -> int | None:
    """A live process's peak resident memory in KiB (VmHWM: its anonymous, file and shared pages, lavapipe's GPU
    memory among them); None where it cannot be read (the process is gone, or the system has no /proc)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


_STOPPED_PEAKS: list[int] = []  # the peak resident memory (KiB) of each runner this process stopped


def runners_peak(live: Sequence[Runner] = ()) -> tuple[int, int]:
    """(KiB, runners): the peak resident memory of every runner this process stopped and of those ``live``, each
    its own peak, summed (an upper bound on what they held at once), and how many runners that is. A runner runs
    under Wine apart from the harness's processes: their own figures (getrusage, GNU time) never count it."""
    live_peaks = [runner.measured() for runner in live]
    return sum(_STOPPED_PEAKS) + sum(live_peaks), len(_STOPPED_PEAKS) + len(live_peaks)


def main_thread_ended(pid: int) -> bool:
    """Whether the process's main thread has ended while others live on (Linux: its /proc state is Z, zombie, or X);
    False where that cannot be read (another system, or the process is gone altogether)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            state = stat.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state in (b"Z", b"X")


def _waiting(serving: bool) -> str:
    return "while the harness waited for its answer" if serving else "while the harness waited for it to start"


def _copy_stderr(stream: IO[bytes] | None, tail: collections.deque[str]) -> None:
    """The runner's stderr to ours as it comes (in a worker, the file its supervisor reads), its last lines kept."""
    assert stream is not None
    for raw in iter(stream.readline, b""):
        tail.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
        with contextlib.suppress(OSError):  # nowhere to copy to: the tail is still kept
            os.write(2, raw)


class _Pumped:
    """The runner's output read by a thread as it comes, where select() cannot wait on a pipe (Windows): ``take``
    waits for it within a time. The thread holds the stream and the queue, not the Runner (which must be collected
    when nobody holds it)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._chunks: queue.Queue[bytes] = queue.Queue()
        self._pending = b""
        self._ended = False
        threading.Thread(target=self._pump, args=(stream, self._chunks), name="dmlrunner-stdout", daemon=True).start()

    @staticmethod
    def _pump(stream: IO[bytes], chunks: queue.Queue[bytes]) -> None:
        """Every chunk of ``stream`` into ``chunks``, then b"" for its end (or for a stream closed under it)."""
        with contextlib.suppress(OSError, ValueError):
            for chunk in iter(lambda: os.read(stream.fileno(), 1 << 16), b""):
                chunks.put(chunk)
        chunks.put(b"")

    def take(self, size: int, seconds: float) -> bytes | None:
        """Up to ``size`` bytes; b"" once the output has ended; None where nothing came within ``seconds``."""
        if not self._pending and not self._ended:
            try:
                self._pending = self._chunks.get(timeout=seconds)
            except queue.Empty:
                return None
            self._ended = not self._pending
        taken, self._pending = self._pending[:size], self._pending[size:]
        return taken


class Runner:
    """One dmlrunner.exe process. Not thread-safe: one request at a time. ``limit``: seconds to wait for an answer
    to a request (None: no limit); ``on_death``: told when it ends unasked (once)."""

    peak_kib = 0  # its peak resident memory as last read (measured): kept once the process is gone

    def __init__(
        self,
        chain: RunnerChain,
        start_seconds: float = START_SECONDS,
        limit: float | None = None,
        on_death: Deaths | None = None,
    ) -> None:
        self.chain, self.limit, self.on_death = chain, limit, on_death
        self.told = False  # its death was told to on_death
        self._tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._closing: list[int] = []  # sessions whose owners are gone, closed before the next request
        started = time.perf_counter()
        _found_prctl()
        self._process = subprocess.Popen(
            chain.command(),
            cwd=chain.folder,
            env=chain.environment(os.environ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent if sys.platform != "win32" else None,  # Windows has no preexec_fn
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin: IO[bytes] = self._process.stdin
        self._stdout: IO[bytes] = self._process.stdout
        self._pumped = None if SELECTABLE_PIPES else _Pumped(self._stdout)
        if SELECTABLE_PIPES:  # a write to a runner that is gone must not block for good
            os.set_blocking(self._stdin.fileno(), False)
        # A Runner nobody holds closes the runner's input, which ends it: its Popen would keep the pipe open (a
        # dropped Popen still running stays in subprocess's list to be reaped).
        weakref.finalize(self, self._stdin.close)
        # The thread holds the stream and the tail, not this object, so that a Runner nobody holds is collected.
        self._drain = threading.Thread(
            target=_copy_stderr, args=(self._process.stderr, self._tail), name="dmlrunner-stderr", daemon=True
        )
        self._drain.start()
        try:
            self.onnxruntime = protocol.checked(self._reply(start_seconds, serving=False)).text()
        except (protocol.ProtocolError, protocol.Refused) as error:  # it answered, but not as a runner starts
            self._process.kill()
            raise self.died(f"after a first answer that was not its start ({error})", serving=False) from None
        self.start_seconds = time.perf_counter() - started

    @property
    def alive(self) -> bool:
        return self._process.poll() is None and not main_thread_ended(self._process.pid)

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def request_fd(self) -> int:
        """The pipe its requests go down (tests watch it to kill a runner while it serves one: faults.py)."""
        return self._stdin.fileno()

    def last_words(self) -> list[str]:
        return [line for line in self._tail if line.strip()]

    def died(self, what: str, serving: bool = True, hung: bool = False) -> RunnerDied:
        """The error saying how it ended and its last words, told to ``on_death`` (the first time). A runner whose
        main thread ended while others live on is killed, and said so."""
        pid, headless = self._process.pid, False
        try:  # a process that is exiting has a moment to end (its main thread goes first); a headless one has not
            code = self._process.wait(timeout=1.0 if main_thread_ended(pid) else 5.0)
        except subprocess.TimeoutExpired:  # it closed its output but goes on, or lost its main thread: of no use
            headless = main_thread_ended(pid)
            self._process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)
            code = None
        self._drain.join(timeout=2)
        lines = self.last_words()[-DEATH_LINES:]
        tail = ["last lines of its stderr:", *(f"  {line}" for line in lines)] if lines else []
        how = "lost its main thread (the threads left waiting were killed)" if headless else _how_it_ended(code)
        message = "\n".join([f"the DirectML runner (pid {pid}) {how} {what}", *tail])
        error = (RunnerHung if hung else RunnerDied)(message, lines, serving)
        if not self.told:
            self.told = True
            if self.on_death is not None:
                self.on_death(error)
        return error

    def _wait(self, fd: int, writing: bool, deadline: float | None, serving: bool) -> None:
        """Until ``fd`` can be read (or written): RunnerDied where the runner's process ends first (its pipes may
        stay open: see the module's docstring), RunnerHung (killed) where ``deadline`` passes first. ``serving``:
        it was asked a request (else it is starting)."""
        while True:
            left = POLL_SECONDS if deadline is None else min(POLL_SECONDS, deadline - time.monotonic())
            if left <= 0:
                self._process.kill()
                raise self.died("and gave no answer in time (killed)", serving, hung=True)
            ready = select.select([], [fd], [], left)[1] if writing else select.select([fd], [], [], left)[0]
            if ready:
                return
            if not self.alive:
                raise self.died(_waiting(serving), serving)

    def _read(self, size: int, deadline: float | None, serving: bool = True) -> bytearray:
        """``size`` bytes of the runner's output, read into one buffer as they come (a reply carries the case's
        outputs: chunks joined afterwards would hold them twice)."""
        if self._pumped is not None:
            return self._read_pumped(self._pumped, size, deadline, serving)
        data, at = bytearray(size), 0
        view, fd = memoryview(data), self._stdout.fileno()
        while at < size:
            self._wait(fd, False, deadline, serving)
            got = os.readv(fd, [view[at : at + (1 << 24)]])
            if not got:
                raise self.died(_waiting(serving), serving)
            at += got
        return data

    def _read_pumped(self, pumped: _Pumped, size: int, deadline: float | None, serving: bool) -> bytearray:
        """``_read`` where select() cannot wait on the pipe (Windows): the same deaths and hangs, from the pump."""
        data, at = bytearray(size), 0
        while at < size:
            wait = POLL_SECONDS if deadline is None else min(POLL_SECONDS, deadline - time.monotonic())
            if wait <= 0:
                self._process.kill()
                raise self.died("and gave no answer in time (killed)", serving, hung=True)
            chunk = pumped.take(size - at, wait)
            if chunk is None:
                if not self.alive:
                    raise self.died(_waiting(serving), serving)
                continue
            if not chunk:
                raise self.died(_waiting(serving), serving)
            data[at : at + len(chunk)] = chunk
            at += len(chunk)
        return data

    def _reply(self, seconds: float | None = None, serving: bool = True) -> bytearray:
        deadline = None if seconds is None else time.monotonic() + seconds
        (size,) = struct.unpack("<I", self._read(4, deadline, serving))
        return self._read(size, deadline, serving)

    def _send(self, frame: protocol.Frame, deadline: float | None) -> None:
        """The frame's pieces, one after another (protocol.Frame: never joined into one copy)."""
        fd = self._stdin.fileno()
        for piece in frame:
            self._send_piece(memoryview(piece).cast("B"), fd, deadline)

    def _send_piece(self, data: memoryview, fd: int, deadline: float | None) -> None:
        while data and self._pumped is not None:  # a blocking pipe (Windows): written whole
            try:
                data = data[os.write(fd, data) :]
            except OSError:
                raise self.died("before it read a request") from None
        while data:
            self._wait(fd, True, deadline, serving=True)
            try:
                data = data[os.write(fd, data) :]
            except BlockingIOError:
                continue
            except OSError:
                raise self.died("before it read a request") from None

    def request(self, frame: protocol.Frame, seconds: float | None = None) -> bytearray:
        """The reply to ``frame`` (sessions whose owners are gone closed first), within ``seconds`` (default: the
        runner's ``limit``); RunnerDied where there is none, RunnerHung where it did not come in time."""
        limit = self.limit if seconds is None else seconds
        while self._closing:
            session = self._closing.pop()
            self._send(protocol.close_request(session), self._deadline(limit))
            protocol.checked(self._reply(limit))
        self._send(frame, self._deadline(limit))
        return self._reply(limit)

    @staticmethod
    def _deadline(seconds: float | None) -> float | None:
        return None if seconds is None else time.monotonic() + seconds

    def describe(self, adapter: int, seconds: float | None = START_SECONDS) -> dict[str, Any]:
        found = json.loads(protocol.checked(self.request(protocol.describe_request(adapter), seconds)).text())
        if not isinstance(found, dict):
            raise protocol.ProtocolError("describe gave no JSON object")
        return found

    def open(
        self, model: bytes, ep_options: Mapping[str, str], config: Mapping[str, str], level: int, threads: int
    ) -> int:
        """A session's number; protocol.Refused where the EP or onnxruntime refused it."""
        reply = self.request(protocol.open_request(model, ep_options, config, level, threads))
        return protocol.checked(reply).u32()

    def run(self, session: int, feeds: Mapping[str, Array], names: Sequence[str]) -> protocol.RunReply:
        return protocol.read_run(self.request(protocol.run_request(session, feeds, names)))

    def dispatch(self, asked: protocol.DispatchRequest) -> protocol.DispatchReply:
        """A DML operator created (and, unless only that is asked, compiled and dispatched); protocol.Refused where a
        step after the compile failed."""
        return protocol.read_dispatch(self.request(protocol.dispatch_request(asked)), asked.create_only)

    def dispatch_batch(self, batch: Sequence[protocol.DispatchRequest]) -> list[protocol.DispatchReply]:
        """Several DML operators, those that compile dispatched in one command list and waited for once; each one's
        reply in order; protocol.Refused where a step after the compiles failed (for the whole batch)."""
        return protocol.read_dispatch_batch(self.request(protocol.dispatch_batch_request(batch)), batch)

    def release(self, session: int) -> None:
        """Close ``session`` before the next request (safe to call from a finalizer: it only notes the number)."""
        self._closing.append(session)

    def kill(self) -> None:
        """SIGKILL, and wait until it is gone (tests take a device away this way: faults.py), KILL_WAIT at most."""
        self._process.kill()
        self._reaped()

    def measured(self) -> int:
        """Its peak resident memory in KiB, read now where it is still there (the last reading where it is not)."""
        self.peak_kib = max(self.peak_kib, resident_peak_kib(self._process.pid) or 0)
        return self.peak_kib

    def stop(self) -> None:
        """Close its input (the runner exits at the end of it); kill it if it does not."""
        if not self._stdin.closed:  # the first stop: its peak read before it exits (a process's peak is gone with it)
            _STOPPED_PEAKS.append(self.measured())
        with contextlib.suppress(OSError):
            self._stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._reaped()
        self._stdout.close()

    def _reaped(self) -> None:
        """After SIGKILL: wait for the process to be gone, within KILL_WAIT. A process in uninterruptible sleep (a
        driver call that never returns) ignores even SIGKILL: it is left behind, as the supervisor leaves a worker,
        rather than hang the run that waits on it."""
        try:
            self._process.wait(timeout=KILL_WAIT)
        except subprocess.TimeoutExpired:
            log.warning("the DirectML runner (pid %d) did not end after SIGKILL: left behind", self._process.pid)


class Runners:
    """The runners a process uses, one per DirectML build (``--ep dml:directml=...,ort=...``): each build's chain
    found once, its runner started on first use and again after one died (up to START_ATTEMPTS starts in a row);
    ``close`` stops them all. ``limit``: each request's time limit (--case-timeout); ``on_death``: told of each
    runner that ended unasked."""

    def __init__(self, limit: float | None = None, on_death: Deaths | None = None) -> None:
        self._chains: dict[Build, RunnerChain] = {}
        self._runners: dict[Build, Runner] = {}
        self.limit, self.on_death = limit, on_death

    def bound(self, limit: float | None) -> None:
        """Every request from now on, in every runner, within ``limit`` seconds (None: no limit)."""
        self.limit = limit
        for runner in self._runners.values():
            runner.limit = limit

    def chain(self, build: Build = NEWEST_BUILD) -> RunnerChain:
        if build not in self._chains:
            self._chains[build] = find_chain(build=build)
        return self._chains[build]

    def get(self, build: Build = NEWEST_BUILD) -> Runner:
        runner = self._runners.get(build)
        if runner is not None and not runner.alive:  # it died between requests: told, then replaced
            del self._runners[build]
            if not runner.told:
                runner.died("between requests", serving=False)
            runner.stop()
            runner = None
        if runner is None:
            runner = self._runners[build] = self._start(build)
            log.debug("DirectML runner started in %.2f s (onnxruntime %s, DirectML %s)", runner.start_seconds,
                      runner.onnxruntime, build.directml)  # fmt: skip
        return runner

    def _start(self, build: Build) -> Runner:
        """A started runner for ``build``; RunnerStartFailed after START_ATTEMPTS failed starts in a row (each told
        to ``on_death``)."""
        chain = self.chain(build)
        for _ in range(START_ATTEMPTS - 1):
            with contextlib.suppress(RunnerDied):
                return self._started(chain)
        try:
            return self._started(chain)
        except RunnerDied as error:
            first = str(error).splitlines()[0]
            last = f"; its last words: {error.lines[-1].strip()}" if error.lines else ""
            raise RunnerStartFailed(
                f"the DirectML runner (DirectML {build.directml}, onnxruntime.dll {build.onnxruntime}) failed to start "
                f"{START_ATTEMPTS} times in a row ({first}{last}): nothing more can run on it; run dmlconf doctor"
            ) from None

    def _started(self, chain: RunnerChain) -> Runner:
        try:
            return Runner(chain, limit=self.limit, on_death=self._tell)
        except OSError as error:  # the program could not even be started (Wine gone, a folder removed)
            died = RunnerDied(f"the DirectML runner could not be started: {error.strerror or error}", (), False)
        self._tell(died)
        raise died

    def _tell(self, died: RunnerDied) -> None:
        """A runner's death to whoever is ``on_death`` now (a worker's task of the moment)."""
        if self.on_death is not None:
            self.on_death(died)

    def held(self) -> list[Runner]:
        """The runners started and not yet found dead."""
        return list(self._runners.values())

    def close(self) -> None:
        for runner in self._runners.values():
            runner.stop()
        self._runners.clear()
