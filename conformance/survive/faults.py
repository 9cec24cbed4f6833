"""Faults of the process running a case: what a CRASH, TIMEOUT or DEVICE_LOST result says, and how a test provokes
one in a real worker.

A worker (worker.py) that dies is a CRASH, one silent past the per-case timeout a TIMEOUT, and either is a
DEVICE_LOST when what it last wrote to stderr, or the error onnxruntime raised, says the device was lost: a GPU
reset (Windows TDR), removed or hung device, or a CUDA context left unusable by a fault on the device.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence
from dataclasses import replace

from conformance.ep.errors import device_lost
from conformance.model import Status
from conformance.results import Result

FATAL = "Fatal Python error:"  # how faulthandler's dump on a fatal signal begins
STDERR_LINES = 12  # the last lines of a dead worker's stderr that its result keeps
TEST_FAULT = "DMLCONF_TEST_FAULT"  # tests only: "KIND:TEXT" provokes KIND in the worker running a case id with TEXT


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
    kind = {Status.CRASH: "worker_died", Status.TIMEOUT: "timeout", Status.DEVICE_LOST: "device_lost"}[status]
    return replace(base, status=status, failure_kind=kind, message="\n".join([what, *tail]), seconds=round(seconds, 6))


def _test_fault() -> tuple[str, str]:
    """``DMLCONF_TEST_FAULT``'s KIND and TEXT; empty where it is not set."""
    kind, _, text = (os.environ.get(TEST_FAULT) or "").partition(":")
    return kind, text


def provoke_at_start() -> None:
    """Tests only: ``DMLCONF_TEST_FAULT=start:`` makes every worker die by SIGSEGV before it says it is ready."""
    if _test_fault()[0] == "start":
        os.kill(os.getpid(), signal.SIGSEGV)


def provoke(case_ids: Sequence[str]) -> None:
    """Tests only (``DMLCONF_TEST_FAULT``, read by a worker before it runs a session): make this worker die by a
    signal (``segv``, ``abort``), hang (``hang``) or report a lost device and die (``device_lost``) when a case id
    contains the text after the colon. Everything after it is the production path."""
    kind, text = _test_fault()
    if not kind or not any(text in case_id for case_id in case_ids):
        return
    if kind == "hang":
        while True:
            time.sleep(3600)
    if kind == "device_lost":
        os.write(2, b"D3D12: Removing Device. DXGI_ERROR_DEVICE_REMOVED (0x887A0005)\n")
        os.abort()
    if kind in ("segv", "abort"):
        os.kill(os.getpid(), signal.SIGSEGV if kind == "segv" else signal.SIGABRT)
