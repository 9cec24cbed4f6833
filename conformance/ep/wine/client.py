"""The runner process (dmlrunner.exe under Wine) seen from the harness: started once per process that runs cases, asked
to describe the device, open sessions, run them and close them (protocol.py says the bytes).

Starting Wine and a D3D12 device costs about 1.3 s, a session 30-100 ms, a run milliseconds: so one runner serves a
worker's whole share of a run (``Runners``), and sessions are opened and closed in it as the in-process EPs' are.

The runner's stderr (Wine's, vkd3d-proton's, onnxruntime's and the driver's words) is copied to this process's
stderr as it comes, which in a worker is the file its supervisor reads when it dies, and its last lines are kept:
a runner that dies is a ``RunnerDied`` saying how it ended and what it last wrote, which the case's verdict turns
into a CRASH (or DEVICE_LOST, where those lines say so). A runner that hangs hangs its worker, whose supervisor
times the case out; the runner is killed with its worker (Linux's parent-death signal).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import json
import logging
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from typing import IO, Any

from conformance.ep.directml import NEWEST_BUILD, Build
from conformance.ep.errors import ProcessDied
from conformance.ep.wine import protocol
from conformance.ep.wine.chain import Chain, find_chain
from conformance.ep.wine.protocol import Array

log = logging.getLogger(__name__)

START_SECONDS = 180.0  # Wine's first start in a fresh prefix and a D3D12 device on lavapipe take seconds, not minutes
STDERR_LINES = 40
_PR_SET_PDEATHSIG = 1


class RunnerDied(ProcessDied):
    """The runner process ended (or closed its pipe) while the harness waited on it: how it ended, its last words."""


def _die_with_parent() -> None:
    """In the runner's child process before exec: killed when the process that started it dies (a worker killed for
    a hang must not leave a runner holding the device)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _how_it_ended(code: int | None) -> str:
    if code is None:
        return "closed its output"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _copy_stderr(stream: IO[bytes] | None, tail: collections.deque[str]) -> None:
    """The runner's stderr to ours as it comes (in a worker, the file its supervisor reads), its last lines kept."""
    assert stream is not None
    for raw in iter(stream.readline, b""):
        tail.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
        with contextlib.suppress(OSError):  # nowhere to copy to: the tail is still kept
            os.write(2, raw)


class Runner:
    """One dmlrunner.exe process. Not thread-safe: one request at a time."""

    def __init__(self, chain: Chain, start_seconds: float = START_SECONDS) -> None:
        self.chain = chain
        self._tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._closing: list[int] = []  # sessions whose owners are gone, closed before the next request
        started = time.perf_counter()
        self._process = subprocess.Popen(
            chain.command(),
            cwd=chain.folder,
            env=chain.environment(os.environ),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent,
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin: IO[bytes] = self._process.stdin
        self._stdout: IO[bytes] = self._process.stdout
        # A Runner nobody holds closes the runner's input, which ends it: its Popen would keep the pipe open (a
        # dropped Popen still running stays in subprocess's list to be reaped).
        weakref.finalize(self, self._stdin.close)
        # The thread holds the stream and the tail, not this object, so that a Runner nobody holds is collected.
        self._drain = threading.Thread(
            target=_copy_stderr, args=(self._process.stderr, self._tail), name="dmlrunner-stderr", daemon=True
        )
        self._drain.start()
        self.onnxruntime = protocol.checked(self._reply(start_seconds)).text()
        self.start_seconds = time.perf_counter() - started

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def last_words(self) -> list[str]:
        return [line for line in self._tail if line.strip()]

    def _died(self, what: str) -> RunnerDied:
        try:
            code = self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        self._drain.join(timeout=2)
        lines = self.last_words()[-12:]
        tail = ["last lines of its stderr:", *(f"  {line}" for line in lines)] if lines else []
        pid = self._process.pid
        return RunnerDied("\n".join([f"the DirectML runner (pid {pid}) {_how_it_ended(code)} {what}", *tail]))

    def _read(self, size: int, deadline: float | None) -> bytes:
        chunks, left = [], size
        fd = self._stdout.fileno()
        while left:
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                    self._process.kill()
                    raise self._died("and gave no answer in time (killed)")
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                raise self._died("while the harness waited for its answer")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _reply(self, seconds: float | None = None) -> bytes:
        deadline = None if seconds is None else time.monotonic() + seconds
        (size,) = struct.unpack("<I", self._read(4, deadline))
        return self._read(size, deadline)

    def _send(self, frame: bytes) -> None:
        try:
            self._stdin.write(frame)
            self._stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died("before it read a request") from None

    def request(self, frame: bytes, seconds: float | None = None) -> bytes:
        """The reply to ``frame`` (sessions whose owners are gone closed first); RunnerDied where there is none."""
        while self._closing:
            session = self._closing.pop()
            self._send(protocol.close_request(session))
            protocol.checked(self._reply(seconds))
        self._send(frame)
        return self._reply(seconds)

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

    def release(self, session: int) -> None:
        """Close ``session`` before the next request (safe to call from a finalizer: it only notes the number)."""
        self._closing.append(session)

    def stop(self) -> None:
        """Close its input (the runner exits at the end of it); kill it if it does not."""
        with contextlib.suppress(OSError):
            self._stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._stdout.close()


class Runners:
    """The runners a process uses, one per DirectML build (``--ep dml:directml=...,ort=...``): each build's chain
    found once, its runner started on first use and again after one died; ``close`` stops them all."""

    def __init__(self) -> None:
        self._chains: dict[Build, Chain] = {}
        self._runners: dict[Build, Runner] = {}

    def chain(self, build: Build = NEWEST_BUILD) -> Chain:
        if build not in self._chains:
            self._chains[build] = find_chain(build=build)
        return self._chains[build]

    def get(self, build: Build = NEWEST_BUILD) -> Runner:
        runner = self._runners.get(build)
        if runner is not None and not runner.alive:
            runner.stop()
            runner = None
        if runner is None:
            runner = self._runners[build] = Runner(self.chain(build))
            log.debug("DirectML runner started in %.2f s (onnxruntime %s, DirectML %s)", runner.start_seconds,
                      runner.onnxruntime, build.directml)  # fmt: skip
        return runner

    def close(self) -> None:
        for runner in self._runners.values():
            runner.stop()
        self._runners.clear()
